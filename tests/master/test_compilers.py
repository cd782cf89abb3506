"""plasmid/master/compilers.py: contexts on another Python version than the
master's get bytecode a helper of their version compiled, from the second
context on (or the first, from the disk cache); whatever goes wrong with a
helper, they get source and compile it themselves, and nothing waits.

Counted, never timed: which files a context compiled during an import."""
from __future__ import annotations

import logging
import os
import stat
import sys
import threading
import zlib
from typing import Iterator

import pytest

_CORE_TESTS = os.path.join(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))), 'core')
if _CORE_TESTS not in sys.path:
    sys.path.insert(0, _CORE_TESTS)

import import_fns  # noqa: E402
from master_path import on_master_path  # noqa: E402
import plasmid  # noqa: E402
from plasmid.core.importer import ModuleEntry  # noqa: E402
from plasmid.core.loop import Loop  # noqa: E402
from plasmid.master import cache, compilers  # noqa: E402
from testbed.pythons import require_python  # noqa: E402

# Not the master's minor version: a context there cannot run its code.
FOREIGN = '3.12' if sys.version_info[:2] != (3, 12) else '3.11'
FOREIGN_VERSION = tuple(int(n) for n in FOREIGN.split('.'))
FILES = {
    'impforeign/__init__.py': 'from impforeign import one, two\n',
    'impforeign/one.py': 'VALUE = 1\n',
    'impforeign/two.py': 'from impforeign.one import VALUE\n'
                         'DOUBLE = 2 * VALUE\n',
}
MODULES = ['impforeign', 'impforeign.one', 'impforeign.two']


@pytest.fixture
def tree(tmp_path, monkeypatch) -> Iterator[str]:
    monkeypatch.setenv(cache.ENV, str(tmp_path / 'cache'))
    root = str(tmp_path / 'tree')
    import_fns.write_tree(root, FILES)
    with on_master_path(root, 'impforeign'):
        yield root


@pytest.fixture
def foreign_python() -> str:
    return require_python(FOREIGN)


def compiled_by_context(router: plasmid.Router, python: str) -> list[str]:
    """The tree's files a fresh context on *python* compiled to import
    the package (the master's code ran for the others)."""
    ctx = router.local(python_path=python)
    try:
        names = ctx.call(import_fns.compiles_during_import, 'impforeign',
                         'impforeign')
        assert ctx.call(import_fns.attribute, 'impforeign.two',
                        'DOUBLE') == 2
    finally:
        ctx.shutdown(wait=True)
    return [os.path.basename(n) for n in names]  # all in impforeign/


def helpers_of(router: plasmid.Router) -> compilers.ForeignCompilers:
    found = router.responder.compilers
    assert found is not None
    return found


def test_a_later_context_of_another_version_runs_the_helpers_code(
        tree, foreign_python) -> None:
    with plasmid.Router(compilers={FOREIGN: foreign_python}) as router:
        # The first compiles as without a helper: nothing waited for it.
        assert compiled_by_context(router, foreign_python) == \
            ['__init__.py', 'one.py', 'two.py']
        assert helpers_of(router).wait_idle(60)
        # The first call's own module too, sent before HELLO.
        assert sorted(name for (version, name), code
                      in helpers_of(router).known.items()
                      if version == FOREIGN_VERSION and code) == \
            sorted(MODULES + ['import_fns'])
        assert compiled_by_context(router, foreign_python) == []
        helper = helpers_of(router).helpers[FOREIGN_VERSION]
    # Shutting the router down ended the helper.
    assert helper is not None and helper.process.poll() is not None


def test_a_first_calls_module_is_compiled_for_the_next_context(
        tmp_path, monkeypatch, foreign_python) -> None:
    # The package a first call needs goes ahead of it, before HELLO: the
    # version from the ready marker has the helper compile it too (the
    # accelerator's target code, shipped so to every host).
    monkeypatch.setenv(cache.ENV, str(tmp_path / 'cache'))
    root = str(tmp_path / 'calltree')
    import_fns.write_tree(root, {
        'impcall/__init__.py': 'from impcall.half import HALF\n'
                               'def answer():\n    return 2 * HALF\n',
        'impcall/half.py': 'HALF = 21\n'})
    names = ['impcall', 'impcall.half']
    with on_master_path(root, 'impcall'), \
            plasmid.Router(compilers={FOREIGN: foreign_python}) as router:
        import impcall
        arrived = []
        for _ in range(2):
            ctx = router.local(python_path=foreign_python)
            assert ctx.call(impcall.answer) == 42
            arrived.append(ctx.call(import_fns.arrived_with_code, names))
            assert helpers_of(router).wait_idle(60)
    assert arrived == [dict.fromkeys(names, False),
                       dict.fromkeys(names, True)]


