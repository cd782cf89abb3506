"""What a module run leaves in the process that ran it, and what running
the next task in that same process would cost.

    python3 bench/ansible/module_state.py [--venv /opt/ansible/2.21]
        [--python /usr/bin/python3] [--runs 100]
        [--module 'command /bin/true' ...]

A task runs in a fresh fork of its warm context (``forks.py``), so nothing
a module changes reaches the next task, unless its module is one of
``target.STAYING_MODULES``, chosen with this measurement: those run in a
module process that stays for the next of them.  Per module (default:
command, shell, stat, file, lineinfile, copy, slurp, ping, setup), ansible-core
(--venv) builds the pipelined script as ``module_run.py`` does; a local context on --python holds its zip; the
context forks one process, which runs the module again and again in
itself (``tests/ansible/module_state_fns.py``).  Printed per module:

- CPU per run in that one process (the module, what it ran) against a
  fork per run (``module_run.time_plasmid``: the module process plus the
  context's own share), and as ``target.run_module`` runs it now (a
  module of ``target.STAYING_MODULES`` in a process that stays, with
  ``baseline.py``'s checks; any other forked);
- what the first run left that the process did not hold before it: the
  globals of every loaded module (rebound, or a container or object that
  changed size), modules imported, and the process's own state
  (environment, cwd, umask, signal handlers, fds, threads, locale,
  rlimits, ids, warnings filters, logging, atexit);
- what the second run changed again (what every run sets anew);
- what one such fingerprint of the process costs.

Shallow by design: a change inside an object that keeps its size, or in
a C extension, is not seen; read "nothing" as "nothing this can see".
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path[:0] = [ROOT, os.path.join(ROOT, 'bench'), HERE,
                os.path.join(ROOT, 'tests', 'ansible')]

import plasmid  # noqa: E402
from benchlib import machine_line  # noqa: E402

import module_run  # noqa: E402
import module_state_fns  # noqa: E402
from module_scripts import record_script, warm_context  # noqa: E402

MODULES = ['command /bin/true', 'shell echo hi', 'stat path=/etc/hostname',
           'file path={work}/touched state=touch',
           'lineinfile path={work}/lines line=a create=true',
           'copy src=/etc/hostname dest={work}/copied remote_src=true',
           'slurp src=/etc/hostname', 'ping', 'setup gather_subset=min']


def measure(venv: str, python: str, spec: str, work: str,
            runs: int) -> dict:
    module, _, args = spec.format(work=work).partition(' ')
    scratch = tempfile.mkdtemp(dir=work)
    script = record_script(venv, python, args,
                                      os.path.join(scratch, 'record'),
                                      module)
    with plasmid.Router() as router:
        ctx, digest, to_target = warm_context(router, python, script)
        report = ctx.call(module_state_fns.runs_in_one_process, digest,
                          to_target, 5, runs)
    for key, fork_each in (('forked', True), ('as run', False)):
        row = module_run.time_plasmid(python, script, runs, fork_each)
        report[key + ' cpu ms'] = row['cpu'] + row['context_cpu']
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--venv', default='/opt/ansible/2.21')
    parser.add_argument('--python', default='/usr/bin/python3')
    parser.add_argument('--runs', type=int, default=100)
    parser.add_argument('--module', action='append', dest='modules',
                        help="'NAME ARGS' (repeatable; {work} is a scratch "
                             'directory); default: %s' % ', '.join(MODULES))
    args = parser.parse_args()
    print('# module state in one process -- %s' % machine_line())
    print('# modules built by %s, run by %s; %d timed runs each'
          % (args.venv, args.python, args.runs))
    work = tempfile.mkdtemp(prefix='plasmid-module-state-')
    try:
        for spec in args.modules or MODULES:
            print('\n## %s' % spec)
            try:
                report = measure(args.venv, args.python, spec, work,
                                 args.runs)
            except (subprocess.CalledProcessError, AssertionError) as exc:
                print('skipped: the module does not run cleanly here (%s)'
                      % exc)
                continue
            print('exit statuses: %s' % report['statuses'])
            print('CPU per run: %.2f ms in one process, %.2f ms forked '
                  '(%.1fx); %.0f minor faults per run in one process; '
                  '%.2f ms as target.run_module runs it now'
                  % (report['cpu ms'], report['forked cpu ms'],
                     report['forked cpu ms'] / report['cpu ms'],
                     report['faults'], report['as run cpu ms']))
            print('fingerprint of the process: %.1f ms'
                  % report['fingerprint ms'])
            for heading in ('left by the first run',
                            'changed by the second run'):
                found = report[heading]
                print('%s (%d): %s' % (heading, len(found),
                                       ', '.join(found) or 'nothing'))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == '__main__':
    main()
