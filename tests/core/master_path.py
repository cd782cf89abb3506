"""Master-side helper of the import tests: a package tree on the master's
sys.path for the length of a test.  Never shipped to a context (unlike
import_fns), so it may use anything the master's Python has."""
from __future__ import annotations

import contextlib
import importlib
import sys
from typing import Iterator


@contextlib.contextmanager
def on_master_path(root: str, *packages: str) -> Iterator[str]:
    """Put *root* on the master's sys.path; undo it, and forget the
    modules of *packages* the master imported, afterwards."""
    sys.path.insert(0, root)
    importlib.invalidate_caches()
    try:
        yield root
    finally:
        sys.path.remove(root)
        sys.path_importer_cache.pop(root, None)
        for name in list(sys.modules):
            if name.partition('.')[0] in packages:
                del sys.modules[name]
