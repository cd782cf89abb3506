"""A context in a new local Python process."""
from __future__ import absolute_import

TTY = False            # no terminal needed
CORE_IN_ARGV = True    # as ssh: nothing waits for stdin before HELLO
PROMPT = None          # never asks for a password


def default_name(spec):
    return 'local'


def argv(spec, boot_argv):
    return boot_argv
