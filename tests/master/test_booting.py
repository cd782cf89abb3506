"""plasmid.master.booting: a start returns once the Python is up; the boot
finishes while the first call travels, and a boot that fails is a
ConnectError of that context's calls and info."""
from __future__ import annotations

import os
import sys

import pytest

import plasmid
from testbed.fds import new_since, open_files
from testbed.interposed import interposed
from testbed.procs import descendants

import local_fns


@pytest.mark.parametrize('threaded', [False, True])
def test_a_start_returns_before_the_boot_answers(tmp_path, threaded) -> None:
    """The core's HELLO is held back until a file exists: the start still
    returns, the first call leaves at once, and both are answered once
    the HELLO comes (the old start waited for it and failed at its
    connect_timeout)."""
    answer = tmp_path / 'answer'
    with plasmid.Router(threaded=threaded) as router:
        ctx = router.local(connect_timeout=10, python_path=interposed(
            sys.executable, answer=str(answer)))
        assert not ctx.boot.hello.is_set
        future = ctx.call_async(os.getpid)
        assert not future.done()
        assert ctx.stream.bytes_out > 0  # the call is on its way
        answer.touch()
        assert future.result(timeout=30) == ctx.info['pid']
        assert ctx.info['version'] == list(sys.version_info[:3])


def test_a_boot_that_fails_is_a_connect_error_of_calls_and_info() -> None:
    """The Python is up, then its boot breaks: the start has returned, so
    its calls, sent before or after, and its info raise the ConnectError
    the start would have, with the program's last words; nothing of it
    is left behind, and the router starts the next context."""
    with plasmid.Router() as router:
        fds = open_files()
        broken = router.local(python_path=interposed(sys.executable,
                                                     answer='exit'))
        pid = broken.stream.process.pid
        early = broken.call_async(os.getpid)
        with pytest.raises(plasmid.ConnectError) as info:
            early.result(timeout=30)
        said = str(info.value)
        assert said == '%s: the Python started but did not boot: the boot ' \
            'broke' % broken.name, said
        assert info.value.ended is True
        assert info.value.output == 'the boot broke\n'
        for attempt in (lambda: broken.call(os.getpid),
                        lambda: broken.info,
                        lambda: broken.call_no_reply(os.getpid)):
            with pytest.raises(plasmid.ConnectError) as again:
                attempt()
            assert str(again.value) == said
        assert not broken.is_alive()
        broken.stream.process.popen.wait(timeout=10)  # the next start reaps
        assert router.local().call(os.getpid) != os.getpid()  # sweeps
        assert broken.stream not in router.streams
        assert broken.context_id not in router.boots
        assert not descendants([pid])
    assert not new_since(fds)


def test_a_boot_that_overruns_connect_timeout_is_killed() -> None:
    """connect_timeout bounds the boot after the start has returned: the
    process is killed, and the context's info and calls say why."""
    with plasmid.Router(threaded=True) as router:
        stalled = router.local(connect_timeout=1, python_path=interposed(
            sys.executable, answer=-1))
        process = stalled.stream.process
        with pytest.raises(plasmid.ConnectError) as info:
            stalled.info
        assert str(info.value) == '%s: the Python started but did not ' \
            'boot within 1s' % stalled.name
        assert info.value.ended is False
        with pytest.raises(plasmid.ConnectError):
            stalled.call(os.getpid)
        assert process.popen.wait(timeout=10) == -9


def test_a_context_that_booted_loses_its_calls_as_context_lost() -> None:
    """Once booted, a lost link is ContextLost, as before: the boot's
    error is only for a boot that failed."""
    with plasmid.Router() as router:
        ctx = router.local()
        assert ctx.call(os.getpid) == ctx.info['pid']
        ctx.stream.process.kill()
        with pytest.raises(plasmid.ContextLost):
            ctx.call(os.getpid)
        assert ctx.boot.error is None


def test_a_context_shut_down_before_its_boot_answers_says_so() -> None:
    """Its boot is cut short by the shutdown (the process killed at the
    timeout): the calls waiting for it, and its info, say it was shut
    down, not that its Python did not boot (killed by signal 9)."""
    with plasmid.Router() as router:
        ctx = router.local(python_path=interposed(sys.executable, answer=-1))
        early = ctx.call_async(os.getpid)
        ctx.shutdown(timeout=0)
        said = 'context %d is gone: it was shut down' % ctx.context_id
        for attempt in (lambda: early.result(timeout=30),
                        lambda: ctx.info,
                        lambda: ctx.call(os.getpid)):
            with pytest.raises(plasmid.ContextLost) as info:
                attempt()
            assert str(info.value) == said


@pytest.mark.parametrize('threaded', [False, True])
def test_a_boot_unheard_when_the_router_shuts_down_ends_with_it(
        threaded) -> None:
    """The router is shut down while a boot has not answered: the
    context's info says it was shut down (it ran the closed loop, whose
    deferred reader then read a closed stderr: a TypeError)."""
    router = plasmid.Router(threaded=threaded)
    ctx = router.local(python_path=interposed(sys.executable, answer=-1))
    early = ctx.call_async(os.getpid)
    router.shutdown(timeout=0)
    said = 'context %d is gone: it was shut down' % ctx.context_id
    for attempt in (lambda: early.result(timeout=30), lambda: ctx.info):
        with pytest.raises(plasmid.ContextLost) as info:
            attempt()
        assert str(info.value) == said


def test_a_second_hello_claims_nothing() -> None:
    """A context's HELLO says which Python it runs, which picks the
    compile helper for its imports: a second one, sent by code running in
    the context, changed that claim after the boot."""
    with plasmid.Router() as router:
        ctx = router.local()
        claimed = router.responder.pythons[ctx.context_id]
        assert claimed == sys.version_info[:2]
        ctx.call(local_fns.say_hello_again, [2, 7, 18])
        assert ctx.call(os.getpid) == ctx.info['pid']  # read after it
        assert router.responder.pythons[ctx.context_id] == claimed
        assert ctx.info['version'][:2] == list(claimed)
