"""Serve module source to contexts, with what they will need preloaded.

A context asks only for modules it cannot import itself.  The master
answers from its own environment, never with its standard library (the
target's own must win), never with compiled extensions, never with
master-only code (``finder`` tells which it serves).

Preloading rules (measured in bench/imports.py, see docs/benchmarks.md):

* With a module, send the modules of *its own top-level package* that its
  module-level imports reach, transitively, in dependency order.
* Name the *other* packages those imports reach (``related``): the context
  checks which it lacks and asks for all of them in one batch, which the
  master answers the same way, adding the submodules of each package the
  import needs.  Those need their package first, so they follow its
  answer, which names them (``after``).  Two requests load a whole
  dependency tree.
* If the master has imported the module itself, its module-level
  conditionals have been resolved: only dependencies the master also
  loaded are sent.  Imports inside functions are never followed.
* Names the imports reach that the master cannot serve travel as negative
  answers (``absent``), so optional imports cost no further round trip.
* Each module is sent on each link once.
* A call from the master pushes the called function's module the same
  way, before the call, to the master's direct child on the call's route
  (``push``): the call, or the intermediary its context asks, finds it
  there instead of asking the master, one round trip less per module.
"""
from __future__ import annotations

import collections
import importlib.util
import logging
import marshal
import pkgutil
import sys
import threading
import types
import zlib
from typing import Optional, Sequence

from plasmid.core.errors import StreamError
from plasmid.core.importer import ModuleEntry
from plasmid.core.resources import DISTRIBUTIONS, SUBMODULES, TOO_LARGE
from plasmid.core.router import (FROM_CHILD, GET_DATA, GET_MODULE,
                                 LOAD_MODULE)
from plasmid.master import bootstrap, data_files, scanner
from plasmid.master.compilers import ForeignCompilers
from plasmid.master.finder import ModuleFinder, master_only, unsent

LOG = logging.getLogger('plasmid.master.modules')

# The core's reader of package data is not in the bootstrap (few contexts
# read any): it goes ahead of the first module sent that uses
# importlib.resources, so that reading costs no round trip more.
DATA_READER = 'plasmid.core.resources'
READS_DATA = ('importlib.resources', 'importlib_resources')

# Names one module request may carry.  An import asks for its dotted name's
# chain; a batch, for the other top-level packages its closure reaches and
# the context lacks: 28 at most among the 122 top-level packages of a test
# environment.
MAX_NAMES_PER_REQUEST = 4096


def top_level(name: str) -> str:
    return name.partition('.')[0]


class Edges:
    """What one module imports at module level."""

    __slots__ = ('required', 'optional', 'absent')

    def __init__(self) -> None:
        self.required: list[str] = []  # servable, imported on every path
        self.optional: list[str] = []  # servable, imported in a branch
        self.absent: list[str] = []    # what the master cannot serve


