"""What contexts say, logged under ``plasmid.ctx.<context name>`` without
a logger for each context.

``logging`` keeps every logger it ever made, so a master that starts and
stops contexts for days would keep one per context (about half a KiB
each).  Instead, a context's records go through the logger that decides
for that name, as ``logging`` would find it: the logger of that very name
if someone made one (to configure that context), else its nearest
ancestor that exists (``plasmid.ctx.ssh`` for every ssh context, say, or
``plasmid.ctx``).  The records carry the context's full name, so handlers,
filters and formats see them as logged under it.

Payload: stdlib-only, Python 2.7-compatible (intermediaries log their
children's stderr through it).
"""
from __future__ import absolute_import
import logging
import sys
import traceback

PREFIX = 'plasmid.ctx'


def logger_name(context_name):
    return PREFIX + '.' + context_name


def level_of(context_name):
    """The level from which the records of context *context_name* are
    logged: what its child is told to forward."""
    return _deciding(logger_name(context_name)).getEffectiveLevel()


def log(context_name, level, msg, args=(), extra=None):
    """Log ``msg % args`` at *level* as context *context_name*'s logger
    would, had it been made."""
    name = logger_name(context_name)
    logger = _deciding(name)
    if not logger.isEnabledFor(level):
        return
    record = logger.makeRecord(name, level, '(unknown file)', 0, msg, args,
                               None, extra=extra)
    try:
        if logger.name == name:
            logger.handle(record)  # its own filters and `disabled` apply
        else:
            # As propagation from a logger below: the ancestors' handlers
            # only, never their filters.
            logger.callHandlers(record)
    except Exception:
        # A filter of the program's that raises (logging guards only a
        # handler's emit): here, on the loop, it lost the replies read
        # with the record, or ended the I/O thread.  Reported as logging
        # reports an emit that fails.
        if logging.raiseExceptions:
            sys.stderr.write('--- plasmid: logging a record of %s failed '
                             '---\n%s' % (context_name,
                                           traceback.format_exc()))


def _deciding(name):
    """The logger of *name* if it exists, else its nearest existing
    ancestor (``plasmid.ctx`` itself at the least)."""
    made = logging.Logger.manager.loggerDict
    while name != PREFIX:
        found = made.get(name)
        if isinstance(found, logging.Logger):
            return found
        name = name.rpartition('.')[0]
    return logging.getLogger(PREFIX)
