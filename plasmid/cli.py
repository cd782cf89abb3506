"""The ``plasmid`` command: start contexts and show what they are.

    plasmid info                          a local context, no server needed
    plasmid info --ssh web1 --sudo root   a chain: ssh to web1, then sudo
    plasmid call --ssh web1 platform.node
    plasmid info --ssh web1 --sudo root --podman db   into a container there
    plasmid info --kubectl jobs/batch:main    a pod's container, through kubectl

Hops are started in the order given, each through the one before.
"""
from __future__ import annotations

import argparse
import importlib
import json
import logging
import math
import os
import statistics
import sys
import time
from typing import Optional, Sequence

import plasmid
from plasmid.core.dispatch import resolve
from plasmid.master.arguments import LONGEST_CONNECT_TIMEOUT

ROUND_TRIPS = 200


class _AddHop(argparse.Action):
    """Collect the hops (--local, --ssh, --sudo, ...) in the order they
    were given."""

    def __call__(self, parser, namespace, value, option_string=None):
        hops = getattr(namespace, 'hops', None) or []
        hops.append((self.dest, value))
        namespace.hops = hops


def _seconds(text: str) -> float:
    """A --timeout: a number of seconds above zero, as connect_timeout
    takes it."""
    try:
        seconds = float(text)
    except ValueError:
        seconds = math.nan
    if not 0 < seconds <= LONGEST_CONNECT_TIMEOUT:
        raise argparse.ArgumentTypeError(
            'a number of seconds above zero, at most %d, not %r'
            % (LONGEST_CONNECT_TIMEOUT, text))
    return seconds


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog='plasmid', description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest='command', required=True)
    info = sub.add_parser('info', help='start contexts; show the tree, '
                          'versions, connect times and call round trips')
    call = sub.add_parser('call', help='call module.function in the last '
                          'context and print the JSON result')
    call.add_argument('function', help='dotted name, e.g. platform.node')
    # A default: argparse otherwise names args as required when the
    # function is missing (they are not).
    call.add_argument('args', nargs='*', default=[], help='JSON arguments')
    for command in (info, call):
        command.set_defaults(hops=[])
        command.add_argument('--local', nargs='?', const='', dest='local',
                             action=_AddHop, metavar='PYTHON',
                             help='a local interpreter (default hop)')
        command.add_argument('--ssh', dest='ssh', action=_AddHop,
                             metavar='[USER@]HOST[:PORT]',
                             help='an IPv6 HOST with a port in brackets: '
                             '[::1]:22')
        command.add_argument('--sudo', dest='sudo', action=_AddHop,
                             metavar='USER')
        command.add_argument('--doas', dest='doas', action=_AddHop,
                             metavar='USER', help='doas without a password')
        for engine in ('podman', 'docker', 'lxc'):
            command.add_argument('--' + engine, dest=engine, action=_AddHop,
                                 metavar='CONTAINER',
                                 help='into a running %s container' % engine)
        command.add_argument('--kubectl', dest='kubectl', action=_AddHop,
                             metavar='[NAMESPACE/]POD[:CONTAINER]',
                             help='into a container of a Kubernetes pod')
        command.add_argument('--setns', dest='setns', action=_AddHop,
                             metavar='PID', type=int,
                             help="into a process's namespaces (root)")
        command.add_argument('--python', help='interpreter for ssh hops')
        command.add_argument('--timeout', type=_seconds, default=30.0,
                             help='connect timeout in seconds')
    return parser


def _start_hop(router: plasmid.Router, method: str, value: str,
               via: Optional[plasmid.Context], args) -> plasmid.Context:
    if method == 'local':
        return router.local(python_path=value or None, via=via,
                            connect_timeout=args.timeout)
    if method in ('sudo', 'doas'):
        return getattr(router, method)(username=value, via=via,
                                       connect_timeout=args.timeout)
    if method in ('podman', 'docker', 'lxc'):
        return getattr(router, method)(container=value, via=via,
                                       connect_timeout=args.timeout)
    if method == 'kubectl':
        namespace, _, pod = value.rpartition('/')
        pod, _, container = pod.partition(':')
        return router.kubectl(pod=pod, container=container or None,
                              namespace=namespace or None, via=via,
                              connect_timeout=args.timeout)
    if method == 'setns':
        return router.setns(pid=value, via=via, connect_timeout=args.timeout)
    user, host, port = ssh_target(value)
    return router.ssh(hostname=host, port=port, username=user,
                      python_path=args.python, via=via,
                      connect_timeout=args.timeout)


