"""Start a child process wired up with pipes (and a tty when needed)."""
from __future__ import absolute_import
import errno
import fcntl
import os
import signal
import subprocess
import sys
import termios

try:
    import resource
except ImportError:  # not a POSIX system: no limits to raise
    resource = None

from plasmid.core.errors import ConnectError
from plasmid.core.loop import widen_pipe
from plasmid.core.ostext import native

# How close to the soft limit on open descriptors a new one may come before
# the limit is raised (see make_room_for_descriptors).
DESCRIPTOR_HEADROOM = 64


class Process(object):
    """A spawned program with its stdin, stdout, stderr and optional tty.

    The child gets a session of its own, which keeps it off the master's
    terminal: a Ctrl-C there is the master's business (it shuts its
    contexts down itself).  With *tty*, that session's controlling
    terminal is a fresh pty, which is where ssh and su ask for passwords;
    without one, a program that wants to prompt fails instead of hanging.
    *env*: the program's whole environment (None: this process's).
    """

    def __init__(self, argv, tty=False, env=None):
        self.argv = argv
        pipes, (self.tty_fd, tty_slave) = _open_descriptors(argv, tty)
        for read_end, write_end in pipes[:2]:
            widen_pipe(write_end)
        if tty:
            _disable_echo(tty_slave)

        try:
            self.popen = subprocess.Popen(
                [native(word) for word in argv], stdin=pipes[0][0],
                stdout=pipes[1][1], stderr=pipes[2][1], close_fds=True,
                env=env,
                **_session_arguments(tty_slave))
        except BaseException as exc:
            for fd in _flatten(pipes) + [self.tty_fd, tty_slave]:
                _close(fd)
            if isinstance(exc, OSError):
                error = _start_error(argv, exc)
                # Which program would not run, and why, for callers that
                # word it their own way (the Ansible ssh plugin).
                error.cannot_run = (exc.errno, argv[0])
                raise error
            raise
        for fd in (pipes[0][0], pipes[1][1], pipes[2][1]):
            _close(fd)
        # Holding the slave open keeps reads of the master from failing
        # with EIO before the program opens its terminal.
        self.tty_slave = tty_slave
        self.stdin = pipes[0][1]
        self.stdout = pipes[1][0]
        self.stderr = pipes[2][0]
        self.pid = self.popen.pid
        self.pidfd = None  # see open_pidfd

    def close_tty_slave(self):
        """After the handshake.  The master side stays open for the life
        of the process: closing it would hang up the program's terminal
        and kill it with SIGHUP."""
        _close(self.tty_slave)
        self.tty_slave = None

    def open_pidfd(self):
        """A descriptor that turns readable when the program exits, kept
        as ``pidfd``; None where the system has none (before Linux 5.3 or
        Python 3.9) or none is left.  Close-on-exec, as every pidfd is."""
        open_pidfd = getattr(os, 'pidfd_open', None)
        if open_pidfd is not None and self.pidfd is None:
            try:
                self.pidfd = open_pidfd(self.pid)
            except OSError:
                pass
        return self.pidfd

    def close_all(self):
        for name in ('stdin', 'stdout', 'stderr', 'tty_fd', 'tty_slave',
                     'pidfd'):
            _close(getattr(self, name))
            setattr(self, name, None)

    def poll(self):
        return self.popen.poll()

    def kill(self):
        """SIGKILL to the program's session, which it leads (its process
        group has its pid): a wrapper that runs the interpreter as its
        child instead of exec-ing it (``sh -c 'python3 ...'``) leaves no
        orphan behind, nor does what the program started and left in its
        group."""
        if self.popen.poll() is None:
            try:
                os.killpg(self.pid, signal.SIGKILL)
            except OSError:
                try:
                    os.kill(self.pid, signal.SIGKILL)
                except OSError:
                    pass

    def terminate(self):
        if self.popen.poll() is None:
            try:
                os.kill(self.pid, signal.SIGTERM)
            except OSError:
                pass


