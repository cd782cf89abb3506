"""ssh contexts against the private sshd test bed (fixture ``sshd``).

The test bed's sshd listens on 127.0.0.1, so a "remote" process is also a
process of this machine: tests may look at it through /proc or kill it
directly, which is how they prove what happens on the target side.
"""
from __future__ import annotations

import base64
import os
import pwd
import signal
import socket
import subprocess
import time
from typing import Iterator

import pytest

import connect_fns
import plasmid
from plasmid.connect import ssh
from plasmid.master import bootstrap
from testbed import accounts
from testbed.interposed import interposed
from testbed.latency import LatencyProxy, ToxiproxyMissing
from testbed.ports import free_port
from testbed.procs import wait_gone

USER_A = 'plasmid-a'
# Requirement: a lost context is noticed within 5 s.
LOST_WITHIN = 5.0


@pytest.fixture
def router() -> Iterator[plasmid.Router]:
    with plasmid.Router() as r:
        yield r


def _connect_error(router: plasmid.Router, **kwargs) -> str:
    """The message of the ConnectError that router.ssh(**kwargs) raises."""
    return str(_connect_failure(router, **kwargs))


def _connect_failure(router: plasmid.Router,
                     **kwargs) -> plasmid.ConnectError:
    with pytest.raises(plasmid.ConnectError) as info:
        router.ssh(**kwargs)
    return info.value


# ---------------------------------------------------------------- logins

def test_key_login_runs_python_as_the_user(sshd, router) -> None:
    ctx = router.ssh(**sshd.ssh_kwargs())
    who = ctx.call(connect_fns.identity)
    account = pwd.getpwnam(USER_A)
    assert who['uid'] == who['euid'] == account.pw_uid
    assert who['home'] == account.pw_dir
    # The test bed's sshd runs on this machine.
    assert who['hostname'] == socket.gethostname()
    # HELLO describes the very process that answers calls.
    assert ctx.info['pid'] == who['pid']
    assert ctx.name.startswith('ssh.%s:%d' % (sshd.server.host,
                                               sshd.server.port))


def test_the_login_shell_gives_its_place_to_the_interpreter(sshd,
                                                            router) -> None:
    """No shell waits beside a context on the target (Debian's sh would,
    left to itself): the interpreter is sshd's child."""
    with accounts.login_shell('/bin/sh', USER_A):
        ctx = router.ssh(**sshd.ssh_kwargs())
    assert ctx.call(connect_fns.parent_command) == 'sshd'


@pytest.mark.parametrize('shell', ['/bin/bash', '/bin/sh', '/bin/zsh',
                                   '/bin/mksh', '/bin/tcsh', '/usr/bin/fish'])
def test_a_context_boots_under_each_login_shell(sshd, router, shell) -> None:
    """sshd runs the command through the account's login shell: the
    quoted first stage and its 22 KB of base64 words pass each shell (.ci/
    setup installs them) whole, and the interpreter takes its place."""
    if not os.path.exists(shell):
        pytest.skip('%s is not installed' % shell)
    with accounts.login_shell(shell, USER_A):
        ctx = router.ssh(**sshd.ssh_kwargs())
    assert ctx.call(connect_fns.parent_command) == 'sshd'
    assert ctx.call(connect_fns.getuid) == pwd.getpwnam(USER_A).pw_uid


def test_password_login_without_identity_file(sshd, router) -> None:
    kwargs = sshd.ssh_kwargs()
    del kwargs['identity_file']
    # Rule the key out entirely, so only the password can have worked.
    kwargs['ssh_args'] += ['-o', 'PubkeyAuthentication=no']
    ctx = router.ssh(password=sshd.password, **kwargs)
    assert ctx.call(connect_fns.getuid) == pwd.getpwnam(USER_A).pw_uid


