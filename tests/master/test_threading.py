"""Threadless by default (one thread, always); Router(threaded=True) safe
from many threads at once."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import threading

import plasmid
from testbed.procs import alive

import local_fns

SCRIPTS = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                       'master_scripts')


def test_default_router_never_starts_a_thread() -> None:
    script = os.path.join(SCRIPTS, 'threadless_master.py')
    out = subprocess.run([sys.executable, script], capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    samples = json.loads(out.stdout)
    wheres = [s['where'] for s in samples]
    # Samples from inside the loop: log records handled while call() ran,
    # and a signal handler that fired during a 1 s remote call.
    expected = ['start', 'router created', 'local started', 'via started',
                'log: before sleep 0', 'log: before sleep 1',
                'log: before sleep 2', 'between calls',
                'log: before sleep 0', 'log: before sleep 1',
                'completed', 'completed', 'after call_no_reply',
                'log: last record 0', 'log: last line 0',
                'log: last record 1', 'log: last line 1', 'router closed']
    assert [w for w in wheres if w != 'signal'] == expected
    assert wheres.count('signal') == 1
    assert wheres.index('between calls') < wheres.index('signal') < \
        wheres.index('completed')
    for s in samples:
        assert s['threads'] == ['MainThread'], s
        assert s['tasks'] == 1, s


def _hammer(ctx: plasmid.Context, worker: int, calls: int,
            results: dict, errors: list) -> None:
    try:
        got = [ctx.call(local_fns.echo, (worker, i)) for i in range(calls)]
        results[worker] = got
    except BaseException as exc:  # reported by the test thread
        errors.append((worker, exc))


def test_threaded_router_many_threads() -> None:
    n_threads, n_calls = 20, 200
    with plasmid.Router(threaded=True) as router:
        contexts = [router.local(name='shared%d' % i) for i in range(3)]
        results: dict[int, list] = {}
        errors: list = []
        threads = [threading.Thread(
            target=_hammer, args=(contexts[w % 3], w, n_calls, results,
                                  errors), daemon=True)
            for w in range(n_threads)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        assert not [t for t in threads if t.is_alive()], 'deadlock'
        assert errors == []
        assert sorted(results) == list(range(n_threads))
        for worker, got in results.items():
            assert got == [(worker, i) for i in range(n_calls)]
        # Every context answered its share and is still usable.
        pids = {c.call(local_fns.getpid) for c in contexts}
        assert pids == {c.info['pid'] for c in contexts}


def _cycle(router: plasmid.Router, worker: int, cycles: int,
           pids: list, errors: list) -> None:
    try:
        for i in range(cycles):
            ctx = router.local(name='cycle%d.%d' % (worker, i))
            pids.append(ctx.call(local_fns.getpid))
            assert ctx.call(local_fns.echo, (worker, i)) == (worker, i)
            ctx.shutdown()
    except BaseException as exc:
        errors.append((worker, repr(exc)))


def test_threaded_router_contexts_started_and_stopped_concurrently() -> None:
    n_threads, cycles = 4, 15
    with plasmid.Router(threaded=True) as router:
        steady = router.local(name='steady')
        pids: list[int] = []
        errors: list = []
        threads = [threading.Thread(target=_cycle, daemon=True,
                                    args=(router, w, cycles, pids, errors))
                   for w in range(n_threads)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        assert not [t for t in threads if t.is_alive()], 'deadlock'
        assert errors == []
        assert len(set(pids)) == n_threads * cycles
        assert steady.call(local_fns.echo, 'ok') == 'ok'
    # shutdown() returned only once each process was gone.
    assert [p for p in pids if alive(p)] == []
