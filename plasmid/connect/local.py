"""A context in a new local Python process."""
from __future__ import absolute_import

TTY = False            # no terminal needed
EARLY_PAYLOAD = True   # nothing else reads stdin: send the core at once
PROMPT = None          # never asks for a password


def default_name(spec):
    return 'local'


def argv(spec, boot_argv):
    return boot_argv
