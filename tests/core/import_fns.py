"""Functions the import tests call inside contexts, and the package trees
those tests write.

Contexts fetch this module from the master by name, so it must stay valid
Python 2.7 (no f-strings, no annotations) and import only the standard
library: every module it pulls in would show up in the counters.
"""
from __future__ import absolute_import

import importlib
import os
import sys
import threading
import time


def _importer():
    from plasmid.core import child
    return child.current.importer


def import_facts(name):
    """Import *name*; how it got here and where it claims to live."""
    module = importlib.import_module(name)
    loader = getattr(module, '__loader__', None)
    return {
        'name': module.__name__,
        'file': getattr(module, '__file__', None),
        'loader': type(loader).__name__,
        'cached': getattr(module, '__cached__', None),
        'code_filename': _code_filename(module),
    }


def _code_filename(module):
    """co_filename of a function defined at the module's top level."""
    for value in vars(module).values():
        code = getattr(value, '__code__', None)
        if code is not None and getattr(value, '__module__', None) == \
                module.__name__:
            return code.co_filename
    return None


def arrived_with_code(names):
    """For each of *names* this context holds: whether it came with its
    parent's bytecode."""
    cache = _importer().cache
    return dict((name, cache[name].code is not None)
                for name in names if name in cache)


def children_known():
    """The children this context's importer keeps a record of."""
    importer = _importer()
    return {'sent': sorted(importer.sent), 'pythons': sorted(importer.pythons)}


def loaded_modules(prefix):
    """Names of loaded modules in package *prefix* (itself included)."""
    return sorted(n for n, m in sys.modules.items()
                  if m is not None and
                  (n == prefix or n.startswith(prefix + '.')))


def loaded_by_importer():
    """Names of every loaded module that the parent supplied."""
    importer = _importer()
    return sorted(n for n, m in sys.modules.items()
                  if m is not None and
                  getattr(m, '__loader__', None) is importer)


def stdlib_names():
    """The target's own standard library module names (3.10+), else []."""
    return sorted(getattr(sys, 'stdlib_module_names', ()))


def module_file(name):
    module = importlib.import_module(name)
    return getattr(module, '__file__', None)


def source_of(name):
    """The source the importer compiled *name* from."""
    importlib.import_module(name)
    return _importer().get_source(name)


def arrival_order():
    """Names of modules received (positive answers), in arrival order."""
    return [name for name, entry in _importer().cache.items()
            if entry.source is not None]


def negative_names():
    """Names this context knows its parent cannot serve."""
    return sorted(name for name, entry in _importer().cache.items()
                  if entry.source is None)


def attribute(module_name, attr):
    return getattr(importlib.import_module(module_name), attr)


def origin_from_finder(finder_name, name):
    """Where the finder on sys.meta_path called *finder_name* would load
    *name* from (None if it would not)."""
    for finder in sys.meta_path:
        if getattr(finder, '__name__', None) == finder_name:
            spec = finder.find_spec(name)
            return spec and spec.origin
    raise LookupError('no finder %s on sys.meta_path' % finder_name)


def distribution_facts(name):
    """importlib.metadata's version of *name* and its console scripts, or
    the error's type name."""
    import importlib.metadata as metadata
    try:
        found = metadata.distribution(name)
    except metadata.PackageNotFoundError as exc:
        return type(exc).__name__
    return {'version': metadata.version(name),
            'scripts': sorted(ep.name for ep in found.entry_points
                              if ep.group == 'console_scripts')}


def distribution_files(name):
    """How many files importlib.metadata lists for distribution *name*
    (none are on this machine), or the error's type name."""
    import importlib.metadata as metadata
    try:
        return len(metadata.distribution(name).files or [])
    except Exception as exc:
        return type(exc).__name__


def our_distributions(name):
    """What the runtime's importer answers importlib_metadata's question
    for *name* (the backport asks it on Python 3.6/3.7): a list."""
    from plasmid.core import child
    return [str(d) for d in child.current.importer.find_distributions(
        name=name)]


