"""What vanilla's ssh client would print of its own, read from the
settings it would use (``ssh -G``: the options given, then the user's and
the system's config files).

When a session on a terminal (``ssh -tt``: ``raw``, ``script``, a module
run from its script) ends, ssh says so on its stderr at LogLevel INFO and
above, which ansible-core puts in the task's ``stderr``: "Shared
connection to H closed." through a ControlMaster that stays
(ControlPersist, as ansible's default ssh_args ask), "Connection to H
closed." on a connection of its own.  Our sessions run in a context, with
no ssh of their own to say it.
"""
from __future__ import annotations

import os
import signal
import subprocess
from typing import Optional

# ssh's log levels at which it prints the line (INFO is its default).
_SAYS_CLOSED = {'INFO', 'VERBOSE', 'DEBUG', 'DEBUG1', 'DEBUG2', 'DEBUG3'}
SETTINGS_TIMEOUT = 5


def settings(ssh: str, args: list[str], host: str) -> Optional[dict]:
    """ssh's effective settings for a login by vanilla's ssh plugin (names
    in lower case), or None if ``ssh -G`` could not tell (an ssh without
    it, a bad option)."""
    try:
        # A session of its own: what a config's `Match exec` starts goes
        # with ssh if it outlasts the timeout.
        proc = subprocess.Popen([ssh, '-G'] + _as_vanilla_adds(args) +
                                ['--', host], stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL,
                                start_new_session=True)
    except OSError:
        return None
    try:
        out, _ = proc.communicate(timeout=SETTINGS_TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        return None
    if proc.returncode != 0:
        return None
    found: dict = {}
    for line in out.decode('utf-8', 'replace').splitlines():
        name, _, value = line.partition(' ')
        found.setdefault(name, value)
    return found


def _as_vanilla_adds(args: list[str]) -> list[str]:
    """*args* with what ansible-core's ssh plugin adds of its own that
    matters here: a ControlPath where the options name ControlPersist but
    no ControlPath (it looks for the words anywhere in its command)."""
    lowered = [arg.lower() for arg in args]
    if any('controlpersist' in arg for arg in lowered) and \
            not any('controlpath' in arg for arg in lowered):
        return list(args) + ['-o', 'ControlPath=%C']
    return list(args)


def closing_line(found: Optional[dict]) -> bytes:
    """The line ssh with settings *found* prints as a terminal session
    ends (b'' if it prints none, or if its settings are not known)."""
    if not found or found.get('loglevel', 'INFO').upper() not in _SAYS_CLOSED:
        return b''
    host = found.get('hostname', '')
    shared = found.get('controlmaster', 'false') != 'false' and \
        found.get('controlpersist', 'no') != 'no' and \
        found.get('controlpath', 'none') != 'none'
    if shared:
        return b'Shared connection to %s closed.\r\n' % host.encode()
    return b'Connection to %s closed.\r\n' % host[:64].encode()
