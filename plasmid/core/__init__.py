"""The payload: everything a context needs to run, route and import.

Every module in this package is stdlib-only and runs unchanged on Python 2.7
and 3.6+.  The bootstrap carries all of them but ``waiting``, ``ostext`` and
``resources``, which a context imports from its parent when first needed.
"""
from __future__ import absolute_import
