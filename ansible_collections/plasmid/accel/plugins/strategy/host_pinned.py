# The plasmid accelerator's optional host_pinned strategy; the behaviour lives
# in plasmid.ansible.strategy.
from __future__ import annotations

DOCUMENTATION = r"""
name: host_pinned
short_description: ansible.builtin.host_pinned, with each task on a thread instead of a fork
description:
  - Keeps a worker slot for each host until it has run all its tasks, exactly like
    C(ansible.builtin.host_pinned), with each task on a thread of ansible-playbook as in
    C(plasmid.accel.linear), whose documentation tells the rest (PLASMID_ANSIBLE_WORKERS,
    the fallback to forked workers, the deprecation warning).
author: plasmid developers
version_added: "0.1.0"
"""

from plasmid.ansible.strategy import \
    HostPinnedStrategyModule as StrategyModule  # noqa: E402,F401
