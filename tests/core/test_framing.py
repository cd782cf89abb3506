"""Frames: a 22-byte header ('PL', dst, src, handle, reply_to, length) and a
body.  The reader reassembles them however the bytes are split, and
refuses a bad magic or an oversized length as soon as the header is in,
before any of the body has to arrive."""
from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from plasmid.core import codec
from plasmid.core.errors import ProtocolError
from plasmid.core.framing import (DEFAULT_MAX_MESSAGE, HEADER, MAGIC,
                                  FrameReader, Message)

U32 = 2 ** 32 - 1


def fields(msg: Message) -> tuple:
    return (msg.dst, msg.src, msg.handle, msg.reply_to, msg.data)


def sample_messages() -> list[Message]:
    return [
        Message.encoding(1, 0, 1, ('os', 'getpid', (), {}), reply_to=1000),
        Message(0, 1, 8, 0, b''),                       # empty body
        Message(U32, U32, U32, U32, b'\x00PL' * 50),    # extremes, 'PL' inside
        Message.encoding(7, 3, 2, {'text': 'x' * 300}),
    ]


def test_header_layout() -> None:
    msg = Message(1, 2, 3, 4, b'body')
    raw = msg.to_bytes()
    assert HEADER.size == 22
    assert raw == b'PL' + struct.pack('>IIIII', 1, 2, 3, 4, 4) + b'body'


def test_message_value_decodes_its_body() -> None:
    msg = Message.encoding(5, 0, 1, [1, 'two', b'3'], reply_to=9)
    assert msg.value() == [1, 'two', b'3']
    assert msg.data == codec.encode([1, 'two', b'3'])
    assert msg.reply_to == 9 and msg.stream is None


def test_many_frames_in_one_feed() -> None:
    sent = sample_messages()
    reader = FrameReader()
    got = reader.feed(b''.join(m.to_bytes() for m in sent))
    assert [fields(m) for m in got] == [fields(m) for m in sent]
    assert reader.pending() == 0


def test_frames_split_at_every_byte_boundary() -> None:
    sent = sample_messages()
    wire = b''.join(m.to_bytes() for m in sent)
    for cut in range(len(wire) + 1):
        reader = FrameReader()
        got = reader.feed(wire[:cut])
        # Only frames that are wholly in the first part come out of it.
        assert sum(len(m.to_bytes()) for m in got) <= cut
        assert reader.pending() == cut - sum(len(m.to_bytes()) for m in got)
        got += reader.feed(wire[cut:])
        assert [fields(m) for m in got] == [fields(m) for m in sent], cut
        assert reader.pending() == 0


def test_frames_fed_one_byte_at_a_time() -> None:
    sent = sample_messages()
    reader = FrameReader()
    got = []
    for byte in b''.join(m.to_bytes() for m in sent):
        got += reader.feed(bytes([byte]))
    assert [fields(m) for m in got] == [fields(m) for m in sent]
    assert reader.pending() == 0


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.integers(0, U32), st.integers(0, U32),
                          st.integers(0, U32), st.integers(0, U32),
                          st.binary(max_size=300)), max_size=6),
       st.lists(st.integers(0, 2000), max_size=10))
def test_property_any_split_reassembles(specs: list, cuts: list[int]) -> None:
    sent = [Message(*spec) for spec in specs]
    wire = b''.join(m.to_bytes() for m in sent)
    reader = FrameReader()
    got = []
    start = 0
    for cut in sorted(set(c for c in cuts if c <= len(wire))) + [len(wire)]:
        got += reader.feed(wire[start:cut])
        start = cut
    assert [fields(m) for m in got] == [fields(m) for m in sent]
    assert reader.pending() == 0


def test_bad_magic_is_refused_before_the_body() -> None:
    header = b'XX' + struct.pack('>IIIII', 0, 1, 1, 0, 1000)
    with pytest.raises(ProtocolError, match='magic'):
        FrameReader().feed(header)  # none of the 1000 body bytes yet


def test_bad_magic_after_good_frames_is_refused() -> None:
    good = Message(0, 1, 2, 0, b'ok').to_bytes()
    reader = FrameReader()
    assert len(reader.feed(good)) == 1
    with pytest.raises(ProtocolError, match='magic'):
        reader.feed(b'pl' + good[2:])   # magic is case-sensitive


def test_frames_whole_before_a_bad_one_in_the_same_feed_are_kept() -> None:
    """They came first: a HELLO read together with the garbage after it
    was lost with it (the context then "did not boot")."""
    good = Message(0, 1, 2, 0, b'ok').to_bytes()
    with pytest.raises(ProtocolError, match='magic') as caught:
        FrameReader().feed(good + good + b'late-noise\n' + good)
    assert [m.data for m in caught.value.messages] == [b'ok', b'ok']


def test_bad_magic_split_across_feeds_is_refused() -> None:
    bad = b'P?' + struct.pack('>IIIII', 0, 1, 1, 0, 0)
    reader = FrameReader()
    for byte in bad[:-1]:
        assert reader.feed(bytes([byte])) == []
    with pytest.raises(ProtocolError, match='magic'):
        reader.feed(bad[-1:])


def test_oversized_length_is_refused_before_the_body() -> None:
    reader = FrameReader(max_message=1000)
    header = HEADER.pack(MAGIC, 0, 1, 1, 0, 1001)
    with pytest.raises(ProtocolError, match='exceeds'):
        reader.feed(header)


def test_length_at_the_limit_is_accepted() -> None:
    reader = FrameReader(max_message=1000)
    msg = Message(0, 1, 1, 0, b'x' * 1000)
    raw = msg.to_bytes()
    assert reader.feed(raw[:HEADER.size]) == []  # waits for the body
    assert reader.pending() == HEADER.size
    assert [fields(m) for m in reader.feed(raw[HEADER.size:])] == [
        fields(msg)]


def test_largest_possible_length_is_refused_by_default() -> None:
    assert DEFAULT_MAX_MESSAGE < U32
    with pytest.raises(ProtocolError, match='exceeds'):
        FrameReader().feed(HEADER.pack(MAGIC, 0, 1, 1, 0, U32))


def test_frames_before_an_oversized_one_come_whole_and_it_not_at_all(
        ) -> None:
    """The reader raises for the feed; the whole frames before the bad
    one ride on the error (the stream acts on them, then closes), the
    first split across feeds, the refused one not even in part."""
    good = Message(0, 1, 2, 0, b'ok')
    first = Message(3, 4, 5, 6, b'split across feeds')
    raw = first.to_bytes()
    reader = FrameReader(max_message=100)
    assert reader.feed(raw[:HEADER.size + 3]) == []
    with pytest.raises(ProtocolError, match='exceeds') as caught:
        reader.feed(raw[HEADER.size + 3:] + good.to_bytes() +
                    HEADER.pack(MAGIC, 0, 1, 1, 0, 101) + b'x' * 101)
    assert [fields(m) for m in caught.value.messages] == [
        fields(first), fields(good)]
