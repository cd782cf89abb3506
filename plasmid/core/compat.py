"""The one place where Python 2 and Python 3 differ for the payload."""
from __future__ import absolute_import
import sys

PY2 = sys.version_info[0] == 2

if PY2:  # pragma: no cover - exercised on 2.7 targets
    text_type = unicode  # noqa: F821
    bytes_type = str
    int_types = (int, long)  # noqa: F821
    string_types = (str, unicode)  # noqa: F821

    builtin_timeout = EnvironmentError
else:
    text_type = str
    bytes_type = bytes
    int_types = (int,)
    string_types = (str,)
    builtin_timeout = TimeoutError


if PY2:  # pragma: no cover - exercised on 2.7 targets
    # An import statement takes Python 2's global import lock, which a
    # thread importing from the parent holds while the loop brings its
    # module: code that may run on the loop must not import.  So Python 2
    # contexts load these with the core, as they always did.
    import logging
    import traceback
    _EAGER = {'logging': logging, 'traceback': traceback}


def stdlib(name):
    """Standard module *name* (logging, traceback), imported on first use
    on Python 3: each costs a context's start milliseconds it mostly does
    not need."""
    if PY2:  # pragma: no cover - exercised on 2.7 targets
        return _EAGER[name]
    return __import__(name)


def text_from_native(value):
    """Return a Python 2 ``str`` (bytes) as text; leave text alone."""
    if isinstance(value, bytes_type) and not PY2:
        return value.decode('utf-8', 'replace')
    if PY2 and isinstance(value, str):
        return value.decode('utf-8', 'replace')
    return value


def bytes_from_wire(value):
    """Bytes a Python 2 context passed on (a module's source, a data file):
    it re-sends them as a native string, which Python 3 decodes to text
    with ``surrogateescape``; encoding it the same way gives them back."""
    if isinstance(value, text_type) and not PY2:
        return value.encode('utf-8', 'surrogateescape')
    return value


def qualified_name(func):
    """The dotted path of *func* inside its module, as Python 3 spells it."""
    return getattr(func, '__qualname__', None) or getattr(func, '__name__',
                                                          '<')
