"""Contexts import what they lack from their parent, counted per context.

Each test reads the importer's own counters (plasmid.core.importer.stats(),
called in the context) and the master's per-link LOAD_MODULE counts
(router.responder.messages_sent): requests sent upstream, modules
received, modules received but never imported.  Nothing here is timed.
"""
from __future__ import annotations

import collections
import importlib.util
import marshal
import os
import platform
import sys
import sysconfig
import zlib
from typing import Iterator

import pytest

import import_fns
from master_path import on_master_path
import plasmid
from plasmid.core import importer
from plasmid.core.router import GET_MODULE, LOAD_MODULE
from testbed.interposed import interposed
from testbed.pythons import require_python

# A context without the master's site-packages: requests and django are
# installed for the master only, so this target must fetch them.
BARE = [sys.executable, '-S']
FNS = import_fns.__name__


@pytest.fixture
def tree(tmp_path) -> Iterator[str]:
    """imptree (see import_fns.TREE), importable by the master only."""
    root = str(tmp_path / 'tree')
    import_fns.write_tree(root, import_fns.TREE)
    with on_master_path(root, 'imptree'):
        yield root


@pytest.fixture
def router() -> Iterator[plasmid.Router]:
    with plasmid.Router() as r:
        yield r


def requests_about(stats: dict, package: str) -> list[list[str]]:
    """The requests a context sent that name *package* or its modules."""
    return [names for names in stats['requested']
            if any(n == package or n.startswith(package + '.')
                   for n in names)]


def _module_file(root: str, module: str) -> str:
    path = os.path.join(root, *module.split('.'))
    if os.path.isdir(path):
        path = os.path.join(path, '__init__')
    return path + '.py'


def _module_files(root: str, modules) -> list[str]:
    """The sorted paths of *modules* under *root*."""
    return sorted(_module_file(root, m) for m in modules)


def _source(root: str, module: str) -> str:
    with open(_module_file(root, module)) as handle:
        return handle.read()


def tree_modules(root: str) -> list[str]:
    """Every module of imptree on disk (imported or not)."""
    found = []
    for dirpath, _, files in os.walk(os.path.join(root, 'imptree')):
        package = os.path.relpath(dirpath, root).replace(os.sep, '.')
        for name in files:
            if name == '__init__.py':
                found.append(package)
            elif name.endswith('.py'):
                found.append(package + '.' + name[:-3])
    return sorted(found)


# ------------------------------------------------------- a package tree


def test_tree_the_master_has_imported_costs_one_request(
        router: plasmid.Router, tree: str) -> None:
    # The master ran the tree's conditionals itself, so it knows which
    # branch modules a Python 3 target needs too.
    import imptree  # noqa: F401
    ctx = router.local()
    facts = ctx.call(import_fns.tree_facts)
    assert facts == {'name': 'imptree', 'leaf': 42, 'cycle': ['b', 'a'],
                     'flavour': 'py3', 'optional': [None, None],
                     'where': 'core.py'}
    loaded = ctx.call(import_fns.loaded_modules, 'imptree')
    assert loaded == import_fns.TREE_IMPORTED_PY3
    stats = ctx.call(importer.stats)
    # This test's own module went ahead of the call (no request).
    assert stats['requested'] == [['imptree']]
    assert stats['requests_sent'] == 1
    # Exactly the modules that ran arrived (plus this test's own module).
    assert stats['modules_received'] == len(loaded) + 1
    assert stats['never_imported'] == []
    # Source travels compressed: at least the compressed text arrived.
    packed = sum(len(zlib.compress(_source(tree, m).encode(), 6))
                 for m in loaded)
    assert stats['bytes_received'] > packed


def test_an_optional_dependency_that_failed_on_the_master_costs_no_request(
        router: plasmid.Router, tmp_path) -> None:
    # requests tries urllib3.contrib.socks, which fails without PySocks:
    # the master sends it, and the negative answer for what it lacks, with
    # the package, instead of waiting for the target to ask twice.
    root = str(tmp_path / 'trytree')
    import_fns.write_tree(root, import_fns.TRY_TREE)
    with on_master_path(root, 'imptry'):
        import imptry  # noqa: F401
        ctx = router.local()
        assert ctx.call(import_fns.try_import, 'imptry') is None
        assert ctx.call(import_fns.loaded_modules, 'imptry') == [
            'imptry', 'imptry.base']
        stats = ctx.call(importer.stats)
    assert requests_about(stats, 'imptry') == [['imptry']]
    assert requests_about(stats, 'imptry_missing_dependency') == []
    sent = {m for (cid, m) in router.responder.messages_sent
            if cid == ctx.context_id}
    # imptry.extra ran (and failed), as on the master; the module it
    # would import after that did not cross the link.
    assert {'imptry', 'imptry.base', 'imptry.extra'} <= sent
    assert 'imptry.never_reached' not in sent
    assert stats['never_imported'] == []


def test_tree_the_master_never_imported(router: plasmid.Router,
                                        tree: str) -> None:
    # Without the master's own run, a branch import is not certain: the
    # branch the target takes costs one request, the other is never sent.
    ctx = router.local()
    facts = ctx.call(import_fns.tree_facts)
    assert facts['leaf'] == 42 and facts['flavour'] == 'py3'
    loaded = ctx.call(import_fns.loaded_modules, 'imptree')
    assert loaded == import_fns.TREE_IMPORTED_PY3
    stats = ctx.call(importer.stats)
    assert requests_about(stats, 'imptree') == [['imptree'],
                                                ['imptree.only3']]
    # The optional dependencies were answered negatively ahead of time.
    assert requests_about(stats, 'imptree_missing_dependency') == []
    assert requests_about(stats, 'imptree_missing_pkg') == []
    assert stats['never_imported'] == []
    assert stats['modules_received'] == len(loaded) + 1
    # Nothing of the tree that did not run crossed the link.
    sent = {m for (cid, m) in router.responder.messages_sent
            if cid == ctx.context_id}
    never_run = set(tree_modules(tree)) - set(loaded)
    assert never_run >= {'imptree.unused', 'imptree.only2'}
    assert sent & never_run == set()


