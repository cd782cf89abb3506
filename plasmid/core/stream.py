"""A stream: one link to a neighbouring context over a pair of fds."""
from __future__ import absolute_import
import errno
import os
import threading

from plasmid.core.errors import ProtocolError
from plasmid.core.framing import FrameReader
from plasmid.core.logger import Logger
from plasmid.core.loop import Pausable, set_cloexec, set_nonblocking

LOG = Logger('plasmid.stream')
# Reads above glibc's mmap threshold (128 KiB) cost a map and an unmap
# each; 64 KiB stays on the heap.
READ_SIZE = 64 * 1024
BURST_SIZE = 4 * 1024 * 1024
# Bytes queued to a neighbour above which what feeds them from the loop (a
# child's stream, a capture pipe) is not read: a flood from below, or a
# master that reads nothing for a while, would otherwise pile up in memory.
# print() and logging are not held back: a thread waiting in them could
# hold a lock (a logging handler's) that a callback on the loop needs.
HIGH_WATER = 4 * 1024 * 1024


class Stream(Pausable):
    """Frames messages out to, and in from, one neighbour.

    Reading and buffered writing happen on the loop's thread; ``send()``
    may be called from any thread and writes straight to the fd when
    nothing is queued, so a reply costs no wake-up of the I/O thread.
    """

    def __init__(self, router, rfd, wfd, name, reader=None):
        self.router = router
        self.loop = router.loop
        self.rfd = rfd
        self.wfd = wfd
        self.name = name
        self.reader = reader or FrameReader(router.max_message)
        self.outbox = []
        self.queued = 0  # bytes in the outbox
        self.held = []  # what hold() paused
        self.lock = threading.Lock()
        self.closed = False
        self.on_close = []  # callbacks(stream) once the stream is gone
        self.process = None  # the local process at the other end, if any
        # Where that process's stderr goes (spawn.ErrorOutput): asked to
        # hold the close until its last words are in, and for them.
        self.error_output = None
        self.broken = ''  # why we closed it: lost contexts say so
        self.bytes_in = 0
        self.bytes_out = 0
        for fd in set((rfd, wfd)):
            set_nonblocking(fd)
            set_cloexec(fd)

    def __repr__(self):
        return 'Stream(%s)' % (self.name,)

    def start(self):
        """Begin reading; must run on the loop thread (use loop.defer).
        Whole messages already in the reader (read with the ready marker
        or with BOOT) are delivered now: no more bytes may come for them."""
        if not self.closed:
            self.loop.add_reader(self.rfd, self.on_readable)
            if self.outbox:
                self.loop.set_writer(self.wfd, self.on_writable)
            if self.reader.buffer:
                self._receive(b'')

    # ------------------------------------------------------------ input

    def _read_burst(self):
        """Whatever the fd holds now, up to BURST_SIZE: a large message
        then costs one wake-up of the loop per burst, not per 64 KiB."""
        data = os.read(self.rfd, READ_SIZE)
        if len(data) < READ_SIZE:
            return data
        chunks = [data]
        size = len(data)
        while size < BURST_SIZE:
            try:
                more = os.read(self.rfd, READ_SIZE)
            except OSError as exc:
                if exc.errno in (errno.EAGAIN, errno.EINTR):
                    break
                raise
            if not more:
                break  # the end shows on the next wake-up
            chunks.append(more)
            size += len(more)
            if len(more) < READ_SIZE:
                break
        return b''.join(chunks)

    def on_readable(self):
        try:
            data = self._read_burst()
        except OSError as exc:
            if exc.errno in (errno.EAGAIN, errno.EINTR):
                return
            data = b''
        if not data:
            if self.reader.pending():
                LOG.error('%r: ended %d bytes into a frame',
                          self, self.reader.pending())
            self.end_of_input()
            return
        self.bytes_in += len(data)
        self._receive(data)

    def _receive(self, data):
        error = None
        try:
            messages = self.reader.feed(data)
        except ProtocolError as exc:
            messages, error = exc.messages, exc
        for msg in messages:
            msg.stream = self
            self.router.receive(msg)
            if self.closed:
                return
        if error is not None:
            # Said in the log, and by the contexts lost with it.
            self.broken = 'it sent a malformed frame: %s' % error
            LOG.error('%r: closing: %s', self, self.broken)
            self.close()

    def end_of_input(self):
        """The neighbour's output ended: close, once a program at the other
        end has said why on its stderr (ssh writes "Connection to ...
        closed" as it exits, after its stdout has closed)."""
        if self.error_output is None:
            self.close()
            return
        self.loop.remove_reader(self.rfd)
        self.error_output.linger(self.close)

    # ----------------------------------------------------------- output

    def send(self, data):
        """Queue *data*, writing at once what the fd will take."""
        with self.lock:
            if self.closed:
                return False
            self.bytes_out += len(data)
            if self.outbox:
                self.outbox.append(data)
                self.queued += len(data)
                return True
            try:
                written = os.write(self.wfd, data)
            except OSError as exc:
                if exc.errno not in (errno.EAGAIN, errno.EINTR):
                    # The reader will see the loss too and close us (not
                    # waited for: another process may hold its end open).
                    return False
                written = 0
            if written == len(data):
                return True
            # A view, not a slice: a large message leaves the pipe in
            # pieces of its buffer's size, and slicing would copy the
            # rest of it at every piece.
            self.outbox.append(memoryview(data)[written:])
            self.queued += len(data) - written
        self.loop.defer(self._want_write)
        return True

    def _want_write(self):
        if not self.closed and self.outbox:
            self.loop.set_writer(self.wfd, self.on_writable)

    def on_writable(self):
        with self.lock:
            while self.outbox:
                chunk = self.outbox[0]
                try:
                    written = os.write(self.wfd, chunk)
                except OSError as exc:
                    if exc.errno in (errno.EAGAIN, errno.EINTR):
                        return
                    self.outbox = []
                    break
                self.queued -= written
                if written < len(chunk):
                    self.outbox[0] = memoryview(chunk)[written:]
                    return
                self.outbox.pop(0)
            self.queued = 0
        self.loop.set_writer(self.wfd, None)
        held, self.held = self.held, []
        for source in held:
            source.pause(False)

    def hold(self, source):
        """Having queued here what it read from *source* (a child's
        stream, a capture pipe): stop reading it while over HIGH_WATER
        bytes wait here (it waits in its pipe); loop's owner only."""
        if self.queued > HIGH_WATER and not source.paused:
            source.pause(True)
            self.held.append(source)

    def pending_output(self):
        """Bytes queued here that the fd has not taken yet."""
        return self.queued

    # ---------------------------------------------------------- closing

    def let_go(self, null):
        # In a fork: no link.  An open stream's fds become copies of *null*
        # (closed, their numbers could be anyone's by the time we closed
        # them again), and it counts as closed; a fresh lock (another
        # thread may have held this one as the fork was made).
        self.lock = threading.Lock()
        if not self.closed:
            self.closed = True
            os.dup2(null, self.rfd)
            os.dup2(null, self.wfd)

    def close(self):
        """Forget the fds and tell everyone interested; loop thread only."""
        with self.lock:
            if self.closed:
                return
            self.closed = True
            self.outbox = []
            self.queued = 0
        for fd in set((self.rfd, self.wfd)):
            self.loop.remove_fd(fd)
            try:
                os.close(fd)
            except OSError:
                pass
        for callback in self.on_close:
            callback(self)
