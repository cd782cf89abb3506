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
    under nohup), SIGINT and SIGQUIT ignored (as a shell's ``cmd &``
    leaves them) and a pipe whose ends a child would inherit.  Returns
    the pipe's descriptors."""
    for signum in (signal.SIGHUP, signal.SIGINT, signal.SIGQUIT):
        signal.signal(signum, signal.SIG_IGN)
    ends = os.pipe()
    for fd in ends:
        if hasattr(os, 'set_inheritable'):
            os.set_inheritable(fd, True)
    return list(ends)


def terminals_without_a_name():
    """As where /dev/pts is out of reach: a terminal's name does not open."""
    os.ttyname = lambda fd: '/nonexistent/pts/0'


def children_left_by_a_failure(terminal):
    """Run a become-like command whose prompt handling fails on the way
    (as a read error would); return the error and this process's children
    left afterwards, zombies too (pid and state)."""
    from plasmid.ansible import target

    def fail(*args):
        raise RuntimeError('broken on the way')
    target._read_through_become = fail
    try:
        target.shell('echo started; sleep 60', b'', b'Secret:', b'pw',
                     b'MARKER', terminal)
    except RuntimeError as exc:
        error = str(exc)
    else:
        error = None
    return error, _children()


def _children():
    found = []
    for name in os.listdir('/proc'):
        if name.isdigit():
            try:
                with open('/proc/%s/stat' % name) as stat:
                    fields = stat.read().rsplit(')', 1)[1].split()
            except (IOError, OSError):  # gone meanwhile
                continue
            if int(fields[1]) == os.getpid():
                found.append((int(name), fields[0]))
    return found
