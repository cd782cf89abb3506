"""Calls run one at a time; work queued with after_reply runs once the
call is answered and before the next call."""
from __future__ import annotations

import logging
import os
import time

import pytest

import plasmid
from plasmid.core import dispatch
from testbed.pythons import require_python

import dispatch_fns


@pytest.mark.parametrize('version', ['2.7', '3.13'])
def test_work_after_a_reply_does_not_delay_it(version, tmp_path):
    flag = tmp_path / 'go'
    with plasmid.Router() as router:
        ctx = router.local(python_path=require_python(version))
        # The after-work waits for the flag, which this side makes only
        # once the answer is here: had the answer waited for the work, the
        # work would have timed out first.
        assert ctx.call(dispatch_fns.reply_then_wait_for, str(flag)) is True
        flag.write_text('')
        assert ctx.call(dispatch_fns.log) == ['saw the flag']


@pytest.mark.parametrize('version', ['2.7', '3.13'])
def test_failed_work_after_a_reply_leaves_the_context_serving(version):
    with plasmid.Router() as router:
        ctx = router.local(python_path=require_python(version))
        assert ctx.call(dispatch_fns.reply_then_fail) is True
        assert ctx.call(dispatch_fns.log) == ['failing']
        assert ctx.call(dispatch_fns.log) == ['failing']


@pytest.mark.parametrize('version', ['2.7', '3.13'])
def test_an_error_in_words_beyond_ascii_reaches_the_caller(version):
    """As a program's message in a UTF-8 locale reads once decoded
    (``mkdir: cannot create directory \u2018x\u2019``): on Python 2 the
    context once died formatting it."""
    words = u'cannot create directory \u2018x\u2019: File exists'
    with plasmid.Router() as router:
        ctx = router.local(python_path=require_python(version))
        with pytest.raises(plasmid.CallError) as failed:
            ctx.call(dispatch_fns.fail_in_words, words)
        assert words in str(failed.value)
        assert ctx.call(dispatch_fns.log) == []


@pytest.mark.parametrize('version', ['2.7', '3.6', '3.13'])
def test_an_exception_that_cannot_be_shown_reaches_the_caller(version):
    """Its __str__ raised inside the context's error report: the context
    died, and every later call failed with ContextLost.  It did still
    when __str__ raised KeyboardInterrupt or SystemExit."""
    with plasmid.Router() as router:
        ctx = router.local(python_path=require_python(version))
        with pytest.raises(plasmid.CallError) as failed:
            ctx.call(dispatch_fns.fail_unprintably)
        assert failed.value.type_name == 'Unprintable'
        for interrupting in ('KeyboardInterrupt', 'SystemExit'):
            with pytest.raises(plasmid.CallError) as failed:
                ctx.call(dispatch_fns.fail_unprintably, interrupting)
            assert failed.value.type_name == 'Interrupting'
            assert failed.value.message == '?'
        assert ctx.call(dispatch_fns.log) == []


def test_outside_a_dispatched_call_nothing_is_queued():
    ran = []
    assert dispatch.after_reply(lambda: ran.append(1)) is False
    assert ran == []


@pytest.mark.parametrize('version', ['2.7', '3.13'])
@pytest.mark.parametrize('limit', [4 << 20, 1 << 20, 4096])
def test_an_error_too_large_to_send_keeps_its_type(version, limit):
    """Its message is cut to 1/64 of the size limit (the first MiB at the
    default 64 MiB): the caller still learns what failed, as it would from
    a smaller one.  Before, a cut of 1 MiB whatever the limit: under 2 MiB
    the cut error was too large too, and the context died of it."""
    with plasmid.Router(max_message_size=limit) as router:
        ctx = router.local(python_path=require_python(version))
        with pytest.raises(plasmid.CallError) as info:
            ctx.call(dispatch_fns.fail_at_length, limit + 1)
        assert info.value.type_name == 'ValueError'
        assert info.value.message == 'x' * (limit >> 6)
        assert ctx.call(len, 'ab') == 2  # still serving
        # The type's name is cut too: one past the limit killed the context.
        with pytest.raises(plasmid.CallError) as info:
            ctx.call(dispatch_fns.fail_named_at_length, limit + 1)
        assert info.value.type_name == 'E' * (limit >> 6)
        assert ctx.call(len, 'ab') == 2


@pytest.mark.parametrize('version', [None, '2.7'])
def test_a_result_whose_encoding_runs_out_of_memory_is_an_error(version):
    """The context died of it (MemoryError in the reply's encoding)."""
    python = require_python(version) if version else None
    with plasmid.Router() as router:
        ctx = router.local(python_path=python)
        pid = ctx.call(os.getpid)
        ctx.call(dispatch_fns.limit_memory, 300)
        with pytest.raises(plasmid.CallError) as info:
            ctx.call(dispatch_fns.big_result, 200)
        assert info.value.type_name == 'MemoryError'
        # A MemoryError says nothing more: no colon with nothing after.
        assert info.value.message == 'the result could not be sent'
        assert ctx.call(os.getpid) == pid


@pytest.mark.parametrize('version', [None, '2.7'])
def test_a_signal_handler_that_raises_between_calls_is_logged(
        version, caplog):
    """The error left the loop and ended the context ("the connection
    was lost")."""
    caplog.set_level(logging.ERROR, logger='plasmid.ctx')
    python = require_python(version) if version else None
    with plasmid.Router() as router:
        ctx = router.local(name='alarmed', python_path=python)
        pid = ctx.call(dispatch_fns.set_an_alarm, 0.2)
        time.sleep(1.0)  # the alarm goes off while the context waits
        assert ctx.call(os.getpid) == pid
        # Said before that reply, on the same link.
        logged = [r.getMessage() for r in caplog.records
                  if r.name == 'plasmid.ctx.alarmed'
                  and r.levelno == logging.ERROR]
        assert len(logged) == 1, logged
        assert 'error in the loop' in logged[0]
        assert 'Alarm' in logged[0]  # with its traceback
        # One that goes off during a call is that call's error, as before.
        ctx.call(dispatch_fns.set_an_alarm, 0.2)
        with pytest.raises(plasmid.CallError) as info:
            ctx.call(dispatch_fns.sleep, 5)
        assert info.value.type_name == 'Alarm'
        assert ctx.call(os.getpid) == pid
