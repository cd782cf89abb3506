"""Module processes: forked from their context, a spare one forked ahead
once a call has been answered, and never a stale or lost one used."""
from __future__ import annotations

import contextlib
import os
import signal
import time
from typing import Iterator

import pytest

import plasmid
from plasmid.ansible import forks
from testbed import procs
from testbed.pythons import require_python

import forks_fns


def the_spare(ctx: plasmid.Context) -> int:
    """The pid of the context's one live child once the processes that
    ran its work have exited: its spare."""
    parent = ctx.call(os.getpid)
    deadline = time.monotonic() + 5.0
    while True:
        live = {p for p in procs.descendants([parent]) if procs.alive(p)}
        if len(live) == 1 or time.monotonic() > deadline:
            assert len(live) == 1, live
            return live.pop()
        time.sleep(0.02)


@pytest.mark.parametrize('version', ['2.7', '3.13'])
def test_spares_run_the_work_until_the_context_changes(version):
    with plasmid.Router() as router:
        ctx = router.local(python_path=require_python(version))
        runs = [ctx.call(forks_fns.run, name) for name in ('a', 'b', 'c')]
        # Each in a process of its own that exits 7 and sees the state
        # of the context, not the earlier runs' additions.
        assert [(r[0], r[1], r[3], r[4]) for r in runs] == [
            (7, 'a', 1, 0), (7, 'b', 1, 0), (7, 'c', 1, 0)]
        assert len({r[2] for r in runs}) == 3
        assert ctx.call(forks_fns.counts) == {
            'fresh': 1, 'spare': 2, 'discarded': 0,
            'stayed': 0, 'given_up': 0}
        # The spare waiting now forked before the change: it must not run.
        ctx.call(forks_fns.change_state)
        assert ctx.call(forks_fns.run, 'd')[3] == 2
        assert ctx.call(forks_fns.counts) == {
            'fresh': 2, 'spare': 2, 'discarded': 1,
            'stayed': 0, 'given_up': 0}
        # The spare forked after that run knows the change.
        assert ctx.call(forks_fns.run, 'e')[3] == 2
        assert ctx.call(forks_fns.counts)['spare'] == 3


@pytest.mark.parametrize('version', ['2.7', '3.6', '3.13'])
def test_a_module_process_waits_for_the_work_it_left_running(version):
    """As an interpreter's exit does (vanilla's module process): a thread
    the module started and a job it gave an executor finish before the
    process ends (they were dropped: it left by os._exit at once)."""
    with plasmid.Router() as router:
        ctx = router.local(python_path=require_python(version))
        expected = ['thread'] if version == '2.7' else ['executor', 'thread']
        assert list(ctx.call(forks_fns.run_leaving_work)) == [0, expected]


@pytest.mark.parametrize('version', ['2.7', '3.6', '3.13'])
def test_a_module_process_forked_while_a_thread_held_loggings_lock_logs(
        version):
    """A fork inherits each lock as it was: on Python 2.7 and 3.6 (no fork
    hooks) a module process forked while another thread of the context
    held logging's lock waited for ever in its first getLogger (killed
    here by its alarm)."""
    with plasmid.Router() as router:
        ctx = router.local(python_path=require_python(version))
        assert list(ctx.call(forks_fns.run_while_logging_is_locked)) == \
            [0, 'logged']


@pytest.mark.parametrize('version', ['2.7', '3.13'])
def test_a_crash_shows_the_modules_frames_not_ours(version):
    """The traceback of an exception the work let out began with the
    module process's machinery (forks.py, target.py, in the user's
    failed task on 2.18), where vanilla's begins at its wrapper."""
    with plasmid.Router() as router:
        ctx = router.local(python_path=require_python(version))
        status, err = ctx.call(forks_fns.run_crashing)
    lines = err.splitlines()
    assert status == 1
    assert lines[0] == 'Traceback (most recent call last):'
    assert 'forks_fns.py' in lines[1] and 'in _crash' in lines[1], err
    assert lines[-1] == 'ValueError: the module crashed'
    assert 'plasmid/ansible' not in err


def test_work_that_does_not_marshal_runs_in_a_fresh_fork():
    with plasmid.Router() as router:
        ctx = router.local(python_path=require_python('3.13'))
        ctx.call(forks_fns.run, 'a')
        assert ctx.call(forks_fns.run_token)[:2] == (7, 'token')
        # The spare was left waiting, and takes the next plain payload.
        assert ctx.call(forks_fns.run, 'b')[:2] == (7, 'b')
        assert ctx.call(forks_fns.counts) == {
            'fresh': 2, 'spare': 1, 'discarded': 0,
            'stayed': 0, 'given_up': 0}


