#!/usr/bin/env python3
"""ansible-core's connection conformance suite against the container
connections: the collections' plugins and ours.

run_targets.py runs the hidden ``connection`` target over ssh and local;
no ansible-core target covers containers.podman.podman,
community.docker.docker, kubernetes.core.kubectl or community.general.lxc.  This runs that
target's test.sh (unicode commands, files with unicode names both ways,
``wait_for_connection``, ``reset_connection``, an ad-hoc run) on an
inventory of two hosts, pipelining on and off, for each plugin named, in
the test bed: its podman container, podman's Docker API for the docker
client, the stand-in Kubernetes API server for kubectl (whose pod's
container is that podman container), and an LXC container for lxc (whose
vanilla plugin needs the python lxc bindings in the venv: .ci/setup builds
them in the newest one).

Needs root (podman), the ansible-core venv (``--venv``, with plasmid
installed), the collections .ci/setup takes from the ``ansible`` bundle
and the release's sdist::

    python3 tests/ansible/compat/container_suite.py --venv /opt/plasmid-ansible/2.21 \\
        --sdist /var/tmp/sdists/ansible_core-2.21.5.tar.gz
"""
from __future__ import annotations

import argparse
import contextlib
import os
import subprocess
import sys
import tarfile
import tempfile
from typing import Iterator

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
sys.path.insert(0, os.path.join(REPO, 'tests'))

from testbed import containers, kubectl  # noqa: E402

COLLECTIONS = '/opt/plasmid-ansible/collections'
# plugin -> (the collection's connection, ours)
PLUGINS = {
    'podman': ('containers.podman.podman', 'plasmid.accel.podman'),
    'docker': ('community.docker.docker', 'plasmid.accel.docker'),
    'kubectl': ('kubernetes.core.kubectl', 'plasmid.accel.kubectl'),
    'lxc': ('community.general.lxc', 'plasmid.accel.lxc'),
}
SUITE = 'test/integration/targets/connection'


def inventory(plugin: str, connection: str, address: str) -> str:
    """Two hosts, pipelining on and off, in the group the suite names."""
    where = ['ansible_kubectl_pod=web', 'ansible_kubectl_kubeconfig=%s'
             % address] if plugin == 'kubectl' else ['ansible_host=%s' % address]
    lines = ['[%s]' % plugin]
    for pipelining in ('true', 'false'):
        lines.append('%s-pipelining-%s ansible_pipelining=%s'
                     % (plugin, pipelining, pipelining))
    lines += ['[%s:vars]' % plugin, 'ansible_connection=%s' % connection,
              'ansible_python_interpreter=/usr/bin/python3'] + where
    return '\n'.join(lines) + '\n'


def unpack_suite(sdist: str, dest: str) -> str:
    """The connection target's directory from the sdist, under dest."""
    with tarfile.open(sdist) as tar:
        members = [m for m in tar.getmembers()
                   if ('/%s/' % SUITE) in m.name]
        if not members:
            raise SystemExit('%s has no %s' % (sdist, SUITE))
        tar.extractall(dest, members)
    root = members[0].name.split('/')[0]
    return os.path.join(dest, root, SUITE)


@contextlib.contextmanager
def test_bed(plugins: list) -> Iterator[dict]:
    """Each plugin's address: the container, or the kubeconfig; and the
    environment the docker client needs."""
    with contextlib.ExitStack() as stack:
        container = stack.enter_context(containers.container())
        found = {'podman': container, 'docker': container, 'env': {}}
        if 'docker' in plugins:
            found['env']['DOCKER_HOST'] = stack.enter_context(
                containers.docker_api())
        if 'kubectl' in plugins:
            found['kubectl'] = stack.enter_context(kubectl.standin(
                {'default/web': [['app', container, 'root']]}))
        if 'lxc' in plugins:
            found['lxc'] = stack.enter_context(containers.lxc_container(
                containers.ANSIBLE_WRITABLE))
        yield found


def run_suite(venv: str, suite: str, plugin: str, connection: str,
              bed: dict, log: str) -> int:
    inv = os.path.join(os.path.dirname(log), '%s-%s.inventory'
                       % (plugin, connection))
    with open(inv, 'w') as handle:
        handle.write(inventory(plugin, connection, bed[plugin]))
    env = dict(os.environ, INVENTORY=inv, ANSIBLE_COLLECTIONS_PATH=COLLECTIONS,
               PATH=os.path.join(venv, 'bin') + os.pathsep + os.environ['PATH'],
               **bed['env'])
    if connection.startswith('plasmid'):
        env['PLASMID_ANSIBLE_STATS'] = log + '.stats.json'
    argv = ['bash', './test.sh', '-e', 'target_hosts=%s' % plugin,
            '-e', 'action_prefix=', '-e', 'local_tmp=/tmp/ansible-local',
            '-e', 'remote_tmp=/tmp/ansible-remote']
    with open(log, 'w') as out:
        return subprocess.run(argv, cwd=suite, env=env, stdout=out,
                              stderr=subprocess.STDOUT, timeout=900).returncode


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--venv', required=True)
    parser.add_argument('--sdist', required=True)
    parser.add_argument('--plugins', default=','.join(PLUGINS))
    parser.add_argument('--modes', default='vanilla,plasmid')
    parser.add_argument('--logs', default=None,
                        help='directory for the logs (default: a new one)')
    args = parser.parse_args(argv)
    plugins = args.plugins.split(',')
    modes = args.modes.split(',')
    logs = args.logs or tempfile.mkdtemp(prefix='plasmid-container-suite-')
    os.makedirs(logs, exist_ok=True)
    suite = unpack_suite(args.sdist, logs)
    failed = 0
    with test_bed(plugins) as bed:
        for plugin in plugins:
            for mode in modes:
                connection = PLUGINS[plugin][mode != 'vanilla']
                log = os.path.join(logs, '%s-%s.log' % (plugin, mode))
                rc = run_suite(args.venv, suite, plugin, connection, bed, log)
                failed += rc != 0
                print('%-8s %-8s %-26s %s  (%s)' % (
                    plugin, mode, connection, 'pass' if rc == 0 else
                    'FAIL rc=%d' % rc, log), flush=True)
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
