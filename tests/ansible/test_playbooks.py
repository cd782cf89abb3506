"""Playbooks run vanilla and through the accelerator give the same results,
and the accelerator's counters show where the round trips went."""
from __future__ import annotations

import base64
import contextlib
import dataclasses
import glob
import json
import os
import re
import shutil
import socket
import subprocess
import tarfile
import tempfile
import threading
import time
from typing import Iterator

import pytest

from runner import (PASSWORD, inventory, prepare_playbook, run_playbook,
                    wait_for_stats)
from testbed.dropping import DroppingPort
from testbed.procs import interruptible

# The optional strategy: linear with each task on a thread of
# ansible-playbook (plasmid/ansible/threadworker.py).
STRATEGY = {'ANSIBLE_STRATEGY': 'plasmid.accel.linear'}
# The optional preload callback, beside the runner's recording one.
PRELOAD = {'ANSIBLE_CALLBACKS_ENABLED': 'record,plasmid.accel.preload'}

# Keys whose values differ from run to run, vanilla or not.
VOLATILE = {'start', 'end', 'delta', 'invocation', '_ansible_no_log',
            'ansible_facts', 'warnings', 'deprecations', 'checksum_src',
            'exception', 'module_stderr', 'module_stdout', 'src', 'md5sum',
            'mtime', 'atime', 'ctime', 'inode', 'dev', 'backup_file',
            'checksum', 'diff', 'stat', 'size', 'uid', 'gid', 'mode',
            'owner', 'group', 'state', 'path', 'results_file',
            'ansible_job_id', 'attempts', 'elapsed', 'stop',
            'extract_results'}  # unarchive's: names the remote temp file


def run_both(ansible_bin: str, tmp_path, book: str, inv: str):
    """The playbook vanilla, then accelerated with the connection plugin
    alone and with the optional strategy too; the results must match.
    Returns vanilla's run and the plugin-only one."""
    vanilla = run_playbook(ansible_bin, tmp_path, book, inv, False)
    ours = run_playbook(ansible_bin, tmp_path, book, inv, True)
    assert_same(vanilla, ours)
    threaded = run_playbook(ansible_bin, tmp_path, book, inv, True, STRATEGY)
    assert_same(vanilla, threaded)
    assert threaded.stats['client_processes'] == 1, threaded.stats
    return vanilla, ours


def comparable(result: dict) -> dict:
    kept = {k: v for k, v in result.items() if k not in VOLATILE and
            not k.startswith('_ansible')}
    if isinstance(kept.get('timedout'), dict):  # 2.18: where it stopped
        kept['timedout'] = {k: v for k, v in kept['timedout'].items()
                            if k != 'frame'}
    if str(kept.get('stdout', '')).startswith('Paused for '):
        # pause's: the seconds it measured (1.0, 1.01), in both forms
        del kept['stdout']
        kept.pop('stdout_lines', None)
    if isinstance(kept.get('results'), list):  # a loop's items
        kept['results'] = [comparable(item) if isinstance(item, dict)
                           else item for item in kept['results']]
    return kept


def assert_same(vanilla, accelerated, unsettled: tuple = ()) -> None:
    """The same tasks end the same way; the tasks named in *unsettled*
    (whose words vary between vanilla's own runs) in status only."""
    assert vanilla.rc == accelerated.rc, accelerated.output
    ours = accelerated.by_task()
    assert set(ours) == set(vanilla.by_task()), accelerated.output
    for key, theirs in vanilla.by_task().items():
        mine = ours[key]
        assert mine['status'] == theirs['status'], (key, mine, theirs)
        if key[1] not in unsettled:
            assert comparable(mine['result']) == \
                comparable(theirs['result']), key


BECOME = """
- hosts: targets
  gather_facts: false
  tasks:
%s
""" % '\n'.join(
    '    - name: as root %d\n      command: id -un\n      become: true' % i
    for i in range(8)) + '\n' + '\n'.join(
    '    - name: as login %d\n      command: id -un' % i for i in range(4))


def test_become_tasks_share_two_interpreters(ansible_bin, ansible_account,
                                            sshd, tmp_path):
    inv = inventory(sshd, ansible_account)
    vanilla = run_playbook(ansible_bin, tmp_path, BECOME, inv, False)
    ours = run_playbook(ansible_bin, tmp_path, BECOME, inv, True)
    assert ours.rc == 0, ours.output
    assert_same(vanilla, ours)
    stdout = {r['task']: r['result']['stdout'] for r in ours.results}
    assert stdout['as root 0'] == 'root'
    assert stdout['as login 0'] == ansible_account
    # One login interpreter and one sudo interpreter for the whole run;
    # the command module's payload went once to each of them, and the
    # broker asked a worker for it once: the login context got it from
    # the broker's store.
    assert ours.stats['contexts'] == 2, ours.stats
    assert ours.stats['module_runs'] == 12, ours.stats
    assert ours.stats['zips_sent'] == 2, ours.stats
    assert ours.stats['zips_received'] == 1, ours.stats
    assert ours.stats.get('shell_as_given', 0) == 0, ours.stats


def test_the_optional_strategy_runs_tasks_on_threads(
        ansible_bin, ansible_account, sshd, tmp_path):
    """plasmid.accel.linear runs like linear, but every task on a thread of
    ansible-playbook: one process talks to the broker, where linear's
    forked workers are one process per task.  With forks asked for, it
    loads the connection plugin in ansible-playbook before they fork."""
    inv = inventory(sshd, ansible_account)
    vanilla = run_playbook(ansible_bin, tmp_path, BECOME, inv, False)
    plain = run_playbook(ansible_bin, tmp_path, BECOME, inv, True)
    threaded = run_playbook(ansible_bin, tmp_path, BECOME, inv, True,
                            STRATEGY)
    forked = run_playbook(ansible_bin, tmp_path, BECOME, inv, True,
                          dict(STRATEGY, PLASMID_ANSIBLE_WORKERS='fork'))
    for run in (plain, threaded, forked):
        assert_same(vanilla, run)
        assert run.stats['module_runs'] == 12, run.stats
    assert plain.stats['client_processes'] == 12, plain.stats
    assert threaded.stats['client_processes'] == 1, threaded.stats
    assert forked.stats['client_processes'] == 12, forked.stats
    assert 'plasmid.ansible.connection' in forked.main_modules
    assert plain.main_modules is not None, plain.output  # it was recorded
    assert 'plasmid.ansible.connection' not in plain.main_modules


CONTROLLER_ONLY = """
- hosts: targets
  gather_facts: false
  tasks:
    - name: nothing remote
      debug: {msg: on the controller}
"""


def test_the_strategy_starts_the_broker_before_a_task_needs_it(
        ansible_bin, ansible_account, sshd, tmp_path):
    """The strategy starts the run's broker as it is made, so that the
    first task does not wait for it: here no task ever asks for it, and
    it ran (it wrote its counters) all the same, with no request served
    and no context started.  The plugin alone starts it on demand."""
    inv = inventory(sshd, ansible_account)
    threaded = run_playbook(ansible_bin, tmp_path, CONTROLLER_ONLY, inv,
                            True, STRATEGY)
    assert threaded.rc == 0, threaded.output
    assert threaded.stats.get('client_processes') == 0, threaded.stats
    assert threaded.stats.get('contexts') == 0, threaded.stats
    plain = run_playbook(ansible_bin, tmp_path, CONTROLLER_ONLY, inv, True,
                         stats_timeout=3.0)
    assert plain.rc == 0, plain.output
    # A broker would have written its counters within 0.2 s of the end.
    assert plain.stats == {}


def test_the_optional_strategy_refuses_an_unknown_worker_mode(
        ansible_bin, ansible_account, sshd, tmp_path):
    inv = inventory(sshd, ansible_account)
    run = run_playbook(ansible_bin, tmp_path, BECOME, inv, True,
                       dict(STRATEGY, PLASMID_ANSIBLE_WORKERS='threads'))
    assert run.rc != 0
    assert 'PLASMID_ANSIBLE_WORKERS must be "thread" or "fork"' in \
        run.output, run.output


# Task timeouts are SIGALRM alarms in the process running the task: the
# strategy forks a worker for these tasks, threads for the rest.
TIMEOUTS = """
- hosts: targets
  gather_facts: false
  tasks:
    - name: on a thread before
      command: echo before
    - name: within its timeout
      command: echo in time
      timeout: 30
    - name: past its timeout
      command: sleep 3
      timeout: 1
      ignore_errors: true
    - name: a templated timeout
      command: echo templated
      timeout: "{{ 20 + 10 }}"
    - name: on a thread after
      command: echo after
"""


def test_tasks_with_a_timeout_match_vanilla_under_the_strategy(
        ansible_bin, ansible_account, sshd, tmp_path):
    inv = inventory(sshd, ansible_account)
    vanilla = run_playbook(ansible_bin, tmp_path, TIMEOUTS, inv, False)
    threaded = run_playbook(ansible_bin, tmp_path, TIMEOUTS, inv, True,
                            STRATEGY)
    assert_same(vanilla, threaded)
    timed_out = threaded.by_task()[('t1', 'past its timeout')]
    assert timed_out['status'] == 'failed', timed_out
    assert 'signal only works' not in threaded.output, threaded.output
    # Two threaded tasks share ansible-playbook; each timed task came
    # from a worker process of its own.
    assert threaded.stats['client_processes'] == 4, threaded.stats


# A command that outlives its task's timeout goes on running on the host,
# as under vanilla; the host's next tasks must not wait for it.
ORPHANED = """
- hosts: targets
  gather_facts: false
  tasks:
    - name: a long command past its timeout
      command: sleep 41.5
      timeout: 1
      ignore_errors: true
    - name: next, without waiting for it
      command: echo after
    - name: and as root
      command: id -un
      become: true
"""


@pytest.mark.parametrize('mode', ['plugin', 'strategy'])
def test_a_timed_out_command_does_not_hold_up_the_next_task(
        ansible_bin, ansible_account, sshd, tmp_path, mode):
    inv = inventory(sshd, ansible_account)
    try:
        vanilla = run_playbook(ansible_bin, tmp_path, ORPHANED, inv, False)
        ours = run_playbook(ansible_bin, tmp_path, ORPHANED, inv, True,
                            STRATEGY if mode == 'strategy' else None)
        assert_same(vanilla, ours)
        # The worker hung up on its call, and the host's next tasks got a
        # new login context (and become context) instead of the busy one.
        assert ours.stats['calls_abandoned'] == 1, ours.stats
        assert ours.stats['contexts'] == 3, ours.stats
        assert ours.stats['module_runs'] == 3, ours.stats
    finally:
        subprocess.run(['pkill', '-u', ansible_account, '-f', 'sleep 41.5'])


# Several hosts at once on threads: each task's parent block is templated
# for its own host (a shared one would leak one host's values into
# another's), and add_host/group_by reach the inventory from a thread.
THREADED_HOSTS = """
- hosts: targets
  gather_facts: false
  tasks:
    - block:
        - name: block environment templated per host
          shell: echo "$TAG"
        - name: loop per host
          command: echo {{ tag }}-{{ item }}
          loop: [1, 2, 3]
      environment:
        TAG: "{{ tag }}"
    - name: included per host
      include_tasks: included.yml
    - name: a lookup that asks for its task
      debug: msg={{ item }}
      with_first_found:
        - included.yml
    - name: delegated to the controller
      command: echo {{ tag }}
      delegate_to: localhost
      connection: local
    - name: group by tag
      group_by: key=tag_{{ tag }}
    - name: add hosts
      add_host: name=extra-{{ item }} groups=added
      loop: "{{ ansible_play_hosts }}"
      changed_when: false
    - name: a pause
      pause: seconds=1
      run_once: true
- hosts: added
  gather_facts: false
  connection: local
  tasks:
    - name: added hosts seen
      debug: msg={{ inventory_hostname }}
- hosts: tag_t2
  gather_facts: false
  tasks:
    - name: the group of one tag
      command: echo {{ tag }}
"""


