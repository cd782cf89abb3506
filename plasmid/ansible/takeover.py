"""ansible-core's connections taken by the accelerator's, where a play or
an inventory names them (``connection: local``, the implicit
``localhost``, ``ansible_connection=ssh``).

ansible-core gives its implicit ``localhost`` the ``local`` connection
whatever ``transport`` says, and a host or play that names ``ssh`` keeps
it: without this, such tasks start a fresh interpreter each.  With the
``plasmid.accel.preload`` callback or the optional strategy, the names in
their ``connections`` setting load ours instead (``TAKEABLE``).

The hook is the connection loader's ``get_with_context``, the one call
through which ansible-core's TaskExecutor loads a task's connection
(ansible-core has no supported way to redirect a builtin plugin): the
instance in ``ansible.plugins.loader`` gets a wrapper, which forked
workers inherit.  Only this module touches it; tests/ansible/test_takeover.py
fails when a release moves it.

A name ansible-core routes elsewhere is taken as the name it routes to:
``docker``, ``podman``, ``kubectl`` and ``lxc`` (community.docker.docker,
containers.podman.podman, kubernetes.core.kubectl, community.general.lxc),
``smart`` (ssh).

What stays vanilla's on purpose:

- a short name (``ssh``, ``local``) that resolves to a plugin of the
  user's own (a ``connection_plugins/local.py``), not to ansible-core's;
- the full names ``ansible.builtin.ssh`` and ``ansible.builtin.local``
  unless listed too: the way to keep one host or play on vanilla;
- what our plugins load as their own fallback (``load_vanilla``);
- a plugin's class (``class_only``), which is not a task's connection:
  ansible-core's network connections ask for ssh's for a helper of its.
"""
from __future__ import annotations

from typing import Any, Iterable

from ansible.errors import AnsibleError
from ansible.plugins.loader import connection_loader

# name a play or inventory gives -> the plugin that takes it
TAKEABLE = {
    'ssh': 'plasmid.accel.ssh',
    'ansible.builtin.ssh': 'plasmid.accel.ssh',
    'local': 'plasmid.accel.local',
    'ansible.builtin.local': 'plasmid.accel.local',
    'containers.podman.podman': 'plasmid.accel.podman',
    'community.docker.docker': 'plasmid.accel.docker',
    'kubernetes.core.kubectl': 'plasmid.accel.kubectl',
    'community.general.lxc': 'plasmid.accel.lxc',
}
_LEGACY = 'ansible.legacy.'

_taken: dict[str, str] = {}  # what install() was given, as TAKEABLE


def install(names: Iterable[str]) -> None:
    """Take the connections *names* (keys of TAKEABLE) from now on, in
    this process and the workers it forks; an empty list takes none."""
    names = list(names or ())
    unknown = sorted(set(names) - set(TAKEABLE))
    if unknown:
        raise AnsibleError(
            'plasmid.accel: cannot take the connection(s) %s; the names it '
            'takes are %s' % (', '.join(unknown), ', '.join(TAKEABLE)))
    _taken.clear()
    _taken.update((name, TAKEABLE[name]) for name in names)
    if 'get_with_context' not in vars(connection_loader):
        connection_loader.get_with_context = _get_with_context


def _load(name: str, *args: Any, **kwargs: Any) -> Any:
    """The loader's own get_with_context, past our wrapper."""
    return type(connection_loader).get_with_context(
        connection_loader, name, *args, **kwargs)


def load_vanilla(name: str, *args: Any, **kwargs: Any) -> Any:
    """The plugin *name* itself, never ours in its place (our plugins'
    fallback loads the plugin they stand for through this)."""
    return _load(name, *args, **kwargs).object


def ours_for(name: str, collection_list: Any = None) -> str | None:
    """The plugin that takes the connection *name*, or None.  A name that
    ansible-core routes to another (``docker`` to community.docker.docker,
    ``smart`` to ssh) goes with the name it routes to."""
    ours = _ours_as_named(name)
    if ours is None:
        for routed in _routes(name, collection_list):
            ours = _ours_as_named(routed)
            if ours is not None:
                break
    return ours


def _ours_as_named(name: str) -> str | None:
    """Ours for *name* as written, not following ansible-core's routing."""
    if name.startswith(_LEGACY):
        name = name[len(_LEGACY):]
    ours = _taken.get(name)
    if ours is None or '.' in name:
        return ours
    # A short name: ours only where it means ansible-core's own plugin.
    return ours if _resolves_to_builtin(name) else None


def _routes(name: str, collection_list: Any) -> list[str]:
    """The names ansible-core's routing leads *name* through, after it
    (empty where it leads nowhere, or to a plugin of the user's own)."""
    try:
        found = connection_loader.find_plugin_with_context(
            name, collection_list=collection_list)
    except AnsibleError:  # a removed plugin: vanilla's load says so
        return []
    return list(found.redirect_list[1:]) if found.resolved else []


def _resolves_to_builtin(short: str) -> bool:
    find = connection_loader.find_plugin_with_context
    given, builtin = find(short), find('ansible.builtin.' + short)
    return given.resolved and \
        given.plugin_resolved_path == builtin.plugin_resolved_path


def _get_with_context(name: str, *args: Any, **kwargs: Any) -> Any:
    # A class asked for is not a task's connection: ansible-core's network
    # base asks for ssh's to call its _create_control_path.
    taking = isinstance(name, str) and not kwargs.get('class_only')
    ours = ours_for(name, kwargs.get('collection_list')) if taking else None
    loaded = _load(ours or name, *args, **kwargs)
    if ours and loaded.object is not None:
        # ansible-core keeps a task's connection across loop items while
        # it matches_name() the connection asked for: let ours match it.
        asked = name if '.' in name else 'ansible.builtin.' + name
        loaded.object.ansible_aliases = \
            list(loaded.object.ansible_aliases or ()) + [asked]
    return loaded
