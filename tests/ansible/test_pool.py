"""The broker's contexts (pool.py), without ansible-core or the broker."""
from __future__ import annotations

import concurrent.futures
import os
import signal
import threading
import time

import pytest

import plasmid
from plasmid.ansible import pool, target
from plasmid.core.errors import ConnectError
from pool_stand_ins import StandInRouter, python_of
from testbed.dropping import DroppingPort
from testbed.ports import free_port
from testbed.pythons import require_python, slow_python_script


def _spec(sshd, become=None, **ssh) -> dict:
    return {'login': dict(sshd.ssh_kwargs(), method='ssh', **ssh),
            'become': become}


ROOT = {'method': 'sudo', 'username': 'root'}


def _held_at_once(contexts: pool.Pool, spec: dict, count: int) -> list:
    """What *count* threads get for *spec* while each holds what it got
    until all have theirs (tasks running at once), then lets go."""
    found: list = [None] * count
    all_in = threading.Barrier(count)

    def task(i: int) -> None:
        found[i] = contexts.get(spec, None)
        all_in.wait(120)
        contexts.release()
    _in_threads(task, count)
    return found


def _one_after_another(contexts: pool.Pool, spec: dict, count: int) -> list:
    found: list = []

    def task(_: int) -> None:
        found.append(contexts.get(spec, None))
        contexts.release()
    for i in range(count):
        _in_threads(task, 1)
    return found


