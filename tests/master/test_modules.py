"""What the master serves (ModuleFinder), what it sends with what
(ModuleGraph), and which package data it hands out (ModuleResponder)."""
from __future__ import annotations

import contextlib
import logging
import os
import sys
import sysconfig
import zipfile
from typing import Iterator

import pytest

# The package trees and remote functions live beside the importer tests.
_CORE_TESTS = os.path.join(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))), 'core')
if _CORE_TESTS not in sys.path:
    sys.path.insert(0, _CORE_TESTS)

import import_fns  # noqa: E402
from master_path import on_master_path  # noqa: E402
import plasmid  # noqa: E402
import request_fns  # noqa: E402
from plasmid.master import bootstrap, data_files, modules  # noqa: E402
from plasmid.master import finder as finder_module  # noqa: E402
from plasmid.master.finder import ModuleFinder  # noqa: E402
from plasmid.master.modules import ModuleGraph  # noqa: E402
from testbed.pythons import require_python  # noqa: E402


@pytest.fixture
def tree(tmp_path) -> Iterator[str]:
    root = str(tmp_path / 'tree')
    import_fns.write_tree(root, import_fns.TREE)
    with on_master_path(root, 'imptree'):
        yield root


@pytest.fixture
def finder() -> ModuleFinder:
    return ModuleFinder()


@contextlib.contextmanager
def errors_logged(logger: str) -> Iterator[list[str]]:
    """The messages of the errors *logger* logs meanwhile (caplog, without
    pytest's logging plugin)."""
    messages: list[str] = []
    handler = logging.Handler(logging.ERROR)
    handler.emit = lambda record: messages.append(record.getMessage())
    logging.getLogger(logger).addHandler(handler)
    try:
        yield messages
    finally:
        logging.getLogger(logger).removeHandler(handler)


# ------------------------------------------------------------- refusals


@pytest.mark.parametrize('name', [
    'json', 'asyncio', 'asyncio.events', 'logging.handlers',  # stdlib
    '_json', 'math',            # stdlib extensions (lib-dynload)
    'sys', 'builtins', '_imp',  # built into the interpreter
    'plasmid.master', 'plasmid.master.modules', 'plasmid.cli',  # master only
    'plasmid.files.transfer',
    # the accelerator's controller side, all but its payload
    'plasmid.ansible.broker', 'plasmid.ansible.pool', 'plasmid.ansible.zips',
    'plasmid.ansible.hangup', 'plasmid.ansible.threadworker',
    'plasmid.ansible.ssh_options',
    '__main__', 'no_such_module_anywhere', 'requests.no_such_submodule',
])
def test_finder_refuses(finder: ModuleFinder, name: str) -> None:
    entry = finder.find(name)
    assert entry.source is None and entry.name == name


def test_finder_refuses_an_extension_without_source(
        finder: ModuleFinder, tmp_path) -> None:
    root = str(tmp_path / 'ext')
    suffix = sysconfig.get_config_var('EXT_SUFFIX')
    import_fns.write_tree(root, {'extpkg/__init__.py': '',
                                 'extpkg/fast' + suffix: 'not an ELF'})
    with on_master_path(root, 'extpkg'):
        assert finder.exists('extpkg.fast')  # the master could load it
        assert finder.find('extpkg.fast').source is None
        assert finder.find('extpkg').source == ''


def test_finder_serves_the_pure_python_twin_of_an_extension(
        finder: ModuleFinder) -> None:
    # charset_normalizer (a requests dependency) ships md.py beside its
    # compiled md.*.so.
    pytest.importorskip('charset_normalizer')
    entry = finder.find('charset_normalizer.md')
    assert entry.source is not None and entry.filename.endswith('md.py')


# --------------------------------------------------------- what it serves


@pytest.mark.parametrize('name, is_pkg, tail', [
    ('requests', True, os.path.join('requests', '__init__.py')),
    ('requests.models', False, os.path.join('requests', 'models.py')),
    ('plasmid.connect.ssh', False, os.path.join('connect', 'ssh.py')),
    # the accelerator's payload, which its controller side is not
    ('plasmid.ansible', True, os.path.join('ansible', '__init__.py')),
    ('plasmid.ansible.target', False, os.path.join('ansible', 'target.py')),
    ('plasmid.ansible.warm', False, os.path.join('ansible', 'warm.py')),
])
def test_finder_serves_third_party_source(finder: ModuleFinder, name: str,
                                          is_pkg: bool, tail: str) -> None:
    pytest.importorskip(name.partition('.')[0])
    entry = finder.find(name)
    assert entry.is_pkg is is_pkg
    assert entry.filename.endswith(os.sep + tail)
    with open(entry.filename, encoding='utf-8') as handle:
        assert entry.source == handle.read()
    assert finder.find(name) is entry  # cached


