"""The accelerator's payload side, in contexts of the oldest and newest
target Pythons: zips arrive as files, those a context holds are not sent
again."""
from __future__ import annotations

import hashlib
import zlib

import pytest

import plasmid
from plasmid.ansible import target
from testbed.pythons import require_python

import target_fns


def packed(files: dict) -> dict:
    return {path: zlib.compress(text) for path, text in files.items()}


@pytest.mark.parametrize('version', ['2.7', '3.13'])
def test_a_second_zip_reuses_the_files_the_context_holds(version):
    shared = b'SHARED = 40\n'
    with plasmid.Router() as router:
        ctx = router.local(python_path=require_python(version))
        assert ctx.call(target.add_zip_files, 'one', {}, packed({
            'pkg/__init__.py': b'', 'pkg/utils.py': shared,
            'pkg/first.py': b'from pkg.utils import SHARED\nX = SHARED + 1\n',
        })) == 3
        held = ctx.call(target_fns.held_files)
        digest = hashlib.sha1(shared).hexdigest()
        init = hashlib.sha1(b'').hexdigest()
        # The second zip names the shared files by digest; only its own
        # module travels.
        assert ctx.call(target.add_zip_files, 'two', {
            'pkg/__init__.py': init, 'pkg/utils.py': digest}, packed({
                'pkg/second.py': b'from pkg.utils import SHARED\n'
                                 b'X = SHARED + 2\n'})) == 3
        assert ctx.call(target_fns.held_files) == held + 1
        assert ctx.call(target_fns.import_from_zip, 'one', 'pkg.first',
                        'X') == 41
        assert ctx.call(target_fns.import_from_zip, 'two', 'pkg.second',
                        'X') == 42
        with pytest.raises(plasmid.CallError):
            ctx.call(target.add_zip_files, 'three',
                     {'pkg/gone.py': 'f' * 40}, {})
