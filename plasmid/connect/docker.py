"""A context inside a running container, through ``docker exec``."""
from __future__ import absolute_import

from plasmid.connect import containers

TTY = containers.TTY
CORE_IN_ARGV = containers.CORE_IN_ARGV
PROMPT = containers.PROMPT


def default_name(spec):
    return 'docker.%s' % spec['container']


def argv(spec, boot_argv):
    return containers.exec_argv(spec.get('docker_path') or 'docker', spec,
                                boot_argv)