def test_wrong_password_is_refused(sshd, router) -> None:
    kwargs = sshd.ssh_kwargs()
    del kwargs['identity_file']
    kwargs['ssh_args'] += ['-o', 'PubkeyAuthentication=no']
    error = _connect_failure(router, password='not-' + sshd.password,
                             **kwargs)
    assert 'password was refused' in str(error)
    assert not error.ended  # we stopped it: ssh's words are not the reason
    # Why ssh asked again is kept, though it was written just before the
    # second prompt and may not have been read when that showed.
    assert 'Permission denied' in error.output, error.output


def test_one_password_prompt_leaves_the_refusal_to_ssh(sshd, router) -> None:
    kwargs = sshd.ssh_kwargs()
    del kwargs['identity_file']
    kwargs['ssh_args'] += ['-o', 'PubkeyAuthentication=no',
                           '-o', 'NumberOfPasswordPrompts=1']
    error = _connect_failure(router, password='not-' + sshd.password,
                             **kwargs)
    assert error.ended, error
    assert error.output.strip() == \
        '%s@%s: Permission denied (publickey,password).' % (
            sshd.user, sshd.server.host), error


# An ssh that asks for the password in words of its own (a PAM module's,
# another language's) before it logs in with the key as the real one.
CUSTOM_PROMPT_SSH = """#!/bin/sh
printf 'Kennwort (%%s): ' "$$" > /dev/tty
read -r answer < /dev/tty
[ "$answer" = '%s' ] || { echo "Zugriff verweigert" >&2; exit 255; }
exec ssh "$@"
"""


def _custom_prompt_ssh(tmp_path, password: str) -> str:
    path = tmp_path / 'ssh-kennwort'
    path.write_text(CUSTOM_PROMPT_SSH % password)
    path.chmod(0o755)
    return str(path)


def test_a_password_prompt_of_other_words_is_answered_when_named(
        sshd, router, tmp_path) -> None:
    """password_prompt: the password goes where the output contains that
    text, as sshpass -P does it; ssh's usual pattern would not see it."""
    ssh_path = _custom_prompt_ssh(tmp_path, 'geheim 1')
    ctx = router.ssh(password='geheim 1', password_prompt='Kennwort (',
                     ssh_path=ssh_path, **sshd.ssh_kwargs())
    assert ctx.call(connect_fns.getuid) == pwd.getpwnam(USER_A).pw_uid
    # Without it, nobody answers: the start runs out of time, or sooner
    # with a prompt_timeout, naming what ssh asked.
    error = _connect_failure(router, password='geheim 1', ssh_path=ssh_path,
                             **dict(sshd.ssh_kwargs(), connect_timeout=2))
    assert 'no answer within 2s' in str(error), error
    error = _connect_failure(router, password='geheim 1', ssh_path=ssh_path,
                             prompt_timeout=0.5, **sshd.ssh_kwargs())
    assert 'it waits at a prompt we cannot answer (nothing more within ' \
        '0.5s): Kennwort (' in str(error), error


@pytest.mark.parametrize('prompt', ['', b'Kennwort', 3])
def test_a_password_prompt_must_be_text(router, prompt) -> None:
    with pytest.raises(ValueError, match='password_prompt must be'):
        router.ssh(hostname='unused.invalid', password='x',
                   password_prompt=prompt)


# --------------------------------------------------------- connect errors

def test_nothing_listening_on_port(sshd, router) -> None:
    port = free_port()
    # Repeated: ssh may end before or after we write the core to it, and
    # either way its own words must come back as they were.
    for _ in range(3):
        error = _connect_failure(router, **dict(sshd.ssh_kwargs(), port=port))
        assert error.ended, error
        assert error.output.strip() == \
            'ssh: connect to host %s port %d: Connection refused' % (
                sshd.server.host, port), error
        assert error.output.strip() in str(error)


