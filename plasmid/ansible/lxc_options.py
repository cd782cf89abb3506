# Generated from the DOCUMENTATION of
# ansible_collections/plasmid/accel/plugins/connection/lxc.py by
# `python -m plasmid.ansible.plugin_options`: edit that, then run
# this.  Why a copy: see plasmid/ansible/plugin_options.py.
OPTIONS = {'executable': {'default': '/bin/sh',
                'description': 'The shell that runs each command with C(-c), '
                               'as that plugin runs it.',
                'type': 'string',
                'vars': [{'name': 'ansible_executable'},
                         {'name': 'ansible_lxc_executable'}]},
 'pipelining': {'default': True,
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
 'remote_addr': {'default': 'inventory_hostname',
                 'description': ['The name of the container.',
                                 'The same variables as '
                                 "C(community.general.lxc)'s, listed so that "
                                 'the last one set wins, as ansible-core '
                                 'reads them.'],
                 'type': 'string',
                 'vars': [{'name': 'inventory_hostname'},
                          {'name': 'ansible_host'},
                          {'name': 'ansible_lxc_host'}]}}
