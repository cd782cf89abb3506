"""Functions run in contexts by test_logger.py.  Nothing here imports
logging at module level: the tests check when a context loads it."""
import sys


def loaded(names):
    """Which of *names* this interpreter has imported."""
    return sorted(n for n in names if n in sys.modules)


def fail(message):
    raise ValueError(message)


def core_debug(text):
    """A debug record of the core's, below a context's default level."""
    from plasmid.core.logger import Logger
    Logger('plasmid.test').debug('%s', text)


def warn_with_logging(text):
    import logging
    logging.getLogger('logger_fns').warning('%s', text)


def forwarding_handlers():
    """The root logger's handlers, by class name, and whether anything
    on sys.meta_path still waits for logging to load."""
    import logging
    waiting = [f for f in sys.meta_path
               if type(f).__name__ == 'WhenImported' and not f.done]
    return [type(h).__name__ for h in logging.getLogger().handlers], \
        len(waiting)


def use_stdout_as_a_text_stream():
    """What programs ask of sys.stdout besides write(): its attributes,
    reconfigure(), close() and with.  Print once after each."""
    import sys
    out = sys.stdout
    out.reconfigure(encoding='utf-8', line_buffering=True)
    print('%s %s %s %s %s' % (out.name, out.mode, out.writable(),
                              out.readable(), out.seekable()))
    with out:
        out.write('inside with, no line end')
    out.close()
    print('after close')
    return out.closed


def write_bytes_like_to_stdout_buffer():
    """memoryview and bytearray, as a real buffer takes them, written as
    code that loops on write()'s count does; then a print."""
    import sys
    counts = []
    for piece in (memoryview(b'view '), bytearray(b'array ')):
        counts.append(sys.stdout.buffer.write(piece))
    data = u'h\u00e9llo \u2713\n'.encode('utf-8')
    while data:
        written = sys.stdout.buffer.write(data)
        counts.append(written)
        data = data[written:]
    print('printed after')
    return counts


class Unprintable(object):
    def __str__(self):
        raise ValueError('no str')

    __repr__ = __str__


def log_what_cannot_be_formatted():
    """Logging never raises into its caller for a record it cannot
    format: it reports the error on stderr and goes on."""
    import logging
    logging.getLogger('app').warning(Unprintable())
    logging.getLogger('app').warning('value: %s', Unprintable())
    logging.getLogger('app').warning('after')
    return 'logged'


def print_text_of(length):
    """One line of *length* characters."""
    print('x' * length)


def write_bytes_to_stdout_a_byte_at_a_time(text):
    """As a copy loop with a small buffer does: pieces that cut the
    UTF-8 encoding of a character in two."""
    import sys
    data = text.encode('utf-8')
    for i in range(len(data)):
        sys.stdout.buffer.write(data[i:i + 1])
    sys.stdout.flush()


def write_without_line_ends(piece, count):
    """A progress display that never ends a line nor flushes."""
    import sys
    for _ in range(count):
        sys.stdout.write(piece)


def write_bytes_to_stdout(data):
    """As code that writes binary output does: through sys.stdout.buffer,
    after checking that the stream is open."""
    import sys
    if sys.stdout.closed:
        return 'closed'
    sys.stdout.buffer.write(data)
    sys.stdout.flush()
    return 'written'


def watch_queued(path, seconds):
    """For *seconds*, in a thread, keep in file *path* the most bytes seen
    queued on this context's link to its parent (sampled every 10 ms)."""
    import os
    import threading
    import time
    from plasmid.core import child
    link = child.current.router.parent

    def watch():
        most = 0
        deadline = time.time() + seconds
        while time.time() < deadline:
            queued = link.pending_output()
            if queued > most:
                most = queued
                with open(path + '.new', 'w') as f:
                    f.write(str(most))
                os.rename(path + '.new', path)
            time.sleep(0.01)

    threading.Thread(target=watch).start()


def flood(lines):
    """Write *lines* lines of 1 KiB to fd 1, as a subprocess would."""
    import os
    line = b'x' * 1023 + b'\n'
    for _ in range(lines):
        os.write(1, line)
    return lines


def write_to_fd_1(data):
    """*data* on fd 1, as a subprocess would write it."""
    import os
    while data:
        data = data[os.write(1, data):]


def print_in_a_signal_handler_during_a_write():
    """A signal whose handler prints, coming while sys.stdout is in the
    middle of a write (its lock held)."""
    import os
    import signal

    def handler(signum, frame):
        print('printed by the handler')

    before = signal.signal(signal.SIGUSR1, handler)
    try:
        with sys.stdout.lock:
            os.kill(os.getpid(), signal.SIGUSR1)  # handled right here
    finally:
        signal.signal(signal.SIGUSR1, before)
    return 'returned'


def fd_output_without_line_ends(size):
    """*size* bytes on fd 1 with no line end, written by another program
    (a progress bar's '\\r', base64 -w0...)."""
    import subprocess
    return subprocess.call(['head', '-c', str(size), '/dev/zero'])


def print_from_two_threads_the_first_slow_to_send():
    """A thread writes 'first'; while its line is on its way out (held
    back 0.3 s, as a thread taken off the CPU would be), this one writes
    'second'."""
    import threading
    import time
    out = sys.stdout
    forwarder = out.forwarder

    class SlowWithFirst(object):
        def send(self, origin, level, text):
            if text == 'first':
                time.sleep(0.3)
            forwarder.send(origin, level, text)

    out.forwarder = SlowWithFirst()
    try:
        first = threading.Thread(target=out.write, args=('first\n',))
        first.start()
        time.sleep(0.1)
        out.write('second\n')
        first.join()
    finally:
        out.forwarder = forwarder
