"""A hostile "child context" for test_hostile_input.py.

Not plasmid at all: a plain Python program whose stdin/stdout are a
stream of the master's router, as a real child's would be.  It writes the
bytes it is given (hand-made frames, good or bad), then records everything
the master sends back until the master closes the stream.

    python hostile_fns.py <hex payload> <hex payload 2> <stay|eof> <record>

The second payload (may be empty) is written only once the master has
answered something, so that it surely arrives in a read of its own.
``eof`` closes stdout right after the payloads (a frame cut short by the
child going away); ``stay`` keeps it open until the master hangs up.
Python 2.7-compatible on purpose, like everything a context may run;
module_loaded() is called in a real context by the tests.
"""
import binascii
import os
import sys


def write_all(fd, data):
    while data:
        data = data[os.write(fd, data):]


def read_until_eof(fd, chunks):
    while True:
        data = os.read(fd, 65536)
        if not data:
            return b''.join(chunks)
        chunks.append(data)


def main(argv):
    first, second = binascii.unhexlify(argv[1]), binascii.unhexlify(argv[2])
    mode, record = argv[3], argv[4]
    received = []
    write_all(1, first)
    if second:
        received.append(os.read(0, 65536))
        write_all(1, second)
    if mode == 'eof':
        os.close(1)
    with open(record, 'wb') as handle:
        handle.write(read_until_eof(0, received))


def module_loaded(name):
    """Called in a real context: has *name* been imported there?"""
    return name in sys.modules


if __name__ == '__main__':
    main(sys.argv)
