"""Run in target contexts by test_shell_spawn.py (any Python, 2.7 too)."""
import os
import signal


def spawn_available():
    from plasmid.ansible import shell_spawn
    return shell_spawn.available()


def by_subprocess_only():
    """Make target.shell start its commands as before posix_spawn."""
    from plasmid.ansible import shell_spawn
    shell_spawn.available = lambda: False


def inherit_oddly():
    """What a context may have inherited or opened: SIGHUP ignored (as
    under nohup) and a pipe whose ends a child would inherit.  Returns
    the pipe's descriptors."""
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    ends = os.pipe()
    for fd in ends:
        if hasattr(os, 'set_inheritable'):
            os.set_inheritable(fd, True)
    return list(ends)


def terminals_without_a_name():
    """As where /dev/pts is out of reach: a terminal's name does not open."""
    os.ttyname = lambda fd: '/nonexistent/pts/0'
