# Generated from the DOCUMENTATION of
# ansible_collections/plasmid/accel/plugins/connection/local.py by
# `python -m plasmid.ansible.plugin_options`: edit that, then run
# this.  Why a copy: see plasmid/ansible/plugin_options.py.
OPTIONS = {'become_strip_preamble': {'default': True,
                           'description': ["Strip the become program's "
                                           'output preceding the command, '
                                           'for commands that run through '
                                           'C(ansible.builtin.local) '
                                           '(ansible-core 2.19 and later).'],
                           'type': 'bool',
                           'vars': [{'name': 'ansible_local_become_strip_preamble'}]},
 'become_success_timeout': {'default': 10,
                            'description': ['Seconds to wait for the become '
                                            "program's password prompt or "
                                            'its success when it starts a '
                                            "become user's interpreter, or "
                                            'when a command runs through '
                                            'C(ansible.builtin.local). A '
                                            'value below 1 means the '
                                            'default.'],
                            'type': 'int',
                            'vars': [{'name': 'ansible_local_become_success_timeout'}]},
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
                'vars': [{'name': 'ansible_pipelining'}]}}
