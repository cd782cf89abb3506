"""plasmid.accel.podman and plasmid.accel.docker against the collections'
podman and docker connections, in the test bed's podman container (the
docker client talks to podman's Docker API): the same playbooks give the
same results, while modules run from RAM in an interpreter kept for the
run."""
from __future__ import annotations

import shutil
from typing import Iterator

import pytest

from runner import run_playbook
from test_playbooks import PRELOAD, STRATEGY, assert_same


@pytest.fixture(scope='module')
def containers_podman() -> str:
    from conftest import _bundled_collection
    return _bundled_collection('containers.podman')


@pytest.fixture(scope='module')
def community_docker() -> str:
    from conftest import _bundled_collection
    return _bundled_collection('community.docker')


@pytest.fixture(scope='module')
def docker_host(podman_container) -> Iterator[str]:
    from testbed import containers
    if shutil.which('docker') is None:
        pytest.skip('no docker client on this machine')
    with containers.docker_api() as host:
        yield host


def podman_inventory(container: str, connection: str,
                     extra: str = '') -> str:
    return ('[targets]\nbox ansible_host=%s ansible_connection=%s '
            'ansible_python_interpreter=/usr/bin/python3 %s\n'
            % (container, connection, extra))


def run_podman(ansible_bin: str, tmp_path, book: str, container: str,
               collections: str, accelerated: bool, extra_env=None,
               extra: str = ''):
    connection = 'plasmid.accel.podman' if accelerated else \
        'containers.podman.podman'
    env = {'ANSIBLE_COLLECTIONS_PATH': collections}
    env.update(extra_env or {})
    return run_playbook(ansible_bin, tmp_path, book,
                        podman_inventory(container, connection, extra),
                        accelerated, env)


PARITY = """
- hosts: targets
  gather_facts: false
  vars:
    out: /tmp/plasmid-podman-parity
  tasks:
    - name: where commands run
      command: pwd
    - name: who
      command: id -un
    - name: a pipe, in a shell
      shell: echo one two | wc -w
    - name: environment keyword
      command: printenv TASK_VAR
      environment: {TASK_VAR: from-the-task}
    - name: a directory
      file: {path: "{{ out }}", state: directory}
    - name: copy of content
      copy: {content: "small\\n", dest: "{{ out }}/small.txt"}
    - name: copy of a file
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
      fetch: {src: "{{ out }}/small.txt", dest: "{{ playbook_dir }}/fetched.txt",
              flat: true}
    - name: stat
      stat: {path: "{{ out }}/t.conf"}
    - name: slurp
      slurp: {src: "{{ out }}/t.conf"}
    - name: raw, whose words are not given to a shell
      raw: echo raw $PWD
    - name: raw with a pipe, likewise
      raw: echo a | wc -l
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
    - name: become with su
      command: id -un
      become: true
      become_method: su
      become_user: nobody
      become_flags: -s /bin/sh
    - name: reset_connection
      meta: reset_connection
    - name: after the reset
      command: id -un
    - name: clean up, for the next run
      file: {path: "{{ out }}", state: absent}

- hosts: targets
  gather_facts: false
  remote_user: nobody
  vars:
    ansible_remote_tmp: /tmp/plasmid-podman-nobody
  tasks:
    - name: as the remote user
      command: id -un
    - name: a file of the remote user's
      copy: {content: "mine\\n", dest: /tmp/plasmid-podman-nobody.txt}
    - name: its owner
      stat: {path: /tmp/plasmid-podman-nobody.txt}
      register: owned
    - name: owned by the remote user
      assert: {that: owned.stat.pw_name == 'nobody'}
    - name: clean up
      file: {path: /tmp/plasmid-podman-nobody.txt, state: absent}
"""


def _prepare(tmp_path) -> None:
    (tmp_path / 'data.txt').write_text('from the controller\n')
    (tmp_path / 't.j2').write_text('{{ inventory_hostname }} {{ 6 * 7 }}\n')
    script = tmp_path / 's.sh'
    script.write_text('#!/bin/sh\necho "script $1 in $PWD"\n')
    script.chmod(0o755)


def test_container_tasks_match_containers_podman(
        ansible_bin, podman_container, containers_podman, tmp_path):
    _prepare(tmp_path)
    vanilla = run_podman(ansible_bin, tmp_path, PARITY, podman_container,
                         containers_podman, False)
    assert vanilla.rc == 0, vanilla.output
    (tmp_path / 'fetched.txt').unlink()
    ours = run_podman(ansible_bin, tmp_path, PARITY, podman_container,
                      containers_podman, True)
    assert ours.rc == 0, ours.output
    assert_same(vanilla, ours)
    results = {r['task']: r['result'] for r in ours.results}
    assert results['raw, whose words are not given to a shell'][
        'stdout'] == 'raw $PWD\n'
    assert results['become with su']['stdout'] == 'nobody'
    assert results['as the remote user']['stdout'] == 'nobody'
    assert (tmp_path / 'fetched.txt').read_text() == 'small\n'
    assert 'Traceback' not in ours.output
    stats = ours.stats
    assert stats['module_runs'] >= 15, stats
    assert stats['contexts'] <= 6, stats
    for env in (STRATEGY, PRELOAD):
        (tmp_path / 'fetched.txt').unlink()
        again = run_podman(ansible_bin, tmp_path, PARITY, podman_container,
                           containers_podman, True, env)
        assert_same(vanilla, again)


