"""One Ansible module run on the target, without ansible-playbook around it.

    python3 bench/ansible/module_run.py [--venv /opt/ansible/2.21]
        [--python /usr/bin/python3] [--runs 200] [--module command]
        [--args /bin/true] [--gap-ms 0]

What a task costs the target machine, which ansible-playbook's own time
hides: ansible-core (from --venv) builds the pipelined AnsiballZ script of
``MODULE: ARGS`` (default ``command: /bin/true``) through a connection that
only records it (``local`` underneath); then, on the target Python --python:

- vanilla: the script piped into a fresh interpreter, as ansible-core's
  pipelining runs it over ssh (interpreter start, the zip unpacked to a
  temporary directory, the module, clean-up);
- plasmid: ``plasmid.ansible.target.run_module`` in a local context that
  holds the zip (what the broker asks of a context per task: a fork of the
  warm context runs the module from memory, or, for the modules of
  ``target.STAYING_MODULES``, a module process that stayed after the
  last run);
- plasmid, a fork per run: the same with no module process staying.

Per run: wall time (medians, p10), CPU of the processes the run started
(the child and what it ran, from RUSAGE_CHILDREN of the process that
waited for them, and of those still alive, from /proc) and their minor
page faults; for plasmid also the CPU of
the context itself (the call, the fork, reading the answer, forking the
next spare), which lives for the whole run where vanilla's interpreter
is the child.  The CPU ratio compares all of each.  No ssh: the network,
sshd and the broker are not in these figures.  ``--gap-ms`` waits that
long before each plasmid run, as a real controller does between a host's
tasks (ansible-playbook's own work, the network): what a context does
after its answer (forking the next spare, the staying process's check)
then leaves the run's wall time, as it does in a playbook.
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Optional

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path[:0] = [ROOT, os.path.join(ROOT, 'bench'),
                os.path.join(ROOT, 'tests', 'ansible')]

import plasmid  # noqa: E402
from benchlib import machine_line  # noqa: E402
from plasmid.ansible import target  # noqa: E402

import module_run_fns  # noqa: E402
from module_scripts import record_script, warm_context  # noqa: E402


def time_vanilla(python: str, script: bytes, runs: int) -> dict:
    walls = []
    cpu0, faults0 = module_run_fns.children_usage()
    for _ in range(runs):
        started = time.perf_counter()
        done = subprocess.run([python], input=script, capture_output=True)
        walls.append(time.perf_counter() - started)
        assert done.returncode == 0, done.stderr
    cpu1, faults1 = module_run_fns.children_usage()
    return summary(walls, (cpu1 - cpu0) / runs, (faults1 - faults0) / runs,
                   None)  # the interpreter is the child: no context


def time_plasmid(python: str, script: bytes, runs: int,
                 fork_each: bool = False, gap: float = 0.0) -> dict:
    """*fork_each*: no module process stays for the next run; *gap*:
    seconds to wait before each run, not counted."""
    walls = []
    with plasmid.Router() as router:
        ctx, digest, to_target = warm_context(router, python, script)
        if fork_each:  # as the broker asks with PLASMID_ANSIBLE_STAYING=off
            to_target = dict(to_target, stay=False)
        cpu0, faults0, own0 = ctx.call(module_run_fns.context_usage)
        for _ in range(runs):
            if gap:
                time.sleep(gap)
            started = time.perf_counter()
            ctx.call(target.run_module, digest, to_target)
            walls.append(time.perf_counter() - started)
        time.sleep(0.2)
        ctx.call(target.fork_counts)  # reaps the last child
        cpu1, faults1, own1 = ctx.call(module_run_fns.context_usage)
    return summary(walls, (cpu1 - cpu0) / runs, (faults1 - faults0) / runs,
                   (own1 - own0) / runs)


def summary(walls: list[float], cpu: float, faults: float,
            context_cpu: Optional[float]) -> dict:
    walls = sorted(walls)
    return {'median': statistics.median(walls) * 1e3,
            'p10': walls[len(walls) // 10] * 1e3,
            'cpu': cpu * 1e3, 'faults': faults,
            'context_cpu': None if context_cpu is None else context_cpu * 1e3}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--venv', default='/opt/ansible/2.21')
    parser.add_argument('--python', default='/usr/bin/python3')
    parser.add_argument('--runs', type=int, default=200)
    parser.add_argument('--module', default='command',
                        help='the module to run (default %(default)s)')
    parser.add_argument('--args', default='/bin/true',
                        help="its arguments, as ansible's -a takes them")
    parser.add_argument('--gap-ms', type=float, default=0.0,
                        help='wait before each plasmid run (default '
                        '%(default)s): the controller\'s time between tasks')
    args = parser.parse_args()
    print('# one module run on the target -- %s' % machine_line())
    work = tempfile.mkdtemp(prefix='plasmid-module-run-')
    try:
        script = record_script(args.venv, args.python, args.args, work,
                               args.module)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print('# %s: %s, built by %s, run by %s; %d runs each, medians; '
          '%.1f ms before each plasmid run' % (
              args.module, args.args, args.venv, args.python, args.runs,
              args.gap_ms))
    gap = args.gap_ms / 1e3
    rows = [('vanilla (python < script)',
             time_vanilla(args.python, script, args.runs)),
            ('plasmid (target.run_module)',
             time_plasmid(args.python, script, args.runs, gap=gap)),
            ('plasmid, a fork per run',
             time_plasmid(args.python, script, args.runs, fork_each=True,
                          gap=gap))]
    print('%-30s %10s %8s %16s %14s %18s' % (
        'peer', 'wall ms', 'p10 ms', 'child CPU ms', 'minor faults',
        'context CPU ms'))
    for name, row in rows:
        print('%-30s %10.2f %8.2f %16.2f %14.0f %18s' % (
            name, row['median'], row['p10'], row['cpu'], row['faults'],
            '-' if row['context_cpu'] is None else '%.2f' % row['context_cpu']))
    vanilla, ours = rows[0][1], rows[1][1]
    print('vanilla / plasmid: wall %.2fx, CPU (child + context) %.2fx' % (
        vanilla['median'] / ours['median'],
        vanilla['cpu'] / (ours['cpu'] + ours['context_cpu'])))
    print('# load avg at the end: %s'
          % ' '.join('%.2f' % x for x in os.getloadavg()))


if __name__ == '__main__':
    main()
