# Generated from the DOCUMENTATION of
# ansible_collections/plasmid/accel/plugins/connection/docker.py by
# `python -m plasmid.ansible.plugin_options`: edit that, then run
# this.  Why a copy: see plasmid/ansible/plugin_options.py.
OPTIONS = {'docker_extra_args': {'default': '',
                       'description': 'Extra arguments for the docker '
                                      'command line, before C(exec) '
                                      '(C(--context), C(--host)), separated '
                                      'by whitespace.',
                       'ini': [{'key': 'extra_cli_args',
                                'section': 'docker_connection'}],
                       'type': 'string',
                       'vars': [{'name': 'ansible_docker_extra_args'}]},
 'extra_env': {'description': "Environment variables for the container's "
                              'interpreter and everything it runs (C(docker '
                              'exec -e)); keys and values must be strings.',
               'type': 'dict',
               'vars': [{'name': 'ansible_docker_extra_env'}]},
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
 'privileged': {'default': False,
                'description': 'Whether the interpreter, and so every '
                               'command, runs with extended privileges '
                               '(C(docker exec --privileged)).',
                'env': [{'name': 'ANSIBLE_DOCKER_PRIVILEGED'}],
                'ini': [{'key': 'privileged',
                         'section': 'docker_connection'}],
                'type': 'boolean',
                'vars': [{'name': 'ansible_docker_privileged'}]},
 'remote_addr': {'default': 'inventory_hostname',
                 'description': 'The name or ID of the container.',
                 'type': 'string',
                 'vars': [{'name': 'inventory_hostname'},
                          {'name': 'ansible_host'},
                          {'name': 'ansible_docker_host'}]},
 'remote_user': {'cli': [{'name': 'user'}],
                 'description': 'The user commands run as (C(docker exec '
                                "--user)); unset, the container's own.",
                 'env': [{'name': 'ANSIBLE_REMOTE_USER'}],
                 'ini': [{'key': 'remote_user', 'section': 'defaults'}],
                 'keyword': [{'name': 'remote_user'}],
                 'type': 'string',
                 'vars': [{'name': 'ansible_user'},
                          {'name': 'ansible_docker_user'}]},
 'working_dir': {'description': 'The directory in the container that '
                                'commands run in (C(docker exec -w)).',
                 'env': [{'name': 'ANSIBLE_DOCKER_WORKING_DIR'}],
                 'ini': [{'key': 'working_dir',
                          'section': 'docker_connection'}],
                 'type': 'string',
                 'vars': [{'name': 'ansible_docker_working_dir'}]}}