@pytest.mark.parametrize('version', [
    v for v in ['3.6', '3.7', '3.8', '3.9', '3.10', '3.11', '3.12', '3.13']
    if v != '%d.%d' % sys.version_info[:2]])
def test_each_python3_version_runs_its_helpers_code(tree, version) -> None:
    python = require_python(version)
    with plasmid.Router(compilers={version: python}) as router:
        assert compiled_by_context(router, python) == \
            ['__init__.py', 'one.py', 'two.py']
        assert helpers_of(router).wait_idle(60)
        assert compiled_by_context(router, python) == []


def test_an_intermediary_of_that_version_passes_the_code_on(
        tree, foreign_python) -> None:
    # A bastion on the targets' version, started once the helper has
    # compiled: its children of that version get the helper's code too.
    with plasmid.Router(compilers={FOREIGN: foreign_python}) as router:
        compiled_by_context(router, foreign_python)
        assert helpers_of(router).wait_idle(60)
        bastion = router.local(python_path=foreign_python, name='bastion')
        behind = router.local(python_path=foreign_python, via=bastion)
        assert behind.call(import_fns.compiles_during_import, 'impforeign',
                           'impforeign') == []
        assert behind.call(import_fns.arrived_with_code, MODULES) == \
            dict.fromkeys(MODULES, True)


def test_an_intermediary_sent_source_gets_the_code_once_compiled(
        tree, foreign_python) -> None:
    # The first import of the version comes through the bastion while
    # the helper has compiled nothing: the bastion keeps source, and all
    # its later children compiled for themselves until it got the code.
    with plasmid.Router(compilers={FOREIGN: foreign_python}) as router:
        bastion = router.local(python_path=foreign_python, name='bastion')
        first = router.local(python_path=foreign_python, via=bastion)
        assert first.call(import_fns.compiles_during_import, 'impforeign',
                          'impforeign') != []
        assert helpers_of(router).wait_idle(60)
        assert bastion.call(import_fns.arrived_with_code, MODULES) == \
            dict.fromkeys(MODULES, True)
        later = router.local(python_path=foreign_python, via=bastion)
        assert later.call(import_fns.compiles_during_import, 'impforeign',
                          'impforeign') == []
        assert later.call(import_fns.attribute, 'impforeign.two',
                          'DOUBLE') == 2
        updates = router.responder.code_updates
        assert {m: updates[(bastion.context_id, m)] for m in MODULES} == \
            dict.fromkeys(MODULES, 1)
        # Only the bastion: its children are no direct children.
        assert {cid for cid, _ in updates} == {bastion.context_id}
        assert router.responder.owed == {}


def test_intermediaries_of_that_version_further_down_get_the_code_too(
        tree, foreign_python) -> None:
    # master -> outer -> inner -> contexts: inner got the modules from
    # outer as source, so the code goes to both (to inner through outer).
    with plasmid.Router(compilers={FOREIGN: foreign_python}) as router:
        outer = router.local(python_path=foreign_python, name='outer')
        inner = router.local(python_path=foreign_python, via=outer,
                             name='inner')
        first = router.local(python_path=foreign_python, via=inner)
        assert first.call(import_fns.compiles_during_import, 'impforeign',
                          'impforeign') != []
        assert helpers_of(router).wait_idle(60)
        later = router.local(python_path=foreign_python, via=inner)
        assert later.call(import_fns.compiles_during_import, 'impforeign',
                          'impforeign') == []
        for relay in (outer, inner):
            assert relay.call(import_fns.arrived_with_code, MODULES) == \
                dict.fromkeys(MODULES, True)
        updates = router.responder.code_updates
        assert {cid for cid, _ in updates} == \
            {outer.context_id, inner.context_id}
        # The leaves were sent nothing again, and nothing is kept.
        assert router.responder.owed == {}


# imppair imports a module of another package: that package's answer
# names the module as coming after it.
PAIR = {
    'imppair/__init__.py': 'import impsub.inner\nVALUE = impsub.inner.X\n',
    'impsub/__init__.py': '',
    'impsub/inner.py': 'X = 3\n',
}


