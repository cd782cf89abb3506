"""Playbooks run vanilla and through the accelerator give the same results
(tasks, become, the optional strategies, modules, ad-hoc commands, pipelining,
raw commands), and the accelerator's counters show where the round trips
went.  Logins: test_ssh_logins.py; files: test_file_transfer.py; several
contexts per login: test_lanes.py; failures: test_failures.py."""
from __future__ import annotations

import os
import pwd
import re
import subprocess
import tarfile
import time

import pytest

from parity import PRELOAD, STRATEGY, assert_same, comparable, run_both
from runner import PASSWORD, inventory, release_of, run_ad_hoc, run_playbook
from testbed.procs import pgrep


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


UNBUILDABLE_MODULE = """#!/usr/bin/python
from ansible.module_utils.no_such_support_code import missing
"""
NEVER_REACHES_THE_HOST = """
- hosts: targets
  gather_facts: false
  tasks:
    - name: a module that cannot be built
      unbuildable: {}
"""


def test_the_plugin_starts_the_broker_while_the_module_is_built(
        ansible_bin, ansible_account, sshd, tmp_path):
    """An action asks the connection whether it pipelines before it
    builds a task's module (2.19+ through is_pipelining_enabled, 2.18 by
    reading its has_pipelining): the plugin starts the broker then, and the
    first task finds it up.  Here the build fails, so the task never
    reaches the host, and the broker ran all the same (it wrote its
    counters), with no context."""
    (tmp_path / 'library').mkdir()
    (tmp_path / 'library' / 'unbuildable.py').write_text(UNBUILDABLE_MODULE)
    inv = inventory(sshd, ansible_account)
    vanilla = run_playbook(ansible_bin, tmp_path, NEVER_REACHES_THE_HOST,
                           inv, False)
    ours = run_playbook(ansible_bin, tmp_path, NEVER_REACHES_THE_HOST, inv,
                        True, stats_timeout=5.0)
    assert_same(vanilla, ours)
    assert ours.results[0]['status'] == 'failed', ours.output
    assert 'no_such_support_code' in ours.results[0]['result']['msg']
    assert ours.stats.get('contexts') == 0, ours.stats


@pytest.mark.edge_releases
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


@pytest.mark.edge_releases
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


@pytest.mark.edge_releases
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
        # The run's first command module timed out while its payload was
        # being sent: the error reads as vanilla's, no chain of causes
        # ("<<< caused by >>>" on 2.19+, where _ZipWanted was its cause).
        assert ('caused by' in ours.output) == \
            ('caused by' in vanilla.output), ours.output
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


@pytest.mark.edge_releases
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
      copy: content="{{ inventory_hostname }}\n" dest=/tmp/plasmid-free-{{ run_id }}-{{ inventory_hostname }}
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
      command: cat /tmp/plasmid-free-{{ run_id }}-{{ inventory_hostname }}
    - name: pinned, clean up
      file: path=/tmp/plasmid-free-{{ run_id }}-{{ inventory_hostname }} state=absent
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
    # Another run of the suite on this machine must not see our files.
    args = ('-e', 'run_id=%d' % os.getpid())
    vanilla = run_playbook(ansible_bin, tmp_path, OTHER_STRATEGIES, inv,
                           False, args=args)
    assert vanilla.rc == 0, vanilla.output
    forked = run_playbook(ansible_bin, tmp_path, OTHER_STRATEGIES, inv, True,
                          args=args)
    threaded = run_playbook(ansible_bin, tmp_path, book, inv, True, args=args)
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


@pytest.mark.edge_releases
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


@pytest.mark.parametrize('extra', [{}, STRATEGY], ids=['plugin', 'strategy'])
def test_contexts_end_with_the_run(ansible_bin, ansible_account, sshd,
                                   tmp_path, extra):
    inv = inventory(sshd, ansible_account)
    ours = run_playbook(ansible_bin, tmp_path, BECOME, inv, True, extra)
    assert ours.rc == 0, ours.output
    deadline = time.time() + 10
    while pgrep('-u', ansible_account) and time.time() < deadline:
        time.sleep(0.1)
    left = pgrep('-u', ansible_account)
    assert not left, 'processes left behind: %s' % left
    # The broker serving this run names its socket after the run's pid.
    brokers = pgrep('-f', 'broker-%d.sock' % ours.pid)
    assert not brokers, brokers


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


