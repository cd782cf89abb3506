"""Let ``AnsibleModule.run_command`` start its commands by vfork.

Shipped into target contexts and used in module processes only, so it
stays stdlib-only and Python 2.7-compatible.

``run_command`` hands ``subprocess.Popen`` a ``preexec_fn`` that only sets
the umask, and only when the caller asked for one.  Any ``preexec_fn``
makes CPython fork the whole interpreter (and run Python in the child)
instead of using vfork, which CPython 3.10+ does otherwise: for
``/bin/true`` from a module process that is 2.7 ms against 0.7 ms on this
machine, on every ``command`` or ``shell`` task.  :func:`install` makes
Popen drop that function when it would do nothing, or pass the umask as
Popen's own ``umask`` argument (Python 3.9+) when it would set one: the
command starts in the same state either way.

Any other ``preexec_fn`` is kept.  The function is recognised by its name
and by its code, compared with :func:`_umask_only_shape` compiled by the
same interpreter, so a release that changes what it does is left alone
(slower, still right); tests/ansible/test_vfork.py fails loudly then.
This is private ansible-core internals: keep it to this module.
"""
from __future__ import absolute_import
import os
import subprocess
import sys

QUALNAME = 'AnsibleModule.run_command.<locals>.preexec'
_POPEN_HAS_UMASK = sys.version_info >= (3, 9)


def _umask_only_shape():
    umask = None

    def preexec():
        if umask:
            os.umask(umask)
    return preexec


def _code_key(fn):
    code = fn.__code__
    return (code.co_code, code.co_consts, code.co_names, code.co_freevars,
            code.co_argcount)


_KNOWN_SHAPE = _code_key(_umask_only_shape())


def umask_of(fn):
    """The umask *fn* would set (None: none), if *fn* is run_command's
    umask-only preexec; else raise ValueError."""
    if getattr(fn, '__qualname__', None) != QUALNAME or \
            not hasattr(fn, '__code__') or _code_key(fn) != _KNOWN_SHAPE:
        raise ValueError('not run_command\'s umask-only preexec_fn')
    return fn.__closure__[0].cell_contents or None


def popen_arguments(kwargs):
    """*kwargs* for Popen without a preexec_fn that can go: a copy, or
    *kwargs* itself when nothing changes."""
    fn = kwargs.get('preexec_fn')
    if fn is None:
        return kwargs
    try:
        umask = umask_of(fn)
    except ValueError:
        return kwargs
    if umask is not None and (not _POPEN_HAS_UMASK or
                              kwargs.get('umask', -1) != -1):
        return kwargs
    changed = dict(kwargs, preexec_fn=None)
    if umask is not None:
        changed['umask'] = umask
    return changed


def install():
    """In this (module) process, route Popen's keyword arguments through
    :func:`popen_arguments`.  Once per process."""
    popen_init = subprocess.Popen.__init__
    if getattr(popen_init, 'plasmid_vfork', False) or \
            sys.version_info < (3,):
        return

    def __init__(self, *args, **kwargs):
        popen_init(self, *args, **popen_arguments(kwargs))
    __init__.plasmid_vfork = True
    subprocess.Popen.__init__ = __init__
