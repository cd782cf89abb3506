"""Imports from a source tree with no .pyc: what serving them costs the master.

    python3 bench/source_imports.py [--reps 5] [--python /usr/bin/python3]
                                    [--module django.db.models]
                                    [--packages django,asgiref,sqlparse]

A checkout, an editable install or a ``PYTHONDONTWRITEBYTECODE`` image has
no .pyc beside its sources, so the master compiles what it serves: to find
a module's imports, and (plasmid) to send a context on its own Python
version the bytecode with the source.  Here ``--packages`` are copied
without ``__pycache__`` to a temporary directory put first on the master's
path; a local context on ``--python`` (of the master's minor version, and
lacking the module: checked) imports ``--module``.  Each trial is a fresh
master process, so no cache of an earlier trial helps; peers alternate.

Per trial: the master's CPU (all its threads) and the wall time of the
call that imports, and the import's time inside the context.  Medians over
``--reps``, after one warm-up trial per tool (the page cache).
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.dirname(HERE), HERE]

from benchlib import machine_line  # noqa: E402


def copy_sources(packages: list[str], into: str) -> None:
    """*packages* as installed for the master, without bytecode."""
    for name in packages:
        spec = importlib.util.find_spec(name)
        if spec is None or not spec.submodule_search_locations:
            raise SystemExit('%s: not an installed package' % name)
        shutil.copytree(list(spec.submodule_search_locations)[0],
                        os.path.join(into, name),
                        ignore=shutil.ignore_patterns('__pycache__', '*.pyc'))


def trial(tool: str, tree: str, python: str, module: str) -> dict:
    """One tool's import in this (fresh) process."""
    sys.dont_write_bytecode = True
    sys.path.insert(0, tree)
    import importer_fns
    if tool == 'plasmid':
        import plasmid
        with plasmid.Router() as router:
            return _timed(router.local(python_path=python), module,
                          importer_fns)
    import mitogen.master
    broker = mitogen.master.Broker()
    try:
        return _timed(mitogen.master.Router(broker).local(python_path=python),
                      module, importer_fns)
    finally:
        broker.shutdown()
        broker.join()


def _timed(ctx, module: str, importer_fns) -> dict:
    ctx.call(os.getpid)  # started and answering
    cpu, wall = time.process_time(), time.perf_counter()
    inside = ctx.call(importer_fns.timed_import, module)
    return {'master_cpu_ms': (time.process_time() - cpu) * 1e3,
            'wall_ms': (time.perf_counter() - wall) * 1e3,
            'import_ms': inside * 1e3}


def run_trial(tool: str, tree: str, python: str, module: str) -> dict:
    out = subprocess.check_output(
        [sys.executable, __file__, '--trial', tool, '--tree', tree,
         '--python', python, '--module', module])
    return json.loads(out.decode().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--reps', type=int, default=5)
    parser.add_argument('--python', default='/usr/bin/python3')
    parser.add_argument('--module', default='django.db.models')
    parser.add_argument('--packages', default='django,asgiref,sqlparse')
    parser.add_argument('--trial', help=argparse.SUPPRESS)
    parser.add_argument('--tree', help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.trial:
        print(json.dumps(trial(args.trial, args.tree, args.python,
                               args.module)))
        return
    from tree_imports import check_target
    check_target(args.python, args.module, same_minor=True)
    tree = tempfile.mkdtemp(prefix='plasmid-sources-')
    try:
        copy_sources(args.packages.split(','), tree)
        trials: dict[str, list] = {'plasmid': [], 'mitogen': []}
        for rep in range(args.reps + 1):
            tools = ['plasmid', 'mitogen'][::1 if rep % 2 else -1]
            for tool in tools:
                result = run_trial(tool, tree, args.python, args.module)
                if rep:  # the first is a warm-up
                    trials[tool].append(result)
    finally:
        shutil.rmtree(tree)
    report(args, trials)


def report(args, trials: dict) -> None:
    print('# imports from sources without .pyc -- %s' % machine_line())
    print('# master %s; context %s; module %s from %s; %d trial(s) per '
          'tool after 1 warm-up, medians (min-max)'
          % (sys.executable, args.python, args.module, args.packages,
             args.reps))
    keys = ('master_cpu_ms', 'wall_ms', 'import_ms')
    print('%-8s %22s %22s %22s' % ('tool', 'master CPU ms', 'call wall ms',
                                   'import in context ms'))
    medians = {}
    for tool in ('plasmid', 'mitogen'):
        cells = []
        for key in keys:
            values = [t[key] for t in trials[tool]]
            medians[tool, key] = statistics.median(values)
            cells.append('%.0f (%.0f-%.0f)' % (
                medians[tool, key], min(values), max(values)))
        print('%-8s %22s %22s %22s' % (tool, *cells))
    print('plasmid / mitogen: master CPU %.2fx, call wall %.2fx, import in '
          'context %.2fx' % tuple(medians['plasmid', k] /
                                  medians['mitogen', k] for k in keys))


if __name__ == '__main__':
    main()
