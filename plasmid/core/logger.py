"""The core's loggers, which import ``logging`` only for a record that goes out.

``import logging`` cost a context's start 5-10 ms of CPU, second only to
compiling the core, most of it for what it imports in turn (re, enum,
traceback).  The core logs only when something goes wrong, so a context
that runs calls and imports nothing that needs ``logging`` never loads
it.  A record below ``threshold`` (the context's log level, set by
``logs.install``) is dropped without loading it; once anything has
loaded ``logging``, records go to the real logger of the same name, as
before.

Python 2 imports ``logging`` and ``traceback`` with the core: see
``compat.stdlib``.
"""
from __future__ import absolute_import
import sys

from plasmid.core import compat

DEBUG, INFO, WARNING, ERROR = 10, 20, 30, 40

# Records below this level are dropped while logging is not loaded.
threshold = WARNING


class Logger(object):
    """Stands in for ``logging.getLogger(name)`` in the core."""

    def __init__(self, name):
        self.name = name

    def debug(self, msg, *args):
        self._log(DEBUG, msg, args)

    def error(self, msg, *args):
        self._log(ERROR, msg, args)

    def exception(self, msg, *args):
        self._log(ERROR, msg, args, True)

    def _log(self, level, msg, args, exc_info=False):
        if 'logging' not in sys.modules and level < threshold:
            return
        try:
            logging = compat.stdlib('logging')
        except ImportError:
            return  # a Python built without it goes on unlogged
        logging.getLogger(self.name).log(level, msg, *args,
                                         exc_info=exc_info)
