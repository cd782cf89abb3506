"""What makes a fork of a target context start warm.

Payload: stdlib-only, Python 2.7-compatible.  A module process is a fork of
its context (``forks.py``), so what the context has loaded or filled once,
no module process pays for again:

* code: a payload's shared code (``module_utils``), imported as soon as
  its zip arrives, and later whatever else module processes imported from
  the target's own library: learnt from the payloads and from what modules
  really import, not from a list kept by hand;
* process-wide caches that every ``AnsibleModule`` fills and a fresh
  process starts without: the C library's locale data (each module calls
  ``setlocale(LC_ALL, '')``) and the ABC subclass caches (``isinstance(v,
  Mapping)`` and the like, on every argument).  Measured on Python 3.11,
  ``command: /bin/true``: 6.6-6.8 ms of CPU per module process without
  them, 5.2-5.4 ms with them.
"""
from __future__ import absolute_import
import locale
import os
import sys

try:
    import builtins
except ImportError:  # Python 2
    import __builtin__ as builtins
try:
    import collections.abc as collection_abcs
except ImportError:  # Python 2
    import collections as collection_abcs
import numbers
from abc import ABCMeta

# name -> source digest in the payload it came from (None for the target's
# own modules)
_WARM = {}
_COLD = set()  # names that failed to import here: not tried again
# payload digest -> (size of _WARM then, warm names it carries otherwise)
_STALE = {}
_LOCALE_LOADED = []
# Modules warm imports brought from the target's own library (not the
# payload's, not the standard library's): name -> (file, mtime, size).  A
# task may install, upgrade or remove one (pip): vanilla's next module
# sees that, so ours must too.
_LIBRARY_FILES = {}
# The folders on sys.path when modules were warmed: folder -> mtime.  A
# library installed there later (the one a module_utils tried and did
# without: ``try: import psycopg2 ... HAS_PSYCOPG2 = False``) adds an
# entry, which changes the folder's mtime.
_PATH_FOLDERS = {}
# Every payload module warm imports loaded, theirs and their dependencies.
_PAYLOAD_LOADED = set()
_STDLIB = os.path.dirname(os.__file__) + os.sep


def names():
    """The names imported here to warm the forks."""
    return set(_WARM)


def import_modules(modules, wanted, finders, module_fqn):
    """Import *wanted* names with *finders* as ``sys.meta_path``; return
    True if any was new here.  A name that fails is not tried again.

    Never the module itself (*module_fqn*) nor any module proper
    (``ansible.modules.*``, a collection's ``plugins.modules.*``): those
    run as ``__main__`` in a module process and nowhere else.
    """
    wanted = [n for n in wanted if n not in _WARM and n not in _COLD and
              n != module_fqn and '.modules.' not in n and
              not n.startswith('__')]
    if not wanted:
        return False
    saved = sys.meta_path[:]
    before = set(sys.modules)
    # Import as the module would: a name missing from the payload and the
    # target's library must fail here at once, not ask the master.
    sys.meta_path[:] = finders
    try:
        for name in wanted:
            try:
                __import__(name)
            except BaseException:  # a failed import must not hurt us
                _COLD.add(name)
                continue
            _WARM[name] = modules.digests.get(name)
    finally:
        sys.meta_path[:] = _restored(saved, finders, sys.meta_path[:])
    loaded = set(sys.modules) - before
    _note_library_files(loaded, modules)
    _PAYLOAD_LOADED.update(name for name in loaded if name in modules.code)
    _note_path_folders()
    return True


def _note_path_folders():
    for folder in sys.path:  # absolute ones: '.' would follow the cwd
        if folder.startswith('/') and folder not in _PATH_FOLDERS:
            try:
                _PATH_FOLDERS[folder] = os.stat(folder).st_mtime
            except OSError:
                pass  # not there: a folder made later is _add_user_site's


def _note_library_files(names, modules):
    for name in names:
        path = getattr(sys.modules.get(name), '__file__', None)
        if name in modules.code or not path or (
                path.startswith(_STDLIB) and '-packages' + os.sep not in path):
            continue
        try:
            found = os.stat(path)
        except OSError:
            continue
        _LIBRARY_FILES[name] = (path, found.st_mtime, found.st_size)


