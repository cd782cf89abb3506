"""What starting a shell command costs a warm target context.

    python3 bench/ansible/shell_start.py [--venv /opt/ansible/2.21]
        [--python /usr/bin/python3] [--runs 100] [--rounds 2]
        [--terminal | --become]

``target.shell('true')`` in a local context on --python that holds the
``command`` module's zip (built by ansible-core from --venv) and has run
it, as a login's context has after its first task: by posix_spawn
(plasmid.ansible.shell_spawn, Python 3.8+) and by subprocess with a preexec_fn
(which forks the whole context), rounds alternating; with --terminal, on
a pseudo-terminal as a job of a shell holding it (how ``raw`` and
``script`` run under sudo, as under ``ssh -tt``); with --become, as a
become command given whole (the fallback for become plugins the broker
does not host): on pipes, its output read until the plugin's marker shows
before the input goes.  Per command: CPU of
the context and of its children (RUSAGE_SELF / RUSAGE_CHILDREN in the
context) and wall time of the call.  No ssh and no broker.
"""
from __future__ import annotations

import argparse
import io
import os
import shutil
import sys
import tempfile
import time
import zipfile
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path[:0] = [ROOT, os.path.join(ROOT, 'bench'), HERE]

import plasmid  # noqa: E402
from benchlib import machine_line  # noqa: E402
from plasmid.ansible import payload, target  # noqa: E402

import module_run  # noqa: E402
import shell_start_fns  # noqa: E402


# target.shell's arguments after the command, by kind of command.
SHELL_ARGUMENTS = {
    'plain': (),
    'terminal': (None, None, None, None, '', 30, True),  # type, job
    'become': (None, None, None, b'MARKER'),  # in_data, prompt, pw, marker
}
COMMANDS = {'plain': 'true', 'terminal': 'true', 'become': 'echo MARKER'}


def measure(python: str, job, files: dict, spawn: bool, runs: int,
            kind: str) -> tuple:
    with plasmid.Router() as router:
        ctx = router.local(python_path=python)
        ctx.call(target.add_zip_files, job.digest, {}, files, job.module_fqn)
        for _ in range(3):
            ctx.call(target.run_module, job.digest, job.to_target({}))
        if not spawn:
            ctx.call(shell_start_fns.by_subprocess_only)
        call = (COMMANDS[kind],) + SHELL_ARGUMENTS[kind]
        ctx.call(target.shell, *call)
        before = ctx.call(shell_start_fns.usage)
        started = time.perf_counter()
        for _ in range(runs):
            assert ctx.call(target.shell, *call)[0] == 0
        wall = time.perf_counter() - started
        after = ctx.call(shell_start_fns.usage)
    return ((after[0] - before[0]) * 1e3 / runs,
            (after[1] - before[1]) * 1e3 / runs, wall * 1e3 / runs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--venv', default='/opt/ansible/2.21')
    parser.add_argument('--python', default='/usr/bin/python3')
    parser.add_argument('--runs', type=int, default=100)
    parser.add_argument('--rounds', type=int, default=2)
    kinds = parser.add_mutually_exclusive_group()
    kinds.add_argument('--terminal', action='store_true',
                       help='on a terminal, as a job (raw, script)')
    kinds.add_argument('--become', action='store_true',
                       help='a become command given whole, on pipes')
    args = parser.parse_args()
    kind = 'terminal' if args.terminal else \
        'become' if args.become else 'plain'
    print('# shell command start in a warm context -- %s' % machine_line())
    work = tempfile.mkdtemp(prefix='plasmid-shell-start-')
    try:
        script = module_run.record_script(args.venv, args.python,
                                          '/bin/true', work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    job = payload.parse(script)
    with zipfile.ZipFile(io.BytesIO(job.zip_data)) as archive:
        files = {n: zlib.compress(archive.read(n))
                 for n in archive.namelist()}
    print('# %s, %d commands per round, %s' % (
        args.python, args.runs, {'plain': 'plain commands',
                                 'terminal': 'on a terminal, as jobs',
                                 'become': 'become commands on pipes'}[kind]))
    print('%-12s %16s %17s %10s'
          % ('start by', 'context CPU ms', 'children CPU ms', 'wall ms'))
    for _ in range(args.rounds):
        for name, spawn in (('posix_spawn', True), ('subprocess', False)):
            row = measure(args.python, job, files, spawn, args.runs, kind)
            print('%-12s %16.2f %17.2f %10.2f' % ((name,) + row))


if __name__ == '__main__':
    main()
