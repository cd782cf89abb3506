"""sudo contexts: through an ssh context on the test bed, and from here.

The test bed's rules: plasmid-a may sudo to root without a password, to
plasmid-b only with plasmid-a's own password, and to nobody not at all.
"""
from __future__ import annotations

import os
import pwd
import sys
from typing import Iterator

import pytest

import connect_fns
import plasmid
from plasmid.connect import sudo as sudo_method
from testbed.pythons import require_python

USER_A = 'plasmid-a'
REAP_WAIT = 5.0


@pytest.fixture
def router() -> Iterator[plasmid.Router]:
    with plasmid.Router() as r:
        yield r


@pytest.fixture
def user_a(sshd, router) -> plasmid.Context:
    """An ssh context logged in as plasmid-a."""
    return router.ssh(**sshd.ssh_kwargs())


def _sudo_error(router: plasmid.Router, **kwargs) -> str:
    with pytest.raises(plasmid.ConnectError) as info:
        router.sudo(**kwargs)
    return str(info.value)


def _assert_no_children_left(ctx: plasmid.Context) -> None:
    """A failed sudo must leave no process behind under the intermediary,
    and the intermediary must go on working."""
    assert ctx.call(connect_fns.wait_no_children, REAP_WAIT) == []


# ------------------------------------------------------- via an ssh context

def test_sudo_to_root_without_password(router, user_a) -> None:
    root = router.sudo(via=user_a)
    who = root.call(connect_fns.identity)
    assert who['uid'] == who['euid'] == 0
    # The sudo process was started by plasmid-a's interpreter, not by us.
    assert len(router.streams) == 1
    assert root.info['pid'] == who['pid']


# Planted where the login account can write, named after a module the
# core imports: it must never run in a context, least of all as root.
PLANTED = '''import os
with open(%r, 'a') as f:
    f.write('%%d\\n' %% os.getuid())
raise ImportError('planted module ran')
'''


@pytest.mark.parametrize('version', ['2.7', '3.13'])
def test_a_module_planted_in_the_working_directory_never_runs(
        sshd, router, tmp_path, version: str) -> None:
    """python -c puts '' (the working directory) first on sys.path, and
    sudo keeps its caller's: the login account's home here, where whoever
    holds that account (but not the sudo password) could plant a module
    the core imports and run as root at the next start."""
    marker = tmp_path / 'ran'
    os.chmod(tmp_path, 0o777)
    planted = os.path.join(pwd.getpwnam(USER_A).pw_dir, 'threading.py')
    with open(planted, 'w') as f:
        f.write(PLANTED % str(marker))
    try:
        python = require_python(version)
        login = router.ssh(python_path=python, **sshd.ssh_kwargs())
        root = router.sudo(via=login, python_path=python)
        assert root.call(connect_fns.identity)['uid'] == 0
        assert root.call(os.getcwd) == pwd.getpwnam(USER_A).pw_dir
    finally:
        os.unlink(planted)
    assert not marker.exists(), marker.read_text()


@pytest.mark.parametrize('args,named', [
    (['-b'], '-b'), (['-E', '-b'], '-b'), (['-Eb'], '-Eb'),
    (['--background'], '--background'), (['-l'], '-l'), (['-e'], '-e'),
    (['--validate'], '--validate'), (['-p', 'Password:'], '-p'),
    (['--prompt=x'], '--prompt=x'), (['-E', '-pX'], '-pX')])
def test_options_that_keep_sudo_from_running_the_context_are_refused(
        router, args, named) -> None:
    """sudo -b "started", answered a call or two, then lost its link;
    a prompt of the caller's made sudo print its usage (ours is set)."""
    with pytest.raises(ValueError) as raised:
        router.sudo(sudo_args=args, connect_timeout=60)
    assert str(raised.value).startswith('sudo_args: %s ' % named), \
        raised.value
    assert router.streams == []


def test_sudo_values_and_words_after_double_dash_are_no_options() -> None:
    assert sudo_method.refusal(['-u', '-b']) is None  # -b is the user
    assert sudo_method.refusal(['--', '-b']) is None
    assert sudo_method.refusal(['-E', '-H', '-n', '-i', '-s']) is None
    # A long option's value, in the next word: it was read as an option.
    assert sudo_method.refusal(['-g', '--list']) is None
    assert sudo_method.refusal(['--user', '-l']) is None
    assert sudo_method.refusal(['--user=x', '-l']).startswith('-l ')
    assert sudo_method.refusal(['--preserve-env', '-l']).startswith('-l ')


