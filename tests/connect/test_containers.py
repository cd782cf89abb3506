"""Contexts inside a running container: podman's and docker's exec, LXC's
lxc-attach.

The containers (tests/testbed/containers.py) run a minimal Debian with its
own python3, started by podman or LXC; the docker client reaches podman's
through its Docker API, as no Docker engine runs on this machine kind.
"""
from __future__ import annotations

from typing import Iterator

import pytest

import connect_fns
import plasmid
from testbed import containers
from testbed.pythons import require_python


@pytest.fixture(scope='module')
def container(podman_container) -> str:
    return podman_container


@pytest.fixture(scope='module')
def lxc_container() -> Iterator[str]:
    reason = containers.lxc_unavailable_reason()
    if reason is not None:
        pytest.fail(reason)
    with containers.lxc_container() as name:
        yield name


@pytest.fixture
def router() -> Iterator[plasmid.Router]:
    with plasmid.Router() as r:
        yield r


def test_a_podman_context_runs_in_the_container(router, container) -> None:
    ctx = router.podman(container=container)
    assert ctx.call(connect_fns.in_a_container) is True
    assert ctx.call(connect_fns.getuid) == 0
    assert ctx.call(connect_fns.network_interfaces) == ['lo']  # --network none
    assert ctx.name.startswith('podman.%s.' % container)
    # One interpreter, and its watchdog: a fork of it (connect/watchdog).
    lines = containers.interpreters_in(container)
    assert len(lines) == 2 and len(set(lines)) == 1


@pytest.mark.parametrize('username', ['nobody', 65534])
def test_a_podman_context_runs_as_the_user_named(router, container,
                                                 username) -> None:
    ctx = router.podman(container=container, username=username)
    assert ctx.call(connect_fns.getuid) == 65534


@pytest.mark.parametrize('method', ['podman', 'docker'])
def test_a_container_context_ends_with_its_router(container, method,
                                                  request) -> None:
    if method == 'docker':
        request.getfixturevalue('monkeypatch').setenv(
            'DOCKER_HOST', request.getfixturevalue('docker_host'))
    with plasmid.Router() as router:
        ctx = getattr(router, method)(container=container)
        ctx.call(connect_fns.getpid)
        assert containers.interpreters_in(container)
    # podman exec does not signal what it started: the context saw its
    # stdin end when the client went, and left.
    assert containers.interpreters_in(container) == []


def test_a_container_context_through_an_intermediary(router,
                                                     container) -> None:
    """The method runs in the intermediary, here a Python 2.7 one."""
    middle = router.local(python_path=require_python('2.7'))
    ctx = router.podman(container=container, via=middle)
    assert ctx.call(connect_fns.in_a_container) is True
    assert middle.call(connect_fns.in_a_container) is False


def test_a_container_on_a_host_reached_by_ssh_and_sudo(sshd, router,
                                                       container) -> None:
    """podman runs as root on the far side of ssh -> sudo."""
    root = router.sudo(via=router.ssh(**sshd.ssh_kwargs()))
    ctx = router.podman(container=container, via=root)
    assert ctx.call(connect_fns.in_a_container) is True
    assert root.call(connect_fns.in_a_container) is False


def test_no_such_container_is_a_connect_error(router, container) -> None:
    with pytest.raises(plasmid.ConnectError) as info:
        router.podman(container=container + '-absent', connect_timeout=20)
    assert 'no such container' in str(info.value).lower()


def test_no_python_in_the_container_is_a_connect_error(router,
                                                       container) -> None:
    with pytest.raises(plasmid.ConnectError) as info:
        router.podman(container=container, python_path='/usr/bin/python9',
                      connect_timeout=20)
    assert "no Python at '/usr/bin/python9'" in str(info.value)


def test_podman_args_go_to_podman_before_exec(router, container) -> None:
    """A global option of podman's works there; the same word after
    ``exec`` would be refused as an option exec does not know."""
    ctx = router.podman(container=container,
                        podman_args=['--log-level', 'error'])
    assert ctx.call(connect_fns.in_a_container) is True
    with pytest.raises(plasmid.ConnectError) as info:
        router.podman(container=container, podman_args=['--no-such-flag'],
                      connect_timeout=20)
    assert '--no-such-flag' in str(info.value)


@pytest.mark.parametrize('method', ['docker', 'podman'])
def test_client_args_must_be_a_list(router, method) -> None:
    with pytest.raises(ValueError, match='%s_args' % method):
        getattr(router, method)(container='c', **{method + '_args': '-x'})
    assert router.streams == []


def test_a_docker_context_runs_in_the_container(router, container,
                                                docker_host,
                                                monkeypatch) -> None:
    monkeypatch.setenv('DOCKER_HOST', docker_host)
    ctx = router.docker(container=container, username='nobody',
                        docker_args=['--log-level', 'error'])
    assert ctx.call(connect_fns.in_a_container) is True
    assert ctx.call(connect_fns.getuid) == 65534
    assert ctx.name.startswith('docker.%s.' % container)


def test_an_lxc_context_runs_in_the_container(router, lxc_container,
                                              monkeypatch) -> None:
    monkeypatch.setenv('PLASMID_HOST_ONLY', 'here')
    ctx = router.lxc(container=lxc_container)
    who = ctx.call(connect_fns.identity)
    assert (who['hostname'], who['uid']) == (containers.LXC_HOST_NAME, 0)
    assert ctx.call(connect_fns.network_interfaces) == ['lo']
    assert ctx.call(connect_fns.getenv, 'PLASMID_HOST_ONLY') is None
    assert ctx.name.startswith('lxc.%s.' % lxc_container)


def test_attach_args_reach_lxc_attach(router, lxc_container) -> None:
    ctx = router.lxc(container=lxc_container, attach_args=['--uid', '65534'])
    assert ctx.call(connect_fns.getuid) == 65534


def test_an_lxc_context_ends_with_its_router(lxc_container) -> None:
    with plasmid.Router() as router:
        router.lxc(container=lxc_container).call(connect_fns.getpid)
        assert containers.interpreters_in(lxc_container, lxc=True)
    assert containers.interpreters_in(lxc_container, lxc=True) == []


def test_no_such_lxc_container_is_a_connect_error(router,
                                                  lxc_container) -> None:
    absent = lxc_container + '-absent'
    with pytest.raises(plasmid.ConnectError) as info:
        router.lxc(container=absent, connect_timeout=20)
    assert 'lxc-attach: %s' % absent in str(info.value)


@pytest.mark.parametrize('method', ['docker', 'podman', 'lxc'])
@pytest.mark.parametrize('container', ['', '   ', '-x', None, 3])
def test_a_container_that_is_no_name_is_refused(router, method,
                                                container) -> None:
    with pytest.raises(ValueError, match='container must be'):
        getattr(router, method)(container=container)
    assert router.streams == []
