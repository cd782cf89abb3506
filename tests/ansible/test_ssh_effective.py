"""The line vanilla's ssh prints as a terminal session ends, from the
settings ``ssh -G`` gives (plasmid/ansible/ssh_effective.py)."""
from __future__ import annotations

import pytest

from plasmid.ansible import ssh_effective


@pytest.mark.parametrize('args,line', [
    # ansible's default ssh_args: the plugin adds a ControlPath: shared.
    (['-C', '-o', 'ControlMaster=auto', '-o', 'ControlPersist=60s'],
     b'Shared connection to h.example closed.\r\n'),
    (['-C', '-o', 'ControlMaster=no'], b'Connection to h.example closed.\r\n'),
    # A ControlPath of none: no master to share.
    (['-o', 'ControlMaster=auto', '-o', 'ControlPersist=60s', '-o',
      'ControlPath=none'], b'Connection to h.example closed.\r\n'),
    (['-o', 'LogLevel=ERROR'], b''),
    (['-q'], b''),
    (['-o', 'LogLevel=VERBOSE'], b'Connection to h.example closed.\r\n'),
    # ssh takes an option's first value.
    (['-o', 'LogLevel=QUIET', '-o', 'LogLevel=INFO'], b''),
])
def test_the_line_follows_sshs_settings(args: list, line: bytes) -> None:
    found = ssh_effective.settings('ssh', ['-F', '/dev/null'] + args,
                                   'H.example')
    assert found is not None
    assert ssh_effective.closing_line(found) == line


def test_a_config_files_host_name_is_the_one_said(tmp_path) -> None:
    config = tmp_path / 'config'
    config.write_text('Host alias\n  HostName real.example\n')
    found = ssh_effective.settings('ssh', ['-F', str(config),
                                           '-o', 'ControlMaster=no'], 'alias')
    assert ssh_effective.closing_line(found) == \
        b'Connection to real.example closed.\r\n'


def test_settings_ssh_cannot_give_say_nothing(tmp_path) -> None:
    assert ssh_effective.settings('/nonexistent/ssh', [], 'h') is None
    assert ssh_effective.settings('ssh', ['-o', 'NoSuchOption=1'],
                                  'h') is None
    assert ssh_effective.closing_line(None) == b''


def test_a_config_whose_match_exec_hangs_leaves_nothing_running(
        tmp_path, monkeypatch) -> None:
    """ssh -G runs a config's `Match exec`: one that hangs is given up
    with ssh, and the command it started goes too (it was left behind)."""
    import subprocess
    monkeypatch.setattr(ssh_effective, 'SETTINGS_TIMEOUT', 0.5)
    marker = 'plasmid-test-match-exec-%d' % id(tmp_path)
    config = tmp_path / 'config'
    config.write_text('Match exec "sleep 30; true %s"\n  LogLevel ERROR\n'
                      % marker)
    assert ssh_effective.settings('ssh', ['-F', str(config)], 'h') is None
    left = subprocess.run(['pgrep', '-f', marker], capture_output=True)
    assert left.stdout == b'', left.stdout
