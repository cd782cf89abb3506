"""plasmid.accel.kubectl against kubernetes.core's kubectl connection.

No cluster runs on this machine kind: the real kubectl client talks to the
test bed's stand-in API server (tests/testbed/kubectl.py), whose pod's
container is the test bed's podman container.  The same playbook gives the
same results with either plugin, while ours keeps one interpreter for the
run and runs modules from RAM."""
from __future__ import annotations

import glob
import json
import os
import tempfile
from typing import Iterator

import pytest

from containers import NO_PYTHON, assert_no_python_as_vanilla
from runner import run_playbook, run_probe
from parity import PRELOAD, assert_same
from testbed import kubectl

BOOK = """
- hosts: targets
  gather_facts: false
  tasks:
    - name: where commands run
      command: pwd
    - name: who
      command: id -un
    - name: raw, in a shell
      raw: echo raw $PWD
    - name: copy of content
      copy: {content: "small\\n", dest: /tmp/plasmid-kubectl.txt}
    - name: template
      template: {src: "{{ playbook_dir }}/t.j2", dest: /tmp/plasmid-kubectl.t}
    - name: fetch
      fetch: {src: /tmp/plasmid-kubectl.txt,
              dest: "{{ playbook_dir }}/fetched.txt", flat: true}
    - name: stat
      stat: {path: /tmp/plasmid-kubectl.txt}
    - name: a loop
      command: echo "{{ item }}"
      loop: [1, 2, 3]
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
      file: {path: "{{ item }}", state: absent}
      loop: [/tmp/plasmid-kubectl.txt, /tmp/plasmid-kubectl.t]
"""
# copy and template run stat and copy each; fetch runs stat; the loops'
# items one each.
MODULE_RUNS = 15


@pytest.fixture(scope='module')
def cluster(podman_container) -> Iterator[str]:
    """The kubeconfig of a stand-in API server with pod ``web`` (its
    container ``app`` the test bed's podman container, as root)."""
    reason = kubectl.unavailable_reason()
    if reason is not None:
        pytest.skip(reason)
    with kubectl.standin({'default/web': [['app', podman_container,
                                           'root']]}) as config:
        yield config


def pod_inventory(connection: str, extra: str) -> str:
    return ('[targets]\nbox ansible_connection=%s ansible_kubectl_pod=web '
            'ansible_python_interpreter=/usr/bin/python3 %s\n'
            % (connection, extra))


def run(ansible_bin: str, tmp_path, connection: str, extra: str,
        collections: str, env: dict | None = None):
    (tmp_path / 't.j2').write_text('{{ inventory_hostname }}\n')
    done = run_playbook(ansible_bin, tmp_path, BOOK,
                        pod_inventory(connection, extra),
                        'plasmid' in connection or env is not None,
                        dict(env or {}, ANSIBLE_COLLECTIONS_PATH=collections))
    assert done.rc == 0, done.output
    assert (tmp_path / 'fetched.txt').read_text() == 'small\n'
    (tmp_path / 'fetched.txt').unlink()
    assert 'Traceback' not in done.output
    return done


def test_pod_tasks_match_kubernetes_core(newest_ansible_bin, cluster,
                                         kubernetes_core, tmp_path):
    config = 'ansible_kubectl_kubeconfig=' + cluster
    vanilla = run(newest_ansible_bin, tmp_path, 'kubernetes.core.kubectl',
                  config, kubernetes_core)
    ours = run(newest_ansible_bin, tmp_path, 'plasmid.accel.kubectl',
               config, kubernetes_core)
    assert_same(vanilla, ours)
    results = {r['task']: r['result'] for r in ours.results}
    assert results['who']['stdout'] == 'root'
    assert results['become with su']['stdout'] == 'nobody'
    assert results['raw, in a shell']['stdout'] == 'raw /\n'
    assert ours.stats['module_runs'] == MODULE_RUNS, ours.stats
    # One interpreter as root, one as nobody, started through it.
    assert ours.stats['contexts'] == 2, ours.stats


def test_a_kubeconfig_as_data_and_kubectls_environment(
        newest_ansible_bin, cluster, kubernetes_core, tmp_path):
    """The kubeconfig given as a dictionary (written to a private file for
    kubectl's start), or found by kubectl through KUBECONFIG set by
    kubectl_local_env_vars."""
    with open(cluster) as config:
        data = json.load(config)
    inline = "ansible_kubectl_kubeconfig='%s'" % json.dumps(data)
    ours = run(newest_ansible_bin, tmp_path, 'plasmid.accel.kubectl', inline,
               kubernetes_core)
    assert ours.stats['module_runs'] == MODULE_RUNS, ours.stats
    # The file kubectl read it from is gone with kubectl's start.
    assert glob.glob(os.path.join(tempfile.gettempdir(),
                                  'plasmid-kubeconfig-*')) == []
    env = "ansible_kubectl_local_env_vars='%s'" % json.dumps(
        {'KUBECONFIG': cluster})
    ours = run(newest_ansible_bin, tmp_path, 'plasmid.accel.kubectl', env,
               kubernetes_core)
    assert ours.stats['module_runs'] == MODULE_RUNS, ours.stats


