"""Package data of modules that came from the master: importlib.resources
(where the target has it) and pkgutil.get_data, fetched from the master,
never from outside the package."""
from __future__ import annotations

import os
import sys
from typing import Iterator

import pytest

import import_fns
from master_path import on_master_path
from plasmid.master.finder import ANSIBLE_PAYLOAD
import plasmid
from testbed.pythons import require_python

BARE = [sys.executable, '-S']
GREETING = b'hello from imptree\n'


@pytest.fixture
def tree(tmp_path) -> Iterator[str]:
    root = str(tmp_path / 'tree')
    import_fns.write_tree(root, import_fns.TREE)
    with on_master_path(root, 'imptree'):
        yield root


@pytest.fixture
def ctx(tree: str) -> Iterator[plasmid.Context]:
    with plasmid.Router() as router:
        yield router.local()


def get_data(ctx: plasmid.Context, package: str, resource: str):
    """pkgutil.get_data() in *ctx*: the bytes, or the error's type name."""
    kind, value = ctx.call(import_fns.get_data, package, resource)
    return bytes(value) if kind == 'data' else value


# ------------------------------------------------- importlib.resources


@pytest.mark.parametrize('version', [None, '3.9', '3.10', '3.12', '3.13'])
def test_files_reads_a_data_file(tree: str, version) -> None:
    python = require_python(version) if version else None
    with plasmid.Router() as router:
        ctx = router.local(python_path=python)
        facts = ctx.call(import_fns.resource_facts, 'imptree',
                         'data/greeting.txt')
    assert facts == {'is_file': True, 'is_dir': False,
                     'name': 'greeting.txt', 'bytes': GREETING,
                     'text': GREETING.decode(), 'open_rb': GREETING,
                     'open_r': GREETING.decode()}


def test_files_lists_directories(ctx: plasmid.Context) -> None:
    data = ctx.call(import_fns.resource_facts, 'imptree', 'data')
    assert data['is_dir'] and not data['is_file']
    assert data['children'] == ['greeting.txt', 'nested']
    nested = ctx.call(import_fns.resource_facts, 'imptree',
                      'data/nested/deeper.txt')
    assert nested['bytes'] == b'deeper\n'
    root = ctx.call(import_fns.resource_facts, 'imptree', '')
    assert {'__init__.py', 'data', 'sub', 'cond.py'} <= \
        set(root['children'])


@pytest.mark.parametrize('version', [None, '3.7', '3.8'])
def test_legacy_resource_functions(tree: str, version) -> None:
    # Before 3.9 these go through the loader's resource reader directly.
    python = require_python(version) if version else None
    with plasmid.Router() as router:
        ctx = router.local(python_path=python)
        facts = ctx.call(import_fns.legacy_resources, 'imptree',
                         'helpers.py')
    with open(os.path.join(tree, 'imptree', 'helpers.py'), 'rb') as handle:
        assert facts['read_binary'] == handle.read()
    assert facts['is_resource'] is True
    assert {'__init__.py', 'helpers.py', 'data'} <= set(facts['contents'])


def test_missing_data_is_an_error_not_a_hang(ctx: plasmid.Context) -> None:
    assert ctx.call(import_fns.resource_error, 'imptree',
                    'data/nope.txt') == 'FileNotFoundError'


@pytest.mark.parametrize('relpath', ['../../../../etc/passwd',
                                     'data/escape'])
def test_data_outside_the_package_is_refused(ctx: plasmid.Context,
                                             tree: str,
                                             relpath: str) -> None:
    os.symlink('/etc/passwd', os.path.join(tree, 'imptree', 'data',
                                           'escape'))
    assert ctx.call(import_fns.resource_error, 'imptree', relpath) == \
        'FileNotFoundError'
    assert get_data(ctx, 'imptree', relpath) in (
        'IOError', 'OSError', 'FileNotFoundError')


def test_each_data_path_is_fetched_once(ctx: plasmid.Context) -> None:
    for _ in range(3):
        assert get_data(ctx, 'imptree', 'data/greeting.txt') == GREETING
    # One cache entry per path asked for: repeated reads use it.
    assert ctx.call(import_fns.data_requests) == [
        ('imptree', 'data/greeting.txt')]


# ------------------------------------------------------ pkgutil.get_data