@pytest.mark.parametrize('username', ['plasmid-nosuchuser', 'plasmid-b'])
def test_login_refused(sshd, router, username: str) -> None:
    # plasmid-b exists but has no authorized key; the other does not exist.
    # Repeated: ssh's reason reaches us on stderr only as its stdout closes,
    # and must never be lost to that race.
    for _ in range(3):
        message = _connect_error(
            router, **dict(sshd.ssh_kwargs(), username=username))
        assert 'Permission denied' in message, message


def test_missing_python_on_target(sshd, router) -> None:
    missing = '/nonexistent/plasmid/python3'
    message = _connect_error(
        router, **dict(sshd.ssh_kwargs(), python_path=missing))
    assert missing in message
    assert 'No such file' in message or 'not found' in message


def test_a_remote_program_that_is_no_python_says_so(sshd, router) -> None:
    """The login worked and what ran there ended before a Python said a
    word: no Python there (the accelerator then fails the task, as
    vanilla, not the host), ssh's own failures (255) aside."""
    for program, status in (('/bin/false', 1), ('/bin/true', 0)):
        message = _connect_error(
            router, **dict(sshd.ssh_kwargs(), python_path=program))
        assert "no Python at '%s' started (the remote command exited with " \
            'status %d before a Python said a word)' % (program, status) in \
            message, message
    refused = _connect_error(router, **dict(sshd.ssh_kwargs(),
                                            username='nobody'))
    assert 'no Python' not in refused, refused


def test_host_key_mismatch(sshd, router, tmp_path) -> None:
    # A known_hosts that pins the server's address to some other key.
    other_key = tmp_path / 'other_host_key'
    subprocess.run(['ssh-keygen', '-q', '-t', 'ed25519', '-N', '', '-f',
                    str(other_key)], check=True, capture_output=True)
    key_type, key_b64 = other_key.with_suffix('.pub').read_text().split()[:2]
    known_hosts = tmp_path / 'known_hosts'
    known_hosts.write_text('%s,[%s]:* %s %s\n' % (
        sshd.server.host, sshd.server.host, key_type, key_b64))
    kwargs = sshd.ssh_kwargs()
    kwargs['ssh_args'] = [a.replace(sshd.server.known_hosts, str(known_hosts))
                          for a in kwargs['ssh_args']]
    assert kwargs['ssh_args'] != sshd.ssh_kwargs()['ssh_args']
    message = _connect_error(router, **kwargs)
    assert 'Host key verification failed' in message


def test_connect_timeout_when_server_never_answers(sshd, router) -> None:
    # The kernel accepts the TCP connection, but nobody ever sends the
    # ssh banner.
    with socket.socket() as silent:
        silent.bind((sshd.server.host, 0))
        silent.listen(8)
        port = silent.getsockname()[1]
        timeout = 2
        start = time.monotonic()
        message = _connect_error(
            router, **dict(sshd.ssh_kwargs(), port=port),
            connect_timeout=timeout)
        elapsed = time.monotonic() - start
    assert 'no answer within' in message or 'timed out' in message
    # Generous margin: the requirement is "within connect_timeout".
    assert elapsed < timeout + 5


def test_a_connect_timeout_in_ssh_args_is_the_one_ssh_uses(sshd,
                                                           router) -> None:
    # ssh takes an option's first value: ours must not shadow the user's.
    with socket.socket() as silent:
        silent.bind((sshd.server.host, 0))
        silent.listen(8)
        port = silent.getsockname()[1]
        start = time.monotonic()
        kwargs = sshd.ssh_kwargs()
        kwargs['ssh_args'] = [
            'ConnectTimeout 2' if a.startswith('ConnectTimeout=') else a
            for a in kwargs['ssh_args']]
        assert 'ConnectTimeout 2' in kwargs['ssh_args']
        message = _connect_error(router, **dict(kwargs, port=port),
                                 connect_timeout=60)
        elapsed = time.monotonic() - start
    assert 'timed out' in message
    assert elapsed < 2 + 5


