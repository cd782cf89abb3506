"""A context as another user, through su on the parent's machine.

Without a terminal, su (through PAM) asks on stderr and reads the answer
from stdin, like ``sudo -S``: the core goes to stdin only once the new
interpreter says it is reading, after any password exchange.
"""
from __future__ import absolute_import
import re

from plasmid.connect.spawn import PASSWORD_REFUSED, shell_command

TTY = False
CORE_IN_ARGV = False   # the core follows on stdin, after the password
# su's prompt in the languages it is most often installed with, alone at
# the end of what su wrote (see ssh's PROMPT).
PROMPT = re.compile(br'(?i)(password|passwort|mot de passe|contrase\xc3\xb1a|'
                    br'senha|parola|wachtwoord|\xd0\xbf\xd0\xb0\xd1\x80\xd0'
                    br'\xbe\xd0\xbb\xd1\x8c)[^:\n]*:[ \t]*\Z')
REFUSALS = [
    (re.compile(br'(?i)authentication failure|incorrect password|'
                br'su: sorry'), PASSWORD_REFUSED),
]


# su's one-letter options that take a value (util-linux): in "-sbash" the
# rest of the word is that value.
TAKES_VALUE = 'cCgGsw'
LONG_TAKES_VALUE = ('--command', '--group', '--session-command', '--shell',
                    '--supp-group', '--whitelist-environment')
PTY_REFUSAL = 'puts a terminal between su and Python, which garbles the ' \
    'binary stream'


def refusal(su_args):
    """Why *su_args* cannot carry a context, or None: ``-P`` (``--pty``)
    puts a terminal between su and the new Python, which garbles the
    binary stream (the start would wait out its connect_timeout)."""
    # The master's only (options.py is not sent to contexts).
    from plasmid.connect.options import flags
    for flag, word in flags(su_args, TAKES_VALUE, LONG_TAKES_VALUE):
        if flag in ('P', '--pty'):
            return '%s %s' % (word, PTY_REFUSAL)
    return None


def default_name(spec):
    return 'su.%s' % (spec.get('username') or 'root')


def argv(spec, boot_argv):
    args = [spec.get('su_path') or 'su']
    args += list(spec.get('su_args') or [])
    return args + [spec.get('username') or 'root', '-c',
                   shell_command(boot_argv)]