def test_finder_does_not_import_what_it_serves(finder: ModuleFinder,
                                               tree: str) -> None:
    assert finder.find('imptree.unused').source.startswith('raise')
    assert 'imptree' not in sys.modules


def test_stdlib_is_known_but_not_served(finder: ModuleFinder) -> None:
    assert finder.exists('json') and finder.exists('sys')
    assert not finder.exists('no_such_module_anywhere')
    assert finder.stdlib_path('json').endswith(
        os.path.join('json', '__init__.py'))
    pytest.importorskip('requests')
    assert finder.stdlib_path('requests') is None


@pytest.mark.parametrize('name', [
    '', '.', 'a..b', '.json', 'json.', '1abc', 'a-b', 'os;id', 'os id',
    '../etc/passwd', 'imptree/data', 'imptree.data/greeting',
])
def test_finder_refuses_what_no_module_is_named_unlooked_for(
        finder: ModuleFinder, name: str, monkeypatch) -> None:
    looked_up: list[str] = []
    monkeypatch.setattr(finder, '_spec', looked_up.append)
    entry = finder.find(name)
    assert (entry.name, entry.source, entry.filename) == (name, None, None)
    assert looked_up == []


def test_finder_keeps_a_bounded_number_of_misses(monkeypatch) -> None:
    """Every name asked, made up ones too, stayed for the master's life
    (300,000 asked by a context: 300,000 entries kept, gone or not)."""
    monkeypatch.setattr(finder_module, 'MISSES_KEPT', 100)
    finder = ModuleFinder()
    graph = ModuleGraph(finder)
    made_up = ['plasmid_made_up_%d' % i for i in range(1000)]
    for name in made_up:
        graph.closure(name)  # what answering a request for it computes
    assert finder.find(made_up[-1]).source is None
    kept = [n for n in made_up if n in finder.cache or n in graph.direct or
            n in getattr(finder, 'misses', {})]
    assert len(kept) == 100
    # The last asked are kept, and one asked again stays.
    assert kept == made_up[-100:]
    finder.find(made_up[-100])
    finder.find('plasmid_made_up_more')
    assert made_up[-100] in finder.misses and made_up[-99] not in \
        finder.misses
    # What the master serves is kept whatever is asked.
    assert finder.find('plasmid.core.router') is \
        finder.find('plasmid.core.router')


# ------------------------------------------------------------ the graph


def test_edges_of_the_tree(finder: ModuleFinder, tree: str) -> None:
    graph = ModuleGraph(finder)
    cond = graph.edges('imptree.cond')
    assert cond.required == ['imptree']
    assert sorted(cond.optional) == ['imptree.only2', 'imptree.only3']
    assert 'sys' in cond.absent  # the target's own, never served
    optional = graph.edges('imptree.optional')
    assert {'imptree_missing_dependency', 'imptree_missing_pkg'} <= \
        set(optional.absent)
    leaf = graph.edges('imptree.sub.leaf')
    assert {'imptree.helpers', 'imptree.sub.deep.deepmod',
            'imptree.sub.sibling'} <= set(leaf.required)
    # Function-level imports are lazy: not followed.
    lazy = graph.edges('imptree.lazy')
    assert 'imptree.unused' not in lazy.required + lazy.optional
    assert graph.edges('imptree.cyc_a').required == ['imptree',
                                                     'imptree.cyc_b']
    assert 'imptree.cyc_a' in graph.edges('imptree.cyc_b').required


def test_closure_before_and_after_the_master_imports(finder: ModuleFinder,
                                                     tree: str) -> None:
    order, absent = ModuleGraph(finder).closure('imptree')
    assert order[-1] == 'imptree'
    assert set(order) == set(import_fns.TREE_COMMON)  # no branch taken
    assert {'imptree_missing_dependency', 'imptree_missing_pkg',
            'os', 'sys'} <= set(absent)
    # Once the master has run the tree, it knows which branch runs here.
    import imptree  # noqa: F401
    order, _ = ModuleGraph(finder).closure('imptree')
    assert set(order) == set(import_fns.TREE_IMPORTED_PY3)


