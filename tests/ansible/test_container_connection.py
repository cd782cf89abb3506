"""plasmid.accel.podman and plasmid.accel.docker against the collections'
podman and docker connections, in the test bed's podman container (the
docker client talks to podman's Docker API): the same playbooks give the
same results, while modules run from RAM in an interpreter kept for the
run."""
from __future__ import annotations

import pytest

import parity
from containers import (NO_PYTHON, assert_no_python_as_vanilla,
                        container_inventory)
from runner import run_playbook
from parity import assert_same

# The oldest and the newest release only in CI (conftest.py).
pytestmark = pytest.mark.edge_releases


def run_podman(ansible_bin: str, tmp_path, book: str, container: str,
               collections: str, accelerated: bool, extra_env=None,
               extra: str = ''):
    connection = 'plasmid.accel.podman' if accelerated else \
        'containers.podman.podman'
    env = {'ANSIBLE_COLLECTIONS_PATH': collections}
    env.update(extra_env or {})
    return run_playbook(ansible_bin, tmp_path, book,
                        container_inventory(container, connection, extra),
                        accelerated, env)


PARITY = """
- hosts: targets
  gather_facts: false
  vars:
    out: /tmp/plasmid-podman-parity
  tasks:
    - name: where commands run
      command: pwd
    - name: stat
      stat: {path: /etc/hostname}
    - name: raw, whose words are not given to a shell
      raw: echo raw $PWD
    - name: raw with a pipe, likewise
      raw: echo a | wc -l
    - name: become with su
      command: id -un
      become: true
      become_method: su
      become_user: nobody
      become_flags: -s /bin/sh
""" + parity.TASKS + """
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


def test_container_tasks_match_containers_podman(
        ansible_bin, newest_ansible_bin, podman_container,
        containers_podman, tmp_path):
    parity.prepare_files(tmp_path)
    vanilla = run_podman(ansible_bin, tmp_path, PARITY, podman_container,
                         containers_podman, False)
    assert vanilla.rc == 0, vanilla.output
    (tmp_path / 'fetched.txt').unlink()
    ours = run_podman(ansible_bin, tmp_path, PARITY, podman_container,
                      containers_podman, True)
    assert ours.rc == 0, ours.output
    assert_same(vanilla, ours)
    results = {r['task']: r['result'] for r in ours.results}
    parity.check_shared_results(results)
    assert results['raw, whose words are not given to a shell'][
        'stdout'] == 'raw $PWD\n'
    assert results['become with su']['stdout'] == 'nobody'
    assert results['as the remote user']['stdout'] == 'nobody'
    assert (tmp_path / 'fetched.txt').read_text() == 'small\n'
    assert 'Traceback' not in ours.output
    stats = ours.stats
    assert stats['module_runs'] >= 15, stats
    assert stats['contexts'] <= 6, stats
    for env in parity.optional_modes(ansible_bin, newest_ansible_bin):
        (tmp_path / 'fetched.txt').unlink()
        again = run_podman(ansible_bin, tmp_path, PARITY,
                           podman_container, containers_podman, True, env)
        assert_same(vanilla, again)


def test_twenty_tasks_take_one_interpreter_in_the_container(
        ansible_bin, podman_container, containers_podman, tmp_path):
    from testbed import containers
    ours = run_podman(ansible_bin, tmp_path, parity.TWENTY,
                      podman_container, containers_podman, True)
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
        inv = container_inventory(podman_container, connection,
                                  extra + ' ' + more)
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


def test_a_container_without_python_is_handed_to_the_collections_plugin(
        newest_ansible_bin, container_without_python, containers_podman,
        tmp_path):
    (tmp_path / 'hello.sh').write_text('#!/bin/sh\necho "script says hi"\n')
    vanilla = run_podman(newest_ansible_bin, tmp_path, NO_PYTHON,
                         container_without_python, containers_podman, False)
    ours = run_podman(newest_ansible_bin, tmp_path, NO_PYTHON,
                      container_without_python, containers_podman, True)
    assert_no_python_as_vanilla(vanilla, ours)
