"""The private ansible-core API that plasmid/ansible/threadworker.py relies
on, checked in each release's own venv: a release that moves it fails here
(and the strategy falls back to forked workers, tested by its warning)."""
from __future__ import annotations

import json

from runner import run_probe

PROBE = """
import json, sys
from ansible.plugins import strategy as strategy_base
from ansible.plugins.loader import PluginLoader
from plasmid.ansible import threadworker
original = PluginLoader._load_module_source
threadworker.serialize_plugin_loading()
once = PluginLoader._load_module_source
threadworker.serialize_plugin_loading()
print(json.dumps({
    'shape': threadworker.executor_shape(),
    'supported': threadworker.supported(),
    'worker_name_in_strategy': hasattr(strategy_base, 'WorkerProcess'),
    'wrapped': once is not original,
    'wrapped_once': PluginLoader._load_module_source is once,
}))
"""

FOREIGN_SHAPE = """
import inspect
from ansible.executor import task_executor
from plasmid.ansible import threadworker
class Changed:
    def __init__(self, host, task, something_new):
        pass
threadworker.TaskExecutor = Changed
print(threadworker.executor_shape(), threadworker.supported())
"""


def test_each_release_has_a_known_task_executor_shape(ansible_bin):
    found = json.loads(run_probe(ansible_bin, PROBE))
    assert found['shape'] in ('job-vars-stdin', 'raw-result',
                              'task-context'), found
    assert found['supported'], found
    # linear's _queue_task builds its worker by this module-global name.
    assert found['worker_name_in_strategy'], found
    assert found['wrapped'] and found['wrapped_once'], found


# While the strategy queues a threaded task, WorkerProcess.__init__ finds
# the in-process queue under the name it looks up; afterwards the name is
# ansible-core's again.
WORKER_QUEUE = """
import json
from ansible.executor.process import worker
from plasmid.ansible import strategy, threadworker
original = worker.WorkerQueue
with strategy._workers_as_threads():
    made = worker.WorkerQueue(ctx=None)
    made.put('answer')
print(json.dumps({
    'looked_up_by_init': 'WorkerQueue' in
        worker.WorkerProcess.__init__.__code__.co_names,
    'in_process': isinstance(made, threadworker.InProcessQueue),
    'carries': made.get(timeout=1) == 'answer',
    'restored': worker.WorkerQueue is original,
}))
"""


def test_threaded_workers_get_an_in_process_queue(ansible_bin):
    found = json.loads(run_probe(ansible_bin, WORKER_QUEUE))
    assert found == {'looked_up_by_init': True, 'in_process': True,
                     'carries': True, 'restored': True}, found


def test_an_unknown_shape_is_not_supported(ansible_bin):
    assert run_probe(ansible_bin, FOREIGN_SHAPE).split() == ['None', 'False']


# A worker forked from a threaded run gets the locks the strategy forks
# under as nobody holds them, though another thread held them at the fork.
FORKED_LOCKS = """
import os, threading
from plasmid.ansible import client, threadworker
held, done = threading.Event(), threading.Event()
def hold():
    with threadworker.plugin_load_lock(), client.start_lock():
        held.set()
        done.wait()
threading.Thread(target=hold).start()
held.wait()
pid = os.fork()
if pid == 0:
    free = threadworker.plugin_load_lock().acquire(timeout=2) and \\
        client.start_lock().acquire(timeout=2)
    os._exit(0 if free else 1)
_, status = os.waitpid(pid, 0)
done.set()
print(os.WEXITSTATUS(status))
"""


def test_a_forked_worker_starts_with_free_locks(ansible_bin):
    assert run_probe(ansible_bin, FORKED_LOCKS).strip() == '0'
