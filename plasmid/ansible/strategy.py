"""The optional strategies: ansible.builtin's linear, free and host_pinned,
with tasks run on threads of ansible-playbook and the accelerator's
connection plugin loaded in it.  Each orders tasks exactly as its builtin
namesake; ``ThreadedTasks`` changes only where a queued task runs.

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

It takes ansible-core's connections named in the preload callback's
``connections`` setting, as the callback does (``takeover``).

With all tasks in one process, what ansible-core's plugin loader lists
anew on every task's path (the module package, to resolve a module's
name) is worth keeping: ``listing_cache`` keeps it while the directory is
unchanged.

With threads, it also starts the run's broker as soon as the strategy is
made, while ansible-core prepares the first task, instead of on that
task's path.

A task with a ``timeout`` still gets a forked worker: ansible-core times
it with a SIGALRM alarm in the process that runs it, which only a main
thread may set.  The fork waits until no task thread is loading a plugin
or starting the broker (``_forking_safely``).

Strategies outside ansible.builtin are deprecated since ansible-core 2.19
(a warning each run), so this stays an option: the connection plugin
works without it.
"""
from __future__ import annotations

import contextlib
import os
from typing import Iterator

from ansible.executor.process import worker as worker_module
from ansible.plugins import strategy as strategy_base
from ansible.plugins.strategy.free import StrategyModule as FreeStrategy
from ansible.plugins.strategy.host_pinned import \
    StrategyModule as HostPinnedStrategy
from ansible.plugins.strategy.linear import StrategyModule as LinearStrategy
from ansible.utils.display import Display

from plasmid.ansible import client, listing_cache, takeover, threadworker
from plasmid.ansible.preload import configured_connections, preload_connection

WORKERS_ENV = 'PLASMID_ANSIBLE_WORKERS'


def use_threads(name: str) -> bool:
    """Threads unless the user asks for forks or the release is unknown
    (*name*: the strategy's, for the warning)."""
    wanted = os.environ.get(WORKERS_ENV, 'thread')
    if wanted not in ('thread', 'fork'):
        raise ValueError('%s must be "thread" or "fork", not %r'
                         % (WORKERS_ENV, wanted))
    if wanted == 'fork':
        return False
    if not threadworker.supported():
        Display().warning(
            '%s: this ansible-core runs tasks in a way '
            'plasmid does not know; using forked workers' % name)
        return False
    threadworker.serialize_plugin_loading()
    return True


@contextlib.contextmanager
def _workers_as_threads() -> Iterator[None]:
    """The base strategy's _queue_task builds a WorkerProcess by its
    module-global name, and WorkerProcess its queue for prompts: point
    those names at ThreadWorker and InProcessQueue while we queue (on the
    main thread, the only one that makes workers)."""
    saved = strategy_base.WorkerProcess, worker_module.WorkerQueue
    strategy_base.WorkerProcess = threadworker.ThreadWorker
    worker_module.WorkerQueue = threadworker.InProcessQueue
    try:
        yield
    finally:
        strategy_base.WorkerProcess, worker_module.WorkerQueue = saved


@contextlib.contextmanager
def _forking_safely() -> Iterator[None]:
    """Fork a worker while no task thread is half-way through loading a
    plugin or starting the broker: the child would inherit that step
    unfinished (its locks are made afresh in the child)."""
    with threadworker.plugin_load_lock(), client.start_lock():
        yield


class ThreadedTasks:
    """Mixed in before a builtin strategy: its tasks run on threads, the
    connection plugin is loaded once.  Both hooks are the base strategy's
    (``__init__`` and ``_queue_task``), which every builtin shares."""

    plasmid_name = ''  # the plugin's full name, for the fallback warning
    builtin_name = ''  # the builtin it runs as

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        preload_connection()
        takeover.install(configured_connections())
        listing_cache.install()
        self._threaded = use_threads(self.plasmid_name)
        if self._threaded:
            # Not with forked workers: one forked while the starting thread
            # holds the start-up lock would keep it held, and wait for it.
            client.start_broker_early()

    def run(self, iterator, play_context):
        # Some ask the play's strategy by its builtin name: the default
        # callback (free and host_pinned print a task's banner with its
        # first result), ansible-core's debugger (a run_once task's redo
        # under linear).  The play is this run's copy of the playbook's:
        # the next batch's copy has our name again, to be loaded by.
        play = getattr(iterator, '_play', None)
        if play is not None:
            play.strategy = self.builtin_name
        return super().run(iterator, play_context)

    def _queue_task(self, host, task, task_vars, play_context):
        queue = super()._queue_task
        if not self._threaded:
            return queue(host, task, task_vars, play_context)
        if threadworker.needs_own_process(task):
            with _forking_safely():
                return queue(host, task, task_vars, play_context)
        with _workers_as_threads():
            return queue(host, task, task_vars, play_context)


class StrategyModule(ThreadedTasks, LinearStrategy):
    """linear, with threaded workers and the connection plugin loaded."""

    plasmid_name = 'plasmid.accel.linear'
    builtin_name = 'linear'


class FreeStrategyModule(ThreadedTasks, FreeStrategy):
    """free: each host runs its tasks as fast as it can, on threads."""

    plasmid_name = 'plasmid.accel.free'
    builtin_name = 'free'


class HostPinnedStrategyModule(ThreadedTasks, HostPinnedStrategy):
    """host_pinned: free, keeping a worker slot per host until it is done."""

    plasmid_name = 'plasmid.accel.host_pinned'
    builtin_name = 'host_pinned'