def test_a_failed_optional_import_of_the_master_goes_ahead_alone(
        finder: ModuleFinder, tmp_path) -> None:
    root = str(tmp_path / 'trytree')
    import_fns.write_tree(root, import_fns.TRY_TREE)
    with on_master_path(root, 'imptry'):
        import imptry
        assert imptry.extra is None  # it failed here: no dependency
        assert 'imptry.extra' not in sys.modules
        order, absent = ModuleGraph(finder).closure('imptry')
    # The target will try imptry.extra too: it goes with the answer, and
    # the name it lacks with the negative answers; what it would import
    # after that failure does not.
    assert order == ['imptry.extra', 'imptry.base', 'imptry']
    assert 'imptry_missing_dependency' in absent


def test_closure_of_a_submodule_starts_at_its_package(
        finder: ModuleFinder, tree: str) -> None:
    order, _ = ModuleGraph(finder).closure('imptree.sub.deep.deepmod')
    assert order[-1] == 'imptree.sub.deep.deepmod'
    assert 'imptree' in order and 'imptree.sub' in order


def test_stdlib_probes_name_what_does_not_exist_here(
        finder: ModuleFinder) -> None:
    graph = ModuleGraph(finder)
    probes = graph.stdlib_probes('subprocess')
    assert probes and not any(finder.exists(p) for p in probes)
    if sys.platform != 'win32':
        assert '_winapi' in probes
    assert graph.stdlib_probes('no_such_module_anywhere') == []


def test_prepared_closures_need_no_scan_when_sent(
        tree: str, monkeypatch) -> None:
    from plasmid.master import scanner
    scans: list[str] = []
    real_load = scanner.load_code
    monkeypatch.setattr(scanner, 'load_code', lambda path, *a: (
        scans.append(path), real_load(path, *a))[1])
    with plasmid.Router() as router:
        router.responder.prepare(['imptree.sub.deep.deepmod', 'json'])
        assert scans  # prepare scanned
        del scans[:]
        order, _ = router.responder.graph.closure('imptree.sub.deep.deepmod')
        assert 'imptree.sub' in order
        assert scans == []  # nothing left to scan when it is sent


# ------------------------------------------------------- package data


@pytest.fixture
def responder(tree: str) -> Iterator:
    with plasmid.Router() as router:
        yield router.responder


def test_package_data_inside_the_package(responder, tree: str) -> None:
    assert responder.package_data('imptree', 'data/greeting.txt') == \
        ('file', b'hello from imptree\n')
    assert responder.package_data('imptree', 'data') == \
        ('dir', ['greeting.txt', 'nested'])
    assert responder.package_data('imptree', 'data/nope.txt') == \
        ('missing', None)
    # Only packages have data; never the standard library's.
    assert responder.package_data('imptree.helpers', 'data') == \
        ('missing', None)
    assert responder.package_data('json', '__init__.py') == \
        ('missing', None)


@pytest.mark.parametrize('relpath', [
    '../../etc/passwd', '../' * 20 + 'etc/passwd', '/etc/passwd',
    'data/../../imptree_outside.txt', '..',
])
def test_package_data_never_leaves_the_package(responder, tree: str,
                                               relpath: str,
                                               caplog) -> None:
    with open(os.path.join(tree, 'imptree_outside.txt'), 'w') as handle:
        handle.write('outside')
    with caplog.at_level(logging.ERROR, 'plasmid.master.modules'):
        assert responder.package_data('imptree', relpath) == \
            ('missing', None)
    assert any('outside package' in r.getMessage() for r in caplog.records)


def test_no_package_data_from_a_namespace_package(tmp_path) -> None:
    """Every directory on the master's sys.path is a namespace package (a
    "keys" beside the master's script): a context that imports one, or
    just asks, must not read the files in it."""
    root = str(tmp_path)
    os.makedirs(os.path.join(root, 'secrets_dir', 'deeper'))
    for name in ('api_key.txt', 'deeper/id_ed25519'):
        with open(os.path.join(root, 'secrets_dir', name), 'w') as handle:
            handle.write('secret')
    with on_master_path(root, 'secrets_dir'), plasmid.Router() as router:
        ctx = router.local()
        assert ctx.call(import_fns.import_facts, 'secrets_dir')['name'] == \
            'secrets_dir'  # still importable: an empty package
        for name in ('api_key.txt', 'deeper/id_ed25519'):
            assert ctx.call(import_fns.get_data, 'secrets_dir', name) == \
                ('error', 'OSError')
        assert router.responder.package_data('secrets_dir', '') == \
            ('missing', None)


