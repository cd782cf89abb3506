"""plasmid/master/cache.py: entries are reused across processes, and only
trusted when this user alone may write them; anything amiss means building
in memory, never a failure."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from plasmid.master import bootstrap, cache

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))


@pytest.fixture
def cache_dir(tmp_path, monkeypatch) -> str:
    where = str(tmp_path / 'cache')
    monkeypatch.setenv(cache.ENV, where)
    return where


class Builder:
    def __init__(self, data: bytes = b'built') -> None:
        self.data = data
        self.calls = 0

    def __call__(self) -> bytes:
        self.calls += 1
        return self.data


def entries(where: str) -> list[str]:
    return sorted(n for n in os.listdir(where) if not n.startswith('.'))


def test_an_entry_is_built_once_and_read_back(cache_dir):
    build = Builder()
    assert cache.load_or_build('k', [b'a'], build) == b'built'
    assert cache.load_or_build('k', [b'a'], build) == b'built'
    assert build.calls == 1
    assert os.stat(cache_dir).st_mode & 0o777 == 0o700
    [name] = entries(cache_dir)
    assert os.stat(os.path.join(cache_dir, name)).st_mode & 0o077 == 0
    # Other parts, another entry.
    assert cache.load_or_build('k', [b'b'], Builder(b'other')) == b'other'
    assert len(entries(cache_dir)) == 2


def test_the_parts_are_delimited():
    assert cache.key([b'ab', b'c']) != cache.key([b'a', b'bc'])


@pytest.mark.parametrize('mode', [0o770, 0o707])
def test_a_directory_others_may_write_is_not_trusted(cache_dir, mode):
    cache.load_or_build('k', [b'a'], Builder())
    os.chmod(cache_dir, mode)
    build = Builder(b'fresh')
    assert cache.load_or_build('k', [b'a'], build) == b'fresh'
    assert build.calls == 1


def test_an_entry_of_another_user_is_not_trusted(cache_dir):
    if os.geteuid() != 0:
        pytest.skip('needs root to give a file away')
    cache.load_or_build('k', [b'a'], Builder())
    [name] = entries(cache_dir)
    os.chown(os.path.join(cache_dir, name), 65534, -1)
    build = Builder(b'fresh')
    assert cache.load_or_build('k', [b'a'], build) == b'fresh'
    assert build.calls == 1


def test_a_damaged_entry_is_rebuilt(cache_dir):
    cache.load_or_build('k', [b'a'], Builder(b'x' * 100))
    [name] = entries(cache_dir)
    path = os.path.join(cache_dir, name)
    with open(path, 'r+b') as handle:
        handle.seek(-1, os.SEEK_END)
        handle.write(b'y')
    build = Builder(b'x' * 100)
    assert cache.load_or_build('k', [b'a'], build) == b'x' * 100
    assert build.calls == 1
    assert cache.load_or_build('k', [b'a'], build) == b'x' * 100
    assert build.calls == 1  # the rebuilt entry was stored


def test_off_and_unusable_directories_build_every_time(tmp_path,
                                                        monkeypatch):
    for where in ('off', str(tmp_path / 'a-file' / 'cache')):
        (tmp_path / 'a-file').write_bytes(b'')
        monkeypatch.setenv(cache.ENV, where)
        build = Builder()
        assert cache.load_or_build('k', [b'a'], build) == b'built'
        assert cache.load_or_build('k', [b'a'], build) == b'built'
        assert build.calls == 2
    assert not os.path.exists(os.path.join(str(tmp_path), 'off'))


def test_only_the_newest_entries_of_a_kind_stay(cache_dir):
    for i in range(cache.KEEP + 3):
        cache.load_or_build('k', [b'%d' % i], Builder())
        # mtimes one second apart: the order is the one they were made in
        os.utime(os.path.join(cache_dir, 'k-' + cache.key([b'%d' % i])),
                 (1000 + i, 1000 + i))
    cache.load_or_build('other', [b'a'], Builder())
    kept = entries(cache_dir)
    assert len([n for n in kept if n.startswith('k-')]) == cache.KEEP
    assert 'k-' + cache.key([b'0']) not in kept
    assert 'k-' + cache.key([b'%d' % (cache.KEEP + 2)]) in kept
    assert len([n for n in kept if n.startswith('other-')]) == 1


def test_a_named_entry_is_replaced_in_place(cache_dir):
    assert cache.read('code3.12-x') is None
    assert cache.write('code3.12-x', b'one')
    assert cache.read('code3.12-x') == b'one'
    assert cache.write('code3.12-x', b'two')
    assert cache.read('code3.12-x') == b'two'
    assert entries(cache_dir) == ['code3.12-x']
    os.chmod(cache_dir, 0o770)  # then others may write it: not trusted
    assert cache.read('code3.12-x') is None


def test_named_entries_with_the_cache_off(monkeypatch):
    monkeypatch.setenv(cache.ENV, 'off')
    assert not cache.write('code3.12-x', b'one')
    assert cache.read('code3.12-x') is None


BLOB = """
import hashlib, sys
sys.path.insert(0, %r)
from plasmid.master import bootstrap
calls = []
original = bootstrap.minify
bootstrap.minify = lambda source: calls.append(1) or original(source)
print(hashlib.sha256(bootstrap.build_blob()).hexdigest(), len(calls))
""" % ROOT


def test_a_second_master_process_reuses_the_stripped_core(cache_dir):
    def blob_in_new_process() -> list[str]:
        return subprocess.run([sys.executable, '-c', BLOB], check=True,
                              capture_output=True, text=True,
                              env=dict(os.environ)).stdout.split()
    first_digest, first_minified = blob_in_new_process()
    second_digest, second_minified = blob_in_new_process()
    assert int(first_minified) == len(bootstrap.CORE_MODULES)
    assert int(second_minified) == 0
    assert first_digest == second_digest
    assert [n.split('-')[0] for n in entries(cache_dir)] == ['core']


def test_the_names_a_context_boots_with_match_the_blob():
    assert bootstrap.core_module_names() == [
        name for name, _, _ in bootstrap.core_modules()][:-1]


def test_without_a_home_there_is_no_cache(monkeypatch):
    monkeypatch.delenv(cache.ENV, raising=False)
    monkeypatch.delenv('XDG_CACHE_HOME', raising=False)
    monkeypatch.setattr(os.path, 'expanduser', lambda path: path)
    assert cache.directory() is None
    monkeypatch.setenv('XDG_CACHE_HOME', '/somewhere')
    assert cache.directory() == '/somewhere/plasmid'
