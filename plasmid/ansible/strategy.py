"""The optional strategy: ansible.builtin.linear, with tasks run on
threads of ansible-playbook and the accelerator's connection plugin loaded
in it.

Two per-task costs of ansible-core that no connection plugin can remove:

- the worker fork: linear forks a WorkerProcess per task and host; the
  fork, its copy-on-write faults and the child's cold caches cost more
  controller CPU than the task itself.  Here each task runs on a thread
  (plasmid/ansible/threadworker.py) unless PLASMID_ANSIBLE_WORKERS=fork or
  the release's TaskExecutor has a shape we do not know;
- the plugin load: ansible-core preloads its builtin connection plugins
  in the main process, never a collection's, so with forked workers each
  one imported ``plasmid.accel.ssh`` and parsed its documentation afresh.
  Loaded here once, every worker finds it.

With threads, it also starts the run's broker as soon as the strategy is
made, while ansible-core prepares the first task, instead of on that
task's path.

Strategies outside ansible.builtin are deprecated since ansible-core 2.19
(a warning each run), so this stays an option: the connection plugin
works without it.
"""
from __future__ import annotations

import contextlib
import os
from typing import Iterator

from ansible.plugins import strategy as strategy_base
from ansible.plugins.loader import connection_loader
from ansible.plugins.strategy.linear import StrategyModule as LinearStrategy
from ansible.utils.display import Display

from plasmid.ansible import client, threadworker

CONNECTION = 'plasmid.accel.ssh'
WORKERS_ENV = 'PLASMID_ANSIBLE_WORKERS'


def preload_connection() -> None:
    """Import the connection plugin and register its options here."""
    connection_loader.get(CONNECTION, class_only=True)


def use_threads() -> bool:
    """Threads unless the user asks for forks or the release is unknown."""
    wanted = os.environ.get(WORKERS_ENV, 'thread')
    if wanted not in ('thread', 'fork'):
        raise ValueError('%s must be "thread" or "fork", not %r'
                         % (WORKERS_ENV, wanted))
    if wanted == 'fork':
        return False
    if not threadworker.supported():
        Display().warning(
            'plasmid.accel.linear: this ansible-core runs tasks in a way '
            'plasmid does not know; using forked workers')
        return False
    threadworker.serialize_plugin_loading()
    return True


@contextlib.contextmanager
def _workers_as_threads() -> Iterator[None]:
    """linear's _queue_task builds a WorkerProcess by its module-global
    name: point that name at ThreadWorker while our strategy queues."""
    saved = strategy_base.WorkerProcess
    strategy_base.WorkerProcess = threadworker.ThreadWorker
    try:
        yield
    finally:
        strategy_base.WorkerProcess = saved


class StrategyModule(LinearStrategy):
    """linear, with threaded workers and the connection plugin loaded."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        preload_connection()
        self._threaded = use_threads()
        if self._threaded:
            # Not with forked workers: one forked while the starting thread
            # holds the start-up lock would keep it held, and wait for it.
            client.start_broker_early()

    def _queue_task(self, host, task, task_vars, play_context):
        if not self._threaded:
            return super()._queue_task(host, task, task_vars, play_context)
        with _workers_as_threads():
            return super()._queue_task(host, task, task_vars, play_context)
