"""The bytecode scanner: which imports a module runs, found without
running it."""
from __future__ import annotations

import importlib.util
import json
import os
import py_compile
import subprocess
import sys
import textwrap

import pytest

from plasmid.master import scanner
from plasmid.master.scanner import ImportStatement

TIMESTAMP = py_compile.PycInvalidationMode.TIMESTAMP
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))


def imports_of(source: str) -> dict[str, bool]:
    """{imported name: conditional} for the module-level imports of
    *source*; a name imported on several paths is conditional only if
    every one of them is."""
    code = compile(textwrap.dedent(source), '<test>', 'exec')
    found: dict[str, bool] = {}
    for statement in scanner.module_level_imports(code):
        found[statement.name] = found.get(statement.name, True) and \
            statement.conditional
    return found


# -------------------------------------------------------- classification


def test_branches_are_conditional_try_bodies_are_not() -> None:
    found = imports_of('''
        import plain
        try:
            import in_try
        except ImportError:
            import in_handler
        if flag:
            import in_if
        elif other:
            import in_elif
        else:
            import in_else
        for item in items:
            import in_for
        while flag:
            import in_while
        import after_branches
        ''')
    assert found == {'plain': False, 'in_try': False, 'in_handler': True,
                     'in_if': True, 'in_elif': True, 'in_else': True,
                     'in_for': True, 'in_while': True,
                     'after_branches': False}


def test_function_bodies_are_excluded_class_bodies_included() -> None:
    found = imports_of('''
        def function():
            import in_function
        class Outer:
            import in_class
            if flag:
                import in_class_branch
            def method(self):
                import in_method
            class Inner:
                import in_inner_class
        handler = lambda: __import__('in_lambda')
        ''')
    assert found == {'in_class': False, 'in_class_branch': True,
                     'in_inner_class': False}


@pytest.mark.parametrize('source, expected', [
    # The last statement of a module or class body: since 3.11 the first
    # branch ends with its own copy of the final return, so no jump
    # passes over the else branch.
    ('if flag:\n    import a\nelse:\n    import b\n',
     {'a': True, 'b': True}),
    ('class K:\n    if flag:\n        import a\n    else:\n        import b\n',
     {'a': True, 'b': True}),
    ('try:\n    import a\nexcept ImportError:\n    import b\n',
     {'a': False, 'b': True}),
    # A branch that raises ends no normal run: what follows always runs.
    ('if flag:\n    raise ImportError\nimport a\n', {'a': False}),
    ('while True:\n    import a\n    break\n', {'a': False}),
])
def test_the_last_statement_of_a_body(source: str,
                                      expected: dict[str, bool]) -> None:
    assert imports_of(source) == expected


def test_import_statement_shapes() -> None:
    code = compile(textwrap.dedent('''
        import a.b.c
        from x import y, z
        from . import sibling
        from ..parent import thing
        from .pkg import *
        '''), '<test>', 'exec')
    assert scanner.module_level_imports(code) == [
        ImportStatement('a.b.c', (), 0, False),
        ImportStatement('x', ('y', 'z'), 0, False),
        ImportStatement('', ('sibling',), 1, False),
        ImportStatement('parent', ('thing',), 2, False),
        ImportStatement('pkg', ('*',), 1, False),
    ]


def test_unclassified_scan_and_all_imports() -> None:
    code = compile('if f:\n    import a\ndef g():\n    import b\n',
                   '<test>', 'exec')
    assert scanner.module_level_imports(code, classify=False) == [
        ImportStatement('a', (), 0, False)]
    assert sorted(s.name for s in scanner.all_imports(code)) == ['a', 'b']


# ------------------------------------------------------------ resolution


@pytest.mark.parametrize('statement, importer, is_pkg, expected', [
    (ImportStatement('a.b.c', (), 0), 'm', False, ['a', 'a.b', 'a.b.c']),
    (ImportStatement('x', ('y', 'z'), 0), 'm', False, ['x', 'x.y', 'x.z']),
    # ``from . import x`` in a module and in a package's __init__
    (ImportStatement('', ('x',), 1), 'p.q.mod', False, ['p', 'p.q', 'p.q.x']),
    (ImportStatement('', ('x',), 1), 'p.q', True, ['p', 'p.q', 'p.q.x']),
    # ``from .. import x`` / ``from ..sub import y``
    (ImportStatement('', ('x',), 2), 'p.q.mod', False, ['p', 'p.x']),
    (ImportStatement('sub', ('y',), 2), 'p.q.mod', False,
     ['p', 'p.sub', 'p.sub.y']),
    (ImportStatement('', ('x',), 2), 'p.q', True, ['p', 'p.x']),
    # a star import names no submodule
    (ImportStatement('pkg', ('*',), 1), 'p.mod', False, ['p', 'p.pkg']),
    # beyond the top-level package, or relative in a top-level module
    (ImportStatement('', ('x',), 3), 'p.q.mod', False, []),
    (ImportStatement('', ('x',), 1), 'toplevel', False, []),
])
def test_resolve(statement: ImportStatement, importer: str, is_pkg: bool,
                 expected: list[str]) -> None:
    assert scanner.resolve(statement, importer, is_pkg) == expected


def test_dynamic_import_hints() -> None:
    code = compile(textwrap.dedent('''
        import importlib
        for name in ('urllib3', 'idna.core', 'not a name', 'a-b'):
            __import__(name)
        backend = importlib.import_module('pkg.backend')
        class Plugins:
            loaded = __import__('plugin_mod')
        def later():
            return __import__('lazy_mod')
        '''), '<test>', 'exec')
    hints = scanner.dynamic_import_hints(code)
    assert {'urllib3', 'idna.core', 'pkg.backend', 'plugin_mod'} <= \
        set(hints)
    assert 'not a name' not in hints and 'a-b' not in hints
    assert 'lazy_mod' not in hints  # function bodies are not followed


