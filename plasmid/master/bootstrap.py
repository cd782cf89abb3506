"""Build the compressed core every new context boots from.

The core's sources are stripped of docstrings and comments (they stay in
the repository for readers), their function locals renamed to single
letters (``shorten.py``), indented by one space a level, and packed as
one raw string, each behind a line naming it, with a small loader into one
zlib-compressed script that works on Python 2.7 and 3.x.  Stripping costs
tens of milliseconds, so the result is kept in the per-user disk cache
(``cache.py``) under a key of the sources it came from.

The compressor is zopfli (a dependency) where it imports: it searches
harder for the same deflate format, so every context's zlib reads it, and
it makes the blob about 5% (~770 bytes) smaller than zlib's level 9, which
is what keeps the core under its 16 KiB budget.  It costs ~0.1 s once per
source version (then the cache holds it).  Without it, zlib level 9.
"""
from __future__ import annotations

import ast
import functools
import importlib.util
import zlib
from typing import Optional

from plasmid.master import cache, shorten

try:
    from zopfli.zlib import compress as zopfli_compress
except ImportError:  # installed without its dependencies: plain zlib
    zopfli_compress = None

# Order matters: each module only imports modules listed before it.
CORE_MODULES = [
    'plasmid.core.compat',
    'plasmid.core.errors',
    'plasmid.core.codec',
    'plasmid.core.framing',
    'plasmid.core.loop',
    'plasmid.core.logger',
    'plasmid.core.stream',
    'plasmid.core.router',
    'plasmid.core.context',
    'plasmid.core.dispatch',
    'plasmid.core.logs',
    'plasmid.core.importer',
    'plasmid.core.child',
]

# What ``import plasmid`` gives inside a context: the errors and helpers
# that make sense there, never the master's Router.
CHILD_PACKAGE = '''from plasmid.core.errors import (Error, CallError, ConnectError,
    ContextLost, TimeoutError)
from plasmid.core.context import as_completed
'''

# Starts each module's part of the packed text (the loader splits at it).
# Stripped code never holds it: it has no comments, and ast.unparse writes
# each string on one line.
MODULE_MARK = '\n#%'

LOADER = '''import sys,types
def _plasmid_load(name,pkg,src):
 m=sys.modules.get(name) or types.ModuleType(name)
 m.__file__='<plasmid:%s>'%name
 m.__package__=pkg and name or name.rpartition('.')[0]
 if pkg:m.__path__=[]
 sys.modules[name]=m
 parent,_,leaf=name.rpartition('.')
 if parent:setattr(sys.modules[parent],leaf,m)
 exec(compile(src,m.__file__,'exec'),m.__dict__)
for _c in _PLASMID_TEXT.split(MARK)[1:]:
 _h,_,_s=_c.partition('\\n');_n,_p=_h.split(' ')
 _plasmid_load(_n,_p=='1',_s)
sys.modules['plasmid.core.child'].main(b,f)
'''.replace('MARK', repr(MODULE_MARK))


def read_source(module_name: str) -> str:
    spec = importlib.util.find_spec(module_name)
    if spec is None or spec.origin is None:
        raise ImportError('cannot find %s' % module_name)
    with open(spec.origin, encoding='utf-8') as handle:
        return handle.read()


def _is_docstring(node: ast.stmt) -> bool:
    return (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str))


def minify(source: str) -> str:
    """Drop docstrings and comments and shorten locals; keep code the same
    on 2.7 and 3.x."""
    tree = ast.parse(source)
    for node in ast.walk(tree):
        body = getattr(node, 'body', None)
        if isinstance(body, list) and body and _is_docstring(body[0]):
            body.pop(0)
            if not body:
                body.append(ast.Pass())
    shorten.shorten_locals(tree)
    return _one_space_indents(ast.unparse(tree) + '\n')


def _one_space_indents(code: str) -> str:
    """ast.unparse indents by four spaces a level; one compresses better
    (~0.5 KiB of the core).  Kept only if the code means the same after."""
    lines = []
    for line in code.split('\n'):
        text = line.lstrip(' ')
        lines.append(' ' * ((len(line) - len(text)) // 4) + text)
    narrow = '\n'.join(lines)
    if ast.dump(ast.parse(narrow)) != ast.dump(ast.parse(code)):
        return code
    return narrow


def core_module_names() -> list[str]:
    """Every module a context boots with."""
    return ['plasmid', 'plasmid.core'] + CORE_MODULES


def core_modules(sources: Optional[dict[str, str]] = None
                 ) -> list[tuple[str, bool, str]]:
    """(name, is_package, source) for everything the bootstrap carries."""
    sources = sources or _core_sources()
    modules = [('plasmid', True, ''), ('plasmid.core', True, '')]
    for name in CORE_MODULES:
        modules.append((name, False, minify(sources[name])))
    # The package's exports import from core: fill it in last.
    modules.append(('plasmid', True, CHILD_PACKAGE))
    return modules


def _core_sources() -> dict[str, str]:
    return {name: read_source(name) for name in CORE_MODULES}


@functools.lru_cache(maxsize=None)
def build_blob() -> bytes:
    """The zlib-compressed second stage: from the disk cache when these
    sources were stripped before by this Python, else built (and kept)."""
    sources = _core_sources()
    parts = [LOADER.encode(), CHILD_PACKAGE.encode(), compressor().encode()]
    # How the core is stripped is part of what the blob is built from.
    for packer in (__name__, shorten.__name__):
        parts.append(read_source(packer).encode('utf-8'))
    for name in CORE_MODULES:
        parts += [name.encode(), sources[name].encode('utf-8')]
    return cache.load_or_build('core', parts, lambda: _compress(sources))


def _compress(sources: dict[str, str]) -> bytes:
    script = '_PLASMID_TEXT=%s\n%s' % (packed(core_modules(sources)), LOADER)
    data = script.encode('ascii')  # the payload must stay ASCII for Python 2
    if zopfli_compress is not None:
        return zopfli_compress(data)
    return zlib.compress(data, 9)


def compressor() -> str:
    """Which compressor builds the blob (part of its cache key)."""
    return 'zlib' if zopfli_compress is None else 'zopfli'


def packed(modules: list[tuple[str, bool, str]]) -> str:
    """*modules* as one raw string literal: a MODULE_MARK line naming each
    (its name, then 1 for a package, else 0), then its code unescaped (a
    repr would double every newline and backslash: ~0.4 KiB compressed)."""
    text = ''
    for name, is_package, source in modules:
        if MODULE_MARK in source:
            raise ValueError('%s holds the module mark' % name)
        text += '%s%s %d\n%s' % (MODULE_MARK, name, is_package, source)
    literal = "r'''" + text + "'''"
    # Three quotes in the code would end the literal early: then it does
    # not parse, or reads back as something else.
    try:
        same = ast.literal_eval(literal) == text
    except (SyntaxError, ValueError):
        same = False
    if not same:
        raise ValueError('the core cannot be packed as one raw string')
    return literal
