"""A closed, bounded serializer for call arguments and results.

Only plain data crosses the wire: None, bool, int, float, text, bytes, list,
tuple, dict, set, frozenset, plus references to contexts and plasmid's own
errors.  Decoding never imports and never calls user code; every count is
checked against the bytes left in the frame, so what it allocates stays
within a multiple of the frame's size (measured on 3.11: 8x for a list of
Nones, 13x for one of empty lists, 33x for one-item dicts, 45x for empty
sets).  A hostile peer can at worst make us reject its frame, or hold
that much for a moment: the router's message size limit bounds it.

Each value is a one-byte tag followed by a fixed-size field or a 32-bit
count.  Python 2 ``str`` travels as "native string": Python 3 reads it as
text, Python 2 as ``str``; text that is pure ASCII also becomes ``str`` on
Python 2 so that code written for either version sees its native type.
"""
from __future__ import absolute_import
import struct

from plasmid.core import compat
from plasmid.core.errors import (CallError, ConnectError, ContextLost,
                                 Error, ProtocolError, StreamError,
                                 TimeoutError)

MAX_DEPTH = 100
MAX_INT_DIGITS = 4000  # big ints, sign included

_INT64 = struct.Struct('>q')
_DOUBLE = struct.Struct('>d')
_COUNT = struct.Struct('>I')
_INT64_MIN = -(1 << 63)
_INT64_MAX = (1 << 63) - 1

# Error classes that may cross the wire, by their one-byte code.
_ERROR_CODES = {
    CallError: b'c', ContextLost: b'l', ConnectError: b'x', TimeoutError: b't',
}
_ERROR_CLASSES = dict((v, k) for k, v in _ERROR_CODES.items())


class ContextRef(object):
    """What a context reference decodes to when no factory is given."""

    __slots__ = ('context_id', 'name')

    def __init__(self, context_id, name):
        self.context_id = context_id
        self.name = name

    def __plasmid_ref__(self):
        return self.context_id, self.name

    def __eq__(self, other):
        return (isinstance(other, ContextRef) and
                other.context_id == self.context_id)

    def __hash__(self):
        return hash(self.context_id)

    def __repr__(self):
        return 'ContextRef(%r, %r)' % (self.context_id, self.name)


# ---------------------------------------------------------------- encoding

def _enc_none(value, out, depth):
    out.append(b'N')


def _enc_bool(value, out, depth):
    out.append(value and b'T' or b'F')


def _enc_int(value, out, depth):
    if _INT64_MIN <= value <= _INT64_MAX:
        out.append(b'i' + _INT64.pack(value))
    else:
        try:
            # int(): before 3.11 str() of an IntEnum is its name.
            digits = str(int(value)).encode('ascii')
        except ValueError:  # 3.11+: too many digits for str()
            digits = None
        if digits is None or len(digits) > MAX_INT_DIGITS:
            raise StreamError('cannot send an int of more than %d digits'
                              % MAX_INT_DIGITS)
        out.append(b'I' + _COUNT.pack(len(digits)) + digits)


def _enc_float(value, out, depth):
    out.append(b'f' + _DOUBLE.pack(value))


def _enc_text(value, out, depth=0):
    raw = _text_encode(value, 'utf-8', _TEXT_ERRORS)  # not a subclass's
    out.append(b's' + _COUNT.pack(len(raw)))
    out.append(raw)


_text_encode = compat.text_type.encode


def _enc_bytes(value, out, depth):
    out.append((compat.PY2 and b'n' or b'b') + _COUNT.pack(len(value)))
    out.append(value)


def _check_depth(depth):
    # The peer refuses deeper values and would drop the whole stream:
    # refuse them here, where the caller can be told.  The count named is
    # a result's: a reply wraps it in one tuple.
    if depth >= MAX_DEPTH:
        raise StreamError('cannot send values nested more than %d '
                          'containers deep' % (MAX_DEPTH - 1))


# The count is of what iteration gives, filled in after: a subclass whose
# len() says otherwise made a malformed frame.

def _sequence_encoder(tag):
    def encode(value, out, depth):
        _check_depth(depth)
        at = len(out)
        out.append(tag)
        count = 0
        for item in value:
            _encode(item, out, depth + 1)
            count += 1
        out[at] = tag + _COUNT.pack(count)
    return encode


