"""What loading a connection plugin costs each forked worker.

    python3 bench/ansible/plugin_load.py [--venv /opt/ansible/2.21]
        [--forks 100] [--rounds 3]

ansible-playbook loads its builtin connection plugins before it forks a
worker per task and host, never a collection's: every worker loads
``plasmid.accel.ssh`` afresh, even for a task that never reaches the host
(``set_fact``).  This measures that load the way a worker does it, without
ansible-playbook around it: a parent that has loaded ansible-core's own
ssh plugin forks; each child loads the named plugin
(``connection_loader.get(name, PlayContext())`` and ``set_options()``) and
reports its CPU time and the modules it imported.  ``ssh`` is the
reference; rounds alternate the two, and each prints the median over its
forks.  Runs under the venv's Python, with the plasmid installed there (an
editable install of this checkout, as bench/ansible/run.py wants; a
``PYTHONPATH`` of another checkout measures that one instead).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
PLUGINS = ('ssh', 'plasmid.accel.ssh')

# Runs in the venv's Python: argv[1] plugin name, argv[2] forks.
CHILD_LOOP = r'''
import json, os, sys, time
from ansible.playbook.play_context import PlayContext
from ansible.plugins.loader import connection_loader, init_plugin_loader
import ansible.executor.task_executor  # noqa: F401 (a worker has it)
init_plugin_loader()
connection_loader.get('ssh', PlayContext(), os.devnull)
name, forks = sys.argv[1], int(sys.argv[2])
times, new = [], []
for _ in range(forks):
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        before = set(sys.modules)
        start = time.process_time()
        connection = connection_loader.get(name, PlayContext(), os.devnull)
        connection.set_options(var_options={})
        spent = time.process_time() - start
        os.write(write, json.dumps(
            [spent, sorted(set(sys.modules) - before)]).encode())
        os._exit(0)
    os.close(write)
    data = b''
    while True:
        piece = os.read(read, 65536)
        if not piece:
            break
        data += piece
    os.close(read)
    os.waitpid(pid, 0)
    spent, new = json.loads(data)
    times.append(spent)
times.sort()
print(json.dumps({'median_ms': 1000 * times[len(times) // 2],
                  'modules': new}))
'''


def measure(venv: str, name: str, forks: int) -> dict:
    python = os.path.join(venv, 'bin', 'python')
    out = subprocess.run([python, '-c', CHILD_LOOP, name, str(forks)],
                         cwd='/', check=True, capture_output=True,
                         text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--venv', default='/opt/ansible/2.21')
    parser.add_argument('--forks', type=int, default=100)
    parser.add_argument('--rounds', type=int, default=3)
    args = parser.parse_args()
    print('# connection plugin load in a forked worker, %d forks per round,'
          ' venv %s' % (args.forks, args.venv))
    print('%-5s  %-18s  %9s  %s' % ('round', 'plugin', 'CPU ms', 'modules'))
    last = {}
    for round_no in range(1, args.rounds + 1):
        result = {}
        for name in PLUGINS:
            result[name] = measure(args.venv, name, args.forks)
            print('%-5d  %-18s  %9.1f  %d' % (
                round_no, name, result[name]['median_ms'],
                len(result[name]['modules'])))
        print('%-5d  %-18s  %8.2fx' % (
            round_no, 'ours / ssh', result[PLUGINS[1]]['median_ms'] /
            max(result[PLUGINS[0]]['median_ms'], 1e-6)))
        last = result
    print('# modules a worker imports for ours: %s'
          % ' '.join(last[PLUGINS[1]]['modules']))
    return 0


if __name__ == '__main__':
    sys.exit(main())