@pytest.mark.parametrize('args,given', [
    (['-o', 'ConnectTimeout=5'], True),
    (['-oconnecttimeout=5'], True),
    (['-o', 'ConnectTimeout 5'], True),
    (['-o', 'ServerAliveInterval=5'], False),
    (['-p', '22', 'ConnectTimeout=5'], False),
])
def test_given_option_reads_every_spelling(args: list, given: bool) -> None:
    assert ssh.given_option(args, 'ConnectTimeout') is given


@pytest.mark.parametrize('args,named', [
    (['-tt'], '-tt'),
    (['-t', '-C', '-t'], '-tt'),
    (['-Ctt'], '-tt'),
    (['-f'], '-f'),
    (['-p', '22', '-N'], '-N'),
    (['-F', '/dev/null', '-n'], '-n'),
    (['-W', 'host:22'], '-W'),
    (['-o', 'RequestTTY=force'], '-o RequestTTY=force'),
    (['-oForkAfterAuthentication yes'], '-o ForkAfterAuthentication yes'),
    (['-o', 'SessionType=none'], '-o SessionType=none'),
    (['-o', 'RemoteCommand=ls'], '-o RemoteCommand=ls'),
    (['-o', 'StdinNull=true'], '-o StdinNull=true'),
])
def test_options_that_keep_a_context_from_starting_are_refused_at_once(
        args: list, named: str, sshd, router) -> None:
    # Each of these failed late or strangely: -tt waited out the whole
    # connect_timeout, -f "started" and then had no route, -n lost the
    # context at its first call.  No ssh runs for them.
    kwargs = sshd.ssh_kwargs()
    kwargs['ssh_args'] = list(kwargs['ssh_args']) + args
    with pytest.raises(ValueError) as raised:
        router.ssh(connect_timeout=60, **kwargs)
    assert str(raised.value).startswith('ssh_args: ' + named), raised.value
    assert router.streams == []


@pytest.mark.parametrize('args', [
    ['-t'],                        # only where ssh's input is a terminal
    ['-C', '-t'],
    ['-l', 'fn'],                  # values are not options
    ['-pN'],
    ['-o', 'RequestTTY=no'],
    ['-o', 'RemoteCommand=none'],
    ['-vv'],
])
def test_options_that_leave_the_stream_alone_are_kept(args: list) -> None:
    assert ssh.refusal(args) is None


@pytest.mark.parametrize('args, found', [
    (['-C', '-o', 'ControlMaster=auto', '-p', '2222'], '2222'),
    (['-Cp2200', '-o', 'Port=22'], '2200'),     # the first one given
    (['-o', 'Port=2201', '-p', '22'], '2201'),
    (['-oPort 2202'], '2202'),
    (['-i', '-p', '-o', 'port="2203"'], '2203'),  # -p here is -i's value
    (['-l', 'x', '--', '-p', '3'], None),         # after --: not options
    (['-v', '-o', 'Portless=1'], None),
])
def test_the_first_value_of_an_option_is_the_one_ssh_takes(
        args: list, found) -> None:
    assert ssh.first_value(args, 'Port', 'p') == found


def test_one_t_starts_and_calls(sshd, router) -> None:
    kwargs = sshd.ssh_kwargs()
    kwargs['ssh_args'] = list(kwargs['ssh_args']) + ['-t']
    assert router.ssh(**kwargs).call(sum, [1, 2]) == 3


PASSWORD_WORDS = 'echo "Please change your password:" >&2\n'


@pytest.mark.parametrize('with_password', [False, True])
def test_a_start_up_file_whose_words_end_in_password_is_no_prompt(
        sshd, router, with_password) -> None:
    """A line that ends in "password:" and a line break, from ~/.bashrc
    (or a banner), was taken for ssh's prompt: "a password was asked for,
    but none was given" for a key login, "the password was refused" after
    a right password.  Plain ssh runs the command."""
    kwargs = sshd.ssh_kwargs()
    if with_password:  # the password alone, as in the test above
        del kwargs['identity_file']
        kwargs['ssh_args'] += ['-o', 'PubkeyAuthentication=no']
        kwargs['password'] = sshd.password
    with accounts.start_up_file('.bashrc', USER_A, PASSWORD_WORDS):
        ctx = router.ssh(**kwargs)
        assert ctx.call(connect_fns.getuid) == pwd.getpwnam(USER_A).pw_uid


