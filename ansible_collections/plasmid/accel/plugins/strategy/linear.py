# The plasmid accelerator's optional strategy; the behaviour lives in
# plasmid.ansible.strategy.
from __future__ import annotations

DOCUMENTATION = r"""
name: linear
short_description: ansible.builtin.linear, with the accelerator loaded before workers fork
description:
  - Runs tasks exactly like C(ansible.builtin.linear).
  - Loads the C(plasmid.accel.ssh) connection plugin in the main process first, so
    that the worker forked for each task finds it loaded instead of importing it and
    reading its documentation again. Less controller CPU and wall time per task.
  - Optional; strategies from outside ansible.builtin are deprecated since
    ansible-core 2.19, which warns about them.
author: plasmid developers
version_added: "0.1.0"
"""

from plasmid.ansible.strategy import StrategyModule  # noqa: E402,F401
