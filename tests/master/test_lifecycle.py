"""Contexts die cleanly: lost processes fail their calls fast, shutdown
ends stuck contexts, and no master exit leaves processes, zombies or fds."""
from __future__ import annotations

import json
import logging
import os
import select
import signal
import subprocess
import sys
import threading
import time
from typing import Iterator

import pytest

import plasmid
from testbed.fds import new_since, open_files
from testbed.procs import alive, descendants, interruptible, wait_gone
from testbed.pythons import require_python

import local_fns

SCRIPTS = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                       'master_scripts')
LOST_WITHIN = 5.0  # the bound the requirements set for noticing a loss


@pytest.fixture
def router() -> Iterator[plasmid.Router]:
    with plasmid.Router() as r:
        yield r


def zombie_children() -> list[int]:
    """Our own children that exited and were never reaped."""
    me = str(os.getpid())
    zombies = []
    for name in os.listdir('/proc'):
        if not name.isdigit():
            continue
        try:
            with open('/proc/%s/stat' % name) as f:
                fields = f.read().rsplit(')', 1)[1].split()
        except OSError:
            continue
        if fields[1] == me and fields[0] == 'Z':
            zombies.append(int(name))
    return zombies


def expect_lost(fut: plasmid.Future) -> None:
    with pytest.raises(plasmid.ContextLost):
        fut.result(timeout=LOST_WITHIN)


# ------------------------------------------------------- lost contexts

def test_killed_context_fails_pending_and_later_calls(
        router: plasmid.Router) -> None:
    victim = router.local(name='victim')
    bystander = router.local(name='bystander')
    assert victim.call(local_fns.echo, 1) == 1
    pending = victim.call_async(local_fns.sleep_then, 60, 'never')
    os.kill(victim.info['pid'], signal.SIGKILL)
    expect_lost(pending)
    assert not victim.is_alive()
    expect_lost(victim.call_async(local_fns.getpid))
    with pytest.raises(plasmid.ContextLost):
        victim.call_no_reply(local_fns.getpid)
    assert bystander.call(local_fns.getpid) == bystander.info['pid']


@pytest.mark.parametrize('threaded', [False, True])
def test_a_context_that_died_while_idle_says_why_at_the_first_call(
        threaded: bool) -> None:
    """A threadless router learns of the death only when a call writes to
    the dead pipe: that first call failed with a bare "no route to
    context 1", then with "the connection to idle was lost" and nothing
    in ``said`` (the failed write answered at once), and only later
    calls said how the context ended.  The link's close, a moment later,
    now answers the first call too."""
    with plasmid.Router(threaded=threaded) as router:
        idle = router.local(name='idle')
        pid = idle.call(os.getpid)
        os.kill(pid, signal.SIGKILL)
        wait_gone([pid], LOST_WITHIN)
        for _ in range(2):
            with pytest.raises(plasmid.ContextLost) as caught:
                idle.call(os.getpid)
            assert 'the connection to idle was lost' in str(caught.value)
            assert caught.value.said.endswith(
                'was killed by signal %d' % signal.SIGKILL), caught.value


@pytest.mark.parametrize('version', [None, '3.7', '3.13'])
def test_a_context_that_dies_while_its_fork_lives_is_lost_at_once(
        router: plasmid.Router, version: str | None) -> None:
    """A fork (os.fork, multiprocessing) let go of the link at once: it
    kept it open while it lived, and calls to its dead context waited for
    the fork's exit, shutdown its whole timeout."""
    python = version and require_python(version)
    victim = router.local(python_path=python)
    fork = victim.call(local_fns.fork_sleeper, 120)
    try:
        with pytest.raises(plasmid.ContextLost) as lost:
            victim.call_async(local_fns.exit_now, 3).result(
                timeout=LOST_WITHIN)
        assert 'exited with status 3' in str(lost.value)
        assert alive(fork)  # lost while the fork still runs
    finally:
        os.kill(fork, signal.SIGKILL)


@pytest.mark.parametrize('version', [None, '3.7', '3.13'])
def test_a_fork_of_an_intermediary_lets_go_of_its_childrens_links(
        router: plasmid.Router, version: str | None) -> None:
    """A fork made by a call in an intermediary let go of the links to
    the intermediary's children too: they saw the intermediary's end only
    when the fork exited, and lived on that long after it died."""
    python = version and require_python(version)
    middle = router.local(python_path=python)
    below = router.local(via=middle)
    ended = router.local(via=middle)
    ended.shutdown()  # a closed link, which the fork leaves alone
    below_pid = below.call(local_fns.getpid)
    fork = middle.call(local_fns.fork_sleeper, 120)
    try:
        with pytest.raises(plasmid.ContextLost):
            middle.call_async(local_fns.exit_now, 3).result(
                timeout=LOST_WITHIN)
        assert wait_gone([below_pid], LOST_WITHIN) == set()
        assert alive(fork)  # gone while the fork still runs
    finally:
        os.kill(fork, signal.SIGKILL)


