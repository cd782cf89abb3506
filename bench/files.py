"""Copying a file to and from an ssh context: plasmid vs Mitogen vs scp.

    sudo python3 bench/files.py [--reps 5] [--sizes 1024,67108864] [--latency-ms 25]

Needs root: the tests' private sshd on 127.0.0.1, logged in as
``plasmid-bench`` (created for the run and removed at the end, as
``ssh_connect.py`` does).  The target is this machine, so each copy is
checked byte for byte here.  Run on loopback, then through a toxiproxy that
adds ``--latency-ms`` each way (default 25 ms: a 50 ms round trip).

To the target ("put"), per size:

- plasmid: ``plasmid.put_file(ctx, src, dest)`` on an ssh context up for
  the run (chunks of 4 MiB sent ahead, at most 4 unanswered; the
  destination written beside and renamed into place);
- Mitogen 0.3.54: its ``FileService`` (the master registers the file, a
  call in the context pulls it with ``FileService.get``: 128 KiB chunks,
  1 MiB unacknowledged), on an ssh context up for the run;
- scp: ``scp`` with the same ssh options, which logs in for every copy; the
  row "bare ssh login" (``ssh ... true``) is what that login costs, so
  scp's copy alone is about the difference.

From the target ("fetch"): plasmid's ``fetch_file`` (reads sent ahead the
same way), Mitogen with one call that returns the whole file (it has no
streaming read for the master), scp the other way.

To many ("fan-out", ``--fanout N`` contexts started through the ssh
context, as hosts behind a bastion, each writing in a directory of its
own; each of ``--fanout-sizes``): plasmid's ``broadcast_file`` (the file
crosses the ssh link once, the bastion passes each chunk on), plasmid's
``put_file`` to each in turn (N copies across the link), and Mitogen's
``FileService`` pulled by all N at once (N copies across the link, in
parallel).  Mitogen's ``PushFileService``, which caches whole small files
in each hop's RAM for its Ansible modules, is not measured.  And back
("fan-in": the same file, as each context sees it, to a local file per
context): plasmid's ``gather_file`` (every context's reads on their way at
once), ``fetch_file`` from each in turn, and Mitogen with one call per
context returning the whole file, all at once.

One untimed warm-up per peer, then ``--reps`` rounds, the peers' order
rotating; median and range of the wall time, and each peer's median over
plasmid's.
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import tempfile
from typing import Callable

import benchlib

benchlib.setup_paths()

import mitogen.master  # noqa: E402
import mitogen.service  # noqa: E402

import bench_fns  # noqa: E402
import plasmid  # noqa: E402
from ssh_connect import (BENCH_USER, PYTHON, Peers,  # noqa: E402
                         private_testbed, repeat, shutdown)
from testbed import LatencyProxy, SshServer  # noqa: E402

Timer = Callable[[], None]


def scp_argv(server: SshServer, port: int) -> list[str]:
    # -O: the scp protocol (the test bed's sshd has no sftp subsystem).
    return ['scp', '-q', '-O', '-P', str(port), '-i', server.client_key,
            *server.ssh_args(), '-o', 'BatchMode=yes']


def remote(server: SshServer, path: str) -> str:
    return '%s@%s:%s' % (BENCH_USER, server.host, path)


class Copies:
    """The timed copies of one file, for each peer, against one port."""

    def __init__(self, server: SshServer, port: int, peers: Peers,
                 work: str) -> None:
        self.server, self.port, self.work = server, port, work
        self.plasmid = peers.plasmid_ssh(port)
        self.mitogen = peers.mitogen_ssh(port)
        self.master = peers.mrouter.myself()
        self.peers = peers

    def close(self) -> None:
        shutdown(self.plasmid)
        shutdown(self.mitogen)

    def dest(self, peer: str) -> str:
        return os.path.join(self.work, 'there', peer)

    def puts(self, source: str) -> dict[str, Timer]:
        scp = scp_argv(self.server, self.port)
        return {
            'plasmid put_file': lambda: plasmid.put_file(
                self.plasmid, source, self.dest('plasmid')),
            'Mitogen FileService': lambda: self.mitogen.call(
                bench_fns.mitogen_pull, self.master, source,
                self.dest('mitogen')),
            'scp (with its login)': lambda: subprocess.run(
                scp + [source, remote(self.server, self.dest('scp'))],
                check=True),
            'bare ssh login': lambda: subprocess.run(
                self.server.base_ssh_argv(BENCH_USER, port=self.port) +
                ['true'], check=True, stdin=subprocess.DEVNULL),
        }

    def fetches(self, source: str) -> dict[str, Timer]:
        scp = scp_argv(self.server, self.port)
        here = os.path.join(self.work, 'here')
        return {
            'plasmid fetch_file': lambda: plasmid.fetch_file(
                self.plasmid, source, os.path.join(here, 'plasmid')),
            'Mitogen, one call': lambda: write(
                os.path.join(here, 'mitogen'),
                self.mitogen.call(bench_fns.read_whole, source)),
            'scp (with its login)': lambda: subprocess.run(
                scp + [remote(self.server, source),
                       os.path.join(here, 'scp')], check=True),
        }

    def check(self, source: str, directory: str) -> None:
        """Every peer's copy holds the source's bytes."""
        with open(source, 'rb') as f:
            expected = f.read()
        for top, _, names in os.walk(directory):
            for name in names:
                with open(os.path.join(top, name), 'rb') as f:
                    if f.read() != expected:
                        raise RuntimeError('%s copied %s wrong'
                                           % (top, source))


class FanOut:
    """*count* contexts of each tool behind its ssh context, each working
    in a directory of its own, where a relative destination lands."""

    def __init__(self, copies: Copies, count: int) -> None:
        self.copies = copies
        self.directory = os.path.join(copies.work, 'fan')
        self.plasmid = [self._ready(copies.peers.prouter.local(
            via=copies.plasmid, python_path=PYTHON), 'plasmid', i)
            for i in range(count)]
        self.mitogen = [self._ready(copies.peers.mrouter.local(
            via=copies.mitogen, python_path=PYTHON), 'mitogen', i)
            for i in range(count)]

    def _ready(self, context, peer: str, index: int):
        directory = os.path.join(self.directory, peer, str(index))
        os.makedirs(directory, mode=0o777)
        os.chmod(directory, 0o777)
        context.call(os.chdir, directory)
        return context

    def copies_of(self, source: str) -> dict[str, Timer]:
        master = self.copies.master
        return {
            'plasmid broadcast_file': lambda: plasmid.broadcast_file(
                self.plasmid, source, 'copy'),
            'plasmid put_file to each': lambda: [
                plasmid.put_file(context, source, 'copy')
                for context in self.plasmid],
            'Mitogen FileService, all at once': lambda: [
                receiver.get().unpickle() for receiver in [
                    context.call_async(bench_fns.mitogen_pull, master,
                                       source, 'copy')
                    for context in self.mitogen]],
        }

    def gathers_of(self, source: str) -> dict[str, Timer]:
        """*source* (each context sees the same file) back from all."""
        here = os.path.join(self.copies.work, 'gathered')
        return {
            'plasmid gather_file': lambda: plasmid.gather_file(
                self.plasmid, source, os.path.join(here, 'p-{id}')),
            'plasmid fetch_file from each': lambda: [
                plasmid.fetch_file(context, source,
                                   os.path.join(here, 'f-%d' % i))
                for i, context in enumerate(self.plasmid)],
            'Mitogen, one call each, all at once': lambda: [
                write(os.path.join(here, 'm-%d' % i),
                      receiver.get().unpickle())
                for i, receiver in enumerate([
                    context.call_async(bench_fns.read_whole, source)
                    for context in self.mitogen])],
        }


def write(path: str, data: bytes) -> None:
    with open(path, 'wb') as f:
        f.write(data)


def report(samples: dict[str, list[float]], base: str) -> str:
    base_median = benchlib.median(samples[base])
    rows = []
    for name, values in samples.items():
        median = benchlib.median(values)
        rows.append([name, len(values), benchlib.fmt(median * 1e3),
                     '%s-%s' % (benchlib.fmt(min(values) * 1e3),
                                benchlib.fmt(max(values) * 1e3)),
                     '%.2f' % (median / base_median)])
    return benchlib.table(['peer', 'n', 'median ms', 'min-max ms',
                           'x plasmid'], rows)


def timed(copies: dict[str, Timer]) -> dict[str, Callable[[], float]]:
    """Each copy as a timer that returns its wall time."""
    return {name: (lambda copy=copy: benchlib.time_once(copy))
            for name, copy in copies.items()}


def run_at(server: SshServer, port: int, peers: Peers, sources: list[str],
           work: str, reps: int, title: str, fanout: int,
           fan_sources: list[str]) -> None:
    copies = Copies(server, port, peers, work)
    try:
        if fanout:
            run_fanout(copies, fanout, fan_sources, reps, title)
        for source in sources:
            size = os.path.getsize(source)
            print('\n## %s: put, %d bytes' % (title, size))
            samples = repeat(timed(copies.puts(source)), reps)
            copies.check(source, os.path.join(work, 'there'))
            print(report(samples, 'plasmid put_file'))
            print('\n## %s: fetch, %d bytes' % (title, size))
            samples = repeat(timed(copies.fetches(source)), reps)
            copies.check(source, os.path.join(work, 'here'))
            print(report(samples, 'plasmid fetch_file'))
    finally:
        copies.close()


def run_fanout(copies: Copies, count: int, sources: list[str], reps: int,
               title: str) -> None:
    fan = FanOut(copies, count)
    for source in sources:
        print('\n## %s: fan-out to %d contexts behind the ssh context, '
              '%d bytes' % (title, count, os.path.getsize(source)))
        samples = repeat(timed(fan.copies_of(source)), reps)
        copies.check(source, fan.directory)
        print(report(samples, 'plasmid broadcast_file'))
        print('\n## %s: fan-in from %d contexts behind the ssh context, '
              '%d bytes each' % (title, count, os.path.getsize(source)))
        gathered = os.path.join(copies.work, 'gathered')
        os.mkdir(gathered)
        samples = repeat(timed(fan.gathers_of(source)), reps)
        copies.check(source, gathered)
        shutil.rmtree(gathered)
        print(report(samples, 'plasmid gather_file'))
    for context in fan.plasmid + fan.mitogen:
        shutdown(context)
    shutil.rmtree(fan.directory)


def make_sources(work: str, sizes: list[int]) -> list[str]:
    sources = []
    for size in sizes:
        path = os.path.join(work, 'source-%d' % size)
        with open(path, 'wb') as f:
            left = size
            while left:
                piece = os.urandom(min(left, 1 << 20))
                f.write(piece)
                left -= len(piece)
        os.chmod(path, 0o644)
        sources.append(path)
    return sources


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--reps', type=int, default=5)
    parser.add_argument('--sizes', default='1024,67108864',
                        help='file sizes in bytes, comma-separated')
    parser.add_argument('--latency-ms', type=int, default=25,
                        help='latency toxiproxy adds each way (0: skip)')
    parser.add_argument('--fanout', type=int, default=8,
                        help='contexts behind the ssh one to copy one file '
                        'to (0: skip)')
    parser.add_argument('--fanout-sizes', default='1024,16777216',
                        help='sizes of the files copied to them')
    args = parser.parse_args()
    benchlib.exit_unless_testbed()
    print('# file copies -- %s' % benchlib.machine_line())
    work = tempfile.mkdtemp(prefix='plasmid-bench-files-')
    try:
        os.chmod(work, 0o755)
        for sub in ('there', 'here'):
            os.mkdir(os.path.join(work, sub))
        os.chmod(os.path.join(work, 'there'), 0o777)
        sources = make_sources(work, [int(s) for s in args.sizes.split(',')])
        fan_sources = make_sources(
            work, [int(s) for s in args.fanout_sizes.split(',')])
        with private_testbed() as server, plasmid.Router() as prouter:
            broker = mitogen.master.Broker()
            try:
                mrouter = mitogen.master.Router(broker)
                files = mitogen.service.FileService(mrouter)
                pool = mitogen.service.Pool(mrouter, services=[files])
                for source in sources + fan_sources:
                    files.register(source)
                peers = Peers(server, prouter, mrouter)
                run_at(server, server.port, peers, sources, work, args.reps,
                       'loopback', args.fanout, fan_sources)
                if args.latency_ms:
                    with LatencyProxy(server.port, args.latency_ms) as proxy:
                        run_at(server, proxy.port, peers, sources, work,
                               args.reps, '%d ms RTT' % (2 * args.latency_ms),
                               args.fanout, fan_sources)
                pool.stop()
            finally:
                broker.shutdown()
                broker.join()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print('\n# load avg at the end: %s'
          % ' '.join('%.2f' % x for x in os.getloadavg()))


if __name__ == '__main__':
    main()
