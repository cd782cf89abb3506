"""Run a task on a thread of ansible-playbook instead of a forked worker.

ansible-core forks a ``WorkerProcess`` for every task on every host.  The
fork itself, the copy-on-write faults of a large interpreter and a child
whose plugin caches start cold cost ~20 ms of controller CPU per task
(bench/ansible, the ``floor`` row): more than everything the accelerator
spends.  ``ThreadWorker`` is a WorkerProcess that runs the same
``TaskExecutor`` on a thread of the main process and sends its result
through the same queue, so the strategy cannot tell the difference.

What a fork gave for free and a thread must do itself:

- the worker mutates the task it runs (``post_validate`` templates the
  task and its parent blocks in place for one host): each thread gets a
  copy of the task and its parent chain (not of the siblings);
- ansible-core 2.19+ keeps per-thread state in context variables, some of
  it mutable (``AnsibleAccessContext``'s stack of templating observers):
  a thread sharing the main thread's would push and pop on the same stack
  ("Out-of-order context deactivation", seen on 2.21 with four hosts).
  Each thread starts in an empty context and builds its ambient contexts
  itself, as the TaskExecutor does; the main thread's holds nothing else
  at that point (2.18-2.21 checked);
- a worker that dies is noticed by its exit code: a thread that fails
  sends a failed task result instead, so the strategy never waits for ever;
- a worker was the only one loading plugins in its process: the plugin
  loader puts a plugin's module in sys.modules before running its code,
  so a second thread could take a half-run module (seen on 2.18: "module
  'ansible.plugins.action.command' has no attribute 'ActionModule'").
  ``serialize_plugin_loading`` makes that step one thread at a time.

The TaskExecutor's signature and the result's form changed between
releases; ``SHAPES`` names each one known, and ``supported()`` refuses
any other, so a new release falls back to forked workers (with a warning
from the strategy) instead of running tasks wrongly.  Private
ansible-core API, guarded by tests/ansible/test_threadworker.py.
"""
from __future__ import annotations

import contextvars
import functools
import inspect
import os
import queue
import sys
import threading
import traceback
from typing import Any, Callable, Optional

from ansible.errors import AnsibleConnectionFailure
from ansible.executor.process.worker import WorkerProcess
from ansible.executor.task_executor import TaskExecutor
from ansible.plugins.loader import PluginLoader

# TaskExecutor.__init__'s parameters (after self) -> the shape's name.
SHAPES = {
    ('host', 'task', 'job_vars', 'play_context', 'new_stdin', 'loader',
     'shared_loader_obj', 'final_q', 'variable_manager'): 'job-vars-stdin',
    ('host', 'task', 'job_vars', 'play_context', 'loader',
     'shared_loader_obj', 'final_q', 'variable_manager'): 'raw-result',
    ('host', 'play_context', 'loader', 'shared_loader_obj', 'final_q',
     'variable_manager'): 'task-context',
}


@functools.lru_cache(maxsize=None)
def executor_shape() -> Optional[str]:
    """The shape of this ansible-core's TaskExecutor, or None if unknown
    (read once: every task's thread asks)."""
    names = tuple(inspect.signature(TaskExecutor.__init__).parameters)[1:]
    return SHAPES.get(names)


def supported() -> bool:
    return executor_shape() is not None and \
        hasattr(PluginLoader, '_load_module_source')


class InProcessQueue(queue.Queue):
    """A ThreadWorker's ``worker_queue`` in place of ansible-core's
    ``WorkerQueue``, a multiprocessing queue (a pipe and named semaphores,
    a dozen system calls) made for every task.  It carries the answers to
    a forked worker's prompts; a task on a thread of ansible-playbook
    prompts directly (its display has no final queue), so it stays empty,
    and would carry them as well if one came."""

    def __init__(self, ctx: Any = None) -> None:
        super().__init__()


_PLUGIN_LOAD_LOCK = threading.RLock()


