"""A stand-in for ``kubectl exec``, for the kubectl method's tests.

No Kubernetes cluster can run on this machine kind (no images can be
fetched, no kubelet runs), so this is the one place where the test bed
pretends.  It stands in for the client only as far as the method uses it:
kubectl's command-line grammar for ``exec`` (global options before the
verb, ``-i``, ``-n``/``--namespace``, ``-c``/``--container``, the pod,
``--``, the command), its messages for a pod or container that does not
exist, and its note on stderr when it picks a pod's default container.
The pod's containers are real: each is a podman container of the test
bed (``podman exec -i``), so the interpreter, its stdin and its end when
the client goes are those of a container process.

The "cluster" is the JSON file ``--kubeconfig`` names (or KUBECONFIG)::

    {"namespace": "default",
     "pods": {"NAMESPACE/POD": [["CONTAINER", "PODMAN_CONTAINER", "USER"], ...]}}

Run as a program (``standin`` writes an executable that does so).
"""
from __future__ import annotations

import contextlib
import json
import os
import sys
import tempfile
from typing import Iterator, NoReturn

GLOBAL_OPTIONS = ('--kubeconfig', '--context', '--namespace', '-n')
EXEC_OPTIONS = ('--namespace', '-n', '--container', '-c')


@contextlib.contextmanager
def standin(pods: dict, namespace: str = 'default') -> Iterator[tuple]:
    """An executable kubectl stand-in and the kubeconfig of its cluster:
    *pods* maps ``namespace/pod`` to ``[(container, podman container,
    user), ...]``, the first container being the pod's default."""
    with tempfile.TemporaryDirectory(prefix='plasmid-kubectl-') as work:
        config = os.path.join(work, 'kubeconfig.json')
        with open(config, 'w') as handle:
            json.dump({'namespace': namespace, 'pods': pods}, handle)
        program = os.path.join(work, 'kubectl')
        with open(program, 'w') as handle:
            handle.write('#!/bin/sh\nexec %s %s "$@"\n'
                         % (sys.executable, os.path.abspath(__file__)))
        os.chmod(program, 0o755)
        os.chmod(work, 0o755)
        yield program, config


def _fail(message: str) -> NoReturn:
    sys.stderr.write(message + '\n')
    sys.exit(1)


def _options(args: list, known: tuple, into: dict) -> list:
    """Take the options *known* (each with a value) off the front of
    *args* into *into*; return the rest."""
    while args and args[0].startswith('-') and args[0] != '--':
        option, _, value = args.pop(0).partition('=')
        if option in ('-i', '--stdin'):
            into['stdin'] = True
            continue
        if option not in known:
            _fail('error: unknown flag: %s' % option)
        if not value:
            if not args:
                _fail('error: flag needs an argument: %s' % option)
            value = args.pop(0)
        into[{'-n': '--namespace', '-c': '--container'}.get(
            option, option)] = value
    return args


def main(argv: list) -> NoReturn:
    given: dict = {}
    args = _options(list(argv), GLOBAL_OPTIONS, given)
    if not args or args[0] != 'exec':
        _fail('the stand-in knows only "exec", not %r' % (args[:1],))
    args = _options(args[1:], EXEC_OPTIONS, given)
    if not args or args[0] == '--':
        _fail('error: expected \'exec (POD | TYPE/NAME) [-c CONTAINER] '
              '[flags] -- COMMAND [args...]\'.')
    pod, args = args[0], args[1:]
    if args[:1] != ['--'] or len(args) < 2:
        _fail('error: you must specify at least one command for the '
              'container')
    command = args[1:]
    path = given.get('--kubeconfig') or os.environ.get('KUBECONFIG')
    if not path or not os.path.exists(path):
        _fail('error: no configuration has been provided')
    with open(path) as handle:
        cluster = json.load(handle)
    namespace = given.get('--namespace') or cluster['namespace']
    containers = cluster['pods'].get('%s/%s' % (namespace, pod))
    if containers is None:
        _fail('Error from server (NotFound): pods "%s" not found' % pod)
    wanted = given.get('--container')
    if wanted is None:
        wanted = containers[0][0]
        if len(containers) > 1:
            sys.stderr.write('Defaulted container "%s" out of: %s\n' % (
                wanted, ', '.join(c[0] for c in containers)))
    found = [c for c in containers if c[0] == wanted]
    if not found:
        _fail('error: unable to upgrade connection: container not found '
              '("%s")' % wanted)
    _, podman_container, user = found[0]
    exec_args = ['podman', 'exec'] + (['-i'] if given.get('stdin') else [])
    os.execvp('podman', exec_args + ['--user', user, podman_container] +
              command)


if __name__ == '__main__':
    main(sys.argv[1:])
