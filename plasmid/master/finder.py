"""Finding what the master serves a context: a module's source, found
without importing the module, in files or (through zipimport) in a zip on
``sys.path``; or why it is not sent (``master_only`` code, the master's
standard library, a compiled extension, bytecode alone).
"""
from __future__ import annotations

import collections
import importlib.machinery
import importlib.util
import os
import re
import sys
import sysconfig
import tokenize
import zipimport
from typing import Any, Optional

from plasmid.core.context import MAIN_ALIAS
from plasmid.core.importer import ModuleEntry
from plasmid.master import scanner


# Master-only packages; a context importing these gets ImportError.
PRIVATE_PREFIXES = ('plasmid.master', 'plasmid.cli',
                    'plasmid.files.transfer', 'plasmid.files.broadcast',
                    'plasmid.files.gather')

# Of the Ansible accelerator only these run in contexts (payload); the rest
# of plasmid.ansible is the controller's, refused as the packages above.
ANSIBLE_PAYLOAD = frozenset(['plasmid.ansible', 'plasmid.ansible.target',
                             'plasmid.ansible.forks', 'plasmid.ansible.baseline',
                             'plasmid.ansible.vfork',
                             'plasmid.ansible.warm', 'plasmid.ansible.chores',
                             'plasmid.ansible.shell_spawn'])

# Answers "not served" the finder keeps, the least recently asked dropped
# first: a context may ask for any number of made-up names.  Scanning the
# 122 top-level packages of a test environment finds ~13,000 (mostly ``x.y``
# of ``from x import y``, y an attribute), which this keeps.
MISSES_KEPT = 1 << 15


def master_only(fullname: str) -> bool:
    """Whether *fullname* is never served to a context."""
    if fullname.startswith(PRIVATE_PREFIXES):
        return True
    return fullname.startswith('plasmid.ansible.') and \
        fullname not in ANSIBLE_PAYLOAD


def _stdlib_dirs() -> tuple[str, ...]:
    paths = sysconfig.get_paths()
    dirs = {os.path.realpath(paths[key]) for key in ('stdlib', 'platstdlib')}
    return tuple(d + os.sep for d in dirs)