@pytest.mark.parametrize('version', [None, '2.7'])
def test_a_module_too_large_to_send_fails_its_import_not_the_context(
        tmp_path, version) -> None:
    """The master could not send it (one message over max_message_size)
    and answered nothing: the import, and the call, waited for ever.  On
    Python 2 the reason was lost ("No module named"): its imports ignore
    the ImportError a finder raises."""
    root = str(tmp_path)
    with open(os.path.join(root, 'plasmid_huge_module.py'), 'w') as handle:
        handle.write('BLOB = %r\n' % os.urandom(1 << 20))  # 1.4 MB packed
    python = require_python(version) if version else None
    with on_master_path(root, 'plasmid_huge_module'), \
            plasmid.Router(max_message_size=1 << 20) as router:
        ctx = router.local(python_path=python)
        with pytest.raises(plasmid.CallError, match='plasmid_huge_module is '
                           'too large to send: a message of'):
            ctx.call_async(import_fns.import_facts,
                           'plasmid_huge_module').result(timeout=60)
        assert ctx.call(os.getpid) == ctx.info['pid']


def test_package_data_symlinks(responder, tree: str) -> None:
    data = os.path.join(tree, 'imptree', 'data')
    os.symlink('/etc/passwd', os.path.join(data, 'escape_file'))
    os.symlink('/etc', os.path.join(data, 'escape_dir'))
    os.symlink('greeting.txt', os.path.join(data, 'alias.txt'))
    assert responder.package_data('imptree', 'data/escape_file') == \
        ('missing', None)
    assert responder.package_data('imptree', 'data/escape_dir') == \
        ('missing', None)
    assert responder.package_data('imptree', 'data/escape_dir/passwd') == \
        ('missing', None)
    # A link that stays inside the package is just another name.
    assert responder.package_data('imptree', 'data/alias.txt') == \
        ('file', b'hello from imptree\n')


@pytest.mark.parametrize('relpath', [
    'master/router.py', 'master/__init__.py', 'master', 'master/',
    'cli.py', 'ansible/broker.py', 'ansible/../master/modules.py',
    'core/../cli.py', './master/router.py', 'master//router.py',
])
def test_package_data_is_never_code_the_master_keeps(
        responder, relpath: str) -> None:
    """plasmid is a package the master serves: its master-only modules,
    whose import is refused, were handed out as its data files."""
    with errors_logged('plasmid.master.data_files') as errors:
        assert responder.package_data('plasmid', relpath) == \
            ('missing', None)
    assert len(errors) == 1 and 'never sends' in errors[0]


def test_package_data_of_plasmid_is_what_contexts_import(responder) -> None:
    kind, source = responder.package_data('plasmid', 'ansible/target.py')
    assert kind == 'file' and b'AnsiballZ' in source  # the payload's
    assert responder.package_data('plasmid', 'core/router.py')[0] == 'file'
    kind, names = responder.package_data('plasmid', '')
    assert kind == 'dir' and {'__init__.py', 'core', 'ansible'} <= set(names)
    assert not {'master', 'cli.py', '__pycache__'} & set(names)
    kind, names = responder.package_data('plasmid', 'ansible')
    assert 'target.py' in names and 'broker.py' not in names


def test_package_data_is_never_bytecode(responder, tree: str) -> None:
    package = os.path.join(tree, 'imptree')
    os.makedirs(os.path.join(package, '__pycache__'))
    for relpath in ('__pycache__/core.cpython-311.pyc', 'helpers.pyc',
                    'data/old.pyo', '__pycache__/notes.txt'):
        with open(os.path.join(package, relpath), 'wb') as handle:
            handle.write(b'bytecode')
    with errors_logged('plasmid.master.data_files') as errors:
        for relpath in ('__pycache__/core.cpython-311.pyc', 'helpers.pyc',
                        'data/old.pyo', '__pycache__/notes.txt',
                        '__pycache__', 'data/OLD.PYO'):
            assert responder.package_data('imptree', relpath) == \
                ('missing', None), relpath
    assert len(errors) == 5  # not for OLD.PYO: there is none
    assert responder.package_data('imptree', 'data') == \
        ('dir', ['greeting.txt', 'nested'])
    kind, names = responder.package_data('imptree', '')
    assert 'helpers.py' in names and 'helpers.pyc' not in names
    # A module's source the master serves is data too (pkgutil.get_data).
    assert responder.package_data('imptree', 'helpers.py')[0] == 'file'


