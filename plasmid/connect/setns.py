"""A context inside the namespaces of a running process (a container's
first process, say), through util-linux's ``nsenter`` on the parent's
machine.

It needs what setns(2) needs: root there, as a rule.  Its root directory
is the target process's, so *python_path* names an interpreter of that
filesystem.  nsenter forks the interpreter into the target's PID
namespace and waits for it; the interpreter keeps nsenter's stdin and
stdout, so when its parent goes away it sees them end and exits.
"""
from __future__ import absolute_import

TTY = False
CORE_IN_ARGV = True    # nothing between us and the interpreter reads stdin
PROMPT = None


def default_name(spec):
    return 'setns.%d' % spec['pid']


def argv(spec, boot_argv):
    args = [spec.get('nsenter_path') or 'nsenter', '--target',
            str(spec['pid'])]
    namespaces = spec.get('namespaces')
    if namespaces is None:
        args.append('--all')
    else:
        args += ['--' + n for n in namespaces]
    # The target's root directory: where a chroot inside its mount
    # namespace put it.
    return args + ['--root', '--'] + boot_argv
