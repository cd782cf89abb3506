"""A collection plugin's options, handed to ansible-core's config manager
cheaply when the plugin module is imported.

Why: ansible-playbook preloads its builtin connection plugins before it
forks workers, never a collection's.  So with forked workers (the default
strategies) every task's worker imports ``plasmid.accel.ssh`` afresh and
ansible-core parses its DOCUMENTATION with its own YAML loader, which tags
every scalar with its origin: ~11 ms of a cold worker's CPU per task, even
for tasks that never use the connection (``set_fact``, ``include_tasks``).
Even PyYAML's C loader costs ~6 ms there.  So the options also live as a
Python literal, generated from DOCUMENTATION (``python -m
plasmid.ansible.plugin_options``, which rewrites ``ssh_options.py``,
``local_options.py``, ``podman_options.py``, ``docker_options.py``,
``kubectl_options.py`` and ``lxc_options.py``), and
ansible-core skips its own parse for a plugin whose options it already
holds.

The values are the same (a test compares the literal with ansible-core's
own parse of DOCUMENTATION on every supported release, so an edit of one
without the other fails it); only the origin and trust tags are missing,
which ansible-core uses for templated defaults (ours have none) and error
messages.  When ansible-core's config manager lacks the two methods used
here, nothing is registered and ansible-core parses the documentation
itself, as before.

Private ansible-core interface touched (kept here, tested by
tests/ansible/test_plugin_options.py): ``ansible.constants.config``'s
``has_configuration_definition`` and
``initialize_plugin_configuration_definitions``, and the name ansible-core
keeps a collection plugin's options under: the plugin module's Python name
(``ansible_collections.plasmid.accel.plugins.connection.ssh``), not its
FQCN, which a delegated task's result looks the options up by (they are
registered under both).
"""
from __future__ import annotations

import marshal
import os
import sys
from typing import Any

COLLECTION_PLUGINS = os.path.join(
    os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(
        __file__)))),
    'ansible_collections', 'plasmid', 'accel', 'plugins')
PLUGIN_DIR = os.path.join(COLLECTION_PLUGINS, 'connection')
# Documentation shared by several plugins (extends_documentation_fragment).
FRAGMENT_DIR = os.path.join(COLLECTION_PLUGINS, 'doc_fragments')
FRAGMENT_PREFIX = 'plasmid.accel.'
# Our connection plugins; each one's options are generated into
# NAME_options.py beside this file.
PLUGINS = ('ssh', 'local', 'podman', 'docker', 'kubectl', 'lxc')
GENERATED = {name: os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                name + '_options.py') for name in PLUGINS}


def plugin_file(name: str) -> str:
    """The file of the connection plugin *name* (ssh, local)."""
    return os.path.join(PLUGIN_DIR, name + '.py')

def register(plugin_type: str, name: str, options: dict[str, Any]) -> bool:
    """Give ansible-core the *options* of the plugin whose module is named
    *name* unless it has them already; True if registered here."""
    from ansible import constants

    manager = getattr(constants, 'config', None)
    has = getattr(manager, 'has_configuration_definition', None)
    initialize = getattr(manager, 'initialize_plugin_configuration_definitions',
                         None)
    if has is None or initialize is None or has(plugin_type, name):
        return False
    # ansible-core may add to what it is given: hand it a copy.  The
    # options are plain data, which marshal copies in C: copy.deepcopy
    # took ~1 ms of a cold worker's CPU, a fifth of the plugin's load.
    initialize(plugin_type, name, marshal.loads(marshal.dumps(options)))
    # Also under the name a play gives (ansible_connection: plasmid.accel.
    # ssh), which is where a delegated task's result looks for the
    # connection's ansible_host, _port and _user: without them, its line
    # read "[web -> db]" where vanilla's ssh reads "[web -> db(10.0.0.5)]".
    fqcn = fqcn_of(name)
    if fqcn is not None and not has(plugin_type, fqcn):
        initialize(plugin_type, fqcn, marshal.loads(marshal.dumps(options)))
    return True


def fqcn_of(module_name: str) -> str | None:
    """``plasmid.accel.ssh`` for the plugin module
    ``ansible_collections.plasmid.accel.plugins.connection.ssh``."""
    parts = module_name.split('.')
    if len(parts) != 6 or parts[0] != 'ansible_collections' or \
            parts[3] != 'plugins':
        return None
    return '.'.join(parts[1:3] + parts[5:])


# ------------------------------------------------------------ generating

def documentation_of(path: str) -> str:
    """The DOCUMENTATION string of a plugin or doc fragment file (where it
    is a class attribute), read without importing it, as ansible-doc
    reads it."""
    import ast

    with open(path) as source:
        tree = ast.parse(source.read(), path)
    for node in ast.walk(tree):  # breadth first: module level first
        if isinstance(node, ast.Assign) and any(
                getattr(t, 'id', None) == 'DOCUMENTATION'
                for t in node.targets):
            return node.value.value
    raise ValueError('%s has no DOCUMENTATION' % path)


def options_of(documentation: str) -> dict[str, Any]:
    """The options DOCUMENTATION declares, with those of the fragments it
    extends merged in as ansible-core merges them: an option the plugin
    documents itself keeps its own fields over the fragment's."""
    import yaml

    doc = yaml.safe_load(documentation)
    options = doc.get('options') if isinstance(doc, dict) else None
    if not isinstance(options, dict):
        raise ValueError('DOCUMENTATION has no options mapping')
    for fragment in _fragment_names(doc):
        for name, spec in options_of(_fragment_documentation(fragment)).items():
            options[name] = dict(spec, **options.get(name, {}))
    return options


def _fragment_names(doc: dict[str, Any]) -> list[str]:
    names = doc.get('extends_documentation_fragment') or []
    if isinstance(names, str):
        names = names.split(',')
    return [name.strip() for name in names]


def _fragment_documentation(name: str) -> str:
    """The DOCUMENTATION of this collection's doc fragment *name*."""
    if not name.startswith(FRAGMENT_PREFIX):
        raise ValueError('doc fragment %r is not one of %s*'
                         % (name, FRAGMENT_PREFIX))
    short = name[len(FRAGMENT_PREFIX):]
    return documentation_of(os.path.join(FRAGMENT_DIR, short + '.py'))


def render(name: str, options: dict[str, Any]) -> str:
    import pprint

    return (
        '# Generated from the DOCUMENTATION of\n'
        '# ansible_collections/plasmid/accel/plugins/connection/%s.py by\n'
        '# `python -m plasmid.ansible.plugin_options`: edit that, then run\n'
        '# this.  Why a copy: see plasmid/ansible/plugin_options.py.\n'
        % name
        + 'OPTIONS = ' + pprint.pformat(options, width=78, sort_dicts=True)
        + '\n')


def main() -> int:
    for name, generated in GENERATED.items():
        text = render(name, options_of(documentation_of(plugin_file(name))))
        with open(generated, 'w') as out:
            out.write(text)
        print('wrote %s' % generated)
    return 0


if __name__ == '__main__':
    sys.exit(main())