def probe_at_import(root, name):
    """Import module *name* from *root*, whose top level asks
    importlib.util.find_spec() for an optional module: its HAS value."""
    import importlib
    sys.path.insert(0, root)
    try:
        return importlib.import_module(name).HAS
    finally:
        sys.path.remove(root)


def spec_found(name):
    """Whether importlib.util.find_spec() finds *name* (feature tests ask
    it: it must answer, never raise, for what the master will not send)."""
    import importlib.util
    return importlib.util.find_spec(name) is not None


def try_import(name):
    """None if *name* imports, else the ImportError's message."""
    try:
        importlib.import_module(name)
    except ImportError as exc:
        return str(exc)
    return None


def import_in_threads(name, count=20):
    """*count* threads import *name* at the same moment.

    Returns the distinct module ids they got and the errors they hit."""
    start = threading.Event()
    results = []
    lock = threading.Lock()

    def run():
        start.wait()
        try:
            module = importlib.import_module(name)
            outcome = ('ok', id(module))
        except Exception as exc:  # reported, not raised: count them all
            outcome = ('error', repr(exc))
        with lock:
            results.append(outcome)

    threads = [threading.Thread(target=run) for _ in range(count)]
    for thread in threads:
        thread.start()
    start.set()
    for thread in threads:
        thread.join(60)
    ids = sorted(set(v for kind, v in results if kind == 'ok'))
    errors = [v for kind, v in results if kind == 'error']
    return {'finished': len(results), 'ids': len(ids), 'errors': errors}


def requests_facts():
    import requests
    return {'get_callable': callable(requests.get),
            'version': requests.__version__,
            'file': requests.__file__}


def django_facts():
    import django.db.models
    model = getattr(django.db.models, 'Model', None)
    return {'has_model': isinstance(model, type),
            'model_module': getattr(model, '__module__', None),
            'file': django.db.models.__file__}


def certifi_where():
    """certifi.where() and the first line of the bundle it names."""
    import certifi
    path = certifi.where()
    with open(path, 'rb') as handle:
        head = handle.read(64)
    return path, head


def get_data(package, resource):
    """pkgutil.get_data(): ('data', [byte values]) or ('error', type name).

    Byte values, because a Python 2 ``str`` reaches the master as text."""
    import pkgutil
    try:
        return 'data', list(bytearray(pkgutil.get_data(package, resource)))
    except (IOError, OSError) as exc:
        return 'error', type(exc).__name__


def get_data_error(package, resource):
    """The words of the error pkgutil.get_data() raises, or None."""
    import pkgutil
    try:
        pkgutil.get_data(package, resource)
    except (IOError, OSError) as exc:
        return str(exc)
    return None


def resource_facts(package, relpath):
    """What importlib.resources.files() reports for one path (3.9+)."""
    import importlib.resources
    importlib.import_module(package)
    path = importlib.resources.files(package)
    for part in relpath.split('/'):
        if part:
            path = path.joinpath(part)
    facts = {'is_file': path.is_file(), 'is_dir': path.is_dir(),
             'name': path.name}
    if facts['is_file']:
        facts['bytes'] = path.read_bytes()
        facts['text'] = path.read_text()
        with path.open('rb') as handle:
            facts['open_rb'] = handle.read()
        with path.open('r') as handle:
            facts['open_r'] = handle.read()
    if facts['is_dir']:
        facts['children'] = sorted(p.name for p in path.iterdir())
    return facts


def resource_error(package, relpath):
    """The type name of the error reading *relpath* raises, or None."""
    import importlib.resources
    importlib.import_module(package)
    path = importlib.resources.files(package)
    try:
        path.joinpath(relpath).read_bytes()
    except Exception as exc:
        return type(exc).__name__
    return None