@contextlib.contextmanager
def context_after_one_run(version: str) -> Iterator[tuple]:
    """A context of Python *version* that has run one piece of work, and
    the pid of the spare it forked after answering."""
    with plasmid.Router() as router:
        ctx = router.local(python_path=require_python(version))
        ctx.call(forks_fns.run, 'a')
        yield ctx, the_spare(ctx)


@pytest.mark.parametrize('version', ['2.7', '3.13'])
def test_a_dead_spare_gives_way_to_a_fresh_fork(version):
    with context_after_one_run(version) as (ctx, spare):
        os.kill(spare, signal.SIGKILL)
        assert procs.wait_gone([spare], timeout=5.0) == set()
        assert ctx.call(forks_fns.run, 'b')[:2] == (7, 'b')
        assert ctx.call(forks_fns.counts) == {
            'fresh': 2, 'spare': 0, 'discarded': 1,
            'stayed': 0, 'given_up': 0}


@pytest.mark.parametrize('version', ['2.7', '3.13'])
def test_the_spare_ends_with_its_context(version):
    with context_after_one_run(version) as (ctx, spare):
        ctx.shutdown(wait=True, timeout=5.0)
        assert procs.wait_gone([spare], timeout=5.0) == set()


def new_child(parent: int, known: set[int]) -> int:
    """The pid of a live child of *parent* not in *known*, once one runs."""
    deadline = time.monotonic() + 10.0
    while time.monotonic() < deadline:
        new = {p for p in procs.descendants([parent])
               if p not in known and procs.alive(p)}
        if new:
            return new.pop()
        time.sleep(0.02)
    raise AssertionError('no new child of %d' % parent)


@pytest.mark.parametrize('version', ['2.7', '3.13'])
def test_a_context_that_dies_while_a_module_runs_is_lost_at_once(version):
    """A module process lets go of its context's links: it held them while
    it ran, so the master learned of the context's death only when the
    module ended (on Python 2.7, which has no fork hook), and the children
    the context had started outlived it as long (on every version)."""
    with plasmid.Router() as router:
        python = require_python(version)
        upper = router.local(name='upper', python_path=python)
        lower = router.local(name='lower', python_path=python, via=upper)
        upper_pid, lower_pid = upper.call(os.getpid), lower.call(os.getpid)
        upper.call(forks_fns.counts)  # imported: nobody serves it below
        running = upper.call_async(forks_fns.run_sleeping, 120)
        module = new_child(upper_pid, {lower_pid})
        try:
            os.kill(upper_pid, signal.SIGKILL)
            with pytest.raises(plasmid.ContextLost):
                running.result(timeout=5.0)
            assert procs.wait_gone([lower_pid], timeout=5.0) == set()
            assert procs.alive(module)  # lost while the module still runs
        finally:
            os.kill(module, signal.SIGKILL)


def signal_as_it_lets_go(version: str, signum: int, marker: str) -> tuple:
    """Signal a module process of a Python *version* context while it
    lets go of the context's links (held there: forks_fns._SlowToLock);
    its status, stdout and stderr."""
    with plasmid.Router() as router:
        ctx = router.local(python_path=require_python(version))
        ctx.call(forks_fns.hold_module_processes_as_they_let_go, marker)
        running = ctx.call_async(forks_fns.run_hello)
        deadline = time.monotonic() + 10.0
        while not os.path.exists(marker) and time.monotonic() < deadline:
            time.sleep(0.02)
        with open(marker) as f:
            os.kill(int(f.read()), signum)
        return tuple(running.result(timeout=30.0))


@pytest.mark.parametrize('version', ['2.7', '3.6'])
def test_a_signal_as_a_module_process_lets_go_meets_fresh_handlers(
        version, tmp_path):
    """Where no fork hook does it (Python 2.7, 3.6), a module process lets
    go of the context's links itself: it reset its signals after that, so
    a SIGTERM meanwhile ran the context's handler there (with the links
    still the context's), and the task went on.  A fresh Python dies of
    it, as vanilla's module process would."""
    marker = str(tmp_path / 'letting-go')
    status, out, _ = signal_as_it_lets_go(version, signal.SIGTERM, marker)
    assert not os.path.exists(marker + '.ran')  # the context's handler
    assert (status, out) == (-signal.SIGTERM, '')


