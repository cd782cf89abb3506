"""The closed serializer: every allowed type round-trips, nothing else is
encoded, and decoding hostile bytes yields allowed types or ProtocolError,
never an import, a call or another exception.  Values also cross between
Python 3.11 and the 2.7 / 3.6 payload interpreters unchanged (modulo the
documented Python 2 string rules)."""
from __future__ import annotations

import collections
import enum
import math
import os
import struct
import subprocess
import sys
import tracemalloc
from typing import Any, Callable

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from plasmid.core import codec
from plasmid.core.codec import MAX_DEPTH, ContextRef, decode, encode
from plasmid.core.errors import (CallError, ConnectError, ContextLost,
                                 ProtocolError, StreamError, TimeoutError)
from testbed.pythons import require_python

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), os.pardir,
                                    os.pardir))
ERROR_TYPES = (CallError, ContextLost, ConnectError, TimeoutError)
ALLOWED_TYPES = (type(None), bool, int, float, str, bytes, list, tuple, dict,
                 set, frozenset, ContextRef) + ERROR_TYPES
COUNT = struct.Struct('>I')


def canon(value: Any) -> Any:
    """A hashable, type-exact image of *value*: equal images mean equal
    values of identical types (floats by bit pattern, so nan == nan and
    0.0 != -0.0).  Dicts and sets compare regardless of order."""
    kind = type(value)
    if kind is float:
        return ('float', struct.pack('>d', value))
    if kind in (list, tuple):
        return (kind.__name__, tuple(canon(item) for item in value))
    if kind in (set, frozenset):
        return (kind.__name__, frozenset(canon(item) for item in value))
    if kind is dict:
        return ('dict', frozenset((canon(k), canon(v))
                                  for k, v in value.items()))
    if kind in ERROR_TYPES:
        return (kind.__name__, canon(value.args))
    if kind is ContextRef:
        return ('ref', value.context_id, canon(value.name))
    assert kind in (type(None), bool, int, str, bytes), kind
    return (kind.__name__, value)


def assert_round_trip(value: Any) -> None:
    assert canon(decode(encode(value))) == canon(value)


# ----------------------------------------------------------- round trips

SAMPLES = [
    None, True, False,
    0, 1, -1, 2 ** 63 - 1, -2 ** 63, 2 ** 63, -2 ** 63 - 1, 10 ** 300,
    -(10 ** 3998),
    0.0, -0.0, 1.5, -1e308, 5e-324, float('inf'), float('-inf'),
    float('nan'),
    '', 'ascii', 'h\xe9llo w\xf6rld', '\u4e2d\u6587', '\U0001f600',
    'lone \ud800 high', 'lone \udfff low', '\x00nul',
    b'', b'\x00\xff\xfe', bytes(range(256)),
    [], (), {}, set(), frozenset(),
    [1, 'two', b'three', 4.0, None, [5, (6,)]],
    (1, (2, (3, (4,)))),
    {'a': 1, 2: 'b', (3, 'c'): [4], frozenset([5]): {6: 7}, None: None,
     b'k': b'v', 1.5: True},
    {1, 'x', b'y', (2, 3), frozenset([4])},
    frozenset([frozenset([1]), (2, 'z')]),
    [{'nested': [{'deep': ({'er': {1, 2}},)}]}],
    CallError('ValueError', 'bad value \xe9', 'Traceback: ...'),
    ContextLost('gone'), ConnectError('refused'), TimeoutError('slow'),
    ContextRef(7, 'web.7'),
    [ContextRef(1, 'a'), {'err': ContextLost('x')}],
]


@pytest.mark.parametrize('value', SAMPLES, ids=[
    '%d-%s' % (i, type(v).__name__) for i, v in enumerate(SAMPLES)])
def test_allowed_values_round_trip(value: Any) -> None:
    assert_round_trip(value)


def test_nan_and_signed_zero_keep_their_bits() -> None:
    assert math.isnan(decode(encode(float('nan'))))
    assert math.copysign(1.0, decode(encode(-0.0))) == -1.0


