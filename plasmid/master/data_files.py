"""The data files of packages the master serves, as a context asks for
them (``GET_DATA``): one file's bytes or one directory's names, read from
the package's directory or from inside the zip on ``sys.path`` it was
imported from, and never from outside that package; and the metadata of
the distributions installed here, for ``importlib.metadata`` there."""
from __future__ import annotations

import importlib.metadata
import logging
import os
import posixpath
import zipfile
from typing import Optional

from plasmid.core.resources import TOO_LARGE  # the context's word for it

LOG = logging.getLogger(__name__)
MISSING = ('missing', None)


def read(package: str, init_file: str, relpath: str, limit: int) -> tuple:
    """``('file', bytes)``, ``('dir', [names])``, ``(TOO_LARGE, why)`` or
    MISSING for *relpath* inside *package*, whose ``__init__.py`` is
    *init_file*; files of *limit* bytes or more are too large."""
    root = os.path.dirname(init_file)
    archive = _archive_holding(root)
    if archive is not None:
        return _from_archive(package, archive, root, relpath, limit)
    return _from_directory(package, root, relpath, limit)


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
                    limit: int) -> tuple:
    root = os.path.realpath(root)
    path = os.path.realpath(os.path.join(root, relpath))
    if path != root and not path.startswith(root + os.sep):
        return _outside(package, relpath)
    if os.path.isdir(path):
        return ('dir', sorted(n for n in os.listdir(path)
                              if n != '__pycache__'))
    if not os.path.isfile(path):
        return MISSING
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
                  limit: int) -> tuple:
    inner = root[len(archive):].strip('/')
    target = posixpath.normpath(posixpath.join(inner, relpath))
    if target == '.':
        target = ''
    if target != inner and not target.startswith(inner + '/'):
        return _outside(package, relpath)
    with zipfile.ZipFile(archive) as opened:
        names = opened.namelist()
        if target in names and not target.endswith('/'):
            too_large = _too_large(package, relpath,
                                   opened.getinfo(target).file_size, limit)
            return too_large or ('file', opened.read(target))
    prefix = target + '/' if target else ''
    below = set(n[len(prefix):].split('/')[0] for n in names
                if n.startswith(prefix) and len(n) > len(prefix))
    below.discard('__pycache__')
    return ('dir', sorted(below)) if below else MISSING


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