def forget_changed_library():
    """If a file of the target's library that warm modules came from has
    changed or gone since, or a folder on sys.path has changed (a library
    installed or removed), forget every warm module (see forget_warm) and
    return True.  A stat per file and folder per task."""
    if _library_unchanged() and _folders_unchanged():
        return False
    forget_warm()
    return True


def _library_unchanged():
    for path, mtime, size in _LIBRARY_FILES.values():
        try:
            found = os.stat(path)
        except OSError:
            return False
        if (found.st_mtime, found.st_size) != (mtime, size):
            return False
    return True


def _folders_unchanged():
    for folder, mtime in _PATH_FOLDERS.items():
        try:
            if os.stat(folder).st_mtime != mtime:
                return False
        except OSError:
            return False
    return True


def forget_warm():
    """Drop every warm module here, the payload's shared code with the
    library's: a module_utils that bound names from a library (or found
    it missing) would keep them.  Module processes then import them
    afresh, and they are warmed again after."""
    payload = set(name for name, digest in _WARM.items() if digest)
    # The standard library's stay: this context uses them too.
    for name in payload | _PAYLOAD_LOADED | set(_LIBRARY_FILES):
        sys.modules.pop(name, None)
    _WARM.clear()
    _PAYLOAD_LOADED.clear()
    _COLD.clear()
    _LIBRARY_FILES.clear()
    _PATH_FOLDERS.clear()
    _STALE.clear()  # its lists hold for a warm set of a size: it shrank


def _restored(saved, finders, after):
    """``sys.meta_path`` as it was before an import with *finders*, but
    with the finders that import installed or removed: six's importer, for
    one, serves ``six.moves`` to the forks, and a six imported afresh
    removes its predecessor's.  Added ones go before the runtime's own
    finders, which stay last."""
    removed = [f for f in finders if not _holds(after, f)]
    added = [f for f in after if not _holds(finders, f)]
    kept = [f for f in saved if not _holds(removed, f)]
    runtime = [f for f in kept if type(f).__module__.startswith('plasmid.')]
    others = [f for f in kept if not _holds(runtime, f)]
    return others + added + runtime


def _holds(finders, finder):
    """Whether *finders* holds this very finder (finders need not be
    comparable or hashable)."""
    return any(f is finder for f in finders)


def stale_names(digest, modules):
    """Warm modules that payload *digest* carries in another version: a
    module process must import them afresh from its payload.  Worked out
    here, once per payload and warm set (which grows, and shrinks only in
    forget_changed_library, which forgets these lists), so that the
    process need not touch every warm module's entry: each touch copies a
    page after the fork."""
    known = _STALE.get(digest)
    if known is None or known[0] != len(_WARM):
        known = _STALE[digest] = (len(_WARM), [
            name for name, source in _WARM.items()
            if source is not None and
            modules.digests.get(name, source) != source])
    return known[1]


def fill_process_caches():
    """Load the locale data (once) and fill the ABC caches of the built-in
    types, leaving this process's own locale as it was.  Call it after
    imports: registering a class with any ABC empties every ABC's cache of
    negative answers."""
    if not _LOCALE_LOADED:
        _LOCALE_LOADED.append(True)
        _load_locale_data()
    _fill_abc_caches()


def _load_locale_data():
    # The C library keeps a locale's data once loaded; a later
    # setlocale(LC_ALL, '') in a fork finds it without reading files.
    current = locale.setlocale(locale.LC_ALL)
    try:
        locale.setlocale(locale.LC_ALL, '')
    except locale.Error:  # a broken LANG: the module will say so itself
        pass
    finally:
        locale.setlocale(locale.LC_ALL, current)


def _fill_abc_caches():
    # Each ABC remembers which classes are (not) its subclasses; asking
    # once here for every built-in type answers the forks from that memory.
    types = [t for t in vars(builtins).values()
             if isinstance(t, type) and not issubclass(t, BaseException)]
    types.append(type(None))
    abcs = [v for module in (collection_abcs, numbers)
            for v in vars(module).values() if isinstance(v, ABCMeta)]
    for abc in abcs:
        for cls in types:
            try:
                issubclass(cls, abc)
            except TypeError:
                pass
