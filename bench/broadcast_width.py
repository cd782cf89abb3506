"""One file to many contexts behind one intermediary: the time, and the
intermediary's peak memory, with plasmid and Mitogen.

    python3 bench/broadcast_width.py [--width 50] [--size 16777216] [--reps 3]

Local contexts only (no ssh server, no root): an intermediary and
``--width`` contexts started through it, each working in a directory of
its own where the relative destination lands.  Every copy starts with a
fresh intermediary and children, so the intermediary's peak resident
memory (VmHWM) is that copy's.  Peers:

- ``plasmid broadcast_file``: the file once to the intermediary, which
  passes each chunk to its branches; chunks cut so that the chunks on
  their way in one process stay within 64 MiB;
- the same with that cut off (whole 4 MiB chunks, the width's copies of
  one in the intermediary at once);
- ``plasmid put_file to each``, one after the other;
- Mitogen 0.3.54's ``FileService`` pulled by all the contexts at once;
- each tool's contexts started as for a copy and no copy made: what the
  intermediary holds for its children alone.

Medians of ``--reps`` (peers rotating), with each over plasmid's.
"""
from __future__ import annotations

import argparse
import os
import shutil
import tempfile
from typing import Callable

import benchlib

benchlib.setup_paths()

import mitogen.master  # noqa: E402
import mitogen.service  # noqa: E402

import bench_fns  # noqa: E402
import plasmid  # noqa: E402
from plasmid.files import transfer  # noqa: E402

# A copy: given the source, it starts its tool's contexts, copies, and
# returns (seconds, the intermediary's peak KiB).
Copy = Callable[[str], tuple]


class Bench:
    def __init__(self, work: str, width: int, mrouter, pool_master) -> None:
        self.work = work
        self.width = width
        self.mrouter = mrouter
        self.master = pool_master
        self.runs = 0

    def _directories(self) -> list[str]:
        self.runs += 1
        top = os.path.join(self.work, 'run%d' % self.runs)
        paths = [os.path.join(top, str(i)) for i in range(self.width)]
        for path in paths:
            os.makedirs(path)
        return paths

    def plasmid_copy(self, copy: Callable) -> Copy:
        def run(source: str) -> tuple:
            with plasmid.Router() as router:
                middle = router.local(name='middle')
                targets = [router.local(via=middle, name=str(i))
                           for i in range(self.width)]
                for context, path in zip(targets, self._directories()):
                    context.call(os.chdir, path)
                took = benchlib.time_once(lambda: copy(targets, source))
                return took, middle.call(bench_fns.peak_rss_kib)
        return run

    def mitogen_copy(self, source: str) -> tuple:
        return self._mitogen_run(source, pull=True)

    def mitogen_no_copy(self, source: str) -> tuple:
        return self._mitogen_run(source, pull=False)

    def _mitogen_run(self, source: str, pull: bool) -> tuple:
        middle = self.mrouter.local()
        targets = [self.mrouter.local(via=middle) for _ in range(self.width)]
        try:
            for context, path in zip(targets, self._directories()):
                context.call(os.chdir, path)

            def pull_all() -> None:
                receivers = [context.call_async(
                    bench_fns.mitogen_pull, self.master, source, 'copy')
                    for context in targets if pull]
                for receiver in receivers:
                    receiver.get().unpickle()
            took = benchlib.time_once(pull_all)
            return took, middle.call(bench_fns.peak_rss_kib)
        finally:
            for context in targets + [middle]:
                context.shutdown(wait=True)

    def check(self, source: str) -> None:
        with open(source, 'rb') as f:
            expected = f.read()
        for top, _, names in os.walk(self.work):
            for name in names:
                if name == 'copy':
                    with open(os.path.join(top, name), 'rb') as f:
                        if f.read() != expected:
                            raise RuntimeError('a wrong copy in ' + top)
        for name in os.listdir(self.work):
            if name.startswith('run'):
                shutil.rmtree(os.path.join(self.work, name))


def whole_chunks(targets: list, source: str) -> None:
    budget = transfer.MEMORY_BUDGET
    transfer.MEMORY_BUDGET = 1 << 62  # no cut for the width
    try:
        plasmid.broadcast_file(targets, source, 'copy')
    finally:
        transfer.MEMORY_BUDGET = budget


def put_each(targets: list, source: str) -> None:
    for context in targets:
        plasmid.put_file(context, source, 'copy')


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--width', type=int, default=50)
    parser.add_argument('--size', type=int, default=16 << 20)
    parser.add_argument('--reps', type=int, default=3)
    args = parser.parse_args()
    print('# a file to %d contexts behind one intermediary, %d bytes -- %s'
          % (args.width, args.size, benchlib.machine_line()))
    work = tempfile.mkdtemp(prefix='plasmid-bench-width-')
    broker = mitogen.master.Broker()
    try:
        source = os.path.join(work, 'source')
        with open(source, 'wb') as f:
            f.write(os.urandom(args.size))
        mrouter = mitogen.master.Router(broker)
        files = mitogen.service.FileService(mrouter)
        pool = mitogen.service.Pool(mrouter, services=[files])
        files.register(source)
        bench = Bench(work, args.width, mrouter, mrouter.myself())
        peers = {
            'plasmid broadcast_file': bench.plasmid_copy(
                lambda targets, src: plasmid.broadcast_file(targets, src,
                                                            'copy')),
            'broadcast_file, whole chunks': bench.plasmid_copy(whole_chunks),
            'plasmid put_file to each': bench.plasmid_copy(put_each),
            'Mitogen FileService, all at once': bench.mitogen_copy,
            'plasmid, contexts only (no copy)': bench.plasmid_copy(
                lambda targets, src: None),
            'Mitogen, contexts only (no copy)': bench.mitogen_no_copy,
        }
        samples: dict[str, list[tuple]] = {name: [] for name in peers}
        for rep in range(args.reps):
            for name in benchlib.rotated(list(peers), rep):
                samples[name].append(peers[name](source))
                bench.check(source)
        report(samples)
        pool.stop()
    finally:
        broker.shutdown()
        broker.join()
        shutil.rmtree(work, ignore_errors=True)
    print('# load avg at the end: %s'
          % ' '.join('%.2f' % x for x in os.getloadavg()))


def report(samples: dict[str, list[tuple]]) -> None:
    base = benchlib.median([took for took, _ in
                            samples['plasmid broadcast_file']])
    rows = []
    for name, values in samples.items():
        times = [took for took, _ in values]
        peaks = [kib / 1024.0 for _, kib in values]
        rows.append([name, len(values), benchlib.fmt(benchlib.median(times)
                                                     * 1e3),
                     '%s-%s' % (benchlib.fmt(min(times) * 1e3),
                                benchlib.fmt(max(times) * 1e3)),
                     '%.2f' % (benchlib.median(times) / base),
                     benchlib.fmt(benchlib.median(peaks))])
    print(benchlib.table(['peer', 'n', 'median ms', 'min-max ms',
                          'x plasmid', 'intermediary peak MiB'], rows))


if __name__ == '__main__':
    main()
