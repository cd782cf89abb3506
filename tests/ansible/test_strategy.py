"""plasmid/ansible/strategy.py in each release's own venv: the three
optional strategies are found under their collection names, each its
builtin namesake with threaded tasks, and an ansible-core whose task
executor we do not know gets forked workers and a warning naming the
strategy.  Their playbooks against vanilla: tests/ansible/test_playbooks.py."""
from __future__ import annotations

import json
import os
import subprocess

from runner import run_probe

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
