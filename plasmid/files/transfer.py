"""The master's half of file copies: a file streams to or from a context
in chunks, with a bounded number of them on their way.

Calls to one context run in the order sent, so a put sends its chunks
ahead and waits only when ``window`` of them are unanswered: a file costs
about one round trip plus its bytes' time on the link, and memory on each
hop is bounded by the window.  A file of one chunk costs one call.  A
fetch sends ``window`` reads at once, so it too takes one round trip
whatever the size; those past the end come back empty.  Both directions
write a temporary file beside the destination and rename it
over the destination once whole, so a reader sees the old file or the new
one, never part of one; a copy that fails removes its temporary file.
"""
from __future__ import annotations

import contextlib
import os
import time
import uuid
from collections import deque
from typing import Any, Dict, Iterable, List, Optional, Union

from plasmid.core.compat import bytes_from_wire
from plasmid.core.context import Context, Future
from plasmid.core.errors import CallError, ContextLost, Error, TimeoutError
from plasmid.files import remote

Path = Union[str, 'os.PathLike[str]']  # a remote path
# A local one may be bytes too, as open() takes: decoded as os.fsdecode
# does (a name beyond UTF-8 kept, escaped), the same in all four copies.
LocalPath = Union[str, bytes, 'os.PathLike[str]', 'os.PathLike[bytes]']
CHUNK_SIZE = 4 << 20   # bytes per call: a few per window fill a fast link
WINDOW = 4             # chunks on their way at most, per copy
# Bytes of chunks one process may hold on their way in a copy to or from
# many contexts (a window per context, each a copy of its own): many
# contexts get smaller chunks, down to MIN_CHUNK.
MEMORY_BUDGET = 64 << 20
MIN_CHUNK = 64 << 10
# Bytes of a destination's name its temporary file's name starts with:
# with the rest (42 bytes, and a broadcast's context id) well within 255.
TEMP_NAME_PART = 128


class CopyFailures(Error):
    """A copy to or from many contexts (:func:`plasmid.broadcast_file`,
    :func:`plasmid.gather_file`) failed for some of them; the others are
    done.

    ``failures`` maps each context that failed to its error
    (:class:`plasmid.CallError`, :class:`plasmid.ContextLost`,
    :class:`plasmid.TimeoutError` ...): its destination is as it was.
    ``copied`` maps each of the others to the size of its file.
    *copy* says which copy it was (``"broadcast_file to '/srv/app.tar'"``),
    for the message: a lost context or a timeout named no file.
    """

    def __init__(self, failures: Dict[Context, BaseException],
                 copied: Dict[Context, int], copy: str = '') -> None:
        Error.__init__(self, failures, copied)
        self.failures = failures
        self.copied = copied
        self.copy = copy

    def __str__(self) -> str:
        lines = ['%s%d of %d copies failed:' % (
            self.copy and self.copy + ': ', len(self.failures),
            len(self.failures) + len(self.copied))]
        for context, error in self.failures.items():
            first = (str(error).splitlines() or [''])[0]
            lines.append('  %s: %s: %s' % (context.name,
                                           type(error).__name__, first))
        return '\n'.join(lines)


def put_file(context: Context, local_path: LocalPath, remote_path: Path,
             mode: Optional[int] = None, chunk_size: int = CHUNK_SIZE,
             window: int = WINDOW, timeout: Optional[float] = None) -> int:
    """Copy the file *local_path* here to *remote_path* in *context*;
    return its size.  *mode* (say ``0o644``) is set exactly; None keeps
    the mode of the file it replaces, or gives a new file 0o666 less the
    context's umask.  Errors on the target raise :class:`plasmid.CallError`
    naming the target's exception (FileNotFoundError for a missing
    directory, PermissionError ...); the destination is then untouched.
    *timeout*: seconds any one answer may take, else
    :class:`plasmid.TimeoutError` (the steps already sent still run there:
    the file may yet appear, whole)."""
    check_context(context, 'put_file')
    remote_path = remote_path_of(remote_path)
    check_arguments(mode, chunk_size, window, timeout)
    chunk_size = fitting_chunk(context, chunk_size)
    temp = temp_beside(remote_path)
    with open_source(local_path_of(local_path)) as source, \
            naming_the_copy('put_file to', context, remote_path):
        first = source.read(chunk_size)
        if len(first) < chunk_size:
            return context.call_async(remote.put_whole, temp, remote_path,
                                      first, mode).result(timeout)
        sender = _Sender(context, temp, remote_path, window, timeout)
        try:
            size = sender.send_all(first, source, chunk_size)
            return sender.finish(mode, size)
        except BaseException as exc:
            sender.abandon(exc)
            raise