MANY = """
- hosts: targets
  gather_facts: false
  tasks:
%s
""" % '\n'.join('    - command: /bin/true' for _ in range(20))


def test_twenty_tasks_take_one_interpreter_in_the_container(
        ansible_bin, podman_container, containers_podman, tmp_path):
    from testbed import containers
    ours = run_podman(ansible_bin, tmp_path, MANY, podman_container,
                      containers_podman, True)
    assert ours.rc == 0, ours.output
    assert ours.stats['module_runs'] == 20, ours.stats
    assert ours.stats['contexts'] == 1, ours.stats
    # The interpreter ended with the run: none is left in the container
    # (but async_wrapper processes an earlier test's async task left, on
    # their way out: they run files of a temp dir).
    left = [line for line in containers.interpreters_in(podman_container)
            if 'ansible-tmp-' not in line]
    assert left == []


UNREACHABLE = """
- hosts: targets
  gather_facts: false
  tasks:
    - name: pipelined
      command: id -un
      ignore_unreachable: true
"""


def test_a_missing_container_is_unreachable_as_in_vanilla(
        ansible_bin, podman_container, containers_podman, tmp_path):
    absent = podman_container + '-absent'
    vanilla = run_podman(ansible_bin, tmp_path, UNREACHABLE, absent,
                         containers_podman, False)
    ours = run_podman(ansible_bin, tmp_path, UNREACHABLE, absent,
                      containers_podman, True)
    mine = ours.by_task()[('box', 'pipelined')]
    assert mine['status'] == \
        vanilla.by_task()[('box', 'pipelined')]['status'], mine
    assert 'no container with name or ID' in mine['result']['msg'], mine
    assert 'Traceback' not in ours.output


DOCKER = """
- hosts: targets
  gather_facts: false
  tasks:
    - name: where commands run (working_dir)
      command: pwd
    - name: the environment extra_env gives
      command: printenv PLASMID_MARK
    - name: who
      command: id -un
    - name: raw, in a shell
      raw: echo raw $PWD
    - name: copy of content
      copy: {content: "small\\n", dest: /tmp/plasmid-docker.txt}
    - name: fetch
      fetch: {src: /tmp/plasmid-docker.txt,
              dest: "{{ playbook_dir }}/fetched.txt", flat: true}
    - name: stat
      stat: {path: /tmp/plasmid-docker.txt}
    - name: a module's failure
      file: {path: /nonexistent/x/y, state: touch}
      ignore_errors: true
    - name: become with su
      command: id -un
      become: true
      become_method: su
      become_user: nobody
      become_flags: -s /bin/sh
    - name: clean up
      file: {path: /tmp/plasmid-docker.txt, state: absent}
"""


def test_container_tasks_match_community_docker(
        newest_ansible_bin, podman_container, community_docker, docker_host,
        tmp_path):
    """On the newest ansible-core only: the path beyond the login is the
    podman plugin's, tested on every release above."""
    extra = 'ansible_docker_extra_env=\'{"PLASMID_MARK": "marked"}\''
    env = {'ANSIBLE_COLLECTIONS_PATH': community_docker,
           'DOCKER_HOST': docker_host}

    def run(connection: str, more: str = ''):
        inv = ('[targets]\nbox ansible_host=%s ansible_connection=%s '
               'ansible_python_interpreter=/usr/bin/python3 %s %s\n'
               % (podman_container, connection, extra, more))
        done = run_playbook(newest_ansible_bin, tmp_path, DOCKER, inv,
                            connection.startswith('plasmid'), env)
        assert done.rc == 0, done.output
        (tmp_path / 'fetched.txt').unlink()
        return done
    vanilla = run('community.docker.docker')
    ours = run('plasmid.accel.docker')
    assert_same(vanilla, ours)
    results = {r['task']: r['result'] for r in ours.results}
    assert results['the environment extra_env gives']['stdout'] == 'marked'
    assert results['raw, in a shell']['stdout'] == 'raw /\n'
    assert results['become with su']['stdout'] == 'nobody'
    assert ours.stats['module_runs'] >= 6, ours.stats
    assert 'Traceback' not in ours.output
    # working_dir: community.docker's plugin refuses it here, as it takes
    # the version podman's API gives (4.3) for the Docker CLI's.
    moved = run('plasmid.accel.docker', 'ansible_docker_working_dir=/tmp')
    results = {r['task']: r['result'] for r in moved.results}
    assert results['where commands run (working_dir)']['stdout'] == '/tmp'
    assert results['raw, in a shell']['stdout'] == 'raw /tmp\n'
