# The plasmid accelerator's optional host_pinned strategy; the behaviour
# lives in plasmid.ansible.strategy.
from __future__ import annotations

DOCUMENTATION = r"""
name: host_pinned
short_description: ansible.builtin.host_pinned, with each task on a thread instead of a fork
description:
  - Keeps a worker slot for each host until it has run all its tasks, exactly like
    C(ansible.builtin.host_pinned), but runs each task on a thread of
    ansible-playbook instead of forking a worker process per task and host, and
    loads the C(plasmid.accel.ssh) connection plugin there once.
  - Set the environment variable PLASMID_ANSIBLE_WORKERS=fork to keep forked
    workers (the connection plugin still loaded before they fork). An ansible-core
    whose task executor plasmid does not know gets forked workers and a warning.
  - Optional; strategies from outside ansible.builtin are deprecated since
    ansible-core 2.19, which warns about them.
author: plasmid developers
version_added: "0.1.0"
"""

from plasmid.ansible.strategy import \
    HostPinnedStrategyModule as StrategyModule  # noqa: E402,F401
