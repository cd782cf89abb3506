"""The broker's contexts (pool.py), without ansible-core or the broker."""
from __future__ import annotations

import threading

import pytest

import plasmid
from plasmid.ansible import pool, target
from plasmid.core.errors import ConnectError
from testbed.ports import free_port
from testbed.pythons import require_python


def _spec(sshd, become=None, **ssh) -> dict:
    return {'ssh': dict(sshd.ssh_kwargs(), **ssh), 'become': become}


ROOT = {'method': 'sudo', 'username': 'root'}


def test_one_context_per_login_however_many_ask_at_once(sshd):
    """Workers of one host asking together share one login."""
    with plasmid.Router(threaded=True) as router:
        contexts = pool.Pool(router)
        found = []
        go = threading.Barrier(6)

        def ask() -> None:
            go.wait()
            found.append(contexts.get(_spec(sshd), None))
        threads = [threading.Thread(target=ask) for _ in range(6)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        assert len(found) == 6
        assert len({id(t) for t in found}) == 1
        assert contexts.router_contexts() == 1


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