def test_threaded_tasks_on_several_hosts_match_vanilla(
        ansible_bin, ansible_account, sshd, tmp_path):
    hosts = ('t1', 't2', 't3', 't4')
    inv = inventory(sshd, ansible_account, hosts=hosts)
    inv = '\n'.join(line + (' tag=%s' % line.split()[0])
                     if line.startswith('t') else line
                     for line in inv.splitlines()) + '\n'
    (tmp_path / 'included.yml').write_text(
        '- name: from the included file\n'
        '  command: echo {{ tag }}\n'
        '- name: a fact per host\n'
        '  set_fact: seen={{ tag }}\n')
    vanilla, ours = run_both(ansible_bin, tmp_path, THREADED_HOSTS, inv)
    assert ours.rc == 0, ours.output
    included = {r['host']: r['result']['stdout'] for r in ours.results
                if r['task'] == 'from the included file'}
    assert included == {h: h for h in hosts}, included
    echoed = {r['host']: r['result']['stdout'] for r in ours.results
              if r['task'] == 'block environment templated per host'}
    assert echoed == {h: h for h in hosts}, echoed
    added = {r['host'] for r in ours.results
             if r['task'] == 'added hosts seen'}
    assert added == {'extra-' + h for h in hosts}, added
    grouped = [r['host'] for r in ours.results
               if r['task'] == 'the group of one tag']
    assert grouped == ['t2'], grouped
    # with_first_found reads the running task from ansible-core's ambient
    # TaskContext (2.19+): a thread must run in one, as a worker does.
    found = {r['host']: [i['msg'] for i in r['result']['results']]
             for r in ours.results
             if r['task'] == 'a lookup that asks for its task'}
    assert found == {h: [str(tmp_path / 'included.yml')] for h in hosts}, \
        found


UNPICKLABLE = """
- hosts: targets
  gather_facts: false
  tasks:
    - name: a result that will not pickle
      unpicklable_result:
      ignore_errors: true
      register: refused
    - name: what became of it
      debug: msg={{ refused.msg }}
"""

UNPICKLABLE_ACTION = """
from ansible.plugins.action import ActionBase


class NotPicklable:
    def __getstate__(self):
        raise Exception('this result does not pickle')


class ActionModule(ActionBase):
    def run(self, tmp=None, task_vars=None):
        return {'kept': NotPicklable()}
"""


def test_a_result_that_will_not_pickle_fails_as_in_vanilla(
        ansible_bin, ansible_account, sshd, tmp_path):
    """ansible-core's worker replaces a result its queue refuses with a
    failure that names the reason (2.19+: "Task result omitted due to
    queue send failure: ..."); a task thread must send that same one, not
    an error of its own, and never leave the strategy waiting."""
    plugins = tmp_path / 'action_plugins'
    plugins.mkdir()
    (plugins / 'unpicklable_result.py').write_text(UNPICKLABLE_ACTION)
    inv = inventory(sshd, ansible_account)
    vanilla = run_playbook(ansible_bin, tmp_path, UNPICKLABLE, inv, False)
    shown = [r['result']['msg'] for r in vanilla.results
             if r['task'] == 'what became of it']
    assert len(shown) == 1 and 'this result does not pickle' in shown[0], \
        vanilla.output
    threaded = run_playbook(ansible_bin, tmp_path, UNPICKLABLE, inv, True,
                            STRATEGY)
    assert_same(vanilla, threaded)


FAILURES = """
- hosts: targets
  gather_facts: false
  serial: 2
  max_fail_percentage: 50
  tasks:
    - name: fails on t2
      command: /bin/false
      when: inventory_hostname == 't2'
    - name: after the failure
      command: echo {{ inventory_hostname }}
    - block:
        - name: fails in a block on t1
          command: /bin/false
          when: inventory_hostname == 't1'
      rescue:
        - name: rescued
          command: echo rescued
      always:
        - name: always
          command: echo always
    - name: end t3 early
      meta: end_host
      when: inventory_hostname == 't3'
    - name: after end_host
      command: echo still
- hosts: targets
  gather_facts: false
  any_errors_fatal: true
  tasks:
    - name: fatal on t4
      command: /bin/false
      when: inventory_hostname == 't4'
    - name: never after a fatal error
      command: echo never
"""


def test_failed_hosts_and_batches_match_vanilla(ansible_bin, ansible_account,
                                                sshd, tmp_path):
    """How a failure ends a host, a batch or a play (serial,
    max_fail_percentage, rescue, end_host, any_errors_fatal) is
    ansible-core's own bookkeeping, which the threaded strategy must
    leave as linear's."""
    inv = inventory(sshd, ansible_account, hosts=('t1', 't2', 't3', 't4'))
    vanilla, ours = run_both(ansible_bin, tmp_path, FAILURES, inv)
    assert vanilla.rc == 2, vanilla.output
    ran = {(r['host'], r['task']): r['status'] for r in ours.results}
    assert ran[('t2', 'fails on t2')] == 'failed'
    assert ('t2', 'after the failure') not in ran
    assert ran[('t1', 'rescued')] == 'ok'
    assert ('t3', 'after end_host') not in ran
    assert ran[('t4', 'fatal on t4')] == 'failed'
    assert not [key for key in ran if key[1] == 'never after a fatal error']


OTHER_STRATEGIES = r"""
- hosts: targets
  strategy: free
  gather_facts: false
  tasks:
    - name: free, as login
      command: echo {{ inventory_hostname }}
    - name: free, as root
      command: id -un
      become: true
    - name: free, a file
      copy: content="{{ inventory_hostname }}\n" dest=/tmp/plasmid-free-{{ inventory_hostname }}
    - name: free, one host at a time
      command: echo {{ inventory_hostname }}
      throttle: 1
    - name: free, in a forked worker
      command: echo timed
      timeout: 30
- hosts: targets
  strategy: host_pinned
  gather_facts: false
  tasks:
    - name: pinned, read it back
      command: cat /tmp/plasmid-free-{{ inventory_hostname }}
    - name: pinned, clean up
      file: path=/tmp/plasmid-free-{{ inventory_hostname }} state=absent
"""


def threaded_strategies(book: str) -> str:
    """*book* with its plays' builtin strategies replaced by ours."""
    for name in ('free', 'host_pinned'):
        book = book.replace('strategy: %s\n' % name,
                            'strategy: plasmid.accel.%s\n' % name)
    return book


def test_free_and_host_pinned_strategies_match_vanilla(
        ansible_bin, ansible_account, sshd, tmp_path):
    """The connection plugin does not care which strategy forks its
    workers: ansible-core's free and host_pinned give vanilla's results.
    So do plasmid.accel.free and plasmid.accel.host_pinned, which order
    tasks as those do, each task on a thread of ansible-playbook."""
    hosts = ('t1', 't2', 't3')
    inv = inventory(sshd, ansible_account, hosts=hosts)
    book = threaded_strategies(OTHER_STRATEGIES)
    assert book.count('strategy: plasmid.accel.') == 2, book
    vanilla = run_playbook(ansible_bin, tmp_path, OTHER_STRATEGIES, inv,
                           False)
    assert vanilla.rc == 0, vanilla.output
    forked = run_playbook(ansible_bin, tmp_path, OTHER_STRATEGIES, inv, True)
    threaded = run_playbook(ansible_bin, tmp_path, book, inv, True)
    for ours in (forked, threaded):
        assert_same(vanilla, ours)
        back = {r['host']: r['result']['stdout'] for r in ours.results
                if r['task'] == 'pinned, read it back'}
        assert back == {h: h for h in hosts}, back
        # The three names reach one account on one sshd: tasks at once
        # get a login (and root) interpreter each, which later tasks
        # reuse; never more than one per host at once.
        assert 2 <= ours.stats['contexts'] <= 2 * len(hosts), ours.stats
        assert ours.stats.get('shell_as_given', 0) == 0, ours.stats
    # Threaded, every task ran in ansible-playbook but the timed one,
    # which had a fork per host.
    assert threaded.stats['client_processes'] == 1 + len(hosts), \
        threaded.stats


PARITY = r"""
- hosts: targets
  gather_facts: false
  vars:
    dest: /tmp/plasmid-parity-{{ run_tag }}
  tasks:
    - name: clean
      file: path={{ dest }} state=absent
      become: true
    - name: make dir
      file: path={{ dest }} state=directory mode=0755
      become: true
    - name: copy content
      copy: content="hello {{ run_tag }}\n" dest={{ dest }}/a.txt mode=0640
      become: true
    - name: copy again, unchanged
      copy: content="hello {{ run_tag }}\n" dest={{ dest }}/a.txt mode=0640
      become: true
    - name: template
      template: src=t.j2 dest={{ dest }}/t.txt
      become: true
    - name: lineinfile
      lineinfile: path={{ dest }}/a.txt line="second"
      become: true
    - name: slurp
      slurp: src={{ dest }}/a.txt
      become: true
    - name: fetch
      fetch: src=/etc/hostname dest={{ playbook_dir }}/fetched-{{ run_tag }} flat=true
    - name: environment
      shell: echo "$PLASMID_VAR"
      environment: {PLASMID_VAR: "x y"}
    - name: failing command
      command: /bin/false
      ignore_errors: true
    - name: check mode
      file: path={{ dest }}/never state=touch
      check_mode: true
      become: true
    - name: no_log
      command: echo secret
      no_log: true
    - name: raw
      raw: echo raw-out
    - name: module failure
      stat: {}
      ignore_errors: true
    - name: missing file
      slurp: src={{ dest }}/missing
      ignore_errors: true
      become: true
    - name: clean up
      file: path={{ dest }} state=absent
      become: true
"""


def test_common_modules_match_vanilla(ansible_bin, ansible_account, sshd,
                                      tmp_path):
    (tmp_path / 't.j2').write_text('{{ inventory_hostname }} {{ 6 * 7 }}\n')
    inv = inventory(sshd, ansible_account)
    vanilla = run_playbook(ansible_bin, tmp_path, PARITY, inv, False,
                           args=('-e', 'run_tag=vanilla'))
    assert vanilla.rc == 0, vanilla.output
    (tmp_path / "fetched-vanilla").unlink()  # both runs fetch it afresh
    ours = run_playbook(ansible_bin, tmp_path, PARITY, inv, True,
                        args=('-e', 'run_tag=vanilla'))
    assert ours.rc == 0, ours.output
    assert_same(vanilla, ours)
    assert (tmp_path / 'fetched-vanilla').read_text() == \
        open('/etc/hostname').read()
    assert ours.stats.get('shell_as_given', 0) == 0, ours.stats
    (tmp_path / "fetched-vanilla").unlink()
    threaded = run_playbook(ansible_bin, tmp_path, PARITY, inv, True,
                            STRATEGY, args=('-e', 'run_tag=vanilla'))
    assert_same(vanilla, threaded)
    assert threaded.stats['client_processes'] == 1, threaded.stats
    (tmp_path / "fetched-vanilla").unlink()
    preloaded = run_playbook(ansible_bin, tmp_path, PARITY, inv, True,
                             PRELOAD, args=('-e', 'run_tag=vanilla'))
    assert_same(vanilla, preloaded)
    # Several modules' zips went to the same contexts: after the first,
    # the module_utils files they share were not sent again.
    assert ours.stats['zips_sent'] > 2, ours.stats
    assert ours.stats['zip_files_reused'] > 10 * (ours.stats['zips_sent'] - 2)