def _fresh_plugin_load_lock() -> None:
    """In a worker forked from a threaded run: the lock as no thread
    holds it (the strategy forks holding it, so that no plugin is half
    loaded in the child)."""
    global _PLUGIN_LOAD_LOCK
    _PLUGIN_LOAD_LOCK = threading.RLock()


os.register_at_fork(after_in_child=_fresh_plugin_load_lock)


def plugin_load_lock() -> threading.RLock:
    return _PLUGIN_LOAD_LOCK


def needs_own_process(task) -> bool:
    """Whether *task* must run in a forked worker, not on a thread: a
    task ``timeout`` is a SIGALRM alarm that ansible-core sets in the
    process running the task, which Python allows on the main thread only
    ("signal only works in main thread").  Not templated yet here: a
    template counts as a timeout."""
    return bool(getattr(task, 'timeout', None))


def serialize_plugin_loading() -> None:
    """Let one thread at a time run PluginLoader._load_module_source (a
    plugin's first import); the wrapper is installed once per process."""
    load = PluginLoader._load_module_source
    if getattr(load, 'plasmid_serialized', False):
        return

    def load_serialized(self, *args: Any, **kwargs: Any) -> Any:
        with _PLUGIN_LOAD_LOCK:
            return load(self, *args, **kwargs)

    load_serialized.plasmid_serialized = True  # type: ignore[attr-defined]
    PluginLoader._load_module_source = load_serialized


class ThreadWorker(WorkerProcess):
    """A WorkerProcess whose task runs on a thread of this process."""

    _thread: Optional[threading.Thread] = None
    _failed_silently = False

    def start(self) -> None:
        # Private copies of what the executor mutates in place.
        self._task = self._task.copy(exclude_tasks=True)
        self._thread = threading.Thread(
            target=contextvars.Context().run, args=(self._run_guarded,),
            daemon=True,
            name='plasmid-task-%s' % self._host.name)
        self._thread.start()

    def _run_guarded(self) -> None:
        run, report = _RUNNERS[executor_shape()]
        try:
            run(self)
        except BaseException as exc:  # the strategy must hear of it
            try:
                report(self, exc)
            except BaseException:
                self._failed_silently = True
                traceback.print_exc()

    # The strategy and the task queue manager ask these of a process.
    def is_alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    @property
    def exitcode(self) -> Optional[int]:
        """Non-zero only for a thread that could not report its failure:
        the strategy then stops waiting ("worker in a dead state")."""
        if self._failed_silently and not self.is_alive():
            return 1
        return None

    @property
    def pid(self) -> Optional[int]:
        return None  # nothing to signal: the thread ends with the process

    def join(self, timeout: Optional[float] = None) -> None:
        if self._thread is not None:
            self._thread.join(timeout)

    def terminate(self) -> None:
        """A thread cannot be killed; it is a daemon and ends with the run."""

    kill = terminate

    def close(self) -> None:
        """Nothing to release: no process, no pipes."""


def _executor(worker: ThreadWorker, *leading: Any) -> TaskExecutor:
    return TaskExecutor(*leading, worker._loader, worker._shared_loader_obj,
                        worker._final_q, worker._variable_manager)


# A result the final queue refuses (one that will not pickle) is replaced by
# a failure that says so, as ansible-core's worker replaces it: the task
# fails instead of the strategy waiting for ever.
_SEND_FAILED = 'Task result omitted due to queue send failure.'


def _send_failure(cause: Exception) -> Exception:
    """The error ansible-core's worker raises for a refused result (2.19+),
    chained to *cause*, whose message it then shows."""
    from ansible.errors import AnsibleError
    try:
        raise AnsibleError(_SEND_FAILED) from cause
    except AnsibleError as wrapper:
        return wrapper


