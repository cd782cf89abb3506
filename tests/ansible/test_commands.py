"""Taking command lines apart: the shapes ansible-core's sh shell and sudo
become plugins produce, and the ones that must fall back."""
from __future__ import annotations

import base64
import re
import shlex

import pytest

from plasmid.ansible import commands, payload

SUCCESS = 'BECOME-SUCCESS-abcdefghijklmnopqrstuvwxyzabcdef'


def sudo_wrapped(inner: str, sleep: bool) -> str:
    tail = ' && sleep 0' if sleep else ''
    return ("/bin/sh -c 'sudo -H -S -n  -u root /bin/sh -c '\"'\"'echo %s ; "
            "%s'\"'\"'%s'" % (SUCCESS, inner, tail))


def quoted_as_ansible(inner: str) -> str:
    """*inner* under sudo, each level quoted as ansible-core quotes it."""
    become = 'sudo -H -S -n  -u root /bin/sh -c %s' % shlex.quote(
        'echo %s ; %s' % (SUCCESS, inner))
    return '/bin/sh -c %s' % shlex.quote(become)


@pytest.mark.parametrize('sleep', [True, False])  # 2.18-2.20, 2.21
def test_become_module_run(sleep: bool) -> None:
    cmd = sudo_wrapped('/usr/bin/python3', sleep)
    parsed = commands.parse(cmd, SUCCESS)
    assert parsed.become and parsed.interpreter == '/usr/bin/python3'
    assert parsed.env == {}


def test_environment_before_the_interpreter() -> None:
    cmd = ("/bin/sh -c 'FOO='\"'\"'bar baz'\"'\"' LANG=C.UTF-8 "
           "/usr/bin/python3 && sleep 0'")
    parsed = commands.parse(cmd, None)
    assert not parsed.become
    assert parsed.env == {'FOO': 'bar baz', 'LANG': 'C.UTF-8'}
    assert parsed.interpreter == '/usr/bin/python3'


@pytest.mark.parametrize('value', ['a$b', 'a;b', '(x) | y', "it's", 'a`b`',
                                   '~root *'])
def test_environment_values_quoted_as_ansible_quotes_them(value: str) -> None:
    """ansible-core puts a value in single quotes (shlex.quote): its
    characters are no shell syntax there.  Ours took any of ``;&|<>`$(``
    anywhere for a command it could not run itself."""
    inner = 'FOO=%s /usr/bin/python3' % shlex.quote(value)
    parsed = commands.parse(quoted_as_ansible(inner), SUCCESS)
    assert parsed.interpreter == '/usr/bin/python3'
    assert parsed.env == {'FOO': value}


@pytest.mark.parametrize('inner', [
    'FOO=a$b /usr/bin/python3',           # an expansion
    'FOO="$b" /usr/bin/python3',          # inside double quotes too
    'FOO=~ /usr/bin/python3',             # a tilde, expanded in assignments
    "FOO=\"\\'\"x;y'' /usr/bin/python3",  # a separator between quotes
    'FOO=1\n/usr/bin/python3',             # a newline: two commands
    'FOO=1\r/usr/bin/python3',             # no space to sh: one word
    "'FOO=1' /usr/bin/python3",           # a command named FOO=1
    'FOO\\=1 /usr/bin/python3',            # so is this one
    'FOO="\\$x" /usr/bin/python3',         # sh drops that backslash
    'FOO=x\\\n/usr/bin/python3',           # a line continued
    'FOO={a,b} /usr/bin/python3',         # bash's brace expansion
])
def test_shell_syntax_outside_single_quotes_is_no_bare_interpreter(
        inner: str) -> None:
    assert commands.parse(quoted_as_ansible(inner), SUCCESS).interpreter \
        is None


def test_plain_shell_command_keeps_its_text() -> None:
    parsed = commands.parse("/bin/sh -c 'echo ~root && sleep 0'", None)
    assert parsed.text == 'echo ~root' and parsed.interpreter is None


@pytest.mark.parametrize('cmd', [
    'echo raw command',                          # raw: no shell wrapper
    "/bin/sh -c 'unbalanced",                    # not shell syntax
    "/bin/bash -x -c 'echo hi'",                 # another shape
])
def test_unknown_shapes_fall_back(cmd: str) -> None:
    assert commands.parse(cmd, None) is None


def test_become_marker_must_match() -> None:
    cmd = sudo_wrapped('/usr/bin/python3', True)
    assert commands.parse(cmd, 'BECOME-SUCCESS-other') is None


def test_shell_metacharacters_are_not_an_interpreter() -> None:
    parsed = commands.parse("/bin/sh -c '/usr/bin/python3; rm -rf x'", None)
    assert parsed.interpreter is None