class ModuleFinder:
    """Locates a module's source without importing it."""

    def __init__(self) -> None:
        self.stdlib_dirs = _stdlib_dirs()
        self.site_markers = (os.sep + 'site-packages' + os.sep,
                             os.sep + 'dist-packages' + os.sep)
        # Modules it serves, as many as the master's disk holds; and the
        # last MISSES_KEPT of the others, oldest first.
        self.cache: dict[str, ModuleEntry] = {}
        self.misses: collections.OrderedDict[str, ModuleEntry] = \
            collections.OrderedDict()
        # name -> (mtime, size) of its file when the source was read
        self.read_stamps: dict[str, tuple] = {}
        # Namespace packages found (directories without __init__): served
        # as empty packages, but never their files as package data, since
        # any directory on sys.path is one (a "keys" beside the script).
        self.namespaces: set[str] = set()

    def unchanged(self, entry: ModuleEntry) -> bool:
        """Whether *entry*'s file is as it was when its source was read
        (mtime and size, as a .pyc is checked): its .pyc, if fresh, was
        compiled from that source."""
        try:
            return _stamp(entry.filename) == self.read_stamps[entry.name]
        except (OSError, KeyError):
            return False

    def stdlib_path(self, fullname: str) -> Optional[str]:
        """The source of a standard library module, for scanning only."""
        spec = self._spec(fullname)
        origin = self._source_path(spec)
        if origin is not None and self._is_stdlib(os.path.realpath(origin)):
            return origin
        return None

    def exists(self, fullname: str) -> bool:
        """Can the master import *fullname* at all (in any form)?"""
        if fullname in sys.modules or fullname in sys.builtin_module_names:
            return True
        return self._spec(fullname) is not None

    def find(self, fullname: str) -> ModuleEntry:
        entry = self.cache.get(fullname)
        if entry is None:
            entry = self._missed(fullname)
        if entry is not None:
            return entry
        if not scanner.is_module_name(fullname):
            # No module has it: nothing to look up, nor to keep.
            return ModuleEntry(fullname, False, None, None)
        entry = self._find(fullname)
        if entry.source is not None:
            self.cache[fullname] = entry
        else:
            self._keep_miss(entry)
        return entry

    def _missed(self, fullname: str) -> Optional[ModuleEntry]:
        """The kept answer "not served" for *fullname*, now the newest."""
        entry = self.misses.get(fullname)
        if entry is not None:
            try:
                self.misses.move_to_end(fullname)
            except KeyError:  # dropped meanwhile by a find on another thread
                pass
        return entry

    def _keep_miss(self, entry: ModuleEntry) -> None:
        self.misses[entry.name] = entry
        while len(self.misses) > MISSES_KEPT:
            try:
                self.misses.popitem(last=False)
            except KeyError:  # emptied meanwhile by another thread
                break

    def _find(self, fullname: str) -> ModuleEntry:
        absent = ModuleEntry(fullname, False, None, None)
        self.namespaces.discard(fullname)
        if master_only(fullname):
            return unsent(fullname, 'is the master\'s own (plasmid\'s '
                          'controller side): it is never sent to a context')
        if fullname in sys.builtin_module_names:
            return absent
        spec = self._spec(fullname)
        namespace = _namespace_dir(spec)
        if namespace is not None:
            if self._is_stdlib(os.path.realpath(namespace)):
                return absent
            # As an empty package there (its submodules come as any do).
            self.namespaces.add(fullname)
            return ModuleEntry(fullname, True, '',
                               os.path.join(namespace, '__init__.py'))
        is_pkg = spec is not None and \
            spec.submodule_search_locations is not None
        if isinstance(spec and spec.loader, zipimport.zipimporter):
            return self._from_archive(spec, is_pkg) or absent
        origin = self._source_path(spec)
        if origin is None:
            return _without_source(fullname, spec) or absent
        if self._is_stdlib(os.path.realpath(origin)):
            return unsent(fullname, "is in the master's standard library "
                          '(Python %d.%d), not in this Python\'s'
                          % sys.version_info[:2])
        try:
            stamp = _stamp(origin)
            with tokenize.open(origin) as handle:
                source = without_coding_cookie(handle.read())
        except (OSError, SyntaxError):
            return absent
        self.read_stamps[fullname] = stamp
        return ModuleEntry(fullname, is_pkg, source, origin)

    def _from_archive(self, spec, is_pkg: bool) -> Optional[ModuleEntry]:
        """A module in a zip on sys.path (a zipapp, an egg): its source
        read through zipimport and decoded as its coding cookie says
        (zipimport's get_source takes UTF-8 only); None for one without
        source (a .pyc only) or from the standard library's own zip.  No
        read stamp: the master's bytecode is never taken for it."""
        origin = spec.origin
        if not origin or not origin.endswith('.py') or \
                self._is_stdlib(origin):
            return None
        try:
            source = importlib.util.decode_source(
                spec.loader.get_data(origin))
        except (OSError, SyntaxError, UnicodeDecodeError):
            return None
        return ModuleEntry(spec.name, is_pkg, without_coding_cookie(source),
                           origin)

    @staticmethod
    def _source_path(spec) -> Optional[str]:
        """The .py file behind *spec*, also for a compiled module that
        ships its pure-Python source beside it."""
        origin = spec and spec.origin
        if not origin or not os.path.isfile(origin):
            return None
        if origin.endswith('.py'):
            return origin
        base = os.path.basename(origin).split('.')[0]
        twin = os.path.join(os.path.dirname(origin), base + '.py')
        return twin if os.path.isfile(twin) else None

    def _is_stdlib(self, path: str) -> bool:
        return path.startswith(self.stdlib_dirs) and \
            not any(marker in path for marker in self.site_markers)

    def submodule_locations(self, package: str) -> list[str]:
        """Where *package*'s submodules are here (see _search_locations)."""
        return _search_locations(package, self._spec(package))

    def _spec(self, fullname: str):
        if fullname == '__main__':
            return None
        if fullname == MAIN_ALIAS:
            path = getattr(sys.modules.get('__main__'), '__file__', None)
            if not path:
                return None
            return importlib.util.spec_from_file_location(fullname, path)
        module = sys.modules.get(fullname)
        if module is not None and getattr(module, '__spec__', None):
            return module.__spec__
        parent, _, leaf = fullname.rpartition('.')
        try:
            if not parent:
                return importlib.machinery.PathFinder.find_spec(fullname)
            parent_spec = self._spec(parent)
            locations = _search_locations(parent, parent_spec)
            if not locations:
                return None
            try:
                return importlib.machinery.PathFinder.find_spec(fullname,
                                                                locations)
            except KeyError:  # see _namespace_spec
                return _namespace_spec(fullname, locations)
        except (ImportError, ValueError):
            return None