def legacy_resources(package, resource):
    """importlib.resources' older functions (read_binary, contents...)."""
    import importlib.resources as resources
    import warnings
    importlib.import_module(package)
    with warnings.catch_warnings():
        warnings.simplefilter('ignore', DeprecationWarning)
        return {
            'read_binary': resources.read_binary(package, resource),
            'is_resource': resources.is_resource(package, resource),
            'contents': sorted(resources.contents(package)),
        }


def module_requests():
    """The names of each module request this context sent, in order."""
    return _importer().stats()['requested']


def data_requests():
    """The (package, path) pairs this context asked its parent for."""
    return sorted(_importer().data)


def environment():
    import tempfile
    return {'HOME': os.environ.get('HOME'), 'TMPDIR': os.environ.get('TMPDIR'),
            'tempdir': tempfile.gettempdir(),
            'dont_write_bytecode': sys.dont_write_bytecode}


def version():
    return '%d.%d.%d' % sys.version_info[:3]


def has_site_packages():
    return any('site-packages' in p for p in sys.path)


# ------------------------------------------------------------ test trees
# Written under a test's tmp_path, which the test puts on the master's
# sys.path.  Every module is valid Python 2.7 and 3.x.

TREE = {
    # The root pulls in everything below, except unused.py and lazy.py's
    # function-level import.
    'imptree/__init__.py': """
        from __future__ import absolute_import
        from . import core
        from .sub import leaf
        from . import cond
        from . import optional
        from . import lazy
        NAME = 'imptree'
        """,
    'imptree/core.py': """
        from __future__ import absolute_import
        import os
        from . import cyc_a
        def where():
            return os.path.basename(__file__)
        """,
    # A cycle: each imports the other at module level.
    'imptree/cyc_a.py': """
        from __future__ import absolute_import
        import imptree.cyc_b
        VALUE = 'a'
        def partner():
            return imptree.cyc_b.VALUE
        """,
    'imptree/cyc_b.py': """
        import imptree.cyc_a
        VALUE = 'b'
        def partner():
            return imptree.cyc_a.VALUE
        """,
    'imptree/helpers.py': """
        def double(x):
            return 2 * x
        """,
    'imptree/sub/__init__.py': "",
    'imptree/sub/leaf.py': """
        from .. import helpers
        from ..sub.deep import deepmod
        from . import sibling
        RESULT = helpers.double(deepmod.BASE)
        """,
    'imptree/sub/sibling.py': "X = 1\n",
    'imptree/sub/deep/__init__.py': "from .deepmod import BASE\n",
    'imptree/sub/deep/deepmod.py': "BASE = 21\n",
    # A conditional import: which branch runs depends on the target.
    'imptree/cond.py': """
        import sys
        if sys.version_info[0] >= 3:
            from . import only3 as flavour
        else:
            from . import only2 as flavour
        """,
    'imptree/only3.py': "NAME = 'py3'\n",
    'imptree/only2.py': "NAME = 'py2'\n",
    # Optional dependencies nobody can serve.
    'imptree/optional.py': """
        try:
            import imptree_missing_dependency
        except ImportError:
            imptree_missing_dependency = None
        try:
            from imptree_missing_pkg.sub import thing
        except ImportError:
            thing = None
        """,
    'imptree/lazy.py': """
        def later():
            from . import unused
            return unused
        """,
    'imptree/unused.py': "raise RuntimeError('imptree.unused was run')\n",
    'imptree/data/greeting.txt': "hello from imptree\n",
    'imptree/data/nested/deeper.txt': "deeper\n",
}

# A package whose optional dependency, served by the master, fails to
# import for lack of its own (like requests trying urllib3.contrib.socks
# without PySocks installed).
TRY_TREE = {
    'imptry/__init__.py': """
        try:
            from . import extra
        except ImportError:
            extra = None
        from . import base
        """,
    'imptry/base.py': "VALUE = 1\n",
    'imptry/extra.py': """
        import imptry_missing_dependency
        from . import never_reached
        """,
    'imptry/never_reached.py': "VALUE = 2\n",
}


