"""Waiting for a context's answer while watching the worker that asked.

A task past its ``timeout:`` ends in its worker (ansible-core raises in
it), not on the target: the command goes on running there, as it does
under vanilla.  The broker must notice that nobody waits for the answer
any more, or the host's next task would queue behind the orphaned call
in the same context.  A worker never sends while it waits for an answer,
so its socket turning readable then means it hung up.
"""
from __future__ import annotations

import os
import socket
import threading

from plasmid.core.waiting import wait_for


class WorkerGone(Exception):
    """The worker hung up before its call finished."""


class HangupWatch:
    """One worker connection of the broker; :meth:`wait` blocks until a
    future is done or the worker hangs up, whichever comes first."""

    def __init__(self, conn: socket.socket) -> None:
        self.conn = conn
        # Written to when a future is done: wait() wakes for either.
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_r, False)
        os.set_blocking(self._wake_w, False)
        # A future abandoned with its worker finishes later, maybe after
        # close(): its wake-up must not reach a reused descriptor.
        self._lock = threading.Lock()
        self._closed = False

    def wait(self, future) -> None:
        """Return once *future* is done; raise WorkerGone if the worker
        hangs up first.  A wake-up left over from an earlier future only
        costs one more look."""
        future.add_done_callback(self._wake)
        while not future.done():
            ready = wait_for([self.conn, self._wake_r])[0]
            if self._wake_r in ready:
                self._drain()
            if self.conn in ready and not future.done():
                raise WorkerGone()

    def _wake(self, _future) -> None:
        with self._lock:
            if self._closed:
                return
            try:
                os.write(self._wake_w, b'.')
            except BlockingIOError:  # full: a wake-up is pending already
                pass

    def _drain(self) -> None:
        # One read: each done future wrote one byte, and a byte left
        # behind would only cost wait() one more look.
        try:
            os.read(self._wake_r, 64)
        except BlockingIOError:
            pass

    def close(self) -> None:
        with self._lock:
            self._closed = True
            for fd in (self._wake_r, self._wake_w):
                os.close(fd)
