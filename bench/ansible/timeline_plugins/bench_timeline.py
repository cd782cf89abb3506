# A callback for bench/ansible/run.py --timeline: one line per task start,
# per host's runner start and per host's result, stamped with the
# monotonic clock, into the file $PLASMID_BENCH_TIMELINE.  Benchmark use
# only: bench/ansible/timeline.py reads the file back.
from __future__ import annotations

import os
import time

from ansible.plugins.callback import CallbackBase

DOCUMENTATION = r"""
name: bench_timeline
type: aggregate
short_description: stamps task and host events (benchmark use only)
description:
  - Writes the monotonic time of each task start, runner start and result.
author: plasmid developers
options: {}
"""


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = 'aggregate'
    CALLBACK_NAME = 'bench_timeline'
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._out = open(os.environ['PLASMID_BENCH_TIMELINE'], 'a')

    def _stamp(self, event: str, name: str = '') -> None:
        self._out.write('%.6f %s %s\n' % (time.monotonic(), event, name))
        self._out.flush()

    def v2_playbook_on_task_start(self, task, is_conditional):
        self._stamp('task', task.get_name())

    def v2_runner_on_start(self, host, task):
        self._stamp('start', host.name)

    def v2_runner_on_ok(self, result, **kwargs):
        self._stamp('done', result._host.name)

    def v2_runner_on_failed(self, result, ignore_errors=False):
        self._stamp('done', result._host.name)

    def v2_runner_on_unreachable(self, result):
        self._stamp('done', result._host.name)

    def v2_runner_on_skipped(self, result):
        self._stamp('done', result._host.name)

    def v2_playbook_on_stats(self, stats):
        self._stamp('end')
        self._out.close()