MORE_MODULES = """
- hosts: targets
  gather_facts: false
  vars:
    remote: /tmp/plasmid-more-modules-{{ run_id }}
  tasks:
    - name: a directory
      file: {path: "{{ remote }}", state: directory}
    - name: a tree copied file by file
      copy: {src: "{{ local }}/tree/", dest: "{{ remote }}/tree/"}
    - name: an archive copied and unpacked
      unarchive: {src: "{{ local }}/a.tar.gz", dest: "{{ remote }}"}
    - name: a collection's module with its own module_utils
      community.general.read_csv: {path: "{{ remote }}/tree/data.csv"}
    - name: a template checked before it is put in place
      template:
        src: "{{ local }}/t.j2"
        dest: "{{ remote }}/t.conf"
        validate: grep -q hello %s
    - name: a collection's module importing six.moves, which six serves
      ansible.posix.authorized_key:
        user: "{{ ansible_user }}"
        key: "{{ lookup('file', local + '/key.pub') }}"
        path: "{{ remote }}/authorized_keys"
        manage_dir: false
    - name: a block in a file
      blockinfile: {path: "{{ remote }}/t.conf", block: in the block}
    - name: a replacement in a file
      replace: {path: "{{ remote }}/t.conf", regexp: hello, replace: bye}
    - name: fragments assembled on the target
      assemble:
        src: "{{ remote }}/tree/sub"
        dest: "{{ remote }}/assembled"
        remote_src: true
    - name: a command that changes directory
      command: ls -R
      args: {chdir: "{{ remote }}", creates: "{{ remote }}/absent"}
    - name: a temporary file
      tempfile: {state: file}
      register: temporary
    - name: the temporary file removed
      file: {path: "{{ temporary.path }}", state: absent}
    - name: a database lookup
      getent: {database: passwd, key: root}
    - name: clean up
      file: {path: "{{ remote }}", state: absent}
"""


def test_more_modules_match_vanilla(ansible_bin, ansible_account, sshd,
                                    community_general, ansible_posix,
                                    tmp_path, monkeypatch):
    """Modules the other parity playbooks leave out: a directory copy,
    unarchive (a copy, then a module), a collection's module importing
    the collection's module_utils, a validated template, a module whose
    import is served by the finder six installs (the context imports six
    before any module runs)."""
    assert community_general == ansible_posix  # one collections path
    monkeypatch.setenv('ANSIBLE_COLLECTIONS_PATH', community_general)
    (tmp_path / 'key.pub').write_text(
        'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGq5fM0e+b9cWqfV0Nq4o4Zt6OQq'
        '7x1N7yx1ZJwq0bX1 plasmid-test\n')
    (tmp_path / 'tree' / 'sub').mkdir(parents=True)
    (tmp_path / 'tree' / 'data.csv').write_text('name,uid\nroot,0\n')
    (tmp_path / 'tree' / 'sub' / 'f.txt').write_text('f\n')
    (tmp_path / 't.j2').write_text('hello {{ inventory_hostname }}\n')
    with tarfile.open(tmp_path / 'a.tar.gz', 'w:gz') as archive:
        archive.add(tmp_path / 't.j2', arcname='unpacked.txt')
    args = ('-e', 'local=%s run_id=%d' % (tmp_path, os.getpid()))
    inv = inventory(sshd, ansible_account)
    vanilla = run_playbook(ansible_bin, tmp_path, MORE_MODULES, inv, False,
                           args=args)
    assert vanilla.rc == 0, vanilla.output
    for extra in ({}, STRATEGY):
        ours = run_playbook(ansible_bin, tmp_path, MORE_MODULES, inv, True,
                            extra, args=args)
        assert_same(vanilla, ours)
        csv = ours.by_task()['t1', "a collection's module with its own "
                             'module_utils']['result']
        assert csv['list'] == [{'name': 'root', 'uid': '0'}]
        assert ours.stats['module_runs'] >= 13, ours.stats


THROUGH_A_JUMP_HOST = """
- hosts: targets
  gather_facts: false
  tasks:
    - {name: a module, command: id -un}
    - {name: a module as root, command: id -un, become: true}
    - {name: a raw command, raw: echo raw}
"""


def test_a_jump_host_carries_the_connection(ansible_bin, ansible_account,
                                            sshd, tmp_path):
    """ssh options pass through whole: a host reachable only through a
    ProxyCommand (ansible_host does not resolve) works as in vanilla."""
    server = sshd.server
    common = ' '.join(server.ssh_args())
    jump = 'ssh %s -i %s -p %d -W %s:%d %s@%s' % (
        common, server.client_key, server.port, server.host, server.port,
        ansible_account, server.host)
    inv = ("[targets]\nt1 ansible_host=nowhere.invalid ansible_port=%d "
           "ansible_user=%s ansible_ssh_private_key_file=%s "
           "ansible_ssh_common_args='%s -o HostKeyAlias=[%s]:%d "
           "-o \"ProxyCommand=%s\"' ansible_python_interpreter=/usr/bin/python3\n"
           % (server.port, ansible_account, server.client_key, common,
              server.host, server.port, jump))
    vanilla, ours = run_both(ansible_bin, tmp_path, THROUGH_A_JUMP_HOST, inv)
    assert vanilla.rc == 0, vanilla.output
    assert ours.stats['module_runs'] == 2, ours.stats


UNREACHABLE = """
- hosts: targets
  gather_facts: false
  tasks:
    - command: /bin/true
      ignore_unreachable: true
    - raw: /bin/true
"""


def _stranger_key(tmp_path) -> str:
    """A key no account authorizes."""
    path = tmp_path / 'stranger'
    if not path.exists():
        subprocess.run(['ssh-keygen', '-q', '-t', 'ed25519', '-N', '', '-f',
                        str(path)], check=True)
    return str(path)


def _another_host_key(server, inv, tmp_path, keep) -> str:
    """The host's entry in known_hosts names a key it does not have."""
    known = tmp_path / 'known_hosts_changed'
    subprocess.run(['ssh-keygen', '-q', '-t', 'ed25519', '-N', '', '-f',
                    str(tmp_path / 'another_host_key')], check=True)
    key = (tmp_path / 'another_host_key.pub').read_text().split()[:2]
    known.write_text('[%s]:%d %s\n' % (server.host, server.port, ' '.join(key)))
    return re.sub(r'UserKnownHostsFile=\S+', 'UserKnownHostsFile=%s' % known,
                  inv)


def _no_banner(server, inv, tmp_path, keep) -> str:
    """A port that takes connections and never says a word."""
    silent = socket.socket()
    keep.append(silent)
    silent.bind((server.host, 0))
    silent.listen(8)
    return inv.replace('ansible_port=%d' % server.port, 'ansible_port=%d '
                       'ansible_timeout=2' % silent.getsockname()[1])


UNREACHABLE_AS = {
    'refused': lambda server, inv, tmp_path, keep: inv.replace(
        'ansible_port=%d' % server.port, 'ansible_port=1'),
    'unresolvable': lambda server, inv, tmp_path, keep: inv.replace(
        'ansible_host=%s' % server.host, 'ansible_host=nowhere.invalid'),
    'key refused': lambda server, inv, tmp_path, keep: inv.replace(
        'ansible_ssh_private_key_file=%s' % server.client_key,
        'ansible_ssh_private_key_file=%s' % _stranger_key(tmp_path)),
    'host key changed': _another_host_key,
    'no banner': _no_banner,
}


@pytest.mark.parametrize('case', sorted(UNREACHABLE_AS))
def test_unreachable_reads_like_vanilla(ansible_bin, ansible_account, sshd,
                                        tmp_path, case):
    """ssh's own words, worded as vanilla's ssh plugin words them: a
    pipelined module's "Data could not be sent", a raw command's "Failed
    to connect to the host via ssh"."""
    server = sshd.server
    keep: list = []
    inv = UNREACHABLE_AS[case](server, inventory(sshd, ansible_account),
                               tmp_path, keep)
    assert inv != inventory(sshd, ansible_account)
    try:
        vanilla = run_playbook(ansible_bin, tmp_path, UNREACHABLE, inv,
                               False)
        assert vanilla.rc == 4, vanilla.output
        for extra in ({}, STRATEGY):
            ours = run_playbook(ansible_bin, tmp_path, UNREACHABLE, inv,
                                True, extra)
            assert ours.rc == 4, ours.output
            assert [(r['status'], r['result']['msg'])
                    for r in ours.results] == \
                [(r['status'], r['result']['msg'])
                 for r in vanilla.results]
            assert 'Traceback' not in ours.output
    finally:
        for listener in keep:
            listener.close()


def test_ssh_verbosity_shows_in_an_unreachable_message_as_in_vanilla(
        ansible_bin, ansible_account, sshd, tmp_path):
    """2.19+'s ``ansible_ssh_verbosity``: ssh's -v lines in the message of
    a login that fails, as in vanilla's; on 2.18 the variable means
    nothing, to either."""
    server = sshd.server
    inv = inventory(sshd, ansible_account, extra='ansible_ssh_verbosity=2')
    inv = inv.replace('ansible_port=%d' % server.port, 'ansible_port=1')
    vanilla = run_playbook(ansible_bin, tmp_path, UNREACHABLE, inv, False)
    ours = run_playbook(ansible_bin, tmp_path, UNREACHABLE, inv, True)
    assert vanilla.rc == ours.rc == 4, ours.output
    since_2_19 = os.path.basename(os.path.dirname(ansible_bin)) >= '2.19'
    for run in (vanilla, ours):
        [first, _] = [r['result']['msg'] for r in run.results]
        assert ('debug2: ' in first) == since_2_19, first
        assert 'Connection refused' in first, first


# An ssh that asks for the password in words of its own (a PAM module's,
# another language's), as the real one does: through SSH_ASKPASS when that
# is forced (vanilla's ssh_askpass), else on its terminal (sshpass, ours).
# Then it logs in with the key, as the real ssh.
CUSTOM_PROMPT_SSH = """#!/bin/sh
prompt="Kennwort ($$): "
if [ -n "$SSH_ASKPASS" ] && [ "$SSH_ASKPASS_REQUIRE" = force ]; then
    answer=$("$SSH_ASKPASS" "$prompt")
else
    printf '%s' "$prompt" > /dev/tty
    read -r answer < /dev/tty
fi
[ "$answer" = 'geheim 2' ] || { echo "Zugriff verweigert" >&2; exit 255; }
exec ssh "$@"
"""


def _custom_prompt_inventory(sshd, account: str, tmp_path,
                             extra: str) -> str:
    """A host reached through CUSTOM_PROMPT_SSH, with its password."""
    fake = tmp_path / 'ssh-kennwort'
    fake.write_text(CUSTOM_PROMPT_SSH)
    fake.chmod(0o755)
    return inventory(sshd, account, extra=(
        "ansible_password='geheim 2' ansible_ssh_executable=%s %s"
        % (fake, extra)))


def test_a_password_prompt_named_by_sshpass_prompt_is_answered(
        ansible_bin, ansible_account, sshd, tmp_path):
    """``ansible_sshpass_prompt``: the password is typed where ssh's output
    shows that text, as vanilla's sshpass or askpass helper types it."""
    inv = _custom_prompt_inventory(sshd, ansible_account, tmp_path,
                                   "ansible_sshpass_prompt='Kennwort ('")
    vanilla, ours = run_both(ansible_bin, tmp_path, LOGIN_PASSWORD, inv)
    assert vanilla.rc == 0, vanilla.output
    assert [r['result']['stdout'].split() for r in ours.results] == \
        [[ansible_account]] * 2, ours.results


def test_a_password_prompt_of_other_words_unnamed_fails_naming_it(
        ansible_bin, ansible_account, sshd, tmp_path):
    """The same ssh without ``ansible_sshpass_prompt``: nobody types the
    password, and within ``timeout`` the host is unreachable, the message
    showing the prompt that waited.  Vanilla's askpass (2.19+) refuses
    such a prompt at once: unreachable too.  (2.18's sshpass would wait
    on it for ever, so vanilla is not run there.)"""
    inv = _custom_prompt_inventory(sshd, ansible_account, tmp_path,
                                   'ansible_timeout=2')
    ours = run_playbook(ansible_bin, tmp_path, LOGIN_PASSWORD, inv, True)
    statuses = [r['status'] for r in ours.results]
    assert statuses == ['unreachable'] * 2, ours.output
    for result in ours.results:
        assert 'it waits at a prompt we cannot answer (nothing more within ' \
            '2s): Kennwort (' in result['result']['msg'], result
    if os.path.basename(os.path.dirname(ansible_bin)) >= '2.19':
        vanilla = run_playbook(ansible_bin, tmp_path, LOGIN_PASSWORD, inv,
                               False)
        assert [r['status'] for r in vanilla.results] == statuses


