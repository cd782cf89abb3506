"""The script the master runs (``__main__``), as contexts see it.

A context imports the script's functions from its file under another name
(``core.context.MAIN_ALIAS``), so that its ``if __name__ == '__main__':``
block stays out there: what only that block defines does not exist in a
context.  The script's syntax tree tells which functions and classes those
are, so that calling one fails here at once, saying why, instead of in the
context with an AttributeError that names the alias.
"""
from __future__ import annotations

import ast
import functools
import os
import sys
from typing import Any, Optional


def path() -> Optional[str]:
    """The script's file, if ``__main__`` has one."""
    return getattr(sys.modules.get('__main__'), '__file__', None)


def has_source() -> bool:
    """Whether there is a file to send (not so for python -c, stdin or an
    interactive session)."""
    where = path()
    return bool(where) and os.path.isfile(where)


def why_not_there(func: Any) -> Optional[str]:
    """Why a context would not find *func*, a function or class of the
    script, or None."""
    if getattr(func, '__module__', None) != '__main__':
        return None
    where = path()
    outermost = getattr(func, '__qualname__', '').split('.')[0]
    if not where or outermost not in _defined_only_under_guard(where):
        return None
    return ('%s is defined under "if __name__ == \'__main__\':" in %s, which '
            'a context does not run (it imports the script under another '
            'name); define it at the top level' % (outermost, where))


@functools.lru_cache(maxsize=4)
def _defined_only_under_guard(where: str) -> frozenset:
    try:
        with open(where, 'rb') as source:
            tree = ast.parse(source.read(), where)
    except (OSError, SyntaxError, ValueError):
        return frozenset()  # nothing to tell: the context will say
    top: set[str] = set()
    guarded: set[str] = set()
    _collect(tree.body, False, top, guarded)
    return frozenset(guarded - top)


def _collect(statements: list, under_guard: bool, top: set[str],
             guarded: set[str]) -> None:
    """The names *statements* define with def and class, into *guarded*
    where the guard's block holds them, else into *top*."""
    for node in statements:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef,
                             ast.ClassDef)):
            (guarded if under_guard else top).add(node.name)
        elif isinstance(node, ast.If) and _is_main_guard(node.test):
            _collect(node.body, True, top, guarded)
            _collect(node.orelse, under_guard, top, guarded)
        else:  # if, try, with, for, while: their blocks run on import too
            for field in ('body', 'orelse', 'finalbody'):
                _collect(getattr(node, field, []), under_guard, top, guarded)
            for handler in getattr(node, 'handlers', []):
                _collect(handler.body, under_guard, top, guarded)


def _is_main_guard(test: ast.expr) -> bool:
    """``__name__ == '__main__'``, either way round."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1
            and isinstance(test.ops[0], ast.Eq)):
        return False
    sides = [test.left, test.comparators[0]]
    names = [s.id for s in sides if isinstance(s, ast.Name)]
    texts = [s.value for s in sides if isinstance(s, ast.Constant)]
    return names == ['__name__'] and texts == ['__main__']
