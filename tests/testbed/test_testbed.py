"""Tests of the test bed itself: real sshd, accounts, sudo, pythons, latency.

If these fail, every real-parts test of plasmid would fail for reasons that
have nothing to do with plasmid; they pin down the facts those tests rely on.
"""
from __future__ import annotations

import os
import pwd
import shlex
import subprocess
import time
from typing import Optional

import pytest

from .accounts import (PASSWORD_A, USER_A, USER_B, create_accounts,
                       remove_orphaned_accounts, remove_orphaned_sudoers,
                       remove_temp_files, write_sudoers)
from .latency import LatencyProxy, ToxiproxyMissing
from .procs import alive, descendants
from .pythons import available_pythons, executable_by_others, require_python
from .session import (SshTestbed, live_sessions, other_sessions_alive,
                      register_session, unavailable_reason)
from .sshd import SshServer

TIMEOUT = 60


def ssh(bed: SshTestbed, user: str, command: str, stdin: Optional[str] = None,
        port: Optional[int] = None) -> subprocess.CompletedProcess:
    """Run `command` with plain ssh and key auth as `user`."""
    argv = bed.server.base_ssh_argv(user, port=port) + [command]
    return subprocess.run(argv, input=stdin or "", capture_output=True, text=True,
                          timeout=TIMEOUT)


def ok(result: subprocess.CompletedProcess) -> str:
    """stdout of a command that must have succeeded."""
    assert result.returncode == 0, (result.returncode, result.stdout, result.stderr)
    return result.stdout


# -- ssh logins --------------------------------------------------------------

def test_key_login_runs_command_as_user(sshd: SshTestbed) -> None:
    assert ok(ssh(sshd, sshd.user, "id -un")) == "plasmid-a\n"


def test_a_server_can_hide_python_from_its_sessions(sshd: SshTestbed) -> None:
    """hide_python: sessions find no Python, the rest of /usr/bin works,
    and the machine outside keeps its own."""
    with SshServer(hide_python=True) as server:
        server.authorize(sshd.user)
        bed = SshTestbed(server)
        probe = ssh(bed, sshd.user, "command -v python3 python; "
                    "/usr/bin/python3 -c pass; echo rc=$?; id -un")
        assert probe.stdout.split() == ["rc=127", sshd.user], probe
    assert os.access("/usr/bin/python3", os.X_OK)


def test_root_key_login(sshd: SshTestbed) -> None:
    assert ok(ssh(sshd, "root", "id -u")) == "0\n"


def test_remote_stdin_is_not_a_tty(sshd: SshTestbed) -> None:
    # Without -t sshd hands the command plain pipes; plasmid's protocol
    # runs over them, so no tty may mangle bytes.
    out = ok(ssh(sshd, sshd.user, "readlink /proc/self/fd/0; tty || true"))
    stdin_link, tty = out.splitlines()
    assert stdin_link.startswith(("pipe:", "socket:"))
    assert tty == "not a tty"


def test_stdin_bytes_reach_command_unchanged(sshd: SshTestbed) -> None:
    data = bytes(range(256)) * 1000
    argv = sshd.server.base_ssh_argv(sshd.user) + ["cat"]
    result = subprocess.run(argv, input=data, capture_output=True, timeout=TIMEOUT)
    assert result.returncode == 0 and result.stdout == data


def _askpass_ssh(bed: SshTestbed, tmp_path, password: str) -> subprocess.CompletedProcess:
    """ssh with password auth only, the password coming from SSH_ASKPASS.

    setsid detaches from any terminal pytest runs in, so ssh can't prompt
    there; SSH_ASKPASS_REQUIRE=force makes ssh use the helper regardless.
    """
    askpass = tmp_path / "askpass"
    askpass.write_text(f"#!/bin/sh\nprintf '%s\\n' {shlex.quote(password)}\n")
    askpass.chmod(0o700)
    env = dict(os.environ, SSH_ASKPASS=str(askpass), SSH_ASKPASS_REQUIRE="force")
    server = bed.server
    argv = ["setsid", "-w", "ssh", "-p", str(server.port), *server.ssh_args(),
            "-o", "PubkeyAuthentication=no", "-o", "PreferredAuthentications=password",
            "-o", "NumberOfPasswordPrompts=1", f"{bed.user}@{server.host}", "id -un"]
    return subprocess.run(argv, env=env, stdin=subprocess.DEVNULL, capture_output=True,
                          text=True, timeout=TIMEOUT)


def test_password_login(sshd: SshTestbed, tmp_path) -> None:
    assert ok(_askpass_ssh(sshd, tmp_path, sshd.password)) == "plasmid-a\n"


def test_wrong_password_login_fails(sshd: SshTestbed, tmp_path) -> None:
    result = _askpass_ssh(sshd, tmp_path, "not-the-password")
    assert result.returncode == 255
    assert "Permission denied" in result.stderr