@pytest.mark.edge_releases
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
    if release_of(ansible_bin) >= (2, 19):
        assert good['status'] == 'ok', good
        assert good['result']['stdout'] == USER_B
        assert wrong['status'] == 'failed'
        assert 'Incorrect su password' in wrong['result']['msg']
        assert ours.stats.get('shell_as_given', 0) == 0, ours.stats
    else:
        vanilla = run_playbook(ansible_bin, tmp_path, book, inv, False)
        assert_same(vanilla, ours)
    assert 'Traceback' not in ours.output


AD_HOC = [('-m', 'ping'), ('-b', '-m', 'command', '-a', 'id -un'),
          ('-m', 'shell', '-a', 'echo out; exit 3')]


@pytest.mark.edge_releases
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


VERBOSE = """
- hosts: targets
  gather_facts: false
  tasks:
    - name: as root
      command: id -un
      become: true
    - name: kept quiet
      command: echo secret-words
      no_log: true
"""
SHOWN = re.compile(r'^(?:<[^>]+> )?(Escalation succeeded|rc=0, stdout and stderr '
                   r'censored due to no log|\(0, b.*"cmd": \[[^]]*\]|rc=0$)',
                   re.MULTILINE)
# Under ANSIBLE_DEBUG, 2.22+: what the ssh plugin shows of each command's
# output (before the action plugin has masked any secret in it).
SHOWN_IN_DEBUG = re.compile(r': (stdout and stderr censored due to no log|'
                            r'stdout and stderr: \(b.*"cmd": \[[^]]*\])')
RESULT = ('b\'{"changed": true, "stdout": "root", "stderr": "", "rc": 0, '
          '"cmd": ["id", "-un"]')


def _shown_results(output: str, shown=SHOWN) -> list:
    """What -vvv (or ANSIBLE_DEBUG) showed of escalations and results.
    The module's own leading line break is left out: vanilla's reading of
    sudo's password prompt takes it or not."""
    return [line.replace("b'\\n{", "b'{")
            for line in shown.findall(output)]


@pytest.mark.edge_releases
def test_verbose_runs_show_each_result_as_vanilla_does(
        ansible_bin, ansible_account, sshd, tmp_path):
    """At -vvv vanilla's ssh plugin shows "Escalation succeeded" and each
    command's (rc, stdout, stderr), censored under no_log; ours showed
    neither.  2.22's shows the rc alone, the output only under
    ANSIBLE_DEBUG (module output may hold secrets not yet masked)."""
    inv = inventory(sshd, ansible_account)
    env = {'ANSIBLE_PIPELINING': 'true'}  # vanilla's module on one command
    output_in_debug = release_of(ansible_bin) >= (2, 22)
    if output_in_debug:
        env['ANSIBLE_DEBUG'] = 'true'
    vanilla = run_playbook(ansible_bin, tmp_path, VERBOSE, inv, False, env,
                           args=('-vvv',))
    ours = run_playbook(ansible_bin, tmp_path, VERBOSE, inv, True, env,
                        args=('-vvv',))
    assert ours.rc == vanilla.rc == 0, ours.output
    shown = _shown_results(ours.output)
    assert shown == _shown_results(vanilla.output), vanilla.output
    if output_in_debug:
        assert shown == ['Escalation succeeded', 'rc=0', 'rc=0'], ours.output
        in_debug = _shown_results(ours.output, SHOWN_IN_DEBUG)
        assert in_debug == _shown_results(vanilla.output, SHOWN_IN_DEBUG)
        assert in_debug == ['stdout and stderr: (' + RESULT,
                            'stdout and stderr censored due to no log'], \
            ours.output
    else:
        assert shown == ['Escalation succeeded', '(0, ' + RESULT,
                         'rc=0, stdout and stderr censored due to no log'], \
            ours.output
    # ANSIBLE_DEBUG shows the action plugin's own view of the output, and
    # vanilla's the module's text it sends, too.
    assert ours.output.count('secret-words') <= \
        vanilla.output.count('secret-words'), ours.output
    if not output_in_debug:
        assert 'secret-words' not in ours.output