RETRIED = """
- hosts: targets
  gather_facts: false
  tasks:
    - name: pipelined
      command: id -un
"""


@pytest.mark.parametrize('retries', [0, 1])
def test_a_login_dropped_once_is_tried_again_as_in_vanilla(
        ansible_bin, ansible_account, sshd, tmp_path, retries):
    """ansible_ssh_retries: a login whose first connection is dropped
    (ssh's exit status 255) is tried again and the task runs; without
    retries the host is unreachable, with vanilla's words."""
    runs = {}
    for accelerated in (False, True):
        with DroppingPort(sshd.server, drop=lambda n: n == 1) as proxy:
            inv = inventory(sshd, ansible_account).replace(
                'ansible_port=%d' % sshd.server.port,
                'ansible_port=%d ansible_ssh_retries=%d'
                % (proxy.port, retries))
            runs[accelerated] = run_playbook(ansible_bin, tmp_path, RETRIED,
                                             inv, accelerated)
        assert proxy.accepted == 1 + retries
    vanilla, ours = runs[False], runs[True]
    assert_same(vanilla, ours)
    result = ours.by_task()[('t1', 'pipelined')]
    if retries:
        assert result['result']['stdout'] == ansible_account, result
    else:
        assert result['status'] == 'unreachable', result
        assert result['result']['msg'] == \
            vanilla.by_task()[('t1', 'pipelined')]['result']['msg']
    assert ours.stats['login_retries'] == retries


SILENCED = """
- hosts: targets
  gather_facts: false
  tasks:
    - name: before
      command: id -un
    - name: during
      command: sleep 8
      ignore_unreachable: true
    - name: after
      command: id -un
      ignore_unreachable: true
"""


def _silence_during_sleep(proxy, account: str,
                          done: threading.Event) -> None:
    """Once the task's command runs on the host, the link goes silent."""
    while not done.wait(0.05):
        if _pids('-u', account, '-f', '^sleep 8'):
            proxy.blackhole()
            return


def test_a_link_that_goes_silent_mid_task_reads_like_vanilla(
        newest_ansible_bin, ansible_account, sshd, tmp_path):
    """The host's link stops carrying anything, without closing, while a
    task runs there: the running task and the next are unreachable, as
    under vanilla, in ssh's words, and nothing waits for ever (ssh's
    keep-alives, set short here in the common args, notice it)."""
    from testbed.latency import LatencyProxy, ToxiproxyMissing
    try:
        proxy = LatencyProxy(sshd.server.port, latency_ms=0)
    except ToxiproxyMissing as exc:
        pytest.skip(str(exc))
    runs = []
    with proxy:
        inv = inventory(sshd, ansible_account).replace(
            'ansible_port=%d' % sshd.server.port,
            'ansible_port=%d' % proxy.port).replace(
            '-o LogLevel=ERROR', '-o ServerAliveInterval=1 '
            '-o ServerAliveCountMax=2')
        for accelerated, extra in ((False, {}), (True, {}),
                                   (True, STRATEGY)):
            done = threading.Event()
            watcher = threading.Thread(target=_silence_during_sleep,
                                       args=(proxy, ansible_account, done))
            watcher.start()
            try:
                runs.append(run_playbook(newest_ansible_bin, tmp_path,
                                         SILENCED, inv, accelerated, extra))
            finally:
                done.set()
                watcher.join()
                subprocess.run(['pkill', '-u', ansible_account, '-f',
                                '^sleep 8'])
                proxy.restore()
    vanilla = runs[0]
    said = {r['task']: (r['status'], r['result'].get('msg', ''))
            for r in vanilla.results}
    assert said['during'][0] == 'unreachable', said
    assert 'not responding' in said['during'][1], said
    assert said['after'][0] == 'unreachable', said
    for ours in runs[1:]:
        assert_same(vanilla, ours)
        assert 'Traceback' not in ours.output


@pytest.mark.parametrize('extra', [{}, STRATEGY], ids=['plugin', 'strategy'])
def test_contexts_end_with_the_run(ansible_bin, ansible_account, sshd,
                                   tmp_path, extra):
    inv = inventory(sshd, ansible_account)
    ours = run_playbook(ansible_bin, tmp_path, BECOME, inv, True, extra)
    assert ours.rc == 0, ours.output
    deadline = time.time() + 10
    while _pids('-u', ansible_account) and time.time() < deadline:
        time.sleep(0.1)
    left = _pids('-u', ansible_account)
    assert not left, 'processes left behind: %s' % left
    # The broker serving this run names its socket after the run's pid.
    brokers = _pids('-f', 'broker-%d.sock' % ours.pid)
    assert not brokers, brokers


COPIES = """
- hosts: targets
  gather_facts: false
  tasks:
    - name: small files
      copy: content="file {{ item }} {{ tag }}\\n" dest=/tmp/plasmid-copies-{{ tag }}-{{ item }}
      become: true
      loop: [1, 2, 3, 4, 5]
    - name: read one back
      command: cat /tmp/plasmid-copies-{{ tag }}-3
      register: back
    - name: clean up
      shell: rm -f /tmp/plasmid-copies-{{ tag }}-*
      become: true
"""


def test_small_copy_costs_one_round_trip_beyond_the_module(
        ansible_bin, ansible_account, sshd, tmp_path):
    inv = inventory(sshd, ansible_account)
    tag = 'rt%d' % time.time()
    ours = run_playbook(ansible_bin, tmp_path, COPIES, inv, True,
                        args=('-e', 'tag=' + tag))
    assert ours.rc == 0, ours.output
    back = [r for r in ours.results if r['task'] == 'read one back']
    assert back[0]['result']['stdout'] == 'file 3 %s' % tag
    # Each copy: the stat module and the copy module wait for an answer;
    # the temp dir, the file and the clean-up go ahead without waiting.
    # Plus one look-up of the home directory, the first temp dir (made
    # while the worker waits: its failure must read as vanilla's), and
    # the two other tasks.
    assert ours.stats['round_trips'] <= 2 * 5 + 2 + 2, ours.stats
    assert ours.stats['sent_ahead'] >= 3 * 5 - 1, ours.stats


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


LARGE_FILE = """
- hosts: targets
  gather_facts: false
  vars:
    dest: /tmp/plasmid-large-{{ run_tag }}
  tasks:
    - name: copy a large file
      copy: src=large.bin dest={{ dest }} mode=0600
    - name: copy it again, unchanged
      copy: src=large.bin dest={{ dest }} mode=0600
    - name: fetch it back
      fetch: src={{ dest }} dest={{ playbook_dir }}/back-{{ run_tag }} flat=true
    - name: clean up
      file: path={{ dest }} state=absent
"""


def test_a_large_file_streams_with_a_bounded_window(ansible_bin,
                                                    ansible_account, sshd,
                                                    tmp_path):
    """A file of several chunks arrives whole, read by the broker and sent
    ahead at most broker.WINDOW chunks at a time, and comes back whole,
    read ahead by the same window; results as vanilla's."""
    from plasmid.ansible import broker
    chunks = broker.WINDOW + 2
    data = os.urandom(broker.FILE_CHUNK * (chunks - 1) + 12345)
    (tmp_path / 'large.bin').write_bytes(data)
    inv = inventory(sshd, ansible_account)
    vanilla = run_playbook(ansible_bin, tmp_path, LARGE_FILE, inv, False,
                           args=('-e', 'run_tag=large'))
    assert vanilla.rc == 0, vanilla.output
    assert (tmp_path / 'back-large').read_bytes() == data
    (tmp_path / 'back-large').unlink()   # fetched afresh by the next run
    ours = run_playbook(ansible_bin, tmp_path, LARGE_FILE, inv, True,
                        args=('-e', 'run_tag=large'))
    assert_same(vanilla, ours)
    assert (tmp_path / 'back-large').read_bytes() == data
    # The unchanged second copy sends nothing.
    assert ours.stats['file_chunks_put'] == chunks, ours.stats
    assert ours.stats['most_in_flight'] == broker.WINDOW, ours.stats
    assert ours.stats['file_chunks_fetched'] == chunks, ours.stats
    assert ours.stats['most_reads_ahead'] == broker.WINDOW, ours.stats


FLAT_FETCH = """
- hosts: targets
  gather_facts: false
  vars:
    copied: /tmp/plasmid-flat-{{ run_tag }}-{{ inventory_hostname }}
  tasks:
    - name: a file on each host
      copy: src=large.bin dest={{ copied }}
    - name: all fetched to one path
      fetch: src={{ copied }} dest={{ playbook_dir }}/back-{{ item }} flat=true
      loop: [1, 2, 3, 4, 5, 6, 7, 8]
    - name: clean up
      file: path={{ copied }} state=absent
"""


def test_hosts_fetching_to_one_path_on_threads_each_see_a_whole_file(
        ansible_bin, ansible_account, sshd, tmp_path):
    """With the strategy, hosts fetch at once in one process: each file
    takes the path's place when whole, so no host checksums another's
    half-written one (that failed "checksum mismatch")."""
    data = os.urandom(100000)
    (tmp_path / 'large.bin').write_bytes(data)
    inv = inventory(sshd, ansible_account, hosts=('t1', 't2', 't3', 't4'))
    ours = run_playbook(ansible_bin, tmp_path, FLAT_FETCH, inv, True,
                        STRATEGY, args=('-e', 'run_tag=%d' % os.getpid()))
    assert ours.rc == 0, ours.output
    fetched = [r for r in ours.results if r['task'] == 'all fetched to one path']
    assert [r['status'] for r in fetched] == ['ok'] * 4, ours.output
    for item in range(1, 9):
        assert (tmp_path / ('back-%d' % item)).read_bytes() == data
    assert not [name for name in os.listdir(tmp_path) if 'plasmid-' in name]



