"""Find the modules a module imports, without running it.

The module's bytecode is scanned for ``IMPORT_NAME`` instructions: those
at module level (including class bodies, which run at import time) are
what importing the module certainly triggers; imports inside functions are
lazy and left alone.  The bytecode comes from the master's own ``.pyc``
cache when it is fresh, so most scans never compile anything.
"""
from __future__ import annotations

import dis
import importlib.util
import marshal
import os
import types
from typing import Iterator, NamedTuple, Optional

_IMPORT_NAME = dis.opmap['IMPORT_NAME']
_LOAD_CONST = dis.opmap['LOAD_CONST']
_EXTENDED_ARG = dis.opmap['EXTENDED_ARG']
_CO_NEWLOCALS = 0x0002  # set on function bodies, not on class bodies


class ImportStatement(NamedTuple):
    """One ``import`` as written: name, ``from`` list, relative level, and
    whether it sits in a branch (if/else, except handler, loop body) that
    importing the module may skip."""

    name: str
    fromlist: tuple
    level: int
    conditional: bool = False


def load_code(path: str, source: Optional[str] = None) -> types.CodeType:
    """The module's code object: from a fresh .pyc if there is one."""
    code = cached_code(path)
    if code is not None:
        return code
    if source is None:
        with open(path, 'rb') as handle:
            source = handle.read()
    return compile_source(source, path)


def compile_source(source, path: str) -> types.CodeType:
    """*source* compiled as the module at *path*, free of this module's
    ``__future__`` imports."""
    return compile(source, path, 'exec', dont_inherit=True)


def cached_code(path: str) -> Optional[types.CodeType]:
    """The code of *path*'s .pyc if it is fresh (mtime and size), else
    None."""
    try:
        cached = importlib.util.cache_from_source(path)
        with open(cached, 'rb') as handle:
            data = handle.read()
        stat = os.stat(path)
    except (OSError, NotImplementedError, ValueError):
        return None
    if len(data) < 16 or data[:4] != importlib.util.MAGIC_NUMBER:
        return None
    flags = int.from_bytes(data[4:8], 'little')
    if flags & 1:  # hash-based pyc: trust it only via its own check
        return None
    mtime = int.from_bytes(data[8:12], 'little')
    size = int.from_bytes(data[12:16], 'little')
    if mtime != int(stat.st_mtime) & 0xFFFFFFFF or \
            size != stat.st_size & 0xFFFFFFFF:
        return None
    try:
        return marshal.loads(data[16:])
    except (ValueError, EOFError, TypeError):
        return None


def module_level_imports(code: types.CodeType,
                         classify: bool = True) -> list[ImportStatement]:
    """Imports run when the module is imported (module and class bodies).

    With *classify* False, every import is reported as unconditional,
    which skips the (slower) search for branches.
    """
    found: list[ImportStatement] = []
    stack = [code]
    while stack:
        current = stack.pop()
        found.extend(_imports_in(current, classify))
        for const in current.co_consts:
            if isinstance(const, types.CodeType) and \
                    not const.co_flags & _CO_NEWLOCALS:
                stack.append(const)  # a class body
    return found


def all_imports(code: types.CodeType) -> list[ImportStatement]:
    """Every import in the module, functions included (unclassified)."""
    found: list[ImportStatement] = []
    stack = [code]
    while stack:
        current = stack.pop()
        found.extend(_imports_in(current, False))
        stack.extend(c for c in current.co_consts
                     if isinstance(c, types.CodeType))
    return found


_DYNAMIC_IMPORTERS = ('__import__', 'import_module')


def dynamic_import_hints(code: types.CodeType) -> list[str]:
    """Module names given as strings to ``__import__``/``import_module``
    at module level, e.g. ``for name in ('urllib3', 'idna'):
    __import__(name)``: every dotted-identifier string constant of a code
    object that calls one of them.  The caller keeps only names it can
    serve."""
    names: list[str] = []
    stack = [code]
    while stack:
        current = stack.pop()
        stack.extend(c for c in current.co_consts
                     if isinstance(c, types.CodeType)
                     and not c.co_flags & _CO_NEWLOCALS)
        if not any(n in current.co_names for n in _DYNAMIC_IMPORTERS):
            continue
        for const in current.co_consts:
            for item in (const if isinstance(const, tuple) else (const,)):
                if isinstance(item, str) and is_module_name(item):
                    names.append(item)
    return names


