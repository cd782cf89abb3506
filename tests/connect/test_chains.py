"""Chains of contexts (via=): ssh -> sudo -> ssh -> sudo, and their loss.

Every ssh hop logs in to the test bed's sshd as plasmid-a; every sudo hop
goes to root.  The test bed runs on this machine, so the processes of every
hop can also be inspected and killed from here.
"""
from __future__ import annotations

import logging
import os
import pwd
import signal
import socket
import time
from typing import Iterator

import pytest

import connect_fns
import plasmid
from testbed.procs import alive, wait_gone
from testbed.pythons import executable_by_others, require_python

USER_A = 'plasmid-a'
# Requirement: a lost context is noticed within 5 s.
LOST_WITHIN = 5.0


@pytest.fixture
def router() -> Iterator[plasmid.Router]:
    with plasmid.Router() as r:
        yield r


class _Records(logging.Handler):
    """Collects the records one logger sees."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


def _ancestors(pid: int) -> list[int]:
    """Parent, grandparent... of *pid*, up to pid 1."""
    found = []
    while pid > 1:
        with open('/proc/%d/stat' % pid) as f:
            pid = int(f.read().rsplit(')', 1)[1].split()[1])
        found.append(pid)
    return found


def _chain(router: plasmid.Router, sshd) -> list:
    """[ssh, sudo, ssh, sudo], each started via the one before."""
    first = router.ssh(**sshd.ssh_kwargs())
    second = router.sudo(via=first)
    third = router.ssh(via=second, **sshd.ssh_kwargs())
    fourth = router.sudo(via=third)
    return [first, second, third, fourth]


def test_four_hop_chain(sshd, router) -> None:
    chain = _chain(router, sshd)
    uid_a = pwd.getpwnam(USER_A).pw_uid
    assert [ctx.call(connect_fns.getuid) for ctx in chain] == \
        [uid_a, 0, uid_a, 0]
    # Four distinct interpreters, each started by the hop before it
    # (ssh and sudo sit in between, so compare processes, not parents).
    pids = [ctx.call(connect_fns.getpid) for ctx in chain]
    assert len(set(pids)) == 4
    assert [ctx.via for ctx in chain] == [None] + chain[:-1]
    # Each sudo hop's interpreter descends from the hop before it (an ssh
    # hop descends from sshd instead).
    assert pids[0] in _ancestors(pids[1])
    assert pids[2] in _ancestors(pids[3])
    # The master has one link for the whole chain: everything to and from
    # the deepest context passes through the three intermediaries.
    assert len(router.streams) == 1
    for ctx in chain:
        assert router.core.routes[ctx.context_id] is router.streams[0]


def test_logs_from_deepest_context_reach_master(sshd, router) -> None:
    chain = _chain(router, sshd)
    deepest = chain[-1]
    logger = logging.getLogger('plasmid.ctx.' + deepest.name)
    records = _Records()
    logger.addHandler(records)
    try:
        text = 'hello from the bottom of %s' % deepest.name
        # A context's records go out before the reply of the call that
        # logged them.
        assert deepest.call(connect_fns.log_warning, text) == text
    finally:
        logger.removeHandler(records)
    mine = [r for r in records.records if r.getMessage() == text]
    assert len(mine) == 1
    assert mine[0].levelno == logging.WARNING
    assert mine[0].plasmid_context == deepest.name
    assert mine[0].plasmid_origin == 'connect_fns'


def test_killed_intermediary_loses_its_sudo_child(sshd, router) -> None:
    user = router.ssh(**sshd.ssh_kwargs())
    root = router.sudo(via=user)
    root_pid = root.call(connect_fns.getpid)
    pending = root.call_async(connect_fns.sleep, 30)
    os.kill(user.info['pid'], signal.SIGKILL)
    with pytest.raises(plasmid.ContextLost):
        pending.result(timeout=LOST_WITHIN)
    with pytest.raises(plasmid.ContextLost):
        root.call(connect_fns.getpid)
    assert not user.is_alive() and not root.is_alive()
    # On the target, the orphaned root interpreter ends too.
    observer = router.ssh(**sshd.ssh_kwargs())
    assert observer.call(connect_fns.wait_pid_gone, root_pid, LOST_WITHIN)


def test_killed_middle_of_chain_keeps_upper_hops(sshd, router) -> None:
    first, second, third, fourth = _chain(router, sshd)
    pending = fourth.call_async(connect_fns.sleep, 30)
    # Kill the second ssh hop's interpreter: the hops above it stay.
    os.kill(third.call(connect_fns.getpid), signal.SIGKILL)
    with pytest.raises(plasmid.ContextLost):
        pending.result(timeout=LOST_WITHIN)
    assert not third.is_alive() and not fourth.is_alive()
    assert first.call(connect_fns.getuid) == pwd.getpwnam(USER_A).pw_uid
    assert second.call(connect_fns.getuid) == 0


def test_leaving_the_router_ends_every_hop(sshd) -> None:
    with plasmid.Router() as router:
        chain = _chain(router, sshd)
        pids = [ctx.info['pid'] for ctx in chain]
        (stream,) = router.streams
        ssh_client = stream.process.pid
        assert all(alive(pid) for pid in pids + [ssh_client])
    # No interpreter of the chain, and not our ssh client, outlives it.
    assert wait_gone(pids + [ssh_client], LOST_WITHIN) == set()


def test_connect_timeout_honoured_by_intermediary(sshd, router) -> None:
    user = router.ssh(**sshd.ssh_kwargs())
    # An ssh hop from the target to a port where the kernel accepts the
    # connection but nobody ever sends the ssh banner.
    with socket.socket() as silent:
        silent.bind((sshd.server.host, 0))
        silent.listen(8)
        port = silent.getsockname()[1]
        timeout = 2
        start = time.monotonic()
        with pytest.raises(plasmid.ConnectError) as info:
            router.ssh(via=user, connect_timeout=timeout,
                       **dict(sshd.ssh_kwargs(), port=port))
        elapsed = time.monotonic() - start
    message = str(info.value)
    assert 'no answer within' in message or 'timed out' in message
    assert elapsed < timeout + 5
    # The intermediary survives its child's failure.
    assert user.call(connect_fns.wait_no_children, LOST_WITHIN) == []


def test_a_hop_that_cannot_get_the_start_code_fails_as_a_start(
        caplog) -> None:
    """Under a max_message_size too small for plasmid's own spawn module,
    a via= start failed as a CallError (ModuleNotFoundError), and the call
    that stops a late start failed again, logged as "call_no_reply
    failed".  Now it is a ConnectError that says why; nothing else is
    sent."""
    with plasmid.Router(max_message_size=4096) as small:
        middle = small.local(name='middle')
        with pytest.raises(plasmid.ConnectError,
                           match='cannot start .* via middle: '
                                 'ModuleNotFoundError: .* too large'):
            small.local(via=middle)
        # Its logs come in order on the link: any of that call's are in.
        assert middle.call(connect_fns.wait_no_children, LOST_WITHIN) == []
    assert 'call_no_reply failed' not in caplog.text


@pytest.mark.parametrize('middle,far', [('2.7', '2.7'), ('2.7', '3.13'),
                                        ('3.6', '2.7')])
def test_an_ssh_hop_started_by_an_older_python(sshd, router, middle,
                                               far) -> None:
    """An intermediary of another Python builds the ssh command that
    carries the core and BOOT (base64 words, through the remote shell) and
    boots a context of yet another version, which serves calls."""
    far_python = require_python(far)
    if not executable_by_others(far_python):
        pytest.skip('%s is not executable by %s' % (far_python, USER_A))
    hop = router.local(python_path=require_python(middle))
    ctx = router.ssh(via=hop, python_path=far_python, **sshd.ssh_kwargs())
    assert ctx.call(connect_fns.version_info)[:2] == \
        [int(part) for part in far.split('.')]
    assert ctx.call(connect_fns.getuid) == pwd.getpwnam(USER_A).pw_uid
