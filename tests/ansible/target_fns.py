"""Run in target contexts by test_target.py (any Python, 2.7 too)."""
import sys

from plasmid.ansible import target, warm


def import_from_zip(digest, name, attribute):
    """Import *name* from the payload *digest* as a forked module would,
    and return its *attribute*."""
    finder = target.ZipFinder(target._ZIPS[digest])
    sys.meta_path.insert(0, finder)
    try:
        module = __import__(name, fromlist=['*'])
        return getattr(module, attribute)
    finally:
        sys.meta_path.remove(finder)
        for loaded in [n for n in sys.modules
                       if n == name or n.startswith(name.split('.')[0])]:
            del sys.modules[loaded]


def held_files():
    return len(target._FILES)


def warm_modules():
    return warm.names()


def current_locale():
    import locale
    return locale.setlocale(locale.LC_ALL)


def mapping_cache_knows(type_name):
    """Whether Mapping's ABC caches hold an answer for a built-in type."""
    import _abc
    import builtins
    from collections.abc import Mapping
    _, cache, negative, _ = _abc._get_dump(Mapping)
    cls = getattr(builtins, type_name)
    return any(ref() is cls for ref in set(cache) | set(negative))