def is_module_name(name: str) -> bool:
    """Whether *name* is dotted Python identifiers, as any module's name."""
    return all(part.isidentifier() for part in name.split('.'))


_JUMPS = frozenset(dis.hasjrel + dis.hasjabs)


_RETURNS = frozenset(dis.opmap[n] for n in ('RETURN_VALUE', 'RETURN_CONST')
                     if n in dis.opmap)
_NO_FALLTHROUGH = _RETURNS | frozenset(
    dis.opmap[n] for n in ('RAISE_VARARGS', 'RERAISE', 'JUMP_FORWARD',
                           'JUMP_BACKWARD', 'JUMP_ABSOLUTE',
                           'JUMP_BACKWARD_NO_INTERRUPT') if n in dis.opmap)


class _Flow:
    """A code object's control flow, without exception edges.

    An instruction is unconditional if every path from the start to a
    return passes through it.  Exception edges are left out: a try body
    always runs (``SETUP_*`` before 3.11 is no branch), an except handler
    only when something failed.  Ranges skipped by forward jumps are not
    enough: since 3.11 the last ``if`` of a module ends its first branch
    with a copy of the final return, so no jump skips its ``else``.
    """

    def __init__(self, code: types.CodeType) -> None:
        instrs = list(dis.get_instructions(code))
        self.index = {ins.offset: i for i, ins in enumerate(instrs)}
        self.returns = {i for i, ins in enumerate(instrs)
                        if ins.opcode in _RETURNS}
        self.succ: list[list[int]] = []
        for i, ins in enumerate(instrs):
            nxt = []
            if ins.opcode not in _NO_FALLTHROUGH and i + 1 < len(instrs):
                nxt.append(i + 1)
            if ins.opcode in _JUMPS and \
                    not ins.opname.startswith('SETUP_') and \
                    ins.argval in self.index:
                nxt.append(self.index[ins.argval])
            self.succ.append(nxt)

    def always_runs(self, offset: int) -> bool:
        """Can no run reach a return without passing *offset*?"""
        avoid = self.index.get(offset)
        if avoid is None:
            return False
        seen, stack = {0, avoid}, ([0] if avoid else [])
        while stack:
            i = stack.pop()
            if i in self.returns:
                return False
            for j in self.succ[i]:
                if j not in seen:
                    seen.add(j)
                    stack.append(j)
        return True


_IMPORT_OPCODE = bytes([_IMPORT_NAME])


def _imports_in(code: types.CodeType,
                classify: bool) -> Iterator[ImportStatement]:
    raw = code.co_code
    # Most code objects (function bodies) import nothing: one C-speed look
    # at the opcodes (the even bytes) saves walking them in Python.
    if _IMPORT_OPCODE not in raw[::2]:
        return
    consts = code.co_consts
    flow = None
    recent: list = []  # the last two constants loaded
    extended = 0
    for offset in range(0, len(raw), 2):
        op, arg = raw[offset], raw[offset + 1] | extended
        if op == _EXTENDED_ARG:
            extended = arg << 8
            continue
        extended = 0
        if op == _LOAD_CONST:
            recent = recent[-1:] + [consts[arg]]
        elif op == _IMPORT_NAME:
            level, fromlist = (recent + [0, None])[:2] if len(recent) < 2 \
                else recent[-2:]
            if classify and flow is None:
                flow = _Flow(code)
            conditional = classify and not flow.always_runs(offset)
            yield ImportStatement(
                code.co_names[arg],
                fromlist if isinstance(fromlist, tuple) else (),
                level if isinstance(level, int) else 0, conditional)
            recent = []
        elif op:  # opcode 0 is CACHE (3.11+): ignore it
            recent = []


def resolve(statement: ImportStatement, importer: str,
            is_package: bool) -> list[str]:
    """Absolute names an import statement may load, parents first.

    ``from a import b`` yields ``a`` and ``a.b``: whether ``a.b`` is a
    submodule or an attribute is for the caller to check.
    """
    name = statement.name
    if statement.level:
        package = importer if is_package else importer.rpartition('.')[0]
        parts = package.split('.')
        if statement.level - 1 >= len(parts) or not package:
            return []  # beyond the top-level package: would fail anyway
        base = '.'.join(parts[:len(parts) - (statement.level - 1)])
        name = base + '.' + name if name else base
    names = []
    parts = name.split('.')
    for i in range(1, len(parts) + 1):
        names.append('.'.join(parts[:i]))
    for item in statement.fromlist:
        if item != '*':
            names.append(name + '.' + item)
    return names
