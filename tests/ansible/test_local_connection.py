"""plasmid.accel.local against ansible-core's local plugin: the same
playbooks give the same results, in the same directory and environment,
while modules run from RAM in interpreters kept for the run."""
from __future__ import annotations

import os
import pathlib
import pwd
import shutil
import tempfile

import pytest

import parity
from parity import PRELOAD, STRATEGY, assert_same
from runner import BECOME_PLUGINS, inventory, run_playbook

# The oldest and the newest release only in CI (conftest.py).
pytestmark = pytest.mark.edge_releases


def local_inventory(connection: str, extra: str = '') -> str:
    # As ansible-core's implicit localhost: the playbook's own Python.
    return ('[targets]\nhere ansible_connection=%s '
            'ansible_python_interpreter="{{ ansible_playbook_python }}" %s\n'
            % (connection, extra))


def run_local(ansible_bin: str, tmp_path, book: str, accelerated: bool,
              extra_env: dict | None = None, extra: str = ''):
    connection = 'plasmid.accel.local' if accelerated else 'local'
    return run_playbook(ansible_bin, tmp_path, book,
                        local_inventory(connection, extra), accelerated,
                        extra_env)


PARITY = """
- hosts: targets
  gather_facts: false
  vars:
    out: "{{ playbook_dir }}/out"
  tasks:
    - name: where commands run
      command: pwd
    - name: a relative path, from the playbook's directory
      shell: cat data.txt
    - name: the controller's environment
      shell: echo "$PLASMID_LOCAL_MARK"
    - name: stat, relative
      stat: {path: data.txt}
    - name: raw
      raw: echo "raw in $PWD"
    - name: become, sudo
      command: id -un
      become: true
      become_user: "{{ become_to }}"
    - name: become, su
      command: id -un
      become: true
      become_method: su
      become_user: "{{ become_to }}"
    - name: become, a module
      stat: {path: /}
      become: true
      become_user: "{{ become_to }}"
""" + parity.TASKS


def test_local_tasks_match_ansible_cores_local(
        ansible_bin, ansible_account, newest_ansible_bin, tmp_path,
        monkeypatch):
    parity.prepare_files(tmp_path)
    monkeypatch.setenv('PLASMID_LOCAL_MARK', 'from-the-controller')
    book = PARITY.replace('{{ become_to }}', ansible_account)
    vanilla = run_local(ansible_bin, tmp_path, book, False)
    assert vanilla.rc == 0, vanilla.output
    (tmp_path / 'fetched.txt').unlink()
    ours = run_local(ansible_bin, tmp_path, book, True)
    assert ours.rc == 0, ours.output
    assert_same(vanilla, ours)
    results = {r['task']: r['result'] for r in ours.results}
    parity.check_shared_results(results)
    assert results['where commands run']['stdout'] == str(tmp_path)
    assert results['a relative path, from the playbook\'s directory'][
        'stdout'] == 'in the playbook directory'
    assert results['the controller\'s environment']['stdout'] == \
        'from-the-controller'
    assert results['become, sudo']['stdout'] == ansible_account
    assert results['become, su']['stdout'] == ansible_account
    assert 'Traceback' not in ours.output
    # Modules ran in the broker's interpreters: the login's and the
    # become user's, each started once (again after the reset).
    stats = ours.stats
    assert stats['module_runs'] >= 15, stats
    assert stats.get('shell_as_given', 0) == 0, stats
    assert stats['contexts'] <= 5, stats
    for env in parity.optional_modes(ansible_bin, newest_ansible_bin):
        (tmp_path / 'fetched.txt').unlink()
        again = run_local(ansible_bin, tmp_path, book, True, env)
        assert_same(vanilla, again)


def test_twenty_tasks_take_one_interpreter(ansible_bin, tmp_path):
    ours = run_local(ansible_bin, tmp_path, parity.TWENTY, True)
    assert ours.rc == 0, ours.output
    assert ours.stats['module_runs'] == 20, ours.stats
    assert ours.stats['contexts'] == 1, ours.stats
    assert ours.stats['zips_sent'] == 1, ours.stats


IMPORTING = """
- hosts: targets
  gather_facts: false
  tasks:
    - {name: here, command: cat data.txt}
    - {name: here again, command: cat data.txt}
- import_playbook: sub/play.yml
"""
IMPORTED = """
- hosts: targets
  gather_facts: false
  tasks:
    - {name: there, command: cat data.txt}
    - {name: where, command: pwd}
"""


def test_a_playbook_in_another_directory_runs_its_commands_there(
        ansible_bin, tmp_path):
    """ansible-core gives each playbook's tasks its own directory: ours
    read the first playbook's files (a module process forked ahead, or
    kept for the next task, was still in the old directory)."""
    (tmp_path / 'data.txt').write_text('first\n')
    (tmp_path / 'sub').mkdir()
    (tmp_path / 'sub' / 'data.txt').write_text('imported\n')
    (tmp_path / 'sub' / 'play.yml').write_text(IMPORTED)
    vanilla = run_local(ansible_bin, tmp_path, IMPORTING, False)
    ours = run_local(ansible_bin, tmp_path, IMPORTING, True)
    assert_same(vanilla, ours)
    results = {r['task']: r['result'] for r in ours.results}
    assert results['there']['stdout'] == 'imported'
    assert results['where']['stdout'] == str(tmp_path / 'sub')
    assert ours.stats['module_runs'] == 4, ours.stats


LOGIN_BECOME = """
- hosts: targets
  gather_facts: false
  tasks:
    - {name: in the playbook's directory, command: pwd}
    - name: a login's, in the user's home
      command: pwd
      become: true
      become_user: "{{ become_to }}"
      become_flags: -H -S -n -i
"""


