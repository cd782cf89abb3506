"""Contexts inside a Kubernetes pod's container, through ``kubectl exec``.

No cluster can run on this machine kind; its real kubectl client talks to
a stand-in API server (tests/testbed/kubectl.py) whose pods' containers
are real podman containers of the test bed.
"""
from __future__ import annotations

import os
import sys
from typing import Iterator

import pytest

import connect_fns
import plasmid
from testbed import containers, kubectl
from testbed.pythons import require_python


@pytest.fixture(scope='module')
def cluster(podman_container) -> Iterator[tuple]:
    """(kubeconfig, podman container): pod ``web`` in namespace
    ``default`` (containers ``app`` as root, then ``sidecar`` as nobody),
    pod ``batch`` in namespace ``jobs`` (one container, as root)."""
    reason = kubectl.unavailable_reason()
    if reason is not None:
        pytest.skip(reason)
    pods = {'default/web': [['app', podman_container, 'root'],
                            ['sidecar', podman_container, 'nobody']],
            'jobs/batch': [['main', podman_container, 'root']]}
    with kubectl.standin(pods) as config:
        yield config, podman_container


@pytest.fixture
def router() -> Iterator[plasmid.Router]:
    with plasmid.Router() as r:
        yield r


def start(router: plasmid.Router, cluster: tuple, pod: str = 'web',
          **kwargs) -> plasmid.Context:
    return router.kubectl(pod, kubectl_args=['--kubeconfig', cluster[0]],
                          **kwargs)


def test_a_kubectl_context_runs_in_the_pods_default_container(
        router, cluster) -> None:
    ctx = start(router, cluster)
    assert ctx.call(connect_fns.in_a_container) is True
    assert ctx.call(connect_fns.getuid) == 0  # app, not sidecar
    assert ctx.name.startswith('kubectl.web.')


def test_the_container_and_namespace_named(router, cluster) -> None:
    assert start(router, cluster, container='sidecar').call(
        connect_fns.getuid) == 65534
    batch = start(router, cluster, pod='batch', namespace='jobs')
    assert batch.call(connect_fns.in_a_container) is True


def test_the_core_travels_on_stdin_not_in_the_command(router,
                                                      cluster) -> None:
    """kubectl sends the command in a URL, which proxies bound to a few
    KiB: the interpreter's command line holds only the first stage (a
    podman context's holds the ~22 KB core as well)."""
    start(router, cluster).call(connect_fns.getpid)
    lines = containers.interpreters_in(cluster[1])
    # The context and its watchdog, a fork of it (connect/watchdog).
    assert len(lines) == 2 and len(set(lines)) == 1
    assert len(lines[0]) < 2000, len(lines[0])


def test_a_kubectl_context_ends_with_its_router(cluster) -> None:
    with plasmid.Router() as router:
        start(router, cluster).call(connect_fns.getpid)
        assert containers.interpreters_in(cluster[1])
    # The stream closed with kubectl: the context saw its stdin end.
    assert containers.interpreters_in(cluster[1]) == []


def test_a_kubectl_context_through_a_python_27_intermediary(router,
                                                            cluster) -> None:
    middle = router.local(python_path=require_python('2.7'))
    ctx = start(router, cluster, via=middle)
    assert ctx.call(connect_fns.in_a_container) is True
    assert middle.call(connect_fns.in_a_container) is False


def test_kubectls_environment_is_given_to_it_not_on_its_command_line(
        router, cluster) -> None:
    """KUBECONFIG through kubectl_env, the via context's environment
    beneath it (a Python 2.7 intermediary's spawn gets it too)."""
    middle = router.local(python_path=require_python('2.7'))
    ctx = router.kubectl('web', via=middle,
                         kubectl_env={'KUBECONFIG': cluster[0]})
    assert ctx.call(connect_fns.in_a_container) is True
    from plasmid.connect import spawn
    from plasmid.core import ostext
    env = spawn.program_environment({'program_env': {'KUBECONFIG': 'x'}})
    assert env['KUBECONFIG'] == 'x' and env['PATH'] == os.environ['PATH']
    assert spawn.program_environment({}) == ostext.programs_environ()