@pytest.mark.parametrize('version', [None, '2.7', '3.13'])
def test_a_fork_that_returns_from_a_call_exits(
        router: plasmid.Router, version: str | None) -> None:
    """A fork that returns (or raises) instead of os._exit() leaves with
    status 0 (1), whoever ran the loop at the fork: it waited for ever on
    a loop owned by a thread the fork does not have (after a pause, the
    standby's), or, without a fork hook (2.7), answered and read on its
    parent's link."""
    python = version and require_python(version)
    ctx = router.local(python_path=python)
    for pause in (0, 0.3):
        for fail, status in ((False, 0), (True, 1)):
            fork = ctx.call(local_fns.fork_and_return, pause, fail)
            assert fork > 0  # the context's own answer
            assert ctx.call(local_fns.exit_status, fork, LOST_WITHIN) == \
                status, (pause, fail)
    assert ctx.call(local_fns.getpid) == ctx.info['pid']


@pytest.mark.parametrize('version', [None, '3.7', '3.13'])
def test_a_fork_that_needs_the_link_fails_what_needs_it_and_runs_on(
        router: plasmid.Router, version: str | None, caplog) -> None:
    """A fork has no link: its call fails with ContextLost, its import of
    a module only the master has with ModuleNotFoundError, and its output
    still reaches the master (through the context's pipes).  It exited
    silently with status 0 in the middle of its code (it took its
    closed link for the context's), or waited for ever for a loop owned
    by a thread it does not have (the standby's, after a pause)."""
    caplog.set_level(logging.INFO, logger='plasmid.ctx')
    python = version and require_python(version)
    ctx = router.local(python_path=python, name='forking')
    other = router.local(python_path=python)
    for pause in (0, 0.3):
        called = ctx.call(local_fns.fork_and_try, 'call', other, pause)
        assert called.startswith('ContextLost: '), (pause, called)
        imported = ctx.call(local_fns.fork_and_try, 'import', None, pause)
        assert imported.startswith('ModuleNotFoundError: '), (pause, imported)
        assert ctx.call(local_fns.fork_and_try, 'print', None, pause) == \
            'printed', pause
    printed = [r.getMessage() for r in caplog.records
               if r.name == 'plasmid.ctx.forking']
    assert len([m for m in printed if m.startswith('printed by fork ')]) \
        == 2, printed
    # The context itself still has its link.
    assert ctx.call(local_fns.import_value, 'fetched_late') == 'fetched'
    assert ctx.call(local_fns.getpid) == ctx.info['pid']


@pytest.mark.parametrize('version', [None, '3.7'])
def test_a_fork_made_while_a_thread_holds_the_links_locks_fails_fast(
        router: plasmid.Router, version: str | None) -> None:
    """A fork inherits each lock as it was: one another thread held at the
    fork (a send, a pending reply, an import in progress) stays held for
    ever there, and the fork's call or import waited for it."""
    python = version and require_python(version)
    ctx = router.local(python_path=python)
    other = router.local(python_path=python)
    called = ctx.call(local_fns.fork_while_locked, 'call', other)
    assert called is not None and called.startswith('ContextLost: '), called
    imported = ctx.call(local_fns.fork_while_locked, 'import', None)
    assert imported is not None and \
        imported.startswith('ModuleNotFoundError: '), imported
    assert ctx.call(local_fns.getpid) == ctx.info['pid']


# A master whose fork exits as programs do (its atexit handlers run), then
# calls its context again: prints what the call and the fork's exit gave.
EXITING_FORK = """
import os, sys
sys.path[:0] = %r
import plasmid
with plasmid.Router(threaded=%r) as router:
    ctx = router.local()
    before = ctx.call(os.getpid)
    fork = os.fork()
    if fork == 0:
        sys.exit(0)
    status = os.waitpid(fork, 0)[1]
    print(status, ctx.call(os.getpid) == before, flush=True)
"""


