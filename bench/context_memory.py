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

The same for an intermediary (a bastion that runs for days): each tool
starts a local context, then the cycles start their contexts through it;
the intermediary's own Python memory is counted (``bench_fns``).
"""
from __future__ import annotations

import argparse
import os
from typing import Any, Callable

import benchlib

benchlib.setup_paths()

import bench_fns  # noqa: E402

import mitogen.master  # noqa: E402

import plasmid  # noqa: E402


Sites = list[tuple[str, int, int]]  # (file, line, bytes grown)


def growth_per_cycle(cycle: Callable[[], None], warmup: int, cycles: int,
                     hop=None) -> tuple[float, Sites]:
    """Bytes held more per cycle, and the sites that grew most: in this
    process, or in the intermediary *hop* the cycles go through."""
    def run(func: Callable[[], Any]) -> Any:
        return func() if hop is None else hop.call(func)
    for _ in range(warmup):
        cycle()
    run(bench_fns.start_tracing)
    for _ in range(cycles):
        cycle()
    grown, sites = run(bench_fns.traced_growth)
    return grown / cycles, sites


def start_call_stop(router, via=None) -> Callable[[], None]:
    """One cycle; plasmid's and Mitogen's routers take the same calls."""
    def cycle() -> None:
        ctx = router.local(via=via)
        ctx.call(os.getpid)
        ctx.shutdown(wait=True)
    return cycle


def report(tool: str, per_cycle: float, sites: Sites, cycles: int) -> None:
    print('%-8s %9.0f bytes per context' % (tool, per_cycle))
    for filename, lineno, grown in sites:
        print('           %+9.0f  %s:%d' % (grown / cycles, filename, lineno))


def measure_plasmid(warmup: int, cycles: int) -> tuple:
    with plasmid.Router() as router:
        master = growth_per_cycle(start_call_stop(router), warmup, cycles)
        held = len(router.contexts)
        hop = router.local(name='hop')
        behind = growth_per_cycle(start_call_stop(router, hop), warmup,
                                  cycles, hop)
    return master, behind, held


def measure_mitogen(warmup: int, cycles: int) -> tuple:
    broker = mitogen.master.Broker()
    try:
        router = mitogen.master.Router(broker)
        master = growth_per_cycle(start_call_stop(router), warmup, cycles)
        hop = router.local()
        behind = growth_per_cycle(start_call_stop(router, hop), warmup,
                                  cycles, hop)
    finally:
        broker.shutdown()
        broker.join()
    return master, behind


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--cycles', type=int, default=100)
    parser.add_argument('--warmup', type=int, default=20)
    args = parser.parse_args()
    print('# context memory -- %s' % benchlib.machine_line())
    print('# %d cycles of local context, one call, shutdown, after %d '
          'untimed; growth of the master\'s Python memory (tracemalloc)'
          % (args.cycles, args.warmup))
    ours, ours_behind, held = measure_plasmid(args.warmup, args.cycles)
    theirs, theirs_behind = measure_mitogen(args.warmup, args.cycles)
    for where, mine, peer in (('the master', ours, theirs),
                              ('an intermediary', ours_behind,
                               theirs_behind)):
        print('## what %s keeps' % where)
        report('plasmid', mine[0], mine[1], args.cycles)
        report('mitogen', peer[0], peer[1], args.cycles)
        print('plasmid / mitogen: %.2fx' % (mine[0] / peer[0] if peer[0] > 0
                                            else float('inf')))
    print('plasmid Router still holds %d context(s) of %d started'
          % (held, args.warmup + args.cycles))


if __name__ == '__main__':
    main()
