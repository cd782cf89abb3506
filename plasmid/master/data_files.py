"""The data files of packages the master serves, as a context asks for
them (``GET_DATA``): one file's bytes or one directory's names, read from
the package's directory or from inside the zip on ``sys.path`` it was
imported from, and never from outside that package, nor code the master
never sends; and the metadata of the distributions installed here, for
``importlib.metadata`` there."""
from __future__ import annotations

import importlib.metadata
import logging
import os
import posixpath
import zipfile
from typing import Callable, Optional

from plasmid.core.resources import TOO_LARGE  # the context's word for it

LOG = logging.getLogger(__name__)
MISSING = ('missing', None)

# Whether the module of that name is never sent to a context.
Withheld = Callable[[str], bool]

# Never data: bytecode, and the directories Python caches it in.  A context
# gets a module's bytecode only beside its source, as the import of a module
# the master serves.
BYTECODE_SUFFIXES = ('.pyc', '.pyo')
SOURCE_SUFFIXES = ('.py', '.pyw')


def read(package: str, init_file: str, relpath: str, limit: int,
         withheld: Withheld) -> tuple:
    """``('file', bytes)``, ``('dir', [names])``, ``(TOO_LARGE, why)`` or
    MISSING for *relpath* inside *package*, whose ``__init__.py`` is
    *init_file*; files of *limit* bytes or more are too large.  Nothing of
    a module *withheld* says is never sent (its source, its directory):
    what its import is refused must not be read as data instead."""
    root = os.path.dirname(init_file)
    archive = _archive_holding(root)
    if archive is not None:
        return _from_archive(package, archive, root, relpath, limit, withheld)
    return _from_directory(package, root, relpath, limit, withheld)


def _is_withheld(package: str, parts: list[str], is_dir: bool,
                 withheld: Withheld) -> bool:
    """Whether the file or directory at path *parts* inside *package* is
    bytecode, or the source or directory of a module *withheld* (or lies
    in such a directory).  The name is checked as written and folded to
    lower case, as a case-insensitive file system finds the file."""
    lowered = [part.lower() for part in parts]
    if '__pycache__' in lowered or (not is_dir and lowered and
                                    lowered[-1].endswith(BYTECODE_SUFFIXES)):
        return True
    name = _module_of(package, parts, is_dir)
    return withheld(name) or withheld(name.lower())


def _module_of(package: str, parts: list[str], is_dir: bool) -> str:
    """The module at path *parts* inside *package* (``master/router.py``:
    ``package.master.router``; a directory, as a package), or for a data
    file the package it lies in (``master/x.json``: ``package.master``)."""
    names = [package] + list(parts)
    if parts and not is_dir:
        stem, suffix = posixpath.splitext(names.pop())
        if suffix.lower() in SOURCE_SUFFIXES and stem.lower() != '__init__':
            names.append(stem)
    return '.'.join(names)


def distribution(relpath: str, limit: int) -> tuple:
    """The metadata of a distribution installed on the master: ``NAME``
    lists its files, ``NAME/FILE`` reads one (``METADATA``,
    ``entry_points.txt``...); nothing outside its metadata."""
    name, _, filename = relpath.partition('/')
    if not name or '/' in filename or filename.startswith('.'):
        return MISSING
    try:
        found = importlib.metadata.distribution(name)
    except (importlib.metadata.PackageNotFoundError, ValueError):
        return MISSING
    if not filename:
        where = getattr(found, '_path', None)  # PathDistribution's own
        names = sorted(os.listdir(where)) if where is not None and \
            os.path.isdir(where) else ['METADATA']
        return ('dir', names)
    text = found.read_text(filename)
    if text is None:
        return MISSING
    data = text.encode('utf-8')
    return _too_large(name, filename, len(data), limit) or ('file', data)


def _from_directory(package: str, root: str, relpath: str,
                    limit: int, withheld: Withheld) -> tuple:
    root = os.path.realpath(root)
    path = os.path.realpath(os.path.join(root, relpath))
    if path != root and not path.startswith(root + os.sep):
        return _outside(package, relpath)
    # Where the path leads, links followed: a link to a withheld file is
    # that file.
    parts = path[len(root):].split(os.sep)[1:]
    is_dir = os.path.isdir(path)
    if not is_dir and not os.path.isfile(path):
        return MISSING
    if parts and _is_withheld(package, parts, is_dir, withheld):
        return _refused(package, relpath)
    if is_dir:
        return ('dir', sorted(
            n for n in os.listdir(path)
            if not _is_withheld(package, parts + [n],
                                os.path.isdir(os.path.join(path, n)),
                                withheld)))
    too_large = _too_large(package, relpath, os.path.getsize(path), limit)
    if too_large:
        return too_large
    with open(path, 'rb') as handle:
        return ('file', handle.read())


def _archive_holding(path: str) -> Optional[str]:
    """The zip file *path* lies inside (``/x/app.zip/pkg``), or None."""
    while path and path != os.path.dirname(path):
        if os.path.isfile(path):
            return path if zipfile.is_zipfile(path) else None
        path = os.path.dirname(path)
    return None


def _from_archive(package: str, archive: str, root: str, relpath: str,
                  limit: int, withheld: Withheld) -> tuple:
    inner = root[len(archive):].strip('/')
    target = posixpath.normpath(posixpath.join(inner, relpath))
    if target == '.':
        target = ''
    if target != inner and not target.startswith(inner + '/'):
        return _outside(package, relpath)
    parts = target[len(inner):].strip('/').split('/') if target != inner \
        else []
    with zipfile.ZipFile(archive) as opened:
        names = opened.namelist()
        if target in names and not target.endswith('/'):
            if _is_withheld(package, parts, False, withheld):
                return _refused(package, relpath)
            too_large = _too_large(package, relpath,
                                   opened.getinfo(target).file_size, limit)
            return too_large or ('file', opened.read(target))
    prefix = target + '/' if target else ''
    below = [n[len(prefix):] for n in names
             if n.startswith(prefix) and len(n) > len(prefix)]
    if below and parts and _is_withheld(package, parts, True, withheld):
        return _refused(package, relpath)
    dirs = set(n.split('/')[0] for n in below if '/' in n)
    shown = sorted(n for n in set(n.split('/')[0] for n in below)
                   if not _is_withheld(package, parts + [n], n in dirs,
                                       withheld))
    return ('dir', shown) if shown else MISSING


def _too_large(package: str, relpath: str, size: int,
               limit: int) -> Optional[tuple]:
    if size < limit:
        return None
    return (TOO_LARGE, '%s: data file %s is %d bytes, beyond the %d a message '
            "may carry (half the router's max_message_size)"
            % (package, relpath, size, limit))


def _outside(package: str, relpath: str) -> tuple:
    LOG.error('a context asked for %r, outside package %s', relpath, package)
    return MISSING


def _refused(package: str, relpath: str) -> tuple:
    LOG.error('a context asked for %r of package %s: bytecode, or code the '
              'master never sends', relpath, package)
    return MISSING
