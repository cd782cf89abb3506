"""Which logins reach the same machine, and as whom (machines.py), with
login specs shaped as the connection plugins make them."""
from __future__ import annotations

import pytest

from plasmid.ansible.machines import account_of, machine_of
from plasmid.ansible.pool import _freeze


def _ssh(hostname: str = 'web1', ssh_args: tuple = (), port: int = 0,
         user: str = '') -> tuple:
    """A frozen spec as connection.py makes it: ansible_port and
    ansible_user as ``-o Port=``/``-o User=`` after the user's ssh_args,
    the port in the context's name too."""
    args = list(ssh_args) + (['-o', 'Port=%d' % port] if port else []) + \
        (['-o', 'User="%s"' % user] if user else [])
    return _freeze(dict(method='ssh', hostname=hostname, account=user or None,
                        name='ssh.%s%s' % (hostname, port and ':%d' % port
                                           or ''),
                        ssh_args=args))


@pytest.mark.parametrize('one, other', [
    # Port 22 said and not said: the same sshd (both restarted before).
    (_ssh(), _ssh(port=22)),
    # ansible_port after a Port in the user's ssh_args: ssh takes the first.
    (_ssh(port=2222), _ssh(ssh_args=('-p2222',), port=22)),
    # Another inventory name and account, the same address.
    (_ssh(user='deploy'), _ssh(user='root')),
    (_freeze(dict(method='ssh', hostname='web1', port=2200)),
     _ssh(port=2200)),
])
def test_logins_to_one_machine_are_one_machine(one, other) -> None:
    assert machine_of(one) == machine_of(other)


@pytest.mark.parametrize('one, other', [
    # A Port in the user's ssh_args wins over ansible_port: two sshds.
    (_ssh(ssh_args=('-o', 'Port=2222'), port=22), _ssh(port=22)),
    (_ssh(), _ssh(hostname='web2')),
    # One address behind two jump hosts: two machines (both were one).
    (_ssh(hostname='10.0.0.5', ssh_args=('-J', 'gw-a')),
     _ssh(hostname='10.0.0.5', ssh_args=('-o', 'ProxyJump=gw-b'))),
    (_freeze({'method': 'podman', 'container': 'a', 'name': 'podman.a'}),
     _freeze({'method': 'podman', 'container': 'b', 'name': 'podman.b'})),
])
def test_logins_to_two_machines_are_two(one, other) -> None:
    assert machine_of(one) != machine_of(other)


@pytest.mark.parametrize('login, account', [
    (_ssh(user='deploy'), 'deploy'),
    # A User in the user's own ssh_args comes first and wins, as in ssh.
    (_ssh(ssh_args=('-l', 'ops'), user='deploy'), 'ops'),
    (_freeze(dict(method='ssh', hostname='web1', username='app')), 'app'),
    (_ssh(), None),
    (_freeze({'method': 'podman', 'container': 'a', 'username': 'app'}),
     'app'),
])
def test_the_account_a_login_runs_as(login, account) -> None:
    assert account_of(login) == account