def test_a_pod_named_by_its_short_name_is_taken_by_the_callback(
        newest_ansible_bin, cluster, kubernetes_core, tmp_path):
    """``ansible_connection=kubectl``, which ansible-core routes to
    kubernetes.core.kubectl, runs on ours with the preload callback."""
    ours = run(newest_ansible_bin, tmp_path, 'kubectl',
               'ansible_kubectl_kubeconfig=' + cluster, kubernetes_core,
               PRELOAD)
    assert ours.stats['module_runs'] == MODULE_RUNS, ours.stats
    assert ours.stats['contexts'] == 2, ours.stats


def test_a_missing_pod_fails_the_task_as_in_vanilla(
        newest_ansible_bin, cluster, kubernetes_core, tmp_path):
    book = ('- hosts: targets\n  gather_facts: false\n  tasks:\n'
            '    - name: pipelined\n      command: id -un\n'
            '      ignore_unreachable: true\n')
    inv = ('[targets]\nbox ansible_kubectl_pod=absent '
           'ansible_kubectl_kubeconfig=%s ansible_connection=' % cluster)
    env = {'ANSIBLE_COLLECTIONS_PATH': kubernetes_core}
    vanilla = run_playbook(newest_ansible_bin, tmp_path, book,
                           inv + 'kubernetes.core.kubectl\n', False, env)
    ours = run_playbook(newest_ansible_bin, tmp_path, book,
                        inv + 'plasmid.accel.kubectl\n', True, env)
    theirs = vanilla.by_task()[('box', 'pipelined')]
    mine = ours.by_task()[('box', 'pipelined')]
    # kubernetes.core's plugin fails the task (it never says unreachable),
    # kubectl's words in module_stderr: ours in the message.
    assert theirs['status'] == mine['status'] == 'failed', (theirs, mine)
    assert 'pods "absent" not found' in theirs['result']['module_stderr']
    assert 'pods "absent" not found' in mine['result']['msg'], mine
    assert 'Traceback' not in ours.output


def test_a_container_without_python_is_handed_to_kubernetes_core(
        newest_ansible_bin, container_without_python, kubernetes_core,
        tmp_path):
    (tmp_path / 'hello.sh').write_text('#!/bin/sh\necho "script says hi"\n')
    env = {'ANSIBLE_COLLECTIONS_PATH': kubernetes_core}
    with kubectl.standin({'default/web': [['app', container_without_python,
                                           'root']]}) as config:
        runs = [run_playbook(newest_ansible_bin, tmp_path, NO_PYTHON,
                             pod_inventory(connection,
                                           'ansible_kubectl_kubeconfig='
                                           + config), accelerated, env)
                for connection, accelerated in (
                    ('kubernetes.core.kubectl', False),
                    ('plasmid.accel.kubectl', True))]
    assert_no_python_as_vanilla(*runs, racy_status=True)


@pytest.mark.parametrize('option, said', [
    ('ansible_kubectl_context=nowhere',
     'context was not found for specified context: nowhere'),
    # Web is in the stand-in's default namespace only.
    ('ansible_kubectl_namespace=jobs', 'Error from server (NotFound)'),
    ('ansible_kubectl_container=db', 'container db is not valid for pod web'),
])
def test_the_pods_options_reach_kubectl(newest_ansible_bin, cluster,
                                        kubernetes_core, tmp_path, option,
                                        said):
    book = ('- hosts: targets\n  gather_facts: false\n  tasks:\n'
            '    - name: where\n      command: id -un\n')
    inv = pod_inventory('plasmid.accel.kubectl',
                        'ansible_kubectl_kubeconfig=%s %s' % (cluster, option))
    ours = run_playbook(newest_ansible_bin, tmp_path, book, inv, True,
                        {'ANSIBLE_COLLECTIONS_PATH': kubernetes_core})
    mine = ours.by_task()[('box', 'where')]
    assert mine['status'] == 'failed', mine
    assert said in mine['result']['msg'], mine


# kubectl's arguments from the plugin's options, in the newest venv.
ARGS = """
import json, os, sys
from ansible.playbook.play_context import PlayContext
from ansible.plugins.loader import connection_loader, init_plugin_loader
init_plugin_loader()
plugin = connection_loader.get('plasmid.accel.kubectl', PlayContext(),
                               os.devnull)
plugin.set_options(var_options=json.loads(sys.argv[1]))
print(json.dumps(plugin._kubectl_args()))
"""


@pytest.mark.parametrize('given, args', [
    ({'ansible_kubectl_validate_certs': False},
     ['--insecure-skip-tls-verify=true']),
    ({'ansible_kubectl_verify_ssl': 'no'}, ['--insecure-skip-tls-verify=true']),
    ({'ansible_kubectl_validate_certs': True}, []),
    ({'ansible_kubectl_token': 't0k', 'ansible_kubectl_server': 'https://k',
      'ansible_kubectl_kubeconfig': '/k.cfg',
      'ansible_kubectl_extra_args': '--v=2  --request-timeout=5s'},
     ['--kubeconfig', '/k.cfg', '--server', 'https://k', '--token', 't0k',
      '--v=2', '--request-timeout=5s']),
])
def test_kubectls_arguments_from_the_plugins_options(newest_ansible_bin,
                                                     given, args):
    found = run_probe(newest_ansible_bin, ARGS, json.dumps(given))
    assert json.loads(found) == args
