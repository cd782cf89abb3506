# The plasmid accelerator's optional free strategy; the behaviour lives
# in plasmid.ansible.strategy.
from __future__ import annotations

DOCUMENTATION = r"""
name: free
short_description: ansible.builtin.free, with each task on a thread instead of a fork
description:
  - Lets each host run through its tasks as fast as it can, exactly like
    C(ansible.builtin.free), with each task on a thread of ansible-playbook as in
    C(plasmid.accel.linear), whose documentation tells the rest (PLASMID_ANSIBLE_WORKERS,
    the fallback to forked workers, the deprecation warning).
author: plasmid developers
version_added: "0.1.0"
"""

from plasmid.ansible.strategy import \
    FreeStrategyModule as StrategyModule  # noqa: E402,F401
