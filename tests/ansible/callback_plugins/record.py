# A callback for the accelerator's tests: every task result, one JSON
# object per line, into the file named by PLASMID_RECORD.
from __future__ import annotations

import json
import os
import sys

from ansible.plugins.callback import CallbackBase

DOCUMENTATION = r"""
name: record
type: aggregate
short_description: write task results as JSON lines for plasmid's tests
description: Writes each task result to the file named by PLASMID_RECORD.
requirements: [enable in configuration]
"""


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = 'aggregate'
    CALLBACK_NAME = 'record'
    CALLBACK_NEEDS_ENABLED = True

    def _write(self, status, result):
        path = os.environ.get('PLASMID_RECORD')
        if not path:
            return
        item = {'task': result._task.get_name(), 'host': result._host.name,
                'status': status, 'result': result._result}
        with open(path, 'a') as handle:
            handle.write(json.dumps(item, default=str) + '\n')

    def v2_runner_on_ok(self, result, **kwargs):
        self._write('ok', result)

    def v2_runner_on_failed(self, result, ignore_errors=False, **kwargs):
        self._write('failed', result)

    def v2_runner_on_unreachable(self, result, **kwargs):
        self._write('unreachable', result)

    def v2_runner_on_skipped(self, result, **kwargs):
        self._write('skipped', result)

    def v2_playbook_on_stats(self, stats):
        # Which of plasmid's modules the main process loaded (the optional
        # strategy loads the connection plugin there before workers fork).
        path = os.environ.get('PLASMID_RECORD_MAIN')
        if path:
            loaded = sorted(n for n in sys.modules
                            if n.startswith('plasmid.ansible'))
            with open(path, 'w') as handle:
                json.dump({'pid': os.getpid(), 'loaded': loaded}, handle)