def fetch_file(context: Context, remote_path: Path, local_path: LocalPath,
               chunk_size: int = CHUNK_SIZE, window: int = WINDOW,
               timeout: Optional[float] = None) -> int:
    """Copy the file *remote_path* in *context* to *local_path* here;
    return its size.  *local_path* may be bytes too (decoded as
    os.fsdecode does).  A new local file gets 0o666 less this process's
    umask; one replaced keeps its mode.  Errors on the target raise
    :class:`plasmid.CallError`, an answer that takes longer than *timeout*
    seconds :class:`plasmid.TimeoutError`; *local_path* is then
    untouched."""
    check_context(context, 'fetch_file')
    remote_path = remote_path_of(remote_path)
    local_path = local_path_of(local_path)
    check_arguments(None, chunk_size, window, timeout)
    chunk_size = fitting_chunk(context, chunk_size)
    with naming_the_copy('fetch_file from', context, remote_path):
        fetch = Fetch(context, remote_path, local_path, chunk_size, window,
                      timeout)
        try:
            while not fetch.step(deadline_after(timeout)):
                pass
        except BaseException:
            fetch.abandon()
            raise
    return fetch.size


@contextlib.contextmanager
def naming_the_copy(copy: str, context: Context, remote_path: str):
    """A lost context or a timeout raised in the block, saying which copy
    it cut short: they said "no result within 5s", or "context 2 is
    gone", naming neither the file nor the context (by its name)."""
    try:
        yield
    except ContextLost as exc:
        raise ContextLost('%s %s (%r): %s' % (copy, context.name,
                                              remote_path, exc),
                          exc.said) from None
    except TimeoutError as exc:
        raise TimeoutError('%s %s (%r): %s' % (copy, context.name,
                                               remote_path, exc)) from None


def open_source(path: str) -> 'Source':
    """The local file *path* to copy, open for reading: a named pipe, a
    device, a socket or a directory is refused with an OSError naming it
    (:func:`remote.open_regular`), as the target refuses one to fetch.  A
    named pipe without a writer held the copy in open() for ever, whatever
    its timeout, and a device like /dev/zero would never end."""
    fd = remote.open_regular(path)
    try:
        return Source(os.fdopen(fd, 'rb'), path)
    except BaseException:
        os.close(fd)
        raise


class Source:
    """A local file being copied from (a put's, a broadcast's).

    Its reads stop at the size it had when opened: a file that grows
    meanwhile (a log being written) is copied as it was then; chased to
    its end, one written faster than the link carried it was never done
    copying, and filled the target's disk.  A file that shrinks is copied
    as far as it goes; one that says it has no size (/proc's) is read to
    its end.  A read that fails names the file: it said "[Errno 5]
    Input/output error" alone."""

    def __init__(self, file, path: str) -> None:
        self.file = file
        self.path = path
        self.size = os.fstat(file.fileno()).st_size
        self.left = self.size or None  # bytes still to read, None: all

    def read(self, size: int) -> bytes:
        if self.left is not None:
            size = min(size, self.left)
        try:
            data = self.file.read(size)
        except OSError as exc:
            exc.filename = self.path
            raise
        if self.left is not None:
            self.left -= len(data)
        return data

    def __enter__(self) -> 'Source':
        return self

    def __exit__(self, *exc_info) -> None:
        self.file.close()


