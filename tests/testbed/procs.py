"""Process helpers: start servers under reaper.py, find process trees.

sshd starts each connection in a new session, so killing sshd (or its
process group) would leave the sessions and their commands behind.  Servers
therefore run under reaper.py, which owns the whole tree; here we only
start and stop it.
"""
from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from typing import Any, Iterable, Iterator, Optional

REAPER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "reaper.py")
STOP_TIMEOUT = 10.0  # reaper needs up to its GRACE (3s) plus reaping


def _parent_map() -> dict[int, int]:
    """pid -> parent pid for every process we can see."""
    parents = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                stat = f.read()
        except OSError:
            continue  # exited while we were looking
        # The command name may contain spaces and ')', so split after the
        # last ')': the fields after it are "state ppid ...".
        fields = stat.rsplit(")", 1)[1].split()
        parents[int(name)] = int(fields[1])
    return parents


def descendants(pids: Iterable[int]) -> set[int]:
    """All processes below `pids` (not including them)."""
    parents = _parent_map()
    found: set[int] = set()
    frontier = set(pids)
    while frontier:
        frontier = {p for p, pp in parents.items() if pp in frontier} - found
        found |= frontier
    return found


def alive(pid: int) -> bool:
    """True while pid exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def wait_gone(pids: Iterable[int], timeout: float) -> set[int]:
    """Wait until pids are gone; return those still alive at the timeout."""
    deadline = time.monotonic() + timeout
    left = set(pids)
    while left and time.monotonic() < deadline:
        left = {p for p in left if alive(p)}
        if left:
            time.sleep(0.02)
    return {p for p in left if alive(p)}


def start_reaped(argv: list[str], rmtree: Optional[str] = None,
                 **popen_kwargs: Any) -> subprocess.Popen:
    """Start argv under reaper.py; the Popen is the reaper's.

    `rmtree` names a dir the reaper deletes after the server tree is gone.
    A new session keeps ^C in a terminal from killing the server before the
    fixture's cleanup runs; the reaper still dies with us (PDEATHSIG).
    """
    extra = ["--rmtree", rmtree] if rmtree else []
    cmd = [sys.executable, REAPER, str(os.getpid()), *extra, "--", *argv]
    return subprocess.Popen(cmd, start_new_session=True, **popen_kwargs)


def stop_reaped(proc: subprocess.Popen) -> None:
    """Stop a start_reaped() server and everything it started."""
    if proc.poll() is None:
        proc.terminate()
    try:
        proc.wait(STOP_TIMEOUT)
    except subprocess.TimeoutExpired:
        # The reaper is stuck: take its tree down from here, best effort.
        victims = descendants([proc.pid])
        proc.kill()
        for pid in victims:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        proc.wait()


def interruptible() -> None:
    """A ``preexec_fn``: the child starts with SIGINT at its default, as a
    terminal's foreground job does, for tests that interrupt it.  A suite
    run in the background of a shell script inherits SIGINT ignored, and
    exec keeps it so: Python would then never raise KeyboardInterrupt."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def pgrep(*pgrep_args: str) -> str:
    """pgrep's output for *pgrep_args* (pids, one a line; empty: none)."""
    found = subprocess.run(['pgrep', *pgrep_args], stdout=subprocess.PIPE,
                           text=True)
    assert found.returncode in (0, 1), pgrep_args  # 2: a bad pattern
    return found.stdout.strip()


@contextlib.contextmanager
def stopped(contexts: Iterable[Any]) -> Iterator[None]:
    """*contexts* (plasmid contexts) stopped (SIGSTOP) for the block,
    woken (SIGCONT) after it."""
    pids = [context.info['pid'] for context in contexts]
    try:
        for pid in pids:
            os.kill(pid, signal.SIGSTOP)
        yield
    finally:
        for pid in pids:
            os.kill(pid, signal.SIGCONT)