def test_each_module_crosses_the_link_once(router: plasmid.Router,
                                           tree: str) -> None:
    ctx = router.local()
    ctx.call(import_fns.tree_facts)
    ctx.call(import_fns.tree_facts)  # already there: no new traffic
    counts = {m: n for (cid, m), n in router.responder.messages_sent.items()
              if cid == ctx.context_id and m.startswith('imptree')}
    assert sorted(counts) == import_fns.TREE_IMPORTED_PY3
    assert set(counts.values()) == {1}


@pytest.mark.parametrize('name', ['imptree.sub.leaf', 'imptree.optional'])
def test_importing_a_submodule_first(router: plasmid.Router, tree: str,
                                     name: str) -> None:
    # ``import a.b.c`` asks for a, a.b and a.b.c in one request; a's
    # answer already brings a.b.c when a imports it.
    ctx = router.local()
    assert ctx.call(import_fns.import_facts, name)['loader'] == 'Importer'
    stats = ctx.call(importer.stats)
    assert requests_about(stats, 'imptree')[0][0] == 'imptree'
    counts = {m: n for (cid, m), n in router.responder.messages_sent.items()
              if cid == ctx.context_id}
    assert {m for m, n in counts.items() if n > 1} == set()


def test_optional_dependency_stays_missing_without_a_request(
        router: plasmid.Router, tree: str) -> None:
    ctx = router.local()
    ctx.call(import_fns.tree_facts)
    before = ctx.call(importer.stats)['requests_sent']
    # The answer for imptree already said the master cannot serve it.
    assert {'imptree_missing_dependency', 'imptree_missing_pkg'} <= \
        set(ctx.call(import_fns.negative_names))
    error = ctx.call(import_fns.try_import, 'imptree_missing_dependency')
    assert 'imptree_missing_dependency' in error
    assert ctx.call(importer.stats)['requests_sent'] == before


@pytest.mark.parametrize('python', ['master', 'other'])
def test_modules_run_from_memory_under_the_masters_path(
        router: plasmid.Router, tree: str, python: str) -> None:
    # On the master's Python the master's bytecode runs, elsewhere the
    # context compiles the source: either way from memory, as that file.
    ctx = router.local(python_path=sys.executable if python == 'master'
                       else require_python(_another_minor()))
    facts = ctx.call(import_fns.import_facts, 'imptree.core')
    path = os.path.join(tree, 'imptree', 'core.py')
    assert facts['loader'] == 'Importer'
    assert facts['file'] == path            # the master's path, for tracebacks
    assert facts['cached'] is None          # no bytecode file anywhere
    assert facts['code_filename'] == path   # compiled for that file
    with open(path) as handle:
        assert ctx.call(import_fns.source_of, 'imptree.core') == \
            handle.read()
    # Nothing was compiled to disk, on either side.
    assert not [d for d, _, _ in os.walk(tree) if '__pycache__' in d]


def _another_minor() -> str:
    """A Python 3 version other than the master's, for contexts that
    cannot run its bytecode."""
    return '3.12' if sys.version_info[:2] != (3, 12) else '3.11'


def test_a_context_on_the_masters_python_runs_its_bytecode(
        router: plasmid.Router, tree: str) -> None:
    ctx = router.local()  # the master's own Python
    assert ctx.call(import_fns.compiles_during_import, 'imptree',
                    'imptree') == []
    assert ctx.call(import_fns.tree_facts)['cycle'] == ['b', 'a']
    assert ctx.call(import_fns.loaded_modules, 'imptree') == \
        import_fns.TREE_IMPORTED_PY3


def test_a_traceback_from_bytecode_shows_the_source(
        router: plasmid.Router, tmp_path) -> None:
    root = str(tmp_path / 'tbtree')
    import_fns.write_tree(root, {'imptb/__init__.py': '''
        def fail():
            raise ValueError('from imptb')  # the line a traceback shows
        '''})
    with on_master_path(root, 'imptb'):
        import imptb
        ctx = router.local()
        with pytest.raises(plasmid.CallError) as caught:
            ctx.call(imptb.fail)
        arrived = ctx.call(import_fns.arrived_with_code, ['imptb'])
    assert arrived == {'imptb': True}  # it ran the master's bytecode
    assert "raise ValueError('from imptb')  # the line a traceback shows" \
        in str(caught.value)


def test_a_first_call_brings_bytecode_to_a_context_of_this_version(
        router: plasmid.Router, tmp_path) -> None:
    # A first call's module goes ahead of it, before the new context's
    # HELLO (held back here by a wrapper): its ready marker has said its
    # version.  This very interpreter, or another file of its version,
    # gets the code; the first context of another version gets none
    # (tests/master/test_compilers.py: a helper compiles for the next).
    root = str(tmp_path / 'firsttree')
    import_fns.write_tree(root, {'impfirst/__init__.py': 'def answer():\n'
                                                        '    return 42\n'})
    linked = str(tmp_path / 'python-linked')
    os.symlink(sys.executable, linked)
    pythons = {'same': sys.executable, 'linked': linked,
               'other': require_python(_another_minor())}
    with on_master_path(root, 'impfirst'):
        import impfirst
        arrived = {}
        for how, python in pythons.items():
            ctx = router.local(python_path=interposed(python, answer=0.3))
            assert ctx.call(impfirst.answer) == 42
            arrived[how] = ctx.call(import_fns.arrived_with_code,
                                    ['impfirst'])['impfirst']
    assert arrived == {'same': True, 'linked': True, 'other': False}


@pytest.mark.parametrize('how', ['another-version', 'optimized',
                                 'turned-off'])