def ssh_target(value: str) -> tuple:
    """``[user@]host[:port]`` as (user or None, host, port or None); an
    IPv6 address is given bare (``::1``) or, with a port, in brackets
    (``[::1]:22``).  ValueError says what is wrong."""
    user, _, host = value.rpartition('@')
    port = ''
    if host.startswith('['):
        host, bracket, port = host[1:].partition(']')
        if not bracket or (port and not port.startswith(':')):
            raise ValueError('--ssh %r: an IPv6 address in brackets is '
                             '[ADDRESS] or [ADDRESS]:PORT' % value)
        port = port[1:]
    elif host.count(':') == 1:
        host, _, port = host.partition(':')
    if not host:
        raise ValueError('--ssh %r: no host name' % value)
    if port and not port.isdigit():
        raise ValueError('--ssh %r: the port %r is not a number'
                         % (value, port))
    return user or None, host, int(port) if port else None


def _start_chain(router: plasmid.Router, args) -> list[tuple]:
    """Start each hop; return (context, seconds to connect and boot) per
    hop."""
    chain, via = [], None
    for method, value in args.hops or [('local', '')]:
        started = time.perf_counter()
        via = _start_hop(router, method, value, via, args)
        via.info  # the start returns before the boot is over: wait for it
        chain.append((via, time.perf_counter() - started))
    return chain


def _round_trip_us(context: plasmid.Context) -> float:
    samples = []
    for _ in range(ROUND_TRIPS):
        started = time.perf_counter()
        context.call(time.time)
        samples.append(time.perf_counter() - started)
    return statistics.median(samples) * 1e6


def _info(router: plasmid.Router, args) -> int:
    print('%-28s %-8s %-8s %-6s %11s %14s' % (
        'context', 'python', 'pid', 'uid', 'connect', 'round trip'))
    for depth, (context, seconds) in enumerate(_start_chain(router, args)):
        version = '.'.join(str(n) for n in context.info['version'])
        uid = context.call(os.getuid)
        label = ('  ' * (depth - 1) + '└─ ' if depth else '') + context.name
        print('%-28s %-8s %-8s %-6s %8.1f ms %11.0f µs' % (
            label, version, context.info['pid'], uid, seconds * 1e3,
            _round_trip_us(context)))
    return 0


def _call(router: plasmid.Router, args) -> int:
    module, _, name = args.function.rpartition('.')
    if not module:
        raise SystemExit('plasmid: give a dotted name, e.g. platform.node')
    func = _function(module, name)
    values = []  # all read before anything starts
    for arg in args.args:
        try:
            values.append(json.loads(arg))
        except ValueError as exc:
            raise SystemExit('plasmid: argument %r is not JSON: %s'
                             % (arg, exc))
    context = _start_chain(router, args)[-1][0]
    print(json.dumps(context.call(func, *values), default=repr))
    return 0


def _function(module: str, name: str):
    """The function *module.name*, or the reason it cannot be had."""
    try:
        if module in sys.modules:
            found = resolve(module, name)
        else:
            found = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as exc:
        raise SystemExit('plasmid: cannot find %s.%s: %s'
                         % (module, name, exc))
    if not callable(found):
        raise SystemExit('plasmid: %s.%s is not a function but %s'
                         % (module, name, type(found).__name__))
    return found


class _ContextOutput(logging.StreamHandler):
    """Shows the contexts' lines on stderr as they wrote them."""


def _show_context_output() -> None:
    """What the contexts print and log goes to stderr, as lines of their
    own (stdout carries the JSON result); once per process, however many
    times main() runs."""
    contexts = logging.getLogger('plasmid.ctx')
    if any(isinstance(h, _ContextOutput) for h in contexts.handlers):
        return
    handler = _ContextOutput(sys.stderr)
    handler.setFormatter(logging.Formatter('%(message)s'))
    contexts.addHandler(handler)
    contexts.setLevel(logging.INFO)
    contexts.propagate = False


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = _parser().parse_args(argv)
    _show_context_output()
    try:
        with plasmid.Router() as router:
            if args.command == 'info':
                return _info(router, args)
            return _call(router, args)
    except (plasmid.Error, ValueError) as exc:
        # ValueError: a hop's value the router refuses (a port out of
        # range, an empty user...), in its words.
        print('plasmid: %s' % exc, file=sys.stderr)
        return 1


if __name__ == '__main__':
    sys.exit(main())
