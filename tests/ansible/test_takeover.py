"""plasmid/ansible/takeover.py: with the preload callback or the optional
strategy, the connections a play or an inventory names (``local``, the
implicit localhost, ``ansible_connection=ssh``) load our plugins, with
vanilla's results; what is left to vanilla stays vanilla's."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess

import pytest

import parity
from parity import PRELOAD, STRATEGY, assert_same
from runner import inventory, run_ad_hoc, run_playbook, run_probe
from containers import container_inventory

# ansible-core's loader, as TaskExecutor and the strategy's meta tasks
# use it, with the takeover installed; checked in each release's venv.
PROBE = """
import inspect, json, os
from ansible.executor.task_executor import TaskExecutor
from ansible.playbook.play_context import PlayContext
from ansible.plugins import loader
from ansible.plugins.loader import connection_loader, init_plugin_loader
from plasmid.ansible import takeover
init_plugin_loader()
takeover.install(['ssh', 'local'])
taken = connection_loader.get('local', PlayContext(), os.devnull)
kept = connection_loader.get('ansible.builtin.local', PlayContext(),
                             os.devnull)
vanilla = takeover.load_vanilla('local', PlayContext(), os.devnull)
# What the strategy hands each worker: the loader module itself up to
# 2.18, a namespace of its loaders since.
shared = getattr(loader, 'get_plugin_loader_namespace', lambda: loader)()
print(json.dumps({
    'executor_loads_through_hook': 'connection_loader.get_with_context(' in
        inspect.getsource(TaskExecutor._get_connection),
    'shared_loader_is_the_global':
        shared.connection_loader is connection_loader,
    'taken': taken.ansible_name,
    'taken_transport': taken.transport,
    'taken_matches_local': taken.matches_name(['local']),
    'kept': kept.ansible_name,
    'vanilla': vanilla.ansible_name,
    'class_only': connection_loader.get('ssh', class_only=True).__module__,
    # ansible-core routes "smart" to ssh since 2.19: taken as ssh is.
    'smart': takeover.ours_for('smart'),
    'smart_routed': connection_loader.find_plugin_with_context(
        'smart').resolved,
}))
"""


CHOICES = """
import json
from ansible.plugins.loader import callback_loader, init_plugin_loader
from ansible.utils.plugin_docs import get_docstring
from plasmid.ansible import takeover
init_plugin_loader()
doc = get_docstring(callback_loader.find_plugin('plasmid.accel.preload'),
                    fragment_loader=None)[0]
print(json.dumps({'option': doc['options']['connections'],
                  'takeable': list(takeover.TAKEABLE)}))
"""


def test_the_callbacks_choices_are_the_names_it_can_take(newest_ansible_bin):
    """The callback's documented choices (YAML that ansible-core reads from
    the file's text) and takeover.TAKEABLE are one list written twice."""
    found = json.loads(run_probe(newest_ansible_bin, CHOICES))
    option = found['option']
    assert option['choices'] == found['takeable'], found
    # Each paragraph a string (a ': ' in YAML makes one a mapping).
    assert all(isinstance(p, str) for p in option['description']), option
    assert set(option['default']) <= set(found['takeable']), found


def test_the_hook_is_where_each_release_loads_a_connection(ansible_bin):
    found = json.loads(run_probe(ansible_bin, PROBE))
    assert found['executor_loads_through_hook'], found
    assert found['shared_loader_is_the_global'], found
    assert found['taken'] == 'plasmid.accel.local', found
    assert found['taken_transport'] == 'local', found
    # A loop keeps the connection only while it matches the name asked.
    assert found['taken_matches_local'], found
    assert found['kept'] == 'ansible.builtin.local', found
    assert found['vanilla'] == 'ansible.builtin.local', found
    # The network base asks for ssh's class for its _create_control_path.
    assert found['class_only'] == 'ansible.plugins.connection.ssh', found
    assert found['smart'] == \
        ('plasmid.accel.ssh' if found['smart_routed'] else None), found


LOCALHOST = """
- hosts: localhost
  gather_facts: false
  tasks:
    - name: where commands run
      command: pwd
    - name: a loop
      command: echo "{{ item }}"
      loop: [1, 2, 3]
    - name: ping
      ping:
    - name: copy, relative
      copy: {content: "taken\\n", dest: "{{ playbook_dir }}/out.txt"}
    - name: read it back
      command: cat out.txt
"""
LOCALHOST_RUNS = 8  # the loop is three, copy is stat + copy


