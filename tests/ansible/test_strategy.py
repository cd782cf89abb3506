"""plasmid/ansible/strategy.py in each release's own venv: the three
optional strategies are found under their collection names, each its
builtin namesake with threaded tasks, and an ansible-core whose task
executor we do not know gets forked workers and a warning naming the
strategy.  Their playbooks against vanilla: tests/ansible/test_playbooks.py."""
from __future__ import annotations

import json
import os
import subprocess

import pytest

from runner import inventory, run_playbook, run_probe

LOADED = """
import importlib, json
from ansible.plugins.loader import init_plugin_loader, strategy_loader
from plasmid.ansible.strategy import ThreadedTasks
init_plugin_loader()
found = {}
for name in ('linear', 'free', 'host_pinned'):
    ours = strategy_loader.get('plasmid.accel.' + name, class_only=True)
    builtin = importlib.import_module(
        'ansible.plugins.strategy.' + name).StrategyModule
    found[name] = [issubclass(ours, ThreadedTasks), issubclass(ours, builtin),
                   ours.__mro__.index(ThreadedTasks) < ours.__mro__.index(builtin)]
print(json.dumps(found))
"""

UNKNOWN_EXECUTOR = """
from plasmid.ansible import strategy, threadworker
class Changed:
    def __init__(self, host, task, something_new):
        pass
threadworker.TaskExecutor = Changed
threadworker.executor_shape.cache_clear()
print(strategy.use_threads('plasmid.accel.free'))
"""


def test_each_strategy_is_its_builtin_with_threaded_tasks(ansible_bin):
    found = json.loads(run_probe(ansible_bin, LOADED))
    assert found == {name: [True, True, True]
                     for name in ('linear', 'free', 'host_pinned')}, found


def test_an_unknown_task_executor_gets_forked_workers_and_a_warning(
        ansible_bin):
    probe = subprocess.run(
        [os.path.join(ansible_bin, 'python'), '-c', UNKNOWN_EXECUTOR],
        cwd='/', check=True, capture_output=True, text=True)
    assert probe.stdout.split() == ['False'], probe
    warning = ' '.join(probe.stderr.split())
    assert 'plasmid.accel.free: this ansible-core runs tasks in a way ' \
        'plasmid does not know; using forked workers' in warning, probe


def test_each_plugin_documents_itself(ansible_bin):
    """ansible-doc reads each plugin's DOCUMENTATION from its file's text:
    a plugin whose text does not parse shows an error there instead."""
    for kind, name in (('strategy', 'linear'), ('strategy', 'free'),
                       ('strategy', 'host_pinned'),
                       ('connection', 'ssh'), ('callback', 'preload')):
        shown = subprocess.run(
            [os.path.join(ansible_bin, 'ansible-doc'), '-t', kind,
             'plasmid.accel.' + name], cwd='/', capture_output=True,
            text=True, env=dict(os.environ, ANSIBLE_NOCOLOR='1'))
        assert shown.returncode == 0, shown
        assert shown.stdout.startswith(
            '> %s plasmid.accel.%s ' % (kind.upper(), name)), shown.stdout
        assert 'ERROR' not in shown.stderr, shown.stderr


BANNERS = """
- hosts: targets
  strategy: %s
  gather_facts: false
  tasks:
    - name: first
      command: sleep {{ 2 if inventory_hostname == 't1' else 0 }}
    - name: second
      command: echo two
"""


def _shown(output: str) -> list:
    """The banners the default callback printed, each with the results
    under it (in any order: hosts of one task finish in any order)."""
    shown: list = []
    for line in output.splitlines():
        if line.startswith(('TASK [', 'PLAY [')):
            shown.append((line.split(' *')[0], []))
        elif line.startswith('changed: ') and shown:
            shown[-1][1].append(line)
    return [(banner, sorted(results)) for banner, results in shown]


@pytest.mark.parametrize('name', ['linear', 'free', 'host_pinned'])
def test_the_default_callback_shows_results_as_under_the_builtin(
        ansible_bin, ansible_account, sshd, tmp_path, name):
    """The default callback asks the play's strategy by name: under free
    and host_pinned each result that follows another task's gets its
    task's banner.  Ours, named plasmid.accel.free, got the banners as
    tasks started: t2's second result showed under t1's first task."""
    inv = inventory(sshd, ansible_account, hosts=('t1', 't2'))
    vanilla = run_playbook(ansible_bin, tmp_path, BANNERS % name, inv, False)
    ours = run_playbook(ansible_bin, tmp_path,
                        BANNERS % ('plasmid.accel.' + name), inv, True)
    assert vanilla.rc == ours.rc == 0, ours.output
    assert _shown(ours.output) == _shown(vanilla.output), ours.output
    if name != 'linear':  # t2 runs ahead while t1 sleeps
        assert _shown(vanilla.output) == [
            ('PLAY [targets]', []), ('TASK [first]', ['changed: [t2]']),
            ('TASK [second]', ['changed: [t2]']),
            ('TASK [first]', ['changed: [t1]']),
            ('TASK [second]', ['changed: [t1]'])], vanilla.output