@pytest.mark.parametrize('version', [None, '3.6', '2.7'])
def test_pkgutil_get_data(tree: str, version) -> None:
    python = require_python(version) if version else None
    with plasmid.Router() as router:
        ctx = router.local(python_path=python)
        assert get_data(ctx, 'imptree', 'data/greeting.txt') == GREETING
        assert get_data(ctx, 'imptree.sub.deep', '__init__.py') == \
            b'from .deepmod import BASE\n'
        assert get_data(ctx, 'imptree', 'data/nope.txt') in (
            'IOError', 'OSError')


@pytest.mark.parametrize('middle,inner', [('2.7', '3.13'), ('3.13', '2.7')])
def test_code_and_data_pass_through_an_intermediary_of_the_other_python(
        tree: str, middle: str, inner: str) -> None:
    # A Python 2 intermediary passes bytes on as its native str, which
    # Python 3 reads as text: the module's source and the data file must
    # arrive as the bytes they left the master as.
    with plasmid.Router() as router:
        via = router.local(python_path=require_python(middle))
        ctx = router.local(python_path=require_python(inner), via=via)
        assert ctx.call(import_fns.attribute, 'imptree', 'NAME') == 'imptree'
        assert get_data(ctx, 'imptree', 'data/greeting.txt') == GREETING


# --------------------------------------------------- pkgutil.iter_modules


def listed_here(*parts: str) -> list:
    """What pkgutil.iter_modules() finds in one directory here."""
    import pkgutil
    return sorted([name, is_pkg] for _, name, is_pkg in
                  pkgutil.iter_modules([os.path.join(*parts)]))


@pytest.mark.parametrize('version', [None, '2.7', '3.6', '3.13'])
def test_iter_modules_lists_a_package_from_the_master(tree: str,
                                                      version) -> None:
    """Plugins found by listing a package (pkgutil.iter_modules,
    walk_packages) were not found: its __path__ was empty."""
    python = require_python(version) if version else None
    expected = listed_here(tree, 'imptree')
    assert ['sub', True] in expected and ['helpers', False] in expected
    with plasmid.Router() as router:
        ctx = router.local(python_path=python)
        assert ctx.call(import_fns.submodules, 'imptree') == expected
        assert ctx.call(import_fns.submodules, 'imptree.sub') == \
            listed_here(tree, 'imptree', 'sub')
        walked = ctx.call(import_fns.walked, 'imptree', True)
        assert 'imptree.sub.deep.deepmod' in walked
        assert walked == import_fns.walked('imptree')
        # Imports are as they were: a submodule, and a missing one.
        assert ctx.call(import_fns.attribute, 'imptree.sub.sibling',
                        'X') == 1
        assert 'no_such' in ctx.call(import_fns.try_import,
                                     'imptree.no_such')


@pytest.mark.parametrize('version', [None, '2.7'])
def test_the_finder_iter_modules_gives_finds_what_it_listed(
        tree: str, version) -> None:
    """Plugin loaders ask the finder pkgutil hands out for the module it
    listed (it answered None: an AttributeError on None); a cleared
    sys.path_importer_cache lost the listing for good (the path hook
    makes it again)."""
    python = require_python(version) if version else None
    expected = [[name, True] for name, _ in listed_here(tree, 'imptree')]
    with plasmid.Router() as router:
        ctx = router.local(python_path=python)
        assert ctx.call(import_fns.listed_and_found, 'imptree') == expected
        assert ctx.call(import_fns.listed_and_found, 'imptree', True) == \
            expected


@pytest.mark.parametrize('middle,inner', [('2.7', '3.13'), ('3.13', '2.7')])
def test_iter_modules_through_an_intermediary(tree: str, middle: str,
                                              inner: str) -> None:
    with plasmid.Router() as router:
        via = router.local(python_path=require_python(middle))
        ctx = router.local(python_path=require_python(inner), via=via)
        assert ctx.call(import_fns.submodules, 'imptree') == \
            listed_here(tree, 'imptree')


def test_iter_modules_leaves_out_the_masters_own_modules() -> None:
    """The accelerator's package in a context lists what a context may
    import (its payload), not the controller's side (never sent)."""
    from plasmid import ansible
    with plasmid.Router() as router:
        listed = router.local().call(import_fns.submodules, 'plasmid.ansible')
    names = {name for name, _ in listed}
    here = {name for name, _ in listed_here(ansible.__path__[0])}
    assert 'broker' in here and 'broker' not in names
    assert names == {name for name in here
                     if 'plasmid.ansible.' + name in ANSIBLE_PAYLOAD}


# ------------------------------------------ zips and files too large