class ModuleGraph:
    """What each servable module imports at module level, transitively."""

    def __init__(self, finder: ModuleFinder) -> None:
        self.finder = finder
        self.direct: dict[str, Edges] = {}
        self.probes: dict[str, list[str]] = {}
        # Code compiled from a module's source to scan it (it had no fresh
        # .pyc), until the module is first sent: a context on this Python
        # gets that code rather than a second compile.
        self.compiled: dict[str, types.CodeType] = {}

    def edges(self, name: str) -> Edges:
        edges = self.direct.get(name)
        if edges is None:
            entry = self.finder.find(name)
            if entry.source is None:
                # None kept: contexts may ask for any number of names.
                return Edges()
            edges = self.direct[name] = self._scan(name, entry)
        return edges

    def _scan(self, name: str, entry: ModuleEntry) -> Edges:
        edges = Edges()
        try:
            code = scanner.cached_code(entry.filename)
            if code is None:
                code = self.compiled[name] = scanner.compile_source(
                    entry.source, entry.filename)
        except (SyntaxError, ValueError):
            return edges
        parent = name.rpartition('.')[0]
        if parent:
            edges.required.append(parent)  # a submodule needs its package
        for statement in scanner.module_level_imports(code):
            self._add(edges, name, entry.is_pkg, statement)
        for hint in scanner.dynamic_import_hints(code):
            if hint != name and self.finder.find(hint).source is not None:
                edges.required.append(hint)
        edges.required = _unique(edges.required)
        edges.optional = _unique([n for n in edges.optional
                                  if n not in edges.required])
        edges.absent = _unique(edges.absent)
        return edges

    def _add(self, edges: Edges, name: str, is_pkg: bool,
             statement: scanner.ImportStatement) -> None:
        candidates = scanner.resolve(statement, name, is_pkg)
        dotted = len(candidates) - len([f for f in statement.fromlist
                                        if f != '*'])
        target = edges.optional if statement.conditional else edges.required
        for i, candidate in enumerate(candidates):
            if candidate == name:
                continue
            if self.finder.find(candidate).source is not None:
                target.append(candidate)
            elif i < dotted:
                edges.absent.append(candidate)
            # else: ``from x import y`` where y is an attribute

    def closure(self, root: str) -> tuple[list[str], list[str]]:
        """(modules importing *root* runs, dependencies first and *root*
        last; names they reach that the master cannot serve).

        Branch imports are followed only where the master took the branch
        itself (the module is loaded here).  If the master has imported
        *root*, a dependency must be loaded here too, or be one that a
        loaded module tried at its top level and failed to import (an
        optional dependency in ``try``/``except ImportError``): the
        target tries it as well, so it goes ahead with the negative
        answers for what it lacks, but not its own unloaded dependencies.
        """
        loaded_only = root in sys.modules
        order: list[str] = []
        absent: list[str] = []
        seen = {root}
        stack = [(root, self._next_deps(root, loaded_only, absent))]
        while stack:
            name, deps = stack[-1]
            for dep in deps:
                if dep not in seen:
                    seen.add(dep)
                    stack.append(
                        (dep, self._next_deps(dep, loaded_only, absent)))
                    break
            else:
                stack.pop()
                order.append(name)
        return order, _unique(absent)

    def _next_deps(self, name: str, loaded_only: bool, absent: list):
        edges = self.edges(name)
        absent.extend(edges.absent)
        for missing in edges.absent:
            absent.extend(self.stdlib_probes(missing))
        deps = edges.required + [d for d in edges.optional
                                 if d in sys.modules]
        if loaded_only and name not in sys.modules:
            deps = [d for d in deps if d in sys.modules]
        return iter(deps)

    def stdlib_probes(self, name: str) -> list[str]:
        """Names the standard library module *name* (and the standard
        modules it imports) try to import that do not exist here, like
        ``_winapi`` on Linux: a context asks for them too, and a negative
        answer sent ahead saves it the round trip."""
        probes = self.probes.get(name)
        if probes is not None:
            return probes
        self.probes[name] = []  # cycles end here
        path = self.finder.stdlib_path(name)
        if path is None:
            return []
        found: list[str] = []
        try:
            code = scanner.load_code(path)
        except (SyntaxError, ValueError, OSError):
            return []
        for statement in scanner.all_imports(code):
            for candidate in scanner.resolve(statement, name, False)[:1]:
                if not self.finder.exists(candidate):
                    found.append(candidate)
                else:
                    found.extend(self.stdlib_probes(candidate))
        probes = self.probes[name] = _unique(found)
        return probes


def _flat(counts: dict[int, collections.Counter]) -> collections.Counter:
    return collections.Counter({(context_id, name): n
                                for context_id, per in list(counts.items())
                                for name, n in list(per.items())})


def _compressed_code(entry: ModuleEntry, unchanged: bool,
                     compiled: Optional[types.CodeType]) -> Optional[bytes]:
    """Module *entry*'s code as this Python compiles its source for the
    file contexts are told it comes from, marshalled and compressed; None
    if it does not compile here.  The code the scan *compiled* from that
    source, or a fresh .pyc if the file is *unchanged* since the source
    was read, spares the compile."""
    try:
        code = compiled or (scanner.cached_code(entry.filename)
                            if unchanged else None)
        if code is None or code.co_filename != entry.filename:
            code = scanner.compile_source(entry.source, entry.filename)
    except (SyntaxError, ValueError):
        return None
    return zlib.compress(marshal.dumps(code), 6)


def _unique(names: list[str]) -> list[str]:
    seen: set[str] = set()
    return [n for n in names if not (n in seen or seen.add(n))]


