"""The poll loop (deferred calls, timers, fd callbacks, ownership) and the
Latch every wait goes through, on real pipes and threads."""
from __future__ import annotations

import builtins
import os
import resource
import socket
import threading
from typing import Iterator

import pytest

from plasmid.core.errors import ContextLost, TimeoutError
from plasmid.core.loop import Latch, Loop, wait_for


@pytest.fixture
def loop() -> Iterator[Loop]:
    loop = Loop()
    yield loop
    loop.close()


@pytest.fixture
def pipe() -> Iterator[tuple[int, int]]:
    r, w = os.pipe()
    yield r, w
    for fd in (r, w):
        try:
            os.close(fd)
        except OSError:
            pass


def test_deferred_calls_run_in_order_on_the_next_iteration(
        loop: Loop) -> None:
    ran: list = []
    loop.defer(ran.append, 1)
    loop.defer(ran.append, 2)
    assert ran == []
    loop.run_once(None)   # deferred work means no blocking
    assert ran == [1, 2]


def test_a_call_deferred_by_a_deferred_call_waits_a_turn(loop: Loop) -> None:
    ran: list = []
    loop.defer(lambda: (ran.append('outer'), loop.defer(ran.append, 'in')))
    loop.run_once(None)
    assert ran == ['outer']
    loop.run_once(None)
    assert ran == ['outer', 'in']


def test_timers_fire_in_deadline_order_and_can_be_cancelled(
        loop: Loop) -> None:
    fired: list = []
    loop.call_later(0.03, lambda: fired.append('late'))
    cancelled = loop.call_later(0.01, lambda: fired.append('cancelled'))
    loop.call_later(0.0, lambda: fired.append('now'))
    loop.call_later(0.02, lambda: fired.append('middle'))
    loop.cancel_timer(cancelled)
    assert loop.run_until(lambda: len(fired) == 3, 10)
    assert fired == ['now', 'middle', 'late']
    loop.run_once(0)
    assert 'cancelled' not in fired


def test_run_until_reports_a_timeout(loop: Loop) -> None:
    assert loop.run_until(lambda: False, 0.05) is False
    assert loop.owner is None   # released again


def test_readers_see_data_and_eof(loop: Loop, pipe: tuple[int, int]) -> None:
    r, w = pipe
    got: list = []

    def on_readable() -> None:
        data = os.read(r, 100)
        got.append(data)
        if not data:
            loop.remove_fd(r)
    loop.add_reader(r, on_readable)
    os.write(w, b'hello')
    assert loop.run_until(lambda: got, 10)
    assert got == [b'hello']
    os.close(w)
    assert loop.run_until(lambda: len(got) == 2, 10)
    assert got[1] == b''
    assert r not in loop.readers


def test_removed_reader_is_not_called(loop: Loop,
                                      pipe: tuple[int, int]) -> None:
    r, w = pipe
    calls: list = []
    loop.add_reader(r, lambda: calls.append(1))
    loop.remove_fd(r)
    os.write(w, b'x')
    loop.run_once(0)
    assert calls == []


def test_writer_runs_while_set(loop: Loop, pipe: tuple[int, int]) -> None:
    r, w = pipe
    calls: list = []
    loop.set_writer(w, lambda: calls.append(os.write(w, b'y')))
    assert loop.run_until(lambda: calls, 10)
    loop.set_writer(w, None)
    before = len(calls)
    loop.run_once(0)
    assert len(calls) == before
    assert os.read(r, 100) == b'y' * before


def test_defer_from_another_thread_wakes_the_owner(loop: Loop) -> None:
    done = threading.Event()

    def other() -> None:
        loop.defer(done.set)
    owner_started = threading.Event()
    loop.defer(owner_started.set)
    thread = threading.Thread(target=lambda: (owner_started.wait(10),
                                              other()))
    thread.start()
    # Blocks in poll() with no timeout of its own until woken.
    assert loop.run_until(done.is_set, 30)
    thread.join(10)


def test_latch_value_error_and_single_shot(loop: Loop) -> None:
    latch = Latch(loop)
    assert latch.set(41) is True
    assert latch.set(42) is False
    assert latch.wait() == 41
    failed = Latch(loop)
    failed.set(error=ContextLost('gone'))
    with pytest.raises(ContextLost, match='gone'):
        failed.wait(0)


