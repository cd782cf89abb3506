"""A become method the accelerator does not host -- community.general's
doas -- runs its commands as given through the login account's shell, and
its tasks end as vanilla's do: modules, raw, files, and a refusal."""
from __future__ import annotations

import os
import shutil

import pytest

from runner import inventory
from test_playbooks import run_both

DOAS_CONF = '/etc/doas.conf'
MARK = '# plasmid test session %d' % os.getpid()

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
    nobody else; the rule goes when the session ends."""
    if shutil.which('doas') is None:
        pytest.skip('doas is not installed: run .ci/setup')
    rule = '%s\npermit nopass %s as root\n' % (MARK, ansible_account)
    with open(DOAS_CONF, 'a') as conf:
        conf.write(rule)
    os.chmod(DOAS_CONF, 0o600)
    yield ansible_account
    with open(DOAS_CONF) as conf:
        left = conf.read().replace(rule, '')
    if left.strip():
        with open(DOAS_CONF, 'w') as conf:
            conf.write(left)
    else:
        os.unlink(DOAS_CONF)


def test_doas_runs_as_given_and_matches_vanilla(
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
    # Only the login's own module ran hosted; doas went as given.
    assert ours.stats['module_runs'] == 1, ours.stats
    assert ours.stats['shell_as_given'] >= 5, ours.stats
    assert 'Traceback' not in ours.output
