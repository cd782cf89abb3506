"""Rules in /etc/doas.conf for the length of a test session.

Each rule a session adds follows a line naming the session by pid, so a
later session drops the rules of sessions that were killed; lines nobody
marked are left alone.
"""
from __future__ import annotations

import contextlib
import os
import shutil
from typing import Iterator

from .procs import alive

DOAS_CONF = '/etc/doas.conf'
MARK_PREFIX = '# plasmid test session '


def doas_installed() -> bool:
    return shutil.which('doas') is not None


@contextlib.contextmanager
def doas_rules(rules: list[str]) -> Iterator[None]:
    """doas.conf holds *rules* (``permit nopass alice as root``, ...) while
    the block runs."""
    me = os.getpid()
    others, marked = _read_conf()
    added = [rule for rule in rules if (me, rule) not in marked]
    _write_conf(others, marked + [(me, rule) for rule in added])
    try:
        yield
    finally:
        others, marked = _read_conf()
        _write_conf(others, [(pid, rule) for pid, rule in marked
                             if not (pid == me and rule in added)])


def _read_conf() -> tuple[list, list]:
    """The lines no session marked, and (pid, rule) for the rules of
    sessions still alive."""
    try:
        with open(DOAS_CONF) as conf:
            lines = conf.read().splitlines()
    except FileNotFoundError:
        return [], []
    others: list[str] = []
    marked: list[tuple[int, str]] = []
    pid = None
    for line in lines:
        if line.startswith(MARK_PREFIX):
            pid = int(line[len(MARK_PREFIX):])
        elif pid is not None:
            if alive(pid):
                marked.append((pid, line))
            pid = None
        else:
            others.append(line)
    return others, marked


def _write_conf(others: list, marked: list) -> None:
    lines = list(others)
    for pid, rule in marked:
        lines += ['%s%d' % (MARK_PREFIX, pid), rule]
    if not any(line.strip() for line in lines):
        if os.path.exists(DOAS_CONF):
            os.unlink(DOAS_CONF)
        return
    temporary = DOAS_CONF + '.plasmid-tmp'
    with open(temporary, 'w') as conf:
        conf.write('\n'.join(lines) + '\n')
    os.chmod(temporary, 0o600)
    os.replace(temporary, DOAS_CONF)  # doas never reads half a file