def refusing_helper(tmp_path, python: str, refused: str) -> str:
    """A helper that will not compile files named *refused*."""
    fake = tmp_path / 'refusing-python'
    fake.write_text(
        '#!/bin/sh\nexec %s -I -c "import sys; sys.path.insert(0, %r)\n'
        'import compile_worker as w\nreal = w.answer\n'
        'w.answer = lambda f, s: b\'-refused\' if %r in f else real(f, s)\n'
        'w.main()"\n' % (python, os.path.dirname(compilers.WORKER),
                          refused.encode()))
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    return str(fake)


def test_an_intermediary_that_never_held_the_modules_serves_them_whole(
        foreign_python, tmp_path, monkeypatch) -> None:
    # idle's child imported nothing before the code came: idle is sent
    # the modules all the same (impsub.inner not: it does not compile
    # there), and must serve them as any other, never counting on a
    # module that will not come.
    monkeypatch.setenv(cache.ENV, str(tmp_path / 'cache'))
    root = str(tmp_path / 'pair')
    import_fns.write_tree(root, PAIR)
    helper = refusing_helper(tmp_path, foreign_python, 'inner.py')
    with on_master_path(root, 'imppair', 'impsub'), \
            plasmid.Router(compilers={FOREIGN: helper}) as router:
        outer = router.local(python_path=foreign_python, name='outer')
        busy = router.local(python_path=foreign_python, via=outer)
        idle = router.local(python_path=foreign_python, via=outer)
        router.local(python_path=foreign_python, via=idle)
        router.local(python_path=foreign_python, via=busy).call(
            import_fns.compiles_during_import, 'imppair', 'imp')
        assert helpers_of(router).wait_idle(60)
        updates = router.responder.code_updates
        assert (idle.context_id, 'impsub') in updates
        assert (idle.context_id, 'impsub.inner') not in updates
        later = router.local(python_path=foreign_python, via=idle)
        compiled = later.call_async(import_fns.compiles_during_import,
                                    'imppair', 'imp').result(timeout=30)
        assert [os.path.basename(n) for n in compiled] == ['inner.py']
        assert later.call(import_fns.attribute, 'imppair', 'VALUE') == 3


def test_a_context_with_no_children_is_not_sent_the_code_again(
        tree, foreign_python) -> None:
    with plasmid.Router(compilers={FOREIGN: foreign_python}) as router:
        ctx = router.local(python_path=foreign_python)
        assert ctx.call(import_fns.compiles_during_import, 'impforeign',
                        'impforeign') != []
        assert helpers_of(router).wait_idle(60)
        assert ctx.call(import_fns.arrived_with_code, MODULES) == \
            dict.fromkeys(MODULES, False)
        assert not router.responder.code_updates
        assert router.responder.owed == {}


