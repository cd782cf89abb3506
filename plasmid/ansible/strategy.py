"""The optional strategy: ansible.builtin.linear, with the accelerator's
connection plugin loaded in the process that forks the workers.

ansible-core loads the builtin connection plugins in its main process
before any worker forks (PlaybookExecutor.run), so a worker finds ``ssh``
ready.  A collection's plugin is not among them: each worker, forked per
task, imports ``plasmid.accel.ssh`` afresh and parses its documentation
to learn its options -- most of the controller CPU the accelerator adds
per task.  Loaded here once, every fork inherits it.

Strategies outside ansible.builtin are deprecated since ansible-core 2.19
(a warning each run), so this stays an option: the connection plugin
works without it.
"""
from __future__ import annotations

from ansible.plugins.loader import connection_loader
from ansible.plugins.strategy.linear import StrategyModule as LinearStrategy

CONNECTION = 'plasmid.accel.ssh'


def preload_connection() -> None:
    """Import the connection plugin and register its options here."""
    connection_loader.get(CONNECTION, class_only=True)


class StrategyModule(LinearStrategy):
    """linear, after loading the connection plugin in this process."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        preload_connection()
