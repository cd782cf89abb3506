"""Module runs as ansible-core builds them, for the tests and benchmarks of
what a module costs and leaves on its target: the pipelined script a
release sends for ``module: args``, and a local context holding its zip."""
from __future__ import annotations

import io
import os
import subprocess
import textwrap
import zipfile
import zlib

from plasmid.ansible import payload, target

RECORDER = textwrap.dedent('''
    from ansible.plugins.connection.local import Connection as Local
    DOCUMENTATION = """
    name: recorder
    short_description: local, recording pipelined module scripts
    description: local, recording pipelined module scripts
    author: plasmid
    options: {}
    """

    class Connection(Local):
        transport = 'recorder'

        def exec_command(self, cmd, in_data=None, sudoable=True):
            if in_data and b'_ansiballz_main' in in_data:
                with open(%r, 'wb') as handle:
                    handle.write(in_data)
            return super().exec_command(cmd, in_data=in_data, sudoable=sudoable)
''')


def record_script(venv: str, python: str, args: str, work: str,
                  module: str = 'command') -> bytes:
    """The pipelined script ansible-core of *venv* sends for
    ``module: args`` to a target running *python*; *work* is a directory
    to create and use."""
    plugins = os.path.join(work, 'connection_plugins')
    os.makedirs(plugins)
    recorded = os.path.join(work, 'script')
    with open(os.path.join(plugins, 'recorder.py'), 'w') as handle:
        handle.write(RECORDER % recorded)
    env = dict(os.environ, ANSIBLE_CONNECTION_PLUGINS=plugins,
               ANSIBLE_PIPELINING='true', ANSIBLE_LOCAL_TEMP=work)
    subprocess.run([os.path.join(venv, 'bin', 'ansible'), 'localhost', '-i',
                    'localhost,', '-c', 'recorder', '-m', module, '-a',
                    args, '-e', 'ansible_python_interpreter=%s' % python],
                   env=env, check=True, stdout=subprocess.DEVNULL)
    with open(recorded, 'rb') as handle:
        return handle.read()


def add_script(ctx, script: bytes) -> tuple:
    """Give context *ctx* the zip of *script*: the job's digest and what
    ``target.run_module`` takes."""
    job = payload.parse(script)
    assert job is not None, 'not a script plasmid knows how to take apart'
    with zipfile.ZipFile(io.BytesIO(job.zip_data)) as archive:
        files = {n: zlib.compress(archive.read(n)) for n in archive.namelist()}
    ctx.call(target.add_zip_files, job.digest, {}, files, job.module_fqn)
    return job.digest, job.to_target({})


def warm_context(router, python: str, script: bytes):
    """A local context on *python* holding the zip of *script*, warmed by
    ten runs (it learns what the module imports); with the job's digest
    and what ``target.run_module`` takes."""
    ctx = router.local(python_path=python)
    digest, to_target = add_script(ctx, script)
    for _ in range(10):
        rc, out, err = ctx.call(target.run_module, digest, to_target)
        assert rc == 0, err
    return ctx, digest, to_target
