# Generated from the DOCUMENTATION of
# ansible_collections/plasmid/accel/plugins/connection/podman.py by
# `python -m plasmid.ansible.plugin_options`: edit that, then run
# this.  Why a copy: see plasmid/ansible/plugin_options.py.
OPTIONS = {'pipelining': {'default': True,
                'description': ['Pipelined modules run from memory in the '
                                'interpreter (the default). Set false, and '
                                'modules travel as temp files and run from '
                                'disk, as under vanilla without pipelining, '
                                'with none of the in-memory speed.'],
                'env': [{'name': 'ANSIBLE_PIPELINING'}],
                'ini': [{'key': 'pipelining', 'section': 'defaults'},
                        {'key': 'pipelining', 'section': 'connection'}],
                'type': 'boolean',
                'vars': [{'name': 'ansible_pipelining'}]},
 'podman_executable': {'default': 'podman',
                       'description': 'The podman program, a path or a name '
                                      'looked up on PATH.',
                       'env': [{'name': 'ANSIBLE_PODMAN_EXECUTABLE'}],
                       'type': 'string',
                       'vars': [{'name': 'ansible_podman_executable'}]},
 'podman_extra_args': {'default': '',
                       'description': 'Extra arguments for the podman '
                                      'command line, before C(exec) '
                                      '(C(--remote), C(--url), C(--root)).',
                       'env': [{'name': 'ANSIBLE_PODMAN_EXTRA_ARGS'}],
                       'ini': [{'key': 'podman_extra_args',
                                'section': 'defaults'}],
                       'type': 'string',
                       'vars': [{'name': 'ansible_podman_extra_args'}]},
 'remote_addr': {'default': 'inventory_hostname',
                 'description': ['The name or ID of the container.',
                                 'The same variables as '
                                 "C(containers.podman.podman)'s, listed so "
                                 'that the last one set wins, as '
                                 'ansible-core reads them; that plugin takes '
                                 'C(ansible_host), else the inventory name, '
                                 'whatever its option says.'],
                 'type': 'string',
                 'vars': [{'name': 'inventory_hostname'},
                          {'name': 'ansible_host'},
                          {'name': 'ansible_podman_host'}]},
 'remote_user': {'description': 'The user (a name or UID the container '
                                'knows) commands run as; unset, the '
                                "container's own.",
                 'env': [{'name': 'ANSIBLE_REMOTE_USER'}],
                 'ini': [{'key': 'remote_user', 'section': 'defaults'}],
                 'type': 'string',
                 'vars': [{'name': 'ansible_user'}]}}
