"""What a master keeps of each context it started and stopped: plasmid vs Mitogen.

    python3 bench/context_memory.py [--cycles 100] [--warmup 20]

A program that runs for days (a scheduler, a service driving a fleet)
starts and stops contexts all the time; whatever its master keeps of one
that is gone adds up.  Each tool's master starts a local context, makes
one call (``os.getpid``), shuts it down and waits until it is gone,
``--warmup`` times untimed, then ``--cycles`` times between two
``tracemalloc`` snapshots (after a ``gc.collect()`` each).  Printed: the
Python memory the master holds more per cycle, the allocation sites that
grew most, and (plasmid) how many contexts the Router still holds.  Both
tools run in this one process, one after the other: each tool's growth
is counted only while its own cycles run.
"""
from __future__ import annotations

import argparse
import gc
import os
import tracemalloc
from typing import Callable

import benchlib

benchlib.setup_paths()

import mitogen.master  # noqa: E402

import plasmid  # noqa: E402


def growth_per_cycle(cycle: Callable[[], None], warmup: int,
                     cycles: int) -> tuple[float, list]:
    """Bytes held more per cycle, and the sites that grew most."""
    for _ in range(warmup):
        cycle()
    gc.collect()
    tracemalloc.start(1)
    before = tracemalloc.take_snapshot()
    for _ in range(cycles):
        cycle()
    gc.collect()
    after = tracemalloc.take_snapshot()
    tracemalloc.stop()
    diff = [d for d in after.compare_to(before, 'lineno') if d.size_diff > 0]
    return sum(d.size_diff for d in diff) / cycles, diff[:5]


def plasmid_cycle(router: plasmid.Router) -> Callable[[], None]:
    def cycle() -> None:
        ctx = router.local()
        ctx.call(os.getpid)
        ctx.shutdown(wait=True)
    return cycle


def mitogen_cycle(router) -> Callable[[], None]:
    def cycle() -> None:
        ctx = router.local()
        ctx.call(os.getpid)
        ctx.shutdown(wait=True)
    return cycle


def report(tool: str, per_cycle: float, sites: list, cycles: int) -> None:
    print('%-8s %9.0f bytes per context' % (tool, per_cycle))
    for site in sites:
        frame = site.traceback[0]
        print('           %+9.0f  %s:%d' % (site.size_diff / cycles,
                                           frame.filename, frame.lineno))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--cycles', type=int, default=100)
    parser.add_argument('--warmup', type=int, default=20)
    args = parser.parse_args()
    print('# context memory -- %s' % benchlib.machine_line())
    print('# %d cycles of local context, one call, shutdown, after %d '
          'untimed; growth of the master\'s Python memory (tracemalloc)'
          % (args.cycles, args.warmup))
    with plasmid.Router() as router:
        ours, ours_sites = growth_per_cycle(plasmid_cycle(router),
                                            args.warmup, args.cycles)
        held = len(router.contexts)
    broker = mitogen.master.Broker()
    try:
        theirs, their_sites = growth_per_cycle(
            mitogen_cycle(mitogen.master.Router(broker)), args.warmup,
            args.cycles)
    finally:
        broker.shutdown()
        broker.join()
    report('plasmid', ours, ours_sites, args.cycles)
    report('mitogen', theirs, their_sites, args.cycles)
    print('plasmid / mitogen: %.2fx' % (ours / theirs if theirs else
                                        float('inf')))
    print('plasmid Router still holds %d context(s) of %d started'
          % (held, args.warmup + args.cycles))


if __name__ == '__main__':
    main()
