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