def test_sudo_to_other_user_with_password(sshd, router, user_a) -> None:
    other = router.sudo(username=sshd.sudo_password_user,
                        password=sshd.password, via=user_a)
    expected = pwd.getpwnam(sshd.sudo_password_user)
    who = other.call(connect_fns.identity)
    assert who['uid'] == who['euid'] == expected.pw_uid
    # -H: the home is the target user's.
    assert who['home'] == expected.pw_dir


def test_set_home_false_leaves_home_to_sudo_and_its_flags(router,
                                                          user_a) -> None:
    """Without -H, sudo's -E keeps the starting context's HOME; with it
    (the default), HOME is the target user's whatever the flags."""
    login_home = user_a.call(connect_fns.identity)['home']
    kept = router.sudo(via=user_a, sudo_args=['-E'], set_home=False)
    assert kept.call(connect_fns.identity)['home'] == login_home
    rooted = router.sudo(via=user_a, sudo_args=['-E'])
    assert rooted.call(connect_fns.identity)['home'] == \
        pwd.getpwnam('root').pw_dir


def test_sudo_needing_password_without_one(sshd, router, user_a) -> None:
    message = _sudo_error(router, username=sshd.sudo_password_user,
                          via=user_a)
    assert 'password was asked for' in message
    _assert_no_children_left(user_a)


def test_sudo_wrong_password_is_refused(sshd, router, user_a) -> None:
    message = _sudo_error(router, username=sshd.sudo_password_user,
                          password='not-' + sshd.password, via=user_a)
    assert 'refused' in message
    _assert_no_children_left(user_a)


def test_sudo_to_user_not_allowed(sshd, router, user_a) -> None:
    # sudo authenticates before it reveals that the rule is missing, so
    # give the right password to get to the actual refusal.
    message = _sudo_error(router, username='nobody', password=sshd.password,
                          via=user_a)
    assert 'not allowed' in message
    _assert_no_children_left(user_a)


def test_failed_sudo_leaves_the_route_clean(sshd, router, user_a) -> None:
    _sudo_error(router, username=sshd.sudo_password_user, via=user_a)
    # A later sudo through the same intermediary still works.
    root = router.sudo(via=user_a)
    assert root.call(connect_fns.getuid) == 0


# ---------------------------------------------------------- from the master


@pytest.fixture
def requiretty(sshd) -> Iterator[None]:
    """The test bed's sudo rules with ``requiretty`` for plasmid-a; put
    back afterwards (and by the next session's set-up, after a kill)."""
    from testbed.accounts import SUDOERS, SUDOERS_PATH, requiring_tty
    with requiring_tty(SUDOERS_PATH, SUDOERS, USER_A):
        yield


def test_sudo_under_requiretty_gets_a_terminal(sshd, router, user_a,
                                               requiretty) -> None:
    """sudo refuses to start without a terminal; the context is started
    again with one, with or without a password.  Only then: a context
    elsewhere has none, as under vanilla's pipelined sudo."""
    root = router.sudo(via=user_a)
    assert root.call(connect_fns.getuid) == 0
    assert root.call(connect_fns.has_controlling_terminal) is True
    other = router.sudo(username=sshd.sudo_password_user,
                        password=sshd.password, via=user_a)
    expected = pwd.getpwnam(sshd.sudo_password_user)
    assert other.call(connect_fns.getuid) == expected.pw_uid
    # One sudo per context: the refused first starts are gone.
    assert len(user_a.call(connect_fns.child_pids)) == 2


# sudo's requiretty refusal in German: LANGUAGE picks a translation when
# the locale is not plain C, and C.UTF-8 is built into glibc.
GERMAN = {'LC_ALL': 'C.UTF-8', 'LANGUAGE': 'de'}


def test_sudo_under_requiretty_in_another_language_gets_a_terminal(
        sshd, router, user_a, requiretty) -> None:
    """sudo refuses in its environment's language, which it takes from
    the context that starts it; that refusal too gets a terminal."""
    user_a.call(connect_fns.set_environ, GERMAN)
    said = user_a.call(connect_fns.output_of, ['sudo', '-n', 'true'])
    # Really another language (sudo's own translation is installed).
    assert 'TTY' in said and 'you must have a tty' not in said, said
    root = router.sudo(via=user_a)
    assert root.call(connect_fns.getuid) == 0
    assert root.call(connect_fns.has_controlling_terminal) is True


