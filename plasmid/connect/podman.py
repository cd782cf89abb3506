"""A context inside a running container, through ``podman exec``."""
from __future__ import absolute_import

from plasmid.connect import containers

TTY = containers.TTY
CORE_IN_ARGV = containers.CORE_IN_ARGV
PROMPT = containers.PROMPT


def default_name(spec):
    return 'podman.%s' % spec['container']


def argv(spec, boot_argv):
    return containers.exec_argv(spec.get('podman_path') or 'podman', spec,
                                boot_argv)
