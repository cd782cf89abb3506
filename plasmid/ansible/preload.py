"""Loading the connection plugin in ansible-playbook before its workers
fork: ``preload_connection`` (the optional strategy calls it) and the
optional ``plasmid.accel.preload`` callback, which calls it without the
strategy.

ansible-playbook preloads its builtin connection plugins, never a
collection's, so with forked workers each task's worker imports
``plasmid.accel.ssh`` (or ``.local``, ``.podman``, ``.docker``,
``.kubectl``, ``.lxc``) afresh.
A callback is made in ansible-playbook itself before the first worker
forks: loading the plugins there leaves them, and their options, in every
worker's copy of the process.

Both also take ansible-core's connections named in the callback's
``connections`` setting (``takeover``); the strategy reads that setting
through the callback's option definitions, so it needs no settings of its
own.
"""
from __future__ import annotations

from typing import Any

from ansible import constants
from ansible.plugins.callback import CallbackBase
from ansible.plugins.loader import callback_loader, connection_loader

from plasmid.ansible import listing_cache, takeover

CONNECTIONS = ('plasmid.accel.ssh', 'plasmid.accel.local',
               'plasmid.accel.podman', 'plasmid.accel.docker',
               'plasmid.accel.kubectl', 'plasmid.accel.lxc')


def preload_connection() -> None:
    """Import the connection plugins, register their options and import
    the modules their commands need, here (class_only: the modules and
    their options, no connection object)."""
    for name in CONNECTIONS:
        connection_loader.get(name, class_only=True)
    from plasmid.ansible import connection
    connection.import_runtime()


def configured_connections() -> list[str]:
    """The callback's ``connections`` setting, read without the callback
    being enabled (the strategy's case): loading its class registers its
    option definitions."""
    loaded = callback_loader.get(CallbackModule.CALLBACK_NAME,
                                 class_only=True)
    return constants.config.get_config_value(
        'connections', plugin_type='callback', plugin_name=loaded._load_name)


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = 'aggregate'
    CALLBACK_NAME = 'plasmid.accel.preload'
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        preload_connection()
        # ansible-playbook lists every connection plugin directory per
        # task and host (get_vars); workers inherit what is kept.
        listing_cache.install()

    def set_options(self, *args: Any, **kwargs: Any) -> None:
        # ansible-playbook sets a callback's options once it is made.
        super().set_options(*args, **kwargs)
        takeover.install(self.get_option('connections'))