# A file whose base64 is over the core's default message limit (64 MiB).
LARGE_RESULT_BYTES = 52 * 1000 * 1000
LARGE_RESULT = """
- hosts: targets
  gather_facts: false
  tasks:
    - name: read a large file
      slurp: src={{ big_file }}
      become: true
      register: big
    - name: all of it arrived
      assert:
        that: big.content | length == %d
""" % (4 * ((LARGE_RESULT_BYTES + 2) // 3))


def test_a_result_above_the_default_message_limit_arrives(
        ansible_bin, ansible_account, sshd, tmp_path):
    """A result larger than the broker's hold_above (64 MiB, the core's
    default message limit) stays in the context and comes over in pieces;
    it arrives whole (vanilla takes it too)."""
    from plasmid.ansible.broker import FILE_CHUNK
    from plasmid.core.framing import DEFAULT_MAX_MESSAGE
    data = os.urandom(LARGE_RESULT_BYTES)
    assert len(base64.b64encode(data)) > DEFAULT_MAX_MESSAGE
    big_file = tmp_path / 'big.bin'
    big_file.write_bytes(data)
    inv = inventory(sshd, ansible_account)
    # The file itself is the reference: vanilla would take three times
    # as long to read it.
    ours = run_playbook(ansible_bin, tmp_path, LARGE_RESULT, inv, True,
                        args=('-e', 'big_file=%s' % big_file))
    assert ours.rc == 0, ours.output
    read = ours.by_task()[('t1', 'read a large file')]['result']
    assert read['encoding'] == 'base64', read.keys()
    assert base64.b64decode(read['content']) == data
    assert ours.stats['result_chunks'] >= \
        len(read['content']) // FILE_CHUNK, ours.stats


LIFECYCLE = """
- hosts: targets
  gather_facts: true
  tasks:
    - name: facts name the interpreter
      debug: var=ansible_facts.python.executable
    - name: async fire
      command: sleep 1
      async: 20
      poll: 0
      register: job
    - name: async wait
      async_status: jid={{ job.ansible_job_id }}
      register: waited
      until: waited.finished
      retries: 40
      delay: 0.5
    - name: async polled
      command: echo polled
      async: 20
      poll: 1
    - name: sudo with a password
      command: id -un
      become: true
      become_user: %(user_b)s
      vars: {ansible_become_password: %(password)s}
    - name: sudo with a wrong password
      command: id -un
      become: true
      become_user: %(user_b)s
      vars: {ansible_become_password: wrong-password}
      ignore_errors: true
    - name: reset
      meta: reset_connection
    - name: after reset
      command: id -un
      become: true
    - name: wait for connection
      wait_for_connection:
"""


def test_password_become_async_and_reset_match_vanilla(
        ansible_bin, ansible_account, sshd, tmp_path):
    from testbed import USER_B
    book = LIFECYCLE % {'user_b': USER_B, 'password': PASSWORD}
    # Interpreter discovery included: no ansible_python_interpreter.
    inv = inventory(sshd, ansible_account).replace(
        'ansible_python_interpreter=/usr/bin/python3', '')
    vanilla, ours = run_both(ansible_bin, tmp_path, book, inv)
    assert ours.rc == 0, ours.output
    results = {r['task']: r for r in ours.results}
    assert results['sudo with a password']['result']['stdout'] == USER_B
    wrong = results['sudo with a wrong password']
    assert wrong['status'] == 'failed'
    assert 'Incorrect sudo password' in wrong['result']['msg']
    assert 'Traceback' not in ours.output


LOGIN_PASSWORD = """
- hosts: targets
  gather_facts: false
  tasks:
    - name: pipelined
      command: id -un
      ignore_unreachable: true
    - name: raw
      raw: id -un
      ignore_unreachable: true
"""


def _password_inventory(sshd, account: str) -> str:
    """Two hosts that can log in only by password: one given the right
    one, one a wrong one."""
    inv = inventory(sshd, account, hosts=('right', 'wrong'))
    inv = re.sub(r'ansible_ssh_private_key_file=\S+ ', '', inv)
    inv = inv.replace("ansible_ssh_common_args='",
                      "ansible_ssh_common_args='-o PubkeyAuthentication=no ")
    lines = inv.splitlines()
    lines[1] += ' ansible_password=%s' % PASSWORD
    lines[2] += ' ansible_password=wrong-%s' % PASSWORD
    return '\n'.join(lines) + '\n'


def _past_vanillas_broken_pipe(vanilla, ours, refused: tuple, words: str):
    """Vanilla's own race: when ssh refuses and exits before the module is
    written to it, vanilla says "[Errno 32] Broken pipe" (seen on 2.21);
    when the race goes the other way it gives ssh's words.  Ours must always
    give ssh's words: check that, and leave that result out of the runs so
    the rest can be compared whole."""
    if not vanilla.by_task()[refused]['result']['msg'].endswith(
            '[Errno 32] Broken pipe'):
        return vanilla, ours
    mine = ours.by_task()[refused]
    assert mine['status'] == 'unreachable', mine
    assert words in mine['result']['msg'], mine
    return (dataclasses.replace(run, results=[
        r for r in run.results if (r['host'], r['task']) != refused])
        for run in (vanilla, ours))


def _assert_password_refusals_match(vanilla, ours, account: str) -> None:
    vanilla, ours = _past_vanillas_broken_pipe(
        vanilla, ours, ('wrong', 'pipelined'), 'Permission denied')
    assert_same(vanilla, ours)
    results = ours.by_task()
    assert results[('right', 'pipelined')]['result']['stdout'] == account
    assert results[('right', 'raw')]['result']['stdout'].strip() == account
    assert results[('wrong', 'raw')]['status'] == 'unreachable'
    assert 'Traceback' not in ours.output


def test_a_login_password_and_its_refusal_match_vanilla(
        ansible_bin, ansible_account, sshd, tmp_path):
    """ansible_password logs in (no sshpass needed here), and a wrong one
    makes the host unreachable with vanilla's message, which depends on
    the release's password mechanism: ssh's own "Permission denied"
    (2.19+: one prompt, through ssh_askpass) or sshpass's
    "Invalid/incorrect password" (2.18)."""
    inv = _password_inventory(sshd, ansible_account)
    vanilla = run_playbook(ansible_bin, tmp_path, LOGIN_PASSWORD, inv, False)
    for extra in ({}, STRATEGY):
        ours = run_playbook(ansible_bin, tmp_path, LOGIN_PASSWORD, inv, True,
                            extra)
        _assert_password_refusals_match(vanilla, ours, ansible_account)
    said = ours.by_task()[('wrong', 'pipelined')]['result']['msg']
    if os.path.basename(os.path.dirname(ansible_bin)) >= '2.19':
        assert 'Permission denied (publickey,password).' in said, said
    else:
        assert 'Invalid/incorrect password: Permission denied' in said, said


def test_the_sshpass_password_mechanism_matches_vanilla(
        ansible_bin, ansible_account, sshd, tmp_path):
    """2.19+ may be told to use sshpass; a refusal then reads as sshpass's
    (unreachable, "Invalid/incorrect password"), as 2.18's always does.
    ansible-core 2.21 regressed here: its pipelined task fails as a
    module with no JSON (sshpass's rc 5) instead; ours stays unreachable,
    as vanilla meant it (its ssh plugin's handling of sshpass's rc 5)."""
    if os.path.basename(os.path.dirname(ansible_bin)) < '2.19':
        pytest.skip('2.18 has no password_mechanism: it always uses sshpass')
    inv = _password_inventory(sshd, ansible_account).replace(
        'ansible_password=', 'ansible_ssh_password_mechanism=sshpass '
        'ansible_password=')
    vanilla = run_playbook(ansible_bin, tmp_path, LOGIN_PASSWORD, inv, False)
    ours = run_playbook(ansible_bin, tmp_path, LOGIN_PASSWORD, inv, True)
    theirs = vanilla.by_task()[('wrong', 'pipelined')]
    if theirs['status'] == 'failed':  # 2.21's regression, exactly
        assert theirs['result']['rc'] == 5, theirs
        assert 'Permission denied' in theirs['result']['module_stderr']
        results = ours.by_task()
        assert results[('right', 'raw')]['status'] == 'ok'
        for task in ('pipelined', 'raw'):
            refused = results[('wrong', task)]
            assert refused['status'] == 'unreachable', refused
            assert 'Invalid/incorrect password: Permission denied' in \
                refused['result']['msg'], refused
    else:
        _assert_password_refusals_match(vanilla, ours, ansible_account)
        said = ours.by_task()[('wrong', 'raw')]['result']['msg']
        assert 'Invalid/incorrect password: Permission denied' in said, said


@contextlib.contextmanager
def _also_authorized(sshd, account: str, public_key: str) -> Iterator[None]:
    """*public_key* logs in as *account* too, until the block ends; then the
    test bed's own authorized_keys is put back."""
    authorized = os.path.join(sshd.server.dir, 'authorized_keys', account)
    try:
        with open(authorized, 'a') as out:
            out.write(public_key)
        yield
    finally:
        sshd.server.authorize(account)


AGENT_KEY = """
- hosts: targets
  gather_facts: false
  vars:
    ansible_ssh_private_key: "{{ lookup('file', key_path) }}"
    ansible_ssh_private_key_passphrase: %s
  tasks:
    - name: pipelined
      command: id -un
    - name: raw
      raw: id -un
"""


def test_a_private_key_given_as_text_logs_in_through_the_agent(
        ansible_bin, ansible_account, sshd, tmp_path):
    """2.19+: ``ansible_ssh_private_key`` (a key's text, with its
    passphrase) goes into the ssh agent that SSH_AGENT=auto starts, and ssh
    logs in with that key alone, not the key file the inventory names: a
    host given a key sshd does not know is unreachable, as in vanilla."""
    if os.path.basename(os.path.dirname(ansible_bin)) < '2.19':
        pytest.skip('2.18 has no private_key option')
    passphrase = 'agent-test'
    keys = {}
    for name in ('known', 'unknown'):
        keys[name] = tmp_path / ('key-%s' % name)
        subprocess.check_call(['ssh-keygen', '-q', '-t', 'ed25519', '-N',
                               passphrase, '-C', name, '-f',
                               str(keys[name])])
    # The test bed's ssh options keep ssh away from any agent.
    inv = inventory(sshd, ansible_account, hosts=('known', 'unknown'))
    inv = inv.replace('-o IdentityAgent=none ', '')
    lines = inv.splitlines()
    for i, name in ((1, 'known'), (2, 'unknown')):
        lines[i] += ' key_path=%s' % keys[name]
    inv = '\n'.join(lines) + '\n'
    # The agent's socket goes in the local temp dir: a short path, as a
    # unix socket's must be.
    local_temp = tempfile.mkdtemp(prefix='pa-')
    try:
        with _also_authorized(sshd, ansible_account,
                              keys['known'].with_suffix('.pub').read_text()):
            book = AGENT_KEY % passphrase
            env = {'ANSIBLE_SSH_AGENT': 'auto',
                   'ANSIBLE_LOCAL_TEMP': local_temp}
            vanilla = run_playbook(ansible_bin, tmp_path, book, inv, False,
                                   env)
            ours = run_playbook(ansible_bin, tmp_path, book, inv, True, env)
    finally:
        shutil.rmtree(local_temp, ignore_errors=True)
    results = ours.by_task()
    assert_same(*_past_vanillas_broken_pipe(
        vanilla, ours, ('unknown', 'pipelined'), 'Permission denied'))
    for task in ('pipelined', 'raw'):
        assert results[('known', task)]['result']['stdout'].strip() == \
            ansible_account
    assert results[('unknown', 'pipelined')]['status'] == 'unreachable'


SOFTHSM = '/usr/lib/softhsm/libsofthsm2.so'


def _token_with_a_key(tmp_path) -> tuple[dict, str]:
    """A SoftHSM token holding an RSA key, PIN 1234: the environment that
    finds it, and the key's public half as authorized_keys takes it."""
    if not os.path.exists(SOFTHSM) or not shutil.which('softhsm2-util'):
        pytest.skip('softhsm2 is not installed (.ci/setup installs it)')
    home = tmp_path / 'softhsm'
    (home / 'tokens').mkdir(parents=True)
    conf = home / 'softhsm2.conf'
    conf.write_text('directories.tokendir = %s\nobjectstore.backend = file\n'
                    'log.level = ERROR\n' % (home / 'tokens'))
    env = dict(os.environ, SOFTHSM2_CONF=str(conf))
    key = home / 'key.pem'
    for argv in (
            ['softhsm2-util', '--init-token', '--free', '--label', 'plasmid',
             '--pin', '1234', '--so-pin', '5678'],
            ['openssl', 'genpkey', '-algorithm', 'RSA', '-pkeyopt',
             'rsa_keygen_bits:2048', '-out', str(key)],
            ['softhsm2-util', '--import', str(key), '--token', 'plasmid',
             '--label', 'login', '--id', '01', '--pin', '1234']):
        subprocess.run(argv, env=env, check=True, capture_output=True)
    public = subprocess.run(['ssh-keygen', '-D', SOFTHSM], env=env,
                            check=True, capture_output=True, text=True)
    return {'SOFTHSM2_CONF': str(conf)}, public.stdout


PKCS11 = """
- hosts: targets
  gather_facts: false
  tasks:
    - name: pipelined
      command: id -un
    - name: raw
      raw: id -un
"""


def test_a_token_key_logs_in_with_its_pin_as_in_vanilla(
        ansible_bin, ansible_account, sshd, tmp_path):
    """``ansible_ssh_pkcs11_provider``: ssh takes its key from a PKCS#11
    token (SoftHSM here), and the password is the token's PIN, typed at
    ssh's "Enter PIN for" prompt; a wrong PIN leaves the host unreachable
    in ssh's words, no password gets vanilla's refusal.
    The key file the inventory names is one sshd does not know, so only
    the token can log in."""
    env, public = _token_with_a_key(tmp_path)
    inv = inventory(sshd, ansible_account,
                    hosts=('token', 'wrongpin', 'nopin'),
                    extra='ansible_ssh_pkcs11_provider=%s' % SOFTHSM)
    # IdentitiesOnly would leave out the token's key as well.
    inv = inv.replace(sshd.server.client_key, _stranger_key(tmp_path)) \
        .replace('-o IdentitiesOnly=yes ', '')
    lines = inv.splitlines()
    lines[1] += ' ansible_password=1234'
    lines[2] += ' ansible_password=4321'
    inv = '\n'.join(lines) + '\n'
    with _also_authorized(sshd, ansible_account, public):
        vanilla = run_playbook(ansible_bin, tmp_path, PKCS11, inv, False, env)
        ours = run_playbook(ansible_bin, tmp_path, PKCS11, inv, True, env)
    results = ours.by_task()
    assert_same(*_past_vanillas_broken_pipe(
        vanilla, ours, ('wrongpin', 'pipelined'), 'PIN incorrect'))
    for task in ('pipelined', 'raw'):
        assert results[('token', task)]['result']['stdout'].strip() == \
            ansible_account
    assert results[('wrongpin', 'pipelined')]['status'] == 'unreachable'
    refused = results[('nopin', 'pipelined')]
    assert refused['status'] == 'failed', refused
    assert 'to use pkcs11_provider you must specify a password/pin' in \
        refused['result']['msg']


SU = """
- hosts: targets
  gather_facts: false
  tasks:
    - name: su with a password
      command: id -un
      become: true
      become_method: su
      become_user: %(user_b)s
      vars: {ansible_become_password: %(password)s}
      ignore_errors: true
    - name: su with a wrong password
      command: id -un
      become: true
      become_method: su
      become_user: %(user_b)s
      vars: {ansible_become_password: wrong-password}
      ignore_errors: true
"""


def test_su_is_hosted_where_ansible_lets_it_pipeline(
        ansible_bin, ansible_account, sshd, tmp_path):
    """ansible-core 2.19+ asks the connection whether su may pipeline:
    we host su in an interpreter of its own, so it may, and the module runs
    as the su user.  2.18 decides itself and sends su's command without
    pipelining: then, as with vanilla, the module file needs an ACL for
    the other user (setfacl is not installed here), and both fail alike."""
    from testbed import PASSWORD_B, USER_B
    book = SU % {'user_b': USER_B, 'password': PASSWORD_B}
    inv = inventory(sshd, ansible_account)
    ours = run_playbook(ansible_bin, tmp_path, book, inv, True)
    results = {r['task']: r for r in ours.results}
    good, wrong = results['su with a password'], \
        results['su with a wrong password']
    if os.path.basename(os.path.dirname(ansible_bin)) >= '2.19':
        assert good['status'] == 'ok', good
        assert good['result']['stdout'] == USER_B
        assert wrong['status'] == 'failed'
        assert 'Incorrect su password' in wrong['result']['msg']
        assert ours.stats.get('shell_as_given', 0) == 0, ours.stats
    else:
        vanilla = run_playbook(ansible_bin, tmp_path, book, inv, False)
        assert_same(vanilla, ours)
    assert 'Traceback' not in ours.output


CRASH_MODULE = '''#!/usr/bin/python
import os
import sys

from ansible.module_utils.basic import AnsibleModule


def main():
    module = AnsibleModule(argument_spec=dict(how=dict(type='str')))
    if module.params['how'] == 'hook':
        # As 2.18's file module does: errors main() lets out become a
        # result in the hook the interpreter calls.
        def hook(exc_type, exc, tb):
            module.fail_json(msg='hooked: %s' % exc)
        sys.excepthook = hook
        raise ValueError('let out')
    if module.params['how'] == 'raise':
        raise RuntimeError('the module broke')
    if module.params['how'] == 'exit':
        raise SystemExit(3)
    if module.params['how'] == 'abort':  # a C extension's crash
        sys.stdout.write('half a line')
        sys.stdout.flush()
        os.abort()
    if module.params['how'] == 'thread':  # exit_json from a thread
        import threading
        worker = threading.Thread(target=module.exit_json,
                                  kwargs={'how': 'from a thread'})
        worker.start()
        worker.join()
        raise SystemExit(0)  # not reached: exit_json ends the process
    module.exit_json(changed=False, how=module.params['how'])


main()
'''

CRASHES = """
- hosts: targets
  gather_facts: false
  tasks:
    - name: a custom module
      crashy: how=fine
    - name: an exception
      crashy: how=raise
      ignore_errors: true
    - name: an exit without a result
      crashy: how=exit
      ignore_errors: true
    - name: an exception turned into a result by sys.excepthook
      crashy: how=hook
      ignore_errors: true
    - name: an abort
      crashy: how=abort
      ignore_errors: true
    - name: exit_json called from a thread
      crashy: how=thread
      ignore_errors: true
"""


def test_module_crashes_read_like_vanilla(ansible_bin, ansible_account,
                                          sshd, tmp_path):
    (tmp_path / 'library').mkdir()
    (tmp_path / 'library' / 'crashy.py').write_text(CRASH_MODULE)
    inv = inventory(sshd, ansible_account)
    vanilla = run_playbook(ansible_bin, tmp_path, CRASHES, inv, False)
    ours = run_playbook(ansible_bin, tmp_path, CRASHES, inv, True)
    assert_same(vanilla, ours)
    assert_same(vanilla, run_playbook(ansible_bin, tmp_path, CRASHES, inv,
                                      True, STRATEGY))
    results = {r['task']: r for r in ours.results}
    assert results['a custom module']['result']['how'] == 'fine'
    assert results['an exception']['status'] == 'failed'
    assert results['an exit without a result']['status'] == 'failed'
    # 2.19+ catch the exception before the interpreter would call the hook;
    # 2.18 leaves it to the hook.  assert_same holds us to vanilla either way.
    hooked = results['an exception turned into a result by sys.excepthook']
    assert hooked['status'] == 'failed'
    assert 'let out' in hooked['result']['msg'], hooked
    aborted = results['an abort']
    assert (aborted['status'], aborted['result']['rc']) == ('failed', 134)
    threaded = results['exit_json called from a thread']
    assert threaded['status'] == 'ok', threaded
    assert threaded['result']['how'] == 'from a thread'
    assert ours.stats['module_runs'] == 6, ours.stats


KILLED = """
- hosts: targets
  gather_facts: false
  tasks:
    - name: a module process killed, as the OOM killer would
      shell: kill -9 $PPID
      ignore_errors: true
    - name: the next task runs
      command: id -un
    - name: the login shell killed
      raw: kill -9 $$
    - name: never runs, the host being unreachable
      command: id -un
"""


def test_commands_killed_by_a_signal_read_like_vanilla(
        ansible_bin, ansible_account, sshd, tmp_path):
    """A module process killed by SIGKILL: the shell around vanilla's
    interpreter reports rc 137, and so do we.  A raw command that kills its
    login shell: ssh exits 255 and vanilla calls the host unreachable; our
    shell stands where the login shell does, and reads the same."""
    inv = inventory(sshd, ansible_account)
    vanilla, ours = run_both(ansible_bin, tmp_path, KILLED, inv)
    assert vanilla.rc == 4, vanilla.output
    results = {r['task']: r for r in ours.results}
    killed = results['a module process killed, as the OOM killer would']
    assert (killed['status'], killed['result']['rc']) == ('failed', 137)
    assert results['the next task runs']['status'] == 'ok'
    assert results['the login shell killed']['status'] == 'unreachable'
    assert 'never runs, the host being unreachable' not in results


AD_HOC = [('-m', 'ping'), ('-b', '-m', 'command', '-a', 'id -un'),
          ('-m', 'shell', '-a', 'echo out; exit 3')]


def run_ad_hoc(ansible_bin: str, tmp_path, inv: str, accelerated: bool,
               words: tuple, extra_env: dict | None = None,
               stats_timeout: float = 10.0) -> tuple[int, str, dict]:
    """``ansible t1 -o <words>``: exit status, the one-line output without
    its timestamps, and the broker's counters (accelerated)."""
    prepared = prepare_playbook(ansible_bin, tmp_path, '[]', inv,
                                accelerated, extra_env)
    proc = subprocess.run(
        [os.path.join(ansible_bin, 'ansible'), 't1', '-o', '-i',
         prepared.argv[2], *words], env=prepared.env, capture_output=True,
        text=True, timeout=300)
    line = re.sub(r'"(start|end|delta)": "[^"]*"', '', proc.stdout)
    stats = accelerated and wait_for_stats(prepared.stats,
                                           stats_timeout) or {}
    return proc.returncode, line, stats


def test_ad_hoc_commands_match_vanilla(ansible_bin, ansible_account, sshd,
                                       tmp_path):
    """The ``ansible`` command goes through the plugin too: its own broker
    per run, gone with it."""
    inv = inventory(sshd, ansible_account)
    lines = []
    for words in AD_HOC:
        rc, line, _ = run_ad_hoc(ansible_bin, tmp_path, inv, False, words)
        ours = run_ad_hoc(ansible_bin, tmp_path, inv, True, words)
        assert ours[:2] == (rc, line), words
        assert ours[2]['module_runs'] == 1, ours
        lines.append(line)
    assert '(stdout) root' in lines[1], lines
    # 2.19+ print a failed command's rc as 'rc=3', 2.18 inside its JSON.
    assert 'rc=3' in lines[2] or '"rc": 3' in lines[2], lines


UNPIPELINED = """
- hosts: targets
  gather_facts: false
  tasks:
    - name: as the login
      command: id -un
    - name: as root
      command: id -un
      become: true
    - name: a copy
      copy: {content: "x\\n", dest: "/tmp/plasmid-unpipelined-{{ run_id }}"}
    - name: its removal
      file: {path: "/tmp/plasmid-unpipelined-{{ run_id }}", state: absent}
"""


def test_pipelining_switched_off_runs_modules_from_disk(
        ansible_bin, ansible_account, sshd, tmp_path):
    """With pipelining set false (ansible-core's own default, which ours
    is not), modules travel as temp files and run from disk, as vanilla's
    do then: the same results, none of the in-memory runs."""
    off = {'ANSIBLE_PIPELINING': 'False'}
    args = ('-e', 'run_id=%d' % os.getpid())
    inv = inventory(sshd, ansible_account)
    vanilla = run_playbook(ansible_bin, tmp_path, UNPIPELINED, inv, False,
                           off, args=args)
    assert vanilla.rc == 0, vanilla.output
    ours = run_playbook(ansible_bin, tmp_path, UNPIPELINED, inv, True, off,
                        args=args)
    assert_same(vanilla, ours)
    assert ours.stats.get('module_runs', 0) == 0, ours.stats
    assert ours.stats['file_chunks_put'] >= 4, ours.stats


REQUIRETTY = """
- hosts: targets
  gather_facts: false
  tasks:
    - name: a module as root
      command: id -un
      become: true
    - name: a raw command as root
      raw: id -un
      become: true
"""


def test_sudo_requiring_a_tty_works_pipelined(ansible_bin, ansible_account,
                                              sshd, tmp_path, requiretty):
    """Under ``requiretty`` vanilla needs pipelining off (ssh -tt); the
    hosted sudo interpreter is started again on a terminal, so modules
    still run pipelined, from memory."""
    inv = inventory(sshd, ansible_account)
    vanilla = run_playbook(ansible_bin, tmp_path, REQUIRETTY, inv, False,
                           {'ANSIBLE_PIPELINING': 'False'})
    assert vanilla.rc == 0, vanilla.output
    for extra in ({}, STRATEGY):
        ours = run_playbook(ansible_bin, tmp_path, REQUIRETTY, inv, True,
                            extra)
        assert_same(vanilla, ours)
        assert ours.stats['module_runs'] == 1, ours.stats

DROPPED = """
- hosts: targets
  gather_facts: false
  tasks:
    - {name: before, command: id -un}
    - {name: before as root, command: id -un, become: true}
    - name: sshd's sessions of the login end (a network drop, a restart)
      shell: pkill -KILL -u {{ ansible_user }} -f '^sshd:' || true
      delegate_to: localhost
      connection: local
    - {name: after, command: id -un}
    - {name: after as root, command: id -un, become: true}
    - name: they will end again in a second
      shell: (sleep 1; pkill -KILL -u {{ ansible_user }} -f '^sshd:') >/dev/null 2>&1 &
      delegate_to: localhost
      connection: local
    - {name: cut off, command: sleep 5, ignore_unreachable: true}
    - {name: last, raw: echo last}
"""


def test_a_connection_dropped_between_tasks_is_made_again(
        ansible_bin, ansible_account, sshd, tmp_path):
    """Vanilla's next task simply logs in again (it holds no session
    between tasks: nothing to kill); so does ours, starting the login's
    contexts afresh.  A task cut off reads as vanilla's (unreachable, as
    data that could not be sent, in ssh's words)."""
    inv = inventory(sshd, ansible_account)
    vanilla = run_playbook(ansible_bin, tmp_path, DROPPED, inv, False)
    assert vanilla.rc == 0, vanilla.output
    cut = ('t1', 'cut off')
    for extra in ({}, STRATEGY):
        ours = run_playbook(ansible_bin, tmp_path, DROPPED, inv, True, extra)
        assert ours.rc == 0, ours.output
        mine, theirs = ours.by_task(), vanilla.by_task()
        assert {k: r['status'] for k, r in mine.items()} == \
            {k: r['status'] for k, r in theirs.items()}
        assert theirs[cut]['status'] == 'unreachable'
        # Word for word, ssh's last words included.
        assert mine[cut]['result']['msg'] == theirs[cut]['result']['msg']
        # 3 logins, 2 sudos; with the strategy, which takes the local
        # connection (plasmid/ansible/takeover.py), the controller's too.
        local = 1 if extra else 0
        assert ours.stats['contexts'] == 5 + local, ours.stats


UNREMOVABLE_TEMP_DIR = """
- hosts: targets
  gather_facts: false
  tasks:
    - name: a script as root leaves what the login cannot remove
      script: leave_a_root_dir.sh
      become: true
    - {name: the next task, command: id -un}
    - name: clean up as root
      shell: rm -rf ~{{ ansible_user }}/.ansible/tmp/ansible-tmp-*
      become: true
"""


def test_a_temp_dir_that_cannot_be_removed_fails_no_task(
        ansible_bin, ansible_account, sshd, tmp_path):
    """Vanilla warns when a task's temp dir cannot be removed; removing it
    is sent ahead here, and its failure must not fail the next task.  The
    warning comes with the next task's call, in vanilla's words."""
    (tmp_path / 'leave_a_root_dir.sh').write_text(
        '#!/bin/sh\nkept="$(dirname "$0")/kept"\n'
        'mkdir "$kept" && touch "$kept/file" && echo made\n')
    vanilla, ours = run_both(ansible_bin, tmp_path, UNREMOVABLE_TEMP_DIR,
                             inventory(sshd, ansible_account))
    assert vanilla.rc == 0, vanilla.output
    warning = re.compile(r'Error deleting remote temporary files'
                         r'\s+\(rc: 1, stderr: \}\)')
    assert len(warning.findall(vanilla.output)) == 1, vanilla.output
    assert len(warning.findall(ours.output)) == 1, ours.output
    assert ours.stats['cleanups_failed'] == 1, ours.stats


UNUSABLE_REMOTE_TMP = """
- hosts: targets
  gather_facts: false
  tasks:
    - name: a copy needs a temp dir
      copy: {content: "x\\n", dest: /tmp/plasmid-never-written}
      vars: {ansible_remote_tmp: /proc/plasmid-nowhere/tmp}
    - name: never reached
      raw: echo after
"""


def test_a_temp_dir_that_cannot_be_made_fails_the_host_as_in_vanilla(
        ansible_bin, ansible_account, sshd, tmp_path):
    """The first temp dir is made while the worker waits, so the action
    plugin sees the shell's failure and words it (host unreachable)."""
    inv = inventory(sshd, ansible_account)
    named = re.compile(r'ansible-tmp-[\d.-]+')

    def seen(run):
        return [(r['task'], r['status'], named.sub('T', r['result']['msg']))
                for r in run.results]
    vanilla = run_playbook(ansible_bin, tmp_path, UNUSABLE_REMOTE_TMP, inv,
                           False)
    assert seen(vanilla)[0][:2] == ('a copy needs a temp dir', 'unreachable')
    for extra in ({}, STRATEGY):
        ours = run_playbook(ansible_bin, tmp_path, UNUSABLE_REMOTE_TMP, inv,
                            True, extra)
        assert (ours.rc, seen(ours)) == (vanilla.rc, seen(vanilla))


TOO_OLD_INTERPRETER = """
- hosts: targets
  gather_facts: false
  tasks:
    - name: a module on a Python too old for it
      ping: {}
      vars: {ansible_python_interpreter: %s}
      ignore_errors: true
    - name: a raw command after it
      raw: echo raw
    - name: a module on the usual Python
      ping: {}
"""


def test_a_python_too_old_for_the_module_fails_it_as_in_vanilla(
        ansible_bin, ansible_account, sshd, tmp_path):
    """ansible-core's modules do not compile on Python 3.6: the module
    fails as vanilla's does (no JSON), and not the next task, which
    the zip's arrival was sent ahead of."""
    from testbed.pythons import require_python
    book = TOO_OLD_INTERPRETER % require_python('3.6')
    vanilla, ours = run_both(ansible_bin, tmp_path, book,
                             inventory(sshd, ansible_account))
    assert vanilla.rc == 0, vanilla.output
    failed = vanilla.by_task()['t1', 'a module on a Python too old for it']
    assert failed['status'] == 'failed', vanilla.output


MISSING_INTERPRETER = """
- hosts: targets
  gather_facts: false
  tasks:
    - name: a module under an interpreter the host lacks
      command: /bin/true
      vars:
        ansible_python_interpreter: /nonexistent/python3
      ignore_errors: true
    - name: the same as root
      command: /bin/true
      become: true
      vars:
        ansible_python_interpreter: /nonexistent/python3
      ignore_errors: true
    - name: the host is still there
      command: id -un
"""


def test_a_missing_interpreter_fails_the_task_as_in_vanilla(
        ansible_bin, ansible_account, sshd, tmp_path):
    """Vanilla runs the interpreter's command and reports what the shell
    said (a failed task, rc 127); an accelerator that cannot start its
    interpreter there must not call the host unreachable."""
    inv = inventory(sshd, ansible_account)
    vanilla, ours = run_both(ansible_bin, tmp_path, MISSING_INTERPRETER, inv)
    results = {r['task']: r for r in ours.results}
    for name in ('a module under an interpreter the host lacks',
                 'the same as root'):
        assert results[name]['status'] == 'failed', results[name]
        assert results[name]['result']['rc'] == 127, results[name]
        assert 'not found' in results[name]['result']['module_stderr']
    assert results['the host is still there']['status'] == 'ok'
    assert ours.stats['modules_from_script'] == 2, ours.stats
    assert 'Traceback' not in ours.output


NO_PYTHON = """
- hosts: targets
  gather_facts: false
  tasks:
    - name: raw, as to install a Python
      raw: echo hello; id -un
    - name: raw as root
      raw: id -un
      become: true
    - name: a script
      script: hello.sh
    - name: a module, with no Python to run it
      command: /bin/true
      ignore_errors: true
    - name: raw still works
      raw: echo after
"""


def test_a_host_without_python_works_as_in_vanilla(
        ansible_bin, ansible_account, sshd_without_python, tmp_path):
    """Where no Python starts, commands and files go through ansible-core's
    ssh plugin: raw and script work, a module fails, as under vanilla."""
    (tmp_path / 'hello.sh').write_text('#!/bin/sh\necho "script says hi"\n')
    inv = inventory(sshd_without_python, ansible_account)
    vanilla, ours = run_both(ansible_bin, tmp_path, NO_PYTHON, inv)
    results = {r['task']: r for r in ours.results}
    assert results['raw, as to install a Python']['result']['stdout'] \
        .split() == ['hello', ansible_account]
    assert results['raw as root']['result']['stdout'].split() == ['root']
    assert 'script says hi' in results['a script']['result']['stdout']
    module = results['a module, with no Python to run it']
    assert module['status'] == 'failed', module
    assert module['result']['rc'] == 127, module
    assert results['raw still works']['status'] == 'ok'
    # The module was asked for, found no interpreter, and went as given.
    assert ours.stats['modules_from_script'] == 1, ours.stats
    assert ours.stats.get('module_runs', 0) == 0, ours.stats
    assert 'Traceback' not in ours.output


SHADOWING_PLUGIN = os.path.join(
    os.path.dirname(__file__), os.pardir, os.pardir, 'ansible_collections',
    'plasmid', 'accel', 'plugins', 'connection', 'ssh.py')


def test_our_plugin_installed_as_ssh_falls_back_or_says_why_not(
        ansible_bin, ansible_account, sshd_without_python, tmp_path):
    """Copied into a connection plugin path as ``ssh.py`` (so that hosts
    whose inventory says ``ansible_connection=ssh`` are accelerated too),
    our plugin is ``ssh``.  On 2.18 ``ansible.builtin.ssh`` stays
    ansible-core's, and the fallback for a host without Python reaches it.
    2.19+ load the builtin's file under the module name ours took, so
    ``ansible.builtin.ssh`` is ours too: the fallback would call itself
    without end, and the task says why instead."""
    plugins = tmp_path / 'connection_plugins'
    plugins.mkdir()
    shutil.copyfile(SHADOWING_PLUGIN, plugins / 'ssh.py')
    (tmp_path / 'hello.sh').write_text('#!/bin/sh\necho "script says hi"\n')
    run = run_playbook(
        ansible_bin, tmp_path, NO_PYTHON,
        inventory(sshd_without_python, ansible_account), False,
        {'ANSIBLE_CONNECTION_PLUGINS': str(plugins)})
    assert 'Traceback' not in run.output
    results = {r['task']: r for r in run.results}
    raw = results['raw, as to install a Python']
    if os.path.basename(os.path.dirname(ansible_bin)) < '2.19':
        assert raw['result']['stdout'].split() == ['hello', ansible_account]
        assert 'script says hi' in results['a script']['result']['stdout']
        # It was ours that ran: its broker counted the module sent as given.
        stats = wait_for_stats(tmp_path / 'stats-vanilla.json')
        assert stats['modules_from_script'] == 1, stats
    else:
        assert raw['status'] == 'failed', raw
        assert 'name it plasmid.accel.ssh instead' in raw['result']['msg']
        assert list(results) == ['raw, as to install a Python']


DELETE_BECOME_USER = """
- hosts: targets
  gather_facts: false
  tasks:
    - name: make the account
      user: name=%(doomed)s state=present
      become: true
    - block:
        - name: as the account
          command: id -un
          become: true
          become_user: %(doomed)s
      always:
        # Vanilla races here: the last task's processes of the account may
        # still be exiting when userdel looks.  A few tries absorb that; an
        # interpreter of ours kept for the account would fail them all.
        - name: delete the account
          user: name=%(doomed)s state=absent remove=true
          become: true
          register: deleted
          until: deleted is succeeded
          retries: 5
          delay: 1
"""


def test_deleting_an_account_we_became_works_as_in_vanilla(
        ansible_bin, ansible_account, doomed_account, sshd, tmp_path):
    """Our interpreter running as the account would make userdel refuse
    ("currently used by process"): the broker shuts it down first."""
    book = DELETE_BECOME_USER % {'doomed': doomed_account}
    inv = inventory(sshd, ansible_account)
    vanilla, ours = run_both(ansible_bin, tmp_path, book, inv)
    assert vanilla.rc == 0, vanilla.output
    results = {r['task']: r for r in ours.results}
    assert results['as the account']['result']['stdout'] == doomed_account
    assert ours.stats['contexts_retired'] == 1, ours.stats


RAW_TERMINAL = """
- hosts: targets
  gather_facts: false
  tasks:
    - name: the terminal type
      raw: echo "[$TERM]"
    - name: the terminal type as root
      raw: echo "[$TERM]"
      become: true
    - name: a module has no terminal
      shell: echo "[${TERM-}]"
    - name: the signals ignored
      raw: grep -E '^Sig(Ign|Blk)' /proc/self/status
"""


def test_raw_commands_start_as_under_sshd(ansible_bin, ansible_account, sshd,
                                          tmp_path):
    """ssh -tt announces the client's TERM with the terminal it asks for,
    and sshd starts commands with SIGXFSZ ignored: a raw command on our
    terminal sees the same."""
    inv = inventory(sshd, ansible_account)
    term = {'TERM': 'vt220'}
    vanilla = run_playbook(ansible_bin, tmp_path, RAW_TERMINAL, inv, False,
                           term)
    assert vanilla.rc == 0, vanilla.output
    seen = vanilla.by_task()['t1', 'the terminal type']['result']['stdout']
    assert seen == '[vt220]\r\n'
    for extra in ({}, STRATEGY):
        ours = run_playbook(ansible_bin, tmp_path, RAW_TERMINAL, inv, True,
                            dict(term, **extra))
        assert_same(vanilla, ours)


RAW_BECOME = """
- hosts: targets
  gather_facts: false
  tasks:
    - name: raw sudo with a password
      raw: id -un
      become: true
      become_user: %(user_b)s
      vars: {ansible_become_password: %(password)s}
    - name: raw sudo with a wrong password
      raw: id -un
      become: true
      become_user: %(user_b)s
      vars: {ansible_become_password: wrong-password}
      ignore_errors: true
    - name: raw su whose prompt never shows
      raw: id -un
      become: true
      become_method: su
      become_user: %(user_b)s
      vars:
        ansible_become_password: %(password_b)s
        ansible_su_prompt_l10n: [NOT_A_VALID_PROMPT]
        ansible_ssh_timeout: 3
      ignore_unreachable: true
"""


def test_raw_become_runs_as_given_and_refusals_do_not_hang(
        ansible_bin, ansible_account, sshd, tmp_path):
    """raw has no shell wrapper to take apart: it runs as given, and the
    password is typed at sudo's prompt; a second prompt means refused."""
    from testbed import PASSWORD_B, USER_B
    book = RAW_BECOME % {'user_b': USER_B, 'password': PASSWORD,
                         'password_b': PASSWORD_B}
    inv = inventory(sshd, ansible_account)
    vanilla = run_playbook(ansible_bin, tmp_path, book, inv, False)
    ours = run_playbook(ansible_bin, tmp_path, book, inv, True)
    results = {r['task']: r for r in ours.results}
    theirs = {r['task']: r for r in vanilla.results}
    good = results['raw sudo with a password']
    assert good['status'] == 'ok', good
    # On a terminal, as vanilla's ssh -tt: CRLF line ends, stderr merged,
    # and the newline sudo prints after reading the password kept.
    assert good['result']['stdout'] == '\r\n%s\r\n' % USER_B
    assert comparable(good['result']) == \
        comparable(theirs['raw sudo with a password']['result'])
    wrong = results['raw sudo with a wrong password']
    assert wrong['status'] == 'failed'
    assert 'Incorrect sudo password' in wrong['result']['msg']
    assert theirs['raw sudo with a wrong password']['status'] == 'failed'
    # A prompt we cannot recognise: given up after the time limit, with
    # vanilla ssh's state (unreachable since 2.19, failed on 2.18).
    never = results['raw su whose prompt never shows']
    assert never['status'] == \
        theirs['raw su whose prompt never shows']['status'], never
    assert 'waiting for privilege escalation prompt' in \
        never['result']['msg'], never
    assert ours.stats.get('shell_as_given', 0) == 3, ours.stats


SLEEPER = """
- hosts: targets
  gather_facts: false
  tasks:
    - name: a long task
      command: %(sleep)s
      become: true
"""


@pytest.mark.parametrize('extra', [{}, STRATEGY], ids=['plugin', 'strategy'])
def test_an_interrupted_run_stops_and_leaves_nothing(
        ansible_bin, ansible_account, sshd, tmp_path, extra):
    """Ctrl-C in the middle of a task: ansible-playbook ends as vanilla's
    does on SIGINT (rc 99, "User interrupted execution"), and the broker
    and its interpreters go with it: no thread or process keeps the run
    alive.  The module's own process and its child (here `sleep`) run on,
    as under vanilla, whose sshd session without a tty does not signal
    them; once that ends, nothing of the run is left."""
    import signal
    prepared = prepare_playbook(ansible_bin, tmp_path,
                                SLEEPER % {'sleep': SLEEP},
                                inventory(sshd, ansible_account), True, extra)
    proc = subprocess.Popen(prepared.argv, env=prepared.env,
                            cwd=str(tmp_path), stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True,
                            preexec_fn=interruptible)
    try:
        deadline = time.time() + 60
        while not _pids('-u', 'root', '-x', '-f', SLEEP) and \
                time.time() < deadline:
            time.sleep(0.2)
        assert _pids('-u', 'root', '-x', '-f', SLEEP), 'the task never ran'
        proc.send_signal(signal.SIGINT)
        output, _ = proc.communicate(timeout=60)  # a hang fails here
        assert proc.returncode == 99, output
        assert 'User interrupted execution' in output, output
        assert 'Traceback' not in output, output
        # The module's own work ends; the module process then exits.
        subprocess.run(['pkill', '-u', 'root', '-x', '-f', SLEEP])
        deadline = time.time() + 15
        while time.time() < deadline and (
                _pids('-f', 'broker-%d.sock' % proc.pid) or
                _pids('-u', ansible_account) or
                _pids('-u', 'root', '-f', CONTEXT)):
            time.sleep(0.2)
        assert not _pids('-f', 'broker-%d.sock' % proc.pid), 'broker left'
        assert not _pids('-u', ansible_account), 'login interpreter left'
        assert not _pids('-u', 'root', '-f', CONTEXT), 'become interpreter left'
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
        subprocess.run(['pkill', '-u', 'root', '-x', '-f', SLEEP])


BROKER_KILLED = """
- hosts: targets
  gather_facts: false
  tasks:
    - {name: before, command: id -un}
    - name: meanwhile
      %s
      ignore_errors: true
    - {name: after, command: id -un}
    - name: after, with become
      command: id -un
      become: true
"""
# Unique to this session, as SLEEP below.
BROKER_SLEEP = 'sleep 4.%d' % (os.getpid() % 100000)
MEANWHILE = {'between': 'pause: {seconds: 3}',
             'during': 'command: %s' % BROKER_SLEEP}


@pytest.mark.parametrize('when', sorted(MEANWHILE))
@pytest.mark.parametrize('extra', [{}, STRATEGY], ids=['plugin', 'strategy'])
def test_a_broker_killed_mid_run_is_replaced_for_the_next_task(
        ansible_bin, ansible_account, sshd, tmp_path, extra, when):
    """The broker killed (out of memory, say) between two tasks, or during
    one, which then fails saying so and where the broker's log is: the
    next task starts a broker afresh, which logs in again; the
    interpreters of the dead one end with their ssh."""
    import signal
    prepared = prepare_playbook(
        ansible_bin, tmp_path, BROKER_KILLED % MEANWHILE[when],
        inventory(sshd, ansible_account), True, extra)

    def time_to_kill() -> bool:
        if when == 'during':
            return bool(_pids('-u', ansible_account, '-x', '-f',
                              BROKER_SLEEP))
        return prepared.record.exists() and \
            '"before"' in prepared.record.read_text()

    proc = subprocess.Popen(prepared.argv, env=prepared.env,
                            cwd=str(tmp_path), stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.time() + 60
        while time.time() < deadline and not time_to_kill():
            time.sleep(0.1)
        broker = _pids('-f', 'broker-%d.sock' % proc.pid)
        assert broker and '\n' not in broker, broker
        first_logins = _pids('-u', ansible_account)
        os.kill(int(broker), signal.SIGKILL)
        output, _ = proc.communicate(timeout=120)  # a hang fails here
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, output
    results = [json.loads(line) for line in
               prepared.record.read_text().splitlines()]
    meanwhile = 'ok' if when == 'between' else 'failed'
    assert [(r['task'], r['status']) for r in results] == [
        ('before', 'ok'), ('meanwhile', meanwhile), ('after', 'ok'),
        ('after, with become', 'ok')], output
    assert [r['result']['stdout'] for r in results
            if r['task'] != 'meanwhile'] == \
        [ansible_account, ansible_account, 'root']
    if when == 'during':
        message = results[1]['result']['msg']
        assert 'lost the plasmid broker' in message, message
        assert re.search(r'its log: /\S+/broker-%d\.log' % proc.pid,
                         message), message
    assert 'Traceback' not in output
    # The new broker's counters: it logged in afresh.
    stats = wait_for_stats(prepared.stats)
    assert stats['contexts'] == 2, stats
    # The dead broker's interpreter ended with its ssh.
    deadline = time.time() + 15
    while time.time() < deadline and \
            set(first_logins.split()) & set(_pids('-u', ansible_account).split()):
        time.sleep(0.2)
    assert not set(first_logins.split()) & \
        set(_pids('-u', ansible_account).split()), 'old interpreter left'


# Unique to this session: a sleep left by another (a killed one) must not
# look like this run's task.
SLEEP = 'sleep 300.%d' % (os.getpid() % 100000)
# How a plasmid interpreter's command line starts (its first stage).
CONTEXT = r'exec\(zlib\.decompress'


def _pids(*pgrep_args: str) -> str:
    found = subprocess.run(['pgrep', *pgrep_args], stdout=subprocess.PIPE,
                           text=True)
    assert found.returncode in (0, 1), pgrep_args  # 2: a bad pattern
    return found.stdout.strip()


def test_a_broker_holds_more_contexts_than_its_first_limit_on_open_files(
        sshd, ansible_account, newest_ansible_bin, tmp_path) -> None:
    """80 hosts under a soft limit of 256 open files: the broker holds
    three descriptors per context, so it must raise its limit as contexts
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


def test_a_python_slower_to_start_than_the_timeout_still_runs(
        ansible_bin, ansible_account, sshd, tmp_path) -> None:
    """`timeout` bounds ssh's connection (its ConnectTimeout), as under
    vanilla, not the interpreter's start that follows: a host whose
    Python takes longer than that to start (a loaded machine) is not
    unreachable."""
    where = tempfile.mkdtemp(prefix='plasmid-slow-python-')
    try:
        os.chmod(where, 0o755)
        slow = os.path.join(where, 'python3')
        with open(slow, 'w') as handle:
            handle.write('#!/bin/sh\nsleep 3\nexec /usr/bin/python3 "$@"\n')
        os.chmod(slow, 0o755)
        inv = inventory(sshd, ansible_account).replace(
            'ansible_python_interpreter=/usr/bin/python3',
            'ansible_python_interpreter=%s ansible_timeout=2' % slow)
        book = ('- hosts: targets\n  gather_facts: false\n  tasks:\n'
                '    - command: /bin/true\n')
        vanilla, ours = run_both(ansible_bin, tmp_path, book, inv)
        assert [r['status'] for r in ours.results] == ['ok']
    finally:
        shutil.rmtree(where)
