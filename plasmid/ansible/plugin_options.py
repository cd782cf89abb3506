"""A collection plugin's options, handed to ansible-core's config manager
cheaply when the plugin module is imported.

Why: ansible-playbook preloads its builtin connection plugins before it
forks workers, never a collection's.  So with forked workers (the default
strategies) every task's worker imports ``plasmid.accel.ssh`` afresh and
ansible-core parses its DOCUMENTATION with its own YAML loader, which tags
every scalar with its origin: ~11 ms of a cold worker's CPU per task, even
for tasks that never use the connection (``set_fact``, ``include_tasks``).
Parsed with PyYAML's C loader instead it costs ~1 ms, and ansible-core
skips its own parse for a plugin whose options it already holds.

The values are the same (a test compares them with ansible-core's own
parse on every supported release); only the origin and trust tags are
missing, which ansible-core uses for templated defaults (ours have none)
and error messages.  Without the C loader, or when ansible-core's config
manager lacks the two methods used here, nothing is registered and
ansible-core parses the documentation itself, as before.

Private ansible-core interface touched (kept here, tested by
tests/ansible/test_plugin_options.py): ``ansible.constants.config``'s
``has_configuration_definition`` and
``initialize_plugin_configuration_definitions``, and the name ansible-core
keeps a collection plugin's options under: the plugin module's Python name
(``ansible_collections.plasmid.accel.plugins.connection.ssh``), not its
FQCN.
"""
from __future__ import annotations

from typing import Any, Optional

import yaml


def parse_options(documentation: str) -> Optional[dict[str, Any]]:
    """The ``options`` of a plugin's DOCUMENTATION, or None if PyYAML has
    no C loader (its pure-Python one is slower than ansible-core's)."""
    loader = getattr(yaml, 'CSafeLoader', None)
    if loader is None:
        return None
    doc = yaml.load(documentation, Loader=loader)
    options = doc.get('options') if isinstance(doc, dict) else None
    return options if isinstance(options, dict) else None


def register(plugin_type: str, name: str, documentation: str) -> bool:
    """Give ansible-core the options of the plugin whose module is named
    *name* unless it has them already; True if registered here."""
    from ansible import constants

    manager = getattr(constants, 'config', None)
    has = getattr(manager, 'has_configuration_definition', None)
    initialize = getattr(manager, 'initialize_plugin_configuration_definitions',
                         None)
    if has is None or initialize is None or has(plugin_type, name):
        return False
    options = parse_options(documentation)
    if options is None:
        return False
    initialize(plugin_type, name, options)
    return True
