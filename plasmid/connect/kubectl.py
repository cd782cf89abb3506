"""A context inside a container of a Kubernetes pod, through ``kubectl exec``
on the parent's machine.

The interpreter runs as a process of the pod's container: its filesystem,
its namespaces, the user its image runs as (``kubectl exec`` has no user
option).  kubectl carries its stdin and stdout through the cluster's API
server; when kubectl ends, the stream closes, the interpreter sees its stdin
end and exits, as on the loss of any parent.

The core goes on stdin, not on the command line: ``kubectl exec`` sends the
command as words of the request's URL, and proxies in front of an API
server commonly refuse URLs longer than 8 KiB (the core is ~22 KB in
base64).  It is written at once, not after the interpreter's ready marker:
nothing on the way asks for a password on stdin, and waiting would cost a
round trip to the cluster.
"""
from __future__ import absolute_import

TTY = False
CORE_IN_ARGV = False
CORE_AHEAD = True
PROMPT = None


def default_name(spec):
    return 'kubectl.%s' % spec['pod']


def argv(spec, boot_argv):
    """``kubectl [kubectl_args] exec -i [-n NS] [-c C] [exec_args] POD --
    python...``"""
    args = [spec.get('kubectl_path') or 'kubectl']
    args += list(spec.get('kubectl_args') or [])
    args += ['exec', '-i']
    if spec.get('namespace'):
        args += ['--namespace', spec['namespace']]
    if spec.get('container'):
        args += ['--container', spec['container']]
    args += list(spec.get('exec_args') or [])
    return args + [spec['pod'], '--'] + boot_argv
