"""Package data for modules imported from the parent.

``importlib.resources`` and ``pkgutil.get_data`` reach a package's data
files through its loader; for packages that came from the parent, those
files live on the master.  They are fetched on first use, one file or
directory listing per request, and cached like modules.
"""
from __future__ import absolute_import
import io
import posixpath
import sys

from plasmid.core import compat

# The master's answer for a file too large for one message (before, it
# was said to be missing): its words (master/data_files.py) are raised as
# IOError when it is read.
TOO_LARGE = 'too-large'
# The "package" whose data are installed distributions' metadata
# (``NAME/METADATA``): no module can have this name.
DISTRIBUTIONS = '.dist-info'
# The "package" whose data path NAME lists package NAME's submodules.
SUBMODULES = '.submodules'


def submodules(package, prefix):
    """``pkgutil.iter_modules``'s answer for a package from the parent:
    ``(prefix + name, is_package)`` for each of its submodules there."""
    from plasmid.core import child
    importer = child.current.importer
    parent = importer.router.parent
    if parent is None or parent.closed:  # a fork, which cannot ask
        return []
    kind, found = ParentData(importer).fetch_data(SUBMODULES, package)
    if kind != 'dir':
        return []
    return [(prefix + name, bool(is_pkg)) for name, is_pkg in found]


class ParentData(object):
    """The parent's answers about one importer's packages: what a Reader
    asks through ``fetch_data``, and ``pkgutil.get_data``'s paths.  Kept
    out of the importer, which is in every context's bootstrap."""

    def __init__(self, importer):
        self.importer = importer

    def fetch_data(self, package, relpath):
        """('file', bytes), ('dir', [names]), (TOO_LARGE, why) or
        ('missing', None)."""
        router = self.importer.router
        kind, value = router.decode(
            self.importer.data_latch(package, relpath).wait())
        if kind == 'file':
            value = compat.bytes_from_wire(value)
        return kind, value

    def distributions(self, context=None, **kwargs):
        """``importlib.metadata``'s question: the named distribution's
        metadata as the master has it installed (its ``.dist-info``, read
        a file per request), for a package from the master that asks its
        own version; none for a question without a name (the master's
        list is not this machine's).  The target's own come first: this
        finder is the last one asked."""
        name = getattr(context, 'name', None) or kwargs.get('name')
        if not name or sys.version_info < (3, 8):
            # Before 3.8 the question comes from the importlib_metadata
            # backport, whose answer this cannot build (importlib.metadata
            # is not there): it then says "not found", as it did.
            return iter(())
        kind, _ = self.fetch_data(DISTRIBUTIONS, name)
        if kind != 'dir':
            return iter(())
        return iter([_remote_distribution(self, name)])

    def get_data(self, path):
        """*path* is under the master path of a package from the parent;
        the innermost such package answers."""
        best = None
        for entry in list(self.importer.cache.values()):
            if entry.is_pkg and entry.filename:
                root = entry.filename.rpartition('/')[0] + '/'
                if path.startswith(root) and (
                        best is None or len(root) > len(best[1])):
                    best = (entry.name, root)
        if best is not None:
            kind, data = self.fetch_data(best[0], path[len(best[1]):])
            if kind == 'file':
                return data
            if kind == TOO_LARGE:
                raise IOError(data)
        raise IOError('no data file %s' % path)


class RemotePath(object):
    """A file or directory inside a package served by the parent; what
    ``importlib.resources.files()`` returns for such a package."""

    def __init__(self, source, package, relpath=''):
        self.source = source  # has fetch_data(package, relpath)
        self.package = package
        self.relpath = relpath

    def __repr__(self):
        return '<RemotePath %s:%s>' % (self.package, self.relpath)

    @property
    def name(self):
        return posixpath.basename(self.relpath) or self.package

    def _fetch(self):
        return self.source.fetch_data(self.package, self.relpath)

    def joinpath(self, *parts):
        path = posixpath.join(self.relpath, *parts)
        return RemotePath(self.source, self.package,
                          posixpath.normpath(path).lstrip('/'))

    __truediv__ = joinpath
    __div__ = joinpath

    def is_file(self):
        return self._fetch()[0] in ('file', TOO_LARGE)

    def is_dir(self):
        return self._fetch()[0] == 'dir'

    def exists(self):
        return self._fetch()[0] != 'missing'

    def iterdir(self):
        kind, names = self._fetch()
        if kind != 'dir':
            raise NotADirectoryError_(self.relpath)
        return iter([self.joinpath(name) for name in names])

    def read_bytes(self):
        kind, data = self._fetch()
        if kind == TOO_LARGE:
            raise IOError(data)
        if kind != 'file':
            raise FileNotFoundError_(
                '%s has no data file %r' % (self.package, self.relpath))
        return data

    def read_text(self, encoding='utf-8', errors='strict'):
        return self.read_bytes().decode(encoding, errors)

    def open(self, mode='r', *args, **kwargs):
        data = io.BytesIO(self.read_bytes())
        if 'b' in mode:
            return data
        return io.TextIOWrapper(data, *args, **kwargs)


try:
    FileNotFoundError_ = FileNotFoundError
    NotADirectoryError_ = NotADirectoryError
except NameError:  # Python 2
    FileNotFoundError_ = IOError
    NotADirectoryError_ = IOError


class Reader(object):
    """The resource reader a package's loader hands to importlib."""

    def __init__(self, source, package):
        self.root = RemotePath(source, package)

    def files(self):
        return self.root

    def open_resource(self, resource):
        return self.root.joinpath(resource).open('rb')

    def resource_path(self, resource):
        # No file exists on this machine; importlib falls back to
        # open_resource (and a temporary copy if a path is demanded).
        raise FileNotFoundError_(resource)

    def is_resource(self, name):
        return self.root.joinpath(name).is_file()

    def contents(self):
        kind, names = self.root._fetch()
        return names if kind == 'dir' else []


def _remote_distribution(source, name):
    """An ``importlib.metadata.Distribution`` whose files the parent
    reads (Python 3.8+, whose module this defines it with)."""
    import importlib.metadata
    import pathlib

    class RemoteDistribution(importlib.metadata.Distribution):
        def read_text(self, filename):
            kind, data = source.fetch_data(DISTRIBUTIONS,
                                           posixpath.join(name, filename))
            return data.decode('utf-8') if kind == 'file' else None

        def locate_file(self, path):
            # No file of it is on this machine: a path where it would be,
            # which does not exist (``files`` asks, on 3.12+).
            return pathlib.Path('/', DISTRIBUTIONS, name, str(path))

    return RemoteDistribution()
