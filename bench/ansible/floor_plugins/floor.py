# The benchmark's floor: a connection plugin that answers every command at
# once with what the command module reports for /bin/true, without touching
# any host.  A run with it costs only what ansible-core itself spends per
# task (worker fork, templating, building the module, callbacks), the part no
# connection plugin can remove.  Only for playbooks of `command` tasks.
from __future__ import annotations

import json

from ansible.plugins.connection import ConnectionBase

DOCUMENTATION = r"""
name: floor
short_description: answers every command at once (benchmark reference only)
description:
  - Pretends that each command ran /bin/true and succeeded.
author: plasmid developers
options: {}
"""

ANSWER = json.dumps({'changed': True, 'rc': 0, 'stdout': '', 'stderr': '',
                     'cmd': ['/bin/true'], 'msg': ''}).encode()


class Connection(ConnectionBase):
    transport = 'floor'
    has_pipelining = True

    def _connect(self):
        self._connected = True
        return self

    def exec_command(self, cmd, in_data=None, sudoable=True):
        super().exec_command(cmd, in_data=in_data, sudoable=sudoable)
        return 0, ANSWER, b''

    def put_file(self, in_path, out_path):
        raise NotImplementedError('the floor plugin moves no files')

    def fetch_file(self, in_path, out_path):
        raise NotImplementedError('the floor plugin moves no files')

    def close(self):
        self._connected = False
