"""The whole ssh test bed: accounts, sudo rules and a running sshd."""
from __future__ import annotations

import contextlib
import os
import shutil
from dataclasses import dataclass
from typing import Any, Iterator, Optional

from .accounts import PASSWORD_A, USER_A, USER_B, create_accounts, remove_accounts
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


@contextlib.contextmanager
def ssh_testbed() -> Iterator[SshTestbed]:
    """Create accounts, run sshd with plasmid-a and root authorized; undo all."""
    try:
        create_accounts()
        with SshServer() as server:
            server.authorize(USER_A)
            server.authorize("root")
            yield SshTestbed(server)
    finally:
        # After sshd (and its sessions) are gone, so nothing holds the accounts.
        remove_accounts()
