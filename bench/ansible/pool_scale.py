"""The broker's per-task bookkeeping against the number of hosts.

    python3 bench/ansible/pool_scale.py [--hosts 50,500,2000] [--rounds 3]

Each task a worker sends the broker looks up its context in the pool
(``Pool.get``: the login's lane, then the become user's through it) and,
when the task is over, lets its lanes go (``Pool.release``).  This times
that bookkeeping alone, with the tests' stand-in router
(tests/ansible/pool_stand_ins.py), whose contexts are plain objects (no
process, no message): per host count, the pool first holds a login and a
sudo lane for each host, then every round runs one task per host, as a
round of ``linear`` does.  Printed: microseconds of CPU per
task (median of the rounds).  No peer does this the same way; Mitogen
keeps one connection per host too and finds it by key.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path[:0] = [ROOT, os.path.dirname(HERE),
                os.path.join(ROOT, 'tests', 'ansible')]

from benchlib import machine_line  # noqa: E402
from plasmid.ansible.pool import Pool  # noqa: E402
from pool_stand_ins import StandInRouter, python_of  # noqa: E402


def spec_of(host: int) -> dict:
    """A login and become spec as the plugin sends them (connection.py's
    _login_spec), for inventory host *host*."""
    return {'login': {
        'method': 'ssh', 'hostname': '10.0.%d.%d' % divmod(host, 256),
        'port': 22, 'username': 'deploy', 'identity_file': None,
        'password': None,
        'ssh_args': ['-o', 'ControlMaster=no', '-o', 'BatchMode=yes',
                     '-o', 'ConnectTimeout=10', '-o', 'User="deploy"'],
        'ssh_path': None, 'connect_timeout': 30, 'retries': 0,
        'password_prompt': None, 'prompt_timeout': None},
        'become': {'method': 'sudo', 'username': 'root', 'password': None,
                   'flags': ['-H', '-S', '-n'], 'exe': None}}


def per_task_us(hosts: int, rounds: int) -> float:
    pool = Pool(StandInRouter())
    specs = [spec_of(host) for host in range(hosts)]
    pythons = [python_of(spec['login']['hostname']) for spec in specs]
    for spec, python in zip(specs, pythons):  # as the first round starts
        pool.get(spec, python)
        pool.release()
    times = []
    for _ in range(rounds):
        started = time.process_time()
        for spec, python in zip(specs, pythons):
            pool.get({'login': spec['login'], 'become': None}, None)
            pool.get(spec, python)
            pool.release()
        times.append((time.process_time() - started) / hosts * 1e6)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--hosts', default='50,500,2000')
    parser.add_argument('--rounds', type=int, default=3)
    args = parser.parse_args()
    print('# pool bookkeeping -- %s' % machine_line())
    print('%8s %14s' % ('hosts', 'us per task'))
    for hosts in [int(n) for n in args.hosts.split(',')]:
        print('%8d %14.1f' % (hosts, per_task_us(hosts, args.rounds)))


if __name__ == '__main__':
    main()
