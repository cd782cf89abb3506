"""What a new host's first tasks cost its target's CPU: plasmid vs vanilla.

    python3 bench/ansible/host_start.py [--venv /opt/ansible/2.21]
        [--python /usr/bin/python3] [--reps 10] [--tasks 5]

In a playbook's first round every host starts its context at once, and
fifty of them on one machine (bench/ansible's hosts50) are bound by CPU.
ansible-core (from --venv) builds the pipelined script of ``command:
/bin/true`` through a recording connection; then, on the target Python
--python, per rep:

- plasmid: a fresh master (this process's Python: run the script with the
  ansible venv's interpreter to be the broker) starts a local context; its
  CPU (user + system, the context and the module processes it started) is
  read after the first call into the accelerator's target code (the
  context's start, ``plasmid.ansible.target`` arriving: as bytecode when
  the master knows the context's version in time, from the master itself
  or from its helper of that version and its disk cache), after the
  module's zip arrived (compiled there, its shared code imported), and
  after ``--tasks`` runs;
- vanilla: ``--tasks`` runs of the script in a fresh interpreter each.

Medians over ``--reps`` after one untimed rep.  No ssh: the logins' CPU,
which every tool pays, is not in these figures.
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path[:0] = [ROOT, os.path.join(ROOT, 'bench'),
                os.path.join(ROOT, 'tests', 'ansible')]

import plasmid  # noqa: E402
from benchlib import machine_line  # noqa: E402
from plasmid.ansible import target  # noqa: E402

import module_run_fns  # noqa: E402
from module_scripts import add_script, record_script  # noqa: E402


def context_cpu(ctx) -> float:
    """ms of CPU the context and the processes it started have used."""
    children, _, own = ctx.call(module_run_fns.context_usage)
    return (children + own) * 1e3


def plasmid_host(python: str, script: bytes, tasks: int) -> list[float]:
    """CPU ms after the first call, after the zip, after the tasks."""
    with plasmid.Router() as router:
        ctx = router.local(python_path=python)
        ctx.call(target.held_count)  # what the broker's first call brings
        steps = [context_cpu(ctx)]
        digest, to_target = add_script(ctx, script)
        steps.append(context_cpu(ctx))
        for _ in range(tasks):
            rc, _, err = ctx.call(target.run_module, digest, to_target)
            assert rc == 0, err
        ctx.call(target.fork_counts)  # reaps the last module process
        steps.append(context_cpu(ctx))
        compilers = router.responder.compilers
        if compilers is not None:  # the next master's, from the disk cache
            compilers.wait_idle(60)
    return steps


def vanilla_host(python: str, script: bytes, tasks: int) -> float:
    cpu0, _ = module_run_fns.children_usage()
    for _ in range(tasks):
        done = subprocess.run([python], input=script, capture_output=True)
        assert done.returncode == 0, done.stderr
    cpu1, _ = module_run_fns.children_usage()
    return (cpu1 - cpu0) * 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--venv', default='/opt/ansible/2.21')
    parser.add_argument('--python', default='/usr/bin/python3')
    parser.add_argument('--reps', type=int, default=10)
    parser.add_argument('--tasks', type=int, default=5)
    args = parser.parse_args()
    print('# a new host\'s first tasks, target CPU -- %s' % machine_line())
    work = tempfile.mkdtemp(prefix='plasmid-host-start-')
    try:
        script = record_script(args.venv, args.python, '/bin/true', work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print('# command: /bin/true, built by %s, run by %s; master %s (Python '
          '%d.%d); %d tasks; medians of %d reps after 1' % (
              args.venv, args.python, sys.executable,
              *sys.version_info[:2], args.tasks, args.reps))
    plasmid_steps, vanilla = [], []
    for rep in range(args.reps + 1):
        steps = plasmid_host(args.python, script, args.tasks)
        cpu = vanilla_host(args.python, script, args.tasks)
        if rep:
            plasmid_steps.append(steps)
            vanilla.append(cpu)
    first, zipped, done = (statistics.median(s[i] for s in plasmid_steps)
                           for i in range(3))
    print('%-44s %10s' % ('step', 'CPU ms'))
    print('%-44s %10.1f' % ('plasmid: start + first call (target code)',
                            first))
    print('%-44s %10.1f' % ('plasmid: + the zip (compiled, shared code)',
                            zipped - first))
    print('%-44s %10.1f' % ('plasmid: + %d runs' % args.tasks,
                            done - zipped))
    print('%-44s %10.1f' % ('plasmid: the host in all', done))
    print('%-44s %10.1f' % ('vanilla: %d runs' % args.tasks,
                            statistics.median(vanilla)))
    print('plasmid / vanilla: %.2fx' % (done / statistics.median(vanilla)))


if __name__ == '__main__':
    main()
