"""Run a playbook against the test bed, vanilla or accelerated, and read
back every task's result and the broker's counters."""
from __future__ import annotations

import json
import os
import re
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

HERE = os.path.dirname(os.path.abspath(__file__))
# ansible-core's become plugin directory for the tests: a plugin the
# accelerator does not know.
BECOME_PLUGINS = os.path.join(HERE, 'become_plugins')
# The test account's password: sudo asks for it when becoming USER_B.
PASSWORD = 'ansible-pw-5Tz8'


@dataclass
class Run:
    rc: int
    output: str
    pid: int
    results: list = field(default_factory=list)
    stats: dict = field(default_factory=dict)
    # plasmid.ansible modules loaded in ansible-playbook's own process
    main_modules: Optional[list] = None

    def by_task(self) -> dict:
        return {(r['host'], r['task']): r for r in self.results}


def release_of(ansible_bin: str) -> tuple[int, ...]:
    """The ansible-core release, (major, minor), of the venv whose bin/
    directory is *ansible_bin*: .ci/setup names each venv for its release
    (/opt/plasmid-ansible/2.21/bin)."""
    name = os.path.basename(os.path.dirname(ansible_bin))
    return tuple(int(part) for part in name.split('.')[:2])


def inventory(sshd, account: str, hosts: tuple = ('t1',),
              extra: str = '') -> str:
    server = sshd.server
    common = ' '.join(server.ssh_args())
    lines = ['[targets]']
    for host in hosts:
        lines.append(
            "%s ansible_host=%s ansible_port=%d ansible_user=%s "
            "ansible_ssh_private_key_file=%s ansible_ssh_common_args='%s' "
            "ansible_python_interpreter=/usr/bin/python3 %s"
            % (host, server.host, server.port, account, server.client_key,
               common, extra))
    return '\n'.join(lines) + '\n'


@dataclass
class Prepared:
    """A playbook run ready to start: its command line, environment and
    where the record callback and the broker will write."""
    argv: list
    env: dict
    record: Path
    main: Path
    stats: Path


def prepare_playbook(ansible_bin: str, tmp_path, playbook: str,
                     inventory: str, accelerated: bool,
                     extra_env: dict | None = None,
                     args: tuple = ()) -> Prepared:
    tag = accelerated and 'plasmid' or 'vanilla'
    book = tmp_path / ('playbook-%s.yml' % tag)
    book.write_text(playbook)
    inv = tmp_path / ('inventory-%s.ini' % tag)
    inv.write_text(inventory)
    record = tmp_path / ('record-%s.jsonl' % tag)
    main = tmp_path / ('record-main-%s.json' % tag)
    stats = tmp_path / ('stats-%s.json' % tag)
    for path in (record, main, stats):
        if path.exists():
            path.unlink()
    env = dict(os.environ,
               ANSIBLE_CALLBACK_PLUGINS=os.path.join(HERE, 'callback_plugins'),
               ANSIBLE_CALLBACKS_ENABLED='record',
               ANSIBLE_PIPELINING='True', ANSIBLE_NOCOLOR='1',
               ANSIBLE_LOCAL_TEMP=str(tmp_path / 'ansible-local'),
               ANSIBLE_HOME=str(tmp_path / 'ansible-home'),
               PLASMID_RECORD=str(record), PLASMID_RECORD_MAIN=str(main),
               PLASMID_ANSIBLE_STATS=str(stats))
    if accelerated:
        env['ANSIBLE_TRANSPORT'] = 'plasmid.accel.ssh'
    for name, value in (extra_env or {}).items():
        if value is None:  # unset
            env.pop(name, None)
        else:
            env[name] = value
    argv = [os.path.join(ansible_bin, 'ansible-playbook'), '-i', str(inv),
            str(book), *args]
    return Prepared(argv, env, record, main, stats)


def run_playbook(ansible_bin: str, tmp_path, playbook: str, inventory: str,
                 accelerated: bool, extra_env: dict | None = None,
                 args: tuple = (), stats_timeout: float = 10.0) -> Run:
    prepared = prepare_playbook(ansible_bin, tmp_path, playbook, inventory,
                                accelerated, extra_env, args)
    with subprocess.Popen(
            prepared.argv, env=prepared.env, cwd=str(tmp_path),
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            text=True) as proc:
        output, _ = proc.communicate(timeout=600)
    run = Run(proc.returncode, output, proc.pid)
    if prepared.record.exists():
        run.results = [json.loads(line) for line in
                       prepared.record.read_text().splitlines()]
    if prepared.main.exists():
        run.main_modules = json.loads(prepared.main.read_text())['loaded']
    if accelerated:
        run.stats = wait_for_stats(prepared.stats, stats_timeout)
    return run


def wait_for_stats(path, timeout: float = 10.0) -> dict:
    """The broker writes its counters once it sees ansible-playbook gone."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        if path.exists() and path.stat().st_size:
            return json.loads(path.read_text())
        time.sleep(0.05)
    return {}


def run_ad_hoc(ansible_bin: str, tmp_path, inv: str, accelerated: bool,
               words: tuple, extra_env: dict | None = None,
               stats_timeout: float = 10.0) -> tuple[int, str, dict]:
    """``ansible t1 -o <words>``: exit status, the one-line output without
    its timestamps, and the broker's counters (accelerated)."""
    prepared = prepare_playbook(ansible_bin, tmp_path, '[]', inv,
                                accelerated, extra_env)
    proc = subprocess.run(
        [os.path.join(ansible_bin, 'ansible'), 't1', '-o', '-i',
         prepared.argv[2], *words], env=prepared.env, capture_output=True,
        text=True, timeout=300)
    line = re.sub(r'"(start|end|delta)": "[^"]*"', '', proc.stdout)
    stats = accelerated and wait_for_stats(prepared.stats,
                                           stats_timeout) or {}
    return proc.returncode, line, stats


def run_probe(ansible_bin: str, code: str, *args: str) -> str:
    """What Python *code* prints, run from / by the Python of the venv
    whose bin/ is *ansible_bin* (one release's ansible-core importable)."""
    return subprocess.run([os.path.join(ansible_bin, 'python'), '-c', code,
                           *args], cwd='/', check=True, capture_output=True,
                          text=True).stdout