def test_other_contexts_compile_the_source(tree: str, how: str) -> None:
    # The first context of another version gets no bytecode (a helper
    # compiles for later ones: tests/master/test_compilers.py); a context
    # under -O refuses it (its code must leave asserts out);
    # Router(send_bytecode=False) sends none.
    python = {'another-version': require_python(_another_minor()),
              'optimized': [sys.executable, '-O'],
              'turned-off': sys.executable}[how]
    with plasmid.Router(send_bytecode=how != 'turned-off') as router:
        ctx = router.local(python_path=python)
        compiled = ctx.call(import_fns.compiles_during_import, 'imptree',
                            'imptree')
        sent_code = dict(router.responder.compressed_code)
    assert compiled == _module_files(tree, import_fns.TREE_IMPORTED_PY3)
    assert bool(sent_code) == (how == 'optimized')


def test_the_master_compiles_each_module_once(
        tree: str, monkeypatch) -> None:
    # The tree has no .pyc: the master compiles each module's source to
    # scan its imports, and sends a context on its Python that same code.
    import builtins
    compiled: collections.Counter = collections.Counter()
    real_compile = builtins.compile
    monkeypatch.setattr(builtins, 'compile', lambda source, path, *a, **k: (
        compiled.update([path]), real_compile(source, path, *a, **k))[1])
    with plasmid.Router() as router:
        ctx = router.local()
        assert ctx.call(import_fns.compiles_during_import, 'imptree',
                        'imptree') == []  # it ran the master's code
        assert ctx.call(import_fns.loaded_modules, 'imptree') == \
            import_fns.TREE_IMPORTED_PY3
        assert router.responder.graph.compiled == {}  # handed over
    mine = {p: n for p, n in compiled.items() if p.startswith(tree)}
    assert sorted(mine) == \
        _module_files(tree, import_fns.TREE_IMPORTED_PY3)
    assert set(mine.values()) == {1}


def test_bytecode_is_of_the_source_sent_even_if_the_file_changed(
        router: plasmid.Router, tmp_path) -> None:
    # The master read the source for a context on another Python; then the
    # file changed and a fresh .pyc was written for the new text.  A
    # context on the master's Python gets the source the master serves
    # (read once), and bytecode of that source, not the .pyc.
    import py_compile
    root = str(tmp_path / 'staletree')
    import_fns.write_tree(root, {'impstale/__init__.py': 'VALUE = 1\n'})
    with on_master_path(root, 'impstale'):
        other = router.local(python_path=require_python(_another_minor()))
        assert other.call(import_fns.attribute, 'impstale', 'VALUE') == 1
        path = os.path.join(root, 'impstale', '__init__.py')
        with open(path, 'w') as handle:
            handle.write('VALUE = 2  # changed after the master read it\n')
        py_compile.compile(path, doraise=True)
        ctx = router.local()
        assert ctx.call(import_fns.attribute, 'impstale', 'VALUE') == 1
        assert ctx.call(import_fns.source_of, 'impstale') == 'VALUE = 1\n'
        assert router.responder.compressed_code['impstale'] is not None


def test_bytecode_runs_only_where_its_magic_number_is_ours() -> None:
    code = compile('VALUE = 1', 'x.py', 'exec')
    packed = zlib.compress(marshal.dumps(code))
    source = zlib.compress(b'VALUE = 1')
    ours = importlib.util.MAGIC_NUMBER
    entry = importer.ModuleEntry('x', False, source, 'x.py',
                                 code=(ours, packed))
    assert importer._master_code(entry).co_filename == 'x.py'
    entry.code = (b'\x00\x00\r\n', packed)
    assert importer._master_code(entry) is None
    entry.code = None
    assert importer._master_code(entry) is None


def test_master_only_code_is_refused(router: plasmid.Router) -> None:
    # A bare target: plasmid is not installed there (only its core, which
    # every context boots with).
    ctx = router.local(python_path=BARE)
    error = ctx.call(import_fns.try_import, 'plasmid.master.modules')
    assert error == ("plasmid.master is the master's own (plasmid's "
                     'controller side): it is never sent to a context')


@pytest.mark.skipif(sys.version_info < (3, 11),
                    reason='the master needs tomllib (3.11+)')
def test_a_module_the_master_will_not_send_says_why(
        router: plasmid.Router, tmp_path) -> None:
    """A bare "No module named ..." said nothing of the reason: here a
    module of the master's newer standard library."""
    ctx = router.local(python_path=require_python('3.6'))
    error = ctx.call(import_fns.try_import, 'tomllib')
    assert error == ("tomllib is in the master's standard library (Python "
                     "%d.%d), not in this Python's" % sys.version_info[:2])
    # A feature test is answered, not raised at: called by itself, or by
    # a module's top level as that module is imported.
    assert ctx.call(import_fns.spec_found, 'tomllib') is False
    root = str(tmp_path / 'probe')
    import_fns.write_tree(root, {'probe_tomllib.py': (
        'import importlib.util\n'
        'HAS = importlib.util.find_spec("tomllib") is not None\n')})
    os.chmod(str(tmp_path), 0o755)
    assert ctx.call(import_fns.probe_at_import, root, 'probe_tomllib') \
        is False


# A finder such as a setuptools editable install of plasmid leaves on
# sys.meta_path (its .pth runs at start-up): it serves ``plasmid.X`` from
# its checkout whatever the package's __path__ says.
EDITABLE_LIKE_FINDER = """
import importlib.machinery, sys
class EditableLike(object):
    @classmethod
    def find_spec(cls, fullname, path=None, target=None):
        if fullname.startswith('plasmid.') and fullname.count('.') == 1:
            return importlib.machinery.PathFinder.find_spec(fullname, [%r])
        return None
sys.meta_path.append(EditableLike)
"""


@pytest.fixture
def plasmid_installed_on_target(tmp_path, monkeypatch) -> str:
    """Contexts started now find another plasmid (empty modules) through
    a finder of their own, which PYTHONPATH's sitecustomize installs."""
    package = tmp_path / 'checkout' / 'plasmid'
    for sub in ('', 'master', 'ansible'):
        (package / sub).mkdir(parents=True, exist_ok=True)
        (package / sub / '__init__.py').write_text('')
    (package / 'master' / 'modules.py').write_text('')
    (tmp_path / 'sitecustomize.py').write_text(
        EDITABLE_LIKE_FINDER % str(package))
    monkeypatch.setenv('PYTHONPATH', str(tmp_path))
    return str(package)


