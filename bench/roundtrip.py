"""Local call round trip: plasmid vs Mitogen vs execnet, with a pipe floor.

    python3 bench/roundtrip.py [--calls 2000] [--rounds 5] [--warmup 300]

Every peer starts one Python process on this machine (the interpreter
running this script) and then times, call by call, a round trip that runs a
no-op there:

- pipe floor: one byte written into a pipe to a Python process that reads
  it and writes it back (os.read/os.write): the least any cross-process
  round trip between two Python processes can cost here.
- plasmid: ``ctx.call(bench_fns.noop)`` on ``router.local()``; the default
  threadless Router, and ``Router(threaded=True)`` for reference.
- Mitogen: ``ctx.call(bench_fns.noop)`` on ``router.local()``.
- execnet: a ``remote_exec`` loop that receives an item on a channel, calls
  a no-op and sends the result back (execnet has no call-by-name, so this
  is its cheapest request/answer exchange).

All peers stay up for the whole run; each round times every peer in turn
(the order rotates each round) after a warm-up, so slow drift on a shared
machine hits all of them alike.  Reported: the median and p99 over all the
timed calls, and each round's median to show the spread.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys

import benchlib

benchlib.setup_paths()

import execnet  # noqa: E402
import mitogen.master  # noqa: E402

import bench_fns  # noqa: E402
import plasmid  # noqa: E402

# Target from the issue: at least 4x faster than Mitogen, and under 50 us.
TARGET_RATIO = 4.0
TARGET_US = 50.0

PIPE_ECHO = '''import os
while True:
    b = os.read(0, 1)
    if not b:
        break
    os.write(1, b)
'''

EXECNET_ECHO = '''def noop():
    pass
while True:
    item = channel.receive()
    if item is None:
        break
    channel.send(noop())
'''


class Peer:
    """One thing to time: open() it, then call one() repeatedly, close()."""

    name = ''

    def open(self) -> None:
        raise NotImplementedError

    def one(self) -> object:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError


class PipeFloor(Peer):
    name = 'pipe ping-pong (floor)'

    def open(self) -> None:
        self.proc = subprocess.Popen([sys.executable, '-c', PIPE_ECHO],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self.w = self.proc.stdin.fileno()
        self.r = self.proc.stdout.fileno()

    def one(self) -> object:
        os.write(self.w, b'x')
        return os.read(self.r, 1)

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait()
        self.proc.stdout.close()


class Plasmid(Peer):
    def __init__(self, threaded: bool) -> None:
        self.threaded = threaded
        self.name = 'plasmid (threaded=True)' if threaded else 'plasmid'

    def open(self) -> None:
        self.router = plasmid.Router(threaded=self.threaded)
        self.ctx = self.router.local()

    def one(self) -> object:
        return self.ctx.call(bench_fns.noop)

    def close(self) -> None:
        self.router.shutdown()


class Mitogen(Peer):
    name = 'mitogen'

    def open(self) -> None:
        self.broker = mitogen.master.Broker()
        self.router = mitogen.master.Router(self.broker)
        self.ctx = self.router.local()

    def one(self) -> object:
        return self.ctx.call(bench_fns.noop)

    def close(self) -> None:
        self.broker.shutdown()
        self.broker.join()


class Execnet(Peer):
    name = 'execnet'

    def open(self) -> None:
        self.gw = execnet.makegateway('popen')
        self.channel = self.gw.remote_exec(EXECNET_ECHO)

    def one(self) -> object:
        self.channel.send(1)
        return self.channel.receive()

    def close(self) -> None:
        self.channel.send(None)
        self.channel.waitclose(10)
        self.gw.exit()


def run(peers: list[Peer], calls: int, rounds: int, warmup: int) -> dict:
    samples: dict[str, list[float]] = {p.name: [] for p in peers}
    round_medians: dict[str, list[float]] = {p.name: [] for p in peers}
    for rnd in range(rounds):
        for peer in benchlib.rotated(peers, rnd):
            benchlib.time_calls(peer.one, warmup)
            got = benchlib.time_calls(peer.one, calls)
            samples[peer.name] += got
            round_medians[peer.name].append(benchlib.median(got))
    return {'samples': samples, 'round_medians': round_medians}


def report(peers: list[Peer], result: dict) -> tuple[str, float, float]:
    us = 1e6
    stats = {}
    for peer in peers:
        values = result['samples'][peer.name]
        stats[peer.name] = (benchlib.median(values) * us,
                            benchlib.percentile(values, 99) * us, len(values))
    base_med, base_p99, _ = stats['plasmid']
    rows = []
    for peer in peers:
        med, p99, n = stats[peer.name]
        rounds = ' / '.join(benchlib.fmt(m * us) for m in
                            result['round_medians'][peer.name])
        rows.append([peer.name, n, benchlib.fmt(med), benchlib.fmt(p99), rounds,
                     '%.2fx' % (med / base_med), '%.2fx' % (p99 / base_p99)])
    text = benchlib.table(
        ['peer', 'calls', 'median us', 'p99 us', 'median per round us',
         'median / plasmid', 'p99 / plasmid'], rows)
    ratio = stats['mitogen'][0] / base_med
    return text, ratio, base_med


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--calls', type=int, default=2000,
                        help='timed calls per peer per round (default 2000)')
    parser.add_argument('--rounds', type=int, default=5)
    parser.add_argument('--warmup', type=int, default=300,
                        help='untimed calls before each round (default 300)')
    args = parser.parse_args()

    print('# local call round trip -- %s' % benchlib.machine_line())
    print('peers: mitogen %s, execnet %s; every process runs %s' % (
        '.'.join(map(str, mitogen.__version__)), execnet.__version__,
        sys.executable))
    peers: list[Peer] = [PipeFloor(), Plasmid(threaded=False), Mitogen(),
                         Execnet(), Plasmid(threaded=True)]
    opened: list[Peer] = []
    try:
        for peer in peers:
            peer.open()
            opened.append(peer)
        result = run(peers, args.calls, args.rounds, args.warmup)
    finally:
        for peer in reversed(opened):
            peer.close()
    text, ratio, plasmid_us = report(peers, result)
    print('%d rounds x %d timed calls per peer (after %d warm-up calls each '
          'round), order rotated each round' % (args.rounds, args.calls,
                                                args.warmup))
    print(text)
    print()
    print('target: plasmid median < %.0f us: %.1f us -> %s' % (
        TARGET_US, plasmid_us, benchlib.met(plasmid_us < TARGET_US)))
    print('target: >= %.0fx faster than Mitogen (median): %.2fx -> %s' % (
        TARGET_RATIO, ratio, benchlib.met(ratio >= TARGET_RATIO)))
    print('# load avg at the end: %s' % ' '.join('%.2f' % x for x in os.getloadavg()))


if __name__ == '__main__':
    main()
