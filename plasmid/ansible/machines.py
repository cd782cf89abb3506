"""Which of the broker's logins reach the same machine, and as whom.

A task that changes an account, a group or sudo's rules changes them for
every login to its machine (account_changes.py): the pool then retires
the interpreters of those logins too.  A login names its machine only as
its spec tells, so the answers here err on the side of "the same": a
login counted in by mistake only restarts its interpreters; one left out
keeps a right that was taken away.
"""
from __future__ import annotations

from typing import Optional

from plasmid.connect import ssh

SSH_PORT = 22


def machine_of(login: tuple) -> tuple:
    """The machine a (frozen) login spec reaches.  For ssh, the host as
    given and the port ssh will use (``port``, else the first ``Port`` in
    ``ssh_args``, where the plugin puts ansible_port, else 22: a port set
    only in ~/.ssh/config is not seen), and the jump host in between (the
    same address behind two jump hosts is two machines).  For a container,
    the container, pod and namespace."""
    fields = dict(login)
    if fields.get('method') != 'ssh':
        return tuple(fields.get(k) for k in ('method', 'name', 'container',
                                             'pod', 'namespace'))
    args = fields.get('ssh_args') or ()
    port = fields.get('port') or ssh.first_value(args, 'Port', 'p')
    jump = ssh.first_value(args, 'ProxyJump', 'J') or \
        ssh.first_value(args, 'ProxyCommand')
    return ('ssh', fields.get('hostname'), _number(port) or SSH_PORT, jump)


def account_of(login: tuple) -> Optional[str]:
    """The account a (frozen) login spec runs as, where it says: for ssh,
    ``username``, else the first ``User`` in ``ssh_args`` (where the plugin
    puts ansible_user, after the user's own ssh_args), else ``account``;
    a container's ``username``."""
    fields = dict(login)
    if fields.get('method') == 'ssh':
        return fields.get('username') or \
            ssh.first_value(fields.get('ssh_args') or (), 'User', 'l') or \
            fields.get('account')
    return fields.get('account') or fields.get('username')


def _number(port) -> Optional[int]:
    try:
        return int(port)
    except (TypeError, ValueError):
        return None  # a port name from /etc/services: taken as unknown
