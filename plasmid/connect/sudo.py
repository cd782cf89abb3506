"""A context as another user, through sudo on the parent's machine.

``sudo -S`` reads the password from stdin, which is also where the core
goes: so the core is only sent once the new interpreter says it is
reading, after any password exchange.  That wait costs a local round trip
on the parent's machine, never a network one.
"""
from __future__ import absolute_import
import re

TTY = False
# What sudo says where sudoers has ``requiretty``: spawn then starts it again
# with a controlling terminal (stdin and stdout stay pipes).  Only then: a
# context with a terminal would let a program that asks on /dev/tty wait
# for an answer nobody types, where without one it fails at once.
TTY_REQUIRED = 'you must have a tty'
PROMPTS_ON_TERMINAL = False  # -S: on stderr, the answer on stdin
EARLY_PAYLOAD = False
PROMPT_TEXT = 'plasmid-sudo-password:'
PROMPT = re.compile(re.escape(PROMPT_TEXT).encode('ascii'))
REFUSALS = []


def default_name(spec):
    return 'sudo.%s' % (spec.get('username') or 'root')


def argv(spec, boot_argv):
    args = [spec.get('sudo_path') or 'sudo', '-S', '-H', '-p', PROMPT_TEXT,
            '-u', spec.get('username') or 'root']
    args += list(spec.get('sudo_args') or [])
    return args + ['--'] + boot_argv
