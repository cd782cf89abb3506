"""Requests a context's core never sends, made by hand inside a context for
test_modules.py: what a hostile child may ask the master.

Contexts fetch this module from the master by name, so it must stay valid
Python 2.7 (no f-strings, no annotations) and import only the standard
library and plasmid's core.
"""
from plasmid.core import child
from plasmid.core.router import GET_MODULE


def ask_modules(names, origin):
    """Send the parent one GET_MODULE ``(names, origin)`` as it is: none of
    *names* dropped for being known, asked for already or named twice, as
    the importer would (``origin`` None: one import; else a batch)."""
    router = child.current.router
    router.send_value(router.parent_id, GET_MODULE, (list(names), origin))


def ask_data(package, relpath):
    """The parent's answer to GET_DATA ``(package, relpath)``: ``(kind,
    value)``, whatever the importer knows of *package*."""
    from plasmid.core import resources
    return resources.ParentData(child.current.importer).fetch_data(
        package, relpath)


def ask_data_and_stop_reading(package, relpath, count):
    """Send the parent *count* GET_DATA requests for one file without
    waiting for their answers, then stop (SIGSTOP): its answers pile up
    on the link, unread."""
    import os
    import signal
    from plasmid.core.framing import Message
    from plasmid.core.loop import Latch
    from plasmid.core.router import GET_DATA
    router = child.current.router
    for _ in range(count):
        handle = router.expect_reply(router.parent_id, Latch(router.loop))
        router.send(Message.encoding(router.parent_id, router.context_id,
                                     GET_DATA, (package, relpath), handle))
    os.kill(os.getpid(), signal.SIGSTOP)
