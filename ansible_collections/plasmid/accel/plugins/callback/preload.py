# The accelerator's optional preload callback.  ansible-core reads the
# DOCUMENTATION below from this file's text; the behaviour lives in
# plasmid.ansible.preload.
from __future__ import annotations

DOCUMENTATION = r"""
name: preload
type: aggregate
short_description: load the plasmid.accel.ssh connection plugin before workers fork
description:
  - ansible-playbook loads its builtin connection plugins before it forks a worker per task,
    never a collection's. Enabled, this callback loads C(plasmid.accel.ssh) in
    ansible-playbook once, so that no worker imports it and reads its options again
    (a few milliseconds of controller CPU per task and host, which shows on tasks that
    do not touch the host, such as C(set_fact) and C(include_tasks)).
  - It shows nothing and changes no task. Not needed with the C(plasmid.accel.linear)
    strategy, which loads the plugin itself.
requirements:
  - enable it in callbacks_enabled (ANSIBLE_CALLBACKS_ENABLED)
author: plasmid developers
version_added: "0.1.0"
"""

from plasmid.ansible.preload import CallbackModule  # noqa: E402,F401
