"""community.general's doas: the accelerator keeps an interpreter for the
become user, started through doas, and its tasks end as vanilla's do:
modules, raw, files, and a refusal (which runs as given, so that it reads
as vanilla's)."""
from __future__ import annotations

import os

import pytest

from runner import inventory
from testbed.doas import doas_installed, doas_rules
from parity import run_both

# The oldest and the newest release only in CI (conftest.py).
pytestmark = pytest.mark.edge_releases


BOOK = """
- hosts: targets
  gather_facts: false
  become_method: community.general.doas
  tasks:
    - name: module as root
      command: id -un
      become: true
    - name: raw as root
      raw: id -un
      become: true
    - name: copy as root
      copy: {content: "doas\\n", dest: /root/plasmid-doas-%(tag)s, mode: "0600"}
      become: true
    - name: read it back
      slurp: {src: /root/plasmid-doas-%(tag)s}
      become: true
    - name: remove it
      file: {path: /root/plasmid-doas-%(tag)s, state: absent}
      become: true
    - name: refused
      command: id -un
      become: true
      become_user: nobody
      ignore_errors: true
    - name: as the login
      command: id -un
"""


@pytest.fixture(scope='session')
def doas_for(ansible_account):
    """doas lets the test account become root without a password, and
    nobody else, for the session."""
    if not doas_installed():
        pytest.skip('doas is not installed: run .ci/setup')
    with doas_rules(['permit nopass %s as root' % ansible_account]):
        yield ansible_account


def test_doas_is_hosted_and_matches_vanilla(
        ansible_bin, doas_for, community_general, sshd, tmp_path,
        monkeypatch):
    monkeypatch.setenv('ANSIBLE_COLLECTIONS_PATH', community_general)
    book = BOOK % {'tag': os.getpid()}
    vanilla, ours = run_both(ansible_bin, tmp_path, book,
                             inventory(sshd, doas_for))
    assert ours.rc == 0, ours.output
    results = {r['task']: r for r in ours.results}
    assert results['module as root']['result']['stdout'] == 'root'
    assert results['raw as root']['result']['stdout'].strip() == 'root'
    assert results['read it back']['result']['content'] == 'ZG9hcwo='
    assert results['refused']['status'] == 'failed'
    assert results['as the login']['result']['stdout'] == doas_for
    # Every module ran hosted: command, stat and copy, slurp, file, and the
    # login's command.  raw (no shell wrapper to take apart) and the
    # refused task went as given.
    assert ours.stats['module_runs'] == 6, ours.stats
    assert ours.stats['shell_as_given'] == 2, ours.stats
    assert ours.stats['contexts'] == 2, ours.stats  # the login, root's
    assert 'Traceback' not in ours.output
