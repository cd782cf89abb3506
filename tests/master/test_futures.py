"""Waiting on calls in the master (plasmid.master.futures): the user's
timeouts checked, long ones waited in pieces."""
from __future__ import annotations

import os
import threading
import time

import pytest

import plasmid
from plasmid.master import futures

import local_fns
from testbed.pythons import require_python


@pytest.fixture
def ctx():
    with plasmid.Router() as router:
        yield router.local(name='futures')


@pytest.mark.parametrize('timeout', [float('inf'), 1e10, 30 * 86400,
                                     10 ** 400],
                         ids=['inf', '1e10', 'a month', '10**400'])
def test_a_long_timeout_waits_as_none_would(ctx, timeout) -> None:
    """poll() takes at most ~24.8 days: these raised OverflowError (an int
    past float's range did so in the check itself)."""
    assert ctx.call_async(os.getpid).result(timeout=timeout) == \
        ctx.info['pid']
    done = list(plasmid.as_completed([ctx.call_async(os.getpid)],
                                     timeout=timeout))
    assert done[0].result() == ctx.info['pid']


@pytest.mark.parametrize('timeout, error', [
    ('1', TypeError), (True, TypeError), (float('nan'), ValueError)])
def test_a_timeout_that_is_no_number_is_refused(ctx, timeout, error) -> None:
    future = ctx.call_async(local_fns.sleep_then, 0.2, 'late')
    with pytest.raises(error, match='timeout must be None or a number'):
        future.result(timeout=timeout)
    with pytest.raises(error, match='timeout must be None or a number'):
        plasmid.as_completed([future], timeout=timeout)
    assert future.result() == 'late'


@pytest.mark.parametrize('timeout, error', [
    ('1', TypeError), (float('nan'), ValueError)])
def test_a_handle_named_in_a_reply_checks_its_timeouts_too(
        timeout, error) -> None:
    """A context the master has forgotten (shut down), named in a reply,
    decoded to the core's handle, whose futures took '1' to an internal
    TypeError ("unsupported operand") and nan to a wait."""
    with plasmid.Router() as router:
        keeper, gone = router.local(), router.local()
        assert keeper.call(local_fns.echo, keeper) is keeper
        gone.shutdown()
        handle = keeper.call(local_fns.echo, gone)
        assert handle.context_id == gone.context_id and handle is not gone
        future = handle.call_async(os.getpid)
        with pytest.raises(error, match='timeout must be None or a number'):
            future.result(timeout=timeout)
        with pytest.raises(plasmid.ContextLost, match='it was shut down'):
            future.result(timeout=10)


def test_a_negative_timeout_is_a_deadline_passed(ctx) -> None:
    future = ctx.call_async(local_fns.sleep_then, 0.2, 'late')
    with pytest.raises(plasmid.TimeoutError):
        future.result(timeout=-1)
    assert future.result() == 'late'


def _polled(wait_once):
    """What *wait_once()* gives within ~20 s of tries (it raises
    TimeoutError while not done), or None."""
    for _ in range(4000):
        try:
            return wait_once()
        except plasmid.TimeoutError:
            time.sleep(0.005)
    return None


@pytest.mark.parametrize('threaded', [False, True])
def test_a_zero_timeout_takes_a_reply_already_sent(threaded) -> None:
    """A poll with timeout=0: before, the threadless router's loop never
    ran at a deadline already passed, so the reply stayed in the pipe and
    a polling loop never ended."""
    with plasmid.Router(threaded=threaded) as router:
        ctx = router.local()
        future = ctx.call_async(os.getpid)
        assert _polled(lambda: future.result(timeout=0)) == ctx.info['pid']
        future = ctx.call_async(os.getpid)
        done = _polled(lambda: next(plasmid.as_completed([future],
                                                          timeout=0)))
        assert done is future
        slow = ctx.call_async(local_fns.sleep_then, 0.5, 'late')
        with pytest.raises(plasmid.TimeoutError, match='within 0s'):
            slow.result(timeout=0)
        with pytest.raises(plasmid.TimeoutError, match='still pending'):
            list(plasmid.as_completed([slow], timeout=0))
        assert slow.result() == 'late'


def test_as_completed_refuses_what_is_no_future_at_once(ctx) -> None:
    with pytest.raises(TypeError, match='not 1'):
        plasmid.as_completed([ctx.call_async(os.getpid), 1])


def test_as_completed_refuses_futures_of_two_threadless_routers(ctx) -> None:
    """Only the first one's loop would run while it waits: before, the
    other's futures never finished (a hang without a timeout)."""
    with plasmid.Router() as other:
        theirs = other.local().call_async(os.getpid)
        with pytest.raises(ValueError, match='futures of one router'):
            plasmid.as_completed([ctx.call_async(os.getpid), theirs])
        assert theirs.result(timeout=10) > 0
    with plasmid.Router(threaded=True) as first, \
            plasmid.Router(threaded=True) as second:
        both = [first.local().call_async(os.getpid),
                second.local().call_async(os.getpid)]
        assert set(plasmid.as_completed(both, timeout=10)) == set(both)