def test_client_trusts_only_this_server(sshd: SshTestbed) -> None:
    # Another sshd has another host key: StrictHostKeyChecking with our
    # known_hosts must refuse it, so tests can't talk to the wrong server.
    with SshServer() as other:
        other.authorize(USER_A)
        argv = other.base_ssh_argv(USER_A)
        argv[argv.index(f"UserKnownHostsFile={other.known_hosts}")] = (
            f"UserKnownHostsFile={sshd.server.known_hosts}")
        result = subprocess.run(argv + ["true"], capture_output=True, text=True,
                                timeout=TIMEOUT)
    assert result.returncode == 255
    assert "Host key verification failed" in result.stderr


def test_ssh_kwargs(sshd: SshTestbed) -> None:
    kw = sshd.ssh_kwargs()
    assert kw["hostname"] == "127.0.0.1" and kw["port"] == sshd.server.port
    assert kw["username"] == USER_A
    assert os.path.exists(kw["identity_file"])
    assert sshd.server.ssh_kwargs("root", port=1234)["port"] == 1234


# -- sudo ------------------------------------------------------------------

def test_sudo_to_root_needs_no_password(sshd: SshTestbed) -> None:
    assert ok(ssh(sshd, sshd.user, "sudo -n -u root id -u")) == "0\n"


def test_sudo_to_other_user_with_password(sshd: SshTestbed) -> None:
    cmd = f"sudo -S -p '' -u {sshd.sudo_password_user} id -un"
    assert ok(ssh(sshd, sshd.user, cmd, stdin=sshd.password + "\n")) == "plasmid-b\n"


def test_sudo_to_other_user_needs_password(sshd: SshTestbed) -> None:
    result = ssh(sshd, sshd.user, f"sudo -n -u {sshd.sudo_password_user} true")
    assert result.returncode == 1
    assert "password is required" in result.stderr


def test_sudo_wrong_password_fails_even_after_right_one(sshd: SshTestbed) -> None:
    # Same login session, right password first: if sudo cached it
    # (timestamp_timeout != 0) the wrong one would pass.
    user = sshd.sudo_password_user
    cmd = (f"printf '%s\\n' {shlex.quote(sshd.password)} | sudo -S -p '' -u {user} id -un; "
           f"echo wrong | sudo -S -p '' -u {user} id -un; echo rc=$?")
    out = ok(ssh(sshd, sshd.user, cmd))
    assert out == "plasmid-b\nrc=1\n"


def test_sudo_refuses_unlisted_target(sshd: SshTestbed) -> None:
    result = ssh(sshd, sshd.user, "sudo -S -p '' -u nobody true", stdin=sshd.password + "\n")
    assert result.returncode == 1
    assert "not allowed" in result.stderr


def test_sudo_passes_rest_of_stdin_to_command(sshd: SshTestbed) -> None:
    # sudo -S reads only the password line; with no tty, use_pty adds no
    # pty, so the command gets the rest of the pipe untouched.
    cmd = f"sudo -S -p '' -u {sshd.sudo_password_user} sh -c 'readlink /proc/self/fd/0; cat'"
    out = ok(ssh(sshd, sshd.user, cmd, stdin=sshd.password + "\npayload\n"))
    assert out.splitlines()[0].startswith("pipe:")
    assert out.splitlines()[1:] == ["payload"]


def test_create_accounts_is_idempotent(sshd: SshTestbed) -> None:
    create_accounts()
    assert ok(ssh(sshd, sshd.user, "id -un")) == "plasmid-a\n"


# -- pythons -----------------------------------------------------------------

PYTHONS = available_pythons()


def test_orphaned_sudoers_files_are_removed(sshd: SshTestbed) -> None:
    """A file left for an account that no longer exists goes; one whose
    account exists stays."""
    orphan = '/etc/sudoers.d/plasmid-orphan%d' % os.getpid()
    kept = '/etc/sudoers.d/%s' % USER_A
    for path in (orphan, kept):
        write_sudoers(path, '# nothing granted\n')
    try:
        remove_orphaned_sudoers('plasmid-orphan')
        remove_orphaned_sudoers(USER_A)
        assert not os.path.exists(orphan)
        assert os.path.exists(kept)
    finally:
        for path in (orphan, kept):
            if os.path.exists(path):
                os.unlink(path)


def test_available_pythons_shape() -> None:
    for version, path in PYTHONS.items():
        major, minor = version.split(".")
        assert major.isdigit() and minor.isdigit()
        assert os.access(path, os.X_OK)


def test_require_python_skips_when_missing() -> None:
    with pytest.raises(pytest.skip.Exception, match="Python 1.0"):
        require_python("1.0")


@pytest.mark.parametrize("version", sorted(PYTHONS, key=lambda v: tuple(map(int, v.split(".")))))
def test_test_account_runs_python(sshd: SshTestbed, version: str) -> None:
    exe = require_python(version)
    if not executable_by_others(exe):
        pytest.skip(f"{exe} not executable by other users (run .ci/setup)")
    out = ok(ssh(sshd, sshd.user, f"{exe} -c 'import sys;print(sys.version_info[0])'"))
    assert out == version.split(".")[0] + "\n"


# -- latency -----------------------------------------------------------------

