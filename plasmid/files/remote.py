"""The target's half of plasmid.files: chunks written to a temporary file
beside the destination and renamed over it once complete, and chunks read.

Shipped into contexts on first use, so stdlib-only and Python 2.7-
compatible.  Calls to one context run in the order they were sent, so the
master sends a file's chunks ahead without waiting for each answer.
"""
from __future__ import absolute_import
import errno
import fcntl
import os
import stat

from plasmid.core.ostext import native
from plasmid.files import unfinished

# Temporary files a chunk failed to reach: never committed.
_BROKEN = set()


def write(temp, path, data, offset):
    """Write one chunk of *temp*, on its way to *path*, at *offset*; the
    first (offset 0) creates it, and fails if something is there already.
    A chunk that fails marks *temp* broken: the chunks after it may land,
    but the file is never committed."""
    try:
        return _write(temp, path, data, offset)
    except BaseException:
        _BROKEN.add(temp)
        raise


def _write(temp, path, data, offset):
    if offset == 0:
        check_replaceable(path)  # before the rest of the file is sent
    try:
        if offset == 0:
            fd = unfinished.make(temp)  # removed if we are orphaned
        else:
            fd = os.open(native(temp), os.O_WRONLY)
        try:
            write_at(fd, data, offset)
        finally:
            os.close(fd)
    except OSError as exc:  # name the file the caller knows of (a full
        exc.filename = path  # disk said "No space left on device" alone)
        raise
    return len(data)


def write_at(fd, data, offset):
    """All of *data* to *fd*, from *offset* on."""
    os.lseek(fd, offset, os.SEEK_SET)
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def commit(temp, path, mode, size):
    """Give *temp* its mode and move it over *path*: the file appears
    whole or not at all (*temp* is removed if it is not whole).  *mode*
    None: *path*'s mode if it exists, else 0o666 less the umask (as a new
    file's would be)."""
    try:
        _check_whole(temp, path, size)
        check_replaceable(path)
        if mode is None:
            mode = mode_for(native(path))
        os.chmod(native(temp), mode)
        os.rename(native(temp), native(path))
        unfinished.done(temp)
        return size
    except OSError as exc:
        discard(temp)
        if exc.errno is None:  # ours, which names the path already
            raise
        error = _naming(exc, path)
    except BaseException:
        discard(temp)
        raise
    raise error  # out of the handler: no chain to the temp file's error


def _naming(exc, path):
    """*exc* (an OSError about the temp file, or on Python 2 about none)
    as the same error about *path*, the file the caller knows of."""
    try:
        return type(exc)(exc.errno, exc.strerror, path)
    except Exception:  # a subclass that takes other arguments
        return exc


# What a copy refuses to rename a file over (as root, a copy to /dev/null
# replaced the machine's device with a file), or to copy from (open_regular).
# A symbolic link is replaced (the link, not what it names), as ansible's
# copy does by default.  (A directory: see check_replaceable.)
_NOT_REGULAR = (
    (stat.S_ISCHR, 'a character device'),
    (stat.S_ISBLK, 'a block device'), (stat.S_ISFIFO, 'a named pipe'),
    (stat.S_ISSOCK, 'a socket'))


def check_replaceable(path):
    """Raise OSError if *path* is something a copy must not replace."""
    try:
        mode = os.lstat(native(path)).st_mode
    except OSError:
        return  # not there (or out of reach: the rename will say)
    if stat.S_ISDIR(mode):
        # Said here, as the rename over it would say for 'dir', but not
        # for 'dir/' ("Not a directory") nor '.' ("Device or resource
        # busy").
        raise OSError(errno.EISDIR, os.strerror(errno.EISDIR), path)
    kind = _kind_of(mode)
    if kind is not None:
        raise OSError(errno.EEXIST, 'it is %s, not a regular file: left '
                      'as it is' % kind, path)


def _kind_of(mode):
    """What _NOT_REGULAR calls a file of *mode*, or None."""
    for is_kind, kind in _NOT_REGULAR:
        if is_kind(mode):
            return kind
    return None


