"""Tasks that change an account or the sudo rules, and what they make
stale among the interpreters the broker keeps.

Vanilla starts a new login and a new sudo or su for every task, so each
task sees the account as it is then: its groups and shell (fixed when a
process logs in), its password and sudo rules (checked at each become).
Ours are started once per host and account, so:

- a ``user`` task shuts down first the interpreters running as the account
  it names (usermod refuses to change a uid or home while a process of
  the account runs, userdel to delete it), and the next task as that
  account starts one afresh, with the new groups and password;
- after a ``user`` task that changed an account, the logins as that
  account are started afresh with all their interpreters (its groups, as
  after ``meta: reset_connection``);
- after a ``group`` task that changed a group, every interpreter of the
  machine is (any account's groups may have changed);
- after a task that changed a file of sudo's rules (``/etc/sudoers``,
  ``/etc/sudoers.d/...``), every become interpreter of the machine is, so
  that a rule taken away is taken away at once, as under vanilla.

"The machine" is every login the broker keeps to it: the same host and
port under other inventory names or accounts (machines.py); a
change made through one login reaches the others.  Changes made by other
means (``command: usermod``, an edit by ``shell``) are not seen.
"""
from __future__ import annotations

import json
from typing import Optional

# Modules that change accounts (by module_fqn's last part), and groups.
ACCOUNT_MODULES = {'user'}
GROUP_MODULES = {'group'}
SUDO_RULES = '/etc/sudoers'


def _arguments(job: dict) -> dict:
    try:
        args = json.loads(job['params'])['ANSIBLE_MODULE_ARGS']
    except (ValueError, KeyError, TypeError):
        return {}
    return args if isinstance(args, dict) else {}


def account_of(job: dict) -> Optional[str]:
    """The account a module run changes or deletes, if it does that."""
    if job['module_fqn'].rpartition('.')[2] not in ACCOUNT_MODULES:
        return None
    args = _arguments(job)
    name = args.get('name') or args.get('user')
    return name if isinstance(name, str) else None


def changes_groups(job: dict) -> bool:
    """Whether the module run may change a group (its gid, its members:
    any account's groups, fixed when a process logs in)."""
    return job['module_fqn'].rpartition('.')[2] in GROUP_MODULES


def touches_sudo_rules(job: dict) -> bool:
    """Whether the module's file is one of sudo's rules (copy, template,
    lineinfile, file... all name it ``dest`` or ``path``).  Asked of every
    module run: its arguments (a copy's content, say) are parsed only
    where they mention sudo's rules at all."""
    params = job['params']  # JSON, bytes from 2.19's loader, else text
    if (SUDO_RULES.encode() if isinstance(params, bytes) else SUDO_RULES) \
            not in params:
        return False
    args = _arguments(job)
    for key in ('dest', 'path'):
        path = args.get(key)
        if isinstance(path, str) and path.startswith(SUDO_RULES):
            return True
    return False


def reported_change(stdout: bytes) -> bool:
    """Whether a module's answer says it changed something."""
    try:
        result = json.loads(stdout)
    except (ValueError, TypeError):
        return False
    return isinstance(result, dict) and bool(result.get('changed'))
