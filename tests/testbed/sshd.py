"""A private sshd on a loopback port, for tests that need real ssh.

The system sshd (if any) is left alone: this one has its own config, host
key, pid file, log and authorized_keys directory, all inside one temp dir
that is removed on exit.  It must run as root, because sshd needs root to
switch to the logged-in user.
"""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from typing import Any, Optional

from .ports import LOOPBACK, free_port
from .procs import start_reaped, stop_reaped

SSHD = "/usr/sbin/sshd"
UNSHARE = "/usr/bin/unshare"  # util-linux
# sshd refuses to start without its privilege separation directory; on a
# machine where the system sshd never ran (containers, CI) it is missing.
PRIVSEP_DIR = "/run/sshd"
START_TIMEOUT = 10.0
START_ATTEMPTS = 3  # free_port() is racy: retry with a new port if stolen

CONFIG_TEMPLATE = """\
# Written by plasmid's test bed (tests/testbed/sshd.py).
Port {port}
ListenAddress {host}
AddressFamily inet
HostKey {dir}/ssh_host_ed25519_key
PidFile {dir}/sshd.pid
AuthorizedKeysFile {dir}/authorized_keys/%u
# StrictModes checks every directory above the key file, and /tmp is
# world-writable, so the check would always fail for a temp dir.
StrictModes no
PubkeyAuthentication yes
PasswordAuthentication yes
KbdInteractiveAuthentication no
# Password login works either way on Debian 12.  Without PAM sshd checks
# /etc/shadow itself and skips the machine's PAM session stack, whose
# pam_loginuid breaks logins in some containers.
UsePAM {use_pam}
PermitRootLogin prohibit-password
PermitEmptyPasswords no
{limits}LogLevel ERROR
PrintMotd no
PrintLastLog no
UseDNS no
X11Forwarding no
PermitUserRC no
{sftp}"""

# For SshServer(sftp=True): file copies as most hosts serve them, which
# vanilla ansible's ssh plugin tries first (without, it falls back to
# piping the file through dd).
SFTP = "Subsystem sftp /usr/lib/openssh/sftp-server\n"

# Concurrency tests open many connections at once; the defaults (10:30:100,
# 10 sessions) would drop some of them at random.  SshServer(
# default_limits=True) keeps the defaults, for tests of how a client copes.
RAISED_LIMITS = """\
MaxStartups 200:30:400
MaxSessions 200
"""

# For SshServer(hide_python=True): a host without Python.  sshd (and so
# every session) runs in a mount namespace of its own, where /usr/bin is a
# directory of links to everything in the real one but python* (/bin is a
# link to usr/bin on Debian 12; the sessions' PATH has no other Python).
# Arguments: the server's dir, then sshd's argv.
HIDE_PYTHON = r"""
set -e
real="$1/real-usr-bin"; view="$1/usr-bin"; shift
mkdir "$real" "$view"
mount --bind /usr/bin "$real"
ln -s "$real"/* "$view"/
rm -f "$view"/python*
mount --bind "$view" /usr/bin
exec "$@"
"""


class SshServerError(RuntimeError):
    """sshd could not be configured or started."""


