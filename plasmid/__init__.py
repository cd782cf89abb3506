"""plasmid: zero-deploy distributed Python.

Start Python interpreters over ssh, sudo, su, doas or local pipes, call functions
in them, and let the code they need travel on demand.  See README.md.

Names are loaded on first use: a process that needs only part of plasmid
(an Ansible worker, which runs the connection plugin once per task) does
not pay for importing the master's router, nor even the errors.  (This
file is the master's; a context boots with a package of its own,
plasmid.master.bootstrap's CHILD_PACKAGE.)
"""
__all__ = ['Router', 'Context', 'Future', 'as_completed', 'Error',
           'CallError', 'ConnectError', 'ContextLost', 'TimeoutError',
           'put_file', 'fetch_file', 'broadcast_file', 'gather_file',
           'CopyFailures']
__version__ = '0.1.0'

_LAZY = {
    'Error': 'plasmid.core.errors',
    'CallError': 'plasmid.core.errors',
    'ConnectError': 'plasmid.core.errors',
    'ContextLost': 'plasmid.core.errors',
    'TimeoutError': 'plasmid.core.errors',
    'Router': 'plasmid.master.router',
    'Context': 'plasmid.core.context',
    'Future': 'plasmid.core.context',
    'as_completed': 'plasmid.master.futures',
    'put_file': 'plasmid.files.transfer',
    'fetch_file': 'plasmid.files.transfer',
    'broadcast_file': 'plasmid.files.broadcast',
    'gather_file': 'plasmid.files.gather',
    'CopyFailures': 'plasmid.files.transfer',
}


def __getattr__(name):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError('module %r has no attribute %r'
                             % (__name__, name))
    import importlib
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(list(globals()) + list(_LAZY))
