"""Modules that respawn themselves under another interpreter (apt, dnf,
package_facts) run from their script, and read as under vanilla."""
from __future__ import annotations

import subprocess

import pytest

from runner import inventory, run_playbook
from parity import STRATEGY, assert_same
from testbed.pythons import require_python

# The oldest and the newest release only in CI (conftest.py).
pytestmark = pytest.mark.edge_releases

RESPAWNER = '''#!/usr/bin/python
import sys
from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.common.respawn import (
    has_respawned, probe_interpreters_for_module, respawn_module)


def main():
    module = AnsibleModule(argument_spec=dict(python=dict(type='str')))
    if not has_respawned():
        # The probe runs the other interpreter with the payload on its
        # PYTHONPATH: it must import ansible.module_utils.basic from there.
        found = probe_interpreters_for_module(
            ['/nonexistent/python', module.params['python']], 'json')
        if found is None:
            module.fail_json(msg='the probe found no interpreter')
        respawn_module(found)
    module.exit_json(changed=False, respawned=has_respawned(),
                     executable=sys.executable)


main()
'''

BOOK = """
- hosts: targets
  gather_facts: false
  tasks:
    - name: before
      command: id -un
    - name: respawn under another python
      respawner: python=%(python)s
      register: respawned
    - name: respawn again, as root
      respawner: python=%(python)s
      become: true
    - name: after, still from RAM
      ping:
"""


def test_a_module_respawns_under_another_python(
        ansible_bin, ansible_account, sshd, tmp_path):
    other = require_python('3.12')
    (tmp_path / 'library').mkdir()
    (tmp_path / 'library' / 'respawner.py').write_text(RESPAWNER)
    book = BOOK % {'python': other}
    inv = inventory(sshd, ansible_account)
    vanilla = run_playbook(ansible_bin, tmp_path, book, inv, False)
    ours = run_playbook(ansible_bin, tmp_path, book, inv, True)
    assert ours.rc == 0, ours.output
    assert_same(vanilla, ours)
    assert_same(vanilla, run_playbook(ansible_bin, tmp_path, book, inv,
                                      True, STRATEGY))
    results = {r['task']: r['result'] for r in ours.results}
    respawned = results['respawn under another python']
    assert respawned['respawned'] is True, respawned
    assert respawned['executable'] == other, respawned
    # Both respawning tasks ran from their scripts; the others from RAM.
    assert ours.stats['modules_from_script'] == 2, ours.stats
    assert ours.stats['module_runs'] == 2, ours.stats  # command, ping


APT = """
- hosts: targets
  gather_facts: false
  tasks:
    - name: a package that is installed, through a python without apt
      apt: name=sudo state=present
      become: true
      vars:
        ansible_python_interpreter: %(python)s
"""


def test_apt_respawns_into_the_system_python(
        ansible_bin, ansible_account, sshd, tmp_path):
    """apt on a Python without python3-apt finds /usr/bin/python3 (which
    has it) by probing, and respawns there.  From RAM the probe would fail
    and apt would try to install python3-apt."""
    system = '/usr/bin/python3'
    if subprocess.call([system, '-c', 'import apt']) != 0:
        pytest.fail('the test bed needs python3-apt (.ci/setup installs it)')
    other = require_python('3.11')
    assert subprocess.call([other, '-c', 'import apt']) != 0
    book = APT % {'python': other}
    inv = inventory(sshd, ansible_account)
    vanilla = run_playbook(ansible_bin, tmp_path, book, inv, False)
    assert vanilla.rc == 0, vanilla.output
    ours = run_playbook(ansible_bin, tmp_path, book, inv, True)
    assert_same(vanilla, ours)
    result = ours.results[0]['result']
    assert result.get('changed') is False, result
    assert ours.stats['modules_from_script'] == 1, ours.stats
