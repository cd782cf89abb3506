"""ansible.builtin.reboot through the accelerator, against vanilla.

A reboot ends every process of the host, the accelerator's interpreters
among them, and the reboot action resets the connection until the host
answers with a new boot id.  Here the "reboot" is a command that kills
every process of the login account (root's interpreter goes with them)
and writes a new boot id to a file the task reads instead of the kernel's.
The command backgrounds that work, as reboot commands do: under sudo it
must outlive the command that started it."""
from __future__ import annotations

import pytest

from runner import inventory, run_playbook
from parity import STRATEGY, assert_same

# The oldest and the newest release only in CI (conftest.py).
pytestmark = pytest.mark.edge_releases

REBOOT = """
- hosts: targets
  gather_facts: false
  tasks:
    - name: before
      command: id -un
      become: true
    - name: reboot
      become: true
      reboot:
        reboot_command: >-
          /bin/sh -c '(sleep 1; pkill -KILL -u {{ ansible_user }};
          echo {{ tag }}-$$ > {{ boot_id }}) >/dev/null 2>&1 &'
        boot_time_command: cat {{ boot_id }}
        reboot_timeout: 60
        connect_timeout: 5
    - name: after, as root
      command: id -un
      become: true
    - name: after, as the login
      command: id -un
"""


def test_reboot_matches_vanilla(ansible_bin, ansible_account, sshd,
                                tmp_path):
    inv = inventory(sshd, ansible_account)
    boot_id = tmp_path / 'boot_id'
    runs = []
    try:
        for tag, accelerated, extra in (('vanilla', False, {}),
                                        ('plugin', True, {}),
                                        ('strategy', True, STRATEGY)):
            boot_id.write_text('before\n')
            run = run_playbook(ansible_bin, tmp_path, REBOOT, inv,
                               accelerated, extra,
                               args=('-e', 'boot_id=%s tag=%s'
                                     % (boot_id, tag)))
            assert run.rc == 0, run.output
            assert boot_id.read_text().startswith(tag), run.output
            runs.append(run)
    finally:
        boot_id.unlink()
    vanilla, plugin, threaded = runs
    assert_same(vanilla, plugin)
    assert_same(vanilla, threaded)
    for run in (plugin, threaded):
        results = run.by_task()
        assert results['t1', 'reboot']['result']['rebooted'] is True
        assert results['t1', 'after, as root']['result']['stdout'] == 'root'
        # The interpreters the reboot killed were started again.
        assert run.stats['contexts'] > 2, run.stats
