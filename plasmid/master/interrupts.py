"""Ctrl-C in a master lands between the loop's steps and between writes,
never in the middle of one.

A threadless master runs its I/O loop on the thread that waits, the main
thread of a script or a REPL.  Python raises KeyboardInterrupt wherever
that thread is: between reading a stream's bytes and framing them, or
between delivering one reply of a batch and the next, the bytes or the
replies were lost, and their futures never finished (a later ``result()``
without a timeout waited for ever).  So while a threadless router is
open, SIGINT's handler (only where it was Python's default) raises at
once where that is safe: the main thread waiting in poll() or running no
loop at all.  Where the main thread is at work inside a loop, the signal
is sent again a moment later, and lands when that work is done; after
MAX_RETRIES it is raised wherever it lands (a user's callback that never
returns must not make Ctrl-C useless).

A write to a stream is such a step on any thread of any master, threaded
or not: a KeyboardInterrupt raised after ``os.write`` returned and before
the stream noted how much it took lost the rest of a message, and the
next one, framed as its continuation, made the context close the link
("bad frame magic") and be lost.  So every router opened from the main
thread installs the handler, and it defers while a stream's write is on
the main thread's stack.

A start is another such step, but one that waits: Ctrl-C that struck a
``router.local()`` between the fork and the pipes' handover left the new
program running, unknown to the router, until the master exited.  So the
functions marked :func:`whole` (the router's starts) take Ctrl-C only
where they wait (SAFE_CODE: the handshake's poll, a reply's wait), and
their clean-up on the way out is not cut short either.
"""
from __future__ import annotations

import os
import signal
import threading
import weakref
from typing import Any, Callable, Optional, TypeVar

from plasmid.core import loop as core_loop
from plasmid.core import stream as core_stream

RETRY_AFTER = 0.02  # seconds before a deferred Ctrl-C is sent again
MAX_RETRIES = 100   # ~2 s of work in the loop, then it goes through

# Where a KeyboardInterrupt leaves things as they were: waiting for I/O
# (the loop's, a start's handshake) or for a reply, nothing read yet.
SAFE_CODE = frozenset([core_loop.poll_once.__code__,
                       core_loop.Loop._poll.__code__,
                       core_loop.Loop._spin.__code__,
                       core_loop.acquire_lock.__code__])
# Steps a KeyboardInterrupt must not cut short while one of them is on the
# stack, but where it waits: a stream's write (between a write and the
# note of what it took), and what whole() adds.
WHOLE_CODE = set([core_stream.Stream.send.__code__,
                  core_stream.Stream.on_writable.__code__])

Function = TypeVar('Function', bound=Callable[..., Any])


def whole(function: Function) -> Function:
    """Mark *function* a step Ctrl-C does not cut short: while it runs on
    the main thread, Ctrl-C lands only where it waits, or once it has
    returned."""
    WHOLE_CODE.add(function.__code__)
    return function

_loops: "weakref.WeakSet[core_loop.Loop]" = weakref.WeakSet()
_retries = [0]


def guard(loop: core_loop.Loop) -> None:
    """Defer Ctrl-C while the main thread is inside *loop*'s work or a
    stream's write; from the main thread, where SIGINT still has Python's
    default handler."""
    if threading.current_thread() is not threading.main_thread():
        return
    _loops.add(loop)
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, _on_interrupt)


def release(loop: core_loop.Loop) -> None:
    """*loop* is closed; with no guarded loop left, Python's default
    handler is back (if ours is still the one installed)."""
    _loops.discard(loop)
    if not _loops and threading.current_thread() is \
            threading.main_thread() and \
            signal.getsignal(signal.SIGINT) is _on_interrupt:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def _on_interrupt(signum: int, frame: Optional[Any]) -> None:
    if _mid_step(frame) and _retries[0] < MAX_RETRIES:
        _retries[0] += 1
        again = threading.Timer(RETRY_AFTER, os.kill,
                                (os.getpid(), signal.SIGINT))
        again.daemon = True
        again.start()
        return
    _retries[0] = 0
    signal.default_int_handler(signum, frame)


def _mid_step(frame: Optional[Any]) -> bool:
    """Whether the main thread, interrupted in *frame*, is in the middle
    of a step marked whole (a stream's write, a start) or of a loop's
    work."""
    if frame is not None and frame.f_code in SAFE_CODE:
        return False
    if _inside_whole_step(frame):
        return True
    return any(loop.owned_here() for loop in list(_loops))


def _inside_whole_step(frame: Optional[Any]) -> bool:
    while frame is not None:
        if frame.f_code in WHOLE_CODE:
            return True
        frame = frame.f_back
    return False