def test_the_implicit_localhost_is_taken_with_the_callback(ansible_bin,
                                                           tmp_path):
    # No localhost in the inventory: ansible-core makes its own, with
    # the local connection, whatever the transport says.
    vanilla = run_playbook(ansible_bin, tmp_path, LOCALHOST, '[targets]\n',
                           False)
    assert vanilla.rc == 0, vanilla.output
    (tmp_path / 'out.txt').unlink()
    ours = run_playbook(ansible_bin, tmp_path, LOCALHOST, '[targets]\n',
                        True, PRELOAD, args=('-vvv',))
    assert_same(vanilla, ours)
    assert ours.stats['module_runs'] == LOCALHOST_RUNS, ours.stats
    # -vvv shows what vanilla's plugins show: each command, each file.
    assert 'ESTABLISH PLASMID CONNECTION FOR USER' in ours.output
    assert ours.output.count('PLASMID: EXEC ') >= LOCALHOST_RUNS
    assert "> (0, b'" not in ours.output  # vanilla's ssh shows these
    # copy's content goes up as a temp file named .source.txt
    assert re.search(r'PUT \S+ TO \S+/\.source\.txt', ours.output), \
        ours.output
    assert ours.stats['contexts'] == 1, ours.stats
    # One broker client per task's worker: the loop's items kept theirs.
    assert ours.stats['client_processes'] == 5, ours.stats


def test_the_strategy_takes_them_too(newest_ansible_bin, tmp_path):
    ours = run_playbook(newest_ansible_bin, tmp_path, LOCALHOST,
                        '[targets]\n', True, STRATEGY)
    assert ours.rc == 0, ours.output
    assert ours.stats['module_runs'] == LOCALHOST_RUNS, ours.stats
    # ... reading the callback's setting: ssh alone leaves local alone.
    env = dict(STRATEGY, PLASMID_ACCEL_CONNECTIONS='ssh')
    left = run_playbook(newest_ansible_bin, tmp_path, LOCALHOST,
                        '[targets]\n', True, env, stats_timeout=1)
    assert left.rc == 0, left.output
    assert left.stats.get('module_runs', 0) == 0, left.stats
    # A name it cannot take stops the run (a callback would be skipped).
    env = dict(STRATEGY, PLASMID_ACCEL_CONNECTIONS='paramiko_ssh')
    wrong = run_playbook(newest_ansible_bin, tmp_path, LOCALHOST,
                         '[targets]\n', True, env, stats_timeout=1)
    assert wrong.rc != 0, wrong.output
    assert _refused("['paramiko_ssh']", wrong.output), wrong.output


def _refused(value: str, output: str) -> bool:
    """Whether *output* holds ansible-core's words for a ``connections``
    *value* outside the option's choices: "Invalid value V for config
    'connections'" up to 2.21, "Config 'connections' for ... has an invalid
    value V" since 2.22 (both then list the valid values)."""
    return "Invalid value %s for config 'connections'" % value in output or \
        re.search(r"Config 'connections' for .* has an invalid value %s"
                  % re.escape(value), output) is not None


NAMED = """
- hosts: targets
  gather_facts: false
  tasks:
    - name: on the ssh host
      command: id -un
    - name: delegated to localhost
      command: echo here
      delegate_to: localhost
    - name: a local play's task, delegated back
      command: hostname
      delegate_to: localhost
      connection: local
"""


def test_hosts_that_name_ssh_and_delegation_to_localhost_are_taken(
        newest_ansible_bin, ansible_account, sshd, tmp_path):
    inv = inventory(sshd, ansible_account, extra='ansible_connection=ssh')
    vanilla = run_playbook(newest_ansible_bin, tmp_path, NAMED, inv, False)
    assert vanilla.rc == 0, vanilla.output
    ours = run_playbook(newest_ansible_bin, tmp_path, NAMED, inv, True,
                        PRELOAD)
    assert_same(vanilla, ours)
    assert ours.stats['module_runs'] == 3, ours.stats
    assert ours.stats['contexts'] == 2, ours.stats  # one ssh, one local


def test_ad_hoc_commands_are_taken_once_they_load_callbacks(
        newest_ansible_bin, ansible_account, sshd, tmp_path):
    """``ansible`` makes the enabled callbacks only with
    ``bin_ansible_callbacks`` (README says so): then ours takes the ssh
    host as in ansible-playbook; without it, vanilla's plugin runs."""
    inv = inventory(sshd, ansible_account, extra='ansible_connection=ssh')
    words = ('-b', '-m', 'command', '-a', 'id -un')
    vanilla = run_ad_hoc(newest_ansible_bin, tmp_path, inv, False, words)
    assert vanilla[0] == 0 and '(stdout) root' in vanilla[1], vanilla
    loading = dict(PRELOAD, ANSIBLE_LOAD_CALLBACK_PLUGINS='True')
    ours = run_ad_hoc(newest_ansible_bin, tmp_path, inv, True, words,
                      loading)
    assert ours[:2] == vanilla[:2], ours
    assert ours[2]['module_runs'] == 1, ours
    left = run_ad_hoc(newest_ansible_bin, tmp_path, inv, True, words,
                      PRELOAD, stats_timeout=1)
    assert left[:2] == vanilla[:2], left
    assert left[2].get('module_runs', 0) == 0, left


