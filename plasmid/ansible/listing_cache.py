"""Plugin directories listed once per change, not once per lookup.

ansible-core's plugin loader globs directories on paths it takes for
every task on every host: resolving ``command`` lists the configured
module paths (``~/.ansible/plugins/modules/*`` and ``*/*``, mostly
missing) and ``ansible.builtin.command`` the module package
(``modules/command.*``); ``get_vars`` lists every connection plugin
directory (``PluginLoader.all``, from ``clean_facts``).  With tasks on
threads of one process (the optional strategy), keeping those listings
took ansible-playbook's CPU in a 50-host run of ``command`` tasks from
9.9-10.2 s to 9.0-9.1 s (docs/benchmarks.md, twenty-sixth session).  A
forked worker pays them too, and cannot keep what it learnt;
ansible-playbook itself can.

``install()`` points the loader module's global ``glob`` at
``CachedGlob``, which answers ``glob``/``iglob`` of an absolute pattern
from its earlier answer while the directory it depends on keeps its
identity and timestamps: the pattern's own directory when that has no
wildcard, or, under a directory that does not exist, the nearest existing
one above it (making the missing one changes that one's entries).  An
answer is kept only when that directory has not changed for
``SETTLED_SECONDS`` before it was listed: timestamps tick coarsely (a few
ms), so a file added in the same tick as the listing would leave them
unchanged.  Any other pattern, or a call with keyword arguments, goes to
the real ``glob``.

Limits: a file system that does not update a directory's mtime when an
entry is added (or caches attributes, as NFS may for up to a minute)
would keep the old listing that long.  Private ansible-core API: the
loader's module global is checked by tests/ansible/test_listing_cache.py,
which fails when a release moves it (the run itself only warns).
"""
from __future__ import annotations

import glob as real_glob
import os
import threading
import time
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple

from ansible.plugins import loader as plugin_loader
from ansible.utils.display import Display

SETTLED_SECONDS = 2.0

# (device, inode, mtime ns, ctime ns): any change to the entries of a
# directory moves its mtime and ctime; a directory replaced moves the rest.
Stamp = Tuple[int, int, int, int]


def _stamp(directory: str) -> Optional[Stamp]:
    try:
        st = os.stat(directory)
    except OSError:
        return None
    return (st.st_dev, st.st_ino, st.st_mtime_ns, st.st_ctime_ns)


class CachedGlob:
    """The parts of the ``glob`` module the loader uses, answering repeated
    patterns from kept listings; anything else is the real module's."""

    def __init__(self, now: Callable[[], float] = time.time) -> None:
        self._now = now
        self._kept: Dict[str, Tuple[Stamp, List[Any]]] = {}
        self._lock = threading.Lock()
        self.listings = 0  # patterns really listed: what the tests count

    def glob(self, pattern: Any, **kwargs: Any) -> List[Any]:
        watched = None if kwargs else _watched(pattern)
        if watched is None:
            return real_glob.glob(pattern, **kwargs)
        return list(self._matches(pattern, watched))

    def iglob(self, pattern: Any, **kwargs: Any) -> Iterator[Any]:
        watched = None if kwargs else _watched(pattern)
        if watched is None:
            return real_glob.iglob(pattern, **kwargs)
        return iter(list(self._matches(pattern, watched)))

    def __getattr__(self, name: str) -> Any:
        return getattr(real_glob, name)

    def _matches(self, pattern: str, watched: str) -> List[Any]:
        before = _stamp(watched)
        kept = self._kept.get(pattern)
        if before is not None and kept is not None and kept[0] == before:
            return kept[1]
        found = real_glob.glob(pattern)
        self.listings += 1
        if before is not None and _stamp(watched) == before and \
                self._settled(before):
            with self._lock:
                self._kept[pattern] = (before, found)
        return found

    def _settled(self, stamp: Stamp) -> bool:
        changed = max(stamp[2], stamp[3]) / 1e9
        return self._now() - changed >= SETTLED_SECONDS


def _watched(pattern: Any) -> Optional[str]:
    """The directory whose stamp decides whether *pattern*'s answer still
    holds, or None if none does (relative, or wildcards in a directory
    that exists).  For ``/dir/*.py``: /dir.  For a pattern under a
    directory that does not exist (``/missing/*`` or ``/missing/*/*``):
    the nearest existing one above it, whose entries change when the
    missing one is made."""
    if not isinstance(pattern, str) or not os.path.isabs(pattern):
        return None
    parts = os.path.dirname(pattern).split(os.sep)
    plain = []
    for part in parts:
        if real_glob.has_magic(part):
            break
        plain.append(part)
    directory = os.sep.join(plain) or os.sep
    if os.path.isdir(directory):
        return directory if len(plain) == len(parts) else None
    while not os.path.isdir(directory):
        directory = os.path.dirname(directory)
    return directory


def install() -> Optional[CachedGlob]:
    """Put a CachedGlob in the plugin loader's place of ``glob`` (once per
    process) and return it.  If the loader no longer holds the ``glob``
    module as a global (a new release moved it), warn and change nothing:
    the run goes on without the cache."""
    current = getattr(plugin_loader, 'glob', None)
    if isinstance(current, CachedGlob):
        return current
    if current is not real_glob:
        Display().warning('plasmid: ansible.plugins.loader no longer uses '
                          'the glob module; plugin directories are listed '
                          'on every lookup')
        return None
    cached = CachedGlob()
    plugin_loader.glob = cached
    return cached
