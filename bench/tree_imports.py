"""Imports through an intermediary: what its children get, plasmid vs Mitogen.

    python3 bench/tree_imports.py [--reps 3] [--other PYTHON] [--same PYTHON]
                                  [--module django.db.models]

Local contexts, no ssh: the master starts A on its own Python, and through
A two grandchildren: B on ``--other`` (by default the pyenv Python of
another minor version, 3.10 or later) and C on ``--same``, a Python of the
master's minor version (default /usr/bin/python3, which must be one).
Neither has the module (default django.db.models, installed for the master
only; checked), so it reaches B and C from the master through A.  Per
trial, fresh contexts with each tool; B imports the module, then C.

Per grandchild, read from its importer (``importer_fns.importer_state``):
modules received, the KiB that came (plasmid: the LOAD_MODULE bodies;
Mitogen: the compressed sources), of which bytecode, and the import's time
inside the grandchild.  plasmid's master sends bytecode beside the source
to a context on its own Python (A); A passes it on to C, which runs it,
and not to B, which could not.  Medians over ``--reps``; the first trial
per tool is a warm-up (the master's caches are cold), not counted.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.dirname(HERE), HERE,
                os.path.join(os.path.dirname(HERE), 'tests')]

import mitogen.master  # noqa: E402
import mitogen.utils  # noqa: E402

import importer_fns  # noqa: E402
import plasmid  # noqa: E402
from benchlib import machine_line  # noqa: E402
from testbed.pythons import available_pythons  # noqa: E402

KIB = 1024.0
# Without site-packages: an editable install of plasmid there (of another
# checkout, say) would serve A the plasmid modules its core does not hold.
A_PYTHON = [sys.executable, '-S']


def other_python() -> str:
    """A pyenv Python 3.10+ of another minor version than ours."""
    def key(version: str) -> tuple:
        return tuple(int(part) for part in version.split('.'))
    for version in sorted(available_pythons(), key=key, reverse=True):
        if key(version) != sys.version_info[:2] and key(version) >= (3, 10):
            return available_pythons()[version]
    raise SystemExit('no Python 3.10+ of another minor version found')


def check_target(python: str, module: str, same_minor: bool) -> None:
    """*python* must lack *module*, and be of our minor version or not."""
    script = ('import sys, importlib.util; print(sys.version_info[:2] == '
              '%r, importlib.util.find_spec(%r) is None)'
              % (tuple(sys.version_info[:2]), module.split('.')[0]))
    same, lacks = subprocess.check_output([python, '-c', script]).split()
    if same != str(same_minor).encode() or lacks != b'True':
        raise SystemExit('%s: must %shave our minor version and lack %s'
                         % (python, '' if same_minor else 'not ', module))


def grandchild_figures(ctx, module: str) -> dict:
    """Import *module* in *ctx*; what came and how long it took."""
    seconds = ctx.call(importer_fns.timed_import, module)
    state = ctx.call(importer_fns.importer_state)
    received = state['message_bytes'] or sum(state['received'].values())
    return {'modules': len(state['received']), 'kib': received / KIB,
            'code_kib': sum(state['code'].values()) / KIB,
            'ms': seconds * 1e3}


def plasmid_trial(other: str, same: str, module: str) -> dict:
    with plasmid.Router() as router:
        a = router.local(python_path=A_PYTHON, name='A')
        b = router.local(via=a, python_path=other, name='B')
        c = router.local(via=a, python_path=same, name='C')
        return {'B': grandchild_figures(b, module),
                'C': grandchild_figures(c, module)}


def mitogen_trial(other: str, same: str, module: str) -> dict:
    broker = mitogen.master.Broker()
    router = mitogen.master.Router(broker)
    try:
        a = router.local(python_path=A_PYTHON)
        b = router.local(via=a, python_path=other)
        c = router.local(via=a, python_path=same)
        return {'B': grandchild_figures(b, module),
                'C': grandchild_figures(c, module)}
    finally:
        broker.shutdown()
        broker.join()


def medians(trials: list[dict], child: str) -> dict:
    return {key: statistics.median(t[child][key] for t in trials)
            for key in trials[0][child]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--reps', type=int, default=3)
    parser.add_argument('--other', default=None,
                        help="B's Python (default: another minor version)")
    parser.add_argument('--same', default='/usr/bin/python3',
                        help="C's Python (of the master's minor version)")
    parser.add_argument('--module', default='django.db.models')
    args = parser.parse_args()
    other = args.other or other_python()
    check_target(other, args.module, same_minor=False)
    check_target(args.same, args.module, same_minor=True)
    trials: dict[str, list] = {'plasmid': [], 'mitogen': []}
    for rep in range(args.reps + 1):
        peers = [('plasmid', plasmid_trial), ('mitogen', mitogen_trial)]
        for name, trial in peers[rep % 2:] + peers[:rep % 2]:
            result = trial(other, args.same, args.module)
            if rep:  # the first is a warm-up
                trials[name].append(result)
    print('# tree imports -- %s' % machine_line())
    print('# master and A: %s (A with -S); B: %s; C: %s; module %s; %d '
          'trial(s) per tool after 1 warm-up, medians'
          % (sys.executable, other, args.same, args.module, args.reps))
    print('%-8s %-22s %8s %9s %10s %10s' % (
        'tool', 'grandchild', 'modules', 'KiB', 'code KiB', 'import ms'))
    rows = {}
    for tool in ('plasmid', 'mitogen'):
        for child, label in (('B', 'B (another Python)'),
                             ('C', 'C (the master\'s)')):
            row = rows[tool, child] = medians(trials[tool], child)
            print('%-8s %-22s %8d %9.1f %10.1f %10.1f' % (
                tool, label, row['modules'], row['kib'], row['code_kib'],
                row['ms']))
    for child in ('B', 'C'):
        ours, theirs = rows['plasmid', child], rows['mitogen', child]
        print('plasmid / mitogen, %s: KiB %.2fx, import time %.2fx'
              % (child, ours['kib'] / theirs['kib'],
                 ours['ms'] / theirs['ms']))


if __name__ == '__main__':
    main()
