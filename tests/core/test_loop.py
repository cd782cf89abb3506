"""The poll loop (deferred calls, timers, fd callbacks, ownership) and the
Latch every wait goes through, on real pipes and threads."""
from __future__ import annotations

import builtins
import os
import subprocess
import sys
import threading
from typing import Iterator

import pytest

from plasmid.core import loop as loop_module
from plasmid.core.errors import ContextLost, TimeoutError
from plasmid.core.loop import Latch, Loop
from testbed.pythons import require_python

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), os.pardir,
                                    os.pardir))


@pytest.fixture
def loop() -> Iterator[Loop]:
    loop = Loop()
    yield loop
    loop.close()


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
def sleeps(monkeypatch: pytest.MonkeyPatch) -> list:
    """The timeouts of the loop's waits that may sleep (not its spins)."""
    seen: list = []
    poll_once = loop_module.poll_once

    def counting(poller: object, timeout: float | None) -> list:
        if timeout != 0:
            seen.append(timeout)
        return poll_once(poller, timeout)
    monkeypatch.setattr(loop_module, 'poll_once', counting)
    monkeypatch.setattr(loop_module, 'SPIN_PAYS', True)
    return seen


def test_a_wait_that_ends_soon_has_the_next_one_spin_instead_of_sleeping(
        loop: Loop, pipe: tuple[int, int], sleeps: list,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(loop_module, 'SPIN_AFTER', 60.0)  # any wait is soon
    r, w = pipe
    got: list = []
    loop.add_reader(r, lambda: got.append(os.read(r, 10)))
    os.write(w, b'a')
    loop.run_once(5)  # not spinning yet: a wait that may sleep
    assert (got, sleeps, loop.spinning) == ([b'a'], [5], True)
    for byte in (b'b', b'c'):
        os.write(w, byte)
        loop.run_once(5)  # the spin finds the byte: no sleeping wait
    assert (got, sleeps) == ([b'a', b'b', b'c'], [5])


def test_a_long_wait_stops_the_spinning(
        loop: Loop, pipe: tuple[int, int], sleeps: list,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(loop_module, 'SPIN_AFTER', 0.01)
    monkeypatch.setattr(loop_module, 'SPIN_SECONDS', 0.001)
    r, w = pipe
    loop.add_reader(r, lambda: os.read(r, 10))
    loop.spinning = True
    loop.run_once(0.05)  # nothing comes: a spin, then a 50 ms sleep
    assert (sleeps, loop.spinning) == ([0.05], False)
    os.write(w, b'a')
    loop.run_once(5)
    assert sleeps == [0.05, 5]


def test_after_a_spin_that_found_nothing_the_next_waits_sleep_at_once(
        loop: Loop, pipe: tuple[int, int], sleeps: list,
        monkeypatch: pytest.MonkeyPatch) -> None:
    # A relay between two processes sees a call's reply soon, the next
    # call late: spinning for the late one would only take CPU.
    monkeypatch.setattr(loop_module, 'SPIN_AFTER', 60.0)
    monkeypatch.setattr(loop_module, 'SPIN_SECONDS', 0.001)
    monkeypatch.setattr(loop_module, 'SPIN_SKIP', 3)
    r, w = pipe
    loop.add_reader(r, lambda: os.read(r, 10))
    loop.spinning = True
    threading.Timer(0.05, os.write, (w, b'a')).start()
    loop.run_once(5)  # the spin misses, the wait sleeps
    assert (sleeps, loop.skip_spins) == ([5], 3)
    for _ in range(3):
        os.write(w, b'a')
        loop.run_once(5)  # spinning, yet sleeping at once
    assert (len(sleeps), loop.skip_spins, loop.spinning) == (4, 0, True)
    os.write(w, b'a')
    loop.run_once(5)  # spins again and finds the byte
    assert len(sleeps) == 4


class ClockSetBack:
    """A clock set back by 10 s at every reading; it gives up (instead of
    letting a test spin for ever) after 1000 readings."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.readings = 0

    def time(self) -> float:
        self.readings += 1
        assert self.readings < 1000, 'still spinning'
        self.now -= 10
        return self.now


def test_a_clock_set_back_ends_a_spin(
        loop: Loop, sleeps: list, monkeypatch: pytest.MonkeyPatch) -> None:
    clock = ClockSetBack()
    monkeypatch.setattr(loop_module, 'time', clock)
    loop.spinning = True
    loop.run_once(0.01)  # the spin ends at its first look at the clock
    assert sleeps == [0.01]
    assert clock.readings < 10
    assert loop.skip_spins == loop_module.SPIN_SKIP


def test_a_wait_shorter_than_a_spin_does_not_spin(
        loop: Loop, sleeps: list, monkeypatch: pytest.MonkeyPatch) -> None:
    spins: list = []
    monkeypatch.setattr(loop, '_spin', spins.append)
    loop.spinning = True
    loop.run_once(0)
    loop.spinning = True
    loop.run_once(loop_module.SPIN_SECONDS / 2)
    assert spins == []


def test_with_one_cpu_the_loop_never_spins(
        loop: Loop, pipe: tuple[int, int], sleeps: list,
        monkeypatch: pytest.MonkeyPatch) -> None:
    # A spin there would only keep the CPU from the peer it waits for.
    monkeypatch.setattr(loop_module, 'SPIN_PAYS', False)
    monkeypatch.setattr(loop_module, 'SPIN_AFTER', 60.0)
    r, w = pipe
    loop.add_reader(r, lambda: os.read(r, 10))
    for _ in range(3):
        os.write(w, b'a')
        loop.run_once(5)
    assert (sleeps, loop.spinning) == ([5, 5, 5], False)


SPIN_PAYS_SCRIPT = (
    'import os, sys\n'
    'if hasattr(os, "sched_setaffinity"):\n'
    '    os.sched_setaffinity(0, [int(sys.argv[1])])\n'
    'from plasmid.core import loop\n'
    'print(loop.SPIN_PAYS)\n')


@pytest.mark.parametrize('python', ['2.7', 'master'])
def test_spinning_pays_only_with_more_than_one_cpu_to_run_on(
        python: str) -> None:
    executable = require_python(python) if python != 'master' \
        else sys.executable
    pays = []
    for cpu in os.sched_getaffinity(0):
        proc = subprocess.run(
            [executable, '-c', SPIN_PAYS_SCRIPT, str(cpu)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60,
            env={'PYTHONPATH': REPO, 'PATH': os.defpath})
        assert proc.returncode == 0, proc.stderr.decode()
        pays.append(proc.stdout.strip())
    # Python 2 cannot read its CPUs (no sched_getaffinity): never spins.
    assert pays == [b'False'] * len(pays)
    if python == 'master' and len(os.sched_getaffinity(0)) > 1:
        assert loop_module.SPIN_PAYS is True
