"""A closed, bounded serializer for call arguments and results.

Only plain data crosses the wire: None, bool, int, float, text, bytes, list,
tuple, dict, set, frozenset, plus references to contexts and plasmid's own
errors.  Decoding never imports, never calls user code and never allocates
more than the frame it reads from, so a hostile peer can at worst make us
reject its frame.

Each value is a one-byte tag followed by a fixed-size field or a 32-bit
count.  Python 2 ``str`` travels as "native string": Python 3 reads it as
text, Python 2 as ``str``; text that is pure ASCII also becomes ``str`` on
Python 2 so that code written for either version sees its native type.
"""
import struct

from plasmid.core import compat
from plasmid.core.errors import (CallError, ConnectError, ContextLost,
                                 Error, ProtocolError, StreamError,
                                 TimeoutError)

MAX_DEPTH = 100

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

    def __eq__(self, other):
        return (isinstance(other, ContextRef) and
                other.context_id == self.context_id)

    def __hash__(self):
        return hash(self.context_id)

    def __repr__(self):
        return 'ContextRef(%r, %r)' % (self.context_id, self.name)


# ---------------------------------------------------------------- encoding

def _enc_none(value, out):
    out.append(b'N')


def _enc_bool(value, out):
    out.append(value and b'T' or b'F')


def _enc_int(value, out):
    if _INT64_MIN <= value <= _INT64_MAX:
        out.append(b'i' + _INT64.pack(value))
    else:
        digits = str(value).encode('ascii')
        out.append(b'I' + _COUNT.pack(len(digits)) + digits)


def _enc_float(value, out):
    out.append(b'f' + _DOUBLE.pack(value))


def _enc_text(value, out):
    raw = value.encode('utf-8', _TEXT_ERRORS)
    out.append(b's' + _COUNT.pack(len(raw)))
    out.append(raw)


def _enc_bytes(value, out):
    out.append((compat.PY2 and b'n' or b'b') + _COUNT.pack(len(value)))
    out.append(value)


def _sequence_encoder(tag):
    def encode(value, out):
        out.append(tag + _COUNT.pack(len(value)))
        for item in value:
            _encode(item, out)
    return encode


def _enc_dict(value, out):
    out.append(b'd' + _COUNT.pack(len(value)))
    for key, item in value.items():
        _encode(key, out)
        _encode(item, out)


def _enc_error(value, out):
    code = _ERROR_CODES[type(value)]
    out.append(b'E' + code)
    if isinstance(value, CallError):
        fields = (value.type_name, value.message, value.remote_traceback)
    else:
        fields = (type(value).__name__, str(value), '')
    for field in fields:
        _enc_text(compat.text_from_native(field), out)


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


def _encode(value, out):
    encoder = _ENCODERS.get(type(value))
    if encoder is None:
        encoder = _find_encoder(value, out)
        if encoder is None:
            return
    encoder(value, out)


def _find_encoder(value, out):
    ref = getattr(value, '__plasmid_ref__', None)
    if ref is not None:
        context_id, name = ref()
        out.append(b'C' + _COUNT.pack(context_id))
        _enc_text(compat.text_from_native(name), out)
        return None
    for base in _BASES:
        if isinstance(value, base):
            return _ENCODERS[base]
    if isinstance(value, Error) and type(value) not in _ERROR_CODES:
        for cls in _ERROR_CODES:
            if isinstance(value, cls):
                return lambda v, o: _enc_error(cls(*v.args), o)
    raise StreamError('cannot send a value of type %s.%s: only None, bool, '
                      'int, float, str, bytes, list, tuple, dict, set and '
                      'plasmid contexts and errors may be sent'
                      % (type(value).__module__, type(value).__name__))


def encode(value):
    """Return the bytes for *value*, or raise :class:`StreamError`."""
    out = []
    _encode(value, out)
    return b''.join(out)


# ---------------------------------------------------------------- decoding