def test_integer_width_boundaries_choose_the_right_tag() -> None:
    # int64 values use the fixed 8-byte form, the rest travel as digits.
    assert encode(2 ** 63 - 1)[:1] == b'i'
    assert encode(-2 ** 63)[:1] == b'i'
    assert encode(2 ** 63)[:1] == b'I'
    assert encode(-2 ** 63 - 1)[:1] == b'I'
    assert len(encode(2 ** 63 - 1)) == 9


def test_biggest_sendable_int_round_trips_and_bigger_is_refused() -> None:
    # The receiver's limit is MAX_INT_DIGITS characters, sign included.
    assert codec.MAX_INT_DIGITS == 4000
    assert_round_trip(10 ** 4000 - 1)
    assert_round_trip(-(10 ** 3999 - 1))
    # One more character would be refused by every receiver (and on 3.11+
    # str() refuses past 4300 digits): refuse it when sending instead.
    for too_big in (10 ** 4000, -(10 ** 3999), 10 ** 5000):
        with pytest.raises(StreamError, match='int'):
            encode(too_big)


class Colour(enum.IntEnum):
    RED = 1


class Named(int):
    """str() gives a name, as an IntEnum's did before 3.11."""
    def __str__(self) -> str:
        return 'named'


class MyStr(str):
    pass


class OwnEncoding(str):
    """encode() of its own that gives no bytes: b''.join() raised a bare
    TypeError from encode()."""
    def encode(self, *args: Any) -> Any:
        return 'not bytes'


class MyFloat(float):
    pass


Point = collections.namedtuple('Point', 'x y')


@pytest.mark.parametrize('value,base', [
    (collections.OrderedDict([('b', 1), ('a', 2)]), dict),
    (collections.defaultdict(list, {'k': [1]}), dict),
    (collections.Counter('aab'), dict),
    (Point(1, 2), tuple),
    (Colour.RED, int),
    (Named(2 ** 70), int),  # past 64 bits: it went as 'named'
    (MyStr('text'), str),
    (OwnEncoding('text'), str),
    (MyFloat(2.5), float),
], ids=lambda v: type(v).__name__)
def test_subclasses_travel_as_their_base_type(value: Any, base: type) -> None:
    got = decode(encode(value))
    assert type(got) is base
    assert got == value


class Hiding(dict):
    """A realistic pattern: items() leaves private keys out."""

    def items(self):
        return [(k, v) for k, v in dict.items(self) if not k.startswith('_')]


class Miscounted(list):
    def __len__(self):
        return 1


def test_a_subclass_whose_len_disagrees_with_its_items_sends_its_items(
        ) -> None:
    """The count came from len(), the items from iteration: the frame
    was malformed, and the receiver refused it ("value runs past the end
    of its frame", "trailing bytes after value")."""
    assert decode(encode(Hiding(a=1, _secret=2))) == {'a': 1}
    assert decode(encode(Miscounted([1, 2, 3]))) == [1, 2, 3]
    assert decode(encode([Hiding(b=2, _c=3), (Miscounted('xy'),)])) == \
        [{'b': 2}, (['x', 'y'],)]


def test_subclassed_errors_travel_as_the_plasmid_error() -> None:
    class AppLost(ContextLost):
        pass
    got = decode(encode(AppLost('went away')))
    assert type(got) is ContextLost
    assert got.args == ('went away',)


def test_error_fields_survive() -> None:
    got = decode(encode(CallError('KeyError', "'k'", 'tb lines\n')))
    assert (got.type_name, got.message, got.remote_traceback) == (
        'KeyError', "'k'", 'tb lines\n')


def test_context_factory_builds_context_references() -> None:
    class Ref:
        __slots__ = ('context_id', 'name')

        def __plasmid_ref__(self) -> tuple[int, str]:
            return 42, 'ctx.42'
    made = []

    def factory(context_id: int, name: str) -> tuple[str, int, str]:
        made.append(context_id)
        return ('made', context_id, name)
    assert decode(encode([Ref()]), factory) == [('made', 42, 'ctx.42')]
    assert made == [42]
    assert decode(encode(Ref())) == ContextRef(42, 'ctx.42')