def _namespace_spec(fullname: str, locations: list[str]):
    """The spec of namespace package *fullname* (directories without
    ``__init__.py``) inside *locations*.  PathFinder's own raises KeyError
    where the master has not imported the parent (``flask.sansio`` before
    ``flask``): its path recomputes itself from the parent's module."""
    leaf = fullname.rpartition('.')[2]
    dirs = [os.path.join(d, leaf) for d in locations
            if os.path.isdir(os.path.join(d, leaf))]
    if not dirs:
        return None
    spec = importlib.machinery.ModuleSpec(fullname, None, is_package=True)
    spec.submodule_search_locations = dirs
    return spec


def unsent(fullname: str, why: str, **fields: Any) -> ModuleEntry:
    """The answer for a module the master has but will not send: absent,
    with the reason in place of a file name, which the context raises as
    ModuleNotFoundError (instead of a bare "No module named ...")."""
    return ModuleEntry(fullname, False, None, '%s %s' % (fullname, why),
                       **fields)


def _without_source(fullname: str, spec) -> Optional[ModuleEntry]:
    """Why the master, which can import *fullname*, has no source of it
    to send: a compiled extension, or bytecode alone; None if it cannot
    import it at all."""
    origin = spec and spec.origin
    if not origin or not os.path.isfile(origin):
        if spec is None and sys.modules.get(fullname) is not None:
            return unsent(fullname, 'has no source file on the master (a '
                          'module made at run time, not imported from a '
                          'file); only Python source is sent')
        return None
    if origin.endswith(tuple(importlib.machinery.EXTENSION_SUFFIXES)):
        return unsent(fullname, 'is a compiled extension module on the '
                      'master (%s); only Python source is sent: install it '
                      'on the target' % origin)
    return unsent(fullname, 'has no source on the master (%s); only Python '
                  'source is sent' % origin)


def _search_locations(name: str, spec) -> list[str]:
    """Where package *name*'s submodules are: its ``__path__`` where the
    master has imported it (a package may change it: pkgutil's
    ``extend_path``, a directory appended), else what its spec says.  A
    namespace package's path recomputes itself from its parent's module,
    which the master may not have imported (``google.cloud`` before
    ``google``): then the directories it found last time."""
    path = getattr(sys.modules.get(name), '__path__', None)
    if path is None:
        path = spec.submodule_search_locations if spec else None
    if path is None:
        return []
    try:
        return list(path)
    except KeyError:
        return list(getattr(path, '_path', ()))


def _namespace_dir(spec) -> Optional[str]:
    """The first directory of a namespace package (PEP 420, no
    ``__init__.py``: ``google``, ``azure``), None for anything else."""
    if spec is None or spec.origin not in (None, 'namespace') or \
            not spec.submodule_search_locations:
        return None
    return list(spec.submodule_search_locations)[0]


# PEP 263's declaration, in one of a file's first two lines.
_CODING_COOKIE = re.compile(r'^([ \t\f]*#.*?coding)[:=]', re.MULTILINE)


def without_coding_cookie(source: str) -> str:
    """*source*, decoded already, with its encoding declaration made a
    plain comment (``coding: utf-8`` -> ``coding  utf-8``): it is sent
    as text, and Python 2 refuses to compile text that declares one."""
    head, newline, rest = source.partition('\n')
    second, newline2, rest = rest.partition('\n')
    first_two = head + newline + second + newline2
    if 'coding' not in first_two:
        return source
    return _CODING_COOKIE.sub(r'\1 ', first_two, count=1) + rest


def _stamp(path: str) -> tuple:
    stat = os.stat(path)
    return (stat.st_mtime_ns, stat.st_size)