@pytest.mark.parametrize('threaded', [False, True])
def test_a_fork_of_the_master_that_exits_leaves_its_contexts_alone(
        threaded: bool) -> None:
    """The fork's exit ran the router's atexit clean-up: the parent's
    contexts were shut down (and a threaded router's exit took 5 s)."""
    master = subprocess.run(
        [sys.executable, '-c', EXITING_FORK % (sys.path, threaded)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
    assert master.stdout.split() == [b'0', b'True'], master.stderr


# A fork made while another thread holds one of the router's locks: its
# call fails (exit 3) or hangs (SIGALRM); then it leaves the router's block.
FORK_UNDER_A_HELD_LOCK = """
import os, signal, sys, threading
sys.path[:0] = %r
import plasmid
with plasmid.Router(threaded=True) as router:
    ctx = router.local()
    statuses = []
    for lock in (router.core.lock, router.lock, router.loop.deferred_lock,
                 router.responder.lock):
        held, done = threading.Event(), threading.Event()
        def hold():
            with lock:
                held.set()
                done.wait()
        holder = threading.Thread(target=hold)
        holder.start()
        held.wait()
        fork = os.fork()
        if fork == 0:
            signal.alarm(10)
            try:
                ctx.call(os.getpid)
            except plasmid.ContextLost:
                router.shutdown()
                os._exit(3)
            os._exit(0)
        statuses.append(os.waitpid(fork, 0)[1])
        done.set()
        holder.join()
    print(statuses, ctx.call(os.getpid) == ctx.info['pid'], flush=True)
"""


def test_a_fork_made_while_a_lock_was_held_fails_its_calls_at_once() -> None:
    """The fork's router kept the parent's locks (held by a thread the
    fork lacks): its calls waited for ever instead of failing."""
    master = subprocess.run(
        [sys.executable, '-c', FORK_UNDER_A_HELD_LOCK % (sys.path,)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
    assert master.stdout.split(b'\n')[0] == b'[768, 768, 768, 768] True', \
        master.stderr


# A fork made while a call was under way: it waits on that call's future
# (exit 3: it failed at once, saying why; SIGALRM: it waited).
PENDING_IN_A_FORK = '''
import os, signal, sys, time
sys.path[:0] = %r
import plasmid
with plasmid.Router(threaded=%r) as router:
    ctx = router.local()
    future = ctx.call_async(time.sleep, 1)
    fork = os.fork()
    if fork == 0:
        signal.alarm(20)
        try:
            future.result(timeout=15)
        except plasmid.ContextLost as exc:
            os._exit(3 if 'a fork of the master' in str(exc) else 4)
        os._exit(0)
    print(os.waitpid(fork, 0)[1], future.result(), flush=True)
'''


@pytest.mark.parametrize('threaded', [False, True])
def test_a_call_under_way_as_the_master_forks_fails_in_the_fork(
        threaded: bool) -> None:
    """Its reply goes to the parent: in the fork, the future waited for
    ever (a new call failed at once)."""
    master = subprocess.run(
        [sys.executable, '-c', PENDING_IN_A_FORK % (sys.path, threaded)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
    assert master.stdout.split() == [b'768', b'None'], master.stderr


# A master that forks a long-lived worker (multiprocessing's fork, say),
# prints its context's pid and the worker's, and is killed.
FORKING_MASTER = '''
import os, signal, sys, time
sys.path[:0] = %r
import plasmid
router = plasmid.Router()
ctx = router.local()
fork = os.fork()
if fork == 0:
    os.dup2(os.open(os.devnull, os.O_RDWR), 1)  # the test reads to the end
    time.sleep(120)
    os._exit(0)
print(ctx.call(os.getpid), fork, flush=True)
os.kill(os.getpid(), signal.SIGKILL)
'''


def test_a_fork_of_a_killed_master_does_not_keep_its_contexts_up() -> None:
    """The fork held the master's ends of the contexts' pipes: after the
    master died, its context ran as long as the fork did."""
    master = subprocess.run(
        [sys.executable, '-c', FORKING_MASTER % (sys.path,)],
        stdout=subprocess.PIPE, timeout=120)
    context, fork = map(int, master.stdout.split())
    try:
        assert master.returncode == -signal.SIGKILL
        assert alive(fork)
        assert wait_gone([context], LOST_WITHIN + 10) == set()
    finally:
        for pid in (context, fork):
            if alive(pid):
                os.kill(pid, signal.SIGKILL)


@pytest.mark.parametrize('version', [None, '2.7'])
def test_a_call_that_closes_fd_0_leaves_a_clean_exit(
        router: plasmid.Router, version: str | None, caplog) -> None:
    """The context put /dev/null over fds 1 and 2 at its exit from fd 0:
    a call that had closed fd 0 made that exit print a traceback (EBADF),
    and one that reopened it pointed them at the caller's file."""
    caplog.set_level(logging.INFO, logger='plasmid.ctx')
    python = version and require_python(version)
    ctx = router.local(python_path=python, name='fd0')
    ctx.call(os.close, 0)
    ctx.shutdown(wait=True)
    said = [r.getMessage() for r in caplog.records
            if r.name == 'plasmid.ctx.fd0']
    assert not any('Traceback' in m or 'Error' in m for m in said), said


def test_killing_the_middle_of_a_via_chain(router: plasmid.Router) -> None:
    top = router.local(name='top')
    middle = router.local(name='middle', via=top)
    bottom = router.local(name='bottom', via=middle)
    sibling = router.local(name='sibling', via=top)
    unrelated = router.local(name='unrelated')
    # Calls are routed down the chain: each one's parent is the hop above.
    assert bottom.call(local_fns.getppid) == middle.info['pid']
    assert middle.call(local_fns.getppid) == top.info['pid']
    assert sibling.call(local_fns.getppid) == top.info['pid']
    assert bottom.call(local_fns.getpid) == bottom.info['pid']

    pending = [middle.call_async(local_fns.sleep_then, 60, 'never'),
               bottom.call_async(local_fns.sleep_then, 60, 'never')]
    os.kill(middle.info['pid'], signal.SIGKILL)
    for fut in pending:
        expect_lost(fut)
    for ctx in (middle, bottom):
        expect_lost(ctx.call_async(local_fns.getpid))
        with pytest.raises(plasmid.ContextLost):
            ctx.call_no_reply(local_fns.getpid)
    with pytest.raises(plasmid.ContextLost) as gone:
        router.local(via=bottom)
    assert isinstance(gone.value, plasmid.ConnectError)  # a failed start
    # The bottom context lost its parent and must have ended itself.
    assert wait_gone([bottom.info['pid']], LOST_WITHIN) == set()
    for ctx in (top, sibling, unrelated):
        assert ctx.call(local_fns.getpid) == ctx.info['pid']
    # The surviving hop can still start new contexts below itself.
    again = router.local(name='again', via=top)
    assert again.call(local_fns.getppid) == top.info['pid']


def test_a_failed_start_below_a_hop_leaves_no_route_there(
        router: plasmid.Router) -> None:
    """Each hop above an intermediary learns the route to a context
    started there before it starts; a start that failed left that route
    behind in the hop, one more for every failed start of a controller
    that retries (before: 3 of 3)."""
    top = router.local(name='top')
    middle = router.local(name='middle', via=top)
    before = top.call(local_fns.routes_known)
    for _ in range(3):
        with pytest.raises(plasmid.ConnectError):
            router.local(python_path='/nonexistent/python', via=middle)
    assert top.call(local_fns.routes_known) == before == [middle.context_id]
    assert middle.call(local_fns.routes_known) == []
    # The route to the next start below middle is learnt as before.
    bottom = router.local(name='bottom', via=middle)
    assert bottom.call(local_fns.getppid) == middle.info['pid']


@pytest.mark.parametrize('version', ['2.7', '3.6', 'master'])
def test_a_program_an_intermediary_cannot_run_is_named_once(
        router: plasmid.Router, version) -> None:
    """Python 3.6's subprocess named the file twice ("...: '/x': '/x'"),
    2.7's not at all."""
    hop = router.local(name='hop', python_path=require_python(version))
    with pytest.raises(plasmid.ConnectError) as caught:
        router.local(python_path='/nonexistent/python', via=hop)
    assert str(caught.value) == ('cannot run /nonexistent/python: '
                                 '[Errno 2] No such file or directory')


@pytest.mark.parametrize('version', ['2.7', '3.6', 'master'])
def test_a_program_beyond_ascii_starts_through_any_intermediary(
        router: plasmid.Router, tmp_path, monkeypatch, version) -> None:
    """Before, through a 2.7 context: "TypeError: execv() arg 2 must
    contain only strings" (and a unicode path was taken apart into
    letters); through 3.6 in the C locale (as over ssh without LANG), a
    UnicodeEncodeError; each as a CallError with a remote traceback."""
    monkeypatch.setenv('LC_ALL', 'C')
    hop = router.local(name='hop', python_path=require_python(version))
    (tmp_path / 'café').mkdir()
    python = tmp_path / 'café' / 'python'
    python.symlink_to(sys.executable)
    below = router.local(python_path=str(python), via=hop)
    assert below.call(local_fns.getppid) == hop.info['pid']
    with pytest.raises(plasmid.ConnectError, match='[Nn]o such file'):
        router.local(python_path=str(tmp_path / 'café' / 'none'), via=hop)


def test_a_start_through_a_frozen_intermediary_fails_naming_it(
        router: plasmid.Router) -> None:
    """Before: "plasmid.TimeoutError: no result within 7s", naming
    neither the start nor the intermediary that stopped answering."""
    hop = router.local(name='hop')
    os.kill(hop.info['pid'], signal.SIGSTOP)
    try:
        with pytest.raises(plasmid.ConnectError, match='cannot start below '
                           'via hop: hop did not answer within'):
            router.local(name='below', via=hop, connect_timeout=0.5)
    finally:
        os.kill(hop.info['pid'], signal.SIGCONT)
    # Thawed, it ran the start, then the stop sent after it: the context
    # it started ends.
    deadline = time.time() + LOST_WITHIN
    while hop.call(local_fns.routes_known) and time.time() < deadline:
        time.sleep(0.05)
    assert hop.call(local_fns.routes_known) == []
    assert hop.call(local_fns.links_to_children) == 0


def test_an_intermediary_forgets_the_links_of_children_that_ended(
        router: plasmid.Router) -> None:
    """Before, a hop kept every child's link it ever had (about 40 KiB
    each): a bastion grew for as long as it lived."""
    hop = router.local(name='hop')
    for _ in range(20):
        router.local(via=hop).shutdown()
    staying = router.local(name='staying', via=hop)
    with pytest.raises(plasmid.ConnectError):
        router.local(python_path='/nonexistent/python', via=hop)
    assert hop.call(local_fns.links_to_children) == 1
    staying.shutdown()
    assert hop.call(local_fns.links_to_children) == 0


# ------------------------------------------------------------ shutdown

@pytest.mark.parametrize('timeout', [4.0, 1.0])
def test_shutdown_of_a_busy_context(router: plasmid.Router,
                                    timeout: float) -> None:
    ctx = router.local(name='spinner')
    pid = ctx.info['pid']
    stuck = ctx.call_async(local_fns.busy_loop)
    started = time.monotonic()
    ctx.shutdown(timeout=timeout)
    # Within its timeout, plus a moment to kill and reap a stuck process.
    assert time.monotonic() - started < timeout + 1.0
    assert not ctx.is_alive()
    assert not alive(pid)
    with pytest.raises(plasmid.ContextLost, match='it was shut down'):
        stuck.result(timeout=LOST_WITHIN)  # not "the connection was lost"
    assert zombie_children() == []


@pytest.mark.parametrize('via', [False, True])
def test_a_call_ending_within_the_shutdowns_timeout_gives_its_result(
        router: plasmid.Router, tmp_path, via: bool) -> None:
    """A context told to shut down ended a call still running 2 s later
    (its own grace), whatever the shutdown waited: a 3 s call under
    shutdown(timeout=30) failed with ContextLost.  It may run as long
    as the shutdown waits now."""
    release = tmp_path / 'release'
    ctx = router.local(name='finishing',
                       via=router.local(name='hop') if via else None)
    call = ctx.call_async(local_fns.wait_for_file, str(release), 'done')
    timer = threading.Timer(3.0, release.write_text, ('',))
    timer.start()
    try:
        ctx.shutdown(timeout=30)
    finally:
        timer.cancel()
    assert release.exists()  # the shutdown waited for the call
    assert call.result(timeout=0) == 'done'


def test_shutdown_of_a_busy_via_context(router: plasmid.Router) -> None:
    top = router.local(name='top')
    below = router.local(name='below', via=top)
    pid = below.info['pid']
    below.call_no_reply(local_fns.busy_loop)
    below.shutdown(timeout=10.0)
    assert not below.is_alive()
    assert wait_gone([pid], LOST_WITHIN) == set()
    assert top.call(local_fns.echo, 'alive') == 'alive'


def test_shutdown_of_a_via_context_stuck_in_c_code(
        router: plasmid.Router) -> None:
    """Its loop cannot run to take the SHUTDOWN: a direct child is killed
    at the timeout, but one started via another was left running, and the
    shutdown raised TimeoutError.  Its intermediary kills it now."""
    top = router.local(name='top')
    below = router.local(name='stuck-below', via=top)
    pid = below.info['pid']
    stuck = below.call_async(local_fns.busy_in_c)
    time.sleep(0.2)  # well into it
    below.shutdown(timeout=1.0)
    assert not below.is_alive()
    assert wait_gone([pid], LOST_WITHIN) == set()
    with pytest.raises(plasmid.ContextLost):
        stuck.result(timeout=LOST_WITHIN)
    assert top.call(local_fns.echo, 'alive') == 'alive'


def test_shutting_down_an_intermediary_whose_child_is_busy(
        router: plasmid.Router, caplog) -> None:
    """The idle intermediary waits for the child it told to stop; before,
    its own 2 s grace ran out while it waited, it said a call of its own
    had outlived the shutdown and exited with status 1, and the child's
    call failed naming the lost link, not the shutdown."""
    caplog.set_level(logging.INFO, logger='plasmid.ctx')
    top = router.local(name='idle-top')
    below = router.local(name='busy-below', via=top)
    stuck = below.call_async(local_fns.busy_loop)
    top.shutdown(timeout=10.0)
    with pytest.raises(plasmid.ContextLost, match='it was shut down'):
        stuck.result(timeout=LOST_WITHIN)
    outlived = [r.name for r in caplog.records
                if 'still ran' in r.getMessage()]
    assert outlived == ['plasmid.ctx.busy-below']


def slow_python(seconds: float) -> list[str]:
    """A python_path whose interpreter starts *seconds* late (sh sleeps
    first): a start of it is surely under way for that long."""
    return ['sh', '-c', 'sleep %g; exec "$0" "$@"' % seconds, sys.executable]


def test_an_intermediary_lost_mid_start_fails_the_start_as_both_errors(
        router: plasmid.Router) -> None:
    """A start through an intermediary killed while it started raised
    ContextLost alone: code catching ConnectError around its starts (a
    context could not be started) missed it.  It is both now, as is a
    start through one already gone."""
    top = router.local(name='killed-mid-start')
    killer = threading.Timer(1.0, os.kill, (top.info['pid'], signal.SIGKILL))
    killer.start()
    try:
        with pytest.raises(plasmid.ConnectError) as failed:
            router.local(via=top, python_path=slow_python(3))
    finally:
        killer.cancel()
    assert isinstance(failed.value, plasmid.ContextLost)
    assert 'via killed-mid-start' in str(failed.value)
    assert failed.value.said.endswith(' was killed by signal 9'), \
        failed.value.said


def start_in_thread(start) -> tuple[threading.Thread, dict]:
    """Run *start*() on a thread; the dict gets its 'context' or 'error'."""
    outcome: dict = {}

    def run() -> None:
        try:
            outcome['context'] = start()
        except plasmid.Error as exc:
            outcome['error'] = exc
    thread = threading.Thread(target=run)
    thread.start()
    return thread, outcome


def wait_for_new_processes(under: int, known: set) -> set:
    deadline = time.monotonic() + 10.0
    while time.monotonic() < deadline:
        new = descendants([under]) - known
        if new:
            return new
        time.sleep(0.01)
    raise AssertionError('no process started below %d' % under)


def test_a_start_under_way_when_the_router_shuts_down_ends_with_it() -> None:
    """A context still starting in another thread when the router shuts
    down came up afterwards and outlived the router: now its start fails,
    its program killed."""
    known = descendants([os.getpid()])
    router = plasmid.Router()
    thread, outcome = start_in_thread(
        lambda: router.local(python_path=slow_python(30)))
    starting = wait_for_new_processes(os.getpid(), known)
    router.shutdown()
    thread.join(LOST_WITHIN)
    assert not thread.is_alive()
    assert 'shut down while it started' in str(outcome.get('error')), outcome
    assert wait_gone(starting, LOST_WITHIN) == set()
    assert zombie_children() == []
    with pytest.raises(plasmid.ConnectError, match='has been shut down'):
        router.local()


def test_a_start_via_another_when_the_router_shuts_down_fails() -> None:
    router = plasmid.Router()
    top = router.local(name='top')
    known = descendants([top.info['pid']])
    thread, outcome = start_in_thread(
        lambda: router.local(via=top, python_path=slow_python(60)))
    starting = wait_for_new_processes(top.info['pid'], known)
    pending = top.call_async(local_fns.sleep_then, 60, 'never')
    router.shutdown()
    thread.join(LOST_WITHIN)
    assert not thread.is_alive()
    with pytest.raises(plasmid.ContextLost, match='it was shut down'):
        pending.result(timeout=LOST_WITHIN)
    assert isinstance(outcome.get('error'), plasmid.ConnectError), outcome
    assert 'shut down while it started' in str(outcome['error'])
    assert router.contexts == {}
    # The intermediary killed the program it was starting as it left.
    assert wait_gone(starting, LOST_WITHIN) == set()


# ----------------------------------------------------- master exits

def read_line(proc: subprocess.Popen, timeout: float) -> str:
    """The first stdout line of *proc*, or fail after *timeout*."""
    ready, _, _ = select.select([proc.stdout], [], [], timeout)
    assert ready, 'the master script printed nothing'
    return proc.stdout.readline()


EXIT_MODES = {
    # mode: (signal to send, expected return code, text expected on stderr)
    'normal': (None, 0, ''),
    'atexit': (None, 0, ''),
    'exception': (None, 1, 'deliberate failure in the Router block'),
    'exception-bare': (None, 1, 'deliberate failure without a Router'),
    'sigterm': (signal.SIGTERM, -signal.SIGTERM, ''),
    'sigint': (signal.SIGINT, -signal.SIGINT, 'KeyboardInterrupt'),
}


@pytest.mark.parametrize('mode', sorted(EXIT_MODES))
def test_master_exit_leaves_no_context(mode: str, tmp_path) -> None:
    send, want_rc, want_err = EXIT_MODES[mode]
    errors = open(tmp_path / 'stderr', 'w+')
    proc = subprocess.Popen(
        [sys.executable, os.path.join(SCRIPTS, 'exit_modes.py'), mode],
        stdout=subprocess.PIPE, stderr=errors, text=True,
        preexec_fn=interruptible)
    try:
        pids = json.loads(read_line(proc, 60))
        assert len(pids) == 5
        if send is not None:
            proc.send_signal(send)
        rc = proc.wait(30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        errors.seek(0)
        stderr = errors.read()
        errors.close()
    assert rc == want_rc, stderr
    assert want_err in stderr
    # Whatever ended the master, every context (busy ones included) goes.
    assert wait_gone(pids, LOST_WITHIN) == set()


# --------------------------------------------------------------- leaks

def test_many_connect_shutdown_cycles_leak_nothing(
        router: plasmid.Router) -> None:
    fds_before = open_files()
    handles_before = set(router.core.handlers)
    pids = []
    for _ in range(200):
        ctx = router.local()
        pid = ctx.call(local_fns.getpid)
        assert pid == ctx.info['pid']
        pids.append(pid)
        ctx.shutdown()
    assert len(set(pids)) == 200
    assert [p for p in pids if alive(p)] == []
    assert zombie_children() == []
    assert not new_since(fds_before)
    assert router.streams == []
    # Nor any record of them (each held its link: ~25 KiB).
    assert router.contexts == {}
    assert router.contexts_started == 200
    assert not router.responder.messages_sent
    # Nor any handle or route for them; only that each is gone, and why
    # (about 170 bytes a context: is_alive() and its errors read them).
    assert set(router.core.handlers) == handles_before
    assert router.core.pending == {} and router.core.routes == {}
    assert len(router.core.lost_reason) == 200


def test_a_context_started_through_another_is_forgotten_with_it(
        router: plasmid.Router) -> None:
    via = router.local(name='via')
    behind = router.local(via=via)
    assert behind.call(local_fns.getpid) == behind.info['pid']
    assert set(router.contexts) == {via.context_id, behind.context_id}
    via.shutdown()  # and behind with it
    assert not behind.is_alive()
    assert router.contexts == {}
    assert router.responder.behind == {}
    assert router.contexts_started == 2


def test_many_router_cycles_leak_nothing() -> None:
    fds_before = open_files()
    pids = []
    for _ in range(50):
        with plasmid.Router() as r:
            ctx = r.local()
            pids.append(ctx.call(local_fns.getpid))
    assert len(set(pids)) == 50
    assert [p for p in pids if alive(p)] == []
    assert zombie_children() == []
    assert not new_since(fds_before)


def test_calling_a_context_out_of_reach_fails_instead_of_hanging(
        router: plasmid.Router) -> None:
    """A context may not address its sibling's child: the master refuses
    to route the call, and the caller learns so at once."""
    left, right = router.local(name='left'), router.local(name='right')
    below = router.local(name='below', via=right)
    with pytest.raises(plasmid.CallError) as caught:
        left.call_async(local_fns.call_getpid_of, below).result(timeout=10)
    assert 'ContextLost' in str(caught.value)
    # Its parent may call it.
    assert right.call(local_fns.call_getpid_of, below) == below.info['pid']


@pytest.mark.parametrize('version', [None, '2.7'])
def test_shutting_down_a_context_out_of_reach_fails_at_once(
        router: plasmid.Router, version) -> None:
    """The master refused the SHUTDOWN, which wants no answer, so nothing
    came back: the context waited the whole timeout (TimeoutError), where
    a call fails at once.  Its parent may shut it down."""
    python = version and require_python(version)
    left = router.local(name='left', python_path=python)
    right = router.local(name='right', python_path=python)
    below = router.local(name='below', via=right)
    for far in (right, below):
        with pytest.raises(plasmid.CallError,
                           match='ContextLost: context %d may not address '
                                 'context %d' % (left.context_id,
                                                 far.context_id)):
            left.call_async(local_fns.shut_down, far, 60).result(timeout=30)
    assert right.call(local_fns.shut_down, below, 30) is False
    # Nor may it shut the master down (a handle the master does not serve).
    with pytest.raises(plasmid.CallError,
                       match='context 0 takes no messages on handle'):
        left.call_async(local_fns.shut_down_the_master, 60).result(
            timeout=30)
    with pytest.raises(plasmid.ContextLost):
        below.call(local_fns.getpid)


def _other_readers(fd: int) -> list[int]:
    """Processes other than this one holding the pipe *fd* is one end of."""
    pipe = os.readlink('/proc/self/fd/%d' % fd)
    holders = []
    for pid in filter(str.isdigit, os.listdir('/proc')):
        if int(pid) == os.getpid():
            continue
        try:
            fds = os.listdir('/proc/%s/fd' % pid)
            if any(os.readlink('/proc/%s/fd/%s' % (pid, f)) == pipe
                   for f in fds):
                holders.append(int(pid))
        except OSError:
            continue
    return holders


def test_a_call_to_a_dead_context_whose_link_another_holds_fails_at_once(
        router: plasmid.Router) -> None:
    """A process the context started holds its link open: the master
    sees no end of it, but writing fails; the call must fail then, not
    wait for that process to end."""
    ctx = router.local(name='held')
    holder = ctx.call(local_fns.hold_link_open, 60)
    try:
        os.kill(ctx.call(os.getpid), signal.SIGKILL)
        wait_gone([ctx.info['pid']], LOST_WITHIN)
        # Its watchdog reads that pipe too, a moment longer: until it is
        # gone a write still succeeds, and nothing would tell the master.
        to_context = router.core.routes[ctx.context_id].wfd
        deadline = time.monotonic() + LOST_WITHIN
        while _other_readers(to_context) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _other_readers(to_context)
        with pytest.raises(plasmid.ContextLost, match='connection to held') \
                as caught:
            ctx.call_async(os.getpid).result(timeout=LOST_WITHIN)
        assert caught.value.said.endswith('killed by signal 9'), caught.value
    finally:
        os.kill(holder, signal.SIGKILL)


def test_a_call_to_a_dead_context_whose_link_another_reads_fails(
        router: plasmid.Router) -> None:
    """A process the context left behind holds both ends of its link, so
    the link neither ends nor refuses writes: the program's exit must end
    it, or the call waits for as long as that process lives."""
    ctx = router.local(name='forked')
    holder = ctx.call(local_fns.hold_both_link_ends, 60)
    try:
        os.kill(ctx.call(os.getpid), signal.SIGKILL)
        with pytest.raises(plasmid.ContextLost) as caught:
            ctx.call_async(os.getpid).result(timeout=LOST_WITHIN)
        assert 'killed by signal 9' in str(caught.value)
    finally:
        os.kill(holder, signal.SIGKILL)


def test_a_link_broken_by_stray_output_says_so(
        router: plasmid.Router) -> None:
    """Output that is no frame (a job ~/.bashrc left behind writing on
    ssh's stdout) loses the context: its ContextLost said only "the
    connection was lost", the reason being in a log record alone."""
    lost = _lost_to_noise(router, local_fns.write_on_the_link)
    assert lost.said == \
        "it sent a malformed frame: bad frame magic b'la'", lost
    assert 'the connection to noisy was lost: it sent a malformed frame' \
        in str(lost)


def test_what_came_whole_before_stray_output_is_delivered(
        router: plasmid.Router, caplog) -> None:
    """The frames read together with the garbage that followed them were
    dropped with it: a HELLO so read made the context "not boot"."""
    caplog.set_level(logging.INFO, logger='plasmid.ctx')
    lost = _lost_to_noise(router, local_fns.write_a_record_then)
    assert 'malformed frame' in lost.said
    assert 'before the noise' in [r.getMessage() for r in caplog.records
                                  if r.name == 'plasmid.ctx.noisy']


def _lost_to_noise(router: plasmid.Router, write) -> plasmid.ContextLost:
    """A context 'noisy' that calls ``write(noise)`` (writing on its own
    link) is lost: how."""
    ctx = router.local(name='noisy')
    ctx.call_no_reply(write, b'late-noise from a job left behind\n')
    with pytest.raises(plasmid.ContextLost) as caught:
        ctx.call_async(local_fns.sleep_then, 60, 'never').result(
            timeout=LOST_WITHIN)
    return caught.value


def test_a_context_that_ended_without_a_word_says_how_it_ended(
        router: plasmid.Router) -> None:
    """os._exit(), or the OOM killer's SIGKILL: the context was lost with
    no reason at all."""
    exits = router.local(name='exits')
    with pytest.raises(plasmid.ContextLost) as caught:
        exits.call(os._exit, 7)
    assert caught.value.said == '%s exited with status 7' % \
        os.path.basename(sys.executable)
    assert 'exited with status 7' in str(caught.value)
    killed = router.local(name='killed')
    with pytest.raises(plasmid.ContextLost) as caught:
        killed.call(os.kill, killed.info['pid'], signal.SIGKILL)
    assert caught.value.said.endswith('was killed by signal %d'
                                      % signal.SIGKILL)
    # A call that wants no reply is told as much (before: "context killed
    # is gone", no more).
    with pytest.raises(plasmid.ContextLost) as told:
        killed.call_no_reply(os.getpid)
    assert str(told.value) == str(caught.value)
    assert told.value.said == caught.value.said
    # A context shut down has nothing to explain.
    quiet = router.local(name='quiet')
    quiet.shutdown()
    with pytest.raises(plasmid.ContextLost) as caught:
        quiet.call(os.getpid)
    assert caught.value.said == ''
    with pytest.raises(plasmid.ContextLost, match='it was shut down'):
        quiet.call_no_reply(os.getpid)


@pytest.mark.parametrize('version', ['2.7', '3.13'])
def test_a_call_up_the_tree_or_to_itself_fails_at_once(
        router: plasmid.Router, version: str) -> None:
    """A child may not call its parent, nor a context itself (its calls
    run one at a time): both were dropped unanswered, the call waited for
    ever and the context never answered again."""
    python = require_python(version)
    upper = router.local(name='upper', python_path=python)
    lower = router.local(name='lower', via=upper, python_path=python)
    for caller, callee in ((lower, upper), (upper, upper)):
        with pytest.raises(plasmid.CallError) as caught:
            caller.call_async(local_fns.call_getpid_of, callee).result(
                timeout=20)
        assert 'ContextLost' in str(caught.value)
        assert 'may not address' in str(caught.value)
        assert caller.call(local_fns.getpid) == caller.info['pid']


def _reply_handle_for(router: plasmid.Router, target: int) -> int:
    """The handle of the master's pending call to *target*."""
    pending = [h for h, (t, _) in router.core.pending.items() if t == target]
    assert len(pending) == 1, router.core.pending
    return pending[0]


def test_a_sibling_behind_the_same_intermediary_cannot_answer_for_another(
        router: plasmid.Router, caplog, tmp_path) -> None:
    """Contexts behind one intermediary share its link to the master, the
    only thing the core checks: an (unprivileged) sibling could answer
    the master's calls to another (root) in its stead, or have the master
    drop it with a DEL_ROUTE of its own making."""
    hop = router.local(name='hop')
    victim = router.local(name='victim', via=hop)
    sibling = router.local(name='sibling', via=hop)
    release = str(tmp_path / 'release')
    # The victim's call ends only when the test says: a forged reply that
    # got through could not hide behind the real one.
    pending = victim.call_async(local_fns.wait_for_file, release, 'real')
    handle = _reply_handle_for(router, victim.context_id)
    with caplog.at_level(logging.ERROR, 'plasmid.core.router'):
        sibling.call(local_fns.forge_reply, 0, handle, 'forged')
        sibling.call(local_fns.forge_del_route, 0, [victim.context_id])
        # Both came to the master before the replies to these calls (one
        # link, in order): the reply was refused, the DEL_ROUTE ignored,
        # while the real call still runs.
        refused = [r.getMessage() for r in caplog.records
                   if 'may not address' in r.getMessage()]
        assert len(refused) == 1, refused
        assert 'handle=%d ' % handle in refused[0]
        assert victim.context_id not in router.core.lost
        assert victim.context_id in router.core.routes
        assert not pending.done()
        open(release, 'w').close()
        assert pending.result(timeout=30) == 'real'
    assert victim.call(os.getpid) == victim.info['pid']  # still routed
    assert any('may not address' in r.getMessage() for r in caplog.records)
    # A router on the way may still answer for the context it cannot reach.
    hop.call(local_fns.forge_del_route, 0, [victim.context_id])
    with pytest.raises(plasmid.ContextLost, match='forged'):
        victim.call(os.getpid)
