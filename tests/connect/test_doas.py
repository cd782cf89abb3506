"""doas contexts through an ssh context on the test bed.

The session's rules: plasmid-a may doas to root without a password and to
plasmid-b with plasmid-a's own password (typed on a private terminal:
doas reads no password from stdin); to nobody not at all.
"""
from __future__ import annotations

import sys
from typing import Iterator

import pytest

import connect_fns
import plasmid
from testbed import PASSWORD_A, USER_A, USER_B
from testbed.doas import doas_installed, doas_rules


@pytest.fixture(scope='module')
def doas_conf(sshd) -> Iterator[None]:
    if not doas_installed():
        pytest.fail('doas is not installed: run .ci/setup')
    with doas_rules(['permit nopass %s as root' % USER_A,
                     'permit %s as %s' % (USER_A, USER_B)]):
        yield


@pytest.fixture
def router() -> Iterator[plasmid.Router]:
    with plasmid.Router() as r:
        yield r


@pytest.fixture
def user_a(sshd, router, doas_conf) -> plasmid.Context:
    return router.ssh(**sshd.ssh_kwargs())


def test_doas_to_root_without_a_password(router, user_a) -> None:
    root = router.doas(via=user_a)
    who = root.call(connect_fns.identity)
    assert who['uid'] == who['euid'] == 0
    assert root.info['pid'] == who['pid']
    assert len(router.streams) == 1  # started by plasmid-a's interpreter


def test_password_typed_at_the_prompt(router, user_a) -> None:
    other = router.doas(via=user_a, username=USER_B, password=PASSWORD_A)
    assert other.call(connect_fns.username) == USER_B
    assert user_a.call(connect_fns.username) == USER_A


@pytest.mark.parametrize('password, reason', [
    ('wrong-password', 'refused'), (None, 'none was given')])
def test_wrong_or_missing_password_is_a_connect_error(
        router, user_a, password, reason) -> None:
    with pytest.raises(plasmid.ConnectError) as info:
        router.doas(via=user_a, username=USER_B, password=password,
                    connect_timeout=15)
    assert reason in str(info.value)
    assert user_a.call(connect_fns.username) == USER_A  # unharmed


def test_a_user_doas_does_not_permit_is_a_connect_error(
        router, user_a) -> None:
    with pytest.raises(plasmid.ConnectError) as info:
        router.doas(via=user_a, username='nobody', connect_timeout=15)
    assert 'doas.conf' in str(info.value)
    assert user_a.call(connect_fns.username) == USER_A


# What the target account's Python may do as it starts: ask on the
# terminal doas was given, as doas does, and read what comes.
PROMPTING_PYTHON = '''#!/bin/sh
printf 'Password:' > /dev/tty
IFS= read -r heard < /dev/tty
printf '%%s' "$heard" > %s
exec %s "$@"
'''


def test_a_prompt_from_the_command_doas_runs_is_not_answered(
        router, user_a, tmp_path) -> None:
    """With a password given where the rule needs none, the command doas
    ran could ask on its terminal and read the caller's password."""
    heard = tmp_path / 'heard'
    python = tmp_path / 'python'
    python.write_text(PROMPTING_PYTHON % (heard, sys.executable))
    python.chmod(0o755)
    tmp_path.chmod(0o755)
    with pytest.raises(plasmid.ConnectError) as info:
        router.doas(via=user_a, password=PASSWORD_A, python_path=str(python),
                    connect_timeout=15)
    assert 'a password prompt came from the command doas ran' in \
        str(info.value), info.value
    assert not heard.exists() or heard.read_text() == ''