class Opaque:
    pass


def a_function() -> None:
    pass


@pytest.mark.parametrize('value,type_name', [
    (object(), 'builtins.object'),
    (a_function, 'builtins.function'),
    (Opaque(), 'Opaque'),
    (Opaque, 'builtins.type'),
    (1j, 'builtins.complex'),
    ([1, {'k': (Opaque(),)}], 'Opaque'),
    ({Opaque(): 1}, 'Opaque'),
], ids=['object', 'function', 'instance', 'class', 'complex', 'nested',
        'dict key'])
def test_unsupported_types_raise_stream_error_naming_the_type(
        value: Any, type_name: str) -> None:
    with pytest.raises(StreamError) as info:
        encode(value)
    assert type_name in str(info.value)


def nested_lists(levels: int) -> Any:
    value: Any = None
    for _ in range(levels):
        value = [value]
    return value


def test_nesting_the_receiver_would_refuse_is_refused_when_sending() -> None:
    assert_round_trip(nested_lists(MAX_DEPTH))
    for levels in (MAX_DEPTH + 1, 5000):
        with pytest.raises(StreamError, match='nested'):
            encode(nested_lists(levels))
    cycle: list = []
    cycle.append(cycle)
    with pytest.raises(StreamError, match='nested'):
        encode(cycle)


# ------------------------------------------------------- hostile decoding

# Every one-byte tag of the wire format.
KNOWN_TAGS = set(b'NTFiIfsnbltSzdCE')


def test_unknown_tags_are_refused() -> None:
    unknown = [bytes([b]) for b in range(256) if b not in KNOWN_TAGS]
    assert len(unknown) == 256 - 16
    for tag in unknown:
        with pytest.raises(ProtocolError, match='unknown tag'):
            decode(tag + b'\x00' * 8)


def test_empty_input_is_refused() -> None:
    with pytest.raises(ProtocolError):
        decode(b'')


def test_every_truncation_of_a_valid_encoding_is_refused() -> None:
    data = encode(SAMPLES)
    assert len(data) > 1000
    for cut in range(len(data)):
        with pytest.raises(ProtocolError):
            decode(data[:cut])


def test_trailing_bytes_are_refused() -> None:
    for value in (None, 1, 'x', [1, 2], {'a': b'b'}):
        with pytest.raises(ProtocolError, match='trailing'):
            decode(encode(value) + b'N')


@pytest.mark.parametrize('tag', [b's', b'b', b'n', b'I', b'l', b't', b'd',
                                 b'S', b'z'])
def test_counts_beyond_the_frame_are_refused_without_allocating(
        tag: bytes) -> None:
    data = tag + COUNT.pack(0xFFFFFFFF) + b'N' * 16
    tracemalloc.start()
    try:
        with pytest.raises(ProtocolError, match='exceeds the frame'):
            decode(data)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # A 4 GiB claim costs nothing: no buffer or list of that size is made.
    assert peak < 64 * 1024


def test_nesting_up_to_max_depth_decodes_and_deeper_is_refused() -> None:
    def nested(levels: int) -> bytes:
        return (b'l' + COUNT.pack(1)) * levels + b'N'
    value = decode(nested(MAX_DEPTH))
    for _ in range(MAX_DEPTH):
        assert type(value) is list and len(value) == 1
        value = value[0]
    assert value is None
    with pytest.raises(ProtocolError, match='deeper'):
        decode(nested(MAX_DEPTH + 1))
    # Far deeper input must not reach Python's recursion limit either.
    with pytest.raises(ProtocolError, match='deeper'):
        decode(nested(100000))


@pytest.mark.parametrize('data', [
    b'd' + COUNT.pack(1) + b'l' + COUNT.pack(0) + b'N',   # list as a key
    b'd' + COUNT.pack(1) + b'd' + COUNT.pack(0) + b'N',   # dict as a key
    b'S' + COUNT.pack(1) + b'l' + COUNT.pack(0),          # list in a set
    b'z' + COUNT.pack(1) + b'S' + COUNT.pack(0),          # set in a set
], ids=['list key', 'dict key', 'list in set', 'set in frozenset'])
def test_unhashable_keys_and_items_are_refused(data: bytes) -> None:
    with pytest.raises(ProtocolError, match='unhashable'):
        decode(data)


