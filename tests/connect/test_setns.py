"""Contexts inside the namespaces of a running process, through nsenter.

The process is made here by util-linux's unshare (new UTS, network, IPC,
mount and PID namespaces, a host name of its own), or is the first
process of a podman container (tests/testbed/containers.py).  Entering
namespaces needs root: the suite runs as root.
"""
from __future__ import annotations

import os
import signal
import subprocess
import time
from typing import Iterator

import pytest

import connect_fns
import plasmid
from testbed import containers
from testbed.pythons import require_python

INNER_NAME = 'plasmid-inner'


@pytest.fixture(scope='module')
def namespaced_pid() -> Iterator[int]:
    """The pid of a process in namespaces of its own."""
    if os.geteuid() != 0:
        pytest.skip('entering namespaces needs root')
    unshare = subprocess.Popen(
        ['unshare', '--uts', '--net', '--ipc', '--mount', '--pid', '--fork',
         '--kill-child', 'sh', '-c', 'hostname %s && exec sleep 600'
         % INNER_NAME])
    try:
        child = _child_of(unshare.pid)
        yield child
        # unshare ignores SIGTERM while its child runs: end the child.
        os.kill(child, signal.SIGKILL)
        unshare.wait(10)
    finally:
        if unshare.poll() is None:
            unshare.kill()  # --kill-child: its child goes too
            unshare.wait()


def _child_of(pid: int) -> int:
    """unshare's child, once it runs sleep (after setting the name)."""
    deadline = time.time() + 10
    while time.time() < deadline:
        try:
            with open('/proc/%d/task/%d/children' % (pid, pid)) as handle:
                children = [int(c) for c in handle.read().split()]
            if children:
                with open('/proc/%d/comm' % children[0]) as handle:
                    if handle.read().strip() == 'sleep':
                        return children[0]
        except OSError:
            pass
        time.sleep(0.02)
    raise RuntimeError('unshare did not start its process')


@pytest.fixture
def router() -> Iterator[plasmid.Router]:
    with plasmid.Router() as r:
        yield r


def test_a_context_enters_every_namespace_of_the_process(
        router, namespaced_pid) -> None:
    ctx = router.setns(pid=namespaced_pid)
    who = ctx.call(connect_fns.identity)
    assert who['hostname'] == INNER_NAME
    assert who['pid'] < 10  # the process's PID namespace: sleep is 1
    assert ctx.call(connect_fns.network_interfaces) == ['lo']
    assert ctx.name.startswith('setns.%d.' % namespaced_pid)


def test_a_context_enters_only_the_namespaces_named(
        router, namespaced_pid) -> None:
    ctx = router.setns(pid=namespaced_pid, namespaces=['uts'])
    assert ctx.call(connect_fns.identity)['hostname'] == INNER_NAME
    assert ctx.call(connect_fns.network_interfaces) == \
        connect_fns.network_interfaces()  # ours: the net namespace stays


def test_a_context_enters_a_containers_namespaces(router) -> None:
    reason = containers.unavailable_reason()
    if reason is not None:
        pytest.fail(reason)
    with containers.container() as name:
        ctx = router.setns(pid=containers.first_pid(name))
        assert ctx.call(connect_fns.in_a_container) is True  # its root
        assert ctx.call(connect_fns.network_interfaces) == ['lo']


def test_an_intermediary_runs_nsenter(router, namespaced_pid) -> None:
    """Through a Python 2.7 context, which runs the method's code."""
    middle = router.local(python_path=require_python('2.7'))
    ctx = router.setns(pid=namespaced_pid, via=middle)
    assert ctx.call(connect_fns.identity)['hostname'] == INNER_NAME


def test_entering_without_the_right_is_a_connect_error(
        router, namespaced_pid) -> None:
    nobody = router.sudo(username='nobody')
    with pytest.raises(plasmid.ConnectError) as info:
        router.setns(pid=namespaced_pid, via=nobody, connect_timeout=20)
    said = str(info.value)  # nsenter's own words
    assert 'nsenter: ' in said and ('Permission denied' in said or
                                    'not permitted' in said), said
    assert nobody.call(connect_fns.getuid) == 65534  # unharmed


@pytest.mark.parametrize('pid', [0, -1, True, '1', None, 1.5])
def test_a_pid_that_is_no_pid_is_refused(router, pid) -> None:
    with pytest.raises(ValueError, match='pid must be'):
        router.setns(pid=pid)


@pytest.mark.parametrize('namespaces', ['net', [], ['net', 'bogus'], 3])
def test_namespaces_that_nsenter_lacks_are_refused(router, namespaces) -> None:
    with pytest.raises(ValueError, match='namespaces must be'):
        router.setns(pid=1, namespaces=namespaces)
    assert router.streams == []