def fitting_chunk(context: Context, chunk_size: int) -> int:
    """*chunk_size*, or less where the router's ``max_message_size`` is
    smaller: a chunk and its message's other fields must fit in one
    message (a 4 MiB chunk under a 4 KiB limit failed with StreamError)."""
    return max(1, min(chunk_size, context.router.max_message // 2))


def check_context(context: Any, caller: str) -> None:
    """Refuse what cannot be called (a host name, say) before anything
    moves: it failed as an AttributeError from inside the copy."""
    if not callable(getattr(context, 'call_async', None)):
        raise TypeError('%s takes a context, not %r' % (caller, context))


def remote_path_of(path: Path) -> str:
    """*path* as text: a str or a path object (``PurePosixPath``).  A NUL
    is refused here, as open() refuses it in a local path: sent, it failed
    on the target, and on Python 2 as a TypeError from the clean-up."""
    path = os.fspath(path)
    if not isinstance(path, str) or not path:
        raise TypeError('a remote path must be a non-empty str or path '
                        'object, not %r' % (path,))
    return _without_nul(path, 'remote')


def local_path_of(path: LocalPath) -> str:
    """*path* as text: a str, bytes (decoded as os.fsdecode does) or a path
    object; a NUL refused before anything moves, as open() would."""
    return _without_nul(os.fsdecode(path), 'local')


def _without_nul(path: str, which: str) -> str:
    if '\0' in path:
        raise ValueError('a %s path may not contain a NUL byte: %r'
                         % (which, path))
    return path


def check_arguments(mode: Optional[int], chunk_size: int, window: int,
                    timeout: Optional[float]) -> None:
    """Refuse a copy's bad arguments before anything moves."""
    if mode is not None and (isinstance(mode, bool) or not isinstance(
            mode, int) or not 0 <= mode <= 0o7777):
        raise ValueError('mode must be None or an int from 0 to 0o7777, '
                         'not %r' % (mode,))
    for name, value in (('chunk_size', chunk_size), ('window', window)):
        if isinstance(value, bool) or not isinstance(value, int) or \
                value < 1:
            raise ValueError('%s must be a positive int, not %r'
                             % (name, value))
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(
            timeout, (int, float)) or not timeout > 0):
        raise ValueError('timeout must be None or a positive number of '
                         'seconds, not %r' % (timeout,))


def unique_contexts(contexts: Iterable[Context], caller: str
                    ) -> List[Context]:
    """*contexts* (a list, a set ...) without repeats, all of one router."""
    if isinstance(contexts, (Context, str, bytes)):
        raise TypeError('%s takes a list of contexts, not %r'
                        % (caller, contexts))
    unique: Dict[int, Context] = {}  # by id, which only a router gives
    routers = set()
    for context in contexts:
        if not isinstance(context, Context):
            raise TypeError('%s takes a list of contexts, and %r is not one'
                            % (caller, context))
        routers.add(id(context.router))
        unique.setdefault(context.context_id, context)
    if len(routers) > 1:
        raise ValueError('%s takes the contexts of one router' % caller)
    return list(unique.values())


def chunk_within_budget(chunk_size: int, held: int) -> int:
    """*chunk_size*, or less so that *held* chunks at once stay within
    MEMORY_BUDGET (not below MIN_CHUNK)."""
    return min(chunk_size, max(MIN_CHUNK, MEMORY_BUDGET // held))


def deadline_after(timeout: Optional[float]) -> Optional[float]:
    """The moment *timeout* seconds from now (``time.monotonic``), or None
    for no timeout: what a copy's waits that run side by side share."""
    return None if timeout is None else time.monotonic() + timeout


def answer_by(call: Future, deadline: Optional[float],
              timeout: Optional[float]):
    """*call*'s result, waited for until *deadline* (None: for ever).
    Waits that share a deadline run one after the other here, so the
    later ones may have only a moment left: an answer already here still
    counts, and one that is not fails naming *timeout*, the time it had,
    not that moment."""
    if deadline is None:
        return call.result()
    try:
        return call.result(max(deadline - time.monotonic(), 0))
    except TimeoutError:
        raise TimeoutError('no result within %.3gs' % timeout) from None


def temp_beside(path: str) -> str:
    """A name no other copy uses, in *path*'s directory (a rename within
    a file system is atomic)."""
    head, tail = os.path.split(path)
    return os.path.join(head, '.%s.plasmid-%s' % (name_start(tail),
                                                   uuid.uuid4().hex))


def name_start(name: str) -> str:
    """The first TEMP_NAME_PART bytes of *name* (a file name): a
    temporary name made of the whole one would pass the system's limit of
    255 bytes for a long one."""
    raw = name.encode('utf-8', 'surrogateescape')[:TEMP_NAME_PART]
    return raw.decode('utf-8', 'surrogateescape')


class _Sender:
    """A put's chunks on their way, at most *window* of them unanswered."""

    def __init__(self, context: Context, temp: str, path: str,
                 window: int, timeout: Optional[float]) -> None:
        self.context = context
        self.temp = temp
        self.path = path
        self.window = window
        self.timeout = timeout
        self.unanswered: deque[Future] = deque()

    def send_all(self, first: bytes, source, chunk_size: int) -> int:
        chunk, offset = first, 0
        while chunk:
            self._send(chunk, offset)
            offset += len(chunk)
            chunk = source.read(chunk_size)
        return offset

    def _send(self, chunk: bytes, offset: int) -> None:
        if len(self.unanswered) >= self.window:
            self.unanswered.popleft().result(self.timeout)
        self.unanswered.append(self.context.call_async(
            remote.write, self.temp, self.path, chunk, offset))

    def finish(self, mode: Optional[int], size: int) -> int:
        """Commit, then collect every answer: a chunk's failure is the one
        raised (the commit refuses a file one of whose chunks failed)."""
        committed = self.context.call_async(remote.commit, self.temp,
                                            self.path, mode, size)
        while self.unanswered:
            self.unanswered.popleft().result(self.timeout)
        return committed.result(self.timeout)

    def abandon(self, why: BaseException) -> None:
        """Remove the temporary file, if the context is still there.
        After a failure, waited for no longer than a chunk; after a
        timeout or an interrupt (Ctrl-C) not at all: the context stopped
        answering, and waiting again doubled the timeout or, without one,
        kept an interrupted put from returning until the context woke.
        The removal then follows the writes when it does."""
        try:
            if isinstance(why, TimeoutError) or \
                    not isinstance(why, Exception):
                self.context.call_no_reply(remote.discard, self.temp)
            else:
                self.context.call_async(remote.discard, self.temp).result(
                    self.timeout)
        except Exception:  # the context is gone, or cannot: nothing to do
            pass


class _Reader:
    """A fetch's reads: *window* of them on their way from the start, so
    a file of any size takes one round trip plus its bytes' time; the
    answers to the reads past its end (empty) are not waited for.

    Each read opens the file anew, and says which file it read and its
    size then (:func:`remote.read_chunk`).  The first read's size bounds
    the copy, as a put's does (:class:`Source`): a file that grows is
    copied as it was then, not chased for ever.  A read of another file
    (a log rotated, a file replaced by a rename, as a put does) fails the
    fetch: the copy was made of the old file's start and the new one's
    end, a file that never was."""

    def __init__(self, context: Context, path: str, chunk_size: int,
                 window: int, timeout: Optional[float]) -> None:
        self.context = context
        self.path = path
        self.chunk_size = chunk_size
        self.window = window
        self.timeout = timeout
        self.offset = 0  # of the next read to send
        self.asked: deque[Future] = deque()
        self.ended = False
        self.came = 0       # bytes of the chunks that came
        self.end: Optional[int] = None  # the size the first read saw
        self.identity: Optional[list] = None  # its device and inode

    def ask(self) -> None:
        """Send reads until *window* of them are on their way (none past
        the end, once the first answer told it)."""
        while not self.ended and len(self.asked) < self.window and (
                self.end is None or self.offset < self.end):
            self.asked.append(self.context.call_async(
                remote.read_chunk, self.path, self.offset, self.chunk_size))
            self.offset += self.chunk_size

    def next_chunk(self, deadline: Optional[float]) -> bytes:
        """The next chunk, waited for until *deadline*."""
        self.ask()
        data, size, device, inode = answer_by(self.asked.popleft(),
                                              deadline, self.timeout)
        # A Python 2 context's bytes are its str: they come as text.
        chunk = bytes_from_wire(data)
        if self.identity is None:
            self.identity = [device, inode]
            self.end = size or None  # no size (/proc's): to its end
        elif self.identity != [device, inode]:
            raise CallError('OSError', 'it was replaced during the copy '
                            '(another file took its name): not copied: '
                            '%r' % (self.path,))
        if self.end is not None:
            chunk = chunk[:max(self.end - self.came, 0)]
        self.came += len(chunk)
        if len(chunk) < self.chunk_size or self.came == self.end:
            # The reads after it went past the end: not waited for, as
            # the last was sent as the chunk before this one arrived, a
            # round trip ago at most.
            self.ended = True
            self.asked.clear()
        return chunk


class Fetch:
    """One fetch: its reads on their way from the start, each chunk
    written as it comes to a temporary file beside *local_path* (made when
    the first arrives: a file that is not there leaves nothing here),
    renamed into place once whole."""

    def __init__(self, context: Context, remote_path: str, local_path: str,
                 chunk_size: int, window: int,
                 timeout: Optional[float]) -> None:
        self.context = context
        self.local_path = local_path
        self.temp = temp_beside(local_path)
        self.reads = _Reader(context, remote_path, chunk_size, window,
                             timeout)
        self.out = None
        self.size = 0
        self.reads.ask()  # many fetches: all of them reading at once

    def step(self, deadline: Optional[float]) -> bool:
        """Write the next chunk, its answer waited for until *deadline*
        (see :func:`deadline_after`); True once the file is in place."""
        chunk = self.reads.next_chunk(deadline)
        try:
            if self.out is None:
                remote.check_replaceable(self.local_path)
                self.out = open(self.temp, 'xb')
            self.out.write(chunk)
            self.size += len(chunk)
            if not self.reads.ended:
                return False
            self.out.close()
        except OSError as exc:  # name the file the caller knows of (a
            exc.filename = self.local_path  # full disk named none)
            raise
        # As a put ends on the target: the mode kept or a new file's,
        # renamed into place whole, or the temporary file removed.
        remote.commit(self.temp, self.local_path, None, self.size)
        return True

    def abandon(self) -> None:
        """Remove the temporary file.  Never raises for the clean-up: it
        runs as a failure is raised, and closing flushes what is buffered,
        which on a full disk failed again, took that failure's place and
        left the temporary file (and stopped a gather's other clean-ups)."""
        try:
            if self.out is not None:
                self.out.close()  # the descriptor is closed even if not
        except Exception:         # the flush
            pass
        finally:
            remote.discard(self.temp)
