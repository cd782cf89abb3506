"""What starting a context costs the target: CPU and modules, plasmid vs Mitogen.

    python3 bench/context_start.py [--reps 20] [--pythons /usr/bin/python3,3.12,2.7]

For each target interpreter, a local context is started ``--reps`` times
by each tool, peers rotating, and its first call
(``bench_fns.cpu_and_modules``) reports the CPU time (user + system) the
process has used since exec and how many modules it holds: everything the
start cost the machine it runs on, which on a remote target is latency
(the boot's CPU lies between ssh's start of the command and the context's
first answer) and, for fifty hosts on one machine, throughput.  Both tools
fetch or push ``bench_fns`` for that call alike.  The reference is the
same interpreter running ``-c`` with the same measurement and nothing else
(``python -c pass`` plus the resource module).

Also the wall time of connect + first call on this machine (local, no
network), medians over the reps.  ``--pythons`` takes paths, or versions
of the pyenv interpreters the tests use.
"""
from __future__ import annotations

import argparse
import subprocess
import time

import benchlib

benchlib.setup_paths()

import mitogen.master  # noqa: E402

import bench_fns  # noqa: E402
import plasmid  # noqa: E402
from testbed.pythons import require_python  # noqa: E402

BARE = ('import resource,sys;u=resource.getrusage(resource.RUSAGE_SELF);'
        'print("%r %d"%(u.ru_utime+u.ru_stime,len(sys.modules)))')


def interpreter(name: str) -> str:
    return name if '/' in name else require_python(name)


def bare(python: str) -> tuple[float, float, int]:
    start = time.perf_counter()
    out = subprocess.run([python, '-c', BARE], capture_output=True,
                         text=True, check=True).stdout.split()
    return time.perf_counter() - start, float(out[0]), int(out[1])


class Peer:
    """One tool's router; ``start`` is the same call in both tools' API."""
    name = ''

    def start(self, python: str) -> tuple[float, float, int]:
        begin = time.perf_counter()
        ctx = self.router.local(python_path=python)
        cpu, modules = ctx.call(bench_fns.cpu_and_modules)
        wall = time.perf_counter() - begin
        ctx.shutdown(wait=True)
        return wall, cpu, modules


class Plasmid(Peer):
    name = 'plasmid'

    def __init__(self) -> None:
        self.router = plasmid.Router()

    def close(self) -> None:
        self.router.shutdown()


class Mitogen(Peer):
    name = 'mitogen'

    def __init__(self) -> None:
        self.broker = mitogen.master.Broker()
        self.router = mitogen.master.Router(self.broker)

    def close(self) -> None:
        self.broker.shutdown()
        self.broker.join()


def measure(python: str, reps: int, peers: list[Peer]) -> dict:
    """{peer name: [(wall, cpu, modules), ...]}, 'bare' included; one
    untimed start of each first."""
    runs = [('bare', lambda: bare(python))] + [
        (p.name, lambda p=p: p.start(python)) for p in peers]
    samples: dict[str, list] = {name: [] for name, _ in runs}
    for _, run in runs:
        run()
    for rep in range(reps):
        for name, run in benchlib.rotated(runs, rep):
            samples[name].append(run())
    return samples


def rows(python: str, samples: dict) -> list[list[str]]:
    med = {name: [benchlib.median([s[i] for s in values]) for i in range(3)]
           for name, values in samples.items()}
    base_cpu = med['bare'][1]
    out = []
    for name in ('bare', 'plasmid', 'mitogen'):
        wall, cpu, modules = med[name]
        extra = '' if name == 'bare' else benchlib.fmt((cpu - base_cpu) * 1e3)
        ratio = '%.2fx' % ((cpu - base_cpu) / (med['plasmid'][1] - base_cpu)) \
            if name == 'mitogen' else ''
        out.append([python if name == 'bare' else '', name,
                    benchlib.fmt(wall * 1e3), benchlib.fmt(cpu * 1e3), extra,
                    ratio, '%d' % modules])
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--reps', type=int, default=20)
    parser.add_argument('--pythons', default='/usr/bin/python3,3.12,2.7',
                        help='comma-separated paths or pyenv versions')
    args = parser.parse_args()
    print('# context start on the target -- %s' % benchlib.machine_line())
    print('peers: mitogen %s; %d reps after 1 warm-up, peers rotating; '
          'medians' % ('.'.join(map(str, mitogen.__version__)), args.reps))
    peers: list[Peer] = [Plasmid(), Mitogen()]
    table = []
    try:
        for name in args.pythons.split(','):
            table += rows(name, measure(interpreter(name), args.reps, peers))
    finally:
        for peer in peers:
            peer.close()
    print(benchlib.table(
        ['target python', 'peer', 'connect+call ms', 'CPU at first call ms',
         'CPU beyond bare ms', 'beyond bare / plasmid', 'modules'], table))


if __name__ == '__main__':
    main()
