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
import sys

# Whether this Python hands text to the system as UTF-8 (Python 3.7+
# always does in the C locale).
_TEXT_IS_UTF8 = str is not bytes and \
    codecs.lookup(sys.getfilesystemencoding()).name == 'utf-8'
_SURROGATES = 'strict' if str is bytes else 'surrogateescape'


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
    return text.encode('utf-8', _SURROGATES)
