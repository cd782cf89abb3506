"""Functions bench/imports.py calls inside contexts: time an import, read
what the context's importer (plasmid's or Mitogen's) has received, and
import from the target's own disk as a reference.

A module of its own, apart from bench_fns, so that the other benchmarks'
byte counts (bootstrap_size.py fetches bench_fns) do not change with it.
Python 2.7-compatible and standard library only, like bench_fns: every
module it imported would show up in the counters.
"""


def timed_import(name):
    """Import *name* here; return the seconds the import took."""
    import importlib
    import time
    clock = getattr(time, 'perf_counter', time.time)
    start = clock()
    importlib.import_module(name)
    return clock() - start


def _mitogen_importer():
    """Mitogen's importer: the mitogen.core.Importer on sys.meta_path."""
    import sys
    for finder in sys.meta_path:
        kind = type(finder)
        if kind.__name__ == 'Importer' and kind.__module__ == 'mitogen.core':
            return finder
    return None


def importer_state():
    """What this context's importer (plasmid's or Mitogen's) has received.

    {'tool': 'plasmid' | 'mitogen',
     'received': {module: bytes of its zlib-compressed source},
     'code': {module: bytes of its compressed bytecode, where the master
              sent it (plasmid, to a context on the master's version)},
     'negative': [modules the parent said it cannot serve],
     'requested': [[names] per request sent upstream] (plasmid only;
                  Mitogen's child keeps no such record, the master counts),
     'message_bytes': bytes of LOAD_MODULE bodies received (plasmid only),
     'data_requests': package data paths asked for,
     'loaded': [every name in sys.modules]}
    Read from each importer's own cache; nothing is imported.
    """
    import sys
    child = sys.modules.get('plasmid.core.child')
    state = {'received': {}, 'code': {}, 'negative': [], 'requested': [],
             'message_bytes': 0, 'data_requests': 0,
             'loaded': [n for n, m in sys.modules.items() if m is not None]}
    if child is not None:
        importer = child.current.importer
        state['tool'] = 'plasmid'
        for name, entry in list(importer.cache.items()):
            if entry.source is None:
                state['negative'].append(name)
            else:
                state['received'][name] = len(entry.source)
                if getattr(entry, 'code', None):
                    state['code'][name] = len(entry.code[1])
        state['requested'] = [list(names) for names in importer.requested]
        state['message_bytes'] = importer.bytes_received
        state['data_requests'] = len(importer.data)
        return state
    importer = _mitogen_importer()
    if importer is None:
        raise RuntimeError('neither plasmid nor Mitogen imports here')
    state['tool'] = 'mitogen'
    # Its cache: module name -> (name, pkg_present, path, compressed,
    # related), path None for a negative answer.  Package data has a
    # cache of its own, (module, resource) -> content.
    for key, value in list(importer._cache.items()):
        if isinstance(key, tuple):
            continue
        if value[2] is None:
            state['negative'].append(key)
        else:
            state['received'][key] = len(value[3])
    resources = getattr(importer, '_resource_requester', None)
    state['data_requests'] = len(getattr(resources, '_cache', ()))
    return state


def import_from_disk(python, path_dir, name):
    """Seconds a fresh *python* process here takes to import *name* from the
    source files under *path_dir*, writing no bytecode (-B; the copy has
    no __pycache__): what compiling and running those modules costs this
    target without any tool or network.  Timed inside that process."""
    import subprocess
    script = ('import importlib,sys,time\n'
              'sys.path.insert(0, %r)\n'
              't=time.perf_counter()\n'
              'importlib.import_module(%r)\n'
              'print(time.perf_counter()-t)' % (path_dir, name))
    out = subprocess.check_output([python, '-I', '-B', '-c', script])
    return float(out.decode().strip())
