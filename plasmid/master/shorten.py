"""Give the core's function locals one-letter names before it is packed.

The bootstrap is a byte budget (< 16 KiB compressed).  Descriptive local
names cost bytes in every context's boot; renaming them inside the blob
keeps the repository readable and the blob small.  Only what is provably
private to one function is renamed:

- names the function binds itself (assignment, loop, ``with``/``except``
  targets) and a plain method's first parameter (``self``, ``cls``),
  never other parameters (callers may pass them by keyword), nested
  functions' names (their ``__name__`` shows in tracebacks), names it
  imports, nor names Python mangles in a class (``__x``);
- not in a function that mentions ``locals``, ``vars``, ``dir``,
  ``exec``, ``eval`` or a frame (``f_locals``, ``_getframe``), nor one
  that holds a class (its body binds attributes), nor a name declared
  ``global`` or ``nonlocal`` anywhere in it.

So the core must not pass ``self`` by keyword, call ``eval`` under
another name, nor read another core function's locals through its frame.

A renamed name is renamed throughout the function, nested functions and
comprehensions included: each use there is the same variable or a
shadowing one, and both keep meaning the same after a consistent rename.
The short names are drawn from letters the module uses nowhere, so no
global, builtin or attribute lookup can be captured.
"""
from __future__ import annotations

import ast
import itertools
import keyword
import string
from typing import Iterator

_SCOPE_PEEKERS = {'locals', 'vars', 'dir', 'exec', 'eval',
                  'f_locals', '_getframe', 'currentframe'}
# Decorators after which the first parameter is still the instance/class.
_METHOD_DECORATORS = {'property', 'classmethod', 'setter', 'getter',
                      'deleter'}
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


def shorten_locals(tree: ast.Module) -> ast.Module:
    """Rename the private locals of every outermost function in *tree*."""
    taken = _identifiers(tree)
    for function, is_method in _outermost_functions(tree, False):
        names = _private_locals(function, is_method)
        renames = dict(zip(names, _short_names(taken)))
        if renames:
            _Renamer(renames).visit_body(function)
    return tree


def _identifiers(tree: ast.AST) -> set[str]:
    """Every name the module spells anywhere as a variable."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            names.add(node.id)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, (*_FUNCTIONS, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.alias):
            names.add((node.asname or node.name).partition('.')[0])
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            names.update(node.names)
    return names


def _short_names(taken: set[str]) -> Iterator[str]:
    letters = string.ascii_lowercase + string.ascii_uppercase
    for size in (1, 2):
        for chars in itertools.product(letters, repeat=size):
            name = ''.join(chars)
            if name not in taken and not keyword.iskeyword(name):
                yield name


def _outermost_functions(tree: ast.AST, in_class: bool
                         ) -> Iterator[tuple[ast.AST, bool]]:
    """(function, whether it is a method) for each function that no
    other function holds."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, _FUNCTIONS):
            yield node, in_class and _takes_self(node, tree)
        else:
            in_body = isinstance(node, ast.ClassDef)
            yield from _outermost_functions(node, in_body)


def _takes_self(function: ast.AST, cls: ast.ClassDef) -> bool:
    """Whether *function*, in *cls*'s body, surely gets the instance or
    class first: not a static method, however it is made."""
    for decorator in function.decorator_list:
        name = getattr(decorator, 'id', getattr(decorator, 'attr', None))
        if name not in _METHOD_DECORATORS:
            return False
    for statement in cls.body:  # ``f = staticmethod(f)``
        if isinstance(statement, _FUNCTIONS):
            continue
        for node in ast.walk(statement):
            if (isinstance(node, ast.Name) and node.id == function.name
                    and isinstance(node.ctx, ast.Store)):
                return False
    return True


def _private_locals(function: ast.AST, is_method: bool) -> list[str]:
    """The names *function* binds that only it can see, in order of first
    binding (so functions alike get letters alike: it compresses better),
    a method's first parameter first."""
    inner = [node for statement in function.body
             for node in ast.walk(statement)]
    if _peeks_at_scope(inner):
        return []
    first = function.args.posonlyargs + function.args.args
    own = [first[0].arg] if is_method and first else []
    excluded = _parameters(function) - set(own) | _parameters_of(inner)
    for node in inner:
        if isinstance(node, (ast.Global, ast.Nonlocal)):
            excluded.update(node.names)
        elif isinstance(node, ast.alias):
            excluded.add((node.asname or node.name).partition('.')[0])
        elif isinstance(node, _FUNCTIONS):
            excluded.add(node.name)
    names: list[str] = []
    for name in itertools.chain(own, _own_bindings(function)):
        if (name not in excluded and len(name) > 1 and '__' not in name
                and name not in names):
            names.append(name)
    return names


def _peeks_at_scope(nodes: list[ast.AST]) -> bool:
    for node in nodes:
        if isinstance(node, ast.ClassDef):
            return True
        name = getattr(node, 'id', getattr(node, 'attr', None))
        if name in _SCOPE_PEEKERS:
            return True
    return False


def _parameters(function: ast.AST) -> set[str]:
    args = function.args
    every = args.posonlyargs + args.args + args.kwonlyargs
    every += [arg for arg in (args.vararg, args.kwarg) if arg is not None]
    return {arg.arg for arg in every}


def _parameters_of(nodes: list[ast.AST]) -> set[str]:
    names: set[str] = set()
    for node in nodes:
        if isinstance(node, (*_FUNCTIONS, ast.Lambda)):
            names |= _parameters(node)
    return names


def _own_bindings(function: ast.AST) -> Iterator[str]:
    """Names bound in *function*'s own scope (not in nested scopes)."""
    for statement in function.body:
        yield from _bindings(statement)


def _bindings(node: ast.AST) -> Iterator[str]:
    if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
        yield node.id
    elif isinstance(node, _FUNCTIONS):
        yield node.name  # its body is another scope
        return
    elif isinstance(node, (ast.Lambda, ast.ListComp, ast.SetComp,
                           ast.DictComp, ast.GeneratorExp)):
        return  # scopes of their own (a Python 2 list comprehension
        # leaks its variable, but a consistent rename covers that too)
    elif isinstance(node, ast.ExceptHandler) and node.name:
        yield node.name
    for child in ast.iter_child_nodes(node):
        yield from _bindings(child)


class _Renamer(ast.NodeTransformer):

    def __init__(self, renames: dict[str, str]) -> None:
        self.renames = renames

    def visit_body(self, function: ast.AST) -> None:
        """Rename in *function*'s body and its own parameters, not in its
        decorators or defaults (they are the enclosing scope's)."""
        function.body = [self.visit(statement) for statement in function.body]
        for arg in function.args.posonlyargs + function.args.args:
            arg.arg = self.renames.get(arg.arg, arg.arg)

    def visit_arg(self, node: ast.arg) -> ast.arg:
        return node  # a nested function's parameters are never renamed

    def visit_Name(self, node: ast.Name) -> ast.Name:
        node.id = self.renames.get(node.id, node.id)
        return node

    def visit_FunctionDef(self, node: ast.AST) -> ast.AST:
        node.name = self.renames.get(node.name, node.name)
        self.generic_visit(node)
        return node

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_ExceptHandler(self, node: ast.ExceptHandler) -> ast.AST:
        if node.name:
            node.name = self.renames.get(node.name, node.name)
        self.generic_visit(node)
        return node