@pytest.mark.parametrize('version', ['2.7', '3.6'])
def test_a_module_process_that_fails_to_set_itself_up_says_why(
        version, tmp_path):
    """An error while a module process lets go of the links (here the
    KeyboardInterrupt of a SIGINT) ended it with status 1 and not a word:
    the task failed with an empty stderr.  It says why there now."""
    marker = str(tmp_path / 'letting-go')
    status, out, err = signal_as_it_lets_go(version, signal.SIGINT, marker)
    assert (status, out) == (1, '')
    assert 'could not set itself up' in err, err
    assert err.rstrip().endswith('KeyboardInterrupt'), err


@pytest.mark.parametrize('version', ['2.7', '3.13'])
def test_a_finished_module_process_is_reaped_once_its_answer_is_out(version):
    """No exited module process lingers as a zombie under an idle context:
    the context's one child is its spare."""
    with plasmid.Router() as router:
        ctx = router.local(python_path=require_python(version))
        ctx.call(forks_fns.run, 'a')
        ctx.call(forks_fns.run, 'b')
        # A call starts once the work behind the last answer has run.
        children = procs.descendants([ctx.call(os.getpid)])
        assert [p for p in children if not procs.alive(p)] == []
        assert len(children) == 1, children


def staying_context(router: plasmid.Router) -> plasmid.Context:
    """A context whose first run has forked a spare: the next run that may
    stay goes to the spare, which stays."""
    ctx = router.local(python_path=require_python('3.13'))
    assert ctx.call(forks_fns.run_staying, 'first')[:2] == (3, 'first')
    return ctx


def test_a_child_stays_for_work_that_may_stay_and_puts_back_its_state():
    with plasmid.Router() as router:
        ctx = staying_context(router)
        cwd = ctx.call(os.getcwd)
        env = ctx.call(forks_fns.run_staying, 'env')
        chdir = ctx.call(forks_fns.run_staying, 'chdir')
        after = ctx.call(forks_fns.run_staying, 'after')
        # One process ran the three; what the first two changed was put
        # back before the next began.
        assert env[2] == chdir[2] == after[2]
        assert [r[:2] for r in (env, chdir, after)] == [
            (3, 'env'), (3, 'chdir'), (3, 'after')]
        assert (chdir[3], after[3], after[4]) == ('None', 'None', cwd)
        assert ctx.call(forks_fns.staying_counts) == {
            'fresh': 1, 'spare': 1, 'discarded': 0, 'stayed': 2,
            'given_up': 0}
        # Output beyond a pipe's buffer comes whole, in order.
        big = ctx.call(forks_fns.run_staying, 'big')
        assert big[2] == env[2] and big[5] > 3 << 20


def test_a_staying_child_waits_for_the_threads_a_task_left_then_leaves():
    """An interpreter's exit waits for a module's threads once per process
    (threading._shutdown): from the second task a staying child ran, the
    wait was skipped and the thread's output lost."""
    with plasmid.Router() as router:
        ctx = staying_context(router)
        first = ctx.call(forks_fns.run_staying, 'env')
        status, words = ctx.call(forks_fns.staying_output, 'nondaemon')
        assert (status, words[0], int(words[1]), words[-1]) == \
            (3, 'nondaemon', first[2], 'late')
        # Its threading ended as an interpreter's does: it did not stay.
        after = ctx.call(forks_fns.run_staying, 'after')
        assert after[:2] == (3, 'after') and after[2] != first[2]


def test_a_staying_childs_answer_does_not_wait_for_its_check():
    with plasmid.Router() as router:
        ctx = staying_context(router)
        slowed = ctx.call(forks_fns.run_staying, 'slowcheck')
        marker = forks_fns.checked_marker(slowed[2])
        try:
            # The answer came while the child was still checking.
            assert slowed[:2] == (3, 'slowcheck')
            assert not os.path.exists(marker)
            # It found itself as it was, and serves the next task.
            after = ctx.call(forks_fns.run_staying, 'after')
            assert after[:2] == (3, 'after') and after[2] == slowed[2]
            assert os.path.exists(marker)
        finally:
            if os.path.exists(marker):
                os.unlink(marker)


def test_a_staying_child_stuck_in_its_check_is_killed_not_waited_for():
    with plasmid.Router() as router:
        ctx = staying_context(router)
        ctx.call(forks_fns.set_verdict_wait, 0.5)
        stuck = ctx.call(forks_fns.run_staying, 'stuckcheck')
        assert stuck[:2] == (3, 'stuckcheck')
        later = ctx.call(forks_fns.run_staying, 'later')
        assert later[:2] == (3, 'later') and later[2] != stuck[2]
        assert procs.wait_gone([stuck[2]], timeout=5.0) == set()
        assert ctx.call(forks_fns.staying_counts)['discarded'] == 1