def test_a_become_that_logs_in_runs_in_the_users_home(
        ansible_bin, ansible_account, tmp_path):
    """sudo -i runs the command in the user's home under vanilla; ours
    moved its interpreter to the playbook's directory, as for any task."""
    book = LOGIN_BECOME.replace('{{ become_to }}', ansible_account)
    # A playbook directory the account may enter (pytest's is root's only,
    # where ours stayed in the home it could not leave for it).
    here = pathlib.Path(tempfile.mkdtemp(prefix='plasmid-login-'))
    try:
        os.chmod(here, 0o755)
        vanilla = run_local(ansible_bin, here, book, False)
        ours = run_local(ansible_bin, here, book, True)
    finally:
        shutil.rmtree(here)
    assert_same(vanilla, ours)
    results = {r['task']: r['result']['stdout'] for r in ours.results}
    assert results == {
        "in the playbook's directory": str(here),
        "a login's, in the user's home": pwd.getpwnam(ansible_account).pw_dir,
    }, results


NOT_HOSTED = """
- hosts: targets
  gather_facts: false
  tasks:
    - name: a become plugin we do not host
      command: id -un
      become: true
      become_method: via_sudo_n
      become_user: "{{ become_to }}"
    - name: a become program that does not start
      command: id -un
      become: true
      become_exe: /nonexistent/sudo
      become_user: "{{ become_to }}"
      ignore_errors: true
"""


def test_what_we_do_not_host_runs_and_fails_as_vanilla_says(
        ansible_bin, ansible_account, tmp_path):
    book = NOT_HOSTED.replace('{{ become_to }}', ansible_account)
    env = {'ANSIBLE_BECOME_PLUGINS': BECOME_PLUGINS}
    vanilla = run_local(ansible_bin, tmp_path, book, False, env)
    ours = run_local(ansible_bin, tmp_path, book, True, env)
    assert_same(vanilla, ours)
    results = ours.by_task()
    assert results[('here', 'a become plugin we do not host')][
        'result']['stdout'] == ansible_account
    assert results[('here', 'a become program that does not start')][
        'status'] == 'failed'
    assert ours.stats.get('shell_as_given', 0) == 0, ours.stats
    assert 'Traceback' not in ours.output


NO_PYTHON_HERE = """
- hosts: targets
  gather_facts: false
  tasks:
    - name: a missing interpreter
      ping:
      vars: {ansible_python_interpreter: /nonexistent/python}
      ignore_errors: true
    - name: an interpreter that is no Python
      ping:
      vars: {ansible_python_interpreter: /bin/false}
      ignore_errors: true
    - {name: after, command: echo after}
"""


def test_an_interpreter_that_does_not_start_fails_the_task_as_vanilla(
        ansible_bin, tmp_path):
    """Vanilla runs the module through sh, and the task fails (rc 127, or
    1 for /bin/false), ignorable; ours called the host unreachable, and
    the play's later tasks did not run."""
    vanilla = run_local(ansible_bin, tmp_path, NO_PYTHON_HERE, False)
    ours = run_local(ansible_bin, tmp_path, NO_PYTHON_HERE, True)
    assert_same(vanilla, ours)
    results = ours.by_task()
    assert [results[('here', task)]['status'] for task in (
        'a missing interpreter', 'an interpreter that is no Python',
        'after')] == ['failed', 'failed', 'ok'], ours.output


# A play over ssh whose tasks switch to the controller (ansible_connection:
# local in a task's vars, delegate_to: localhost) and back: with the preload
# callback or the strategy those tasks take plasmid.accel.local.
SWITCHING = """
- hosts: targets
  gather_facts: false
  tasks:
    - name: over ssh
      command: id -un
    - name: local for one task, a module
      command: printenv _
      vars:
        ansible_connection: local
      failed_when: false
    - name: local for one task, a shell
      shell: env | grep '^_=' || echo none
      vars:
        ansible_connection: local
    - name: delegated to the controller
      command: printenv _
      delegate_to: localhost
      failed_when: false
    - name: delegated to the controller, as root
      command: printenv _
      delegate_to: localhost
      become: true
      failed_when: false
    - name: back over ssh
      command: id -un
"""


@pytest.mark.parametrize('underscore', [None, '/usr/bin/ansible-playbook'])
def test_local_tasks_get_the_controllers_underscore(
        ansible_bin, ansible_account, sshd, tmp_path, underscore):
    """ansible-core's local plugin starts ``/bin/sh -c`` itself: no shell
    of the account's stands before it to export ``_`` (as bash does for
    the /bin/sh that sshd's login shell starts), so its commands have the
    ``_`` ansible-playbook was started with, or none.  plasmid.accel.local
    gave them ``/bin/sh`` where the controller's SHELL is bash and its
    environment has no ``_`` (ansible-playbook started by a program, not
    from an interactive shell)."""
    inv = inventory(sshd, ansible_account)
    env = {'SHELL': '/bin/bash', '_': underscore}
    vanilla = run_playbook(ansible_bin, tmp_path, SWITCHING, inv, False, env)
    assert vanilla.rc == 0, vanilla.output
    seen = vanilla.by_task()[('t1', 'local for one task, a module')]
    assert seen['result']['stdout'] == (underscore or ''), seen
    for mode in (PRELOAD, STRATEGY):
        ours = run_playbook(ansible_bin, tmp_path, SWITCHING, inv, True,
                            dict(env, **mode))
        assert_same(vanilla, ours)
        # The controller's tasks ran in the broker's local interpreter.
        assert ours.stats['module_runs'] == 6, ours.stats