def test_housekeeping_shapes() -> None:
    mkdtemp = ('( umask 77 && mkdir -p "` echo ~/.ansible/tmp `"&& mkdir "` '
               'echo ~/.ansible/tmp/ansible-tmp-1.5-22-33 `" && echo '
               'ansible-tmp-1.5-22-33="` echo ~/.ansible/tmp/ansible-tmp-'
               '1.5-22-33 `" )')
    found = commands.housekeeping(mkdtemp)
    assert (found.kind, found.base, found.name) == \
        ('mkdtemp', '~/.ansible/tmp', 'ansible-tmp-1.5-22-33')
    assert commands.housekeeping('echo ~deploy').kind == 'home'
    cleanup = commands.housekeeping(
        'rm -f -r /tmp/x/ansible-tmp-1-2-3/ > /dev/null 2>&1')
    assert (cleanup.kind, cleanup.paths) == \
        ('cleanup', ('/tmp/x/ansible-tmp-1-2-3/',))
    chmod = commands.housekeeping(
        'chmod u+rwx /h/.ansible/tmp/ansible-tmp-1-2-3/ '
        '/h/.ansible/tmp/ansible-tmp-1-2-3/source')
    assert (chmod.kind, chmod.bits, chmod.paths) == ('later', 0o700, (
        '/h/.ansible/tmp/ansible-tmp-1-2-3/',
        '/h/.ansible/tmp/ansible-tmp-1-2-3/source'))
    assert commands.housekeeping(
        'chmod u+xr /t/ansible-tmp-1-2-3/script').bits == 0o500


@pytest.mark.parametrize('text', [
    'echo ~; id',                                # more than a home lookup
    'chmod 777 /etc/passwd',                     # not the task's files
    'rm -f -r /tmp/x > /dev/null 2>&1; reboot',  # a tail
    '( umask 77 && mkdir -p "` echo $HOME `"&& mkdir "` echo $HOME/ansible-'
    'tmp-1 `" && echo ansible-tmp-1="` echo $HOME/ansible-tmp-1 `" )',
])
def test_housekeeping_refuses_anything_else(text: str) -> None:
    assert commands.housekeeping(text) is None


def test_su_wraps_one_level_deeper() -> None:
    cmd = ("/bin/sh -c 'su  plasmid-b -c '\"'\"'/bin/sh -c '\"'\"'\"'\"'\"'\"'"
           "\"'\"'echo %s ; /usr/bin/python3'\"'\"'\"'\"'\"'\"'\"'\"''\"'\"''"
           % SUCCESS)
    parsed = commands.parse(cmd, SUCCESS)
    assert parsed is not None and parsed.become
    assert parsed.interpreter == '/usr/bin/python3'


def test_a_forking_process_compiles_every_pattern_a_task_needs(
        monkeypatch) -> None:
    """After compile_patterns (the preload callback and the strategy call
    it through the plugin's import_runtime, before workers fork), taking
    a task's command and script apart compiles nothing: a pattern used
    per task but missing from TASK_PATTERNS fails this."""
    monkeypatch.setattr(commands, '_COMPILED', {})
    commands.compile_patterns(payload.TASK_PATTERNS)

    def refuse(*args, **kwargs):
        raise AssertionError('compiled in a worker: %r' % (args,))
    monkeypatch.setattr(re, 'compile', refuse)
    parsed = commands.parse(sudo_wrapped('LANG=C /usr/bin/python3', True),
                            SUCCESS)
    assert parsed.env == {'LANG': 'C'}
    assert commands.housekeeping('echo ~') is not None
    assert commands.housekeeping('rm -f -r /t/ansible-tmp-1/ > /dev/null'
                                 ' 2>&1').kind == 'cleanup'
    assert commands.housekeeping('chmod u+x /t/ansible-tmp-1/s') is not None
    assert commands.housekeeping('( umask 77 && mkdir -p "` echo /t `"&& '
                                 'mkdir "` echo /t/ansible-tmp-1 `" && echo '
                                 'ansible-tmp-1="` echo /t/ansible-tmp-1 `" )'
                                 ).kind == 'mkdtemp'
    zip_text = base64.b64encode(b'PK\x05\x06' + bytes(18)).decode()
    job = payload.parse((
        "#!/usr/bin/python3\n_ansiballz_main = None\n"
        '\nif __name__ == "__main__":\n    _ansiballz_main(\n'
        "zip_data='%s',\nmodule_fqn='ansible.modules.ping',\n"
        "params='{}',\nprofile='legacy',\nextensions={},\n"
        "rlimit_nofile=0,\nsecrets=frozenset({'x'}),\n    )\n"
        % zip_text).encode())
    assert job is not None and job.secrets == ['x']
