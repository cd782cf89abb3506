"""The accelerated local connection's behaviour (``plasmid.accel.local``).

The ssh plugin's path (``connection``) with an interpreter on the
controller instead of one over ssh: the broker starts it with
``router.local`` and keeps it for the run, so a pipelined module runs
from RAM in a fork of it, a become user's interpreter starts once, and
shell commands run through ``/bin/sh`` in it.  Like vanilla, commands and
modules run in the directory ansible-core gives the plugin (``cwd``, the
playbook's), with the controller's environment, as the user who runs
Ansible.

What ansible-core's local plugin words in its own way stays its own:
commands of a shape we do not recognise, become methods we do not host,
and a become interpreter that will not start (a refused password then
fails exactly as vanilla says it).  Files go through the broker as over
ssh, not by a direct copy: the temp dir they go into may still be on its
way to being made (the broker makes it ahead).
"""
from __future__ import annotations

import getpass
import os
from typing import TYPE_CHECKING, Any, Optional

from ansible.errors import AnsibleConnectionFailure, AnsibleError

from plasmid.ansible import connection

if TYPE_CHECKING:  # client is imported where first used
    from ansible.plugins.connection import ConnectionBase

    from plasmid.ansible.client import BrokerError


class Connection(connection.Connection):
    """local, with one persistent interpreter per account."""

    transport = 'local'
    VANILLA = 'ansible.builtin.local'
    SHOWS_RESULTS = False

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # ansible-core sets this before each command of a local
        # connection (the task's base directory); commands run there.
        self.cwd: Optional[str] = None
        try:
            self.default_user = getpass.getuser()
        except (ImportError, KeyError, OSError):
            self.default_user = ''

    def _connect(self) -> "Connection":
        # As vanilla: the remote user is the one running Ansible.
        self._play_context.remote_user = self.default_user
        return super()._connect()

    def _login_spec(self) -> dict:
        return {'method': 'local',
                'connect_timeout': connection.START_STAGE_FLOOR}

    def _spec(self, become: bool) -> dict:
        spec = super()._spec(become)
        if self.cwd and not _logs_in(spec['become']):
            spec['cwd'] = os.path.abspath(self.cwd)
        return spec

    def _prompt_timeout(self) -> int:
        """How long the become program may take to prompt or succeed:
        the plugin's become_success_timeout, as vanilla's (2.19+)."""
        timeout = int(self.get_option('become_success_timeout') or 0)
        return timeout if timeout >= 1 else 10

    def _terminal(self, in_data: Optional[bytes],
                  sudoable: bool) -> Optional[str]:
        return None  # vanilla's local commands have no terminal

    def _become_failed(self, kind: str) -> Exception:
        # Whatever stopped the become interpreter, vanilla's plugin runs
        # the command and words the failure its own way.
        return connection._RefusedAsVanillaShowsIt()

    def _run_as_given(self, cmd: str, in_data: Optional[bytes],
                      success: Optional[str],
                      sudoable: bool) -> tuple[int, bytes, bytes]:
        """What we do not host runs as vanilla runs it: a subprocess of
        the worker."""
        return self._vanilla_plugin().exec_command(cmd, in_data=in_data,
                                                   sudoable=sudoable)

    def _vanilla_plugin(self) -> ConnectionBase:
        """ansible-core's local plugin, in our directory."""
        vanilla = super()._vanilla_plugin()
        vanilla.cwd = self.cwd
        return vanilla

    def _error_for(self, exc: BrokerError) -> Exception:
        """A local interpreter that did not start (a python_path that is
        missing or no Python): vanilla's plugin runs the module as given
        and the task fails in its words (rc 127, "The module interpreter
        ... was not found"), the host still reachable."""
        if exc.kind in ('connect', 'cannot-run'):
            return connection._NoPythonThere()
        return super()._error_for(exc)

    def _broker_error(self, exc: BrokerError) -> Exception:
        """A local interpreter that did not start or was lost: no host
        was unreachable, but the task cannot run."""
        if exc.kind in ('connect', 'lost'):
            return AnsibleConnectionFailure(
                'plasmid: the local interpreter failed: %s'
                % str(exc).rstrip())
        return AnsibleError('plasmid: %s' % exc)


def _logs_in(become: Optional[dict]) -> bool:
    """Whether *become*'s flags make a login of it (``sudo -i``, ``su -``
    or ``-l``): the command then runs in the user's home, as vanilla's
    does, not in the task's directory."""
    if not become:
        return False
    flags = become.get('flags') or []
    if become['method'] == 'su':
        return any(flag in ('-', '-l', '--login') for flag in flags)
    if become['method'] != 'sudo':
        return False
    # Here, not at the top: a worker that runs no command loads none of it.
    from plasmid.connect import options, sudo
    return any(flag in ('i', '--login') for flag, _ in options.flags(
        flags, sudo.TAKES_VALUE, sudo.LONG_TAKES_VALUE))