def test_a_done_future_of_a_shut_down_router_may_join_others() -> None:
    """Its router's loop is no longer threaded once shut down: it was
    refused as a threadless router's, though it needs no loop."""
    with plasmid.Router(threaded=True) as first, \
            plasmid.Router(threaded=True) as second:
        done = first.local().call_async(os.getpid)
        done.result(timeout=10)
        first.shutdown()
        pending = second.local().call_async(local_fns.sleep_then, 0.2, 'x')
        assert list(plasmid.as_completed([done, pending], timeout=10)) == \
            [done, pending]


@pytest.mark.parametrize('first_kind', ['threadless', 'shut down'])
def test_a_done_future_first_does_not_pick_the_loop_waited_on(
        first_kind: str) -> None:
    """The wait ran the loop of the first future's router, done or not:
    a threadless or shut down router's loop never hears of a threaded
    one's replies, so the pending future came back at the timeout, and
    without one never (here: the waiting thread still waiting)."""
    first = plasmid.Router(threaded=first_kind != 'threadless')
    try:
        with plasmid.Router(threaded=True) as second:
            done = first.local().call_async(os.getpid)
            done.result(timeout=10)
            if first_kind == 'shut down':
                first.shutdown()
            pending = second.local().call_async(local_fns.sleep_then, 0.2,
                                                'x')
            got = []
            waiter = threading.Thread(target=lambda: got.extend(
                plasmid.as_completed([done, pending])), daemon=True)
            waiter.start()
            waiter.join(60)
            assert got == [done, pending]
    finally:
        first.shutdown()


def test_a_wait_longer_than_a_piece_is_made_in_pieces(monkeypatch) -> None:
    """Each piece the loop gets is at most LONGEST_PIECE; the wait ends
    at the first answer or once the whole timeout is up."""
    monkeypatch.setattr(futures, 'LONGEST_PIECE', 0.05)
    pieces = []

    def never(timeout):
        pieces.append(timeout)
        raise plasmid.TimeoutError('no result within %gs' % timeout)
    with pytest.raises(plasmid.TimeoutError):
        futures.wait_in_pieces(never, 0.2)
    assert len(pieces) >= 4 and max(pieces) <= 0.05, pieces
    answers = iter([plasmid.TimeoutError('x'), 'answer'])

    def second_time(timeout):
        answer = next(answers)
        if isinstance(answer, Exception):
            raise answer
        return answer
    assert futures.wait_in_pieces(second_time, 10) == 'answer'


@pytest.mark.parametrize('threaded', [False, True])
def test_a_wall_clock_set_back_does_not_stretch_a_timeout(
        monkeypatch, threaded) -> None:
    """Waits count on the monotonic clock.  On the wall clock, one set
    back (here: standing still) made ``result(timeout=0.2)`` wait for the
    call to end, however long that took."""
    with plasmid.Router(threaded=threaded) as router:
        ctx = router.local()
        ctx.call(os.getpid)
        frozen = time.time()
        monkeypatch.setattr(time, 'time', lambda: frozen)
        future = ctx.call_async(local_fns.sleep_then, 3, 'late')
        with pytest.raises(plasmid.TimeoutError):
            future.result(timeout=0.2)
        with pytest.raises(plasmid.TimeoutError):
            next(plasmid.as_completed([future], timeout=0.2))
        monkeypatch.undo()
        assert future.result() == 'late'


@pytest.mark.parametrize('version', ['3.6', '3.13'])
def test_a_context_s_waits_ignore_its_wall_clock_too(version) -> None:
    """(Python 2.7 has no monotonic clock: its contexts use the wall.)"""
    python = require_python(version)
    with plasmid.Router() as router:
        waiter = router.local(python_path=python)
        sleeper = router.local(via=waiter)
        assert waiter.call(local_fns.wait_with_the_wall_clock_frozen,
                           sleeper, 3, 0.2) == 'timed out'
        assert waiter.call(local_fns.wait_with_the_wall_clock_frozen,
                           sleeper, 0, 10) == 'answered'


@pytest.mark.parametrize('version', ['2.7', '3.13'])
def test_a_context_waits_as_long_as_it_is_told(version) -> None:
    """Inside a context, infinity and timeouts past poll()'s ~24.8 days
    raised OverflowError, and nan a ValueError about integers."""
    with plasmid.Router() as router:
        waiter = router.local(python_path=require_python(version))
        child = router.local(via=waiter)
        pid = child.info['pid']
        for timeout in (float('inf'), 1e7, 30 * 86400):
            assert waiter.call(local_fns.wait_in_context, child,
                               timeout) == [pid, pid]
        assert waiter.call(local_fns.wait_in_context, child,
                           float('nan')) == [
            'ValueError: timeout must be None or a number, not nan'] * 2


@pytest.mark.parametrize('version', ['2.7', '3.13'])
def test_a_context_s_as_completed_waits_past_one_piece(version) -> None:
    """Waits go in pieces of a day (here 0.2 s): as_completed took the
    first piece's end for its timeout's."""
    with plasmid.Router() as router:
        waiter = router.local(python_path=require_python(version))
        child = router.local(via=waiter)
        assert waiter.call(local_fns.as_completed_in_pieces, child, 0.2,
                           float('inf')) == 'answered'
        assert waiter.call(local_fns.as_completed_in_pieces, child, 0.2,
                           0.3).startswith('TimeoutError')
