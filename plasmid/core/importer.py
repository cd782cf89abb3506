"""Import modules this interpreter lacks from the parent, from RAM.

The finder sits last on ``sys.meta_path``, so the target's own modules
(its standard library above all) always win; only what cannot be found
locally is asked for.

Protocol (bodies of GET_MODULE and LOAD_MODULE messages):

* ``GET_MODULE (names, origin)``: send these modules.  One import asks for
  ``([name], None)``.  A batch ``([pkg, ...], origin)`` asks for packages
  the answer for *origin* said it would need and this context lacks.
* ``LOAD_MODULE (name, is_pkg, source, filename, for_name, closure,
  related, absent, after, code)``: one module; ``source`` is its
  zlib-compressed UTF-8 text, or None: it cannot be served.  ``code``,
  when the master's Python is of this context's version: ``(magic,
  zlib-compressed marshalled code)``, run instead of compiling the source
  where the magic number is ours; an intermediary passes it on only to a
  child known to run its own version (``pythons``, from the child's start).
  Modules sent with an answer carry ``for_name``, the request they belong
  to; the answer itself (``name == for_name``) carries ``closure`` (the
  names sent ahead of it, in order), ``after`` (the names sent right
  after it, in order), ``related`` (other top-level packages the module's
  imports reach) and ``absent`` (names its imports reach that the master
  cannot serve).

A module always arrives after the modules it imports.  Most come ahead of
the answer they belong to; the submodules of a package (a batch answer)
need the package first, so they follow it and the answer names them in
``after``: the receiver counts them as asked for until they arrive (no
thread asks for them again) and streams them on to the children waiting
for the answer.  Answers are cached, positive and negative.  Requests for
the same module from many threads or children go upstream once; a context
with children serves them from its cache, streams modules on as they
arrive, and never sends a child the same module twice.
"""
from __future__ import absolute_import
import marshal
import os
import sys
import threading
import zlib

from plasmid.core import compat
from plasmid.core.loop import Latch
from plasmid.core.router import (FROM_CHILD, FROM_PARENT, GET_DATA,
                                 GET_MODULE, LOAD_MODULE)


class ModuleEntry(object):
    """A module as sent on the wire, or its absence (source None)."""

    __slots__ = ('name', 'is_pkg', 'source', 'filename', 'for_name',
                 'closure', 'related', 'absent', 'after', 'code')

    def __init__(self, name, is_pkg, source, filename, for_name=None,
                 closure=None, related=None, absent=None, after=None,
                 code=None):
        self.name = name
        self.is_pkg = is_pkg
        self.source = source
        self.filename = filename
        self.for_name = for_name or name
        self.closure = closure or []
        self.related = related or []
        self.absent = absent or []
        self.after = after or []
        self.code = code

    def to_wire(self):  # the fields in __slots__ order, as from_wire takes them
        return tuple(getattr(self, name) for name in self.__slots__)

    @classmethod
    def from_wire(cls, value):
        entry = cls(*value)
        entry.source = compat.bytes_from_wire(entry.source)  # compressed
        if entry.code:
            entry.code = tuple(map(compat.bytes_from_wire, entry.code))
        return entry

    def is_answer(self):
        return self.for_name == self.name


if compat.PY2:  # pragma: no cover - exercised on 2.7 targets
    # Imported here, never where used: an import statement takes Python 2's
    # global import lock, which a thread in the middle of an import holds
    # while it waits for its module from the parent, and the loop (on the
    # stand-by thread) that brings that module must not wait for the lock.
    import imp


def _is_local(name):
    """Can this interpreter import top-level *name* without our help?
    Runs on the loop: no import statement on Python 2 (see ``imp``)."""
    if name in sys.modules or name in sys.builtin_module_names:
        return True
    if compat.PY2:
        return _found_by_python2(name, None)
    import importlib.machinery
    return importlib.machinery.PathFinder.find_spec(name) is not None


def _found_by_python2(fullname, path):
    if fullname in sys.builtin_module_names:
        return True
    try:
        handle = imp.find_module(fullname.rpartition('.')[2], path)[0]
    except ImportError:
        return False
    if handle is not None:
        handle.close()
    return True


