"""Messages and the byte framing that carries them on a stream.

A frame is a fixed 22-byte header followed by the message body::

    magic 'PL' | dst u32 | src u32 | handle u32 | reply_to u32 | length u32

``dst``/``src`` are context ids, ``handle`` names the receiver inside the
destination context, ``reply_to`` is the handle a reply should go to (0 for
none).  The reader is a pure object: it takes bytes and returns messages.
"""
from __future__ import absolute_import
import struct

from plasmid.core import codec
from plasmid.core.errors import ProtocolError

HEADER = struct.Struct('>2sIIIII')
MAGIC = b'PL'
DEFAULT_MAX_MESSAGE = 64 * 1024 * 1024


class Message(object):
    """One routed message: addressing plus an encoded body."""

    __slots__ = ('dst', 'src', 'handle', 'reply_to', 'data', 'stream')

    def __init__(self, dst, src, handle, reply_to=0, data=b''):
        self.dst = dst
        self.src = src
        self.handle = handle
        self.reply_to = reply_to
        self.data = data
        self.stream = None  # the stream it arrived on, set by the router

    @classmethod
    def encoding(cls, dst, src, handle, value, reply_to=0):
        return cls(dst, src, handle, reply_to, codec.encode(value))

    def to_bytes(self):
        return HEADER.pack(MAGIC, self.dst, self.src, self.handle,
                           self.reply_to, len(self.data)) + self.data

    def value(self, context_factory=None):
        return codec.decode(self.data, context_factory)

    def __repr__(self):
        return 'Message(dst=%d src=%d handle=%d reply_to=%d len=%d)' % (
            self.dst, self.src, self.handle, self.reply_to, len(self.data))


class FrameReader(object):
    """Turns a byte stream into messages, refusing anything malformed.

    After it raises :class:`ProtocolError` the stream is unusable: framing
    cannot be resynchronised, so the caller must close it.
    """

    def __init__(self, max_message=DEFAULT_MAX_MESSAGE):
        self.max_message = max_message
        self.buffer = bytearray()

    def feed(self, data):
        """Add *data*; return the list of messages now complete."""
        if self.buffer:
            self.buffer += data
            buf = self.buffer
        else:
            buf = data  # the usual case: parse the read straight away
        messages = []
        try:
            pos = self._parse(buf, messages)
        except ProtocolError as exc:
            # What came whole before the bad frame counts (a HELLO read
            # together with the garbage after it).
            exc.messages = messages
            raise
        if buf is self.buffer:
            del buf[:pos]
        elif pos < len(buf):
            self.buffer = bytearray(buf[pos:])
        return messages

    def _parse(self, buf, messages):
        """Append *buf*'s whole frames to *messages*; where they end."""
        pos = 0
        size = len(buf)
        header_size = HEADER.size
        while size - pos >= header_size:
            magic, dst, src, handle, reply_to, length = HEADER.unpack_from(
                buf, pos)
            if magic != MAGIC:
                raise ProtocolError('bad frame magic %r' % (bytes(magic),))
            if length > self.max_message:
                raise ProtocolError('frame of %d bytes exceeds the %d byte '
                                    'limit' % (length, self.max_message))
            end = pos + header_size + length
            if end > size:
                break
            body = bytes(buf[pos + header_size:end])
            messages.append(Message(dst, src, handle, reply_to, body))
            pos = end
        return pos

    def pending(self):
        """Bytes held back waiting for the rest of a frame."""
        return len(self.buffer)
