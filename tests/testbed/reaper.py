"""Run a server under a process that owns, reaps and finally kills its tree.

Usage: python reaper.py PARENT_PID [--rmtree DIR] -- PROGRAM [ARGS...]

Why: sshd forks every connection into a new session, and its privileged
monitor may exit before reaping the per-user child.  Those orphans go to
PID 1, which in containers often reaps late or never, and killing sshd
leaves running sessions behind.  As a child subreaper this process inherits
every orphan of the tree, reaps it at once, and on SIGTERM (or when the test
process dies, via PDEATHSIG) kills everything below it before exiting.
So nothing the server started can outlive the test session.  --rmtree
removes the server's temp dir last, so even a SIGKILLed pytest leaves none.

PDEATHSIG fires when the *thread* that started us ends: start servers from
the main thread (pytest fixtures do).
"""
from __future__ import annotations

import ctypes
import os
import shutil
import signal
import sys
import time

try:
    from .procs import descendants
except ImportError:  # run as a script: this dir is sys.path[0]
    from procs import descendants

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
GRACE = 3.0  # seconds between SIGTERM and SIGKILL


class _Stop(Exception):
    """Raised from the signal handler to leave the wait loop."""


def _on_signal(signum: int, frame: object) -> None:
    raise _Stop()


def _prctl(option: int, value: int) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(option, value, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl failed")


def _reap_all() -> bool:
    """Reap every exited child without blocking; False once none are left."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return False
        if pid == 0:
            return True


def _kill_everything() -> None:
    """SIGTERM the whole tree, SIGKILL what is left after GRACE, reap all."""
    me = os.getpid()
    deadline = time.monotonic() + GRACE
    sig = signal.SIGTERM
    signalled: set[int] = set()
    while _reap_all():
        if time.monotonic() > deadline and sig != signal.SIGKILL:
            sig, signalled = signal.SIGKILL, set()
        # Rescan each round: a dying process may have forked meanwhile.
        for pid in descendants([me]) - signalled:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
            signalled.add(pid)
        time.sleep(0.02)


def _parse(argv: list[str]) -> tuple[int, list[str], list[str]]:
    """-> (parent pid, dirs to remove at exit, program argv)."""
    parent, rest = int(argv[0]), argv[1:]
    dirs = []
    while rest and rest[0] == "--rmtree":
        dirs.append(rest[1])
        rest = rest[2:]
    if not rest or rest[0] != "--" or len(rest) < 2:
        raise SystemExit(__doc__)
    return parent, dirs, rest[1:]


def main(argv: list[str]) -> int:
    parent, dirs, program = _parse(argv)
    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, _on_signal)
    _prctl(PR_SET_CHILD_SUBREAPER, 1)
    _prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    status = 1
    stopped = False
    try:
        if os.getppid() != parent:
            return 1  # the test process died before PDEATHSIG was armed
        child = os.fork()
        if child == 0:
            _exec(program)
        status = _wait_main(child)
    except _Stop:
        stopped = True
    finally:
        for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(signum, signal.SIG_IGN)
        _kill_everything()
    # Only when told to stop: if the server died by itself (e.g. its port
    # was taken) the caller may retry with the same dir.
    if stopped:
        for path in dirs:
            shutil.rmtree(path, ignore_errors=True)
    return status


def _exec(program: list[str]) -> None:
    """In the forked child: restore default signals and become the server."""
    try:
        for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(signum, signal.SIG_DFL)
        os.execv(program[0], program)
    finally:
        os._exit(127)


def _wait_main(child: int) -> int:
    """Reap orphans as they come; return the server's exit status."""
    while True:
        pid, status = os.waitpid(-1, 0)
        if pid == child:
            return os.waitstatus_to_exitcode(status)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
