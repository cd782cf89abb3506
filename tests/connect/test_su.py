"""su contexts: through an ssh context on the test bed, and from here.

su asks for the target user's own password, on a terminal.
"""
from __future__ import annotations

import sys
from typing import Iterator

import pytest

import connect_fns
import plasmid
from plasmid.connect import su as su_method
from testbed import PASSWORD_B, USER_A, USER_B, accounts


@pytest.fixture
def router() -> Iterator[plasmid.Router]:
    with plasmid.Router() as r:
        yield r


def test_root_becomes_anyone_without_a_password(sshd, router) -> None:
    ctx = router.su(username=USER_A, python_path=sys.executable)
    assert ctx.call(connect_fns.username) == USER_A


def test_password_typed_at_the_prompt(sshd, router) -> None:
    login = router.ssh(**sshd.ssh_kwargs())
    other = router.su(via=login, username=USER_B, password=PASSWORD_B)
    assert other.call(connect_fns.username) == USER_B
    assert login.call(connect_fns.username) == USER_A


def test_su_s_shell_gives_its_place_to_the_interpreter(sshd, router) -> None:
    with accounts.login_shell('/bin/sh', USER_A):
        ctx = router.su(username=USER_A, python_path=sys.executable)
    assert ctx.call(connect_fns.parent_command) == 'su'


@pytest.mark.parametrize('args,named', [
    (['-P'], '-P'), (['--pty'], '--pty'), (['-lP'], '-lP')])
def test_a_terminal_between_su_and_python_is_refused_at_once(
        sshd, router, args, named) -> None:
    # su -P put a terminal in the way: the start waited out its whole
    # connect_timeout.
    with pytest.raises(ValueError) as raised:
        router.su(username=USER_A, python_path=sys.executable,
                  su_args=args, connect_timeout=60)
    assert str(raised.value).startswith('su_args: %s puts a terminal'
                                        % named), raised.value
    assert router.streams == []


def test_values_and_words_after_double_dash_are_no_options() -> None:
    assert su_method.refusal(['-s', '-P']) is None  # -P is the shell
    assert su_method.refusal(['--', '--pty']) is None
    assert su_method.refusal(['-l', '-m']) is None
    assert su_method.refusal(['--shell', '--pty']) is None  # the shell
    assert su_method.refusal(['--shell=/bin/sh', '--pty']).startswith(
        '--pty ')


@pytest.mark.parametrize('password', [None, PASSWORD_B])
def test_a_start_up_file_whose_words_end_in_password_is_no_prompt(
        sshd, router, password) -> None:
    """su's shell reads ~/.profile (``su -l``): a line of it that ends in
    "password:" was taken for su's prompt ("a password was asked for, but
    none was given"; after a right password "the password was refused")."""
    words = 'echo "Please change your password:" >&2\n'
    via = router.ssh(**sshd.ssh_kwargs()) if password else None
    with accounts.start_up_file('.profile', USER_B, words):
        ctx = router.su(username=USER_B, password=password, via=via,
                        su_args=['-l'], python_path=sys.executable)
        assert ctx.call(connect_fns.username) == USER_B


@pytest.mark.parametrize('password', ['wrong-password', None])
def test_wrong_or_missing_password_is_a_connect_error(sshd, router,
                                                      password) -> None:
    login = router.ssh(**sshd.ssh_kwargs())
    with pytest.raises(plasmid.ConnectError) as info:
        router.su(via=login, username=USER_B, password=password,
                  connect_timeout=15)
    assert 'password' in str(info.value)
    # The login context is unharmed.
    assert login.call(connect_fns.username) == USER_A
