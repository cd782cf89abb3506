"""Import modules this interpreter lacks from the parent, from RAM.

The finder sits last on ``sys.meta_path``, so the target's own modules
(its standard library above all) always win; only what cannot be found
locally is asked for.  Answers, positive or negative, are cached, and a
context with children serves their requests from that cache, asking its
own parent once per module however many children or threads want it.
"""
import sys
import threading

from plasmid.core import compat
from plasmid.core.loop import Latch
from plasmid.core.router import (FROM_CHILD, FROM_PARENT, GET_MODULE,
                                 LOAD_MODULE)


class ModuleEntry(object):
    """A module as sent on the wire, or its absence (source None)."""

    __slots__ = ('name', 'is_pkg', 'source', 'filename')

    def __init__(self, name, is_pkg, source, filename):
        self.name = name
        self.is_pkg = is_pkg
        self.source = source
        self.filename = filename

    def to_wire(self):
        return (self.name, self.is_pkg, self.source, self.filename)


class Importer(object):
    """Meta-path finder and loader backed by the parent context."""

    def __init__(self, router):
        self.router = router
        self.cache = {}    # name -> ModuleEntry
        self.waiting = {}  # name -> [callback(entry)]
        self.lock = threading.Lock()
        self.requests_sent = 0
        self.modules_received = 0
        self.bytes_received = 0
        router.add_handler(LOAD_MODULE, self._on_load, FROM_PARENT)
        router.add_handler(GET_MODULE, self._on_child_request, FROM_CHILD)

    def install(self):
        sys.meta_path.append(self)

    # -------------------------------------------------- fetching, async

    def fetch(self, name, callback):
        """Call ``callback(entry)`` once *name* is known; any thread."""
        with self.lock:
            entry = self.cache.get(name)
            if entry is None:
                callbacks = self.waiting.get(name)
                ask = callbacks is None
                if ask:
                    callbacks = self.waiting[name] = []
                callbacks.append(callback)
        if entry is not None:
            callback(entry)
        elif ask:
            self.requests_sent += 1
            self.router.send_value(self.router.parent_id, GET_MODULE, name)

    def _on_load(self, msg):
        entry = ModuleEntry(*msg.value())
        self.modules_received += 1
        self.bytes_received += len(msg.data)
        with self.lock:
            self.cache[entry.name] = entry
            callbacks = self.waiting.pop(entry.name, [])
        for callback in callbacks:
            callback(entry)

    def _on_child_request(self, msg):
        requester = msg.src
        name = msg.value()

        def answer(entry):
            self.router.send_value(requester, LOAD_MODULE, entry.to_wire())
        self.fetch(name, answer)

    def fetch_blocking(self, name):
        latch = Latch(self.router.loop)
        self.fetch(name, latch.set)
        return latch.wait()

    # ------------------------------------------------- PEP 302 / PEP 451

    def _entry_for(self, fullname):
        if self.router.parent is None:
            return None
        entry = self.fetch_blocking(fullname)
        if entry.source is None:
            return None
        return entry

    def find_spec(self, fullname, path=None, target=None):
        entry = self._entry_for(fullname)
        if entry is None:
            return None
        import importlib.machinery
        spec = importlib.machinery.ModuleSpec(
            fullname, self, origin=entry.filename, is_package=entry.is_pkg)
        spec.has_location = False
        return spec

    def find_module(self, fullname, path=None):  # Python 2
        if self._entry_for(fullname) is None:
            return None
        return self

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        entry = self.cache[module.__name__]
        self._run(entry, module)

    def load_module(self, fullname):  # Python 2
        entry = self.cache[fullname]
        import imp
        module = sys.modules.get(fullname) or imp.new_module(fullname)
        sys.modules[fullname] = module
        module.__loader__ = self
        if entry.is_pkg:
            module.__path__ = []
            module.__package__ = fullname
        else:
            module.__package__ = fullname.rpartition('.')[0]
        try:
            self._run(entry, module)
        except BaseException:
            sys.modules.pop(fullname, None)
            raise
        return sys.modules[fullname]

    def _run(self, entry, module):
        module.__file__ = entry.filename
        try:
            code = compile(entry.source, entry.filename, 'exec')
        except SyntaxError as exc:
            raise ImportError(
                'module %s from the master cannot be compiled by Python %s '
                'on this target: %s' % (entry.name, sys.version.split()[0],
                                        exc))
        exec(code, module.__dict__)

    def get_source(self, fullname):
        entry = self.cache.get(fullname)
        return entry and entry.source

    def is_package(self, fullname):
        entry = self.cache.get(fullname)
        return bool(entry and entry.is_pkg)


__all__ = ['Importer', 'ModuleEntry', 'compat']