def _check_whole(temp, path, size):
    if temp in _BROKEN:
        _BROKEN.discard(temp)
        raise IOError('%s was not written: one of its chunks failed' % path)
    written = os.path.getsize(native(temp))
    if written != size:
        raise IOError('%s was not written: %d of its %d bytes arrived'
                      % (path, written, size))


def mode_for(path):
    """The mode a file written over *path* takes: its own if it exists,
    else a new file's (0o666 less the umask)."""
    try:
        return os.stat(path).st_mode & 0o7777
    except OSError:
        return 0o666 & ~current_umask()


def current_umask():
    """This process's umask, read without changing it: files another
    thread made meanwhile would take the changed one.  Linux 4.7+ shows it
    in /proc; elsewhere it is swapped out and back, for a strict one: what
    is made meanwhile may be too private, never too open."""
    try:
        with open('/proc/self/status') as status:
            for line in status:
                if line.startswith('Umask:'):
                    return int(line.split()[1], 8)
    except (IOError, OSError, ValueError):
        pass
    umask = os.umask(0o077)
    os.umask(umask)
    return umask


def put_whole(temp, path, data, mode):
    """A file of one chunk: written and moved over *path* in one call."""
    try:
        _write(temp, path, data, 0)
    except BaseException:
        discard(temp)
        raise
    return commit(temp, path, mode, len(data))


def discard(temp):
    """Remove what a failed transfer left; nothing there is fine.  Never
    raises: it runs as a failure is raised, and a name the system refuses
    (a NUL: TypeError on Python 2, ValueError on 3) took that failure's
    place."""
    _BROKEN.discard(temp)
    unfinished.done(temp)
    try:
        os.unlink(native(temp))
    except Exception:
        pass


def read(path, offset, size):
    """*size* bytes of *path* from *offset*: fewer only at its end (the
    accelerator's reads; the copies' are :func:`read_chunk`)."""
    fd = os.open(native(path), os.O_RDONLY)
    try:
        return _read_at(fd, offset, size)
    except OSError as exc:  # a directory opens, and its read names no file
        exc.filename = path
        raise
    finally:
        os.close(fd)


def read_chunk(path, offset, size):
    """A fetch's read: ``[data, file_size, device, inode]``, *data* being
    *size* bytes of the regular file *path* from *offset* (fewer only at
    its end), the rest telling the fetch which file it read and how large
    it was then."""
    fd = open_regular(path)
    try:
        found = os.fstat(fd)
        return [_read_at(fd, offset, size), found.st_size, found.st_dev,
                found.st_ino]
    except OSError as exc:  # a read that fails names no file
        exc.filename = path
        raise
    finally:
        os.close(fd)


def _read_at(fd, offset, size):
    os.lseek(fd, offset, os.SEEK_SET)
    pieces = []
    while size > 0:
        piece = os.read(fd, size)
        if not piece:
            break
        pieces.append(piece)
        size -= len(piece)
    return b''.join(pieces)


def open_regular(path):
    """A descriptor reading *path*, which must be a regular file (or a
    symbolic link to one); else an OSError naming *path*: "Is a directory"
    as open() says it, or that it is a named pipe, a device or a socket.
    Opening a named pipe waited for a writer for ever (a fetch's wedged
    the context's calls; a put's ignored its timeout), and a device could
    stream for ever: such a file is never opened (stat first), and one
    swapped in meanwhile opens without waiting and is refused as well."""
    try:
        _check_regular(os.stat(native(path)).st_mode, path)
        # Nor, if a terminal is swapped in, does it become ours.
        fd = os.open(native(path),
                     os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)
    except OSError as exc:  # name the file the caller knows of
        exc.filename = path
        raise
    try:
        _check_regular(os.fstat(fd).st_mode, path)
        # Regular: O_NONBLOCK means nothing to its reads, but cleared all
        # the same for whoever reads it.
        fcntl.fcntl(fd, fcntl.F_SETFL,
                    fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _check_regular(mode, path):
    if stat.S_ISREG(mode):
        return
    if stat.S_ISDIR(mode):  # as open() says it
        raise OSError(errno.EISDIR, os.strerror(errno.EISDIR), path)
    raise OSError(errno.EINVAL, 'it is %s, not a regular file: not copied'
                  % (_kind_of(mode) or 'something else'), path)
