"""Real-parts test bed for plasmid: sshd, test accounts, pythons, latency.

Needs root for sshd and accounts; see tests/conftest.py for the fixture.
"""
from .accounts import (PASSWORD_A, PASSWORD_B, USER_A, USER_B, create_accounts,
                       remove_accounts)
from .latency import LatencyProxy, ToxiproxyError, ToxiproxyMissing, find_toxiproxy
from .ports import free_port
from .pythons import available_pythons, executable_by_others, require_python
from .session import SshTestbed, ssh_testbed, unavailable_reason
from .sshd import SshServer, SshServerError

__all__ = [
    "PASSWORD_A", "PASSWORD_B", "USER_A", "USER_B", "create_accounts", "remove_accounts",
    "LatencyProxy", "ToxiproxyError", "ToxiproxyMissing", "find_toxiproxy",
    "free_port", "available_pythons", "executable_by_others", "require_python",
    "SshTestbed", "ssh_testbed", "unavailable_reason", "SshServer", "SshServerError",
]