class ModuleResponder:
    """Answers GET_MODULE requests from the master's direct children."""

    def __init__(self, router) -> None:
        self.router = router
        self.finder = ModuleFinder()
        self.graph = ModuleGraph(self.finder)
        self.sent: dict[int, set[str]] = {}  # context id -> names sent
        self.compressed: dict[str, bytes] = {}
        self.compressed_code: dict[str, Optional[bytes]] = {}
        # Direct children's Python (major, minor), from their HELLO or
        # their start: those on ours get compiled code with the source
        # (see _code_for).
        self.pythons: dict[int, tuple] = {}
        self.send_bytecode = True
        # Bytecode for children on other Python 3 versions (set by the
        # Router): None, or helpers of those versions compile it.
        self.compilers: Optional[ForeignCompilers] = None
        # (version, module) a helper is compiling -> (child, LOAD_MODULE
        # fields) sent without its code: see _send_code_later.
        self.owed: dict[tuple, list[tuple[int, dict]]] = {}
        # Contexts started through another: id -> (that context's id,
        # their Python (major, minor) or None), from the Router.
        self.behind: dict[int, tuple[int, Optional[tuple]]] = {}
        # LOAD_MODULE messages per context and module, of all and of
        # those sent again with their code (see messages_sent).
        self.counts: dict[int, collections.Counter] = {}
        self.update_counts: dict[int, collections.Counter] = {}
        # (context, first name) -> all names of one import, until the
        # context asks for the packages that import reaches.
        self.groups: dict[tuple[int, str], list[str]] = {}
        # Every context booted with these: never send them again.
        self.preinstalled = frozenset(bootstrap.core_module_names())
        # Requests come on the loop's thread, pushes on any caller's.
        self.lock = threading.RLock()
        router.add_handler(GET_MODULE, self._on_request, FROM_CHILD)
        router.add_handler(GET_DATA, self._on_data_request, FROM_CHILD)
        router.on_lost.append(self._forget)

    def _forget(self, ids: list[int]) -> None:
        """What was kept for contexts that are gone: a master that starts
        thousands over its life must not keep a record of each."""
        with self.lock:
            for context_id in ids:
                self.sent.pop(context_id, None)
                self.pythons.pop(context_id, None)
                self.behind.pop(context_id, None)
                self.counts.pop(context_id, None)
                self.update_counts.pop(context_id, None)
            for key in [k for k in self.groups if k[0] in ids]:
                del self.groups[key]
            for owed in self.owed.values():
                owed[:] = [o for o in owed if o[0] not in ids]

    @property
    def messages_sent(self) -> collections.Counter:
        """LOAD_MODULE messages per (context, module) of the contexts
        still up: for tests and benchmarks, to show each module crosses
        each link once."""
        return _flat(self.counts)

    @property
    def code_updates(self) -> collections.Counter:
        """Of those, per (context, module), the modules sent again to an
        intermediary with their code (_send_code_later)."""
        return _flat(self.update_counts)

    def _on_data_request(self, msg) -> None:
        try:
            package, relpath = msg.value()
        except (TypeError, ValueError):
            LOG.error('context %d sent a malformed data request', msg.src)
            self.router.reply(msg, data_files.MISSING)
            return
        unread = msg.stream.queued if msg.stream is not None else 0
        if unread > self.router.max_message:
            # A context that asks and does not read (or floods a slow
            # link) would have us queue without bound: one file may be
            # half the size limit, and a request a few bytes.
            LOG.error('not sending %s:%s to context %d: %d bytes to its '
                      'link are unread yet', package, relpath, msg.src,
                      unread)
            self.router.reply(msg, (TOO_LARGE, 'not sent: %d bytes of the '
                                    "master's to this context's link are "
                                    'unread yet' % unread))
            return
        try:
            answer = self.package_data(str(package), str(relpath))
        except Exception:  # the context waits for an answer: give one
            LOG.exception('serving %s:%s to context %d failed', package,
                          relpath, msg.src)
            answer = data_files.MISSING
        self.router.reply(msg, answer)

    def package_data(self, package: str, relpath: str) -> tuple:
        """A data file or listing inside a regular package we serve, never
        anything outside that package (``data_files``), nor from a
        namespace package."""
        if package == DISTRIBUTIONS:
            return data_files.distribution(relpath,
                                           self.router.max_message // 2)
        if package == SUBMODULES:
            return self.submodules(relpath)
        entry = self.finder.find(package)
        if entry.source is None or not entry.is_pkg or \
                package in self.finder.namespaces:
            return data_files.MISSING
        return data_files.read(package, entry.filename, relpath,
                               self.router.max_message // 2, master_only)

    def submodules(self, package: str) -> tuple:
        """``('dir', [[name, is_package], ...])``: what
        ``pkgutil.iter_modules`` finds in *package* here (a namespace
        package's every directory, a package in a zip), for a package we
        serve; but the master's own modules, which are never sent."""
        entry = self.finder.find(package)
        if entry.source is None or not entry.is_pkg:
            return data_files.MISSING
        return ('dir', [[info.name, info.ispkg] for info in
                        pkgutil.iter_modules(
                            self.finder.submodule_locations(package))
                        if not master_only(package + '.' + info.name)])

    def _on_request(self, msg) -> None:
        try:
            names, origin = msg.value()
            if not isinstance(names, (list, tuple)):
                raise TypeError('names are not a list')
        except (TypeError, ValueError):
            LOG.error('context %d sent a malformed module request', msg.src)
            return
        if not 0 < len(names) <= MAX_NAMES_PER_REQUEST:
            LOG.error('context %d sent a malformed module request: %d names '
                      '(one to %d)', msg.src, len(names),
                      MAX_NAMES_PER_REQUEST)
            return
        # Each name is answered once, however often a request names it.
        names = _unique([str(n) for n in names])
        with self.lock:
            try:
                if origin is None:
                    self._answer_imports(msg.src, names)
                else:
                    self._answer_batch(msg.src, names, str(origin))
            except Exception:
                LOG.exception('serving modules %s to context %d failed',
                              ', '.join(names), msg.src)
                self._answer_unserved(msg.src, names)

    def _answer_unserved(self, child: int, names: list[str]) -> None:
        """After a failure of ours: "no such module" for each of *names*
        not sent yet.  The context's import waits for an answer to each;
        an ImportError there beats an import that never returns."""
        counts = self.counts.get(child, collections.Counter())
        for name in names:
            if not counts[name]:
                self._send_entry(child, ModuleEntry(name, False, None, None),
                                 None, {'for_name': name})

    def take_fresh_locks(self) -> None:
        """In a fork of the master: a lock another thread held as it was
        made stays held (Router.forsake)."""
        self.lock = threading.RLock()
        if self.compilers is not None:
            self.compilers.lock = threading.Condition()

    def push(self, child: int, name: str) -> None:
        """Send module *name* to direct child *child* before it asks, as the
        answer to an import of it would (its package's modules it needs
        ahead of it): a call into it then finds it in the child's cache.
        Nothing goes for a module already sent there or one the master
        does not serve (the standard library, ``__main__``, master-only
        code), so the child's own modules still win."""
        with self.lock:
            if name in self.sent.get(child, self.preinstalled) or \
                    self.finder.find(name).source is None:
                return
            self._answer(child, name, self._package_closure(name), [])

    def prepare(self, names: Sequence[str]) -> None:
        """Work out now what sending modules *names* will need (their
        closures and the standard library's probes: ~100 ms of scanning
        in a fresh master), e.g. on a thread while a first connection
        waits on the network.  A push meanwhile waits for it."""
        with self.lock:
            for name in names:
                if self.finder.find(name).source is not None:
                    self.graph.closure(name)

    def _package_closure(self, name: str) -> list[str]:
        order, _ = self.graph.closure(name)
        return [m for m in order if top_level(m) == top_level(name)]

    def _related(self, names: list[str]) -> list[str]:
        """Other top-level packages the modules *names* need reach."""
        related = []
        for name in names:
            order, _ = self.graph.closure(name)
            related += [top_level(m) for m in order
                        if top_level(m) != top_level(name)]
        own = set(map(top_level, names))
        return _unique([r for r in related if r not in own])

    def _answer_imports(self, child: int, names: list[str]) -> None:
        """One import (a module and the submodules Python will ask for
        next): the first answer names the packages all of them need, so
        that the context asks for those in a single batch before the
        import goes on."""
        self.groups[(child, names[0])] = names
        for i, name in enumerate(names):
            if self._sent_already(child, name):
                continue
            # On the first answer: it is the one the import waits for.
            self._answer(child, name, self._package_closure(name),
                         self._related(names) if i == 0 else [])

    def _answer_batch(self, child: int, packages: list[str],
                      origin: str) -> None:
        """Packages the import answered as *origin* reaches: send the
        parts of them it needs."""
        needed: list[str] = []
        for name in self.groups.pop((child, origin), [origin]):
            needed += self.graph.closure(name)[0]
        for package in packages:
            if self._sent_already(child, package):
                continue
            own = self._package_closure(package)
            # Submodules need their package: they follow its answer.
            inside = [m for m in needed if m not in own and
                      m.startswith(package + '.')]
            self._answer(child, package, own, self._related([package]),
                         inside)

    def _sent_already(self, child: int, name: str) -> bool:
        """Whether *name* went to *child* already, ahead of an earlier
        answer or as one (it is there, or on its way): each module crosses
        each link once.  Those the child booted with go when asked."""
        return name in self.sent.get(child, ()) and \
            name not in self.preinstalled

    def _answer(self, child: int, name: str, modules: list[str],
                related: list[str], after: Sequence[str] = ()) -> None:
        """Send *modules* (dependency order) ahead of *name* itself, and
        *after* (modules that import it; dependency order) behind it."""
        sent = self.sent.setdefault(child, set(self.preinstalled))
        ahead = [m for m in modules if m != name]
        if DATA_READER not in sent and any(
                self._reads_data(m) for m in ahead + [name]):
            ahead.insert(0, DATA_READER)
        for module in ahead:
            if module not in sent:
                sent.add(module)
                self._send(child, self.finder.find(module), for_name=name)
        _, absent = self.graph.closure(name)
        sent.add(name)
        # Only what really follows: the context waits for each of these.
        behind = [m for m in _unique(list(after)) if m not in sent]
        sent.update(behind)
        self._send(child, self.finder.find(name), for_name=name,
                   closure=ahead, related=related, absent=absent,
                   after=behind)
        for module in behind:
            self._send(child, self.finder.find(module), for_name=name)

    def _reads_data(self, name: str) -> bool:
        """Whether module *name* imports importlib.resources (or its
        backport) at module level."""
        edges = self.graph.edges(name)
        return any(n == reader or n.startswith(reader + '.')
                   for n in edges.required + edges.optional + edges.absent
                   for reader in READS_DATA)

    def _compressed(self, entry: ModuleEntry) -> Optional[bytes]:
        if entry.source is None:
            return None
        packed = self.compressed.get(entry.name)
        if packed is None:
            packed = zlib.compress(entry.source.encode('utf-8'), 6)
            self.compressed[entry.name] = packed
        return packed

    def _code_for(self, child: int, entry: ModuleEntry) -> Optional[tuple]:
        """``(magic, compressed marshalled code)`` of *entry* for *child*:
        this Python's for a child of its version, a helper's for another
        Python 3 (``compilers``, when it has compiled it), else None.
        Compiling is most of what importing a large package costs a
        context (Django's models: ~0.4 s of ~0.5 s); the code costs about
        twice the bytes of the compressed source, which still travels
        (tracebacks show it).  The child checks the magic number itself."""
        compiled = self.graph.compiled.pop(entry.name, None)
        version = self.pythons.get(child)
        if not self.send_bytecode or entry.source is None or version is None:
            return None
        if version == tuple(sys.version_info[:2]):
            code = self._own_code(entry, compiled)
        elif self.compilers is not None and version[0] >= 3:
            code = self.compilers.code(version, entry)
        else:
            return None  # Python 2 runs no code it is sent
        return code if self._fits(entry, code) else None

    def _fits(self, entry: ModuleEntry, code: Optional[tuple]) -> bool:
        return code is not None and len(code[1]) + \
            len(self._compressed(entry)) <= self.router.max_message // 2

    def _own_code(self, entry: ModuleEntry,
                  compiled: Optional[types.CodeType]) -> Optional[tuple]:
        if sys.flags.optimize:
            return None  # a context runs without -O: it compiles itself
        if entry.name not in self.compressed_code:
            self.compressed_code[entry.name] = _compressed_code(
                entry, self.finder.unchanged(entry), compiled)
        packed = self.compressed_code[entry.name]
        return None if packed is None else \
            (importlib.util.MAGIC_NUMBER, packed)

    def close(self) -> None:
        """Stop the helpers that compile for other Python versions."""
        if self.compilers is not None:
            self.compilers.close()
        with self.lock:
            self.owed.clear()

    def _send(self, child: int, entry: ModuleEntry, **fields) -> None:
        code = self._code_for(child, entry)
        if code is None:
            self._owe_code(child, entry, fields)
        self._send_entry(child, entry, code, fields)

    def _send_entry(self, child: int, entry: ModuleEntry,
                    code: Optional[tuple], fields: dict) -> None:
        self.counts.setdefault(child, collections.Counter())[entry.name] += 1
        wire = ModuleEntry(entry.name, entry.is_pkg, self._compressed(entry),
                           entry.filename, code=code, **fields)
        try:
            self.router.send_value(child, LOAD_MODULE, wire.to_wire())
        except StreamError as exc:
            # Too large for one message: the import waits for an answer,
            # so it gets one that says why (it waited for ever).
            refused = unsent(entry.name, 'is too large to send: %s (raise '
                             "the Router's max_message_size)" % exc,
                             **fields)
            self.router.send_value(child, LOAD_MODULE, refused.to_wire())

    # -------------------------- code for intermediaries, once compiled

    def _owe_code(self, child: int, entry: ModuleEntry, fields: dict) -> None:
        """Under the lock: *entry* went to *child* as source while a
        helper compiles it for the child's version.  An intermediary
        keeps what it was sent and serves its own children from that, so
        without the code sent after it, every context below it would
        compile the module, for the rest of the intermediary's life."""
        version = self.pythons.get(child)
        if self.compilers is None or version is None or \
                version == tuple(sys.version_info[:2]) or \
                not self.send_bytecode or entry.source is None:
            return  # no helper compiles for it
        key = (version, entry.name)
        owed = self.owed.get(key)
        if owed is None:
            if not self.compilers.when_compiled(
                    version, entry.name,
                    lambda code: self._send_code_later(key, entry, code)):
                return  # compiled meanwhile, or never will be
            owed = self.owed[key] = []
        owed.append((child, fields))

    def started_via(self, context_id: int, via_id: int,
                    python: Optional[tuple]) -> None:
        """Context *context_id*, on Python *python*, was started through
        context *via_id*."""
        with self.lock:
            if context_id not in self.router.lost:  # else forgotten already
                self.behind[context_id] = (via_id, python)

    def _send_code_later(self, key: tuple, entry: ModuleEntry,
                         code: tuple) -> None:
        """On the loop: send *entry* again, with its code and the same
        fields, to those of the children owed it that route to others
        (a leaf has compiled it already, or will), and to the
        intermediaries of that version below them, which got it from
        them as source.  An intermediary's core takes it as it took the
        first (the message reaches one deeper down through the others):
        the entry in its cache now holds the code.

        A direct child holds every module it was sent with the entry; one
        further down may lack the entry's ``after`` modules, which its
        core would then count as on their way, so it goes without them
        (its children ask for them instead of getting them with it)."""
        with self.lock:
            owed = dict(self.owed.pop(key, []))  # the last fields sent
            if not owed or not self._fits(entry, code):
                return
            for child, fields in owed.items():
                for relay in self._relays_through(child, key[0]):
                    self.update_counts.setdefault(
                        relay, collections.Counter())[entry.name] += 1
                    self._send_entry(relay, entry, code, fields
                                     if relay == child else
                                     dict(fields, after=()))

    def _relays_through(self, child: int, version: tuple) -> list[int]:
        """Direct child *child*, if others are reached through it, and
        the contexts on *version* below it that others were started
        through, nearest first."""
        vias = {via for via, _ in self.behind.values()}
        if child not in vias:
            return []
        routes = self.router.routes
        below = [cid for cid in vias if cid != child and
                 routes.get(cid) is routes.get(child) and
                 self.behind.get(cid, (0, None))[1] == version]
        return [child] + sorted(below, key=self._depth)

    def _depth(self, context_id: int) -> int:
        depth = 0
        while context_id in self.behind:
            context_id = self.behind[context_id][0]
            depth += 1
        return depth