@pytest.mark.parametrize('env', [{'A=B': 'x'}, {'': 'x'}, {'A': 1},
                                 ['A=1'], {'A': 'x\0y'}])
def test_a_bad_kubectl_env_is_refused_before_anything_starts(router,
                                                             env) -> None:
    with pytest.raises(ValueError) as info:
        router.kubectl('web', kubectl_env=env)
    assert 'kubectl_env must map variable names to strings' in \
        str(info.value)


@pytest.mark.parametrize('kwargs, said', [
    (dict(pod='absent'), 'pods "absent" not found'),
    (dict(pod='batch'), 'pods "batch" not found'),  # not in default
    (dict(container='db'), 'container db is not valid for pod web'),
])
def test_what_kubectl_refuses_is_a_connect_error(router, cluster, kwargs,
                                                 said) -> None:
    with pytest.raises(plasmid.ConnectError) as info:
        start(router, cluster, connect_timeout=20, **kwargs)
    assert said in str(info.value)


def test_no_python_in_the_pod_is_a_connect_error(router, cluster) -> None:
    with pytest.raises(plasmid.ConnectError) as info:
        start(router, cluster, python_path='/usr/bin/python9',
              connect_timeout=20)
    assert "no Python at '/usr/bin/python9'" in str(info.value)


WAITS_FOR_STDIN = '''\
import os, select, sys
command = sys.argv[sys.argv.index('--') + 1:]
if not select.select([0], [], [], 20)[0]:
    sys.exit('nothing came on stdin before the interpreter started')
os.execvp(command[0], command)
'''


@pytest.mark.parametrize('version', ['2.7', '3.13'])
def test_the_core_is_written_ahead_of_the_ready_marker(tmp_path,
                                                       version) -> None:
    """A client that starts the interpreter only once input has come (as
    kubectl may, opening the stream): the core must already be on its
    way, not wait for the interpreter's first word (a round trip to the
    cluster)."""
    program = tmp_path / 'kubectl'
    program.write_text('#!%s\n%s' % (sys.executable, WAITS_FOR_STDIN))
    program.chmod(0o755)
    with plasmid.Router() as router:
        ctx = router.kubectl('any', kubectl_path=str(program),
                             python_path=require_python(version),
                             connect_timeout=20)
        assert ctx.call(os.getpid) == ctx.info['pid']


def test_kubectl_argv_puts_each_option_in_its_place() -> None:
    from plasmid.connect import kubectl as method
    argv = method.argv({'pod': 'web', 'namespace': 'ns', 'container': 'c',
                        'kubectl_args': ['--context', 'prod'],
                        'exec_args': ['--pod-running-timeout=5s']},
                       ['python3', '-c', 'pass'])
    assert argv == ['kubectl', '--context', 'prod', 'exec', '-i',
                    '--namespace', 'ns', '--container', 'c',
                    '--pod-running-timeout=5s', 'web', '--',
                    'python3', '-c', 'pass']


@pytest.mark.parametrize('kwargs, refused', [
    (dict(pod=''), 'pod must be'),
    (dict(pod='-x'), 'pod must be'),
    (dict(pod=None), 'pod must be'),
    (dict(pod='web', namespace='  '), 'namespace must be'),
    (dict(pod='web', container='--all'), 'container must be'),
    (dict(pod='web', kubectl_args='--context prod'), 'kubectl_args must be'),
    (dict(pod='web', exec_args='-q'), 'exec_args must be'),
])
def test_bad_kubectl_options_are_refused(router, kwargs, refused) -> None:
    with pytest.raises(ValueError, match=refused):
        router.kubectl(**kwargs)
    assert router.streams == []