@pytest.mark.parametrize('data', [
    b's' + COUNT.pack(1) + b'\xff',
    b's' + COUNT.pack(2) + b'\xc3(',
    b'C' + COUNT.pack(1) + b's' + COUNT.pack(1) + b'\x80',
    b'E' + b'l' + (b's' + COUNT.pack(1) + b'\xfe') * 3,
], ids=['invalid byte', 'bad continuation', 'context name', 'error field'])
def test_bad_utf8_is_refused(data: bytes) -> None:
    with pytest.raises(ProtocolError):
        decode(data)


@pytest.mark.parametrize('digits', [b'', b'-', b'--5', b'1.5', b' 12',
                                    b'0x10', b'1_000', b'\xd9\xa1',
                                    b'9' * 4001])
def test_malformed_big_integers_are_refused(digits: bytes) -> None:
    with pytest.raises(ProtocolError):
        decode(b'I' + COUNT.pack(len(digits)) + digits)


@pytest.mark.parametrize('data', [
    b'E?' + (b's' + COUNT.pack(0)) * 3,              # unknown error class
    b'Ec' + b'N' * 3,                                # fields not text
    b'C' + COUNT.pack(1) + b'b' + COUNT.pack(0),     # name not text
], ids=['error class', 'error fields', 'context name'])
def test_malformed_errors_and_references_are_refused(data: bytes) -> None:
    with pytest.raises(ProtocolError):
        decode(data)


# ------------------------------------------------- hypothesis properties

def _floats() -> st.SearchStrategy[float]:
    return st.floats(allow_nan=True, allow_infinity=True)


# Text with every code point, lone surrogates included.
TEXT = st.text(alphabet=st.characters(blacklist_categories=()), max_size=20)
HASHABLE_LEAVES = (st.none() | st.booleans() | st.integers() |
                   st.floats(allow_nan=False) | TEXT | st.binary(max_size=20))
HASHABLES = st.recursive(
    HASHABLE_LEAVES,
    lambda inner: st.tuples(inner, inner) | st.frozensets(inner, max_size=4),
    max_leaves=8)
LEAVES = (st.none() | st.booleans() | st.integers() | _floats() | TEXT |
          st.binary(max_size=20) |
          st.builds(ContextRef, st.integers(0, 2 ** 32 - 1), TEXT) |
          st.builds(CallError, TEXT, TEXT, TEXT) |
          st.builds(ContextLost, TEXT))
VALUES = st.recursive(
    LEAVES,
    lambda inner: (st.lists(inner, max_size=5) |
                   st.lists(inner, max_size=5).map(tuple) |
                   st.dictionaries(HASHABLES, inner, max_size=5) |
                   st.sets(HASHABLES, max_size=5) |
                   st.frozensets(HASHABLES, max_size=5)),
    max_leaves=25)

FAST = settings(max_examples=150, deadline=None,
                suppress_health_check=[HealthCheck.too_slow])


@FAST
@given(VALUES)
def test_property_every_allowed_value_round_trips(value: Any) -> None:
    assert_round_trip(value)


def _only_allowed_types(value: Any) -> bool:
    if type(value) not in ALLOWED_TYPES:
        return False
    if type(value) is dict:
        return all(_only_allowed_types(k) and _only_allowed_types(v)
                   for k, v in value.items())
    if type(value) in (list, tuple, set, frozenset):
        return all(_only_allowed_types(item) for item in value)
    if type(value) in ERROR_TYPES:
        return all(type(arg) is str for arg in value.args)
    if type(value) is ContextRef:
        return type(value.name) is str
    return True


def _watched_events() -> list[str]:
    return _AUDIT['events']


# Audit hooks cannot be removed: install one for the session that records
# only while a decode under test runs.
_AUDIT: dict[str, Any] = {'on': False, 'events': []}
_SUSPECT = ('import', 'exec', 'compile', 'open', 'os.system', 'os.exec',
            'os.posix_spawn', 'os.spawn', 'subprocess.Popen', 'ctypes',
            'pickle.find_class', 'marshal.loads', 'builtins.input')


