"""ansible.posix's synchronize through the accelerator, against vanilla.

synchronize is an action plugin that runs rsync on the controller, over
ssh, only when the task's connection says it is ``ssh``: the accelerator's
connection must say so (it reaches hosts by OpenSSH with the ssh plugin's
options), or every synchronize task fails with "This remote host is being
accessed via ... instead so it cannot work"."""
from __future__ import annotations

import os
import shutil

import pytest

from runner import inventory, run_playbook
from parity import STRATEGY, assert_same

# The oldest and the newest release only in CI (conftest.py).
pytestmark = pytest.mark.edge_releases

SYNC = """
- hosts: targets
  gather_facts: false
  tasks:
    - name: push
      ansible.posix.synchronize:
        src: "{{ src }}/"
        dest: "{{ remote }}/"
    - name: pull
      ansible.posix.synchronize:
        mode: pull
        src: "{{ remote }}/"
        dest: "{{ back }}/"
    - name: push as root
      become: true
      ansible.posix.synchronize:
        src: "{{ src }}/"
        dest: "{{ remote }}-root/"
    - name: owned by root
      become: true
      command: stat -c %U {{ remote }}-root/sub/b.txt
    - name: unchanged push
      ansible.posix.synchronize:
        src: "{{ src }}/"
        dest: "{{ remote }}/"
    - name: clean up
      become: true
      command: rm -rf {{ remote }} {{ remote }}-root
"""


def test_synchronize_matches_vanilla(ansible_bin, ansible_account, sshd,
                                     ansible_posix, tmp_path, monkeypatch):
    monkeypatch.setenv('ANSIBLE_COLLECTIONS_PATH', ansible_posix)
    src = tmp_path / 'src'
    (src / 'sub').mkdir(parents=True)
    (src / 'a.txt').write_text('first\n')
    (src / 'sub' / 'b.txt').write_text('second\n')
    back = tmp_path / 'back'
    remote = '/tmp/plasmid-sync-%d' % os.getpid()
    args = ('-e', 'src=%s back=%s remote=%s' % (src, back, remote))
    inv = inventory(sshd, ansible_account)
    runs = []
    # rsync makes *back* each time: a directory made here would show its
    # own time in the pull's itemized output, differing from run to run.
    for accelerated, extra in ((False, {}), (True, {}), (True, STRATEGY)):
        run = run_playbook(ansible_bin, tmp_path, SYNC, inv, accelerated,
                           extra, args=args)
        assert run.rc == 0, run.output
        assert (back / 'sub' / 'b.txt').read_text() == 'second\n'
        results = run.by_task()
        assert results['t1', 'owned by root']['result']['stdout'] == 'root'
        assert results['t1', 'push']['result']['changed'] is True
        assert results['t1', 'unchanged push']['result']['changed'] is False
        runs.append(run)
        shutil.rmtree(back)
    vanilla, plugin, threaded = runs
    assert_same(vanilla, plugin)
    assert_same(vanilla, threaded)
    # The command tasks went through the accelerator.
    assert plugin.stats['module_runs'] >= 2, plugin.stats