def test_package_data_from_a_zip_is_never_code_withheld(tmp_path) -> None:
    archive = zipped_tree(tmp_path)
    init_file = os.path.join(archive, 'zipped', '__init__.py')

    def read(relpath: str) -> tuple:
        return data_files.read('zipped', init_file, relpath, 1 << 20,
                               lambda name: name == 'zipped.helper')
    assert read('nosource.pyc') == read('helper.py') == ('missing', None)
    assert read('') == ('dir', ['__init__.py', 'latin.py'])
    assert read('latin.py')[0] == 'file'


def test_a_context_reads_no_master_only_code_as_data() -> None:
    with plasmid.Router() as router:
        ctx = router.local()
        for relpath in ('master/router.py', 'cli.py', 'ansible/broker.py'):
            assert ctx.call(request_fns.ask_data, 'plasmid', relpath) == \
                ('missing', None)
        assert ctx.call(request_fns.ask_data, 'plasmid',
                        'ansible/target.py')[0] == 'file'


def test_data_is_not_queued_without_bound_for_a_context_that_reads_none(
        tmp_path) -> None:
    """Each request (a few bytes) queued a file of up to half the size
    limit for a context that asked and stopped reading: without bound."""
    import time
    package = tmp_path / 'bigdata'
    package.mkdir()
    (package / '__init__.py').write_text('')
    (package / 'blob.bin').write_bytes(b'x' * (400 << 10))
    limit = 1 << 20
    with on_master_path(str(tmp_path), 'bigdata'), \
            errors_logged('plasmid.master.modules') as errors, \
            plasmid.Router(threaded=True, max_message_size=limit,
                           shutdown_timeout=1.0) as router:
        ctx = router.local()
        ctx.call_no_reply(request_fns.ask_data_and_stop_reading, 'bigdata',
                          'blob.bin', 50)
        deadline = time.monotonic() + 30
        while len([e for e in errors if 'unread yet' in e]) < 40 and \
                time.monotonic() < deadline:
            time.sleep(0.05)
        refused = len([e for e in errors if 'unread yet' in e])
        assert refused >= 40, (refused, ctx.stream.queued)
        assert ctx.stream.queued < limit + (500 << 10) + 4096


def test_a_function_of_a_module_made_at_run_time_fails_saying_why() -> None:
    """It failed with a bare "No module named 'dynmod'"."""
    import types
    module = types.ModuleType('plasmid_test_made_at_run_time')
    exec('def answer():\n    return 42\n', module.__dict__)
    sys.modules[module.__name__] = module
    try:
        with plasmid.Router() as router:
            with pytest.raises(plasmid.CallError) as info:
                router.local().call(module.answer)
    finally:
        del sys.modules[module.__name__]
    assert info.value.type_name == 'ModuleNotFoundError'
    assert 'made at run time' in info.value.message


# ------------------------------------------------------- what it sends


def test_bootstrap_modules_are_never_sent() -> None:
    # An intermediary needs plasmid.connect (not in the bootstrap) to
    # start its child; plasmid.core came with the bootstrap.
    core = {name for name, _, _ in bootstrap.core_modules()}
    with plasmid.Router() as router:
        # -S: plasmid is not installed where A runs, only its bootstrap.
        a = router.local(name='A', python_path=[sys.executable, '-S'])
        b = router.local(via=a, name='B')
        assert b.call(import_fns.version)
        sent = router.responder.messages_sent
        to_a = {m: n for (cid, m), n in sent.items() if cid == a.context_id}
    assert any(m.startswith('plasmid.connect') for m in to_a)
    assert not set(to_a) & core
    assert set(to_a.values()) == {1}


# ------------------------------------------------------ zip archives

ZIPPED = {
    'zipped/__init__.py': """
        from zipped.helper import twice
        """,
    'zipped/helper.py': """
        def twice(x):
            return x * 2
        """,
    'zipped/latin.py': """
        # -*- coding: latin-1 -*-
        WORD = 'caf\xe9'
        """,
}


def zipped_tree(tmp_path) -> str:
    """ZIPPED as a zip archive (as a zipapp or an egg holds modules)."""
    root = str(tmp_path / 'unzipped')
    import_fns.write_tree(root, ZIPPED)
    latin = os.path.join(root, 'zipped', 'latin.py')
    with open(latin, encoding='utf-8') as handle:
        text = handle.read()
    with open(latin, 'w', encoding='latin-1') as handle:
        handle.write(text)
    archive = str(tmp_path / 'lib.zip')
    with zipfile.ZipFile(archive, 'w') as out:
        for relpath in ZIPPED:
            out.write(os.path.join(root, *relpath.split('/')), relpath)
    with zipfile.ZipFile(archive, 'a') as out:  # compiled only: no source
        out.writestr('zipped/nosource.pyc', b'not really bytecode')
    return archive


