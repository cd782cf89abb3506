"""A stand-in router for the broker's pool (pool.py): contexts that are
plain objects, no process, no message.  Used by tests/ansible/test_pool.py
and bench/ansible/pool_scale.py."""
from __future__ import annotations


def python_of(hostname: str) -> str:
    """The interpreter a login to *hostname* finds first: one per host, so
    that a lookup answering with another host's lane shows."""
    return '/opt/%s/python3' % hostname


class StandInContext:
    """What the pool asks of a context."""

    def __init__(self, python_path: str, via=None) -> None:
        self.python_path = python_path
        self.via = via

    def is_alive(self) -> bool:
        return True


class StandInRouter:
    """The router's methods the pool calls, starting stand-in contexts."""

    def ssh(self, python_path, hostname, **login) -> StandInContext:
        return StandInContext(python_of(hostname))

    def sudo(self, via, python_path, **options) -> StandInContext:
        return StandInContext(python_path, via)
