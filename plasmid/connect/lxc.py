"""A context inside a running LXC container, through ``lxc-attach``
(classic LXC, on the parent's machine; LXD's and Incus's ``lxc exec`` is
another program).

``--clear-env``: the container's processes get its own default PATH, not
the parent's environment.  As with ``exec``, the context sees its stdin end
when lxc-attach goes, and exits.
"""
from __future__ import absolute_import

from plasmid.connect import containers

TTY = containers.TTY
CORE_IN_ARGV = containers.CORE_IN_ARGV
PROMPT = containers.PROMPT


def default_name(spec):
    return 'lxc.%s' % spec['container']


def argv(spec, boot_argv):
    return ([spec.get('lxc_attach_path') or 'lxc-attach', '--name',
             spec['container'], '--clear-env'] +
            list(spec.get('attach_args') or []) + ['--'] + boot_argv)
