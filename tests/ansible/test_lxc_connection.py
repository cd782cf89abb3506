"""plasmid.accel.lxc against community.general.lxc, in an LXC container of
the test bed (its root file system read-only, /tmp, /var/tmp and root's
home in memory): the same playbooks give the same results, while modules run from
RAM in one interpreter kept for the run.  The comparisons run on the newest
ansible-core whose Python the python lxc bindings work under (2.21: they
abort under 3.13, which 2.22 needs), our plugin alone on the newest; the
path beyond the login is the ssh plugin's, tested on every release."""
from __future__ import annotations

import parity
from runner import run_playbook
from containers import (NO_PYTHON, assert_no_python_as_vanilla,
                        container_inventory)
from parity import assert_same

VANILLA = 'community.general.lxc'
OURS = 'plasmid.accel.lxc'


def run_lxc(ansible_bin: str, tmp_path, book: str, container: str,
            collections: str, connection: str, extra_env=None,
            extra: str = ''):
    """*extra_env*: the optional strategy's or the callback's, which
    make ours take the connection named."""
    accelerated = connection == OURS or bool(extra_env)
    env = {'ANSIBLE_COLLECTIONS_PATH': collections}
    if not accelerated:
        # community.general.lxc's pipelining loses the module's text now
        # and then (it hands the child a non-blocking stdin): "Broken
        # pipe", or a truncated script.  Vanilla runs unpipelined here.
        env['ANSIBLE_PIPELINING'] = 'False'
    env.update(extra_env or {})
    return run_playbook(ansible_bin, tmp_path, book,
                        container_inventory(container, connection, extra),
                        accelerated, env)


PARITY = """
- hosts: targets
  gather_facts: false
  vars:
    out: /tmp/plasmid-lxc-parity
  tasks:
    - name: where commands run
      command: pwd
    - name: stat
      stat: {path: /etc/hostname}
    - name: raw, in a shell
      raw: echo raw $0 | tr a-z A-Z
    - name: become with su
      command: id -un
      become: true
      become_method: su
      become_user: nobody
      become_flags: -s /bin/sh
""" + parity.TASKS


def test_lxc_tasks_match_community_general(
        lxc_ansible_bin, ansible_lxc_container,
        community_general, tmp_path):
    parity.prepare_files(tmp_path)

    def run(connection: str, extra_env=None):
        done = run_lxc(lxc_ansible_bin, tmp_path, PARITY,
                       ansible_lxc_container, community_general, connection,
                       extra_env)
        assert done.rc == 0, done.output
        (tmp_path / 'fetched.txt').unlink()
        return done
    vanilla = run(VANILLA)
    ours = run(OURS)
    assert_same(vanilla, ours)
    results = {r['task']: r['result'] for r in ours.results}
    parity.check_shared_results(results)
    assert results['raw, in a shell']['stdout'] == 'RAW /BIN/SH\n'
    assert results['become with su']['stdout'] == 'nobody'
    assert 'Traceback' not in ours.output
    assert ours.stats['module_runs'] >= 15, ours.stats
    assert ours.stats['contexts'] <= 3, ours.stats  # root, nobody
    # The optional strategy and the callback, with vanilla's name taken.
    for env in parity.optional_modes(lxc_ansible_bin, lxc_ansible_bin):
        again = run(VANILLA, env)
        assert_same(vanilla, again)
        assert again.stats['module_runs'] >= 15, again.stats


def test_twenty_tasks_take_one_interpreter_in_the_container(
        newest_ansible_bin, ansible_lxc_container, community_general,
        tmp_path):
    from testbed import containers
    ours = run_lxc(newest_ansible_bin, tmp_path, parity.TWENTY,
                   ansible_lxc_container, community_general, OURS)
    assert ours.rc == 0, ours.output
    assert ours.stats['module_runs'] == 20, ours.stats
    assert ours.stats['contexts'] == 1, ours.stats
    # The interpreter ended with the run (async_wrapper processes an
    # earlier test's async task left, on their way out, run files of a
    # temp dir).
    left = [line for line in containers.interpreters_in(
        ansible_lxc_container, lxc=True) if 'ansible-tmp-' not in line]
    assert left == []


ONE_TASK = """
- hosts: targets
  gather_facts: false
  tasks:
    - name: pipelined
      command: id -un
      ignore_errors: true
"""


def test_a_container_not_running_fails_the_task_as_in_vanilla(
        lxc_ansible_bin, ansible_lxc_container,
        community_general, tmp_path):
    """community.general's plugin fails the task (the host is not
    unreachable); so does ours, in lxc-attach's words."""
    absent = ansible_lxc_container + '-absent'
    runs = [run_lxc(lxc_ansible_bin, tmp_path, ONE_TASK, absent,
                    community_general, connection)
            for connection in (VANILLA, OURS)]
    vanilla, ours = [run.by_task()[('box', 'pipelined')] for run in runs]
    assert vanilla['status'] == ours['status'] == 'failed', (vanilla, ours)
    assert 'is not running' in vanilla['result']['msg'], vanilla
    assert 'lxc-attach into %s failed' % absent in ours['result']['msg'], ours
    assert 'Traceback' not in runs[1].output


EXECUTABLE = """
- hosts: targets
  gather_facts: false
  tasks:
    - name: raw, in the executable's shell
      raw: echo "bash ${BASH_VERSION:+yes}"
    - name: shell, likewise
      shell: echo "bash ${BASH_VERSION:+yes}"
"""


def test_the_executable_option_runs_commands_as_vanilla(
        lxc_ansible_bin, ansible_lxc_container,
        community_general, tmp_path):
    """ansible_lxc_executable: the shell each command is given to."""
    runs = []
    for connection in (VANILLA, OURS):
        done = run_lxc(lxc_ansible_bin, tmp_path, EXECUTABLE,
                       ansible_lxc_container, community_general, connection,
                       extra='ansible_lxc_executable=/bin/bash')
        assert done.rc == 0, done.output
        runs.append(done)
    assert_same(*runs)
    results = {r['task']: r['result'] for r in runs[1].results}
    assert results['raw, in the executable\'s shell']['stdout'] == \
        'bash yes\n'


def test_a_container_without_python_is_handed_to_community_general(
        lxc_ansible_bin, lxc_container_without_python,
        community_general, tmp_path):
    """Unpipelined, both: community.general's plugin, given a pipelined
    module, loses its text as often as not (see run_lxc), so that our
    pipelined module handed to it fails in its words ("Broken pipe")."""
    (tmp_path / 'hello.sh').write_text('#!/bin/sh\necho "script says hi"\n')
    vanilla, ours = [run_lxc(lxc_ansible_bin, tmp_path, NO_PYTHON,
                             lxc_container_without_python, community_general,
                             connection, env)
                     for connection, env in (
                         (VANILLA, None),
                         (OURS, {'ANSIBLE_PIPELINING': 'False'}))]
    assert_no_python_as_vanilla(vanilla, ours, pipelined=False)
