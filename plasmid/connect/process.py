"""Start a child process wired up with pipes (and a tty when needed)."""
from __future__ import absolute_import
import os
import signal
import subprocess

from plasmid.core.errors import ConnectError
from plasmid.core.loop import widen_pipe


def _ignore_interrupts():
    # A Ctrl-C at the master's terminal is the master's business: it shuts
    # its contexts down itself.
    signal.signal(signal.SIGINT, signal.SIG_IGN)


class Process(object):
    """A spawned program with its stdin, stdout, stderr and optional tty.

    The child gets a session of its own.  With *tty*, that session's
    controlling terminal is a fresh pty, which is where ssh and su ask for
    passwords; without one, a program that wants to prompt fails instead
    of hanging.
    """

    def __init__(self, argv, tty=False):
        self.argv = argv
        pipes = [os.pipe() for _ in range(3)]
        for read_end, write_end in pipes[:2]:
            widen_pipe(write_end)
        self.tty_fd = None
        tty_slave = None
        if tty:
            self.tty_fd, tty_slave = os.openpty()
            _disable_echo(tty_slave)

        def prepare():
            os.setsid()
            _ignore_interrupts()
            if tty_slave is not None:
                import fcntl
                import termios
                fcntl.ioctl(tty_slave, termios.TIOCSCTTY, 0)
        try:
            self.popen = subprocess.Popen(
                argv, stdin=pipes[0][0], stdout=pipes[1][1],
                stderr=pipes[2][1], close_fds=True, preexec_fn=prepare)
        except OSError as exc:
            for fd in _flatten(pipes) + [self.tty_fd, tty_slave]:
                _close(fd)
            raise ConnectError('cannot run %s: %s' % (argv[0], exc))
        for fd in (pipes[0][0], pipes[1][1], pipes[2][1]):
            _close(fd)
        # Holding the slave open keeps reads of the master from failing
        # with EIO before the program opens its terminal.
        self.tty_slave = tty_slave
        self.stdin = pipes[0][1]
        self.stdout = pipes[1][0]
        self.stderr = pipes[2][0]
        self.pid = self.popen.pid

    def close_tty_slave(self):
        """After the handshake.  The master side stays open for the life
        of the process: closing it would hang up the program's terminal
        and kill it with SIGHUP."""
        _close(self.tty_slave)
        self.tty_slave = None

    def close_all(self):
        for name in ('stdin', 'stdout', 'stderr', 'tty_fd', 'tty_slave'):
            _close(getattr(self, name))
            setattr(self, name, None)

    def poll(self):
        return self.popen.poll()

    def kill(self):
        if self.popen.poll() is None:
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


def _disable_echo(fd):
    import termios
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
