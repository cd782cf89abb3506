# The plasmid accelerator's local connection plugin.  ansible-core reads
# the DOCUMENTATION below from this file's text to learn the plugin's
# options, so it is written out here; the behaviour lives in
# plasmid.ansible.local_connection.
from __future__ import annotations

DOCUMENTATION = r"""
name: local
short_description: run on the controller, with persistent interpreters and modules run from RAM
description:
  - Runs tasks on the Ansible controller like C(ansible.builtin.local), but keeps one Python
    interpreter per account and interpreter path for the whole run and runs new-style Python
    modules in it from memory, forking it per task.
  - Becoming another user with sudo, su or doas happens once per run, not per task. Other
    become methods, and a become that fails, run their commands through
    C(ansible.builtin.local).
  - Commands and modules run in the directory ansible-core chooses for local connections (the
    playbook's), with the controller's environment, as under C(ansible.builtin.local).
  - The remote user is ignored, as by C(ansible.builtin.local); tasks run as the user who
    runs Ansible.
  - Pipelining is on by default, unlike C(ansible.builtin.local)'s.
author: plasmid developers
version_added: "0.1.0"
extends_documentation_fragment:
  - plasmid.accel.pipelining
options:
  become_success_timeout:
    description:
      - Seconds to wait for the become program's password prompt or its success when it
        starts a become user's interpreter, or when a command runs through
        C(ansible.builtin.local). A value below 1 means the default.
    type: int
    default: 10
    vars:
      - name: ansible_local_become_success_timeout
  become_strip_preamble:
    description:
      - Strip the become program's output preceding the command, for commands that run
        through C(ansible.builtin.local) (ansible-core 2.19 and later).
    type: bool
    default: true
    vars:
      - name: ansible_local_become_strip_preamble
"""

from plasmid.ansible import local_options, plugin_options  # noqa: E402

# Before ansible-core parses DOCUMENTATION itself, which costs every forked
# worker ~10 ms more (see plasmid/ansible/plugin_options.py).
plugin_options.register('connection', __name__, local_options.OPTIONS)

from plasmid.ansible.local_connection import Connection  # noqa: E402,F401
