"""What ssh's key exchange costs a login, and so every tool's connect.

    sudo python3 bench/ssh_kex.py [--reps 10] [--kex default,curve25519-sha256]

Every context over ssh starts with a login, and OpenSSH's default key
exchange is post-quantum since 9.0: ``sntrup761x25519-sha512`` up to 9.8
(Debian 12 ships 9.2), ``mlkem768x25519-sha256`` from 9.9.  Starting many
hosts at once (bench/ansible's hosts50) is bound by the CPU of those
logins, which every tool pays alike.  For each key exchange in ``--kex``
(``default``: the client's own choice), against the tests' private sshd
with the test bed's ssh options (``private_testbed`` of ssh_connect.py):

- bare ``ssh ... true``: wall time and the ssh client's CPU (user + sys,
  RUSAGE_CHILDREN) per login;
- plasmid and Mitogen: ``router.ssh()`` + a first call, wall time.

Medians of ``--reps`` after a warm-up each (plasmid and Mitogen
alternating, the bare logins before them).  The key
exchange is a choice of security (a post-quantum one resists a recording
decrypted later); this shows its price, it recommends nothing.
"""
from __future__ import annotations

import argparse
import os
import resource
import subprocess
import time

import benchlib

benchlib.setup_paths()

import mitogen.master  # noqa: E402

import plasmid  # noqa: E402
from ssh_connect import (BENCH_USER, Peers, connect_and_call,  # noqa: E402
                         private_testbed)


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def use_key_exchange(server, kex: str) -> None:
    """Every tool here takes the test bed's ssh options: add *kex*."""
    server.extra_options = [] if kex == 'default' else \
        ['KexAlgorithms=' + kex]


def bare_login(server) -> tuple[float, float]:
    """(wall, ssh client CPU) of one ``ssh ... true``."""
    cpu = children_cpu()
    started = time.perf_counter()
    subprocess.run(server.base_ssh_argv(BENCH_USER) + ['true'], check=True,
                   stdin=subprocess.DEVNULL)
    return time.perf_counter() - started, children_cpu() - cpu


def measure(server, peers: Peers, reps: int) -> dict:
    timers = {
        'plasmid': connect_and_call(lambda: peers.plasmid_ssh(server.port)),
        'mitogen': connect_and_call(lambda: peers.mitogen_ssh(server.port)),
    }
    bare = [bare_login(server) for _ in range(reps + 1)][1:]  # 1 warm-up
    walls: dict[str, list[float]] = {name: [] for name in timers}
    for name in timers:
        timers[name]()  # warm-up
    for rep in range(reps):
        for name in benchlib.rotated(list(timers), rep):
            walls[name].append(timers[name]())
    return {'bare wall': benchlib.median([w for w, _ in bare]),
            'bare cpu': benchlib.median([c for _, c in bare]),
            'plasmid': benchlib.median(walls['plasmid']),
            'mitogen': benchlib.median(walls['mitogen'])}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--reps', type=int, default=10)
    parser.add_argument('--kex', default='default,curve25519-sha256',
                        help='comma-separated KexAlgorithms values; default '
                        'is the client\'s own choice (default %(default)s)')
    args = parser.parse_args()
    benchlib.exit_unless_testbed()
    print('# ssh key exchange per login -- %s' % benchlib.machine_line())
    version = subprocess.run(['ssh', '-V'], capture_output=True, text=True)
    print('# %s; %d reps, medians' % (version.stderr.strip(), args.reps))
    rows = []
    with private_testbed() as server, plasmid.Router() as prouter:
        broker = mitogen.master.Broker()
        try:
            peers = Peers(server, prouter, mitogen.master.Router(broker))
            for kex in args.kex.split(','):
                use_key_exchange(server, kex)
                rows.append((kex, measure(server, peers, args.reps)))
        finally:
            broker.shutdown()
            broker.join()
    print('%-28s %14s %16s %14s %14s' % (
        'kex', 'bare ssh ms', 'ssh client CPU', 'plasmid ms', 'mitogen ms'))
    for kex, row in rows:
        print('%-28s %14.1f %16.1f %14.1f %14.1f' % (
            kex, row['bare wall'] * 1e3, row['bare cpu'] * 1e3,
            row['plasmid'] * 1e3, row['mitogen'] * 1e3))
    print('# load avg at the end: %s'
          % ' '.join('%.2f' % x for x in os.getloadavg()))


if __name__ == '__main__':
    main()