def test_plasmid_modules_come_from_the_master_only(
        router: plasmid.Router, plasmid_installed_on_target: str) -> None:
    """Neither the master-only modules nor another version of the served
    ones come from a plasmid the target has installed."""
    ctx = router.local()
    # The finder is in place and would serve both:
    for name in ('plasmid.master', 'plasmid.ansible'):
        origin = ctx.call(import_fns.origin_from_finder, 'EditableLike', name)
        assert origin.startswith(plasmid_installed_on_target), origin
    error = ctx.call(import_fns.try_import, 'plasmid.master.modules')
    assert error is not None and 'plasmid.master' in error
    served = ctx.call(import_fns.module_file, 'plasmid.ansible')
    assert served == os.path.join(os.path.dirname(plasmid.__file__),
                                  'ansible', '__init__.py')


# --------------------------------------------- third-party distributions


@pytest.mark.parametrize('module, facts_fn, check', [
    ('requests', import_fns.requests_facts,
     lambda f: f['get_callable']),
    ('django.db.models', import_fns.django_facts,
     lambda f: f['has_model'] and
     f['model_module'] == 'django.db.models.base'),
])
def test_distribution_missing_on_the_target(router: plasmid.Router,
                                            module: str, facts_fn,
                                            check) -> None:
    ctx = router.local(python_path=BARE)
    assert ctx.call(import_fns.has_site_packages) is False
    baseline = ctx.call(importer.stats)
    facts = ctx.call(facts_fn)
    assert check(facts), facts
    # It is the master's copy (its site-packages path).
    site = os.path.dirname(os.path.dirname(
        importlib.util.find_spec('requests').origin))
    assert facts['file'].startswith(site + os.sep)
    stats = ctx.call(importer.stats)
    new_requests = stats['requested'][len(baseline['requested']):]
    print('%s: requests %s, %d modules, %d bytes, never imported %s' % (
        module, new_requests, stats['modules_received'],
        stats['bytes_received'], stats['never_imported']))
    assert 1 <= len(new_requests) <= 2, new_requests
    sent = [n for (cid, m), n in router.responder.messages_sent.items()
            if cid == ctx.context_id]
    assert set(sent) == {1}  # each module crossed the link once
    assert len(stats['never_imported']) < 0.1 * stats['modules_received']
    # The target's own standard library was used, never replaced.
    served = set(ctx.call(import_fns.loaded_by_importer))
    stdlib = set(ctx.call(import_fns.stdlib_names))
    assert {n.partition('.')[0] for n in served} & stdlib == set()
    # ...and not even asked for: what the standard library tries and
    # lacks here came as negative answers ahead of time.
    asked = {n.partition('.')[0] for names in new_requests for n in names}
    assert asked & stdlib == set()


@pytest.mark.parametrize('via', [False, True], ids=['direct', 'via_A'])
def test_modules_arrive_after_their_dependencies(
        router: plasmid.Router, via: bool) -> None:
    # The batch answer for asgiref brings the submodules django needs
    # (asgiref.sync...) after asgiref itself, through an intermediary too.
    parent = router.local(name='A') if via else None
    ctx = router.local(python_path=BARE, via=parent)
    ctx.call(import_fns.django_facts)
    order = ctx.call(import_fns.arrival_order)
    # Modules that followed an answer were awaited, never asked for again.
    # (The test module's own request goes to A only: the master pushed it
    # there; a direct child got it pushed.)
    requested = [names for names in ctx.call(importer.stats)['requested']
                 if names != [FNS]]
    assert requested == [['django', 'django.db', 'django.db.models'],
                             ['asgiref', 'sqlparse']], requested
    assert set(router.responder.messages_sent.values()) == {1}
    position = {name: i for i, name in enumerate(order)}
    graph = router.responder.graph
    late = []
    for name in order:
        for dep in graph.edges(name).required:
            # Within one package, dependencies come first, except where
            # the two modules import each other (a cycle).
            if dep in position and position[dep] > position[name] and \
                    dep.partition('.')[0] == name.partition('.')[0] and \
                    not _reaches(graph, dep, name):
                late.append((name, dep))
    assert late == [], late
    assert len(order) > 50  # django.db.models really came from the master


def _reaches(graph, start: str, goal: str) -> bool:
    """Do *start*'s module-level imports lead back to *goal*?"""
    seen, stack = {start}, [start]
    while stack:
        for dep in graph.edges(stack.pop()).required:
            if dep == goal:
                return True
            if dep not in seen:
                seen.add(dep)
                stack.append(dep)
    return False


# ------------------------------------------- modules after an answer


class _Message:
    def __init__(self, value, src: int = 0) -> None:
        self._value, self.src, self.data = value, src, b''

    def value(self):
        return self._value


class _Router:
    """Just what an Importer needs: it records what it sends."""
    parent_id, parent, loop = 0, object(), None

    def __init__(self) -> None:
        self.handlers: dict = {}
        self.out: list = []
        self.on_lost: list = []

    def add_handler(self, handle, callback, policy) -> None:
        self.handlers[handle] = callback

    def send_value(self, dst, handle, value) -> None:
        self.out.append((dst, handle, value))

    def arrive(self, handle, value, src: int = 0) -> None:
        self.handlers[handle](_Message(value, src))

    def to(self, dst: int) -> list:
        return [v[0] for d, h, v in self.out
                if d == dst and h == LOAD_MODULE]


def _entry(name: str, for_name: str, closure=(), after=()) -> tuple:
    return importer.ModuleEntry(name, '.' not in name, b'', name + '.py',
                                for_name=for_name, closure=list(closure),
                                after=list(after)).to_wire()