class SshServer:
    """Context manager running a private sshd on 127.0.0.1:<free port>."""

    host = LOOPBACK

    def __init__(self, sshd_path: str = SSHD, use_pam: bool = False,
                 hide_python: bool = False,
                 default_limits: bool = False, sftp: bool = False) -> None:
        self.sshd_path = sshd_path
        self.use_pam = use_pam
        self.hide_python = hide_python
        self.default_limits = default_limits
        self.sftp = sftp
        self.port = 0
        self.dir = ""
        self.client_key = ""
        self.known_hosts = ""
        self.config = ""
        self.log = ""
        # KEY=VALUE ssh options every client of this server adds to ours
        # (benchmarks: a key exchange, say).
        self.extra_options: list[str] = []
        self._proc: Optional[subprocess.Popen] = None

    # -- lifecycle -------------------------------------------------------

    def __enter__(self) -> "SshServer":
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        """Create keys and config, start sshd, wait until it answers."""
        try:
            self._make_dir()
            self._make_keys()
            self._start_with_retries()
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        """Stop sshd and every session it started, then remove the dir."""
        if self._proc is not None:
            # Sessions fork off sshd and would outlive it; the reaper kills them.
            stop_reaped(self._proc)
            self._proc = None
        if self.dir:
            shutil.rmtree(self.dir, ignore_errors=True)
            self.dir = ""

    # -- client side -----------------------------------------------------

    def authorize(self, username: str) -> None:
        """Let `username` log in with the client key."""
        with open(self.client_key + ".pub") as f:
            pubkey = f.read()
        path = os.path.join(self.dir, "authorized_keys", username)
        with open(path, "w") as f:
            f.write(pubkey)
        # sshd reads the file as the target user, so it must be readable.
        os.chmod(path, 0o644)

    def ssh_args(self) -> list[str]:
        """ssh options that make a client trust exactly this server.

        -F /dev/null ignores ~/.ssh/config and /etc/ssh/ssh_config so a
        developer's settings can't change what the tests see.  Then any
        ``extra_options``.
        """
        opts = [
            f"UserKnownHostsFile={self.known_hosts}",
            "StrictHostKeyChecking=yes",
            "GlobalKnownHostsFile=/dev/null",
            "IdentitiesOnly=yes",
            "IdentityAgent=none",
            "ControlMaster=no",
            "ControlPath=none",
            "UpdateHostKeys=no",
            "CheckHostIP=no",
            "LogLevel=ERROR",
            "ConnectTimeout=10",
            *self.extra_options,
        ]
        args = ["-F", "/dev/null"]
        for opt in opts:
            args += ["-o", opt]
        return args

    def ssh_kwargs(self, username: str, port: Optional[int] = None) -> dict[str, Any]:
        """Keyword arguments for plasmid's ssh connection to this server."""
        return dict(
            hostname=self.host,
            port=port or self.port,
            username=username,
            identity_file=self.client_key,
            ssh_args=self.ssh_args(),
        )

    def base_ssh_argv(self, username: str, port: Optional[int] = None) -> list[str]:
        """argv for plain `ssh` with key auth; append the remote command.

        BatchMode stops ssh from ever prompting, so a broken key fails fast
        instead of hanging the test.
        """
        return [
            "ssh", "-p", str(port or self.port), "-i", self.client_key,
            *self.ssh_args(), "-o", "BatchMode=yes",
            f"{username}@{self.host}",
        ]

    # -- internals -------------------------------------------------------

    def _make_dir(self) -> None:
        self.dir = tempfile.mkdtemp(prefix="plasmid-sshd-")
        # sshd opens authorized_keys as the logging-in user: the dir must be
        # traversable by others, but nothing needs to list it.
        os.chmod(self.dir, 0o711)
        os.mkdir(os.path.join(self.dir, "authorized_keys"), 0o755)
        os.chmod(os.path.join(self.dir, "authorized_keys"), 0o755)
        self.config = os.path.join(self.dir, "sshd_config")
        self.log = os.path.join(self.dir, "sshd.log")
        self.client_key = os.path.join(self.dir, "client_ed25519")
        self.known_hosts = os.path.join(self.dir, "known_hosts")

    def _make_keys(self) -> None:
        host_key = os.path.join(self.dir, "ssh_host_ed25519_key")
        _keygen(host_key, "plasmid-testbed-host")
        _keygen(self.client_key, "plasmid-testbed-client")
        with open(host_key + ".pub") as f:
            key_type, key_b64 = f.read().split()[:2]
        # The wildcard port entry also covers proxies (LatencyProxy) that
        # forward to this server from another loopback port.
        with open(self.known_hosts, "w") as f:
            f.write(f"{self.host},[{self.host}]:* {key_type} {key_b64}\n")

    def _write_config(self) -> None:
        text = CONFIG_TEMPLATE.format(
            port=self.port, host=self.host, dir=self.dir,
            use_pam="yes" if self.use_pam else "no",
            limits="" if self.default_limits else RAISED_LIMITS,
            sftp=SFTP if self.sftp else "",
        )
        with open(self.config, "w") as f:
            f.write(text)
        check = subprocess.run([self.sshd_path, "-t", "-f", self.config],
                               capture_output=True, text=True)
        if check.returncode != 0:
            raise SshServerError(f"sshd -t rejected config: {check.stderr.strip()}")

    def _start_with_retries(self) -> None:
        os.makedirs(PRIVSEP_DIR, mode=0o755, exist_ok=True)
        for _ in range(START_ATTEMPTS):
            self.port = free_port(self.host)
            self._write_config()
            if self._start_once():
                return
        raise SshServerError(f"sshd did not start; log:\n{self._read_log()}")

    def _start_once(self) -> bool:
        """Start sshd; True once it serves, False if it died (port taken)."""
        with open(self.log, "ab") as log:
            # sshd needs an absolute path to re-exec itself for each
            # connection; the reaper owns the sessions it forks off.
            self._proc = start_reaped(
                self._server_argv(),
                rmtree=self.dir, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
            )
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                self._proc = None
                return False
            if _ssh_banner(self.host, self.port):
                return True
            time.sleep(0.05)
        stop_reaped(self._proc)
        self._proc = None
        raise SshServerError(f"sshd did not answer within {START_TIMEOUT}s")

    def _server_argv(self) -> list[str]:
        argv = [self.sshd_path, "-D", "-f", self.config, "-E", self.log]
        if not self.hide_python:
            return argv
        namespace = os.path.join(self.dir, "namespace")
        if not os.path.isdir(namespace):
            os.mkdir(namespace, 0o755)
        # A retry after a port clash needs fresh dirs: the namespace that
        # held the last ones' mounts is gone, the dirs are not.
        attempt = tempfile.mkdtemp(dir=namespace)
        os.chmod(attempt, 0o755)
        return [UNSHARE, "--mount", "--propagation", "private",
                "/bin/sh", "-c", HIDE_PYTHON, "sh", attempt, *argv]

    def _read_log(self) -> str:
        try:
            with open(self.log, errors="replace") as f:
                return f.read()
        except OSError:
            return "(no log)"


def _keygen(path: str, comment: str) -> None:
    """Create an unencrypted ed25519 key pair at path / path.pub."""
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", path],
        check=True, stdin=subprocess.DEVNULL, capture_output=True,
    )


def _ssh_banner(host: str, port: int) -> bool:
    """True if an SSH server greets on host:port.

    Reading the banner (not just connecting) proves that our sshd, not some
    other program that grabbed the port, is listening.
    """
    try:
        with socket.create_connection((host, port), timeout=1.0) as sock:
            sock.settimeout(2.0)
            # Greeting back keeps sshd from logging a protocol error.
            sock.sendall(b"SSH-2.0-plasmid-testbed-probe\r\n")
            return sock.recv(64).startswith(b"SSH-2.0-")
    except OSError:
        return False
