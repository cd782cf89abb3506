"""What starting a context inside a running container has in common,
whichever engine's client carries it (``docker``, ``podman``).

The interpreter runs as a process of the container: its filesystem, its
namespaces, its user unless one is named.  The engine's client on the
parent's machine carries the interpreter's stdin and stdout.  ``exec``
does not signal what it started when the client ends; the context sees
its stdin end instead and exits, as on the loss of any parent.
"""
from __future__ import absolute_import

TTY = False
# The command line travels with the exec request; stdin would be read only
# once the interpreter runs.
CORE_IN_ARGV = True
PROMPT = None


def exec_argv(program, spec, boot_argv):
    """``program [client args] exec -i [--user U] [exec args] CONTAINER
    python...``."""
    args = [program] + list(spec.get('client_args') or []) + ['exec', '-i']
    if spec.get('username'):
        args += ['--user', spec['username']]
    args += list(spec.get('exec_args') or [])
    return args + [spec['container']] + boot_argv
