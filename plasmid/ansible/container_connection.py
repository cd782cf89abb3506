"""The accelerated container connection plugins' behaviour:
``plasmid.accel.podman``, ``plasmid.accel.docker``,
``plasmid.accel.kubectl`` and ``plasmid.accel.lxc``.

The ssh plugin's path (``connection``) with an interpreter in a running
container instead of one over ssh: the broker starts it with
``router.podman``, ``router.docker`` (``<client> [extra args] exec -i
[--user U] [exec options] CONTAINER python``) or ``router.kubectl``
(``kubectl [options] exec -i [-n NS] [-c C] POD -- python``) or
``router.lxc`` (``lxc-attach --clear-env --name CONTAINER -- python``) and
keeps it for the run,
so a pipelined module runs from RAM in a fork of it, a become user's
interpreter starts once, and shell commands and files go through it.
The collections' plugins (``containers.podman.podman``,
``community.docker.docker``, ``kubernetes.core.kubectl``) start ``exec``
for every command, and files travel by ``podman cp`` or ``dd`` through
another ``exec``; ``community.general.lxc`` attaches a new process through
the python lxc bindings for every command and file.

Options and variables are those plugins'; a container without Python is
handed to them (as the ssh plugin hands a host without Python to
ansible-core's), so their collection must then be installed.
"""
from __future__ import annotations

import shlex
import shutil
from typing import TYPE_CHECKING, Any, Optional

from ansible.errors import AnsibleConnectionFailure, AnsibleError
from ansible.module_utils.parsing.convert_bool import boolean

from plasmid.ansible import connection

if TYPE_CHECKING:  # client is imported where first used
    from plasmid.ansible.client import BrokerError


class _ContainerConnection(connection.Connection):
    """What the container plugins share: the container is the host."""

    # The router method, the client's name in messages.
    METHOD = ''
    LOGIN_SHELL_RUNS_COMMANDS = False
    SHOWS_RESULTS = False  # as their plugins (podman's, docker's ...)

    def _hostname(self) -> str:
        """The container, from the plugin's remote_addr."""
        return self.get_option('remote_addr') or \
            self._play_context.remote_addr

    def _prompt_timeout(self) -> int:
        """How long a become program may take to prompt or succeed:
        ansible-core's connection timeout, 2 s more, as for ssh."""
        return 2 + int(self._play_context.timeout or 10)

    def _terminal(self, in_data: Optional[bytes],
                  sudoable: bool) -> Optional[str]:
        return None  # exec without -t, as the collections' plugins

    def _cannot_run(self, which: str, message: str) -> Exception:
        """The client (podman, docker ...) would not start: as any failed
        start of the container's interpreter."""
        from plasmid.ansible.client import BrokerError
        return self._broker_error(BrokerError('connect', message))

    def _broker_error(self, exc: BrokerError) -> Exception:
        """The container's interpreter did not start or was lost: the
        host is unreachable, in the client's words."""
        if exc.kind in ('connect', 'lost'):
            return AnsibleConnectionFailure(
                'plasmid: %s exec into %s failed: %s'
                % (self.METHOD, self._hostname(), str(exc).rstrip()))
        return AnsibleError('plasmid: %s' % exc)


class PodmanConnection(_ContainerConnection):
    """podman exec, with one persistent interpreter per account."""

    # What action plugins see, as with containers.podman's plugin.
    transport = 'containers.podman.podman'
    VANILLA = 'containers.podman.podman'
    METHOD = 'podman'

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


class DockerConnection(_ContainerConnection):
    """docker exec, with one persistent interpreter per account."""

    # What action plugins see, as with community.docker's plugin.
    transport = 'community.docker.docker'
    VANILLA = 'community.docker.docker'
    METHOD = 'docker'

    def _login_spec(self) -> dict:
        user = self.get_option('remote_user') or \
            self._play_context.remote_user or None
        return {
            'method': 'docker',
            'container': self._hostname(),
            'username': user,
            # As community.docker's plugin: words between single spaces.
            'docker_args': (self.get_option('docker_extra_args') or '')
            .split(),
            'exec_args': self._exec_options(),
            'connect_timeout': connection.START_STAGE_FLOOR,
        }

    def _exec_options(self) -> list[str]:
        """``docker exec``'s options from extra_env, working_dir and
        privileged, as community.docker's plugin gives them; the
        interpreter and everything it runs inherit them."""
        args: list[str] = []
        for key, value in (self.get_option('extra_env') or {}).items():
            for val, what in ((key, 'Key'), (value, 'Value')):
                if not isinstance(val, str):
                    raise AnsibleConnectionFailure(
                        'Non-string %s found for extra_env option. Ambiguous '
                        'env options must be wrapped in quotes to avoid them '
                        'being interpreted. %s: %r' % (what.lower(), what,
                                                       val))
            args += ['-e', '%s=%s' % (key, value)]
        if self.get_option('working_dir') is not None:
            args += ['-w', self.get_option('working_dir')]
        if self.get_option('privileged'):
            args.append('--privileged')
        return args


