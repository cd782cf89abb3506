"""A context as another user, through sudo on the parent's machine.

``sudo -S`` reads the password from stdin, which is also where the core
goes: so the core is only sent once the new interpreter says it is
reading, after any password exchange.  That wait costs a local round trip
on the parent's machine, never a network one.
"""
from __future__ import absolute_import
import gettext
import re

TTY = False
# What sudo says where sudoers has ``requiretty`` (tty_required): spawn then
# starts it again with a controlling terminal (stdin and stdout stay pipes).
# Only then: a context with a terminal would let a program that asks on
# /dev/tty wait for an answer nobody types, where without one it fails at
# once.  sudo says it in the language of its environment, which is ours.
TTY_REQUIRED = 'sorry, you must have a tty to run sudo'
TTY_REQUIRED_DOMAIN = 'sudoers'  # the message catalog it is in
LOCALE_DIRS = ['/usr/share/locale', '/usr/local/share/locale']
PROMPTS_ON_TERMINAL = False  # -S: on stderr, the answer on stdin
# sudo logs the command line it runs, and -S reads the password from stdin:
# the core goes to stdin once the interpreter is up.
CORE_IN_ARGV = False
PROMPT_TEXT = 'plasmid-sudo-password:'
# The password is the caller's, the command another account's: a prompt
# that comes once the command runs is not sudo's (spawn.handed_over).
ANSWER_ONLY_THE_PROGRAM = True
PROMPT = re.compile(re.escape(PROMPT_TEXT).encode('ascii'))
REFUSALS = []
# sudo's one-letter options that take a value ("-u root", "-uroot").
TAKES_VALUE = 'aCcDghpRrTtUu'
# Options under which sudo does not run our command in the foreground on
# its own input and output: the start failed late (-b: calls went through
# until the backgrounded Python lost its link) or strangely.
REFUSED_FLAGS = {
    'b': 'runs the command in the background, away from its pipes',
    'e': 'edits files instead of running a command',
    'l': 'lists privileges instead of running a command',
    'v': 'refreshes credentials instead of running a command',
    'K': 'removes credentials instead of running a command',
    'V': 'prints the version and exits',
    # Ours says when to answer with the password; sudo refuses a second.
    'p': 'sets the password prompt, which plasmid sets itself',
}
LONG_FLAGS = {'--background': 'b', '--edit': 'e', '--list': 'l',
              '--validate': 'v', '--remove-timestamp': 'K',
              '--version': 'V', '--prompt': 'p'}
# sudo's long options that take a value ("--user root", "--user=root").
LONG_TAKES_VALUE = ('--chdir', '--chroot', '--close-from', '--command-timeout',
                    '--group', '--host', '--login-class', '--other-user',
                    '--prompt', '--role', '--type', '--user')


def default_name(spec):
    return 'sudo.%s' % (spec.get('username') or 'root')


def refusal(sudo_args):
    """Why *sudo_args* cannot carry a context (a sentence), or None."""
    # The master's only (options.py is not sent to contexts).
    from plasmid.connect.options import flags
    for flag, word in flags(sudo_args, TAKES_VALUE, LONG_TAKES_VALUE):
        letter = LONG_FLAGS.get(flag, flag)
        if letter in REFUSED_FLAGS:
            return '%s %s' % (word, REFUSED_FLAGS[letter])
    return None


def argv(spec, boot_argv):
    args = [spec.get('sudo_path') or 'sudo', '-S', '-p', PROMPT_TEXT,
            '-u', spec.get('username') or 'root']
    # -H: HOME is the target user's.  A caller that leaves it to sudo's
    # policy and its own flags (the accelerator, which passes a play's
    # become_flags as they are) says set_home=False.
    if spec.get('set_home', True):
        args.insert(2, '-H')
    args += list(spec.get('sudo_args') or [])
    return args + ['--'] + boot_argv


def tty_required(said):
    """Whether sudo's output *said* (text) is its refusal to run without
    a terminal, in English or in the language sudo takes from the
    environment it shares with us (its own translation, read from its
    message catalog, as Python's gettext finds it)."""
    return any(text in said for text in _tty_required_texts())


def _tty_required_texts():
    texts = [TTY_REQUIRED]
    for directory in LOCALE_DIRS:
        try:
            catalog = gettext.translation(TTY_REQUIRED_DOMAIN, directory)
        except (IOError, OSError, ValueError):
            continue  # none for this environment's language there
        lookup = getattr(catalog, 'ugettext', catalog.gettext)  # 2.7: text
        texts.append(lookup(TTY_REQUIRED))
    return texts