def _source_text(entry):
    return zlib.decompress(entry.source).decode('utf-8')


def _master_code(entry):
    """The master's compiled code for *entry* if this Python can run it
    as is: same magic number (bytecode format), no -O.  The source stays
    for tracebacks."""
    ours = getattr(sys.modules.get('_frozen_importlib_external'),
                   'MAGIC_NUMBER', None)  # None on Python 2
    if entry.code and ours == entry.code[0] and not sys.flags.optimize:
        return marshal.loads(zlib.decompress(entry.code[1]))
    return None


def _import_chain(fullname):
    """The submodules Python will ask for next after *fullname*, and
    whether an import of *fullname* itself asks (not find_spec() called
    by some module as it is imported).

    ``import a.b.c`` asks finders for ``a``, then ``a.b``, then ``a.b.c``,
    one at a time; asking the parent for all three at once saves two round
    trips.  The whole name is a local of importlib's ``_find_and_load``
    further up the stack (Python 3; Python 2 imports in C: no chain).
    """
    target = fullname
    frame = sys._getframe(1)
    importing = compat.PY2  # whose finders are asked only by imports
    while frame is not None:
        if frame.f_code.co_name == '_find_and_load':
            name = frame.f_locals.get('name')
            importing = importing or name == fullname
            if isinstance(name, str) and name.startswith(target + '.'):
                target = name
        frame = frame.f_back
    chain = []
    parts = target.split('.')
    for i in range(fullname.count('.') + 2, len(parts) + 1):
        chain.append('.'.join(parts[:i]))
    return tuple(chain), importing


_STDLIB = os.path.dirname(os.__file__)
# Standard modules that import on behalf of their caller: their imports
# are the caller's, not the standard library's own.
_ON_BEHALF = ('importlib', 'runpy', 'pkgutil', 'pickle', 'imp')


def _probe_of_own_stdlib(fullname):
    """Is this the target's standard library trying an optional private
    module of its own (``platform`` trying ``_wmi``, ``subprocess``
    ``_winapi``)?  No parent serves those: asking costs a round trip."""
    if not fullname.startswith('_') or '.' in fullname:
        return False
    frame = sys._getframe(2)
    while frame is not None:
        path = frame.f_code.co_filename
        if not path.startswith('<') and frame.f_globals.get('__name__') \
                not in (__name__, 'plasmid.core.importer'):
            module = frame.f_globals.get('__name__') or ''
            in_stdlib = path.startswith(_STDLIB + os.sep) and \
                'site-packages' not in path and 'dist-packages' not in path
            return in_stdlib and module.split('.')[0] not in _ON_BEHALF
        frame = frame.f_back
    return False


_ROOT = '/<plasmid>/'  # + a package's name: its __path__'s one entry


class _Listing(object):
    """The finder of a package's one ``__path__`` entry (a path that no
    file has), made by the path hook it is: ``pkgutil.iter_modules`` asks
    it the package's submodules, which the parent lists
    (resources.submodules); a module it is asked for, the Importer finds.
    """

    def __init__(self, path):
        if not path.startswith(_ROOT):
            raise ImportError(path)
        self.package = path[len(_ROOT):]

    def _name(self, name):  # a plugin loader may give the leaf alone
        return self.package + '.' + name.rpartition('.')[2]

    def find_spec(self, name, *args):
        return _importer[0].find_spec(self._name(name))

    def find_module(self, name, path=None):
        return _importer[0].find_module(self._name(name))

    def iter_modules(self, prefix=''):
        try:
            from plasmid.core import resources
        except ImportError:  # a fork, which cannot ask
            return []
        return resources.submodules(self.package, prefix)


_importer = []  # the one Importer installed, which _Listing asks