# What importing imptree runs, on Python 3 / Python 2 targets.
TREE_COMMON = ['imptree', 'imptree.cond', 'imptree.core', 'imptree.cyc_a',
               'imptree.cyc_b', 'imptree.helpers', 'imptree.lazy',
               'imptree.optional', 'imptree.sub', 'imptree.sub.deep',
               'imptree.sub.deep.deepmod', 'imptree.sub.leaf',
               'imptree.sub.sibling']
TREE_IMPORTED_PY3 = sorted(TREE_COMMON + ['imptree.only3'])
TREE_IMPORTED_PY2 = sorted(TREE_COMMON + ['imptree.only2'])


def write_tree(root, files):
    """Write {relative path: text} under *root*."""
    import textwrap
    for relpath, text in files.items():
        path = os.path.join(root, *relpath.split('/'))
        parent = os.path.dirname(path)
        if not os.path.isdir(parent):
            os.makedirs(parent)
        with open(path, 'w') as handle:
            handle.write(textwrap.dedent(text).lstrip('\n'))


def tree_facts():
    """Values computed while importing imptree: proof that it ran."""
    import imptree
    from imptree import cond, cyc_a, cyc_b, optional
    from imptree.sub import leaf
    return {
        'name': imptree.NAME,
        'leaf': leaf.RESULT,
        'cycle': [cyc_a.partner(), cyc_b.partner()],
        'flavour': cond.flavour.NAME,
        'optional': [optional.imptree_missing_dependency, optional.thing],
        'where': imptree.core.where(),
    }


def compiles_during_import(name, marker):
    """Import *name*; the files containing *marker* in their path that
    compile() was asked to compile meanwhile (Python 3)."""
    import builtins
    compiled = []
    real = builtins.compile

    def counting(source, filename, *args, **kwargs):
        if marker in str(filename):
            compiled.append(filename)
        return real(source, filename, *args, **kwargs)
    builtins.compile = counting
    try:
        importlib.import_module(name)
    finally:
        builtins.compile = real
    return sorted(compiled)


def import_after(seconds, name):
    """Import *name* once this call has run *seconds*: by then the
    context's stand-by thread runs its loop, and takes the answers."""
    time.sleep(seconds)
    importlib.import_module(name)
    return name


def submodules(package):
    """What pkgutil.iter_modules() finds in *package*: [name, is_package]
    of each submodule, sorted."""
    import importlib
    import pkgutil
    module = importlib.import_module(package)
    return sorted([name, bool(is_pkg)] for _, name, is_pkg in
                  pkgutil.iter_modules(module.__path__))


def listed_and_found(package, clear_cache=False):
    """[name, found] for each submodule pkgutil.iter_modules lists, where
    found says whether the finder it hands out finds the module by its
    name (find_spec on Python 3, find_module on 2), as plugin loaders ask;
    with *clear_cache*, after sys.path_importer_cache.clear() (which code
    that installs a path hook does)."""
    import importlib
    import pkgutil
    module = importlib.import_module(package)
    if clear_cache:
        sys.path_importer_cache.clear()
    found = []
    for finder, name, _ in pkgutil.iter_modules(module.__path__):
        if sys.version_info[0] >= 3:
            spec = finder.find_spec(name)
            found.append([name, spec is not None and
                          spec.name == package + '.' + name])
        else:
            found.append([name, finder.find_module(name) is not None])
    return sorted(found)


def walked(package, forget_caches=False):
    """The names pkgutil.walk_packages() finds below *package* (it imports
    the subpackages to look inside them), sorted; with *forget_caches*,
    after importlib.invalidate_caches() (Python 3), which drops the
    finders of path entries that are not absolute paths."""
    import importlib
    import pkgutil
    module = importlib.import_module(package)
    if forget_caches and hasattr(importlib, 'invalidate_caches'):
        importlib.invalidate_caches()
    return sorted(name for _, name, _ in
                  pkgutil.walk_packages(module.__path__, package + '.'))
