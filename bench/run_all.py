"""Run every benchmark in turn and print their reports.

    python3 bench/run_all.py [--skip-ssh]

Runs roundtrip.py, bootstrap_size.py, context_start.py and (as root, see
ssh_connect.py and imports.py) ssh_connect.py and imports.py with their
defaults, each in its own interpreter so none inherits another's threads or
imported modules.
Exits non-zero if one failed.  Takes about five minutes on 2 cores.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPTS = ['roundtrip.py', 'bootstrap_size.py', 'context_start.py',
           'ssh_connect.py', 'imports.py']
SSH_SCRIPTS = ('ssh_connect.py', 'imports.py')   # need root and sshd


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--skip-ssh', action='store_true',
                        help='leave out ssh_connect.py and imports.py (need '
                        'root and sshd)')
    args = parser.parse_args()
    failed = []
    for script in SCRIPTS:
        if script in SSH_SCRIPTS and (args.skip_ssh or os.geteuid() != 0):
            print('\n### %s skipped (%s)' % (
                script, '--skip-ssh' if args.skip_ssh else 'needs root'))
            continue
        print('\n### %s' % script, flush=True)
        if subprocess.run([sys.executable, os.path.join(HERE, script)]).returncode:
            failed.append(script)
    if failed:
        sys.exit('failed: ' + ', '.join(failed))


if __name__ == '__main__':
    main()