def test_no_hints_without_a_dynamic_import() -> None:
    code = compile("NAMES = ('urllib3', 'idna')\n", '<test>', 'exec')
    assert scanner.dynamic_import_hints(code) == []


# --------------------------------------------------- the .pyc fast path


def _write(path, text: str) -> None:
    with open(path, 'w') as handle:
        handle.write(text)


def test_fresh_pyc_gives_what_compiling_gives(tmp_path) -> None:
    path = str(tmp_path / 'fresh.py')
    _write(path, 'import os\nclass K:\n    import json\nX = [1, 2]\n')
    py_compile.compile(path, doraise=True, invalidation_mode=TIMESTAMP)
    with open(path) as handle:
        compiled = compile(handle.read(), path, 'exec', dont_inherit=True)
    assert scanner.load_code(path) == compiled


def _pyc_then_edit(tmp_path, old: str, new: str, same_stat: bool,
                   mode=TIMESTAMP) -> str:
    """Compile *old* to a pyc, then replace the source with *new*; with
    *same_stat*, the source keeps its old mtime (and size)."""
    path = str(tmp_path / 'edited.py')
    _write(path, old)
    os.utime(path, (1_600_000_000, 1_600_000_000))
    py_compile.compile(path, doraise=True, invalidation_mode=mode)
    _write(path, new)
    os.utime(path, (1_600_000_000, 1_600_000_000) if same_stat
             else (1_700_000_000, 1_700_000_000))
    return path


def _names(code) -> set[str]:
    return {s.name for s in scanner.module_level_imports(code)}


def test_fresh_pyc_is_read_not_compiled(tmp_path) -> None:
    # Same mtime and size: the pyc looks fresh, so it is what load_code
    # returns (proof that no compiling happened).
    path = _pyc_then_edit(tmp_path, 'import aaaa\n', 'import bbbb\n',
                          same_stat=True)
    assert _names(scanner.load_code(path)) == {'aaaa'}


def test_stale_pyc_is_ignored(tmp_path) -> None:
    path = _pyc_then_edit(tmp_path, 'import aaaa\n', 'import bbbb\n',
                          same_stat=False)
    assert _names(scanner.load_code(path)) == {'bbbb'}
    # The same with a change of size at the same mtime.
    path = _pyc_then_edit(tmp_path, 'import aaaa\n', 'import bbbbbb\n',
                          same_stat=True)
    assert _names(scanner.load_code(path)) == {'bbbbbb'}


def test_hash_based_and_corrupt_pycs_are_ignored(tmp_path) -> None:
    path = _pyc_then_edit(
        tmp_path, 'import aaaa\n', 'import bbbb\n', same_stat=True,
        mode=py_compile.PycInvalidationMode.CHECKED_HASH)
    assert _names(scanner.load_code(path)) == {'bbbb'}
    path = _pyc_then_edit(tmp_path, 'import aaaa\n', 'import cccc\n',
                          same_stat=True)
    cached = importlib.util.cache_from_source(path)
    with open(cached, 'r+b') as handle:
        handle.seek(16)
        handle.write(b'\xff' * 8)  # garbage where the marshal data starts
    assert _names(scanner.load_code(path)) == {'cccc'}


def test_source_given_is_used_without_reading(tmp_path) -> None:
    path = str(tmp_path / 'absent_on_disk.py')
    code = scanner.load_code(path, 'import given\n')
    assert _names(code) == {'given'} and code.co_filename == path


# ------------------------------------------- a whole real tree, cold


_COLD_SCAN = '''
import json, sys, time
from plasmid.master.finder import ModuleFinder
from plasmid.master.modules import ModuleGraph
graph = ModuleGraph(ModuleFinder())
start = time.perf_counter()
order, absent = graph.closure('django.db.models')
elapsed = time.perf_counter() - start
print(json.dumps({
    'elapsed': elapsed, 'order': order, 'absent': absent,
    'required': {m: graph.edges(m).required for m in order},
    'django_loaded': 'django' in sys.modules,
}))
'''


def test_django_db_models_tree_scan_cold() -> None:
    pytest.importorskip('django')
    # A fresh interpreter: no scan caches, no django imported.
    out = subprocess.run([sys.executable, '-c', _COLD_SCAN], cwd=ROOT,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    # Recorded, not asserted (no wall-time asserts); the budget
    # is 300 ms on the development machine.
    print('cold scan of django.db.models: %.0f ms, %d modules'
          % (result['elapsed'] * 1000, len(result['order'])))
    assert result['django_loaded'] is False  # scanned, never imported
    order = result['order']
    assert order[-1] == 'django.db.models'
    assert len(order) == len(set(order))
    assert {'django.db.models.base', 'django.utils.functional',
            'django.db.models.fields', 'asgiref.sync'} <= set(order)
    # Dependencies first: a module's required imports come before it,
    # except inside an import cycle (which Python itself resolves).
    required = result['required']
    position = {m: i for i, m in enumerate(order)}
    late = [(m, d) for m in order for d in required[m]
            if d in position and position[d] > position[m]
            and not _reaches(required, d, m)]
    assert late == []
    # Whatever the modules reach that the master cannot serve: the
    # standard library, and no module of the closure.
    assert 'os' in result['absent']
    assert not set(result['absent']) & set(order)


def _reaches(required: dict[str, list[str]], start: str, goal: str) -> bool:
    seen, stack = {start}, [start]
    while stack:
        for dep in required.get(stack.pop(), ()):
            if dep == goal:
                return True
            if dep not in seen:
                seen.add(dep)
                stack.append(dep)
    return False