def _open_descriptors(argv, tty):
    """Three pipes, and a pty if *tty*: ``(pipes, (master, slave))``.  Out
    of descriptors, the soft limit is raised and the opening tried again
    once; still out, a ConnectError says which limit."""
    for last_try in (False, True):
        opened = []
        try:
            for _ in range(3):
                opened.append(os.pipe())
            if tty:
                opened.append(os.openpty())
        except OSError as exc:
            for fd in _flatten(opened):
                _close(fd)
            if exc.errno == errno.EMFILE and not last_try and \
                    make_room_for_descriptors(None):
                continue
            raise _start_error(argv, exc)
        make_room_for_descriptors(max(_flatten(opened)))
        return opened[:3], (opened[3] if tty else (None, None))


def make_room_for_descriptors(highest):
    """Raise this process's soft limit on open descriptors when *highest*,
    one it has just opened, comes within DESCRIPTOR_HEADROOM of it (None:
    none could be opened): to twice the limit, at most the hard limit.
    Return whether it was raised.

    Each context started from here holds four descriptors (three pipes and
    the pidfd spawn.ExitWatch opens), and the usual soft limit of 1024
    (kept low for the sake of select(), which plasmid does not use) would
    otherwise stop a master at about 250 contexts.  Descriptors are
    handed out lowest first, so the newest one's number tells how many
    are open.
    """
    if resource is None:
        return False
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY or (
            highest is not None and highest + DESCRIPTOR_HEADROOM < soft):
        return False
    wanted = max(soft * 2, (highest or 0) + 2 * DESCRIPTOR_HEADROOM)
    if hard != resource.RLIM_INFINITY:
        wanted = min(wanted, hard)
    if wanted <= soft:
        return False
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
    except (ValueError, OSError):  # above the kernel's own ceiling
        return False
    return True


def _start_error(argv, exc):
    """The ConnectError for a program that could not be started; out of
    descriptors, it says which limit, and what to do."""
    if exc.errno == errno.EMFILE:
        limits = resource and '%s, hard limit %s' % resource.getrlimit(
            resource.RLIMIT_NOFILE) or 'unknown'
        return ConnectError(
            'cannot run %s: this process has used up its open file '
            'descriptors (limit %s; each context started from here holds '
            'four): raise the hard limit (ulimit -Hn) or start contexts '
            'through intermediaries' % (argv[0], limits))
    if exc.errno == errno.ENFILE:
        return ConnectError('cannot run %s: the system has no file '
                            'descriptor left (%s)' % (argv[0], exc))
    if exc.errno:  # the same words on every Python (3.6 named the file
        # twice, 2.7 not at all)
        return ConnectError('cannot run %s: [Errno %d] %s' % (
            argv[0], exc.errno, os.strerror(exc.errno)))
    return ConnectError('cannot run %s: %s' % (argv[0], exc))


def _session_arguments(tty_slave):
    """Popen's arguments for a child in a session of its own.

    Without a terminal, ``start_new_session`` lets Python 3.10+ start the
    child by vfork: no copy of this (often large, threaded) process, and no
    Python code run in a forked copy of a process with threads, where a
    lock another thread held at the fork stays held.  A controlling
    terminal needs ``TIOCSCTTY`` in the child, so that rare case (password
    prompts) keeps a ``preexec_fn``, which imports nothing.
    """
    if tty_slave is None and sys.version_info >= (3, 2):
        return {'start_new_session': True}

    def prepare():
        os.setsid()
        if tty_slave is not None:
            fcntl.ioctl(tty_slave, termios.TIOCSCTTY, 0)
    return {'preexec_fn': prepare}


def _disable_echo(fd):
    attrs = termios.tcgetattr(fd)
    attrs[3] &= ~termios.ECHO
    termios.tcsetattr(fd, termios.TCSANOW, attrs)


def _flatten(pairs):
    return [fd for pair in pairs for fd in pair]


def _close(fd):
    if fd is not None:
        try:
            os.close(fd)
        except OSError:
            pass
