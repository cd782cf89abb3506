# A become plugin the accelerator does not know, for
# tests/ansible/test_other_become.py: it becomes the user with
# ``sudo -n`` (no password), under a name of its own, so the accelerator
# must take its command lines as they come.
from __future__ import annotations

import shlex

from ansible.plugins.become import BecomeBase

DOCUMENTATION = r"""
name: via_sudo_n
short_description: become with sudo -n, under another name (plasmid's tests)
description:
  - Runs the command as become_user through C(sudo -n), so that it fails
    rather than asks when a password would be needed.
author: plasmid developers
options:
  become_user:
    description: the user to become
    default: root
    vars:
      - name: ansible_become_user
    keyword:
      - name: become_user
"""


class BecomeModule(BecomeBase):
    name = 'via_sudo_n'

    def build_become_command(self, cmd, shell):
        super().build_become_command(cmd, shell)
        if not cmd:
            return cmd
        user = self.get_option('become_user') or 'root'
        return 'sudo -n -u %s %s' % (shlex.quote(user),
                                     self._build_success_command(cmd, shell))
