"""A become method the accelerator does not host -- community.general's
doas -- runs its commands as given through the login account's shell, and
its tasks end as vanilla's do: modules, raw, files, and a refusal."""
from __future__ import annotations

import os
import shutil

import pytest

from runner import inventory
from testbed.procs import alive
from test_playbooks import run_both

DOAS_CONF = '/etc/doas.conf'
# Each session's rule follows a line naming it by pid.
MARK_PREFIX = '# plasmid test session '

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
    nobody else; the rule goes when the session ends, and so do rules left
    by sessions that were killed."""
    if shutil.which('doas') is None:
        pytest.skip('doas is not installed: run .ci/setup')
    others, rules = _read_conf()
    rules[os.getpid()] = 'permit nopass %s as root' % ansible_account
    _write_conf(others, rules)
    yield ansible_account
    others, rules = _read_conf()
    rules.pop(os.getpid(), None)
    _write_conf(others, rules)


def _read_conf() -> tuple[list, dict]:
    """doas.conf's lines not written by a test session, and the rules of
    the sessions still alive by their pid (a killed session's rule goes)."""
    try:
        with open(DOAS_CONF) as conf:
            lines = conf.read().splitlines()
    except FileNotFoundError:
        return [], {}
    others, rules, pid = [], {}, None
    for line in lines:
        if line.startswith(MARK_PREFIX):
            pid = int(line[len(MARK_PREFIX):])
        elif pid is not None:
            if alive(pid):
                rules[pid] = line
            pid = None
        else:
            others.append(line)
    return others, rules


def _write_conf(others: list, rules: dict) -> None:
    lines = list(others)
    for pid, rule in sorted(rules.items()):
        lines += ['%s%d' % (MARK_PREFIX, pid), rule]
    if not any(line.strip() for line in lines):
        if os.path.exists(DOAS_CONF):
            os.unlink(DOAS_CONF)
        return
    with open(DOAS_CONF, 'w') as conf:
        conf.write('\n'.join(lines) + '\n')
    os.chmod(DOAS_CONF, 0o600)


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
