"""The payload: everything a context needs to run, route and import.

Every module in this package is stdlib-only and runs unchanged on Python 2.7
and 3.6+; it is shipped to each target as part of the bootstrap.
"""
from __future__ import absolute_import
