"""A become plugin the accelerator does not know runs as given, through
the login's interpreter, and its tasks end as vanilla's do: modules,
raw, files, templates, a refusal."""
from __future__ import annotations

import os

import pytest

from runner import BECOME_PLUGINS, inventory, run_playbook
from parity import STRATEGY, assert_same
from testbed.accounts import USER_B

# The oldest and the newest release only in CI (conftest.py).
pytestmark = pytest.mark.edge_releases

BOOK = """
- hosts: targets
  gather_facts: false
  become_method: via_sudo_n
  vars:
    dest: /root/plasmid-other-become-%(tag)s
  tasks:
    - name: module as root
      command: id -un
      become: true
    - name: raw as root
      raw: id -un
      become: true
    - name: copy as root
      copy: {content: "other\\n", dest: "{{ dest }}", mode: "0600"}
      become: true
    - name: template as root
      template: {src: /etc/hostname, dest: "{{ dest }}.t"}
      become: true
    - name: read it back
      slurp: {src: "{{ dest }}"}
      become: true
    - name: remove them
      file: {path: "{{ item }}", state: absent}
      loop: ["{{ dest }}", "{{ dest }}.t"]
      become: true
    - name: refused without a password
      command: id -un
      become: true
      become_user: %(refused)s
      ignore_errors: true
    - name: as the login
      command: id -un
"""


def test_an_unknown_become_plugin_runs_as_given_like_vanilla(
        ansible_bin, ansible_account, sshd, tmp_path):
    book = BOOK % {'tag': os.getpid(), 'refused': USER_B}
    inv = inventory(sshd, ansible_account)
    env = {'ANSIBLE_BECOME_PLUGINS': BECOME_PLUGINS}
    vanilla = run_playbook(ansible_bin, tmp_path, book, inv, False, env)
    assert vanilla.rc == 0, vanilla.output
    by_task = vanilla.by_task()
    assert by_task[('t1', 'module as root')]['result']['stdout'] == 'root'
    assert by_task[('t1', 'refused without a password')]['status'] == \
        'failed'
    for extra in ({}, STRATEGY):
        ours = run_playbook(ansible_bin, tmp_path, book, inv, True,
                            dict(env, **extra))
        assert_same(vanilla, ours)
        # Each become command went through the login's interpreter as
        # it came; only the login's own tasks ran as modules from RAM.
        assert ours.stats['contexts'] == 1, ours.stats
        assert ours.stats.get('shell_as_given', 0) >= 8, ours.stats
