"""plasmid: zero-deploy distributed Python.

Start Python interpreters over ssh, sudo or local pipes, call functions in
them, and let the code they need travel on demand.  See README.md.
"""
from plasmid.core.context import Context, Future, as_completed
from plasmid.core.errors import (CallError, ConnectError, ContextLost, Error,
                                 TimeoutError)
from plasmid.master.router import Router

__all__ = ['Router', 'Context', 'Future', 'as_completed', 'Error',
           'CallError', 'ConnectError', 'ContextLost', 'TimeoutError']
__version__ = '0.1.0'
