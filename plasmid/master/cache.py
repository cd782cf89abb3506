"""A per-user disk cache for what a master derives from its own sources.

Stripping the core's docstrings and comments for the bootstrap costs a
fresh master process 50-80 ms of CPU (``ast`` parse and unparse), on its
first connection's path: a short-lived master (a script, the Ansible
accelerator's broker, one per playbook run) pays it every time.  The result
only depends on plasmid's sources and the Python that derives it, so it is
kept on disk under a key made of both.

What is read back runs in every context, as root too: an entry is trusted
only in a directory and a file that this user owns and no one else may
write, as ssh treats its own files.  Anything else (no home, a full disk,
a foreign or corrupt entry) means building in memory, as without a cache.

Two shapes of entry: ``load_or_build`` keys an entry by everything it is
derived from (a new key per edit; the newest KEEP of a kind stay);
``read``/``write`` keep one entry under a fixed name, which the caller
checks against what it was derived from (a module's bytecode for another
Python, ``master/compilers``: one entry per module file, replaced when
its source changes; ``prune`` keeps a number of the newest).

The directory is ``$PLASMID_CACHE_DIR``, else ``$XDG_CACHE_HOME/plasmid``,
else ``~/.cache/plasmid``; ``PLASMID_CACHE_DIR=off`` turns the cache off.
"""
from __future__ import annotations

import hashlib
import logging
import os
import stat
import sys
import tempfile
from typing import Callable, Iterable, Optional

LOG = logging.getLogger('plasmid.master.cache')
ENV = 'PLASMID_CACHE_DIR'
# Part of every key: change it when what an entry holds changes form.
FORMAT = b'plasmid-cache-1'
# Entries kept per kind: each plasmid version (or edit of its sources) and
# each master Python makes one; older ones go as new ones are stored.
KEEP = 8


def directory() -> Optional[str]:
    """Where entries live, or None when the cache is off."""
    chosen = os.environ.get(ENV)
    if chosen == 'off':
        return None
    if chosen:
        return chosen
    base = os.environ.get('XDG_CACHE_HOME') or \
        os.path.join(os.path.expanduser('~'), '.cache')
    if not os.path.isabs(base):  # no home: never a directory relative to cwd
        return None
    return os.path.join(base, 'plasmid')


def key(parts: Iterable[bytes]) -> str:
    """A key for content derived from *parts* by this Python."""
    digest = hashlib.sha256(FORMAT)
    for part in [sys.version.encode('utf-8')] + list(parts):
        digest.update(b'%d:' % len(part))
        digest.update(part)
    return digest.hexdigest()


def load_or_build(kind: str, parts: Iterable[bytes],
                  build: Callable[[], bytes]) -> bytes:
    """The cached bytes for *kind* and *parts*, or ``build()`` (stored for
    the next process when the directory allows)."""
    name = '%s-%s' % (kind, key(parts))
    data = read(name)
    if data is None:
        data = build()
        if write(name, data):
            prune(kind, KEEP)
    return data


def read(name: str) -> Optional[bytes]:
    """Entry *name*'s bytes, or None: absent, damaged, not trusted, or the
    cache is off."""
    where = directory()
    if where is None:
        return None
    return _unsealed(_read_trusted(where, os.path.join(where, name)))


def write(name: str, data: bytes) -> bool:
    """Store *data* as entry *name* (replacing it); False if the cache is
    off or the directory does not allow it."""
    where = directory()
    if where is None:
        return False
    return _store(where, os.path.join(where, name), _sealed(data))


def _sealed(data: bytes) -> bytes:
    return hashlib.sha256(data).digest() + data


def _unsealed(entry: Optional[bytes]) -> Optional[bytes]:
    """An entry's content, or None if it does not match its digest (a
    disk that lost part of it)."""
    if entry is None or len(entry) < 32:
        return None
    data = entry[32:]
    if hashlib.sha256(data).digest() != entry[:32]:
        LOG.warning('ignoring a damaged cache entry')
        return None
    return data


def _private(st: os.stat_result) -> bool:
    return st.st_uid == os.geteuid() and \
        not st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


def _read_trusted(where: str, path: str) -> Optional[bytes]:
    try:
        if not _private(os.stat(where)):
            LOG.warning('not using cache %s: another user may write it',
                        where)
            return None
        fd = os.open(path, os.O_RDONLY | getattr(os, 'O_NOFOLLOW', 0))
    except OSError:
        return None
    try:
        with os.fdopen(fd, 'rb') as handle:
            if not _private(os.fstat(fd)):
                LOG.warning('not using %s: another user may write it', path)
                return None
            return handle.read()
    except OSError:
        return None


def _store(where: str, path: str, data: bytes) -> bool:
    """Write atomically (a reader sees a whole entry or none); failing to
    is not an error."""
    try:
        os.makedirs(where, mode=0o700, exist_ok=True)
        if not _private(os.stat(where)):
            return False
        fd, temporary = tempfile.mkstemp(dir=where, prefix='.new-')
    except OSError:
        return False
    try:
        with os.fdopen(fd, 'wb') as handle:
            handle.write(data)
        os.replace(temporary, path)
        return True
    except OSError:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        return False


def prune(kind: str, keep: int) -> None:
    """Keep the *keep* newest entries of *kind* (names ``kind-...``)."""
    where = directory()
    if where is None:
        return
    try:
        paths = [os.path.join(where, n) for n in os.listdir(where)
                 if n.startswith(kind + '-')]
        paths.sort(key=lambda p: os.stat(p).st_mtime, reverse=True)
        for old in paths[keep:]:
            os.unlink(old)
    except OSError:
        pass
