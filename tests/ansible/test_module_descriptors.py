"""What a module's process passes on to a command it starts with
``close_fds=False``: fds 0-2 alone, as under vanilla, whose module process
has no other.  Under the accelerator the module process is a fork of its
context: the core's fork hook puts /dev/null over the context's links
(by dup2, which makes a descriptor inheritable), and those copies must
not reach the module's commands (plasmid/ansible/forks.py)."""
from __future__ import annotations

import pytest

from parity import run_both
from runner import inventory

# The oldest and the newest release only in CI (conftest.py).
pytestmark = pytest.mark.edge_releases

MODULE = '''#!/usr/bin/python
import fcntl, os, subprocess, sys
from ansible.module_utils.basic import AnsibleModule

CHILD = """
import os
fds = []
for name in os.listdir('/proc/self/fd'):
    try:
        os.fstat(int(name))  # not the listing's own, closed by now
    except OSError:
        continue
    fds.append(int(name))
print(' '.join(str(fd) for fd in sorted(fds)))
"""

module = AnsibleModule(argument_spec={})
inheritable = []
for name in os.listdir('/proc/self/fd'):
    fd = int(name)
    try:
        flags = fcntl.fcntl(fd, fcntl.F_GETFD)
    except (IOError, OSError):
        continue
    if fd > 2 and not flags & fcntl.FD_CLOEXEC:
        inheritable.append(fd)
child = subprocess.run([sys.executable, '-c', CHILD], close_fds=False,
                       stdout=subprocess.PIPE, universal_newlines=True)
module.exit_json(changed=False, inheritable_here=sorted(inheritable),
                 child_inherits=[int(fd) for fd in child.stdout.split()])
'''

BOOK = """
- hosts: targets
  gather_facts: false
  tasks:
    - name: first
      fd_report:
    - name: second, in the spare
      fd_report:
    - name: as root
      fd_report:
      become: true
    - name: once the context has a child
      fd_report:
"""


def test_a_modules_command_inherits_no_descriptor_beyond_vanillas(
        ansible_bin, ansible_account, sshd, tmp_path):
    (tmp_path / 'library').mkdir()
    (tmp_path / 'library' / 'fd_report.py').write_text(MODULE)
    inv = inventory(sshd, ansible_account)
    # run_both compares every task's result with vanilla's.
    vanilla, ours = run_both(ansible_bin, tmp_path, BOOK, inv)
    assert ours.rc == 0, ours.output
    for run in (vanilla, ours):
        for (_, task), done in run.by_task().items():
            result = done['result']
            assert result['child_inherits'] == [0, 1, 2], (task, result)
            assert result['inheritable_here'] == [], (task, result)
