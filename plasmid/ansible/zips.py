"""The module zips a broker has received, each split into files once.

A worker sends a module's zip only when the broker asks for it.  The first
time the broker sees a zip, it reads its files, names each by the digest of
its contents and compresses it; every later context that needs the same
payload (the next host of a play, the become context of the same host) is
served from here.  So a run over many hosts asks the workers for each zip
once, not once per host, and compresses the shared ``module_utils`` once.
"""
from __future__ import annotations

import collections
import hashlib
import io
import threading
import zipfile
import zlib
from typing import NamedTuple, Optional

# Zips kept: more than the distinct modules of most runs.  An evicted zip
# is asked for again, so the bound costs time, never correctness.
KEEP = 64

# A module that may re-run itself under another interpreter
# (``respawn_module``: apt, dnf, package_facts, ...) gives that interpreter
# the path of its payload on disk, and probes interpreters with that path
# on PYTHONPATH.  A payload held in RAM has no such path, so a zip that
# carries this file runs from its script, as vanilla runs it.
RESPAWN = 'ansible/module_utils/common/respawn.py'


class PayloadFile(NamedTuple):
    path: str
    digest: str        # sha1 of the contents, as the target names them
    packed: bytes      # zlib-compressed contents


class Split(NamedTuple):
    """What one context gets: files it holds, named by digest; the others,
    compressed; and the digests it will hold afterwards."""
    known: dict
    new: dict
    new_digests: set


def content_digest(content: bytes) -> str:
    return hashlib.sha1(content).hexdigest()


def read_files(data: bytes) -> list[PayloadFile]:
    """The files of a module's zip, digested and compressed."""
    files = []
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        for path in archive.namelist():
            if path.endswith('/'):
                continue
            content = archive.read(path)
            files.append(PayloadFile(path, content_digest(content),
                                 zlib.compress(content, 6)))
    return files


def needs_disk(files: list[PayloadFile]) -> bool:
    """Whether the module must run from its script (see RESPAWN)."""
    return any(entry.path == RESPAWN for entry in files)


def split(files: list[PayloadFile], held: set) -> Split:
    """*files* for a context that holds the contents named in *held*."""
    known: dict[str, str] = {}
    new: dict[str, bytes] = {}
    for entry in files:
        if entry.digest in held:
            known[entry.path] = entry.digest
        else:
            new[entry.path] = entry.packed
    return Split(known, new, {f.digest for f in files if f.path in new})


class ZipStore:
    """Zips by payload digest, the last KEEP of them."""

    def __init__(self, keep: int = KEEP) -> None:
        self.keep = keep
        self._files: collections.OrderedDict[str, list[PayloadFile]] = \
            collections.OrderedDict()
        self._lock = threading.Lock()

    def get(self, digest: str) -> Optional[list[PayloadFile]]:
        with self._lock:
            files = self._files.get(digest)
            if files is not None:
                self._files.move_to_end(digest)
            return files

    def add(self, digest: str, data: bytes) -> list[PayloadFile]:
        """Split *data* and keep it under *digest*: outside the lock, since
        it takes milliseconds; workers that raced to send the same zip
        get the files split first."""
        files = self.get(digest) or read_files(data)
        with self._lock:
            files = self._files.setdefault(digest, files)
            self._files.move_to_end(digest)
            while len(self._files) > self.keep:
                self._files.popitem(last=False)
        return files
