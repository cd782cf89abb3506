"""The whole ssh test bed: accounts, sudo rules and a running sshd."""
from __future__ import annotations

import contextlib
import os
import shutil
from dataclasses import dataclass
from typing import Any, Iterator, Optional

from .accounts import PASSWORD_A, USER_A, USER_B, create_accounts, remove_accounts
from .procs import alive
from .sshd import SSHD, SshServer

# Programs the test bed runs; a machine without them can't host it.
NEEDED_PROGRAMS = ("ssh", "ssh-keygen", "sudo", "useradd", "userdel", "chpasswd",
                   "visudo", "pkill")


@dataclass
class SshTestbed:
    """What the `sshd` fixture yields."""

    server: SshServer
    user: str = USER_A  # key and password login, sudo as below
    password: str = PASSWORD_A
    sudo_password_user: str = USER_B  # USER_A may sudo to it with `password`

    def ssh_kwargs(self, username: str = USER_A) -> dict[str, Any]:
        return self.server.ssh_kwargs(username)


def unavailable_reason() -> Optional[str]:
    """Why the test bed can't run here, or None if it can."""
    if os.geteuid() != 0:
        return "ssh test bed needs root (runs sshd, creates accounts)"
    if not os.access(SSHD, os.X_OK):
        return f"{SSHD} missing (apt-get install openssh-server, or run .ci/setup)"
    missing = [p for p in NEEDED_PROGRAMS if shutil.which(p) is None]
    if missing:
        return f"programs missing for the ssh test bed: {', '.join(missing)}"
    return None


# One file per test session using the accounts, named by its pid: the
# accounts have fixed names, so a session that ends while another runs (a
# developer's beside CI) must leave them in place.
SESSIONS_DIR = "/run/plasmid-testbed-sessions"


def register_session(directory: str = SESSIONS_DIR) -> str:
    os.makedirs(directory, mode=0o700, exist_ok=True)
    path = os.path.join(directory, str(os.getpid()))
    with open(path, "w"):
        pass
    return path


def live_sessions(directory: str = SESSIONS_DIR) -> set[int]:
    """The pids of the registered test sessions still running."""
    names = os.listdir(directory) if os.path.isdir(directory) else ()
    return {int(n) for n in names if n.isdigit() and alive(int(n))}


def other_sessions_alive(directory: str = SESSIONS_DIR) -> bool:
    """Whether another registered session still runs; forget dead ones."""
    others = False
    for name in os.listdir(directory) if os.path.isdir(directory) else ():
        if not name.isdigit() or int(name) == os.getpid():
            continue
        if alive(int(name)):
            others = True
        else:
            os.unlink(os.path.join(directory, name))
    return others


@contextlib.contextmanager
def ssh_testbed() -> Iterator[SshTestbed]:
    """Create accounts, run sshd with plasmid-a and root authorized; undo all
    (the accounts only if no other test session uses them)."""
    session = register_session()
    try:
        create_accounts()
        with SshServer() as server:
            server.authorize(USER_A)
            server.authorize("root")
            yield SshTestbed(server)
    finally:
        os.unlink(session)
        # After sshd (and its sessions) are gone, so nothing holds the accounts.
        if not other_sessions_alive():
            remove_accounts()
