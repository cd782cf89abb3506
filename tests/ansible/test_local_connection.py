"""plasmid.accel.local against ansible-core's local plugin: the same
playbooks give the same results, in the same directory and environment,
while modules run from RAM in interpreters kept for the run."""
from __future__ import annotations

import os

from runner import run_playbook
from test_playbooks import PRELOAD, STRATEGY, assert_same

BECOME_PLUGINS = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                              'become_plugins')


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
    - name: environment keyword
      command: printenv TASK_VAR
      environment: {TASK_VAR: from-the-task}
    - name: who
      command: id -un
    - name: a directory
      file: {path: "{{ out }}", state: directory}
    - name: copy of content
      copy: {content: "small\\n", dest: "{{ out }}/small.txt"}
    - name: copy of a file, relative source
      copy: {src: data.txt, dest: "{{ out }}/data.txt"}
    - name: template
      template: {src: t.j2, dest: "{{ out }}/t.conf"}
    - name: lineinfile
      lineinfile: {path: "{{ out }}/t.conf", line: added}
    - name: check mode changes nothing
      lineinfile: {path: "{{ out }}/t.conf", line: never}
      check_mode: true
      diff: true
    - name: fetch
      fetch: {src: "{{ out }}/small.txt", dest: "{{ out }}/fetched.txt",
              flat: true}
    - name: stat, relative
      stat: {path: data.txt}
    - name: slurp
      slurp: {src: "{{ out }}/t.conf"}
    - name: raw
      raw: echo "raw in $PWD"
    - name: script
      script: s.sh arg
    - name: no_log
      command: echo secret
      no_log: true
    - name: a failing command
      command: /bin/false
      ignore_errors: true
    - name: a module's failure
      file: {path: /nonexistent/x/y, state: touch}
      ignore_errors: true
    - name: async
      command: sleep 0.2
      async: 10
      poll: 0
      register: job
    - name: async_status
      async_status: {jid: "{{ job.ansible_job_id }}"}
      register: waited
      until: waited.finished
      retries: 50
      delay: 0.2
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
    - name: reset_connection
      meta: reset_connection
    - name: after the reset
      command: id -un
    - name: clean up, for the next run
      file: {path: "{{ out }}", state: absent}
"""


def _prepare(tmp_path) -> None:
    (tmp_path / 'data.txt').write_text('in the playbook directory\n')
    (tmp_path / 't.j2').write_text('{{ inventory_hostname }} {{ 6 * 7 }}\n')
    script = tmp_path / 's.sh'
    script.write_text('#!/bin/sh\necho "script $1 in $PWD"\n')
    script.chmod(0o755)


def test_local_tasks_match_ansible_cores_local(ansible_bin, ansible_account,
                                               tmp_path, monkeypatch):
    _prepare(tmp_path)
    monkeypatch.setenv('PLASMID_LOCAL_MARK', 'from-the-controller')
    book = PARITY.replace('{{ become_to }}', ansible_account)
    vanilla = run_local(ansible_bin, tmp_path, book, False)
    assert vanilla.rc == 0, vanilla.output
    ours = run_local(ansible_bin, tmp_path, book, True)
    assert ours.rc == 0, ours.output
    assert_same(vanilla, ours)
    results = {r['task']: r['result'] for r in ours.results}
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
    for env in (STRATEGY, PRELOAD):
        again = run_local(ansible_bin, tmp_path, book, True, env)
        assert_same(vanilla, again)


MANY = """
- hosts: targets
  gather_facts: false
  tasks:
%s
""" % '\n'.join('    - command: /bin/true' for _ in range(20))


def test_twenty_tasks_take_one_interpreter(ansible_bin, tmp_path):
    ours = run_local(ansible_bin, tmp_path, MANY, True)
    assert ours.rc == 0, ours.output
    assert ours.stats['module_runs'] == 20, ours.stats
    assert ours.stats['contexts'] == 1, ours.stats
    assert ours.stats['zips_sent'] == 1, ours.stats


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
