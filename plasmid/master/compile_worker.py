"""Compile module source for the master, under another Python version.

Run by ``master/compilers`` as ``pythonX.Y -I -S -B compile_worker.py``:
the master serves contexts of Python X.Y the bytecode this interpreter
makes, so that they need not compile what they import.  Runs on Python
3.6 and later; only the standard library.

On stdout, first ``<major>.<minor> <magic number in hex>\\n``; then for
each request on stdin (a 4-byte big-endian length and the file name in
UTF-8, undecodable bytes escaped, then the same for the source) one answer: a 4-byte length, then
``+`` and the marshalled code, or ``-`` and why it did not compile.
Ends at the end of stdin.
"""
import importlib.util
import marshal
import os
import struct
import sys
import warnings

LENGTH = struct.Struct('>I')


def read_exact(stream, size):
    data = b''
    while len(data) < size:
        chunk = stream.read(size - len(data))
        if not chunk:
            return None
        data += chunk
    return data


def read_field(stream):
    head = read_exact(stream, LENGTH.size)
    if head is None:
        return None
    return read_exact(stream, LENGTH.unpack(head)[0])


def answer(filename, source):
    try:
        code = compile(source.decode('utf-8'),
                       filename.decode('utf-8', 'surrogateescape'),
                       'exec', dont_inherit=True)
        return b'+' + marshal.dumps(code)
    except Exception as exc:  # SyntaxError, ValueError (NUL), recursion
        reason = '%s: %s' % (type(exc).__name__, exc)
        return b'-' + reason.encode('utf-8', 'replace')


def main():
    # Work for later contexts: it yields the CPU to what runs now (the
    # master; a first context compiling for itself on this machine).
    try:
        os.nice(10)
    except (AttributeError, OSError):
        pass
    # Compiling warns of odd source (SyntaxWarning); a .pyc does not, and
    # nobody reads this process's stderr while it runs.
    warnings.simplefilter('ignore')
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    stdout.write(('%d.%d %s\n' % (sys.version_info[0], sys.version_info[1],
                                  importlib.util.MAGIC_NUMBER.hex()))
                 .encode('ascii'))
    stdout.flush()
    while True:
        filename = read_field(stdin)
        if filename is None:
            return
        source = read_field(stdin)
        if source is None:
            return
        data = answer(filename, source)
        stdout.write(LENGTH.pack(len(data)) + data)
        stdout.flush()


if __name__ == '__main__':
    main()
