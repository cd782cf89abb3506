"""Ways to start a context: local subprocess, ssh, sudo.

These modules are payload too (Python 2.7-compatible, stdlib only): an
intermediary context imports them from its parent when asked to start a
child of its own.
"""
from __future__ import absolute_import
