"""A context as another user, through doas on the parent's machine.

doas (OpenBSD's, and OpenDoas on Linux) reads a password from the
terminal only, never from stdin: with a password the child gets a private
terminal to be asked on, as ssh does.  Without one, ``-n`` makes doas
refuse at once where it would have asked, instead of waiting for a
terminal that is not there.
"""
from __future__ import absolute_import
import re

from plasmid.connect.spawn import PASSWORD_MISSING, PASSWORD_REFUSED

TTY = None              # decided per connection: only with a password
# doas logs the command line it runs: the core follows on stdin once the
# interpreter is up.
CORE_IN_ARGV = False
# "doas (user@host) password:" (OpenDoas), "doas (user@host) Password:"
# (older releases), a plain "Password:" where PAM words it.
# Alone at the end of what doas wrote (see ssh's PROMPT).
PROMPT = re.compile(br'(?i)(doas \([^)]*\) )?password:[ \t]*\Z')
# The password is the caller's, the command another account's: a prompt
# that comes once the command runs is not doas's (spawn.handed_over).
ANSWER_ONLY_THE_PROGRAM = True
REFUSALS = [
    (re.compile(br'doas: (Operation not permitted|not permitted)'),
     'doas does not permit this (see doas.conf)'),
    (re.compile(br'doas: (Authorization|Authentication) required'),
     PASSWORD_MISSING),
    (re.compile(br'doas: Authentication failed'), PASSWORD_REFUSED),
]


def default_name(spec):
    return 'doas.%s' % (spec.get('username') or 'root')


def wants_tty(spec):
    return spec.get('password') is not None


def argv(spec, boot_argv):
    args = [spec.get('doas_path') or 'doas']
    if spec.get('password') is None:
        args.append('-n')
    args += list(spec.get('doas_args') or [])
    return args + ['-u', spec.get('username') or 'root', '--'] + boot_argv
