"""Start a shell command as sshd would, without forking the context.

Shipped into target contexts, so it stays stdlib-only and Python
2.7-compatible (where it is never used: see :func:`available`).

sshd starts each command in a session of its own, with default signal
dispositions except SIGXFSZ, which it leaves ignored.  ``subprocess`` can
only get there through a ``preexec_fn``, and any ``preexec_fn`` makes
CPython fork the whole context (tens of megabytes of page tables once
modules are warm) and run Python in the child.  ``os.posix_spawn`` (3.8+)
does the same set-up in glibc's vfork-like child: ``setsid``, the listed
signals back to default, and SIGXFSZ left ignored as the interpreter
itself ignores it from its start.  :func:`start_on_pipes` starts a command
with pipes for its stdin, stdout and stderr, :func:`start_on_terminal` on
a pseudo-terminal instead, as its controlling terminal (``ssh -tt``); both
hand back what the caller uses of a Popen (:class:`Started`).

posix_spawn closes no descriptor it is not told to, so before each start
every descriptor above 2 that a child would inherit is made
non-inheritable in the context (Python opens its own that way already):
a leaked pipe end would keep a reader waiting for an end that never
comes.
"""
from __future__ import absolute_import
import errno
import fcntl
import os
import select
import signal

# What sshd's commands start with at their defaults whatever this context
# inherited (nohup's SIGHUP ignored, say); SIGPIPE is ignored by Python.
DEFAULT_SIGNALS = (signal.SIGPIPE, signal.SIGINT, signal.SIGTERM,
                   signal.SIGHUP)
_CHUNK = 65536


def signals_to_default():
    """The signals a command starts with at their defaults, as sshd's do:
    DEFAULT_SIGNALS and any other this context has ignored since it
    started (a shell's ``cmd &`` ignores SIGINT and SIGQUIT, nohup
    SIGHUP), but SIGXFSZ, which sshd's commands start with ignored."""
    ignored = []
    for signum in range(1, signal.NSIG):
        try:
            if signal.getsignal(signum) == signal.SIG_IGN:
                ignored.append(signum)
        except (ValueError, OSError):  # not a signal here
            continue
    return tuple(set(DEFAULT_SIGNALS).union(ignored) -
                 set([signal.SIGXFSZ]))


def available():
    """Whether commands start here as sshd would start them: posix_spawn
    with setsid (Python 3.8+ on Linux), SIGXFSZ ignored, which the child
    keeps, and /proc to list the descriptors."""
    return (hasattr(os, 'posix_spawn') and hasattr(os, 'POSIX_SPAWN_DUP2')
            and signal.getsignal(signal.SIGXFSZ) == signal.SIG_IGN
            and os.path.isdir('/proc/self/fd'))


def start_on_pipes(path, argv, env):
    """Start the program *path* (absolute) with *argv* in a session of its
    own with pipes for its stdin, stdout and stderr.  Returns a
    :class:`Started` holding our ends, or None where this libc's
    posix_spawn cannot setsid, or where this process has closed one of its
    fds 0-2 (a pipe would take its place, which the dup2s in their order
    could not sort out): nothing ran, use subprocess."""
    pipes = [os.pipe() for _ in range(3)]  # stdin, stdout, stderr
    child_ends = [pipes[0][0], pipes[1][1], pipes[2][1]]
    ours = [pipes[0][1], pipes[1][0], pipes[2][0]]
    if min(child_ends + ours) <= 2:
        for fd in child_ends + ours:
            os.close(fd)
        return None
    pid = None
    try:
        pid = _spawn(path, argv, env, [(os.POSIX_SPAWN_DUP2, fd, target)
                                 for target, fd in enumerate(child_ends)])
    finally:  # the child has its copies; ours go too if nothing started
        for fd in child_ends + (ours if pid is None else []):
            os.close(fd)
    if pid is None:
        return None
    return Started(pid, [os.fdopen(ours[0], 'wb', 0),
                         os.fdopen(ours[1], 'rb', 0),
                         os.fdopen(ours[2], 'rb', 0)])