def test_modules_after_an_answer_are_awaited_and_passed_on() -> None:
    router = _Router()
    imp = importer.Importer(router)
    router.arrive(GET_MODULE, (['pkg'], 'origin'), src=7)
    assert router.out == [(0, GET_MODULE, (['pkg'], 'origin'))]
    router.arrive(LOAD_MODULE, _entry('pkg.dep', 'pkg'))
    router.arrive(LOAD_MODULE,
                  _entry('pkg', 'pkg', ['pkg.dep'], ['pkg.a', 'pkg.b']))
    assert router.to(7) == ['pkg.dep', 'pkg']
    # What follows the answer counts as asked for: no second request.
    got = []
    imp.when_known('pkg.a', got.append)
    imp.request(['pkg.b'])
    router.arrive(GET_MODULE, (['pkg'], None), src=8)   # served from cache
    router.arrive(LOAD_MODULE, _entry('pkg.a', 'pkg'))
    assert [e.name for e in got] == ['pkg.a']
    router.arrive(GET_MODULE, (['pkg'], None), src=9)
    assert router.to(9) == ['pkg.dep', 'pkg', 'pkg.a']
    router.arrive(LOAD_MODULE, _entry('pkg.b', 'pkg'))
    for child in (7, 8, 9):  # each in order, each once
        assert router.to(child) == ['pkg.dep', 'pkg', 'pkg.a', 'pkg.b']
    assert [v for d, h, v in router.out if h == GET_MODULE] == \
        [(['pkg'], 'origin')]
    assert imp.waiting == {} and imp.followers == {} and imp.expected == {}


def test_modules_after_an_answer_already_here_follow_it() -> None:
    # Three levels: our parent passes on an answer whose *after* modules
    # it had sent us before (for another import); a child waiting for the
    # answer gets them right behind it, or it would wait for them forever.
    router = _Router()
    imp = importer.Importer(router)
    router.arrive(GET_MODULE, (['pkg.a'], None), src=7)
    router.arrive(GET_MODULE, (['pkg'], 'origin'), src=8)
    router.arrive(LOAD_MODULE, _entry('pkg.a', 'pkg.a'))
    router.arrive(LOAD_MODULE, _entry('pkg', 'pkg', after=['pkg.a', 'pkg.b']))
    assert router.to(8) == ['pkg', 'pkg.a']
    assert imp.expected == {'pkg': {'pkg.b'}}
    router.arrive(LOAD_MODULE, _entry('pkg.b', 'pkg'))
    assert router.to(8) == ['pkg', 'pkg.a', 'pkg.b']
    assert router.to(7) == ['pkg.a']
    assert imp.waiting == {} and imp.expected == {}


# ------------------------------------------------------------ chains


def _chain_imports(router: plasmid.Router, python_path, concurrent: bool,
                   call) -> tuple:
    a = router.local(name='A')
    b = router.local(via=a, name='B', python_path=python_path)
    c = router.local(via=a, name='C', python_path=python_path)
    if concurrent:
        futures = [ctx.call_async(call) for ctx in (b, c)]
        results = [f.result(60) for f in futures]
    else:
        results = [b.call(call), c.call(call)]
    return a, b, c, results


@pytest.mark.parametrize('python_path', [None, BARE], ids=['site', 'bare'])
@pytest.mark.parametrize('concurrent', [False, True],
                         ids=['one_by_one', 'at_once'])
def test_intermediary_fetches_a_package_once(router: plasmid.Router,
                                             tree: str, python_path,
                                             concurrent: bool) -> None:
    import imptree  # noqa: F401  (so that one request brings it all)
    a, b, c, results = _chain_imports(router, python_path, concurrent,
                                      import_fns.tree_facts)
    assert results[0] == results[1] and results[0]['leaf'] == 42
    for module in import_fns.TREE_IMPORTED_PY3:
        assert router.responder.messages_sent[(a.context_id, module)] == 1, \
            module
    assert requests_about(a.call(importer.stats), 'imptree') == [['imptree']]
    for child in (b, c):
        stats = child.call(importer.stats)
        assert requests_about(stats, 'imptree') == [['imptree']]
        assert stats['never_imported'] == []
    # B and C got their modules through A, never from the master directly.
    direct = {cid for (cid, m) in router.responder.messages_sent}
    assert direct == {a.context_id}


def test_an_intermediary_passes_bytecode_on_to_its_version_only(
        router: plasmid.Router, tree: str) -> None:
    # A, on the master's Python, gets bytecode with the source; of its
    # children, the one on another version gets the source alone.
    import imptree  # noqa: F401  (so that one request brings it all)
    names = import_fns.TREE_IMPORTED_PY3
    a = router.local(name='A')
    other = router.local(via=a, name='B',
                         python_path=require_python(_another_minor()))
    same = router.local(via=a, name='C')  # A's own Python
    compiled = [ctx.call(import_fns.compiles_during_import, 'imptree',
                         'imptree') for ctx in (other, same)]
    assert compiled == [_module_files(tree, names), []]
    assert a.call(import_fns.arrived_with_code, names) == \
        dict.fromkeys(names, True)
    assert same.call(import_fns.arrived_with_code, names) == \
        dict.fromkeys(names, True)
    assert other.call(import_fns.arrived_with_code, names) == \
        dict.fromkeys(names, False)


def test_what_is_kept_for_a_context_goes_with_it(router: plasmid.Router,
                                                  tree: str) -> None:
    import imptree  # noqa: F401
    a = router.local(name='A')
    b = router.local(via=a, name='B')
    assert b.call(import_fns.tree_facts)['leaf'] == 42
    assert a.call(import_fns.children_known) == \
        {'sent': [b.context_id], 'pythons': [b.context_id]}
    assert a.context_id in router.responder.sent
    assert a.context_id in router.responder.pythons
    assert router.responder.behind[b.context_id][0] == a.context_id
    assert (a.context_id, 'imptree') in router.responder.messages_sent
    b.shutdown()
    assert a.call(import_fns.children_known) == {'sent': [], 'pythons': []}
    assert b.context_id not in router.responder.behind
    a.shutdown()
    assert a.context_id not in router.responder.sent
    assert a.context_id not in router.responder.pythons
    assert a.context_id not in {cid for cid, _
                                in router.responder.messages_sent}


