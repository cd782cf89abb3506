"""The accelerated podman connection plugin's behaviour (``plasmid.accel.podman``).

The ssh plugin's path (``connection``) with an interpreter in a running
container instead of one over ssh: the broker starts it with
``router.podman`` (``podman [podman_extra_args] exec -i [--user U]
CONTAINER python``) and keeps it for the run, so a pipelined module runs
from RAM in a fork of it, a become user's interpreter starts once, and
shell commands and files go through it.  ``containers.podman.podman``
starts ``podman exec`` for every command and cannot pipeline, so each
module there is a temp file, a copy and an interpreter of its own.

A container without Python is handed to that plugin (as the ssh plugin
hands a host without Python to ansible-core's), which the
``containers.podman`` collection must then provide.
"""
from __future__ import annotations

import shlex
from typing import TYPE_CHECKING, Optional

from ansible.errors import AnsibleConnectionFailure, AnsibleError

from plasmid.ansible import connection

if TYPE_CHECKING:  # client is imported where first used
    from plasmid.ansible.client import BrokerError


class Connection(connection.Connection):
    """podman exec, with one persistent interpreter per account."""

    # What action plugins see, as with containers.podman's plugin.
    transport = 'containers.podman.podman'
    VANILLA = 'containers.podman.podman'

    def _hostname(self) -> str:
        """The container, as containers.podman's plugin finds it."""
        return self.get_option('remote_addr') or \
            self._play_context.remote_addr

    def _login_spec(self) -> dict:
        return {
            'method': 'podman',
            'container': self._hostname(),
            'username': self.get_option('remote_user') or None,
            'podman_path': self.get_option('podman_executable') or None,
            'podman_args': shlex.split(
                self.get_option('podman_extra_args') or ''),
            'connect_timeout': connection.START_STAGE_FLOOR,
        }

    def _run_as_given(self, cmd: str, in_data: Optional[bytes],
                      success: Optional[str],
                      sudoable: bool) -> tuple[int, bytes, bytes]:
        """containers.podman's plugin executes the command's words with no
        shell around them (``raw: echo $PWD`` prints ``$PWD``): so do we,
        through a shell that is given the words quoted."""
        words = shlex.split(cmd)
        return super()._run_as_given(' '.join(shlex.quote(w) for w in words),
                                     in_data, success, sudoable)

    def _prompt_timeout(self) -> int:
        """How long a become program may take to prompt or succeed:
        ansible-core's connection timeout, 2 s more, as for ssh."""
        return 2 + int(self._play_context.timeout or 10)

    def _terminal(self, in_data: Optional[bytes],
                  sudoable: bool) -> Optional[str]:
        return None  # podman exec without -t, as containers.podman's

    def _broker_error(self, exc: BrokerError) -> Exception:
        """The container's interpreter did not start or was lost: the
        host is unreachable, in podman's words."""
        if exc.kind in ('connect', 'lost'):
            return AnsibleConnectionFailure(
                'plasmid: podman exec into %s failed: %s'
                % (self._hostname(), str(exc).rstrip()))
        return AnsibleError('plasmid: %s' % exc)
