"""Text as the system takes it (plasmid.core.ostext), where the Python
would encode it as UTF-8 and where it would not (Python 3.6 in the C
locale: the lifecycle tests start real ones through intermediaries)."""
from __future__ import annotations

import plasmid
from plasmid.core import ostext
from testbed.pythons import require_python


def test_where_text_goes_as_utf8_everything_goes_as_it_is() -> None:
    assert ostext._TEXT_IS_UTF8  # this master's Python 3.7+
    for word in ('plain', 'café', b'caf\xc3\xa9', '\udce9'):
        assert ostext.native(word) is word


def test_elsewhere_only_text_beyond_ascii_becomes_utf8_bytes(
        monkeypatch) -> None:
    monkeypatch.setattr(ostext, '_TEXT_IS_UTF8', False)
    assert ostext.native('plain') == 'plain'  # a str: as os.environ's keys
    assert ostext.native('café') == b'caf\xc3\xa9'
    assert ostext.native(b'caf\xe9') == b'caf\xe9'
    # A name that was not UTF-8 to begin with comes back as its bytes.
    assert ostext.native(b'caf\xe9'.decode('utf-8', 'surrogateescape')) \
        == b'caf\xe9'


def test_python_2_puts_escaped_bytes_back_as_python_3_does() -> None:
    """A Python 2 context sends a name that is not UTF-8 (b'data\\xff') as
    text with the byte escaped ('data\\udcff'), as Python 3 does; handed
    back, the name addressed another file (b'data\\xed\\xb3\\xbf'): its
    UTF-8 codec writes a lone surrogate as three bytes."""
    with plasmid.Router() as router:
        ctx = router.local(python_path=require_python('2.7'))
        for text, expected in [('data\udcff', b'data\xff'),
                               ('caf\u00e9\udce9x\udc80', b'caf\xc3\xa9\xe9x\x80'),
                               ('plain', b'plain'),
                               ('\U0001f600', '\U0001f600'.encode())]:
            assert ctx.call(ostext.native, text) == \
                expected.decode('utf-8', 'surrogateescape'), text
