"""The temporary files of the copies a context is making, removed if the
link to its parent closes mid-copy (the master, or a hop on the way, went
away): the context ends then, and the files stayed for good, nobody else
being there to remove them (a target itself killed still leaves its own).

Shipped into contexts with :mod:`plasmid.files.remote` (a module of its
own: each must fit the smallest message), so stdlib and plasmid.core
only, Python 2.7-compatible.  In the master (a fetch's files there) it
only keeps count: the master has no parent.
"""
from __future__ import absolute_import
import os
import threading
import time

from plasmid.core.ostext import native

# Made, and neither committed nor discarded yet.
_FILES = set()
# Held while one is made, and for good once the parent is lost: none is
# made after the clean-up.
_MAKING = threading.Lock()
_WATCHING = []  # [True] once _remove_all waits for a lost parent


def make(temp):
    """Create *temp* (it must not exist), noted as unfinished; a
    descriptor writing it."""
    _watch()
    with _MAKING:
        fd = os.open(native(temp), os.O_WRONLY | os.O_CREAT | os.O_EXCL,
                     0o600)
        _FILES.add(temp)
    return fd


def done(temp):
    """*temp* was committed (renamed) or discarded."""
    _FILES.discard(temp)


def _watch():
    if _WATCHING:
        return
    _WATCHING.append(True)
    try:
        from plasmid.core import child
        # Ahead of the callback that ends the process.
        child.current.router.on_parent_lost.insert(0, _remove_all)
    except Exception:  # not a context
        pass


def _remove_all():
    """The parent is lost, and the process ends next.  A file being made
    meanwhile (by the thread running calls) is waited for, a second at
    most; then the lock stays held.  Never raises: the process must end
    after it."""
    try:
        give_up = time.time() + 1.0
        while not _MAKING.acquire(False) and time.time() < give_up:
            time.sleep(0.01)
        for temp in list(_FILES):
            try:
                os.unlink(native(temp))
            except Exception:
                pass
    except Exception:
        pass