def _enc_dict(value, out, depth):
    _check_depth(depth)
    at = len(out)
    out.append(b'd')
    count = 0
    for key, item in value.items():
        _encode(key, out, depth + 1)
        _encode(item, out, depth + 1)
        count += 1
    out[at] = b'd' + _COUNT.pack(count)


def _enc_error(value, out, depth):
    code = _ERROR_CODES[type(value)]
    out.append(b'E' + code)
    if isinstance(value, CallError):
        fields = (value.type_name, value.message, value.remote_traceback)
    else:
        # Its message as given: str() fails on Python 2 for unicode
        # beyond ASCII (a path), and the context would die of it.
        fields = (type(value).__name__, (value.args + ('',))[0], '')
    for field in fields:
        _enc_text(compat.text_from_native(field), out)


def _enc_context(value, out, depth):
    context_id, name = value.__plasmid_ref__()
    out.append(b'C' + _COUNT.pack(context_id))
    _enc_text(compat.text_from_native(name), out)


_TEXT_ERRORS = compat.PY2 and 'strict' or 'surrogatepass'

_ENCODERS = {
    type(None): _enc_none,
    bool: _enc_bool,
    float: _enc_float,
    compat.text_type: _enc_text,
    compat.bytes_type: _enc_bytes,
    list: _sequence_encoder(b'l'),
    tuple: _sequence_encoder(b't'),
    set: _sequence_encoder(b'S'),
    frozenset: _sequence_encoder(b'z'),
    dict: _enc_dict,
}
for _t in compat.int_types:
    _ENCODERS[_t] = _enc_int
for _t in _ERROR_CODES:
    _ENCODERS[_t] = _enc_error

# Subclasses (OrderedDict, namedtuple, IntEnum ...) travel as their base.
_BASES = (bool,) + compat.int_types + (
    float, compat.text_type, compat.bytes_type, dict, list, tuple, set,
    frozenset)


def _encode(value, out, depth):
    encoder = _ENCODERS.get(type(value))
    if encoder is None:
        encoder = _find_encoder(value)
    encoder(value, out, depth)


def _find_encoder(value):
    # The class's, not the value's: a dict with __getattr__ = __getitem__
    # would raise KeyError here, and kill the context replying with it.
    if getattr(type(value), '__plasmid_ref__', None) is not None:
        return _enc_context
    for base in _BASES:
        if isinstance(value, base):
            return _ENCODERS[base]
    if isinstance(value, Error):
        for cls in _ERROR_CODES:
            if isinstance(value, cls):
                return lambda v, o, d: _enc_error(cls(*v.args), o, d)
    raise StreamError('cannot send a value of type %s.%s: only None, %s, '
                      'contexts and plasmid errors' % (
                          type(value).__module__, type(value).__name__,
                          ', '.join(t.__name__ for t in _BASES)))


def encode(value):
    """Return the bytes for *value*, or raise :class:`StreamError`."""
    out = []
    try:
        _encode(value, out, 0)  # cycles too end at MAX_DEPTH
    except StreamError:
        raise
    except Exception as exc:  # a subclass's own __len__ or items() failed
        raise StreamError('cannot send it: %s: %s'
                          % (type(exc).__name__, exc))
    return b''.join(out)


# ---------------------------------------------------------------- decoding
#
# One function walks the buffer with an offset; each branch checks its
# lengths against the end of the frame before slicing.  Plain branches on
# the tag (most common first) keep the per-value cost to a few bytecodes.

_unpack_count = _COUNT.unpack_from
_unpack_int = _INT64.unpack_from
_unpack_double = _DOUBLE.unpack_from


def _need(pos, n, end):
    if pos + n > end:
        raise ProtocolError('value runs past the end of its frame')


def _count_at(data, pos, end):
    _need(pos, 4, end)
    n = _unpack_count(data, pos)[0]
    # Every item needs at least one byte, so a count larger than what is
    # left is a lie: refuse it before allocating anything.
    if n > end - pos - 4:
        raise ProtocolError('count %d exceeds the frame' % n)
    return n, pos + 4