def start_on_terminal(path, argv, env, terminal):
    """Start the program *path* with *argv* in a session of its own with
    the pseudo-terminal whose slave side is the descriptor *terminal* as
    its controlling terminal and its stdin, stdout and stderr.  Returns a
    :class:`Started`, or None where this libc's posix_spawn cannot setsid
    or the terminal cannot be opened by its name here: nothing ran, use
    subprocess.

    glibc's child calls setsid before the file actions, so opening the
    terminal by its name (without O_NOCTTY) in a session leader that has
    no terminal yet makes it the controlling one, as subprocess's
    ``TIOCSCTTY`` did."""
    try:  # the child could only report a failed open as a failed start
        name = os.ttyname(terminal)
        os.close(os.open(name, os.O_RDWR | os.O_NOCTTY))
    except OSError:
        return None
    pid = _spawn(path, argv, env,
                 [(os.POSIX_SPAWN_OPEN, 0, name, os.O_RDWR, 0),
                  (os.POSIX_SPAWN_DUP2, 0, 1), (os.POSIX_SPAWN_DUP2, 0, 2)])
    return None if pid is None else Started(pid)


class Started(object):
    """A started command, as much of a Popen as target.shell uses: the
    pid, its returncode once waited for (``-N`` for signal N), wait, kill
    and communicate, and our ends of its pipes (unbuffered files; None on
    a terminal)."""

    def __init__(self, pid, pipes=(None, None, None)):
        self.pid = pid
        self.returncode = None
        self.stdin, self.stdout, self.stderr = pipes

    def communicate(self, data):
        """As Popen's: *data* on stdin, which is then closed, both outputs
        read to their end, the command waited for; ``(stdout, stderr)``.
        A command that does not read its input (it exited, or closed it)
        just does not get the rest."""
        out, err = _exchange(self.stdin, data or b'', self.stdout,
                             self.stderr)
        self.wait()
        return out, err

    def wait(self):
        if self.returncode is None:
            self.returncode = _returncode(os.waitpid(self.pid, 0)[1])
        return self.returncode

    def kill(self):
        if self.returncode is None:
            os.kill(self.pid, signal.SIGKILL)


def _spawn(path, argv, env, file_actions):
    """posix_spawn *path* with *argv* as sshd starts a command; its pid,
    or None where this libc cannot setsid in posix_spawn (nothing ran)."""
    forbid_inheritance()
    try:
        return os.posix_spawn(path, argv, env, setsid=True,
                              setsigdef=signals_to_default(),
                              file_actions=file_actions)
    except NotImplementedError:
        return None


def forbid_inheritance(fds=None):
    """Mark close-on-exec every descriptor above 2 among *fds*, by default
    those /proc/self/fd lists, so that a command started next inherits
    only what is given it (fds 0-2, or posix_spawn's dup2s: os.pipe's ends
    are close-on-exec already, a dup2's copy is not).  Python 2.7-compatible,
    for the module processes of :mod:`plasmid.ansible.forks` too."""
    if fds is None:
        fds = [int(name) for name in os.listdir('/proc/self/fd')]
    for fd in fds:
        if fd > 2:
            try:
                flags = fcntl.fcntl(fd, fcntl.F_GETFD)
                if not flags & fcntl.FD_CLOEXEC:
                    fcntl.fcntl(fd, fcntl.F_SETFD, flags | fcntl.FD_CLOEXEC)
            except (IOError, OSError):  # the listing's own, closed by now
                pass


def _exchange(stdin, data, stdout, stderr):
    """Write *data* to the file *stdin* and close it, reading the files
    *stdout* and *stderr* meanwhile, until both end (and are closed)."""
    in_fd, out_fd, err_fd = [f.fileno() for f in (stdin, stdout, stderr)]
    files = {in_fd: stdin, out_fd: stdout, err_fd: stderr}
    got = {out_fd: [], err_fd: []}
    poller = select.poll()
    for fd in got:
        poller.register(fd, select.POLLIN)
    open_fds = set(got)
    if data:
        os.set_blocking(in_fd, False)
        poller.register(in_fd, select.POLLOUT)
        open_fds.add(in_fd)
    else:
        stdin.close()
    while open_fds:
        for fd, _ in poller.poll():
            if fd == in_fd:
                data = _write_some(fd, data)
                if data:
                    continue
            else:
                chunk = os.read(fd, _CHUNK)
                if chunk:
                    got[fd].append(chunk)
                    continue
            poller.unregister(fd)
            open_fds.discard(fd)
            files[fd].close()
    return b''.join(got[out_fd]), b''.join(got[err_fd])


def _write_some(fd, data):
    """What is left of *data* once a write to the ready *fd* is done;
    nothing when the reader has gone."""
    try:
        return data[os.write(fd, data[:_CHUNK]):]
    except OSError as exc:
        if exc.errno == errno.EAGAIN:
            return data
        if exc.errno == errno.EPIPE:
            return b''
        raise


def _returncode(status):
    if os.WIFSIGNALED(status):
        return -os.WTERMSIG(status)
    return os.WEXITSTATUS(status)