SECRET_OPTIONS = """
- hosts: targets
  gather_facts: false
  tasks:
    - name: a module that prints them
      command: echo {{ ansible_ssh_private_key_passphrase }}
      register: printed
    - name: the registered result
      debug: {var: printed.stdout}
"""
# The value of an option the ssh plugin marks secret (2.22+); without a
# private_key it is read and unused, under vanilla as under ours.
PASSPHRASE = 'plasmid-passphrase-7c1e'


@pytest.mark.edge_releases
def test_secret_options_are_masked_as_vanilla_masks_them(
        ansible_bin, ansible_account, sshd, tmp_path):
    """2.22 masks the values of connection options its ssh plugin marks
    secret (password, private_key, private_key_passphrase) wherever they
    show; ours marked none, so a module that printed one showed it."""
    inv = inventory(sshd, ansible_account, extra=(
        'ansible_ssh_private_key_passphrase=' + PASSPHRASE))
    vanilla, ours = [run_playbook(ansible_bin, tmp_path, SECRET_OPTIONS, inv,
                                  accelerated) for accelerated in (False, True)]
    assert ours.rc == vanilla.rc == 0, ours.output
    assert_same(vanilla, ours)
    assert ours.output.count(PASSPHRASE) == \
        vanilla.output.count(PASSPHRASE), ours.output
    if release_of(ansible_bin) >= (2, 22):
        assert PASSPHRASE not in ours.output + str(ours.results), ours.output


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


@pytest.mark.edge_releases
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


@pytest.mark.edge_releases
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