def test_latency_proxy_delays_ssh(sshd: SshTestbed) -> None:
    try:
        proxy = LatencyProxy(sshd.server.port, latency_ms=25)
    except ToxiproxyMissing as exc:
        pytest.skip(str(exc))
    with proxy:
        assert proxy.port != sshd.server.port
        start = time.monotonic()
        out = ok(ssh(sshd, sshd.user, "echo through-proxy", port=proxy.port))
        elapsed = time.monotonic() - start
    assert out == "through-proxy\n"
    # ssh needs several round trips of >= 50 ms each; one is a hard floor.
    assert elapsed >= 0.05


def test_latency_proxy_stops_forwarding_after_exit(sshd: SshTestbed) -> None:
    try:
        proxy = LatencyProxy(sshd.server.port, latency_ms=1)
    except ToxiproxyMissing as exc:
        pytest.skip(str(exc))
    with proxy:
        port = proxy.port
        ok(ssh(sshd, sshd.user, "true", port=port))
    result = ssh(sshd, sshd.user, "true", port=port)
    assert result.returncode == 255


# -- cleanup -----------------------------------------------------------------

def test_stop_kills_sessions_and_detached_commands() -> None:
    reason = unavailable_reason()
    if reason:
        pytest.skip(reason)
    with SshServer() as server:
        server.authorize("root")
        argv = server.base_ssh_argv("root")
        session = subprocess.Popen(argv + ["sleep 300"], stdin=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL)
        # A daemonized command escapes sshd's process tree to the reaper.
        subprocess.run(argv + ["setsid sleep 301 </dev/null >/dev/null 2>&1 &"],
                       check=True, timeout=TIMEOUT)
        time.sleep(0.3)
        reaper = server._proc.pid
        tree = descendants([reaper])
        assert len(tree) >= 3  # sshd listener, session, sleeps
        directory = server.dir
    session.wait(TIMEOUT)
    assert not [pid for pid in tree | {reaper} if alive(pid)]
    assert not os.path.exists(directory)


def test_a_session_leaves_the_accounts_to_another_live_one(tmp_path) -> None:
    """The accounts have fixed names: a test session ending beside another
    must not remove them; a dead session's registration is forgotten."""
    directory = str(tmp_path / "sessions")
    mine = register_session(directory)
    assert os.path.basename(mine) == str(os.getpid())
    assert not other_sessions_alive(directory)  # only this one
    helper = subprocess.Popen(["sleep", "30"])
    try:
        open(os.path.join(directory, str(helper.pid)), "w").close()
        assert other_sessions_alive(directory)
    finally:
        helper.kill()
        helper.wait()
    assert not other_sessions_alive(directory)
    assert os.listdir(directory) == [str(os.getpid())]


def test_accounts_of_sessions_that_are_gone_are_removed(tmp_path) -> None:
    """A session killed before its clean-up leaves an account with sudo
    rights; the next session removes it, and keeps those of live ones."""
    if os.geteuid() != 0:
        pytest.skip("creates accounts: needs root")
    directory = str(tmp_path / "sessions")
    register_session(directory)
    helper = subprocess.Popen(["sleep", "30"])
    open(os.path.join(directory, str(helper.pid)), "w").close()
    gone = subprocess.Popen(["true"])
    gone.wait()
    names = {pid: "plasmid-zz%d" % (pid % 1000)
             for pid in (os.getpid(), helper.pid, gone.pid)}
    try:
        for name in names.values():
            subprocess.check_call(["useradd", "-M", "-s", "/bin/sh", name])
            write_sudoers("/etc/sudoers.d/" + name, "%s ALL=(root) NOPASSWD: "
                          "ALL\n" % name)
        live = live_sessions(directory)
        assert live == {os.getpid(), helper.pid}
        assert remove_orphaned_accounts(("plasmid-zz",), live, 1000) == \
            [names[gone.pid]]
        assert not os.path.exists("/etc/sudoers.d/" + names[gone.pid])
        for pid in (os.getpid(), helper.pid):
            pwd.getpwnam(names[pid])  # kept
    finally:
        helper.kill()
        helper.wait()
        for name in names.values():
            subprocess.call(["userdel", name], stderr=subprocess.DEVNULL)
            if os.path.exists("/etc/sudoers.d/" + name):
                os.unlink("/etc/sudoers.d/" + name)


def test_what_an_account_left_in_the_temp_folder_is_removed(
        sshd: SshTestbed, tmp_path) -> None:
    (tmp_path / 'payload_dir' / 'sub').mkdir(parents=True)
    (tmp_path / 'payload_dir' / 'sub' / 'file').write_text('x')
    (tmp_path / 'left.txt').write_text('x')
    (tmp_path / 'kept.txt').write_text('root\'s')
    for path in ('payload_dir', 'payload_dir/sub', 'payload_dir/sub/file',
                 'left.txt'):
        os.chown(tmp_path / path, pwd.getpwnam(USER_A).pw_uid, -1)
    remove_temp_files(USER_A, str(tmp_path))
    assert os.listdir(tmp_path) == ['kept.txt']
