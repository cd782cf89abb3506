"""Waiting on calls in the master: the timeouts a user gives are checked,
and waits longer than poll() can take are made in pieces.

poll() takes at most 2**31 - 1 ms (~24.8 days): a longer timeout (a month,
``float('inf')``) raised OverflowError from inside the loop.  So a timeout
is None (no limit), or a number of seconds, of which infinity means None
and a negative number 0 (a deadline just passed); a long one is waited in
pieces of at most LONGEST_PIECE.  ``plasmid.as_completed`` in the master
is this module's (a context's is the core's, which takes what the master
sends it, never a user's value).
"""
from __future__ import annotations

import math
from typing import Any, Callable, Iterable, Iterator, Optional

from plasmid.core.context import Future, _Completions
from plasmid.core.errors import TimeoutError
from plasmid.core.loop import deadline_for, now

# The longest single wait handed to the loop, well under poll()'s limit.
LONGEST_PIECE = 86400.0


def checked_timeout(timeout: Any, what: str = 'timeout') -> Optional[float]:
    """*timeout* as the loop takes it: None or seconds >= 0."""
    if timeout is None:
        return None
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)):
        raise TypeError('%s must be None or a number of seconds, not %r'
                        % (what, timeout))
    try:
        seconds = float(timeout)
    except OverflowError:  # an int past float's range: as infinity is
        seconds = math.inf if timeout > 0 else -math.inf
    if math.isnan(seconds):
        raise ValueError('%s must be None or a number of seconds, not nan'
                         % what)
    if math.isinf(seconds):
        return None if seconds > 0 else 0.0
    return max(0.0, seconds)


def wait_in_pieces(wait: Callable[[Optional[float]], Any],
                   timeout: Optional[float]) -> Any:
    """``wait(timeout)``, which raises TimeoutError when its time is up,
    called again with what is left of *timeout* until it is up."""
    if timeout is None or timeout <= LONGEST_PIECE:
        return wait(timeout)
    deadline = now() + timeout
    while True:
        left = deadline - now()
        try:
            return wait(max(0.0, min(left, LONGEST_PIECE)))
        except TimeoutError:
            if left <= LONGEST_PIECE:
                raise


def as_completed(futures: Iterable[Future],
                 timeout: Optional[float] = None) -> Iterator[Future]:
    """Yield *futures* (from ``call_async``) as they finish; raise
    plasmid.TimeoutError if some are still pending *timeout* seconds after
    this call.  A value that is not a future or not a timeout fails here,
    not at the first ``next``."""
    timeout = checked_timeout(timeout)
    futures = list(futures)
    for future in futures:
        if not isinstance(future, Future):
            raise TypeError('as_completed takes the futures call_async '
                            'returns, not %r' % (future,))
    _check_one_waitable_loop(futures)
    return _completed(futures, deadline_for(timeout))


def _check_one_waitable_loop(futures: list[Future]) -> None:
    """The wait runs the loop of the first pending future's router: a
    threadless router's loop runs only there, so another's futures never
    finished (before: a hang, or a TimeoutError with some of them done)."""
    # A future already done needs no loop (its router may be shut down:
    # its loop no longer threaded).
    loops = set(f.context.router.loop for f in futures
                if not f.latch.is_set)
    if len(loops) > 1 and not all(loop.threaded for loop in loops):
        raise ValueError('as_completed takes the futures of one router, or '
                         'of threaded routers (Router(threaded=True)) only')


def _completed(futures: list[Future],
               deadline: Optional[float]) -> Iterator[Future]:
    if not futures:
        return
    # The loop of a future still pending: one already done may be of
    # another router, threadless or shut down, whose loop would never
    # hear of the others' replies (a threaded router's result waited for
    # the timeout, or for ever).
    waited = next((f for f in futures if not f.latch.is_set), futures[0])
    completions = _Completions(waited.context.router.loop)
    for future in futures:
        future.add_done_callback(completions.on_done)
    for _ in range(len(futures)):
        yield _next_done(completions, deadline)


def _next_done(completions: _Completions,
               deadline: Optional[float]) -> Future:
    """The next future to finish, waiting until *deadline* (the loop's clock)
    in pieces the loop can take."""
    while True:
        piece = None if deadline is None else \
            min(deadline, now() + LONGEST_PIECE)
        try:
            return completions.next(piece)
        except TimeoutError:
            if piece == deadline:
                raise