@pytest.mark.parametrize('named', ['containers.podman.podman', 'podman'])
def test_a_host_that_names_containers_podman_is_taken(
        newest_ansible_bin, podman_container, containers_podman, tmp_path,
        named):
    """In full, or by the short name ansible-core routes to it."""
    env = dict(PRELOAD, ANSIBLE_COLLECTIONS_PATH=containers_podman)
    inv = container_inventory(podman_container, named)
    ours = run_playbook(newest_ansible_bin, tmp_path, parity.TWENTY, inv,
                        True, env)
    assert ours.rc == 0, ours.output
    assert ours.stats['module_runs'] == 20, ours.stats
    assert ours.stats['contexts'] == 1, ours.stats


@pytest.mark.parametrize('named', ['community.general.lxc', 'lxc'])
def test_a_host_that_names_community_general_lxc_is_taken(
        newest_ansible_bin, ansible_lxc_container, community_general,
        tmp_path, named):
    """In full, or by the short name ansible-core routes to it."""
    env = dict(PRELOAD, ANSIBLE_COLLECTIONS_PATH=community_general)
    inv = container_inventory(ansible_lxc_container, named)
    ours = run_playbook(newest_ansible_bin, tmp_path, parity.TWENTY, inv,
                        True, env)
    assert ours.rc == 0, ours.output
    assert ours.stats['module_runs'] == 20, ours.stats
    assert ours.stats['contexts'] == 1, ours.stats


FULL_NAMES = """
- hosts: here
  gather_facts: false
  connection: local
  tasks:
    - name: taken
      command: echo taken
- hosts: here
  gather_facts: false
  connection: ansible.builtin.local
  tasks:
    - name: named in full
      command: echo kept
"""
HERE = '[targets]\nhere ansible_python_interpreter="{{ ansible_playbook_python }}"\n'


def test_full_names_and_a_users_own_plugin_stay_vanilla(newest_ansible_bin,
                                                        tmp_path):
    ours = run_playbook(newest_ansible_bin, tmp_path, FULL_NAMES, HERE, True,
                        PRELOAD)
    assert ours.rc == 0, ours.output
    assert ours.stats['module_runs'] == 1, ours.stats
    listed = dict(PRELOAD, PLASMID_ACCEL_CONNECTIONS='local,'
                  'ansible.builtin.local')
    both = run_playbook(newest_ansible_bin, tmp_path, FULL_NAMES, HERE, True,
                        listed)
    assert both.rc == 0, both.output
    assert both.stats['module_runs'] == 2, both.stats
    # A connection_plugins/local.py of the user's own takes "local".
    mine = tmp_path / 'connection_plugins'
    mine.mkdir()
    python = os.path.join(newest_ansible_bin, 'python')
    vanilla_file = subprocess.run(
        [python, '-c', 'import ansible.plugins.connection.local as m; '
         'print(m.__file__)'], check=True, capture_output=True,
        text=True).stdout.strip()
    shutil.copy(vanilla_file, mine / 'local.py')
    mark = tmp_path / 'mark'
    with open(mine / 'local.py', 'a') as plugin:
        plugin.write(
            '\n_exec = Connection.exec_command\n\n\n'
            'def _marked(self, *args, **kwargs):\n'
            '    with open(%r, "a") as mark:\n'
            '        mark.write("mine\\n")\n'
            '    return _exec(self, *args, **kwargs)\n\n\n'
            'Connection.exec_command = _marked\n' % str(mark))
    env = dict(PRELOAD, ANSIBLE_CONNECTION_PLUGINS=str(mine))
    users = run_playbook(newest_ansible_bin, tmp_path, FULL_NAMES, HERE, True,
                         env, stats_timeout=1)
    assert users.rc == 0, users.output
    assert users.stats.get('module_runs', 0) == 0, users.stats
    assert 'mine' in mark.read_text()


def test_a_name_it_cannot_take_is_a_warning_naming_those_it_can(
        newest_ansible_bin, tmp_path):
    env = dict(PRELOAD, PLASMID_ACCEL_CONNECTIONS='local,paramiko_ssh')
    run = run_playbook(newest_ansible_bin, tmp_path, LOCALHOST, '[targets]\n',
                       True, env, stats_timeout=1)
    assert run.rc == 0, run.output
    assert _refused("['local', 'paramiko_ssh']", run.output), run.output
    assert 'containers.podman.podman' in run.output, run.output
    assert run.stats.get('module_runs', 0) == 0, run.stats