def _text_at(data, pos, end):
    n, pos = _count_at(data, pos, end)
    text = data[pos:pos + n].decode('utf-8', _TEXT_ERRORS)
    if compat.PY2:
        try:
            text = text.encode('ascii')
        except UnicodeError:
            pass
    return text, pos + n


def _items_at(data, pos, end, depth, factory):
    n, pos = _count_at(data, pos, end)
    items = []
    append = items.append
    for _ in range(n):
        item, pos = _value_at(data, pos, end, depth, factory)
        append(item)
    return items, pos


def _value_at(data, pos, end, depth, factory):
    """Decode the value at *pos*; return (value, position after it)."""
    if depth > MAX_DEPTH:
        raise ProtocolError('values nested deeper than %d' % MAX_DEPTH)
    if pos >= end:
        raise ProtocolError('value runs past the end of its frame')
    tag = data[pos:pos + 1]
    pos += 1
    if tag == b's':
        return _text_at(data, pos, end)
    if tag == b'i':
        _need(pos, 8, end)
        return _unpack_int(data, pos)[0], pos + 8
    if tag == b't':
        items, pos = _items_at(data, pos, end, depth + 1, factory)
        return tuple(items), pos
    if tag == b'N':
        return None, pos
    if tag == b'T':
        return True, pos
    if tag == b'F':
        return False, pos
    if tag == b'd':
        n, pos = _count_at(data, pos, end)
        result = {}
        for _ in range(n):
            key, pos = _value_at(data, pos, end, depth + 1, factory)
            result[key], pos = _value_at(data, pos, end, depth + 1, factory)
        return result, pos
    if tag == b'l':
        return _items_at(data, pos, end, depth + 1, factory)
    if tag == b'b':
        n, pos = _count_at(data, pos, end)
        return compat.bytes_type(data[pos:pos + n]), pos + n
    if tag == b'n':
        n, pos = _count_at(data, pos, end)
        raw = data[pos:pos + n]
        if not compat.PY2:
            raw = raw.decode('utf-8', 'surrogateescape')
        return raw, pos + n
    if tag == b'f':
        _need(pos, 8, end)
        return _unpack_double(data, pos)[0], pos + 8
    if tag in (b'S', b'z'):
        items, pos = _items_at(data, pos, end, depth + 1, factory)
        return (tag == b'S' and set or frozenset)(items), pos
    if tag == b'I':
        return _bigint_at(data, pos, end)
    if tag == b'C':
        _need(pos, 5, end)
        context_id = _unpack_count(data, pos)[0]
        if data[pos + 4:pos + 5] != b's':
            raise ProtocolError('context name must be text')
        name, pos = _text_at(data, pos + 5, end)
        return factory(context_id, name), pos
    if tag == b'E':
        return _error_at(data, pos, end)
    raise ProtocolError('unknown tag %r' % (tag,))


def _bigint_at(data, pos, end):
    n, pos = _count_at(data, pos, end)
    digits = data[pos:pos + n]
    if not digits or len(digits) > MAX_INT_DIGITS or digits.lstrip(b'-').strip(
            b'0123456789'):
        raise ProtocolError('malformed big integer')
    return int(digits), pos + n


def _error_at(data, pos, end):
    _need(pos, 1, end)
    cls = _ERROR_CLASSES.get(data[pos:pos + 1])
    if cls is None:
        raise ProtocolError('unknown error class')
    pos += 1
    fields = []
    for _ in range(3):
        if data[pos:pos + 1] != b's':
            raise ProtocolError('error fields must be text')
        field, pos = _text_at(data, pos + 1, end)
        fields.append(field)
    if cls is CallError:
        return CallError(*fields), pos
    return cls(fields[1]), pos


def decode(data, context_factory=None):
    """Return the value encoded in *data*, or raise :class:`ProtocolError`.

    *context_factory(context_id, name)* builds what a context reference
    becomes; by default a :class:`ContextRef`.
    """
    end = len(data)
    try:
        value, pos = _value_at(data, 0, end, 0, context_factory or ContextRef)
    except ProtocolError:
        raise
    except Exception as exc:  # unhashable keys, bad UTF-8, struct errors
        raise ProtocolError('malformed value: %s: %s'
                            % (type(exc).__name__, exc))
    if pos != end:
        raise ProtocolError('%d trailing bytes after value' % (end - pos))
    return value