# ansible-core 2.18: TaskExecutor takes the task, its vars and a stdin;
# results go as (host name, task uuid, dict, task fields).
def _run_job_vars_stdin(worker: ThreadWorker) -> None:
    try:
        result = _executor(worker, worker._host, worker._task,
                           worker._task_vars, worker._play_context,
                           sys.stdin).run()
    except AnsibleConnectionFailure:
        result = {'unreachable': True}
    try:
        worker._final_q.send_task_result(
            worker._host.name, worker._task._uuid, result,
            task_fields=worker._task.dump_attrs())
    except Exception as exc:  # 2.18's worker sends the error, no fields
        worker._final_q.send_task_result(
            worker._host.name, worker._task._uuid,
            {'failed': True, 'msg': '%s' % exc,
             'exception': traceback.format_exc()}, {})


def _report_job_vars_stdin(worker: ThreadWorker, exc: BaseException) -> None:
    worker._final_q.send_task_result(
        worker._host.name, worker._task._uuid,
        {'failed': True, 'msg': 'plasmid task thread failed: %s' % exc,
         'exception': traceback.format_exc(), 'stdout': ''},
        task_fields=worker._task.dump_attrs())


# ansible-core 2.19 and 2.20: results go as a _RawTaskResult; the worker
# runs in an ambient TaskContext of the task, which lookups ask for
# (``with_first_found`` fails outside one).
def _run_raw_result(worker: ThreadWorker) -> None:
    from ansible._internal import _task
    from ansible.executor.task_result import _RawTaskResult
    with _task.TaskContext(worker._task):
        result = _executor(worker, worker._host, worker._task,
                           worker._task_vars, worker._play_context).run()
        try:
            worker._final_q.send_task_result(_RawTaskResult(
                host=worker._host, task=worker._task, return_data=result,
                task_fields=worker._task.dump_attrs()))
        except Exception as exc:
            _report_raw_result(worker, _send_failure(exc))


def _report_raw_result(worker: ThreadWorker, exc: BaseException) -> None:
    from ansible._internal._errors import _error_utils
    from ansible.executor.task_result import _RawTaskResult
    worker._final_q.send_task_result(_RawTaskResult(
        host=worker._host, task=worker._task,
        return_data=_error_utils.result_dict_from_exception(exc),
        task_fields={}))


# ansible-core 2.21 and later: the task and its vars come from an ambient
# TaskContext, which the worker holds until its result is sent; the result
# is a UnifiedTaskResult.
def _run_task_context(worker: ThreadWorker) -> None:
    from ansible._internal import _task
    with _task.TaskContext.create(task=worker._task,
                                  task_vars=worker._task_vars,
                                  host_name=worker._host.name):
        worker._task.squash()
        outcome = _executor(worker, worker._host,
                            worker._play_context).run()
        outcome.finalize_registered_values()
        worker._task.ignore_errors = outcome.ignore_errors
        worker._task.ignore_unreachable = outcome.ignore_unreachable
        try:
            worker._final_q.send_task_result(worker._host, worker._task,
                                             outcome)
        except Exception as exc:
            _send_refused_task_context(worker, exc)


def _send_refused_task_context(worker: ThreadWorker, exc: Exception) -> None:
    """As 2.21's worker does: the failure, for a host and a task made
    afresh (the real ones may hold what would not pickle)."""
    from ansible._internal import _task
    from ansible.inventory.host import Host
    from ansible.playbook.task import Task
    task = Task()
    task._uuid = worker._task._uuid
    outcome = _task.UnifiedTaskResult.create_from_action_exception(
        _send_failure(exc))
    outcome.finalize_registered_values()
    worker._final_q.send_task_result(Host(name=worker._host.name), task,
                                     outcome)


def _report_task_context(worker: ThreadWorker, exc: BaseException) -> None:
    from ansible._internal import _task
    outcome = _task.UnifiedTaskResult.create_from_action_exception(exc)
    outcome.finalize_registered_values()
    worker._final_q.send_task_result(worker._host, worker._task, outcome)


_RUNNERS: dict[Optional[str], tuple[Callable, Callable]] = {
    'job-vars-stdin': (_run_job_vars_stdin, _report_job_vars_stdin),
    'raw-result': (_run_raw_result, _report_raw_result),
    'task-context': (_run_task_context, _report_task_context),
}