def _audit(event: str, args: tuple) -> None:
    if _AUDIT['on'] and event.startswith(_SUSPECT):
        _AUDIT['events'].append(event)


sys.addaudithook(_audit)


def decode_watched(data: bytes) -> Any:
    """decode(data), failing the test on any other exception, any import
    or code execution, and any value outside the allowed types."""
    modules = set(sys.modules)
    _AUDIT['events'] = []
    _AUDIT['on'] = True
    try:
        value = decode(data)
    except ProtocolError:
        value = ProtocolError
    finally:
        _AUDIT['on'] = False
    assert _watched_events() == []
    assert set(sys.modules) == modules
    if value is not ProtocolError:
        assert _only_allowed_types(value), repr(value)
        # Whatever decodes can be sent on unchanged (an intermediary or a
        # function may pass it along).
        assert_round_trip(value)
    return value


def test_audit_hook_sees_what_it_must_refuse() -> None:
    # The watch itself works: an import under it is noticed.
    _AUDIT['events'] = []
    _AUDIT['on'] = True
    try:
        sys.modules.pop('this', None)
        old_stdout = sys.stdout
        sys.stdout = open(os.devnull, 'w')
        try:
            __import__('this')
        finally:
            sys.stdout.close()
            sys.stdout = old_stdout
    finally:
        _AUDIT['on'] = False
    assert 'import' in _watched_events()


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200))
def test_property_random_bytes_decode_safely(data: bytes) -> None:
    decode_watched(data)


# Bytes that look like real encodings with a few mutations: these reach
# deep into the decoder, unlike uniformly random bytes.
@st.composite
def mutated_encodings(draw: Callable) -> bytes:
    data = bytearray(encode(draw(VALUES)))
    for _ in range(draw(st.integers(1, 4))):
        op = draw(st.sampled_from(['flip', 'insert', 'delete', 'count']))
        at = draw(st.integers(0, max(0, len(data) - 1)))
        if op == 'flip' and data:
            data[at] = draw(st.integers(0, 255))
        elif op == 'insert':
            data[at:at] = draw(st.binary(min_size=1, max_size=6))
        elif op == 'delete' and data:
            del data[at:at + draw(st.integers(1, 6))]
        elif op == 'count':
            data[at:at] = draw(st.sampled_from(
                [b'l', b'd', b'S', b's', b'b', b'I'])) + COUNT.pack(
                draw(st.sampled_from([0, 1, 2, 0x7FFFFFFF, 0xFFFFFFFF])))
    return bytes(data)