@pytest.mark.parametrize('version', ['2.7', '3.13'])
def test_a_translated_requiretty_refusal_is_recognised(router,
                                                       version) -> None:
    """The check reads sudo's catalog for the environment's language, on
    any Python an intermediary may run."""
    from plasmid.connect import sudo
    ctx = router.local(python_path=require_python(version))
    english = 'sudo: sorry, you must have a tty to run sudo\n'
    german = 'sudo: Sie m\xfcssen ein TTY haben, um sudo zu verwenden\n'
    assert ctx.call(sudo.tty_required, english) is True
    assert ctx.call(sudo.tty_required, german) is False  # English here
    ctx.call(connect_fns.set_environ, GERMAN)
    assert ctx.call(sudo.tty_required, german) is True
    assert ctx.call(sudo.tty_required, english) is True
    assert ctx.call(sudo.tty_required, 'sudo: a password is required\n') \
        is False


def test_sudo_starts_without_a_terminal(router, user_a) -> None:
    root = router.sudo(via=user_a)
    assert root.call(connect_fns.has_controlling_terminal) is False

def test_sudo_from_master_without_password() -> None:
    # The tests run as root, so sudo needs no password here.
    with plasmid.Router() as router:
        ctx = router.sudo(username=USER_A)
        assert ctx.call(connect_fns.getuid) == pwd.getpwnam(USER_A).pw_uid
        # Without python_path the master's own interpreter is used.
        assert ctx.info['executable'] == sys.executable
        (stream,) = router.streams
        assert stream.process.argv[0] == 'sudo'


# ------------------------------------------------- target Python versions

@pytest.mark.parametrize('version', ['2.7', '3.6', '3.13'])
def test_target_python_over_ssh_and_sudo(sshd, router, version: str) -> None:
    python = require_python(version)
    expected = [int(part) for part in version.split('.')]
    user = router.ssh(python_path=python, **sshd.ssh_kwargs())
    # sudo via a context defaults to that context's interpreter.
    root = router.sudo(via=user)
    for ctx, uid in ((user, pwd.getpwnam(USER_A).pw_uid), (root, 0)):
        assert ctx.call(connect_fns.version_info)[:2] == expected
        assert ctx.info['version'][:2] == expected
        assert ctx.call(connect_fns.getuid) == uid
        # connect_fns is not on the target's path: the master sent it.
        assert ctx.call(connect_fns.loader_name) == 'Importer'
        with pytest.raises(plasmid.CallError) as info:
            ctx.call(connect_fns.fail, 'boom on %s' % version)
        error = info.value
        assert error.type_name.endswith('ValueError')
        assert error.message == 'boom on %s' % version
        assert 'connect_fns' in error.remote_traceback
        assert 'in fail' in error.remote_traceback


# What the target account's Python may do as it starts (a usercustomize.py
# of its own): print sudo's prompt, and read what comes.
PROMPTING_PYTHON = '''#!/bin/sh
printf 'plasmid-sudo-password:' >&2
IFS= read -r heard
printf '%%s' "$heard" > %s
exec %s "$@"
'''


def test_a_prompt_from_the_command_sudo_runs_is_not_answered(
        sshd, router, user_a, tmp_path) -> None:
    """With a password given where the rule needs none (an inventory's
    become password for every host), the command sudo ran could print
    sudo's prompt and read the caller's password."""
    heard = tmp_path / 'heard'
    python = tmp_path / 'python'
    python.write_text(PROMPTING_PYTHON % (heard, sys.executable))
    python.chmod(0o755)
    tmp_path.chmod(0o755)
    error = _sudo_error(router, via=user_a, password='the-callers-secret',
                        python_path=str(python))
    assert 'a password prompt came from the command sudo ran' in error, error
    assert not heard.exists() or heard.read_text() == ''
    _assert_no_children_left(user_a)
    # sudo's own prompt is answered as ever.
    assert router.sudo(username=sshd.sudo_password_user,
                       password=sshd.password, via=user_a).call(
                           connect_fns.identity)['uid'] > 0