class KubectlConnection(_ContainerConnection):
    """kubectl exec into a pod's container, with one persistent
    interpreter per pod, container and account."""

    # What action plugins see, as with kubernetes.core's plugin.
    transport = 'kubernetes.core.kubectl'
    VANILLA = 'kubernetes.core.kubectl'
    METHOD = 'kubectl'
    # kubectl's option for each of ours whose value it takes as given.
    FLAGS = (('kubectl_context', '--context'), ('kubectl_host', '--server'),
             ('kubectl_username', '--username'),
             ('kubectl_password', '--password'),
             ('kubectl_token', '--token'),
             ('client_cert', '--client-certificate'),
             ('client_key', '--client-key'),
             ('ca_cert', '--certificate-authority'))

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # As kubernetes.core's plugin, which fails the task so.
        if not shutil.which('kubectl'):
            raise AnsibleError('kubectl command not found in PATH')

    def _hostname(self) -> str:
        """The pod: its option, else the host's address."""
        return self.get_option('kubectl_pod') or \
            self._play_context.remote_addr

    def _login_spec(self) -> dict:
        kubeconfig = self.get_option('kubectl_kubeconfig')
        return {
            'method': 'kubectl',
            'pod': self._hostname(),
            'container': self.get_option('kubectl_container') or None,
            'namespace': self.get_option('kubectl_namespace') or None,
            'kubectl_args': self._kubectl_args(),
            # Written to a file by the broker for kubectl's start.
            'kubeconfig_data': kubeconfig if isinstance(kubeconfig, dict)
            else None,
            'local_env': self._local_env() or None,
            'connect_timeout': connection.START_STAGE_FLOOR,
        }

    def _broker_error(self, exc: BrokerError) -> Exception:
        """kubernetes.core's plugin never reports a host unreachable: what
        kubectl refuses (a missing pod, an API server out of reach) fails
        the task.  So here, with kubectl's own words in the message."""
        if exc.kind in ('connect', 'lost'):
            return AnsibleError('plasmid: kubectl exec into %s failed: %s'
                                % (self._hostname(), str(exc).rstrip()))
        return super()._broker_error(exc)

    def _local_env(self) -> dict:
        """kubectl_local_env_vars, as strings."""
        env = {}
        for name, value in (self.get_option('kubectl_local_env_vars')
                            or {}).items():
            if not isinstance(name, str) or not name or '=' in name:
                raise AnsibleError(
                    'plasmid: kubectl_local_env_vars: %r is not an '
                    'environment variable name' % (name,))
            env[name] = str(value)
        return env

    def _kubectl_args(self) -> list[str]:
        """kubectl's options before ``exec``, from the plugin's (a
        kubeconfig given as data is the broker's to add)."""
        args: list[str] = []
        kubeconfig = self.get_option('kubectl_kubeconfig')
        if kubeconfig and isinstance(kubeconfig, str):
            args += ['--kubeconfig', kubeconfig]
        for option, flag in self.FLAGS:
            value = self.get_option(option)
            if value:
                args += [flag, str(value)]
        validate = self.get_option('validate_certs')
        # Its type is not declared (as kubernetes.core's): maybe a string.
        if validate not in ('', None) and not boolean(validate, strict=False):
            args.append('--insecure-skip-tls-verify=true')
        return args + (self.get_option('kubectl_extra_args') or '').split()


class LxcConnection(_ContainerConnection):
    """lxc-attach into a running LXC container on this machine, as its
    root (community.general.lxc has no remote user), with one persistent
    interpreter per container."""

    # What action plugins see, as with community.general's plugin.
    transport = 'community.general.lxc'
    VANILLA = 'community.general.lxc'
    METHOD = 'lxc'
    # Whose home ~ means in temp paths (ansible-core asks the plugin when it
    # has no remote_user option): lxc-attach's user, as for the vanilla one.
    default_user = 'root'

    def _login_spec(self) -> dict:
        return {
            'method': 'lxc',
            'container': self._hostname(),
            'connect_timeout': connection.START_STAGE_FLOOR,
        }

    def _broker_error(self, exc: BrokerError) -> Exception:
        """community.general's plugin fails the task for a container that
        is not running (the host is not unreachable): so here, with
        lxc-attach's words."""
        if exc.kind in ('connect', 'lost'):
            return AnsibleError('plasmid: lxc-attach into %s failed: %s'
                                % (self._hostname(), str(exc).rstrip()))
        return super()._broker_error(exc)

    def _run_as_given(self, cmd: str, in_data: Optional[bytes],
                      success: Optional[str],
                      sudoable: bool) -> tuple[int, bytes, bytes]:
        """community.general's plugin runs ``EXECUTABLE -c cmd``; ours
        runs commands with ``/bin/sh -c``, which hands another executable
        the command."""
        executable = self.get_option('executable') or '/bin/sh'
        if executable != '/bin/sh':
            cmd = '%s -c %s' % (shlex.quote(executable), shlex.quote(cmd))
        return super()._run_as_given(cmd, in_data, success, sudoable)