@settings(max_examples=300, deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(mutated_encodings())
def test_property_mutated_encodings_decode_safely(data: bytes) -> None:
    decode_watched(data)


# ------------------------------------------- across Python 2.7 and 3.6

# Runs under the old interpreter: decode stdin, answer with the value
# re-encoded, a type-annotated copy of it, and values made natively there.
# Python 2.7 syntax on purpose.
PEER_SCRIPT = r'''
import os, sys, types
pkg = types.ModuleType('plasmid')   # skip plasmid/__init__ (master only)
pkg.__path__ = [os.path.join(os.environ['PYTHONPATH'], 'plasmid')]
sys.modules['plasmid'] = pkg
from plasmid.core import codec

def describe(v):
    name = type(v).__name__
    if isinstance(v, list):
        return (name, [describe(i) for i in v])
    if isinstance(v, tuple):
        return (name, tuple(describe(i) for i in v))
    if isinstance(v, (set, frozenset)):
        return (name, frozenset(describe(i) for i in v))
    if isinstance(v, dict):
        return (name, dict((describe(k), describe(x)) for k, x in v.items()))
    return (name, v)

data = b''
while True:
    chunk = os.read(0, 65536)
    if not chunk:
        break
    data += chunk
value = codec.decode(data)
native = ['abc', u'\xe9t\xe9', b'\xff\xfe', 2 ** 70, -7, {'k': (1.5, None)},
          ['x', u'y']]
out = codec.encode((value, describe(value), native))
while out:
    out = out[os.write(1, out):]
'''

CROSS_SAMPLES = [
    None, True, False, 0, -1, 2 ** 62, 2 ** 63 - 1, -2 ** 63, 2 ** 63,
    -(10 ** 50), 1.25, float('inf'), float('nan'), -0.0,
    'ascii', 'caf\xe9', '\u4e2d', '\U0001f600', 'lone \ud800 surrogate', '',
    b'bytes', b'\xff\x00', b'',
    [1, 'two', b'three'], (1, ('nested', [2.5])),
    {'key': 'value', 'caf\xe9': b'\x01', 3: (4, 5), (6, 'seven'): None},
    {1, 'a', (2, 'b')}, frozenset(['x', frozenset([1])]),
    CallError('ValueError', 'no \xe9', 'tb'), ContextLost('lost'),
    ConnectError('no'), TimeoutError('late'), ContextRef(3, 'name.3'),
]


def py2_received(value: Any) -> Any:
    """What a Python 2 peer holds after decoding *value*, as (type name,
    value) pairs like PEER_SCRIPT's describe(): ASCII text becomes str,
    other text unicode, bytes str, ints beyond the machine word long."""
    kind = type(value)
    if kind is str:
        try:
            value.encode('ascii')
            return ('str', value)
        except UnicodeError:
            return ('unicode', value)
    if kind is bytes:
        # A py2 str travels back as native string: text on Python 3.
        return ('str', value.decode('utf-8', 'surrogateescape'))
    if kind is int:
        small = -2 ** 63 <= value < 2 ** 63
        return (small and 'int' or 'long', value)
    return describe_py3(value, py2_received)


def describe_py3(value: Any, leaf: Callable | None = None) -> Any:
    leaf = leaf or describe_py3
    kind = type(value)
    if kind in (list, tuple):
        return (kind.__name__, kind(leaf(i) for i in value))
    if kind in (set, frozenset):
        return (kind.__name__, frozenset(leaf(i) for i in value))
    if kind is dict:
        return ('dict', dict((leaf(k), leaf(v)) for k, v in value.items()))
    return (kind.__name__, value)


def py2_back(value: Any) -> Any:
    """*value* after a trip to Python 2 and back: bytes come back as text
    (Python 2 cannot tell its str apart from text)."""
    kind = type(value)
    if kind is bytes:
        return value.decode('utf-8', 'surrogateescape')
    if kind in (list, tuple, set, frozenset):
        return kind(py2_back(i) for i in value)
    if kind is dict:
        return dict((py2_back(k), py2_back(v)) for k, v in value.items())
    return value


def run_peer(python: str, value: Any) -> tuple[Any, Any, Any]:
    proc = subprocess.run([python, '-c', PEER_SCRIPT], input=encode(value),
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          env={'PYTHONPATH': REPO, 'PATH': os.defpath},
                          timeout=60)
    assert proc.returncode == 0, proc.stderr.decode()
    return decode(proc.stdout)


def test_values_cross_to_python_27_and_back() -> None:
    python = require_python('2.7')
    back, described, native = run_peer(python, CROSS_SAMPLES)
    assert canon(described) == canon(py2_received(CROSS_SAMPLES))
    assert canon(back) == canon(py2_back(CROSS_SAMPLES))
    # Python 2 str arrives as text (undecodable bytes escaped), long as int.
    assert canon(native) == canon(['abc', '\xe9t\xe9', '\udcff\udcfe',
                                   2 ** 70, -7, {'k': (1.5, None)},
                                   ['x', 'y']])


def test_values_cross_to_python_36_and_back() -> None:
    python = require_python('3.6')
    back, described, native = run_peer(python, CROSS_SAMPLES)
    assert canon(described) == canon(describe_py3(CROSS_SAMPLES))
    assert canon(back) == canon(CROSS_SAMPLES)
    assert canon(native) == canon(['abc', '\xe9t\xe9', b'\xff\xfe', 2 ** 70,
                                   -7, {'k': (1.5, None)}, ['x', 'y']])