@pytest.mark.parametrize('concurrent', [False, True],
                         ids=['one_by_one', 'at_once'])
def test_intermediary_children_ask_for_different_submodules(
        router: plasmid.Router, tree: str, concurrent: bool) -> None:
    # B's import asks for imptree, imptree.sub, imptree.sub.leaf at once;
    # C asks for imptree.sub.deep, which comes ahead of imptree.
    a = router.local(name='A')
    b = router.local(via=a, name='B')
    c = router.local(via=a, name='C')
    calls = [(b, 'imptree.sub.leaf'), (c, 'imptree.sub.deep')]
    if concurrent:
        futures = [ctx.call_async(import_fns.import_facts, name)
                   for ctx, name in calls]
        facts = [f.result(30) for f in futures]
    else:
        facts = [ctx.call(import_fns.import_facts, name)
                 for ctx, name in calls]
    assert [f['name'] for f in facts] == ['imptree.sub.leaf',
                                          'imptree.sub.deep']
    to_a = {m: n for (cid, m), n in router.responder.messages_sent.items()
            if cid == a.context_id and m.startswith('imptree')}
    assert set(to_a) == set(import_fns.TREE_COMMON) | {'imptree.only3'}
    assert set(to_a.values()) == {1}


def test_intermediary_serves_bare_children_a_distribution_once(
        router: plasmid.Router) -> None:
    a, b, c, results = _chain_imports(router, BARE, True,
                                      import_fns.requests_facts)
    assert all(r['get_callable'] for r in results)
    received = {m for (cid, m) in router.responder.messages_sent
                if cid == a.context_id}
    requests_modules = {m for m in received
                        if m.partition('.')[0] in ('requests', 'urllib3')}
    assert 'requests.api' in requests_modules
    for module in requests_modules:
        assert router.responder.messages_sent[(a.context_id, module)] == 1, \
            module
    stats_a = a.call(importer.stats)
    assert len(requests_about(stats_a, 'requests')) == 1
    assert len(requests_about(stats_a, 'urllib3')) == 1
    for child in (b, c):
        stats = child.call(importer.stats)
        assert len(requests_about(stats, 'requests')) == 1
        assert 1 <= len(stats['requested']) - 1 <= 2  # beyond import_fns


# ------------------------------------------------------- many threads


def test_twenty_threads_import_one_package(router: plasmid.Router,
                                           tree: str) -> None:
    ctx = router.local()
    ctx.call(import_fns.version)  # import_fns arrives before the race
    outcome = ctx.call(import_fns.import_in_threads, 'imptree', 20)
    assert outcome == {'finished': 20, 'ids': 1, 'errors': []}
    stats = ctx.call(importer.stats)
    assert [names for names in stats['requested'] if 'imptree' in names] \
        == [['imptree']]
    assert ctx.call(import_fns.tree_facts)['leaf'] == 42


def test_twenty_threads_import_a_distribution(router: plasmid.Router) -> None:
    ctx = router.local(python_path=BARE)
    ctx.call(import_fns.version)
    outcome = ctx.call(import_fns.import_in_threads, 'requests', 20)
    assert outcome == {'finished': 20, 'ids': 1, 'errors': []}
    stats = ctx.call(importer.stats)
    asked = [n for names in stats['requested'] for n in names]
    assert len(asked) == len(set(asked)), stats['requested']
    assert len(requests_about(stats, 'requests')) == 1


# --------------------------------------------------- old target Pythons


@pytest.mark.parametrize('version', ['2.7', '3.6'])
def test_old_target_imports_the_tree(router: plasmid.Router, tree: str,
                                     version: str) -> None:
    import imptree  # noqa: F401  (the master resolves its branches)
    ctx = router.local(python_path=require_python(version))
    assert ctx.call(import_fns.version).startswith(version + '.')
    facts = ctx.call(import_fns.tree_facts)
    flavour = 'py2' if version == '2.7' else 'py3'
    assert facts['leaf'] == 42 and facts['flavour'] == flavour
    assert facts['cycle'] == ['b', 'a']
    expected = import_fns.TREE_IMPORTED_PY2 if version == '2.7' \
        else import_fns.TREE_IMPORTED_PY3
    assert ctx.call(import_fns.loaded_modules, 'imptree') == expected
    assert ctx.call(import_fns.import_facts, 'imptree.core')['loader'] == \
        'Importer'
    stats = ctx.call(importer.stats)
    if version == '3.6':
        assert requests_about(stats, 'imptree') == [['imptree']]
        assert stats['never_imported'] == []
    else:
        # The master (Python 3) took the other branch of cond.py.
        assert requests_about(stats, 'imptree') == [['imptree'],
                                                    ['imptree.only2']]
        assert stats['never_imported'] == ['imptree.only3']
    # The target's own json, never the master's.
    json_file = ctx.call(import_fns.module_file, 'json')
    assert os.path.realpath(json_file).startswith(
        os.path.dirname(os.path.dirname(require_python(version))))
    assert requests_about(ctx.call(importer.stats), 'json') == []


@pytest.mark.parametrize('version, syntax', [
    ('2.7', "VALUE = f'{1 + 1}'\n"),
    ('3.6', "if (VALUE := 2):\n    pass\n"),
])
def test_syntax_the_target_cannot_compile(router: plasmid.Router,
                                          tmp_path, version: str,
                                          syntax: str) -> None:
    root = str(tmp_path / 'newsyntax')
    import_fns.write_tree(root, {'newsyntax_mod.py': syntax})
    with on_master_path(root, 'newsyntax_mod'):
        ctx = router.local(python_path=require_python(version))
        target = ctx.call(import_fns.version)
        error = ctx.call(import_fns.try_import, 'newsyntax_mod')
    assert error is not None
    assert 'newsyntax_mod' in error
    assert platform.python_version() in error   # the master's Python
    assert target in error                        # the target's Python