class Importer(object):
    """Meta-path finder and loader backed by the parent context."""

    def __init__(self, router, master_version='?'):
        self.router = router
        self.master_version = master_version
        self.cache = {}      # name -> ModuleEntry
        self.waiting = {}    # name -> [callback(entry)], requested names
        self.followers = {}  # for_name -> set of child ids awaiting it
        self.expected = {}   # answer name -> names of its after, to come
        self.sent = {}       # child id -> names already sent to it
        self.pythons = {}    # child id -> its (major, minor)
        self.executed = set()
        self.lock = threading.Lock()
        self.requests_sent = 0
        self.requested = []  # the names of each request, in order
        self.modules_received = 0
        self.bytes_received = 0
        router.add_handler(LOAD_MODULE, self._on_load, FROM_PARENT)
        router.add_handler(GET_MODULE, self._on_child_request, FROM_CHILD)
        router.add_handler(GET_DATA, self._on_child_data_request, FROM_CHILD)
        router.on_lost.append(self._forget)
        self.data = {}  # (package, relpath) -> Latch of (kind, value)

    def install(self):
        sys.meta_path.append(self)
        _importer[:] = [self]
        sys.path_hooks.insert(0, _Listing)
        if not compat.PY2:
            # Also first on sys.meta_path, for plasmid's own modules only
            # (this module's find_spec): they come from the parent or not
            # at all.  A plasmid installed here would mix its version into
            # the master's and serve the modules the master keeps to
            # itself: a setuptools editable install's finder serves
            # ``plasmid.X`` whatever the package's (empty) __path__ says.
            # Python 2 asks this importer before its own path search.
            sys.meta_path.insert(0, sys.modules[__name__])

    def stats(self):
        """Counters for tests and benchmarks."""
        received = [e.name for e in self.cache.values()
                    if e.source is not None]
        return {
            'requests_sent': self.requests_sent,
            'requested': self.requested,
            'modules_received': self.modules_received,
            'bytes_received': self.bytes_received,
            'modules_cached': len(received),
            'never_imported': sorted(n for n in received
                                     if n not in self.executed),
        }

    # ------------------------------------------------ asking the parent

    def request(self, names, origin=None):
        """Ask the parent for those *names* not known or asked for yet."""
        with self.lock:
            names = self._claim(names)
        if names:
            self._send_request(names, origin)

    def _claim(self, names):
        """Those of *names* neither known nor asked for yet, now counted
        as asked for; the caller holds the lock."""
        names = [n for n in names
                 if n not in self.cache and n not in self.waiting]
        for name in names:
            self.waiting[name] = []
        return names

    def _send_request(self, names, origin):
        self.requests_sent += 1
        self.requested.append(list(names))
        self.router.send_value(self.router.parent_id, GET_MODULE,
                               (names, origin))

    def when_known(self, name, callback, also=()):
        """Call ``callback(entry)`` once *name* is known; any thread.

        Names in *also* that are neither known nor asked for yet go in
        the same request; if *name* is on its way already, its answer
        may bring them, so they are not asked for (yet)."""
        with self.lock:
            entry = self.cache.get(name)
            if entry is None:
                ask = [] if name in self.waiting else \
                    self._claim((name,) + tuple(also))
                self.waiting[name].append(callback)
        if entry is not None:
            callback(entry)
        elif ask:
            self._send_request(ask, None)

    def fetch_blocking(self, name, also=()):
        latch = Latch(self.router.loop)
        self.when_known(name, latch.set, also)
        return latch.wait()

    # ----------------------------------------------- answers from above

    def _on_load(self, msg):
        entry = ModuleEntry.from_wire(msg.value())
        self.modules_received += 1
        self.bytes_received += len(msg.data)
        behind = []
        with self.lock:
            self.cache[entry.name] = entry
            callbacks = self.waiting.pop(entry.name, [])
            followers = set(self.followers.get(entry.for_name, ()))
            if entry.is_answer():
                behind = [self.cache[n] for n in entry.after
                          if n in self.cache]
                self._expect(entry)
            else:
                # Children that asked for it by name: the parent sends a
                # module once, so it may come only with another answer.
                followers.update(self.followers.get(entry.name, ()))
                self._arrived_after(entry)
        for child_id in list(followers):
            self._send_to_child(child_id, entry)
            # What followed the answer here earlier follows it there now.
            for early in behind:
                self._send_to_child(child_id, early)
        if entry.is_answer():
            # Fetch related packages only for our own imports: for an
            # answer we merely pass on, the child decides what it lacks.
            self._learn_from_answer(entry, fetch=bool(callbacks))
        for callback in callbacks:
            callback(entry)

    def _expect(self, answer):
        """Under the lock: its *after* modules are on their way; keep
        passing modules on to its followers until they are here."""
        coming = [n for n in answer.after if n not in self.cache]
        for name in coming:
            self.waiting.setdefault(name, [])
        if coming:
            self.expected[answer.name] = set(coming)
        else:
            self.expected.pop(answer.name, None)
            self.followers.pop(answer.name, None)

    def _arrived_after(self, entry):
        """Under the lock: one module of an answer's *after* is here."""
        coming = self.expected.get(entry.for_name)
        if coming is not None:
            coming.discard(entry.name)
            if not coming:
                del self.expected[entry.for_name]
                self.followers.pop(entry.for_name, None)

    def _learn_from_answer(self, entry, fetch):
        """Cache its negatives; fetch at once the packages it will need."""
        with self.lock:
            for name in entry.absent:
                if name not in self.cache:
                    self.cache[name] = ModuleEntry(name, False, None, None)
        if fetch and self.router.parent is not None:
            missing = [top for top in entry.related if not _is_local(top)]
            self.request(missing, entry.name)

    # ------------------------------------------------ serving children

    def _on_child_request(self, msg):
        names, origin = msg.value()
        child_id = msg.src
        upstream = []
        for name in names:
            entry = self.cache.get(name)
            if entry is not None:
                self._serve_from_cache(child_id, entry)
                continue
            with self.lock:
                self.followers.setdefault(name, set()).add(child_id)
                # Asked for already: pass on what came ahead of it so far
                # (arrival order); the rest streams on as it arrives.
                ahead = [e for e in self.cache.values()
                         if e.for_name == name] \
                    if name in self.waiting else []
            for early in ahead:
                self._send_to_child(child_id, early)
            upstream.append(name)
        if upstream:
            self.request(upstream, origin)

    def _serve_from_cache(self, child_id, entry):
        if not entry.is_answer():  # it came ahead of another answer
            entry = ModuleEntry(entry.name, entry.is_pkg, entry.source,
                                entry.filename, code=entry.code)
        self._send_cached(child_id, entry.closure)
        self._send_to_child(child_id, entry, always=True)
        self._send_cached(child_id, entry.after)
        with self.lock:
            if entry.name in self.expected:  # the rest streams on
                self.followers.setdefault(entry.name, set()).add(child_id)

    def _send_cached(self, child_id, names):
        for name in names:
            entry = self.cache.get(name)
            if entry is not None:
                self._send_to_child(child_id, entry)

    def _send_to_child(self, child_id, entry, always=False):
        sent = self.sent.setdefault(child_id, set())
        if entry.name in sent and not always:
            return
        sent.add(entry.name)
        value = entry.to_wire()
        if self.pythons.get(child_id) != sys.version_info[:2]:
            value = value[:-1] + (None,)  # bytecode it could not run
        self.router.send_value(child_id, LOAD_MODULE, value)

    def _forget(self, ids):
        for child_id in ids:
            self.sent.pop(child_id, None)
            self.pythons.pop(child_id, None)

    # ---------------------------------------------------- package data

    def data_latch(self, package, relpath):
        """A latch that gets ``(kind, value)`` for one data path."""
        key = (package, relpath)
        with self.lock:
            latch = self.data.get(key)
            if latch is not None:
                return latch
            latch = self.data[key] = Latch(self.router.loop)
        parent = self.router.parent_id
        handle = self.router.expect_reply(parent, latch)
        self.router.send_value(parent, GET_DATA, key, reply_to=handle)
        return latch

    def _on_child_data_request(self, msg):
        package, relpath = msg.value()
        latch = self.data_latch(package, relpath)
        latch.add_callback(lambda l: self.router.reply(
            msg, self.router.decode(l.value) if l.error is None
            else ('missing', None)))

    def get_resource_reader(self, fullname):
        entry = self.cache.get(fullname)
        if entry is None or not entry.is_pkg:
            return None
        from plasmid.core import resources
        return resources.Reader(resources.ParentData(self), fullname)

    def get_data(self, path):
        # The data path (rarely taken) is fetched on demand, out of the
        # bootstrap.
        from plasmid.core import resources
        return resources.ParentData(self).get_data(path)

    def find_distributions(self, *args, **kwargs):  # importlib.metadata
        from plasmid.core import resources
        return resources.ParentData(self).distributions(*args, **kwargs)

    # ------------------------------------------------- PEP 302 / PEP 451

    def _entry_for(self, fullname):
        parent = self.router.parent
        # A closed parent: a fork (child.py), which cannot ask.
        if parent is None or parent.closed or _probe_of_own_stdlib(fullname):
            return None
        chain, importing = _import_chain(fullname)
        entry = self.fetch_blocking(fullname, chain)
        if entry.source is None:
            if entry.filename and importing:  # the parent's reason (an
                # extension...), in an import, not importlib.util.find_spec;
                # its name, for `from p import *`
                if compat.PY2:  # whose imports ignore a finder's error:
                    return entry  # load_module raises it
                raise ModuleNotFoundError(entry.filename, name=fullname)
            return None
        return entry

    def find_spec(self, fullname, path=None, target=None):
        entry = self._entry_for(fullname)
        if entry is None:
            return None
        import importlib.machinery
        spec = importlib.machinery.ModuleSpec(
            fullname, self, origin=entry.filename, is_package=entry.is_pkg)
        if entry.is_pkg:
            spec.submodule_search_locations = [_ROOT + fullname]
        spec.has_location = False
        return spec

    def find_module(self, fullname, path=None):  # Python 2
        # Python 2 asks meta-path finders before its own import machinery,
        # so leave whatever it can find itself to it.  Inside packages on
        # this machine's disk (a __path__, not ours),
        # ``import os`` makes it probe ``pkg.os`` first: those probes are
        # not ours to answer (the parent would say no, a round trip each).
        parent = sys.modules.get(fullname.rpartition('.')[0])
        if getattr(parent, '__loader__', 0) is not self and \
                getattr(parent, '__path__', None):
            return None
        if _found_by_python2(fullname, path) or \
                self._entry_for(fullname) is None:
            return None
        return self

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        self._run(self.cache[module.__name__], module)

    def load_module(self, fullname):  # Python 2
        entry = self.cache[fullname]
        if entry.source is None:
            raise ImportError(entry.filename)
        module = sys.modules.get(fullname) or imp.new_module(fullname)
        sys.modules[fullname] = module
        module.__loader__ = self
        if entry.is_pkg:
            module.__path__ = [_ROOT + fullname]
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
        self.executed.add(entry.name)
        try:
            code = _master_code(entry) or \
                compile(_source_text(entry), entry.filename, 'exec')
        except SyntaxError as exc:
            raise ImportError(
                "Python %s cannot compile %s (from the master's Python %s): "
                '%s' % (sys.version.split()[0], entry.name, self.master_version,
                        exc))
        exec(code, module.__dict__)

    def get_source(self, fullname):
        entry = self.cache.get(fullname)
        if entry is None or entry.source is None:
            return None
        return _source_text(entry)

    def is_package(self, fullname):
        entry = self.cache.get(fullname)
        return bool(entry and entry.is_pkg)


def stats():
    """This context's import counters (call it remotely)."""
    from plasmid.core import child
    return child.current.importer.stats()


def find_spec(fullname, path=None, target=None):
    """plasmid's own modules, from the parent or not at all (see
    Importer.install)."""
    if fullname.startswith('plasmid.'):
        from plasmid.core import child
        spec = child.current.importer.find_spec(fullname)
        if spec is None:  # not the next finder's to answer either
            raise ModuleNotFoundError(fullname)
        return spec