def test_failed_connects_leave_router_usable(sshd, router) -> None:
    _connect_error(router, **dict(sshd.ssh_kwargs(), port=free_port()))
    assert router.streams == []
    ctx = router.ssh(**sshd.ssh_kwargs())
    assert ctx.call(connect_fns.getuid) == pwd.getpwnam(USER_A).pw_uid
    assert len(router.streams) == 1


# -------------------------------------------------------------- bootstrap

def _owned_files(uid: int, home: str) -> set:
    """Everything in *home* (with sizes and times) and every entry owned by
    *uid* in the usual scratch dirs."""
    found = set()
    for top, dirs, files in os.walk(home):
        for name in dirs + files:
            path = os.path.join(top, name)
            st = os.lstat(path)
            found.add((path, st.st_size, st.st_mtime_ns))
    for scratch in ('/tmp', '/var/tmp', '/dev/shm'):
        for name in os.listdir(scratch):
            path = os.path.join(scratch, name)
            try:
                st = os.lstat(path)
            except FileNotFoundError:
                continue  # someone else's file came and went
            if st.st_uid == uid:
                found.add((path, st.st_size, st.st_mtime_ns))
    return found


def test_bootstrap_is_one_ssh_command_and_writes_nothing(sshd,
                                                          router) -> None:
    account = pwd.getpwnam(USER_A)
    before = _owned_files(account.pw_uid, account.pw_dir)
    ctx = router.ssh(**sshd.ssh_kwargs())
    argv = ctx.call(connect_fns.cmdline)
    after = _owned_files(account.pw_uid, account.pw_dir)
    assert after == before

    # The master ran exactly one program: ssh, whose remote command is the
    # first stage...
    assert len(router.streams) == 1
    ssh_argv = router.streams[0].process.argv
    assert os.path.basename(ssh_argv[0]) == 'ssh'
    # ...and the remote context is Python running that very code from its
    # command line (no script file), with the core and its BOOT frame as
    # the two words after it.
    assert 'python' in os.path.basename(argv[0])
    assert argv[1] == '-c'
    assert len(argv) == 5
    assert all(word in ssh_argv[-1] for word in argv[2:])
    assert base64.b64decode(argv[3]) == bootstrap.build_blob()


def test_boot_needs_nothing_from_stdin(sshd, router) -> None:
    """ssh forwards stdin only once the remote command runs, a round trip
    after the command left: a boot that waited for its core on stdin would
    pay that round trip.  Behind an interpreter whose stdin is held until
    it has answered (that delay, for ever), the context still boots, and
    then serves calls through the same stdin."""
    held = interposed('/usr/bin/python3', stdin_held=True)
    ctx = router.ssh(python_path=held, **sshd.ssh_kwargs())
    assert ctx.call(connect_fns.identity)['uid'] == \
        pwd.getpwnam(USER_A).pw_uid


# ---------------------------------------------------- failure propagation

def test_killed_remote_python_fails_pending_and_later_calls(sshd,
                                                            router) -> None:
    ctx = router.ssh(**sshd.ssh_kwargs())
    pid = ctx.call(connect_fns.getpid)
    pending = ctx.call_async(connect_fns.sleep, 30)
    os.kill(pid, signal.SIGKILL)
    # TimeoutError (not ContextLost) would fail the test.
    with pytest.raises(plasmid.ContextLost):
        pending.result(timeout=LOST_WITHIN)
    with pytest.raises(plasmid.ContextLost):
        ctx.call(connect_fns.getpid)
    assert not ctx.is_alive()


