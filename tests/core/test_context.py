"""plasmid.core.context: futures' done callbacks run where the future is
set (on the loop, amid a batch of replies or of the futures a loss fails),
so one that raises must not take the loop with it."""
from __future__ import annotations

import logging
import os
import signal
import sys
import threading

import pytest

import plasmid
from testbed.pythons import require_python

import context_fns


@pytest.mark.parametrize('threaded', [False, True])
def test_a_done_callback_that_raises_is_logged_and_the_rest_go_on(
        threaded: bool, caplog: pytest.LogCaptureFixture) -> None:
    """Before: threadless, the callback's error came out of another
    future's result() and the loss stopped half way (a future never
    finished); threaded, it ended the I/O thread.  as_completed never
    yielded a future whose callback came after the failing one."""
    context_fns.CALLED[:] = []
    with plasmid.Router(threaded=threaded) as router:
        ctx = router.local()
        pid = ctx.call(os.getpid)  # ahead: its calls run one at a time
        futures = [ctx.call_async(context_fns.sleep, 60) for _ in range(3)]
        futures[1].add_done_callback(context_fns.failing_callback)
        futures[1].add_done_callback(context_fns.noting_callback)
        os.kill(pid, signal.SIGKILL)
        done = list(plasmid.as_completed(futures, timeout=30))
        assert sorted(map(id, done)) == sorted(map(id, futures))
        for future in futures:
            with pytest.raises(plasmid.ContextLost):
                future.result(timeout=0)
        assert context_fns.CALLED == ['failing', 'noted']
        # The router works on: its loop (or I/O thread) is whole.
        assert router.local().call(os.getpid) != os.getpid()
        if threaded:
            assert 'plasmid-io' in [t.name for t in threading.enumerate()]
    assert any('done callback' in r.getMessage() and r.exc_info
               for r in caplog.records if r.levelno == logging.ERROR)


def test_a_callback_already_done_that_raises_is_logged_too(
        caplog: pytest.LogCaptureFixture) -> None:
    context_fns.CALLED[:] = []
    with plasmid.Router() as router:
        future = router.local().call_async(context_fns.sleep, 0)
        assert future.result(timeout=30) == 0
        with caplog.at_level(logging.ERROR, logger='plasmid.context'):
            future.add_done_callback(context_fns.failing_callback)
        assert context_fns.CALLED == ['failing']
    logged = [r for r in caplog.records
              if r.name == 'plasmid.context' and r.levelno == logging.ERROR]
    assert len(logged) == 1
    assert 'done callback' in logged[0].getMessage()
    assert logged[0].exc_info[0] is ValueError


@pytest.mark.parametrize('version', [None, '2.7'])
def test_a_failing_callback_in_an_intermediary_leaves_it_running(
        version) -> None:
    """Its loop ran the callback as the child was lost: the intermediary
    died of it (exit status 1), with every child it served."""
    python = require_python(version) if version else sys.executable
    with plasmid.Router() as router:
        middle = router.local(python_path=python)
        lost = router.local(via=middle)
        kept = router.local(via=middle)
        pid = lost.call(os.getpid)
        assert middle.call(context_fns.leave_a_failing_callback,
                           lost) == 'left'
        os.kill(pid, signal.SIGKILL)
        with pytest.raises(plasmid.ContextLost):
            lost.call(os.getpid)
        assert middle.call(context_fns.called) == ['failing']
        assert middle.is_alive() and kept.call(os.getpid) > 0