def test_latch_callbacks_run_once_whenever_added(loop: Loop) -> None:
    latch = Latch(loop)
    seen: list = []
    latch.add_callback(lambda l: seen.append(('before', l.value)))
    latch.set('v')
    latch.add_callback(lambda l: seen.append(('after', l.value)))
    latch.set('w')
    assert seen == [('before', 'v'), ('after', 'v')]


def test_latch_wait_times_out_with_both_timeout_errors(loop: Loop) -> None:
    latch = Latch(loop)
    with pytest.raises(TimeoutError):
        latch.wait(0.02)
    with pytest.raises(builtins.TimeoutError):
        latch.wait(0.02)
    latch.set('late')   # a timed-out wait may be retried
    assert latch.wait(0.02) == 'late'


def test_latch_wait_runs_the_loop_when_nobody_does(loop: Loop) -> None:
    latch = Latch(loop)
    loop.call_later(0.01, lambda: latch.set('from a timer'))
    assert latch.wait(10) == 'from a timer'
    assert loop.owner is None


def test_nested_wait_inside_a_loop_callback(loop: Loop) -> None:
    inner = Latch(loop)
    outer = Latch(loop)

    def callback() -> None:
        loop.call_later(0.01, lambda: inner.set('inner'))
        outer.set(inner.wait(10))
    loop.defer(callback)
    assert outer.wait(10) == 'inner'


def test_waiters_in_other_threads_sleep_while_one_thread_runs_the_loop(
        loop: Loop) -> None:
    latches = [Latch(loop) for _ in range(4)]
    results: list = []
    lock = threading.Lock()

    def waiter(latch: Latch) -> None:
        value = latch.wait(30)
        with lock:
            results.append(value)
    threads = [threading.Thread(target=waiter, args=(latch,))
               for latch in latches]
    for thread in threads:
        thread.start()
    for i, latch in enumerate(latches):
        loop.defer(latch.set, i)
    loop.wake()
    for thread in threads:
        thread.join(30)
    assert sorted(results) == [0, 1, 2, 3]
    assert loop.owner is None


def test_dedicated_thread_mode(loop: Loop) -> None:
    stop = threading.Event()
    loop.start_thread(stop.is_set)
    try:
        assert loop.threaded
        latch = Latch(loop)
        loop.defer(lambda: latch.set(threading.current_thread().name))
        assert latch.wait(30) == 'plasmid-io'
        assert not loop.owned_here()
    finally:
        stop.set()
        loop.wake()
        loop.thread.join(10)
    assert not loop.thread.is_alive()


@pytest.fixture
def high_pipe() -> Iterator[tuple[int, int]]:
    """A pipe whose two ends are numbered above 1023, where select() gives
    up, as a master with hundreds of contexts has them."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < 1600:
        pytest.skip('the hard limit on open files (%d) is too low' % hard)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, 1600), hard))
    r, w = os.pipe()
    high = (1500, 1501)
    for fd, to in zip((r, w), high):
        os.dup2(fd, to)
        os.close(fd)
    yield high
    for fd in high:
        try:
            os.close(fd)
        except OSError:
            pass
    resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def test_wait_for_takes_descriptors_above_1023(
        high_pipe: tuple[int, int]) -> None:
    r, w = high_pipe
    assert wait_for([r], [], 0.05) == ([], [])  # nothing to read yet
    assert wait_for([r], [w], 5) == ([], [w])   # room to write
    os.write(w, b'x')
    assert wait_for([r], [], 5) == ([r], [])
    assert os.read(r, 1) == b'x'
    os.close(w)
    assert wait_for([r], [], 5) == ([r], [])    # the end: read gives b''
    assert os.read(r, 1) == b''


def test_wait_for_hands_back_what_it_was_given(pipe: tuple[int, int]) -> None:
    r, w = pipe
    left, right = socket.socketpair()
    try:
        right.sendall(b'x')
        ready_r, ready_w = wait_for([left, r], [w, right], 5)
        assert ready_r == [left]
        assert ready_r[0] is left
        assert len(ready_w) == 2 and w in ready_w and right in ready_w
        os.close(r)
        # A pipe whose reader has gone is "ready": writing fails at once.
        assert wait_for([], [w], 5) == ([], [w])
        with pytest.raises(BrokenPipeError):
            os.write(w, b'x')
    finally:
        left.close()
        right.close()
