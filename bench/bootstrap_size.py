"""What plasmid and Mitogen send to start a context: computed and counted.

    python3 bench/bootstrap_size.py

Computed (no process started), for each tool:

- compressed core: what the new interpreter receives before it can run
  anything.  plasmid: ``plasmid.master.bootstrap.build_blob()`` (zlib
  level 9 of the docstring/comment-stripped core plus its loader).
  Mitogen: ``mitogen.parent.Connection.get_preamble()``, the exact buffer
  whose length Mitogen's first stage reads from stdin: zlib of mitogen.core
  minified by mitogen.master's ``_get_core_source`` (via
  ``minify.minimize_source``) plus the ``ExternalContext(config).main()``
  line.  plasmid also sends a BOOT frame (context id, name, log level...),
  where Mitogen has that config inside the preamble.
- how it travels to an ssh context: plasmid puts the core and BOOT in the
  remote command, base64-encoded (``spawn.boot_argv_carrying``), and sends
  nothing on stdin before the context answers; Mitogen sends a first stage
  in the command (``Connection.get_boot_command``) and the preamble on
  stdin.  (plasmid's sudo, su and doas contexts get the short first stage
  of ``spawn.boot_argv`` and the core and BOOT on stdin.)

Counted: each tool starts a local context whose interpreter is wrapped in
``byte_relay.py``, which counts the bytes that really travel each way on
its pipes (plasmid's local contexts, like ssh ones, carry the core in their
command line, which the relay does not see): once the context is up, after
a first call of ``os.getpid`` (nothing to import) and after a first call
of ``bench_fns.noop`` (a module the context must fetch from the master).
"""
from __future__ import annotations

import os
import platform
import sys
import tempfile
import zlib

import benchlib

benchlib.setup_paths()

import mitogen.core  # noqa: E402
import mitogen.master  # noqa: E402
import mitogen.parent  # noqa: E402
import mitogen.ssh  # noqa: E402

import bench_fns  # noqa: E402
import plasmid  # noqa: E402
from plasmid.connect import spawn, ssh as plasmid_ssh  # noqa: E402
from plasmid.master.bootstrap import build_blob  # noqa: E402

TARGET_BYTES = 16 * 1024
PYTHON = 'python3'
RELAY = os.path.join(benchlib.BENCH_DIR, 'byte_relay.py')


def plasmid_static(router: plasmid.Router) -> dict[str, int]:
    blob = build_blob()
    spec = {'context_id': 2, 'name': 'ssh.host',
            'master_version': platform.python_version()}
    boot = spawn.boot_frame(router.core, spec)
    argv = spawn.boot_argv_carrying(PYTHON, blob, boot)
    remote = plasmid_ssh.argv({'hostname': 'host'}, argv)[-1]
    return {
        'bootstrap': len(blob),
        'boot frame': len(boot),
        'source': len(zlib.decompress(blob)),
        'ssh remote command': len(remote),
        # What spawn writes to stdin before HELLO: nothing where the
        # method carries the core in its command.
        'ssh stdin': 0 if plasmid_ssh.CORE_IN_ARGV else len(blob) + len(boot),
    }


def mitogen_static(router) -> dict[str, int]:
    options = mitogen.ssh.Options(hostname='host', python_path=PYTHON,
                                  max_message_size=router.max_message_size)
    conn = mitogen.ssh.Connection(options, router)
    conn.context = mitogen.core.Context(router, 1)   # set by connect() normally
    preamble = conn.get_preamble()
    ssh_argv = conn.get_boot_command()
    remote = ' '.join(ssh_argv[ssh_argv.index('host') + 1:])
    return {
        'bootstrap': len(preamble),
        'source': len(zlib.decompress(preamble)),
        'ssh remote command': len(remote),
        'ssh stdin': len(preamble),
    }


def read_counts(path: str) -> tuple[int, int]:
    with open(path) as handle:
        to_child, from_child = handle.read().split()
    return int(to_child), int(from_child)


def counted(open_ctx, shutdown) -> list[tuple[int, int]]:
    """Bytes (to the context, from it) after connect and two first calls."""
    fd, path = tempfile.mkstemp(prefix='plasmid-bench-bytes-')
    os.close(fd)
    python = [sys.executable, RELAY, path, '--', sys.executable]
    try:
        ctx = open_ctx(python)
        try:
            out = [read_counts(path)]
            ctx.call(os.getpid)
            out.append(read_counts(path))
            ctx.call(bench_fns.noop)
            out.append(read_counts(path))
        finally:
            shutdown(ctx)
        return out
    finally:
        for name in (path, path + '.tmp'):
            if os.path.exists(name):
                os.unlink(name)


def kib(n: int) -> str:
    return '%d (%.2f KiB)' % (n, n / 1024.0)


def main() -> None:
    print('# bootstrap size -- %s' % benchlib.machine_line())
    print('plasmid from %s; mitogen %s from %s' % (
        os.path.dirname(plasmid.__file__),
        '.'.join(map(str, mitogen.__version__)), os.path.dirname(mitogen.__file__)))
    broker = mitogen.master.Broker()
    try:
        router = mitogen.master.Router(broker)
        mito = mitogen_static(router)
        mito_counts = counted(lambda py: router.local(python_path=py),
                              lambda ctx: ctx.shutdown(wait=True))
    finally:
        broker.shutdown()
        broker.join()
    with plasmid.Router() as prouter:
        plas = plasmid_static(prouter)
        plas_counts = counted(lambda py: prouter.local(python_path=py),
                              lambda ctx: ctx.shutdown())

    rows = [
        ['compressed core', kib(plas['bootstrap']), kib(mito['bootstrap'])],
        ['source inside, uncompressed', kib(plas['source']), kib(mito['source'])],
        ['ssh remote command string', kib(plas['ssh remote command']),
         mito['ssh remote command']],
        ['ssh stdin before the context answers', plas['ssh stdin'],
         kib(mito['ssh stdin'])],
        ['sent to start an ssh context (command + stdin)',
         kib(plas['ssh remote command'] + plas['ssh stdin']),
         kib(mito['ssh remote command'] + mito['ssh stdin'])],
    ]
    print()
    print('## computed')
    print(benchlib.table(['quantity (bytes)', 'plasmid', 'mitogen'], rows))

    labels = ['context up', 'after 1st call os.getpid',
              'after 1st call bench_fns.noop (module fetched)']
    rows = []
    for label, p, m in zip(labels, plas_counts, mito_counts):
        rows.append([label, p[0], p[1], m[0], m[1]])
    print()
    print('## counted on the pipes of a local context (cumulative bytes)')
    print(benchlib.table(['moment', 'plasmid to ctx', 'plasmid from ctx',
                          'mitogen to ctx', 'mitogen from ctx'], rows))
    print('plasmid: a local context gets its core and %d-byte BOOT frame on '
          'its command line, not on the pipes counted here' % plas['boot frame'])
    print()
    print('target: compressed core < 16 KiB: plasmid %.2f KiB, Mitogen %.2f '
          'KiB -> %s' % (plas['bootstrap'] / 1024.0, mito['bootstrap'] / 1024.0,
                         benchlib.met(plas['bootstrap'] < TARGET_BYTES)))


if __name__ == '__main__':
    main()