def test_finder_serves_modules_from_a_zip_on_the_path(
        finder: ModuleFinder, tmp_path) -> None:
    archive = zipped_tree(tmp_path)
    with on_master_path(archive, 'zipped'):
        entry = finder.find('zipped.helper')
        assert entry.filename == os.path.join(archive, 'zipped', 'helper.py')
        assert 'def twice' in entry.source and not entry.is_pkg
        assert finder.find('zipped').is_pkg
        assert "WORD = 'caf\xe9'" in finder.find('zipped.latin').source
        assert finder.find('zipped.nosource').source is None
        assert 'zipped' not in sys.modules  # found, not imported


@pytest.mark.parametrize('version', [None, '2.7', '3.13'])
def test_contexts_import_what_the_master_has_from_a_zip(
        tmp_path, version: str | None) -> None:
    """A zipapp's or an egg's modules were never served: the context
    failed with ModuleNotFoundError."""
    archive = zipped_tree(tmp_path)
    with on_master_path(archive, 'zipped'), plasmid.Router() as router:
        ctx = router.local(python_path=version and require_python(version))
        assert ctx.call(import_fns.try_import, 'zipped') is None
        assert ctx.call(import_fns.module_file, 'zipped.helper') == \
            os.path.join(archive, 'zipped', 'helper.py')
        assert ctx.call(import_fns.attribute, 'zipped.latin', 'WORD') == \
            'caf\xe9'
        assert 'No module named' in ctx.call(import_fns.try_import,
                                             'zipped.nosource')


# ------------------------------------------- requests no importer sends


def test_a_batch_naming_a_module_many_times_gets_it_once(tree: str) -> None:
    """Each name of a batch was answered with the module again, whatever
    was sent already: a request naming one 20,000 times made the master
    queue ~1,100 times its size."""
    with plasmid.Router() as router:
        ctx = router.local()
        for origin in ('imptree_origin', 'imptree_origin', None):
            ctx.call(request_fns.ask_modules, ['imptree'] * 500, origin)
        # One the context booted with, named over and over.
        ctx.call(request_fns.ask_modules, ['plasmid.core.codec'] * 500, None)
        sent = router.responder.messages_sent
        assert sent[(ctx.context_id, 'imptree')] == 1
        assert sent[(ctx.context_id, 'plasmid.core.codec')] == 1
        assert set(n for (cid, _), n in sent.items()
                   if cid == ctx.context_id) == {1}
        assert ctx.call(import_fns.attribute, 'imptree', 'NAME') == 'imptree'


@pytest.mark.parametrize('origin', [None, 'imptree'])
def test_a_request_for_too_many_names_is_malformed(origin) -> None:
    names = ['plasmid_made_up_%d' % i
             for i in range(modules.MAX_NAMES_PER_REQUEST + 1)]
    with errors_logged('plasmid.master.modules') as errors, \
            plasmid.Router() as router:
        ctx = router.local()
        ctx.call(request_fns.ask_modules, names, origin)
        ctx.call(request_fns.ask_modules, names[:3], origin)
        answered = [name for (cid, name) in router.responder.messages_sent
                    if cid == ctx.context_id and name.startswith('plasmid_')]
    assert sorted(answered) == sorted(names[:3])
    assert len(errors) == 1 and 'malformed module request' in errors[0]


def test_names_a_context_makes_up_are_kept_only_so_many(monkeypatch) -> None:
    monkeypatch.setattr(finder_module, 'MISSES_KEPT', 100)
    names = ['plasmid_made_up_%d' % i for i in range(300)]
    with plasmid.Router() as router:
        ctx = router.local()
        for start in range(0, len(names), 100):
            ctx.call(request_fns.ask_modules, names[start:start + 100], None)
        # Answered still, though no longer kept.
        assert 'No module named' in ctx.call(import_fns.try_import,
                                             'plasmid_made_up_more')
        ctx.shutdown()
        finder = router.responder.finder
        kept = [n for n in names if n in finder.cache or n in
                router.responder.graph.direct or
                n in getattr(finder, 'misses', {})]
        assert len(kept) <= 100
