"""plasmid.master.bootstrap: the compressed core, its size and its packing."""
from __future__ import annotations

import ast
import zlib

import pytest

from plasmid.master import bootstrap

# The project's target for what every new context receives before it runs.
CORE_LIMIT = 16 * 1024


def test_the_compressed_core_stays_under_16_kib() -> None:
    # zopfli is a dependency: the budget is for an installed plasmid.
    assert bootstrap.compressor() == 'zopfli'
    assert len(bootstrap.build_blob()) < CORE_LIMIT


def test_without_zopfli_zlib_packs_the_same_script(monkeypatch) -> None:
    sources = bootstrap._core_sources()
    by_zopfli = bootstrap._compress(sources)
    monkeypatch.setattr(bootstrap, 'zopfli_compress', None)
    assert bootstrap.compressor() == 'zlib'
    by_zlib = bootstrap._compress(sources)
    assert zlib.decompress(by_zlib) == zlib.decompress(by_zopfli)
    assert len(by_zopfli) < len(by_zlib)


def _packed_modules(blob: bytes) -> list[tuple[str, bool, str]]:
    """What the blob carries, read back by its first statement."""
    script = zlib.decompress(blob).decode('ascii')
    first = ast.parse(script).body[0]
    assert isinstance(first, ast.Assign)
    assert first.targets[0].id == '_PLASMID_TEXT'
    text = ast.literal_eval(first.value)
    modules = []
    for part in text.split(bootstrap.MODULE_MARK)[1:]:
        header, _, source = part.partition('\n')
        name, package = header.split(' ')
        modules.append((name, package == '1', source))
    return modules


def test_the_blob_carries_each_core_module_as_stripped() -> None:
    assert _packed_modules(bootstrap.build_blob()) == bootstrap.core_modules()


def test_code_that_cannot_be_packed_raw_is_refused() -> None:
    for source in ["x = '''a'''\n", "x = 1 ''' '''\n", 'x = 1\n#%y 0\n']:
        with pytest.raises(ValueError):
            bootstrap.packed([('m', False, source)])


def test_indents_narrow_only_where_the_code_means_the_same() -> None:
    plain = 'def f(x):\n    if x:\n        return 1\n    return 2\n'
    assert bootstrap._one_space_indents(plain) == \
        'def f(x):\n if x:\n  return 1\n return 2\n'
    # A string over several lines would change: such code stays as it is.
    spanning = 'def f():\n    return """a\n    b"""\n'
    assert bootstrap._one_space_indents(spanning) == spanning