class _Decoder(object):
    """Reads one value from a buffer, checking every length against it."""

    def __init__(self, data, context_factory):
        self.data = data
        self.pos = 0
        self.end = len(data)
        self.context_factory = context_factory or ContextRef

    def take(self, n):
        start = self.pos
        if n > self.end - start:
            raise ProtocolError('value runs past the end of its frame')
        self.pos = start + n
        return self.data[start:start + n]

    def count(self):
        n = _COUNT.unpack(self.take(4))[0]
        # Every item needs at least one byte, so a count larger than what
        # is left is a lie: refuse it before allocating anything.
        if n > self.end - self.pos:
            raise ProtocolError('count %d exceeds the frame' % n)
        return n

    def value(self, depth):
        if depth > MAX_DEPTH:
            raise ProtocolError('values nested deeper than %d' % MAX_DEPTH)
        tag = self.take(1)
        reader = _READERS.get(tag)
        if reader is None:
            raise ProtocolError('unknown tag %r' % (tag,))
        return reader(self, depth + 1)


def _read_text(dec, depth):
    raw = dec.take(dec.count())
    text = raw.decode('utf-8', _TEXT_ERRORS)
    if compat.PY2:
        try:
            return text.encode('ascii')
        except UnicodeError:
            pass
    return text


def _read_native(dec, depth):
    raw = dec.take(dec.count())
    if compat.PY2:
        return raw
    return raw.decode('utf-8', 'surrogateescape')


def _read_items(dec, depth):
    n = dec.count()
    return [dec.value(depth) for _ in range(n)]


def _read_dict(dec, depth):
    n = dec.count()
    result = {}
    for _ in range(n):
        key = dec.value(depth)
        result[key] = dec.value(depth)
    return result


def _read_context(dec, depth):
    context_id = _COUNT.unpack(dec.take(4))[0]
    if dec.take(1) != b's':
        raise ProtocolError('context name must be text')
    return dec.context_factory(context_id, _read_text(dec, depth))


def _read_error(dec, depth):
    cls = _ERROR_CLASSES.get(dec.take(1))
    if cls is None:
        raise ProtocolError('unknown error class')
    fields = []
    for _ in range(3):
        if dec.take(1) != b's':
            raise ProtocolError('error fields must be text')
        fields.append(_read_text(dec, depth))
    if cls is CallError:
        return CallError(*fields)
    return cls(fields[1])


def _read_bigint(dec, depth):
    digits = dec.take(dec.count())
    if not digits or len(digits) > 4000 or digits.lstrip(b'-').strip(
            b'0123456789'):
        raise ProtocolError('malformed big integer')
    return int(digits)


_READERS = {
    b'N': lambda dec, depth: None,
    b'T': lambda dec, depth: True,
    b'F': lambda dec, depth: False,
    b'i': lambda dec, depth: _INT64.unpack(dec.take(8))[0],
    b'I': _read_bigint,
    b'f': lambda dec, depth: _DOUBLE.unpack(dec.take(8))[0],
    b's': _read_text,
    b'n': _read_native,
    b'b': lambda dec, depth: compat.bytes_type(dec.take(dec.count())),
    b'l': _read_items,
    b't': lambda dec, depth: tuple(_read_items(dec, depth)),
    b'S': lambda dec, depth: set(_read_items(dec, depth)),
    b'z': lambda dec, depth: frozenset(_read_items(dec, depth)),
    b'd': _read_dict,
    b'C': _read_context,
    b'E': _read_error,
}


def decode(data, context_factory=None):
    """Return the value encoded in *data*, or raise :class:`ProtocolError`.

    *context_factory(context_id, name)* builds what a context reference
    becomes; by default a :class:`ContextRef`.
    """
    dec = _Decoder(data, context_factory)
    try:
        value = dec.value(0)
    except ProtocolError:
        raise
    except Exception as exc:  # unhashable keys, bad UTF-8, struct errors
        raise ProtocolError('malformed value: %s: %s'
                            % (type(exc).__name__, exc))
    if dec.pos != dec.end:
        raise ProtocolError('%d trailing bytes after value'
                            % (dec.end - dec.pos))
    return value