def _in_threads(task, count: int) -> None:
    threads = [threading.Thread(target=task, args=(i,))
               for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
        assert not thread.is_alive()


def test_tasks_one_after_another_share_one_login(sshd):
    with plasmid.Router(threaded=True) as router:
        contexts = pool.Pool(router)
        found = _one_after_another(contexts, _spec(sshd), 4)
        assert len({id(t) for t in found}) == 1
        assert contexts.router_contexts() == 1


def test_tasks_at_once_get_lanes_of_their_own_kept_for_later(sshd):
    """A context runs one call at a time: tasks of one login at once
    (delegated to one host, say) each get a context, as each gets an ssh
    session under vanilla; later tasks reuse those."""
    with plasmid.Router(threaded=True) as router:
        contexts = pool.Pool(router)
        at_once = _held_at_once(contexts, _spec(sshd), 3)
        assert len({id(t) for t in at_once}) == 3
        assert contexts.router_contexts() == 3
        later = _one_after_another(contexts, _spec(sshd), 3) + \
            _held_at_once(contexts, _spec(sshd), 2)
        assert {id(t) for t in later} <= {id(t) for t in at_once}
        assert contexts.router_contexts() == 3


def test_at_most_max_starting_lanes_of_a_login_start_at_once(
        sshd, monkeypatch):
    """Tasks at once on a known login start new lanes a few at a time:
    sshd's default MaxStartups drops logins at random beyond ten."""
    monkeypatch.setattr(pool, 'MAX_STARTING', 2)
    with plasmid.Router(threaded=True) as router:
        contexts = pool.Pool(router)
        _one_after_another(contexts, _spec(sshd), 1)  # the login's first
        log_in = contexts._log_in
        starting = []
        peak = []
        count = threading.Lock()

        def counted(*args):
            with count:
                starting.append(1)
                peak.append(len(starting))
            try:
                return log_in(*args)
            finally:
                with count:
                    starting.pop()
        contexts._log_in = counted
        at_once = _held_at_once(contexts, _spec(sshd), 6)
        assert len({id(t) for t in at_once}) == 6
        assert contexts.router_contexts() == 6
        assert len(peak) == 5 and max(peak) == 2, peak


def test_a_new_lane_whose_login_fails_is_tried_again_while_others_live(
        sshd):
    """A login's only context that fails to start fails the task, as
    vanilla's ssh does; another lane's login that fails while the first
    lives or starts is the moment's load: it is tried again."""
    with DroppingPort(sshd.server, drop=lambda n: n == 1) as port, \
            plasmid.Router(threaded=True) as router:
        contexts = pool.Pool(router)
        with pytest.raises(ConnectError, match='Connection closed'):
            contexts.get(_spec(sshd, port=port.port), None)
        assert contexts.lane_retries == 0
    with DroppingPort(sshd.server, drop=lambda n: n == 2) as port, \
            plasmid.Router(threaded=True) as router:
        contexts = pool.Pool(router)
        at_once = _held_at_once(contexts, _spec(sshd, port=port.port), 2)
        assert len({id(t) for t in at_once}) == 2
        assert (port.accepted, port.dropped) == (3, 1)
        assert contexts.lane_retries == 1


def test_tasks_at_once_on_a_login_that_never_answers_each_fail_once(sshd):
    """No retries where no lane of the login ever came up: each task
    fails with its own login's error, as vanilla's do, none later."""
    with DroppingPort(sshd.server, drop=lambda n: True) as port, \
            plasmid.Router(threaded=True) as router:
        contexts = pool.Pool(router)
        failed: list = []

        def task(_: int) -> None:
            try:
                contexts.get(_spec(sshd, port=port.port), None)
            except ConnectError as exc:
                failed.append(exc)
        _in_threads(task, 3)
        assert len(failed) == 3 and port.accepted == 3
        assert contexts.lane_retries == 0
        assert contexts.router_contexts() == 0


def test_a_become_lane_goes_with_the_login_lane_it_came_through(sshd):
    """Calls sent ahead to a login must come before the become user's
    call that follows, so a task's become context is one started through
    the login context it holds."""
    with plasmid.Router(threaded=True) as router:
        contexts = pool.Pool(router)
        pairs: list = [None] * 2
        all_in = threading.Barrier(2)

        def task(i: int) -> None:
            root = contexts.get(_spec(sshd, ROOT), None)
            pairs[i] = (contexts.get(_spec(sshd), None), root)
            all_in.wait(120)
            contexts.release()
        _in_threads(task, 2)
        for login, root in pairs:
            assert root.context.via is login.context
        assert pairs[0][0] is not pairs[1][0]
        assert contexts.router_contexts() == 4

        def later(_: int) -> None:
            root = contexts.get(_spec(sshd, ROOT), None)
            login = contexts.get(_spec(sshd), None)
            assert root.context.via is login.context
            assert root in [r for _, r in pairs]
            contexts.release()
        _in_threads(later, 1)
        assert contexts.router_contexts() == 4


def test_abandoning_a_busy_lane_leaves_the_others(sshd):
    """A worker gone mid-call (its task's timeout) takes its own lane out
    of the pool; another task's lane of the same login goes on."""
    with plasmid.Router(threaded=True) as router:
        contexts = pool.Pool(router)
        lanes: dict = {}
        all_in = threading.Barrier(2)

        def task(i: int) -> None:
            lanes[i] = contexts.get(_spec(sshd), None)
            all_in.wait(120)
            if i == 0:
                busy = concurrent.futures.Future()
                assert contexts.abandon(_spec(sshd), busy) == 1
                busy.set_result(None)  # the call ends: the lane goes
            all_in.wait(120)
            contexts.release()
        _in_threads(task, 2)
        _wait_gone([lanes[0]])
        assert lanes[1].context.is_alive()
        assert _one_after_another(contexts, _spec(sshd), 1) == [lanes[1]]


def test_the_first_python_found_is_known_by_its_path_too(sshd):
    """A login started with the first Python its shell finds answers for
    that interpreter's path as well: a task that names it (the discovered
    interpreter) needs no second login."""
    with plasmid.Router(threaded=True) as router:
        contexts = pool.Pool(router)
        first = contexts.get(_spec(sshd), None)
        path = first.context.python_path
        assert isinstance(path, str) and 'python' in path, path
        assert contexts.get(_spec(sshd), path) is first
        other = contexts.get(_spec(sshd), require_python('3.12'))
        assert other is not first, 'another interpreter is another context'
        assert contexts.router_contexts() == 2
        # Each ends once, counted once.
        assert contexts.reset(_spec(sshd)) == 2
        assert not first.context.is_alive()


def test_a_become_user_runs_through_the_login_and_reset_ends_both(sshd):
    with plasmid.Router(threaded=True) as router:
        contexts = pool.Pool(router)
        root = contexts.get(_spec(sshd, ROOT), None)
        login = contexts.get(_spec(sshd), None)
        assert root.context.via is login.context
        assert root.context.call(target.run_shell, 'id -u')[:2] == (0, b'0\n')
        assert contexts.reset(_spec(sshd)) == 2
        assert not root.context.is_alive()
        assert not login.context.is_alive()
        again = contexts.get(_spec(sshd), None)
        assert again is not login and again.context.is_alive()


def test_a_login_lost_while_its_become_user_starts_is_a_lost_host(sshd):
    """A start via a context lost meanwhile raises ViaLost, a ConnectError
    too: the pool took it for become's failure (BecomeFailed), which the
    worker answers by running the task as given, instead of the lost
    login that makes the host unreachable."""
    with slow_python_script(3) as slow, \
            plasmid.Router(threaded=True) as router:
        contexts = pool.Pool(router)
        login = contexts.get(_spec(sshd), slow)
        contexts.release()
        killer = threading.Timer(1.0, os.kill,
                                 (login.context.info['pid'], signal.SIGKILL))
        killer.start()
        try:
            with pytest.raises(plasmid.ContextLost) as lost:
                contexts.get(_spec(sshd, ROOT), slow)
        finally:
            killer.cancel()
        assert not isinstance(lost.value, pool.BecomeFailed)


def test_retiring_an_account_ends_only_its_contexts(sshd):
    """Before a module deletes an account, the become contexts running as
    it go; the login and other users stay."""
    with plasmid.Router(threaded=True) as router:
        contexts = pool.Pool(router)
        root = contexts.get(_spec(sshd, ROOT), None)
        login = contexts.get(_spec(sshd), None)
        assert contexts.retire_account(_spec(sshd), 'nobody') == 0
        assert contexts.retire_account(_spec(sshd), 'root') == 1
        assert not root.context.is_alive()
        assert login.context.is_alive()


def test_a_context_another_task_uses_is_retired_when_it_lets_go(sshd):
    """sudo's rules changed (or an account) through one task while another
    ran as root on the same machine: its context was shut down under it,
    and its call failed as a lost connection.  Now it is marked stale and
    shut down when that task lets go; the next task gets a new one."""
    with plasmid.Router(threaded=True) as router:
        contexts = pool.Pool(router)
        holding, go_on = threading.Event(), threading.Event()
        got: dict = {}

        def task() -> None:
            got['root'] = contexts.get(_spec(sshd, ROOT), None)
            holding.set()
            go_on.wait(60)
            got['answer'] = got['root'].context.call(target.run_shell,
                                                     'id -u')[:2]
            contexts.release()
        thread = threading.Thread(target=task)
        thread.start()
        assert holding.wait(60)
        assert contexts.retire_become(_spec(sshd)) == 1
        assert got['root'].context.is_alive()
        go_on.set()
        thread.join(60)
        assert got['answer'] == (0, b'0\n')
        deadline = time.monotonic() + 10
        while got['root'].context.is_alive() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not got['root'].context.is_alive()
        again = contexts.get(_spec(sshd, ROOT), None)
        assert again is not got['root'] and again.context.is_alive()


def test_a_login_failing_as_a_connection_is_tried_again(sshd):
    """``retries`` more tries when ssh cannot connect, as vanilla's
    reconnection_retries; none when the interpreter is what is missing."""
    with plasmid.Router(threaded=True) as router:
        contexts = pool.Pool(router)
        with pytest.raises(ConnectError):
            contexts.get(_spec(sshd, port=free_port(), retries=2), None)
        assert contexts.login_retries == 2
        with pytest.raises(ConnectError) as missing:
            contexts.get(_spec(sshd, retries=2), '/no/such/python')
        assert not pool.worth_retrying(missing.value)
        assert contexts.login_retries == 2


def test_an_unknown_become_method_is_refused(sshd):
    with plasmid.Router(threaded=True) as router:
        contexts = pool.Pool(router)
        with pytest.raises(ValueError, match="no such become method: 'pbrun'"):
            contexts.get(_spec(sshd, {'method': 'pbrun'}), None)


def _first_lane(contexts: pool.Pool, spec: dict) -> pool.Target:
    """The login lane of *spec* that idle lanes never take."""
    return contexts.targets[(pool._freeze(spec['login']), None, None)][0]


def _wait_gone(lanes: list, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while any(t.context.is_alive() for t in lanes) and \
            time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(t.context.is_alive() for t in lanes)


def test_lanes_idle_for_lane_idle_end_but_each_logins_first(sshd):
    """A busy moment's lanes do not keep interpreters on the host for the
    rest of the run: once idle for lane_idle, all but the login's first
    end, with the become lanes started through them."""
    with plasmid.Router(threaded=True) as router:
        contexts = pool.Pool(router)
        logins = _held_at_once(contexts, _spec(sshd), 3)
        becomes = _held_at_once(contexts, _spec(sshd, ROOT), 3)
        assert contexts.router_contexts() == 6
        assert contexts.shut_idle_lanes() == 0  # idle less than a minute
        contexts.lane_idle = 0.0
        first = _first_lane(contexts, _spec(sshd))
        kept = [first] + [t for t in becomes
                          if t.context.via is first.context]
        assert len(kept) == 2  # each task's become lane is through its own
        assert contexts.shut_idle_lanes() == 4
        assert contexts.idle_lanes_shut == 4
        _wait_gone([t for t in logins + becomes if t not in kept])
        assert all(t.context.is_alive() for t in kept)
        # The first lanes serve what comes next.
        assert _one_after_another(contexts, _spec(sshd), 2) == [first] * 2
        assert _one_after_another(contexts, _spec(sshd, ROOT), 1) == kept[1:]
        assert contexts.router_contexts() == 6


def test_a_lane_held_or_awaiting_an_answer_stays(sshd):
    with plasmid.Router(threaded=True) as router:
        contexts = pool.Pool(router, lane_idle=0.0)
        lanes = _held_at_once(contexts, _spec(sshd), 2)
        other = [t for t in lanes
                 if t is not _first_lane(contexts, _spec(sshd))][0]
        slow = other.context.call_async(time.sleep, 1.0)
        other.send_ahead(pool.SentAhead(slow))
        assert contexts.shut_idle_lanes() == 0  # a clean-up under way
        slow.result()
        both_held = threading.Barrier(3)

        def task(_: int) -> None:
            contexts.get(_spec(sshd), None)
            both_held.wait(60)
            both_held.wait(60)
            contexts.release()
        worker = threading.Thread(target=_in_threads, args=(task, 2))
        worker.start()
        both_held.wait(60)
        assert contexts.shut_idle_lanes() == 0  # tasks hold both
        both_held.wait(60)
        worker.join(60)
        assert contexts.shut_idle_lanes() == 1
        _wait_gone([other])


def test_idle_lanes_are_looked_for_from_a_thread(sshd):
    with plasmid.Router(threaded=True) as router:
        contexts = pool.Pool(router, lane_idle=0.2)
        stop = contexts.start_shutting_idle_lanes()
        try:
            lanes = _held_at_once(contexts, _spec(sshd), 3)
            first = _first_lane(contexts, _spec(sshd))
            _wait_gone([t for t in lanes if t is not first])
            assert contexts.idle_lanes_shut == 2
            assert first.context.is_alive()
        finally:
            stop.set()


def _stand_in_spec(host: str, become=None) -> dict:
    return {'login': {'method': 'ssh', 'hostname': host}, 'become': become}


def test_each_account_finds_its_own_python_and_threads_let_go_of_their_own():
    # The pool's lookups go by index (keys per account, lanes per holding
    # thread): each host's task finds that host's interpreter, never
    # another host's, and a thread lets go of its own lanes only.
    contexts = pool.Pool(StandInRouter())
    hosts = ['h%d' % i for i in range(5)]
    got = {}
    free_after_first_let_go = {}
    hold = threading.Barrier(len(hosts))

    def task(i: int) -> None:
        spec = _stand_in_spec(hosts[i], ROOT)
        got[i] = (contexts.get(spec, None), contexts.get(spec, None),
                  contexts.get(dict(spec, become=None), None))
        hold.wait(60)
        if i == 0:
            contexts.release()
            free_after_first_let_go.update(
                (j, (become.holder, login.holder) == (None, None))
                for j, (become, _, login) in got.items())
        hold.wait(60)  # the others hold theirs until thread 0 has looked
        if i:
            contexts.release()
    _in_threads(task, len(hosts))
    assert free_after_first_let_go == {0: True, 1: False, 2: False,
                                       3: False, 4: False}
    for i, host in enumerate(hosts):
        become, again, login = got[i]
        assert become is again  # one lane per thread, found again
        assert become.context.via is login.context
        assert become.context.python_path == login.context.python_path == \
            python_of(host)
    assert all(found.holder is None for lanes in contexts.targets.values()
               for found in lanes)
    assert contexts.held == {}
    # A later task of h3 takes the lanes let go, under h3's Python.
    spec = _stand_in_spec('h3', ROOT)
    assert contexts.get(spec, None) is got[3][0]
    assert contexts.get(spec, python_of('h3')) is got[3][0]
    contexts.release()