@pytest.mark.parametrize('version', ['2.7', '3.13'])
@pytest.mark.parametrize('cookie, encoding', [
    ('# -*- coding: utf-8 -*-', 'utf-8'),
    ('# vim: set fileencoding=latin-1 :', 'latin-1'),
])
def test_a_module_that_declares_its_encoding(router: plasmid.Router,
                                             tmp_path, version: str,
                                             cookie: str,
                                             encoding: str) -> None:
    """Source is sent decoded; Python 2 refuses to compile text that
    declares an encoding, so the declaration arrives as a plain comment
    (and its strings as the master read them)."""
    root = str(tmp_path / 'cookie')
    os.makedirs(root)
    with open(os.path.join(root, 'cookie_mod.py'), 'wb') as handle:
        handle.write(('%s\nVALUE = u"caf\u00e9"\n' % cookie).encode(encoding))
    with on_master_path(root, 'cookie_mod'):
        ctx = router.local(python_path=require_python(version))
        assert ctx.call(import_fns.attribute, 'cookie_mod', 'VALUE') == \
            'caf\u00e9'


@pytest.mark.parametrize('version', ['2.7', '3.13'])
def test_a_namespace_package_arrives_as_an_empty_package(
        router: plasmid.Router, tmp_path, version: str) -> None:
    """A package without __init__.py (PEP 420: google.*, azure.*) was
    never served: nothing below it could be imported."""
    root = str(tmp_path / 'ns')
    import_fns.write_tree(root, {
        'nsplasmid/inner/__init__.py': 'from . import leaf\n',
        'nsplasmid/inner/leaf.py': 'VALUE = 42\n',
        'nsplasmid/flat.py': 'VALUE = "flat"\n',
    })
    with on_master_path(root, 'nsplasmid'):
        ctx = router.local(python_path=require_python(version))
        assert ctx.call(import_fns.attribute, 'nsplasmid.inner.leaf',
                        'VALUE') == 42
        assert ctx.call(import_fns.attribute, 'nsplasmid.flat',
                        'VALUE') == 'flat'


@pytest.mark.parametrize('version', ['2.7', '3.13'])
@pytest.mark.parametrize('tree_files, module', [
    # A regular package holding a namespace one (flask.sansio).
    ({'nsreg/__init__.py': '', 'nsreg/inner/mod.py': 'VALUE = 42\n'},
     'nsreg.inner.mod'),
    # Namespace packages inside each other (google.cloud.storage).
    ({'nstop/cloud/storage/__init__.py': 'VALUE = 42\n'},
     'nstop.cloud.storage'),
])
def test_a_namespace_package_below_a_package_the_master_never_imported(
        router: plasmid.Router, tmp_path, version: str, tree_files: dict,
        module: str) -> None:
    """The master's finder asked PathFinder, whose namespace path reads
    the parent's module from the master's sys.modules: KeyError, no
    answer, and the context's import waited for ever."""
    root = str(tmp_path / 'nsdeep')
    import_fns.write_tree(root, tree_files)
    top = module.partition('.')[0]
    with on_master_path(root, top):
        assert top not in sys.modules
        ctx = router.local(python_path=require_python(version))
        assert ctx.call(import_fns.attribute, module, 'VALUE') == 42


def test_submodules_are_found_where_the_package_says_it_lives(
        router: plasmid.Router, tmp_path) -> None:
    """A package that extends its ``__path__`` (pkgutil's extend_path over
    two directories): the master looked only where its spec first said."""
    extend = ('from pkgutil import extend_path\n'
              '__path__ = extend_path(__path__, __name__)\n')
    first, second = str(tmp_path / 'a'), str(tmp_path / 'b')
    import_fns.write_tree(first, {'pkgext/__init__.py': extend,
                                  'pkgext/x.py': 'VALUE = "x"\n'})
    import_fns.write_tree(second, {'pkgext/__init__.py': extend,
                                   'pkgext/y.py': 'VALUE = "y"\n'})
    with on_master_path(second), on_master_path(first, 'pkgext'):
        importlib.import_module('pkgext')
        ctx = router.local()
        assert ctx.call(import_fns.attribute, 'pkgext.y', 'VALUE') == 'y'


def test_a_failure_serving_modules_fails_the_import_not_hangs_it(
        router: plasmid.Router, monkeypatch, caplog) -> None:
    """Whatever goes wrong on the master's side, the context's import gets
    an answer: here ModuleNotFoundError, and the master logs why."""
    finder = router.responder.finder
    find = finder._find

    def broken(fullname):
        if fullname == 'imptree_broken_finder':
            raise RuntimeError('the finder broke on ' + fullname)
        return find(fullname)
    monkeypatch.setattr(finder, '_find', broken)
    ctx = router.local(connect_timeout=30)
    future = ctx.call_async(import_fns.try_import, 'imptree_broken_finder')
    error = future.result(timeout=30)
    assert error is not None and 'imptree_broken_finder' in error
    assert 'the finder broke on imptree_broken_finder' in caplog.text


# ------------------------------------------------------ negative answers


def test_missing_module_is_asked_for_once(router: plasmid.Router) -> None:
    ctx = router.local()
    name = 'imptree_no_such_module_anywhere'
    first = ctx.call(import_fns.try_import, name)
    second = ctx.call(import_fns.try_import, name)
    assert name in first and name in second
    stats = ctx.call(importer.stats)
    assert requests_about(stats, name) == [[name]]


def test_extension_module_is_refused(router: plasmid.Router,
                                     tmp_path) -> None:
    root = str(tmp_path / 'ext')
    suffix = sysconfig.get_config_var('EXT_SUFFIX')
    import_fns.write_tree(root, {'extpkg/__init__.py': 'VALUE = 1\n',
                                 'extpkg/fast' + suffix: 'not an ELF'})
    with on_master_path(root, 'extpkg'):
        ctx = router.local()
        assert ctx.call(import_fns.attribute, 'extpkg', 'VALUE') == 1
        for _ in range(2):
            error = ctx.call(import_fns.try_import, 'extpkg.fast')
            assert error is not None and error.startswith(
                'extpkg.fast is a compiled extension module on the master')
            assert error.endswith('install it on the target')
        stats = ctx.call(importer.stats)
    assert requests_about(stats, 'extpkg.fast') == [['extpkg.fast']]
    # The negative answer is cached on the master's side too.
    assert router.responder.messages_sent[(ctx.context_id,
                                           'extpkg.fast')] == 1


