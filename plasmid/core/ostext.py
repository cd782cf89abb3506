"""Text as the system takes it (a path, a command word, an environment
variable), on any Python from 2.7 on.

The system takes bytes, and sshd and sftp hand words on as UTF-8.  Python
2 takes a str (bytes) only, where plasmid's codec gives it unicode; Python
3.6 in the C locale (as over ssh without LANG: before PEP 538 and 540)
encodes text as ASCII and fails on anything else.  Not in the bootstrap:
the modules that start programs or write files bring it along.
"""
from __future__ import absolute_import
import codecs
import os
import re
import sys

# Whether this Python hands text to the system as UTF-8 (Python 3.7+
# always does in the C locale).
_TEXT_IS_UTF8 = str is not bytes and \
    codecs.lookup(sys.getfilesystemencoding()).name == 'utf-8'
# Python 2 has no surrogateescape: bytes beyond UTF-8 that it sent as text
# (a file name, escaped as Python 3 does: b'\xff' as U+DCFF) are put back
# by hand.  Its UTF-8 codec writes a lone surrogate as three bytes of its
# own, another name.  Narrow builds (surrogate pairs) are left as they are.
_ESCAPED = re.compile(u'([\udc80-\udcff]+)') \
    if str is bytes and sys.maxunicode > 0xffff else None


def native(text):
    """*text* as this Python should hand it to the system: as it is where
    that works (bytes; any text where the system encoding is UTF-8; ASCII
    text on Python 3), else its UTF-8 bytes."""
    if isinstance(text, bytes) or _TEXT_IS_UTF8:
        return text
    if str is not bytes:  # Python 3: a str of ASCII is taken as it is
        try:
            text.encode('ascii')
            return text
        except UnicodeEncodeError:
            pass
    if str is not bytes:
        return text.encode('utf-8', 'surrogateescape')
    if _ESCAPED is None:
        return text.encode('utf-8')
    parts = _ESCAPED.split(text)  # escapes at the odd places
    return b''.join(
        b''.join(chr(ord(c) - 0xdc00) for c in part) if i % 2
        else part.encode('utf-8') for i, part in enumerate(parts))


# What PEP 538 sets LC_CTYPE to in the environment of a Python 3.7+ that
# started in the C locale.
_COERCED = ('C.UTF-8', 'C.utf8', 'UTF-8')


def programs_environ():
    """``os.environ`` as the programs this process starts should have it:
    without the LC_CTYPE this Python set in its own environment as it
    started (PEP 538).  A program that sshd or sudo starts has none: a
    Python started from a context (a become hop) would take it over and
    run in another mode (no UTF-8 mode), and a shell's programs speak
    otherwise (quotes, translations)."""
    env = dict(os.environ)
    if env.get('LC_CTYPE') in _COERCED:
        try:
            with open('/proc/self/environ', 'rb') as handle:
                started_with = handle.read().split(b'\0')
        except (IOError, OSError):
            return env
        if not any(e.startswith(b'LC_CTYPE=') for e in started_with):
            del env['LC_CTYPE']
    return env