@pytest.mark.parametrize('version', [None, '2.7'])
def test_data_of_a_package_imported_from_a_zip(tmp_path, version) -> None:
    """The master read data files with os.path only: inside a zip on its
    sys.path every one was "missing"."""
    import zipfile
    archive = str(tmp_path / 'app.zip')
    with zipfile.ZipFile(archive, 'w') as opened:
        opened.writestr('zipdata/__init__.py', 'NAME = "zipdata"\n')
        opened.writestr('zipdata/d.txt', GREETING)
        opened.writestr('zipdata/sub/e.txt', b'deeper\n')
    python = require_python(version) if version else None
    with on_master_path(archive, 'zipdata'), plasmid.Router() as router:
        ctx = router.local(python_path=python)
        assert get_data(ctx, 'zipdata', 'd.txt') == GREETING
        assert get_data(ctx, 'zipdata', 'sub/e.txt') == b'deeper\n'
        assert get_data(ctx, 'zipdata', 'nope.txt') in ('IOError', 'OSError')
        assert get_data(ctx, 'zipdata', '../zipdata/d.txt') == GREETING
        if version is None:
            listing = ctx.call(import_fns.resource_facts, 'zipdata', '')
            assert listing['children'] == ['__init__.py', 'd.txt', 'sub']


def test_a_data_file_too_large_for_a_message_says_so(tree: str) -> None:
    """It was said to be missing (no data file) instead."""
    with open(os.path.join(tree, 'imptree', 'data', 'big.bin'), 'wb') as f:
        f.write(b'x' * 5000)
    with plasmid.Router(max_message_size=8192) as router:
        ctx = router.local()
        error = ctx.call(import_fns.get_data_error, 'imptree', 'data/big.bin')
        assert error == ('imptree: data file data/big.bin is 5000 bytes, '
                         'beyond the 4096 a message may carry (half the '
                         "router's max_message_size)")
        facts = ctx.call(import_fns.resource_facts, 'imptree', 'data')
        assert 'big.bin' in facts['children']
        assert ctx.call(import_fns.resource_error, 'imptree',
                        'data/big.bin') == 'OSError'


# ------------------------------------------------ importlib.metadata


@pytest.mark.parametrize('version', [None, '3.8', '3.13'])
def test_a_distribution_installed_on_the_master_answers_metadata(
        version) -> None:
    """A package that asks its own version as it is imported
    (``metadata.version("prompt_toolkit")``) failed with
    PackageNotFoundError: no metadata was shipped."""
    import importlib.metadata
    python = [require_python(version) if version else sys.executable, '-S']
    with plasmid.Router() as router:
        ctx = router.local(python_path=python)  # no site-packages there
        facts = ctx.call(import_fns.distribution_facts, 'pytest')
        missing = ctx.call(import_fns.distribution_facts,
                           'plasmid-no-such-distribution')
    assert facts['version'] == importlib.metadata.version('pytest')
    assert 'pytest' in facts['scripts']
    assert missing == 'PackageNotFoundError'


@pytest.mark.parametrize('version', ['3.12', '3.13'])
def test_a_distributions_files_are_listed_without_failing(version) -> None:
    """``files`` asks each file's located path whether it exists, 3.12+:
    a pure path failed with AttributeError."""
    with plasmid.Router() as router:
        ctx = router.local(python_path=[require_python(version), '-S'])
        assert ctx.call(import_fns.distribution_files, 'pytest') == 0


@pytest.mark.parametrize('version', ['2.7', '3.7'])
def test_before_3_8_no_distribution_is_answered(version) -> None:
    """The importlib_metadata backport asks every finder; building an
    answer needs importlib.metadata, which is not there: the backport's
    own PackageNotFoundError must come, not an ImportError from us."""
    with plasmid.Router() as router:
        ctx = router.local(python_path=require_python(version))
        assert ctx.call(import_fns.our_distributions, 'pytest') == []


# ------------------------------------------------- a real distribution


def test_certifi_bundle_in_a_bare_context() -> None:
    certifi = pytest.importorskip('certifi')
    with plasmid.Router() as router:
        ctx = router.local(python_path=BARE)
        path, head = ctx.call(import_fns.certifi_where)
        # The core's data reader (not in the bootstrap) came ahead of
        # certifi, which imports importlib.resources: no request of its own.
        requests = ctx.call(import_fns.module_requests)
    assert requests == [['certifi']], requests
    # certifi asks importlib.resources for a real path: it gets a
    # temporary copy of the master's bundle (certifi's own choice).
    with open(certifi.where(), 'rb') as handle:
        assert head == handle.read(64)
    assert path != certifi.where()