# The last step of a playbook that made the account %(doomed)s.  Vanilla
# races here: the last task's processes of the account may still be exiting
# when userdel looks.  A few tries absorb that; an interpreter of ours kept
# for the account would fail them all.
DELETE_THE_ACCOUNT = """\
        - name: delete the account
          user: name=%(doomed)s state=absent remove=true
          become: true
          register: deleted
          until: deleted is succeeded
          retries: 5
          delay: 1
"""


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
%(delete)s"""


@pytest.mark.edge_releases
def test_deleting_an_account_we_became_works_as_in_vanilla(
        ansible_bin, ansible_account, doomed_account, sshd, tmp_path):
    """Our interpreter running as the account would make userdel refuse
    ("currently used by process"): the broker shuts it down first."""
    book = DELETE_BECOME_USER % {
        'doomed': doomed_account,
        'delete': DELETE_THE_ACCOUNT % {'doomed': doomed_account}}
    inv = inventory(sshd, ansible_account)
    vanilla, ours = run_both(ansible_bin, tmp_path, book, inv)
    assert vanilla.rc == 0, vanilla.output
    results = {r['task']: r for r in ours.results}
    assert results['as the account']['result']['stdout'] == doomed_account
    assert ours.stats['contexts_retired'] == 1, ours.stats


ACCOUNT_CHANGES = """
- hosts: targets
  gather_facts: false
  tasks:
    - block:
        - name: make the account and a group
          user: name=%(doomed)s state=present
          become: true
        - {name: the group, group: name=plasmid-joined state=present,
           become: true}
        - name: the account's groups before
          command: id -Gn
          become: true
          become_user: %(doomed)s
        - name: the account joins
          user: name=%(doomed)s groups=plasmid-joined append=yes
          become: true
        - name: the login joins
          user: name=%(login)s groups=plasmid-joined append=yes
          become: true
        - name: the account's groups after
          command: id -Gn
          become: true
          become_user: %(doomed)s
        - {name: the login's groups after, command: id -Gn}
        - name: a new uid for the account it runs as
          user: name=%(doomed)s uid=%(uid)d
          become: true
        - name: its uid after
          command: id -u
          become: true
          become_user: %(doomed)s
        - name: a sudo rule added
          copy: {content: "# nothing granted\\n", mode: "0440",
                 dest: /etc/sudoers.d/plasmid-test-rule}
          become: true
        - {name: as root after, command: id -un, become: true}
      always:
        - {name: the rule goes, become: true,
           file: {path: /etc/sudoers.d/plasmid-test-rule, state: absent}}
        - name: the login leaves
          user: name=%(login)s groups="" append=no
          become: true
%(delete)s        - {name: the group goes, group: name=plasmid-joined state=absent,
           become: true}
"""


@pytest.mark.edge_releases
def test_account_and_sudo_rule_changes_are_seen_as_in_vanilla(
        ansible_bin, ansible_account, doomed_account, sshd, tmp_path):
    """Vanilla logs in and becomes afresh for every task; we keep one
    interpreter per account.  Before: a group joined mid-run was not in
    later tasks' ``id -Gn``; ``user: uid=`` of an account we ran as failed
    ("usermod: user ... is currently used by process"); sudo's rules were
    not read again after they changed."""
    taken = {entry.pw_uid for entry in pwd.getpwall()}
    uid = next(n for n in range(23456, 30000) if n not in taken)
    book = ACCOUNT_CHANGES % {
        'doomed': doomed_account, 'uid': uid, 'login': ansible_account,
        'delete': DELETE_THE_ACCOUNT % {'doomed': doomed_account}}
    inv = inventory(sshd, ansible_account)
    vanilla, ours = run_both(ansible_bin, tmp_path, book, inv)
    assert vanilla.rc == 0, vanilla.output
    out = {r['task']: r['result'].get('stdout') for r in ours.results}
    assert 'plasmid-joined' not in out["the account's groups before"]
    assert 'plasmid-joined' in out["the account's groups after"].split()
    assert 'plasmid-joined' in out["the login's groups after"].split()
    assert out['its uid after'] == str(uid)
    assert out['as root after'] == 'root'
    # The group made, the login joined and left, the group gone.
    assert ours.stats['logins_reset'] == 4, ours.stats


RULE_CHANGED_THROUGH_ANOTHER_LOGIN = """
- hosts: t1
  gather_facts: false
  tasks:
    - {name: path before, command: printenv PATH, become: true}
- hosts: t2
  gather_facts: false
  tasks:
    - name: a rule for the account
      copy:
        content: 'Defaults:%(login)s secure_path="/opt/plasmid-rule:/usr/bin:/bin"'
        dest: /etc/sudoers.d/plasmid-test-path
        mode: '0440'
      become: true
- hosts: t1
  gather_facts: false
  tasks:
    - {name: path after, command: printenv PATH, become: true}
- hosts: t2
  gather_facts: false
  tasks:
    - name: the rule goes
      file: {path: /etc/sudoers.d/plasmid-test-path, state: absent}
      become: true
"""


@pytest.mark.edge_releases
def test_a_sudo_rule_changed_through_another_login_is_seen(
        ansible_bin, ansible_account, sshd, tmp_path):
    """t1 and t2 are one machine under two inventory names.  A rule
    changed through t2 retired t2's become interpreters only, and t1's
    tasks as root went on under the old rules (a right taken away kept
    working) where vanilla's sudo reads them again."""
    book = RULE_CHANGED_THROUGH_ANOTHER_LOGIN % {'login': ansible_account}
    lines = inventory(sshd, ansible_account, hosts=('t1', 't2')).splitlines()
    # Another login to the same machine: t1's spec would be t2's.
    lines[2] += ' ansible_ssh_extra_args=-oCompression=no'
    inv = '\n'.join(lines) + '\n'
    try:
        vanilla, ours = run_both(ansible_bin, tmp_path, book, inv)
    finally:
        if os.path.exists('/etc/sudoers.d/plasmid-test-path'):
            os.remove('/etc/sudoers.d/plasmid-test-path')
    assert vanilla.rc == 0, vanilla.output
    out = {r['task']: r['result'].get('stdout') for r in ours.results}
    assert out['path after'] == '/opt/plasmid-rule:/usr/bin:/bin'
    assert out['path before'] != out['path after']


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
    - name: the signals blocked, and ignored but glibc's two
      raw: grep '^SigBlk' /proc/self/status; printf 'SigIgn %%x\\n'
        $(( 0x$(sed -n 's/^SigIgn:\\t//p' /proc/self/status) & ~%(glibc)s ))
    - name: glibc's internal signals ignored
      raw: printf '%%x\\n'
        $(( 0x$(sed -n 's/^SigIgn:\\t//p' /proc/self/status) & %(glibc)s ))
""" % {'glibc': '0x180000000'}


@pytest.mark.edge_releases
def test_raw_commands_start_as_under_sshd(ansible_bin, ansible_account, sshd,
                                          tmp_path):
    """ssh -tt announces the client's TERM with the terminal it asks for,
    and sshd starts commands with SIGXFSZ ignored: a raw command on our
    terminal sees the same.  One difference is known and documented:
    started by glibc's posix_spawn, the command finds glibc's two internal
    signals (32 and 33) ignored, as under glibc's system()."""
    inv = inventory(sshd, ansible_account)
    term = {'TERM': 'vt220'}
    internal = "glibc's internal signals ignored"
    vanilla = run_playbook(ansible_bin, tmp_path, RAW_TERMINAL, inv, False,
                           term)
    assert vanilla.rc == 0, vanilla.output
    seen = vanilla.by_task()
    assert seen['t1', 'the terminal type']['result']['stdout'] == \
        '[vt220]\r\n'
    assert seen['t1', internal]['result']['stdout'] == '0\r\n'
    for extra in ({}, STRATEGY):
        ours = run_playbook(ansible_bin, tmp_path, RAW_TERMINAL, inv, True,
                            dict(term, **extra))
        assert_same(vanilla, ours, unsettled=(internal,))
        assert ours.by_task()['t1', internal]['result']['stdout'] == \
            '180000000\r\n'


RAW_IN_BASH = """
- hosts: targets
  gather_facts: false
  tasks:
    - name: a bash test
      raw: '[[ 1 == 1 ]] && echo yes'
    - name: brace expansion
      raw: echo {a,b}c
    - name: the shell's name
      raw: echo $0
    - name: a module's shell is ansible-core's /bin/sh
      shell: echo $0
    - name: raw as root runs the login account's shell
      raw: echo $0
      become: true
"""


def test_raw_runs_in_the_login_shell(ansible_bin, ansible_account, sshd,
                                     tmp_path):
    """sshd hands a command to the account's login shell: an account of
    bash runs raw's bash syntax (our context used to run it by /bin/sh,
    dash here, where `[[` is not found)."""
    from testbed import accounts
    inv = inventory(sshd, ansible_account)
    with accounts.login_shell('/bin/bash', ansible_account):
        vanilla, ours = run_both(ansible_bin, tmp_path, RAW_IN_BASH, inv)
    assert vanilla.rc == 0, vanilla.output
    seen = ours.by_task()
    assert seen['t1', 'a bash test']['result']['stdout'] == 'yes\r\n'
    assert seen['t1', "the shell's name"]['result']['stdout'] == 'bash\r\n'
    assert seen['t1', "a module's shell is ansible-core's /bin/sh"][
        'result']['stdout'] == '/bin/sh'


SCRIPT_IN_BASH = """
- hosts: targets
  gather_facts: false
  tasks:
    - {name: a script, script: hello.sh}
    - name: its words, parsed by ansible's shell
      script: "hello.sh {x,y} 'a  b'"
    - {name: raw, raw: echo raw}
    - {name: a module, command: echo module}
"""


@pytest.mark.edge_releases
def test_a_script_runs_in_the_login_shell_that_prints_as_it_starts(
        ansible_bin, ansible_account, sshd, tmp_path):
    """bash reads ~/.bashrc for a command sshd gives it: what that prints
    shows in a script's output under vanilla (on its terminal), and did
    not in ours (/bin/sh ran the script)."""
    from testbed import accounts
    (tmp_path / 'hello.sh').write_text('#!/bin/sh\necho script-ran "$@"\n')
    inv = inventory(sshd, ansible_account)
    with accounts.login_shell('/bin/bash', ansible_account), \
            accounts.start_up_file('.bashrc', ansible_account,
                                   'echo RCNOISE\n'):
        vanilla, ours = run_both(ansible_bin, tmp_path, SCRIPT_IN_BASH, inv)
    seen = ours.by_task()
    assert seen['t1', 'a script']['result']['stdout'] == \
        'RCNOISE\r\nscript-ran\r\n'
    # By /bin/sh, as under vanilla: bash would have made the braces x y.
    assert seen['t1', 'its words, parsed by ansible\'s shell']['result'][
        'stdout'] == 'RCNOISE\r\nscript-ran {x,y} a  b\r\n'
    assert seen['t1', 'a module']['result']['stdout'] == 'module'


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