def test_killed_ssh_client_fails_pending_and_later_calls(sshd,
                                                         router) -> None:
    ctx = router.ssh(**sshd.ssh_kwargs())
    remote_pid = ctx.call(connect_fns.getpid)
    pending = ctx.call_async(connect_fns.sleep, 30)
    (stream,) = router.streams
    os.kill(stream.process.pid, signal.SIGKILL)
    with pytest.raises(plasmid.ContextLost):
        pending.result(timeout=LOST_WITHIN)
    with pytest.raises(plasmid.ContextLost):
        ctx.call(connect_fns.getpid)
    # The remote interpreter follows its lost parent.
    assert wait_gone([remote_pid], LOST_WITHIN) == set()


def test_a_link_that_dies_silently_loses_the_context(sshd, router) -> None:
    """A link that stops carrying anything and never closes (a host
    gone, a firewall that forgot the connection): ssh's keep-alive probes
    go unanswered and the calls end with the context lost, where they
    would wait for ever."""
    try:
        proxy = LatencyProxy(sshd.server.port, latency_ms=0)
    except ToxiproxyMissing as exc:
        pytest.skip(str(exc))
    with proxy:
        kwargs = dict(sshd.ssh_kwargs(), port=proxy.port)
        # ssh says why it gave up at its default LogLevel (INFO), not at
        # the test bed's ERROR.
        args = kwargs['ssh_args']
        at = args.index('LogLevel=ERROR')
        kwargs['ssh_args'] = args[:at - 1] + args[at + 1:]
        ctx = router.ssh(keepalive=(1, 2), **kwargs)
        assert ctx.call(connect_fns.getuid) == pwd.getpwnam(USER_A).pw_uid
        proxy.blackhole()
        pending = ctx.call_async(connect_fns.getpid)
        # ssh gives up after 2 probes 1 s apart; TimeoutError would mean
        # it never did.
        with pytest.raises(plasmid.ContextLost) as lost:
            pending.result(timeout=30)
        assert 'not responding' in lost.value.said, lost.value.said
        assert not ctx.is_alive()


def test_keepalive_defaults_and_yields_to_ssh_args() -> None:
    boot = ['python3', '-c', 'pass']
    spec = {'hostname': 'h', 'keepalive': (15, 3)}
    assert _options(ssh.argv(spec, boot)) == [
        'ServerAliveInterval=15', 'ServerAliveCountMax=3']
    spec['ssh_args'] = ['-oServerAliveInterval=5']
    assert _options(ssh.argv(spec, boot)) == [
        'ServerAliveCountMax=3', 'ServerAliveInterval=5']
    assert _options(ssh.argv(dict(spec, keepalive=None), boot)) == [
        'ServerAliveInterval=5']


def _options(argv: list) -> list:
    """The ServerAlive options of an ssh command line, in order."""
    found = []
    for i, word in enumerate(argv):
        setting = argv[i + 1] if word == '-o' else (
            word[2:] if word.startswith('-o') else '')
        if setting.startswith('ServerAlive'):
            found.append(setting)
    return found


@pytest.mark.parametrize('keepalive', [(0, 3), (15,), 'fast', (1.5, 2),
                                       (True, 2)])
def test_a_bad_keepalive_is_refused_before_ssh_starts(router,
                                                      keepalive) -> None:
    with pytest.raises(ValueError, match='keepalive must be'):
        router.ssh(hostname='unused.invalid', keepalive=keepalive)
    assert not router.streams


def test_shutdown_ends_remote_and_local_processes(sshd, router) -> None:
    ctx = router.ssh(**sshd.ssh_kwargs())
    remote_pid = ctx.info['pid']
    (stream,) = router.streams
    ctx.shutdown()
    # shutdown() waits for the local ssh client; the remote interpreter
    # has exited by then or follows at once.
    assert stream.process.poll() is not None
    assert wait_gone([remote_pid], LOST_WITHIN) == set()
    assert not ctx.is_alive()
    with pytest.raises(plasmid.ContextLost):
        ctx.call(connect_fns.getpid)
