"""The starts a router has under way, so that its shutdown ends them too.

A start runs in the thread that asked for it (``router.local()``, ``ssh()``)
and takes from milliseconds to the connect timeout.  A shutdown in another
thread meanwhile used to miss it: the context came up after the shutdown
had stopped every context it knew, and outlived the router.

So each start registers here.  ``close()`` (the shutdown's first step)
refuses new starts and hands back the processes of direct starts in flight,
for the shutdown to kill: their handshakes then fail at once.  A start via
another context fails as that context leaves.  The shutdown then waits
(``wait``, within its own deadline) for the starts in flight to end; one
that got its context up in that time still hands it over (``accept``), and
the shutdown stops it with the others.  One that ends later still, past the
deadline, finds the handover refused and must dispose of its context itself.
"""
from __future__ import annotations

import threading
import time
from typing import Any


class StartsInFlight:
    """Counts a router's starts under way; *lock* is the router's, which
    also guards what ``accept``'s caller adds (its streams, contexts)."""

    def __init__(self, lock: threading.Lock) -> None:
        self.lock = lock
        self.ended = threading.Condition(lock)
        self.count = 0
        self.processes: set[Any] = set()  # of direct starts, until kept
        self.closed = False     # no start may begin
        self.collected = False  # the shutdown stopped waiting: none is kept

    def begin(self) -> bool:
        """Count a start in; False (and nothing counted) once closed."""
        with self.lock:
            if self.closed:
                return False
            self.count += 1
            return True

    def end(self) -> None:
        with self.lock:
            self.count -= 1
            self.ended.notify_all()

    def process_started(self, proc: Any) -> None:
        """A direct start's program runs: the shutdown kills it while it
        starts; one that comes after the shutdown began is killed now."""
        with self.lock:
            if not self.closed:
                self.processes.add(proc)
                return
        proc.kill()

    def accept(self, procs: list, keep) -> bool:
        """Hand a started context over: ``keep()`` runs under the lock
        unless the shutdown has stopped waiting for starts (then False)."""
        with self.lock:
            self.processes.difference_update(procs)
            if self.collected:
                return False
            keep()
            return True

    def forget(self, procs: list) -> None:
        """A start that failed: its processes are no longer starting."""
        with self.lock:
            self.processes.difference_update(procs)

    def close(self) -> list:
        """Refuse new starts; return the processes of direct starts under
        way, for the caller to kill."""
        with self.lock:
            self.closed = True
            return list(self.processes)

    def wait(self, deadline: float) -> None:
        """Wait until no start is under way, or *deadline*; after it, no
        start hands its context over."""
        with self.lock:
            while self.count and time.monotonic() < deadline:
                self.ended.wait(max(0.0, deadline - time.monotonic()))
            self.collected = True
