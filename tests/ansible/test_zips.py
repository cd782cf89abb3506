"""plasmid.ansible.zips: module zips split once, sent as what a context lacks."""
from __future__ import annotations

import io
import zipfile
import zlib

from plasmid.ansible import zips


def make_zip(files: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, 'w') as archive:
        archive.writestr('ansible/', b'')          # a directory entry
        for path, content in files.items():
            archive.writestr(path, content)
    return buffer.getvalue()


SHARED = b'def shared():\n    return 1\n'
FILES = {'ansible/module_utils/basic.py': SHARED,
         'ansible/modules/command.py': b'print("command")\n'}


def test_files_are_read_digested_and_compressed():
    files = zips.read_files(make_zip(FILES))
    assert [f.path for f in files] == sorted(FILES)
    for entry in files:
        assert zlib.decompress(entry.packed) == FILES[entry.path]
        assert entry.digest == zips.content_digest(FILES[entry.path])


def test_a_context_gets_only_the_contents_it_lacks():
    files = zips.read_files(make_zip(FILES))
    held = {zips.content_digest(SHARED)}
    part = zips.split(files, held)
    assert part.known == {'ansible/module_utils/basic.py':
                          zips.content_digest(SHARED)}
    assert list(part.new) == ['ansible/modules/command.py']
    assert part.new_digests == {zips.content_digest(b'print("command")\n')}
    # A context that holds nothing gets every file.
    assert set(zips.split(files, set()).new) == set(FILES)


def test_the_store_splits_a_zip_once_and_keeps_the_last_ones():
    store = zips.ZipStore(keep=2)
    assert store.get('a') is None
    first = store.add('a', make_zip(FILES))
    assert store.get('a') is first
    store.add('b', make_zip({'x.py': b'x = 1\n'}))
    store.get('a')                      # used: b is now the oldest
    store.add('c', make_zip({'y.py': b'y = 1\n'}))
    assert store.get('b') is None
    assert store.get('a') is first
    assert store.get('c') is not None


def test_a_zip_that_can_respawn_needs_the_disk():
    plain = zips.read_files(make_zip(FILES))
    assert not zips.needs_disk(plain)
    respawning = zips.read_files(make_zip(dict(FILES, **{
        zips.RESPAWN: b'def respawn_module(path):\n    pass\n'})))
    assert zips.needs_disk(respawning)