def test_negative_answer_cached_by_an_intermediary(
        router: plasmid.Router) -> None:
    a = router.local(name='A')
    b = router.local(via=a, name='B')
    c = router.local(via=a, name='C')
    name = 'imptree_missing_through_a_chain'
    for child in (b, c, b):
        assert name in child.call(import_fns.try_import, name)
    assert router.responder.messages_sent[(a.context_id, name)] == 1
    assert requests_about(a.call(importer.stats), name) == [[name]]
    for child in (b, c):
        assert requests_about(child.call(importer.stats), name) == [[name]]


# -------------------------------------------------- the target's disk


def test_nothing_is_written_to_the_target_disk(
        router: plasmid.Router, tree: str, tmp_path,
        monkeypatch) -> None:
    home, tmp = tmp_path / 'home', tmp_path / 'tmp'
    home.mkdir()
    tmp.mkdir()
    # The context inherits this environment; anything it wrote to a
    # temporary file or a per-user cache would land in these.
    monkeypatch.setenv('HOME', str(home))
    monkeypatch.setenv('TMPDIR', str(tmp))
    ctx = router.local(python_path=BARE)
    env = ctx.call(import_fns.environment)
    assert env['HOME'] == str(home) and env['tempdir'] == str(tmp)
    before = sorted(_files(tree))
    assert ctx.call(import_fns.tree_facts)['leaf'] == 42
    # (Not requests: it asks certifi for a file path at import time.)
    assert ctx.call(import_fns.django_facts)['has_model']
    assert ctx.call(import_fns.get_data, 'imptree', 'data/greeting.txt') \
        == ('data', list(b'hello from imptree\n'))
    assert list(_files(str(home))) == []
    assert list(_files(str(tmp))) == []
    # The master's copy stays as it was: no .pyc written beside it.
    assert sorted(_files(tree)) == before


def _files(root: str) -> Iterator[str]:
    for dirpath, dirnames, files in os.walk(root):
        for name in files + dirnames:
            yield os.path.join(dirpath, name)


# ------------------------------------------- modules sent ahead of calls


def test_a_call_brings_its_module_along(router: plasmid.Router) -> None:
    """The master sends a direct child the called function's module ahead
    of the call: the call imports it without asking, and it crosses the
    link once however often it is called."""
    ctx = router.local(python_path=BARE)
    assert ctx.call(import_fns.version) == ctx.call(import_fns.version)
    stats = ctx.call(importer.stats)
    assert requests_about(stats, FNS) == []
    assert router.responder.messages_sent[(ctx.context_id, FNS)] == 1
    assert FNS not in stats['never_imported']


def test_a_context_started_via_a_child_costs_it_no_request(
        router: plasmid.Router) -> None:
    """Starting a context through a direct child runs connect_child there,
    which imports plasmid.connect and the method's module by name: both
    go ahead of the call."""
    via = router.local(python_path=BARE)
    inner = router.local(python_path=BARE, via=via)
    assert inner.call(os.getpid) != via.call(os.getpid)
    stats = via.call(importer.stats)
    assert requests_about(stats, 'plasmid') == []
    assert 'plasmid.connect.local' in via.call(import_fns.loaded_by_importer)
    sent = {m for (cid, m) in router.responder.messages_sent
            if cid == via.context_id}
    assert {'plasmid.connect.spawn', 'plasmid.connect.local'} <= sent


def test_a_module_the_master_does_not_serve_is_not_sent_ahead(
        router: plasmid.Router) -> None:
    ctx = router.local(python_path=BARE)
    ctx.call(os.getpid)     # standard library: the target's own wins
    assert not [m for (cid, m) in router.responder.messages_sent
                if cid == ctx.context_id]


def test_a_call_through_an_intermediary_is_served_by_it(
        router: plasmid.Router) -> None:
    """A call to a context behind an intermediary pushes the module to the
    intermediary: the context's request stops there, and the module
    crosses the master's link once."""
    via = router.local(python_path=BARE)
    inner = router.local(python_path=BARE, via=via)
    assert inner.call(import_fns.version)
    assert requests_about(via.call(importer.stats), FNS) == []
    assert requests_about(inner.call(importer.stats), FNS) == [[FNS]]
    assert router.responder.messages_sent[(via.context_id, FNS)] == 1
    assert not [m for (cid, m) in router.responder.messages_sent
                if cid == inner.context_id]


PAIR = {
    # A package whose import reaches another one: its answer names that
    # one as related, and the context asks for it at once.
    'impfirst/__init__.py': """
        from __future__ import absolute_import
        import impsecond
        NAME = 'first, then ' + impsecond.NAME
        """,
    'impsecond/__init__.py': """
        NAME = 'second'
        """,
}


@pytest.mark.parametrize('version', ['2.7', '3.6', '3.13'])
def test_an_import_the_stand_by_thread_answers_completes(
        tmp_path, version: str) -> None:
    """An import half a second into a call: the answers then arrive on the
    stand-by thread's loop while the calling thread waits in the import.
    On Python 2 that thread holds the global import lock, so the loop must
    not run an import statement (it used to, and waited for ever)."""
    root = str(tmp_path / 'pair')
    import_fns.write_tree(root, PAIR)
    with on_master_path(root, 'impfirst', 'impsecond'):
        with plasmid.Router() as router:
            ctx = router.local(python_path=require_python(version))
            future = ctx.call_async(import_fns.import_after, 0.5, 'impfirst')
            assert future.result(timeout=30) == 'impfirst'
            assert ctx.call(import_fns.attribute, 'impfirst', 'NAME') == \
                'first, then second'
