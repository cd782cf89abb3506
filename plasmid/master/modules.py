"""Serve module source to contexts that ask for it.

A context asks only for modules it cannot import itself.  The master
answers from its own environment, never with its standard library (the
target's own must win, even when it lacks a module the master's has),
never with compiled extensions, and never with master-only code.
"""
from __future__ import annotations

import importlib.machinery
import importlib.util
import logging
import os
import sys
import sysconfig
import tokenize

from plasmid.core.context import MAIN_ALIAS
from plasmid.core.importer import ModuleEntry
from plasmid.core.router import FROM_CHILD, GET_MODULE, LOAD_MODULE

LOG = logging.getLogger('plasmid.master.modules')

# Master-only packages; a context importing these gets ImportError.
PRIVATE_PREFIXES = ('plasmid.master', 'plasmid.cli')


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

    def find(self, fullname: str) -> ModuleEntry:
        absent = ModuleEntry(fullname, False, None, None)
        if fullname.startswith(PRIVATE_PREFIXES) or \
                fullname in sys.builtin_module_names:
            return absent
        spec = self._spec(fullname)
        origin = spec and spec.origin
        if not origin or not origin.endswith('.py') or \
                not os.path.isfile(origin):
            return absent  # missing, built-in, frozen or an extension
        if self._is_stdlib(os.path.realpath(origin)):
            return absent
        try:
            with tokenize.open(origin) as handle:
                source = handle.read()
        except (OSError, SyntaxError):
            return absent
        is_pkg = spec.submodule_search_locations is not None
        return ModuleEntry(fullname, is_pkg, source, spec.origin)

    def _is_stdlib(self, path: str) -> bool:
        return path.startswith(self.stdlib_dirs) and \
            not any(marker in path for marker in self.site_markers)

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
        if not parent:
            return importlib.machinery.PathFinder.find_spec(fullname)
        parent_spec = self._spec(parent)
        if parent_spec is None or not parent_spec.submodule_search_locations:
            return None
        return importlib.machinery.PathFinder.find_spec(
            fullname, list(parent_spec.submodule_search_locations))


class ModuleResponder:
    """Answers GET_MODULE requests from the master's direct children."""

    def __init__(self, router) -> None:
        self.router = router
        self.finder = ModuleFinder()
        self.cache: dict[str, ModuleEntry] = {}
        self.sent: dict[int, set[str]] = {}  # context id -> names sent
        router.add_handler(GET_MODULE, self._on_request, FROM_CHILD)

    def entry(self, fullname: str) -> ModuleEntry:
        entry = self.cache.get(fullname)
        if entry is None:
            entry = self.cache[fullname] = self.finder.find(fullname)
        return entry

    def _on_request(self, msg) -> None:
        fullname = msg.value()
        if not isinstance(fullname, str):
            LOG.error('context %d sent a bad module request', msg.src)
            return
        entry = self.entry(fullname)
        self.sent.setdefault(msg.src, set()).add(fullname)
        self.router.send_value(msg.src, LOAD_MODULE, entry.to_wire())