def test_a_pure_cache_that_grew_does_not_make_a_child_leave():
    with plasmid.Router() as router:
        ctx = staying_context(router)
        ctx.call(forks_fns.run_staying, 'one')  # imports what it needs
        grew = ctx.call(forks_fns.run_staying, 'regex')
        after = ctx.call(forks_fns.run_staying, 'after')
        assert grew[:2] == (3, 'regex') and after[2] == grew[2]


def test_a_signal_handler_a_task_set_is_put_back():
    with plasmid.Router() as router:
        ctx = staying_context(router)
        handled = ctx.call(forks_fns.run_staying, 'signal')
        # The same process, its SIGUSR1 to the default again: it dies.
        assert ctx.call(forks_fns.run_staying, 'usr1')[0] == -signal.SIGUSR1
        assert procs.wait_gone([handled[2]], timeout=5.0) == set()
        assert ctx.call(forks_fns.staying_counts)['stayed'] == 1


@pytest.mark.parametrize('change', ['thread', 'trace'])
def test_a_child_that_finds_itself_changed_leaves(change):
    with plasmid.Router() as router:
        ctx = staying_context(router)
        changed = ctx.call(forks_fns.run_staying, change)
        assert changed[:2] == (3, change)
        assert procs.wait_gone([changed[2]], timeout=5.0) == set()
        later = ctx.call(forks_fns.run_staying, 'later')
        assert later[:2] == (3, 'later') and later[2] != changed[2]
        assert ctx.call(forks_fns.staying_counts)['stayed'] == 0


def test_work_whose_process_keeps_leaving_stops_trying_to_stay():
    with plasmid.Router() as router:
        ctx = staying_context(router)
        for _ in range(forks.GIVE_UP_AFTER):
            assert ctx.call(forks_fns.run_staying, 'trace')[:2] == (3, 'trace')
        assert ctx.call(forks_fns.staying_counts)['given_up'] == 1
        # Work of that kind that would stay now runs in a fresh process.
        one = ctx.call(forks_fns.run_staying, 'one')
        two = ctx.call(forks_fns.run_staying, 'two')
        assert one[:2] == (3, 'one') and two[:2] == (3, 'two')
        assert one[2] != two[2]
        assert ctx.call(forks_fns.staying_counts)['stayed'] == 0


def test_work_that_may_not_stay_goes_to_the_pristine_spare():
    with plasmid.Router() as router:
        ctx = staying_context(router)
        kept = ctx.call(forks_fns.run_staying, 'one')[2]
        alone = ctx.call(forks_fns.run_staying, 'alone')
        assert alone[:2] == (3, 'alone') and alone[2] != kept
        assert ctx.call(forks_fns.run_staying, 'two')[2] == kept
        assert ctx.call(forks_fns.staying_counts) == {
            'fresh': 1, 'spare': 2, 'discarded': 0, 'stayed': 1,
            'given_up': 0}


def test_a_kept_child_goes_when_the_context_changes_not_when_it_warms():
    with plasmid.Router() as router:
        ctx = staying_context(router)
        kept = ctx.call(forks_fns.run_staying, 'one')[2]
        ctx.call(forks_fns.staying_warmed)
        assert ctx.call(forks_fns.run_staying, 'two')[2] == kept
        ctx.call(forks_fns.staying_invalidate)
        assert ctx.call(forks_fns.run_staying, 'three')[2] != kept
        assert procs.wait_gone([kept], timeout=5.0) == set()


def test_a_kept_child_killed_in_its_work_reports_the_signal():
    with plasmid.Router() as router:
        ctx = staying_context(router)
        kept = ctx.call(forks_fns.run_staying, 'one')[2]
        assert ctx.call(forks_fns.run_staying, 'die')[0] == -signal.SIGKILL
        assert procs.wait_gone([kept], timeout=5.0) == set()
        assert ctx.call(forks_fns.run_staying, 'next')[:2] == (3, 'next')


def test_no_child_stays_on_python_2():
    with plasmid.Router() as router:
        ctx = router.local(python_path=require_python('2.7'))
        pids = {ctx.call(forks_fns.run_staying, name)[2]
                for name in ('a', 'b', 'c')}
        assert len(pids) == 3
        assert ctx.call(forks_fns.staying_counts)['stayed'] == 0