def test_whoever_waits_for_a_queued_module_gets_its_code_once(
        foreign_python, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv(cache.ENV, str(tmp_path / 'cache'))
    loop = Loop()
    found = compilers.ForeignCompilers(loop, {FOREIGN_VERSION: foreign_python})
    good = ModuleEntry('good', False, 'X = 1\n', '/x/good.py')
    bad = ModuleEntry('bad', False, 'def (:\n', '/x/bad.py')
    handed: list = []
    try:
        # Not queued yet: nothing to wait for.
        assert not found.when_compiled(FOREIGN_VERSION, 'good', handed.append)
        assert found.code(FOREIGN_VERSION, good) is None
        assert found.code(FOREIGN_VERSION, bad) is None
        assert found.when_compiled(FOREIGN_VERSION, 'good', handed.append)
        assert found.when_compiled(FOREIGN_VERSION, 'bad', handed.append)
        assert found.wait_idle(60)
        # Compiled: its code is known, so there is no waiting any more.
        assert not found.when_compiled(FOREIGN_VERSION, 'good',
                                       handed.append)
    finally:
        found.close()
        loop.close()
    assert handed == [found.known[(FOREIGN_VERSION, 'good')]]
    assert handed[0] is not None and found.waiters == {}


def test_the_next_master_serves_the_code_from_the_disk_cache(
        tree, foreign_python) -> None:
    with plasmid.Router(compilers={FOREIGN: foreign_python}) as router:
        compiled_by_context(router, foreign_python)
        assert helpers_of(router).wait_idle(60)
    with plasmid.Router(compilers={FOREIGN: foreign_python}) as router:
        assert compiled_by_context(router, foreign_python) == []
        # Nothing was queued: no helper started.
        assert helpers_of(router).helpers == {}


def test_code_cached_for_other_source_is_not_used(
        tree, foreign_python) -> None:
    with plasmid.Router(compilers={FOREIGN: foreign_python}) as router:
        compiled_by_context(router, foreign_python)
        assert helpers_of(router).wait_idle(60)
    with open(os.path.join(tree, 'impforeign', 'one.py'), 'w') as handle:
        handle.write('VALUE = 1  # edited\n')
    with plasmid.Router(compilers={FOREIGN: foreign_python}) as router:
        assert compiled_by_context(router, foreign_python) == ['one.py']


def test_the_disk_cache_keeps_the_newest_entries_of_a_version(
        tree, foreign_python, tmp_path, monkeypatch) -> None:
    where = str(tmp_path / 'cache')
    with plasmid.Router(compilers={FOREIGN: foreign_python}) as router:
        compiled_by_context(router, foreign_python)
        assert helpers_of(router).wait_idle(60)
    kind = 'code%s-' % FOREIGN
    older = sorted(n for n in os.listdir(where) if n.startswith(kind))
    assert len(older) == 4  # the package's three, and import_fns
    for name in older:
        os.utime(os.path.join(where, name), (1000, 1000))
    with open(os.path.join(tree, 'impforeign', 'one.py'), 'w') as handle:
        handle.write('VALUE = 1  # edited\n')
    monkeypatch.setattr(compilers, 'CODE_KEPT', 2)
    with plasmid.Router(compilers={FOREIGN: foreign_python}) as router:
        assert compiled_by_context(router, foreign_python) == ['one.py']
        assert helpers_of(router).wait_idle(60)
    kept = [n for n in os.listdir(where) if n.startswith(kind)]
    assert len(kept) == 2
    newest = max(kept, key=lambda n: os.stat(os.path.join(where, n)).st_mtime)
    assert os.stat(os.path.join(where, newest)).st_mtime > 1000


def test_a_helper_that_cannot_start_or_is_another_version_leaves_source(
        tree, foreign_python, caplog) -> None:
    other = require_python('3.13' if FOREIGN != '3.13' else '3.10')
    for python, said in [('/nonexistent/python', 'did not start'),
                         (other, 'is Python 3.')]:
        caplog.clear()
        with plasmid.Router(compilers={FOREIGN: python}) as router:
            for _ in range(2):
                assert compiled_by_context(router, foreign_python) == \
                    ['__init__.py', 'one.py', 'two.py']
                assert helpers_of(router).wait_idle(60)
            assert helpers_of(router).helpers == {FOREIGN_VERSION: None}
        warnings = [r.getMessage() for r in caplog.records
                    if r.name == 'plasmid.master.compilers' and
                    r.levelno == logging.WARNING]
        assert len(warnings) == 1 and said in warnings[0], warnings


def test_a_silent_helper_is_killed_at_the_timeout(
        tree, foreign_python, tmp_path, monkeypatch, caplog) -> None:
    # It says hello as a helper of the right version, then reads nothing.
    fake = tmp_path / 'silent-python'
    fake.write_text('#!/bin/sh\necho "%s 00000000"\nexec sleep 600\n'
                    % FOREIGN)
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setattr(compilers, 'TIMEOUT', 1.0)
    with plasmid.Router(compilers={FOREIGN: str(fake)}) as router:
        assert compiled_by_context(router, foreign_python) == \
            ['__init__.py', 'one.py', 'two.py']
        assert helpers_of(router).wait_idle(30)
        assert helpers_of(router).helpers == {FOREIGN_VERSION: None}
        assert compiled_by_context(router, foreign_python) == \
            ['__init__.py', 'one.py', 'two.py']
    assert any('said nothing for 1 s' in r.getMessage()
               for r in caplog.records if r.levelno == logging.WARNING)


def test_a_helper_that_says_more_than_asked_is_dropped(
        tree, foreign_python, tmp_path, caplog) -> None:
    # A right hello, then an answer nobody asked for.
    fake = tmp_path / 'chatty-python'
    fake.write_text('#!/bin/sh\nprintf "%s 00000000\\n\\000\\000\\000\\001+"\n'
                    'exec sleep 600\n' % FOREIGN)
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    with plasmid.Router(compilers={FOREIGN: str(fake)}) as router:
        assert compiled_by_context(router, foreign_python) == \
            ['__init__.py', 'one.py', 'two.py']
        assert helpers_of(router).wait_idle(30)
        assert helpers_of(router).helpers == {FOREIGN_VERSION: None}
        assert compiled_by_context(router, foreign_python) == \
            ['__init__.py', 'one.py', 'two.py']
    assert any('said what it was not asked' in r.getMessage()
               for r in caplog.records if r.levelno == logging.WARNING)


def test_a_module_the_helper_cannot_compile_goes_as_source(
        foreign_python, tmp_path, monkeypatch, caplog) -> None:
    monkeypatch.setenv(cache.ENV, str(tmp_path / 'cache'))
    caplog.set_level(logging.DEBUG, logger='plasmid.master.compilers')
    loop = Loop()
    found = compilers.ForeignCompilers(loop, {FOREIGN_VERSION: foreign_python})
    entries = [ModuleEntry('bad', False, 'def (:\n', '/x/bad.py'),
               # after it, the helper goes on
               ModuleEntry('good', False, 'X = 1\n', '/x/good.py'),
               # a file name with bytes that are not UTF-8 (os.fsdecode's)
               ModuleEntry('odd', False, 'X = 1\n', '/x/b\udcffd.py')]
    try:
        assert [found.code(FOREIGN_VERSION, e) for e in entries] == \
            [None] * 3  # queued
        assert found.wait_idle(60)
        codes = [found.code(FOREIGN_VERSION, e) for e in entries]
    finally:
        found.close()
        loop.close()
    assert codes[0] is None
    assert any(r.getMessage().startswith('bad does not compile on Python '
                                         '%s: SyntaxError' % FOREIGN)
               for r in caplog.records)
    for magic, packed in codes[1:]:
        assert len(magic) == 4 and packed
    assert 'b\udcffd.py'.encode('utf-8', 'surrogatepass') in \
        zlib.decompress(codes[2][1])


def test_a_threadless_master_starts_no_thread_for_its_helper(
        tree, foreign_python) -> None:
    before = threading.active_count()
    with plasmid.Router(compilers={FOREIGN: foreign_python}) as router:
        compiled_by_context(router, foreign_python)
        assert helpers_of(router).wait_idle(60)
        assert compiled_by_context(router, foreign_python) == []
        assert threading.active_count() == before


def test_closing_leaves_nothing_queued(foreign_python, tmp_path,
                                      monkeypatch) -> None:
    monkeypatch.setenv(cache.ENV, str(tmp_path / 'cache'))
    loop = Loop()
    found = compilers.ForeignCompilers(loop, {FOREIGN_VERSION: foreign_python})
    entries = [ModuleEntry('m%d' % i, False, 'X = %d\n' % i, '/x/m%d.py' % i)
               for i in range(50)]
    try:
        for entry in entries:
            found.code(FOREIGN_VERSION, entry)
        # Until the first answer: the helper started, one module asked.
        assert loop.run_until(lambda: len(found.queued) < 50, 60)
        helper = found.helpers[FOREIGN_VERSION]
    finally:
        found.close()
        loop.close()
    assert found.queued == set()
    assert helper.process.poll() is not None
    assert found.code(FOREIGN_VERSION, ModuleEntry(
        'late', False, 'X = 1\n', '/x/late.py')) is None


def test_a_python2_context_gets_no_code_and_starts_no_helper(
        tree, foreign_python) -> None:
    python2 = require_python('2.7')
    with plasmid.Router(compilers={FOREIGN: foreign_python}) as router:
        ctx = router.local(python_path=python2)
        assert ctx.call(import_fns.attribute, 'impforeign.two',
                        'DOUBLE') == 2
        assert helpers_of(router).known == {}
        assert helpers_of(router).helpers == {}


@pytest.mark.parametrize('given, complaint', [
    ('python3.12', "compilers must be 'path'"),
    ({3.12: '/usr/bin/python3.12'}, 'is not a Python 3 version'),
    ({'2.7': '/usr/bin/python2.7'}, 'is not a Python 3 version'),
    ({'3.12': ''}, 'must be a path or command'),
])
def test_bad_compilers_are_refused(given, complaint) -> None:
    with pytest.raises(ValueError, match=complaint):
        plasmid.Router(compilers=given)


def test_no_bytecode_means_no_helpers() -> None:
    with plasmid.Router(send_bytecode=False) as router:
        assert router.responder.compilers is None
    with plasmid.Router(compilers=None) as router:
        assert router.responder.compilers is None
