"""Several contexts for one login (lanes): many hosts delegating to one, many
tasks at once behind sshd's default limits, extra lanes ending when idle, and
a broker holding more contexts than its first limit on open files."""
from __future__ import annotations

import glob
import time

import pytest

from parity import STRATEGY, assert_same
from runner import inventory, run_playbook


DELEGATED = """
- hosts: targets:!hub
  gather_facts: false
  tasks:
    - name: a file each, on the hub
      copy: content="from {{ inventory_hostname }}\\n" dest=/tmp/plasmid-hub-{{ tag }}-{{ inventory_hostname }}
      delegate_to: hub
    - name: read back on the hub
      command: cat /tmp/plasmid-hub-{{ tag }}-{{ inventory_hostname }}
      delegate_to: hub
    - name: removed on the hub
      file: path=/tmp/plasmid-hub-{{ tag }}-{{ inventory_hostname }} state=absent
      delegate_to: hub
    - name: all at once on the hub
      shell: >-
        touch /tmp/plasmid-hub-{{ tag }}-here-{{ inventory_hostname }};
        for i in $(seq 300); do
        [ $(ls /tmp/plasmid-hub-{{ tag }}-here-* | wc -l) -ge 6 ] && exit 0;
        sleep 0.1; done; exit 1
      delegate_to: hub
    - name: gone from the hub
      file: path=/tmp/plasmid-hub-{{ tag }}-here-{{ inventory_hostname }} state=absent
      delegate_to: hub
"""


@pytest.mark.edge_releases
@pytest.mark.parametrize('extra', [{}, STRATEGY], ids=['plugin', 'strategy'])
def test_many_hosts_delegating_to_one_at_once_match_vanilla(
        ansible_bin, ansible_account, sshd, tmp_path, extra):
    """Six hosts' tasks run on one delegate at once (forks 6), as under
    vanilla: each gets an interpreter of the delegate's login, since one
    runs a call at a time (a task that waits for all six to have started
    would wait out its 30 s otherwise); each file task's temp dir and
    clean-up go ahead, and every result is vanilla's."""
    hosts = ('d1', 'd2', 'd3', 'd4', 'd5', 'd6')
    inv = inventory(sshd, ansible_account, hosts=hosts + ('hub',))
    tag = 'dg%d' % time.time()
    args = ('-e', 'tag=' + tag, '--forks', '6')
    vanilla = run_playbook(ansible_bin, tmp_path, DELEGATED, inv, False,
                           args=args)
    ours = run_playbook(ansible_bin, tmp_path, DELEGATED, inv, True, extra,
                        args=args)
    assert_same(vanilla, ours)
    assert ours.rc == 0, ours.output
    for host in hosts:
        said = ours.by_task()[(host, 'read back on the hub')]['result']
        assert said['stdout'] == 'from %s' % host, said
    assert not glob.glob('/tmp/plasmid-hub-%s-*' % tag)
    for host in hosts:
        assert ours.by_task()[(host, 'all at once on the hub')][
            'status'] == 'ok'
    assert ours.stats['contexts'] >= len(hosts), ours.stats
    assert ours.stats['sent_ahead'] >= 2 * len(hosts), ours.stats


AT_ONCE_ON_THE_HUB = """
- hosts: targets:!hub
  gather_facts: false
  tasks:
    - name: at once on the hub
      command: sleep 2
      delegate_to: hub
"""


def test_many_tasks_at_once_on_one_host_behind_sshds_default_limits_all_run(
        newest_ansible_bin, ansible_account, sshd_with_default_limits,
        tmp_path):
    """20 hosts' tasks delegated at once to one host whose sshd keeps the
    default MaxStartups, which drops logins at random beyond ten not yet
    in: each task gets an interpreter all the same (vanilla, run by hand
    with 30, lost 2-6 as unreachable), the logins that sshd drops being
    tried again once another has come up."""
    hosts = tuple('h%d' % i for i in range(20))
    inv = inventory(sshd_with_default_limits, ansible_account,
                    hosts=hosts + ('hub',))
    ours = run_playbook(newest_ansible_bin, tmp_path, AT_ONCE_ON_THE_HUB,
                        inv, True, args=('--forks', '20'))
    assert ours.rc == 0, ours.output
    assert sorted(r['host'] for r in ours.results
                  if r['status'] == 'ok') == sorted(hosts)
    assert ours.stats['contexts'] >= 10, ours.stats


AT_ONCE_THEN_ONE_BY_ONE = """
- hosts: targets:!hub
  gather_facts: false
  tasks:
    - name: at once on the hub
      command: sleep 1
      delegate_to: hub
    - name: a while
      pause: seconds=3
      run_once: true
    - name: one by one on the hub
      command: /bin/true
      delegate_to: hub
      throttle: 1
"""


def test_extra_logins_idle_for_lane_idle_end_and_the_first_serves_on(
        newest_ansible_bin, ansible_account, sshd, tmp_path):
    """Four hosts' tasks at once on one delegate each get an interpreter;
    idle for PLASMID_ANSIBLE_LANE_IDLE seconds, all but the first end, and
    the tasks that come one by one after use that one."""
    hosts = ('i1', 'i2', 'i3', 'i4')
    inv = inventory(sshd, ansible_account, hosts=hosts + ('hub',))
    ours = run_playbook(newest_ansible_bin, tmp_path, AT_ONCE_THEN_ONE_BY_ONE,
                        inv, True, {'PLASMID_ANSIBLE_LANE_IDLE': '0.5'},
                        args=('--forks', '4'))
    assert ours.rc == 0, ours.output
    assert sorted(r['host'] for r in ours.results if r['status'] == 'ok'
                  and r['task'] == 'one by one on the hub') == list(hosts)
    assert ours.stats['contexts'] == 4, ours.stats
    assert ours.stats['idle_lanes_shut'] == 3, ours.stats


def test_a_broker_holds_more_contexts_than_its_first_limit_on_open_files(
        sshd, ansible_account, newest_ansible_bin, tmp_path) -> None:
    """80 hosts under a soft limit of 256 open files: the broker holds
    four descriptors per context, so it must raise its limit as contexts
    come (which the usual 1024 would stop at ~300 hosts)."""
    hosts = tuple('h%02d' % n for n in range(80))
    # Hosts whose ssh options differ are separate logins, with a context
    # each, though all reach the one test sshd.
    inv = ''.join(
        line.replace("ansible_ssh_common_args='",
                     "ansible_ssh_common_args='-o ServerAliveCountMax=%d "
                     % (n + 3)) + '\n'
        for n, line in enumerate(
            inventory(sshd, ansible_account, hosts=hosts).splitlines()))
    low = tmp_path / 'low-limit'
    low.mkdir()
    (low / 'ansible-playbook').write_text(
        '#!/bin/sh\nulimit -Sn 256\nexec %s/ansible-playbook "$@"\n'
        % newest_ansible_bin)
    (low / 'ansible-playbook').chmod(0o755)
    book = ('- hosts: targets\n  gather_facts: false\n  tasks:\n'
            '    - command: /bin/true\n')
    # 20 at once, so that ansible-playbook's own descriptors stay few; a
    # start may take long on a loaded machine with every "host" on it.
    ours = run_playbook(str(low), tmp_path, book, inv, True,
                        extra_env=dict(STRATEGY, ANSIBLE_FORKS='20',
                                       ANSIBLE_TIMEOUT='60'))
    assert ours.rc == 0, ours.output[-3000:]
    assert sorted(r['host'] for r in ours.results
                  if r['status'] == 'ok' and r['result']['rc'] == 0) == \
        list(hosts)
    assert ours.stats['contexts'] == 80
