"""Ansible: vanilla ansible-core vs Mitogen vs plasmid's accelerator.

    sudo python3 bench/ansible/run.py [--quick] [--reps 2]
        [--scenarios become100,loop100,files,scripts50,hosts50,become20@rtt,...]
        [--peers vanilla,mitogen,plasmid] [--venv /opt/ansible/2.21]
        [--mitogen-venv VENV] [--latency-ms 25] [--log-dir DIR]
        [--strategy linear|free]

Needs root: starts the tests' private sshd (tests/testbed/sshd.py, plus
an sftp subsystem as a stock sshd has, which vanilla's file transfers use) on
127.0.0.1 and, for the scenarios marked ``@rtt``, a toxiproxy adding
--latency-ms each way in front of it (tests/testbed/latency.py).  Logs in
as ``plasmid-ansible``, an account created for the run (key login,
password field '*', sudo to root without password) and removed at the
end; it never touches the test bed's plasmid-a.

Peers, all running ansible-playbook from a venv (--venv; Mitogen's from
--mitogen-venv, default the same):

- vanilla: ansible-core's ssh connection with its default ssh_args
  (``-C -o ControlMaster=auto -o ControlPersist=60s``) and
  ANSIBLE_PIPELINING=True; every run gets a fresh ControlPath directory,
  so each starts cold like the other peers;
- mitogen: ANSIBLE_STRATEGY=mitogen_linear from the installed
  ansible_mitogen (the plugin directory is found in the venv);
- plasmid: ANSIBLE_TRANSPORT=plasmid.accel.ssh;
- plasmid-preload: the same plus ANSIBLE_CALLBACKS_ENABLED=
  plasmid.accel.preload, the optional callback that loads the connection
  plugin in ansible-playbook before the workers fork;
- plasmid-strategy: the same plus ANSIBLE_STRATEGY=plasmid.accel.linear,
  the optional strategy that runs each task on a thread of ansible-playbook
  instead of a forked worker;
- floor (a reference, not a peer): bench/ansible/floor_plugins/floor.py, a
  connection that answers every command at once without touching a host,
  for the scenarios made of command tasks only: what ansible-core itself
  spends per task, which no connection plugin can take away;
- floor-strategy: the floor with the optional strategy's threaded workers,
  ansible-core's own per-task cost without its worker fork.

plasmid's sources are byte-compiled for the venv's Python first (as ``pip
install`` does): with PYTHONDONTWRITEBYTECODE set, as it may be in a
shell, every worker would otherwise compile them again.

The inventory is the same for all three: hosts t1..tN at 127.0.0.1, user,
key, ``ansible_ssh_common_args`` = the test bed's ssh options without its
``ControlMaster=no``/``ControlPath=none`` (which would switch vanilla's
ControlPersist off) and with any ``--ssh-option``,
``ansible_python_interpreter=/usr/bin/python3``; host
keys are checked against the test bed's known_hosts.  Each host has a port
of its own on relay.py, which counts the bytes and forwards to the sshd (or
to the toxiproxy in front of it), so every tool opens one connection per
host, as with real hosts.

Per run: wall time of ansible-playbook; controller CPU (user+sys of
ansible-playbook and every process it started, including vanilla's
ControlPersist masters, Mitogen's helper processes and plasmid's broker,
gathered by reap.py as a child subreaper from RUSAGE_CHILDREN); bytes sent
to and received from the sshd (TCP payload counted by relay.py); and, for
reference, the CPU used on the sshd side (the private sshd's reaped
sessions: sshd, sudo and the remote Pythons; all on this same machine).
Each run must end with rc 0 and every host's recap showing the expected
ok count and no failure, or it is reported as failed.

local100 runs its tasks on the controller, as root: ``-e
ansible_connection=local`` for vanilla and Mitogen (whose strategy runs
that as mitogen_local), ``-e ansible_connection=plasmid.accel.local`` for
plasmid's peers.  podman100 runs them in a podman container of the test
bed's image (tests/testbed/containers.py, started for the run), as its
root: ``-e ansible_connection=podman`` (containers.podman.podman from the bundle
.ci/setup unpacks; Mitogen's strategy makes it mitogen_podman) or
plasmid.accel.podman.  kubectl100 runs them in that container as the pod
``web`` of the test bed's stand-in Kubernetes API server
(tests/testbed/kubectl.py), through the real kubectl client:
``-e ansible_connection=kubectl`` (kubernetes.core.kubectl; mitogen_kubectl
under Mitogen's strategy) or plasmid.accel.kubectl.  The stand-in's exec is
``podman exec`` behind a Python WebSocket server, so its cost per exec is
this test bed's, not a cluster's.  lxc100 runs them in an LXC container on
the test bed's file system (read-only; /tmp, /var/tmp and root's home in
memory), as its root: ``-e ansible_connection=lxc`` (community.general.lxc,
unpipelined for vanilla: its pipelining is unreliable; mitogen_lxc under
Mitogen's strategy) or plasmid.accel.lxc.  local100named is local100 with every peer naming
``local``: plasmid's connection plugin alone leaves it to vanilla's, the
preload callback and the strategy take it (plasmid/ansible/takeover.py).
Nothing crosses the relay in either, so they have no
bytes target; the controller CPU is all the CPU the run used, but the
container's processes' (podman exec's children are not the run's).

--strategy free runs every peer on its free strategy instead: vanilla
and the plasmid and floor peers on ansible.builtin.free, Mitogen on
mitogen_free, the -strategy peers on plasmid.accel.free.

Order: one untimed warm-up per peer, then --reps repetitions; in each,
every scenario runs once per peer, the order of the peers rotating.
Tables show medians and min-max over the repetitions.

--timeline also enables a callback (timeline_plugins/bench_timeline.py)
that stamps every task and host event, and prints where each peer's
rounds go (bench/ansible/timeline.py): the first round, which includes the
connections, then the later rounds' length, the strategy's queueing (from
a round's start to its last host's start) and the tail (from there to the
last host's answer).
"""
from __future__ import annotations

import argparse
import contextlib
import dataclasses
import hashlib
import json
import os
import pwd
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from typing import Optional

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

import benchlib  # noqa: E402

benchlib.setup_paths()

from testbed import LatencyProxy, SshServer, unavailable_reason  # noqa: E402
from testbed import accounts, containers, kubectl  # noqa: E402
from testbed.procs import descendants  # noqa: E402

sys.path.insert(0, HERE)
import timeline  # noqa: E402

BENCH_USER = 'plasmid-ansible'
SUDOERS_PATH = '/etc/sudoers.d/plasmid-ansible'
PLAYBOOKS = os.path.join(HERE, 'playbooks')
RELAY = os.path.join(HERE, 'relay.py')
FLOOR_PLUGINS = os.path.join(HERE, 'floor_plugins')
TIMELINE_PLUGINS = os.path.join(HERE, 'timeline_plugins')
REAP = os.path.join(HERE, 'reap.py')
REMOTE_PYTHON = '/usr/bin/python3'
PEERS = ('vanilla', 'mitogen', 'plasmid', 'plasmid-preload',
         'plasmid-strategy', 'floor', 'floor-strategy')
FLOOR_PEERS = ('floor', 'floor-strategy')
PLASMID_PEERS = ('plasmid', 'plasmid-preload', 'plasmid-strategy')
RUN_TIMEOUT = 1200.0
# bigfiles: the sizes of its two files (MiB), by --quick.
BIG_FILES_MIB = {False: (32, 320), True: (4, 40)}
# fetchbig: the size of the file fetched (MiB), by --quick.
FETCH_MIB = {False: 64, True: 8}
# Targets from the issue.
TARGET_WALL_VS_MITOGEN = 0.5     # one host: plasmid wall <= 1/2 Mitogen's
TARGET_CPU_VS_VANILLA = 0.5      # controller CPU <= 1/2 vanilla's
TARGET_HOSTS_THROUGHPUT = 3.0    # 50 hosts: >= 3x Mitogen's tasks/s
# Scenarios that do not run over ssh: where -> (the connection vanilla's
# and Mitogen's runs name, which Mitogen's strategy takes over, plasmid's).
CONNECTIONS = {'local': ('local', 'plasmid.accel.local'),
               'podman': ('podman', 'plasmid.accel.podman'),
               'kubectl': ('kubectl', 'plasmid.accel.kubectl'),
               'lxc': ('lxc', 'plasmid.accel.lxc')}
# Where containers.podman (vanilla's podman connection) is: .ci/setup
# takes it from the "ansible" bundle.
COLLECTIONS = '/opt/plasmid-ansible/collections'


# ------------------------------------------------------------- scenarios

@dataclasses.dataclass
class Scenario:
    name: str
    title: str
    playbook: str
    hosts: int
    tasks: int                  # ok results expected per host
    actions: int                # module runs per host (loop items count)
    args: list[str]
    rtt: bool = False
    forks: int = 5
    commands_only: bool = True  # only command tasks: the floor peer runs it
    # Where Mitogen is slower than vanilla, the target is vanilla's wall
    # time plus this many seconds (and none of the ratio targets).
    vanilla_slack: Optional[float] = None
    # Where the tasks run: 'ssh' (the private sshd), 'local' (the
    # controller), 'podman' (a container of the test bed's image) or
    # 'kubectl' (that container as a pod of the stand-in API server) or
    # 'lxc' (an LXC container on the test bed's file system); see
    # CONNECTIONS.
    where: str = 'ssh'
    # Every peer names vanilla's connection (plasmid's peers then keep
    # vanilla's, unless the preload callback or the strategy takes it).
    named_as_vanilla: bool = False

    @property
    def label(self) -> str:
        return self.name + ('@rtt' if self.rtt else '')


def scenarios(quick: bool) -> dict[str, Scenario]:
    """The scenarios by name; --quick shrinks each."""
    items = 20 if quick else 100
    become = 20 if quick else 100
    hosts, host_tasks = (10, 5) if quick else (50, 20)
    copies, templates = (5, 2) if quick else (20, 5)
    scripts = 10 if quick else 50
    includes = 100 if quick else 1000
    return {s.name: s for s in [
        Scenario('become100', '%d tasks command /bin/true with become (sudo), '
                 '1 host' % become, 'become.yml', 1, become, become,
                 ['--tags', 'first20'] if quick else []),
        Scenario('become20', '20 tasks command /bin/true with become (sudo), '
                 '1 host', 'become.yml', 1, 20, 20, ['--tags', 'first20']),
        Scenario('local100', '%d tasks command /bin/true on the controller '
                 '(local connection)' % become, 'true100.yml', 1, become,
                 become, ['--tags', 'first20'] if quick else [],
                 commands_only=False, where='local'),
        Scenario('local100named', '%d tasks command /bin/true on the '
                 'controller, every peer naming the local connection'
                 % become, 'true100.yml', 1, become, become,
                 ['--tags', 'first20'] if quick else [],
                 commands_only=False, where='local', named_as_vanilla=True),
        Scenario('podman100', '%d tasks command /bin/true in a podman '
                 'container' % become, 'true100.yml', 1, become, become,
                 ['--tags', 'first20'] if quick else [],
                 commands_only=False, where='podman'),
        Scenario('kubectl100', '%d tasks command /bin/true in a pod '
                 '(kubectl, stand-in API server)' % become, 'true100.yml', 1,
                 become, become, ['--tags', 'first20'] if quick else [],
                 commands_only=False, where='kubectl'),
        Scenario('lxc100', '%d tasks command /bin/true in an LXC container'
                 % become, 'true100.yml', 1, become, become,
                 ['--tags', 'first20'] if quick else [],
                 commands_only=False, where='lxc'),
        Scenario('loop100', 'with_items loop of %d items, command /bin/true, '
                 '1 host' % items, 'loop.yml', 1, 1, items,
                 ['-e', 'items=%d' % items]),
        Scenario('scripts50', 'with_items loop of %d items, script (a small '
                 'shell script), 1 host' % scripts, 'scripts.yml', 1, 1,
                 scripts, ['-e', 'items=%d' % scripts], commands_only=False),
        Scenario('files', '%d copy (content:) + %d template, 1 host' % (
            copies, templates), 'files.yml', 1, copies + templates,
            copies + templates, ['--tags', 'first5'] if quick else [],
            commands_only=False),
        Scenario('copies100', '%d copy (content:) tasks, 1 host' % become,
                 'copies100.yml', 1, become, become,
                 ['--tags', 'first20'] if quick else [], commands_only=False),
        Scenario('hosts50', '%d hosts x %d tasks command /bin/true, forks %d'
                 % (hosts, host_tasks, hosts), 'hosts.yml', hosts, host_tasks,
                 host_tasks, ['--tags', 'first5'] if quick else [],
                 forks=hosts),
        Scenario('includes1000', 'include_tasks looped %d times, one '
                 'set_fact each (controller only), 1 host' % includes,
                 'includes.yml', 1, 2 * includes, 0,   # include + set_fact
                 ['-e', 'count=%d' % includes], commands_only=False,
                 vanilla_slack=0.0),
        Scenario('oneshot', 'ping and command /bin/true, start-up included, '
                 '1 host', 'oneshot.yml', 1, 2, 2, [], commands_only=False,
                 vanilla_slack=0.2),
        Scenario('bigfiles', 'copy of a %d MiB and a %d MiB file, 1 host'
                 % BIG_FILES_MIB[quick], 'bigfiles.yml', 1, 4, 4, [],
                 commands_only=False, vanilla_slack=0.0),
        Scenario('fetchbig', 'fetch of a %d MiB file, 1 host'
                 % FETCH_MIB[quick], 'fetchbig.yml', 1, 3, 3,
                 ['-e', 'mib=%d' % FETCH_MIB[quick]], commands_only=False,
                 vanilla_slack=0.0),
    ]}


def pick_scenarios(spec: str, quick: bool) -> list[Scenario]:
    known = scenarios(quick)
    out = []
    for word in spec.split(','):
        word = word.strip()
        name, _, where = word.partition('@')
        if name not in known or where not in ('', 'rtt'):
            sys.exit('unknown scenario %r (known: %s, each optionally with '
                     '@rtt)' % (word, ', '.join(known)))
        out.append(dataclasses.replace(known[name], rtt=bool(where)))
    return out


# ------------------------------------------------------- the test account

def create_account() -> None:
    """A login account of our own: key login, sudo to root, no password."""
    try:
        pwd.getpwnam(BENCH_USER)
    except KeyError:
        subprocess.run(['useradd', '-m', '-s', '/bin/bash', BENCH_USER],
                       check=True, capture_output=True)
    # '*': no password can match, yet the account is not locked ('!'), so
    # sshd (UsePAM no) lets the key in.
    subprocess.run(['usermod', '-p', '*', BENCH_USER], check=True,
                   capture_output=True)
    accounts.write_sudoers(SUDOERS_PATH,
                           '%s ALL=(root) NOPASSWD: ALL\n' % BENCH_USER)


def remove_account() -> None:
    error = accounts.remove_account(BENCH_USER, SUDOERS_PATH)
    if error:
        print('# could not remove %s: %s' % (BENCH_USER, error),
              file=sys.stderr)


# ------------------------------------------------------------ the network

class BenchSshServer(SshServer):
    """The test bed's sshd plus an sftp subsystem, as a stock sshd has:
    vanilla ansible transfers files with sftp first, then scp (OpenSSH 9's
    scp speaks sftp too), then a piped dd; without sftp every transfer
    would pay two failed attempts first."""

    def _write_config(self) -> None:
        super()._write_config()
        with open(self.config, 'a') as handle:
            handle.write('Subsystem sftp internal-sftp\n')
        check = subprocess.run(['/usr/sbin/sshd', '-t', '-f', self.config],
                               capture_output=True, text=True)
        if check.returncode != 0:
            raise RuntimeError('sshd -t: ' + check.stderr.strip())


class Relay:
    """relay.py: one port per inventory host, counting bytes."""

    def __init__(self, upstream_port: int, listeners: int) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, RELAY, str(upstream_port), str(listeners)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.ports = [int(p) for p in self.proc.stdout.readline().split()]
        if len(self.ports) != listeners:
            raise RuntimeError('relay.py did not start')

    def count(self) -> tuple[int, int, int]:
        """(bytes sent to sshd, bytes received from it, open connections)."""
        self.proc.stdin.write('count\n')
        self.proc.stdin.flush()
        sent, received, open_, _ = map(int, self.proc.stdout.readline().split())
        return sent, received, open_

    def settle(self, timeout: float = 30.0) -> tuple[int, int, int]:
        """Counts once every connection has closed (or at the timeout)."""
        deadline = time.monotonic() + timeout
        while True:
            counts = self.count()
            if counts[2] == 0 or time.monotonic() > deadline:
                return counts
            time.sleep(0.05)

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait()
        self.proc.stdout.close()


def sshd_cpu(server: SshServer) -> float:
    """CPU seconds of the sshd's finished sessions so far: what the sshd
    listener and the test bed's reaper (which adopts orphaned sessions)
    have reaped, plus the listener's own."""
    tick = os.sysconf('SC_CLK_TCK')
    reaper = server._proc.pid
    total = 0
    for pid in [reaper] + sorted(descendants([reaper])):
        try:
            with open('/proc/%d/stat' % pid) as handle:
                fields = handle.read().rsplit(')', 1)[1].split()
        except OSError:
            continue
        if pid == reaper:
            total += int(fields[13]) + int(fields[14])      # reaped children
        elif int(fields[1]) == reaper:                       # the listener
            total += sum(int(f) for f in fields[11:15])
    return total / tick


def plasmid_digest() -> str:
    """A short digest of plasmid's source: other people edit the tree while
    benchmarks run, and every ansible-playbook run imports it afresh."""
    root = os.path.join(benchlib.REPO_DIR, 'plasmid')
    digest = hashlib.sha1()
    for top, dirs, files in os.walk(root):
        dirs.sort()
        for name in sorted(files):
            if name.endswith('.py'):
                path = os.path.join(top, name)
                digest.update(os.path.relpath(path, root).encode() + b'\0')
                with open(path, 'rb') as handle:
                    digest.update(handle.read() + b'\0')
    return digest.hexdigest()[:10]


# ---------------------------------------------------------------- ansible

def compile_plasmid(venv: str) -> None:
    """Byte-compile plasmid for the venv's Python, as pip install does."""
    subprocess.run([venv_python(venv), '-m', 'compileall', '-q',
                    os.path.join(benchlib.REPO_DIR, 'plasmid'),
                    os.path.join(benchlib.REPO_DIR, 'ansible_collections')],
                   check=True, stdout=subprocess.DEVNULL)


def venv_python(venv: str) -> str:
    return os.path.join(venv, 'bin', 'python')


def venv_query(venv: str, code: str) -> str:
    return subprocess.run([venv_python(venv), '-c', code], check=True,
                          capture_output=True, text=True).stdout.strip()


def ansible_version(venv: str) -> str:
    return venv_query(venv, 'import ansible.release as r; print(r.__version__)')


def mitogen_info(venv: str) -> tuple[str, str]:
    """(mitogen version, its strategy plugin directory) in *venv*."""
    out = venv_query(venv, (
        'import importlib.metadata as m, os, ansible_mitogen as a\n'
        'print(m.version("mitogen"))\n'
        'print(os.path.join(os.path.dirname(a.__file__), "plugins", '
        '"strategy"))'))
    version, path = out.splitlines()[-2:]
    return version, path


def peer_env(peer: str, venv: str, mitogen_strategy: Optional[str],
             run_dir: str, forks: int, extra: dict[str, str],
             order: str = 'linear') -> dict[str, str]:
    """*order*: linear or free, the strategy every peer runs its flavour of."""
    env = {k: v for k, v in os.environ.items() if not k.startswith('ANSIBLE_')}
    cfg = os.path.join(run_dir, 'ansible.cfg')
    with open(cfg, 'w') as handle:
        handle.write('[defaults]\n')
    env.update({
        'PATH': os.path.join(venv, 'bin') + os.pathsep + env.get('PATH', ''),
        'ANSIBLE_CONFIG': cfg,
        'ANSIBLE_PIPELINING': 'True',
        'ANSIBLE_HOST_KEY_CHECKING': 'True',
        'ANSIBLE_GATHERING': 'explicit',
        'ANSIBLE_RETRY_FILES_ENABLED': 'False',
        'ANSIBLE_NOCOLOR': '1',
        'ANSIBLE_FORKS': str(forks),
        'ANSIBLE_TIMEOUT': '60',
        'ANSIBLE_LOCAL_TEMP': os.path.join(run_dir, 'tmp'),
        'ANSIBLE_SSH_CONTROL_PATH_DIR': os.path.join(run_dir, 'cp'),
        'ANSIBLE_DEPRECATION_WARNINGS': 'False',
        'ANSIBLE_STRATEGY': order,
    })
    if peer == 'mitogen':
        env['ANSIBLE_STRATEGY_PLUGINS'] = mitogen_strategy
        env['ANSIBLE_STRATEGY'] = 'mitogen_' + order
    elif peer in FLOOR_PEERS:
        env['ANSIBLE_CONNECTION_PLUGINS'] = FLOOR_PLUGINS
        env['ANSIBLE_TRANSPORT'] = 'floor'
        if peer == 'floor-strategy':
            env['ANSIBLE_STRATEGY'] = 'plasmid.accel.' + order
    elif peer in PLASMID_PEERS:
        env['ANSIBLE_TRANSPORT'] = 'plasmid.accel.ssh'
        if peer == 'plasmid-strategy':
            env['ANSIBLE_STRATEGY'] = 'plasmid.accel.' + order
    env.update(extra)
    if peer == 'plasmid-preload':     # beside any the caller enabled
        env['ANSIBLE_CALLBACKS_ENABLED'] = ','.join(
            filter(None, [extra.get('ANSIBLE_CALLBACKS_ENABLED'),
                          'plasmid.accel.preload']))
    return env


def write_inventory(path: str, server: SshServer, ports: list[int]) -> None:
    args = server.ssh_args()
    common = []
    i = 0
    while i < len(args):
        if args[i] == '-o' and args[i + 1].split('=')[0] in (
                'ControlMaster', 'ControlPath'):
            i += 2
            continue
        common.append(args[i])
        i += 1
    inventory = {'all': {
        'hosts': {'t%d' % (n + 1): {'ansible_port': port}
                  for n, port in enumerate(ports)},
        'vars': {
            'ansible_host': server.host,
            'ansible_user': BENCH_USER,
            'ansible_ssh_private_key_file': server.client_key,
            'ansible_ssh_common_args': ' '.join(common),
            'ansible_python_interpreter': REMOTE_PYTHON,
        }}}
    with open(path, 'w') as handle:      # JSON is YAML
        json.dump(inventory, handle, indent=1)


RECAP = re.compile(r'^(\S+)\s+:\s+ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)'
                   r'\s+failed=(\d+)')


def write_big_files(where: str, sizes_mib: tuple[int, int]) -> None:
    """bigfiles' sources: random bytes, so that ssh's compression cannot
    shrink them."""
    os.makedirs(where, exist_ok=True)
    for name, mib in zip(('smaller.bin', 'larger.bin'), sizes_mib):
        with open(os.path.join(where, name), 'wb') as handle:
            for _ in range(mib):
                handle.write(os.urandom(1 << 20))


def check_recap(log: str, scenario: Scenario) -> Optional[str]:
    """None if every host shows the expected ok count and no failure."""
    with open(log, errors='replace') as handle:
        text = handle.read()
    hosts = {}
    for line in text.split('PLAY RECAP')[-1].splitlines():
        found = RECAP.match(line.strip())
        if found:
            hosts[found.group(1)] = [int(g) for g in found.groups()[1:]]
    if len(hosts) != scenario.hosts:
        return 'recap lists %d hosts, expected %d' % (len(hosts),
                                                      scenario.hosts)
    bad = {h: v for h, v in hosts.items()
           if v[0] != scenario.tasks or v[2] or v[3]}
    if bad:
        host, (ok, _, unreachable, failed) = sorted(bad.items())[0]
        return '%d hosts wrong, e.g. %s: ok=%d (expected %d) unreachable=%d ' \
            'failed=%d' % (len(bad), host, ok, scenario.tasks, unreachable,
                           failed)
    return None


@dataclasses.dataclass
class Result:
    wall: float
    cpu: float
    sent: int
    received: int
    target_cpu: float
    error: Optional[str] = None
    timeline: Optional[timeline.Timeline] = None


class Bench:
    def __init__(self, args, server: SshServer, relays: dict[bool, Relay],
                 inventories: dict[bool, str], work: str,
                 mitogen_strategy: Optional[str]) -> None:
        self.args = args
        self.server = server
        self.relays = relays
        self.inventories = inventories
        self.work = work
        self.mitogen_strategy = mitogen_strategy
        self.serial = 0
        self.extra_env = dict(kv.split('=', 1) for kv in args.env)
        self.dest_dir = os.path.join(pwd.getpwnam(BENCH_USER).pw_dir,
                                     'ansible-bench')
        self.src_dir = os.path.join(work, 'src')     # bigfiles' sources
        self.digests: list[str] = []   # plasmid's source, run by run
        self.container: Optional[str] = None  # podman100's, when chosen
        self.kubeconfig: Optional[str] = None  # kubectl100's stand-in's
        self.lxc: Optional[str] = None  # lxc100's container, when chosen

    def venv(self, peer: str) -> str:
        return self.args.mitogen_venv if peer == 'mitogen' else self.args.venv

    def run(self, peer: str, scenario: Scenario) -> Result:
        self.serial += 1
        name = '%03d-%s-%s' % (self.serial, scenario.label.replace('@', '-'),
                               peer)
        run_dir = os.path.join(self.work, name)
        for sub in ('', 'tmp', 'cp'):
            os.makedirs(os.path.join(run_dir, sub), exist_ok=True)
        log = os.path.join(run_dir, 'ansible.log')
        result_file = os.path.join(run_dir, 'result.json')
        extra = dict(self.extra_env)
        stamps = os.path.join(run_dir, 'timeline.txt')
        if self.args.timeline:
            extra.update(with_timeline(extra, stamps))
        env = peer_env(peer, self.venv(peer), self.mitogen_strategy, run_dir,
                       scenario.forks, extra, self.args.strategy)
        argv = [os.path.join(self.venv(peer), 'bin', 'ansible-playbook'),
                '-i', self.inventories[scenario.rtt],
                os.path.join(PLAYBOOKS, scenario.playbook),
                '-e', 'run_id=%s' % name, '-e', 'dest_dir=%s' % self.dest_dir,
                '-e', 'src_dir=%s' % self.src_dir,
                *scenario.args, *self.args.ansible_arg]
        if scenario.where != 'ssh':
            theirs, ours = CONNECTIONS[scenario.where]
            named = peer in PLASMID_PEERS and not scenario.named_as_vanilla
            argv += ['-e', 'ansible_connection=%s' % (
                ours if named else theirs)]
        if scenario.where == 'podman':
            # The container's root, not the ssh scenarios' account.
            argv += ['-e', 'ansible_host=%s' % self.container,
                     '-e', 'ansible_user=root']
            env['ANSIBLE_COLLECTIONS_PATH'] = COLLECTIONS
        if scenario.where == 'kubectl':
            # Mitogen's kubectl takes the pod from ansible_host.
            argv += ['-e', 'ansible_host=web', '-e', 'ansible_kubectl_pod=web',
                     '-e', 'ansible_kubectl_kubeconfig=%s' % self.kubeconfig]
            env['ANSIBLE_COLLECTIONS_PATH'] = COLLECTIONS
        if scenario.where == 'lxc':
            argv += ['-e', 'ansible_host=%s' % self.lxc]
            env['ANSIBLE_COLLECTIONS_PATH'] = COLLECTIONS
            if peer == 'vanilla':
                # community.general.lxc's pipelining loses modules' text
                # now and then (README): vanilla runs it unpipelined.
                env['ANSIBLE_PIPELINING'] = 'False'
        if peer in PLASMID_PEERS:
            digest = plasmid_digest()
            if digest not in self.digests:
                self.digests.append(digest)
        relay = self.relays[scenario.rtt]
        sent0, received0, _ = relay.settle()
        target0 = sshd_cpu(self.server)
        subprocess.run([sys.executable, REAP, result_file, log,
                        str(RUN_TIMEOUT), '--', *argv], env=env, cwd=run_dir,
                       check=True)
        sent1, received1, still_open = relay.settle()
        time.sleep(0.2)     # let sshd reap the sessions that just closed
        target1 = sshd_cpu(self.server)
        with open(result_file) as handle:
            got = json.load(handle)
        error = None
        if got['rc'] != 0:
            error = 'ansible-playbook exited with %s' % got['rc']
        else:
            error = check_recap(log, scenario)
        if still_open:
            error = error or '%d connections still open after the run' % \
                still_open
        if got['leftovers']:
            print('# %s: had to kill %s' % (name, got['leftovers']),
                  file=sys.stderr)
        if error:
            print('# %s FAILED: %s; log %s, its end:' % (name, error, log),
                  file=sys.stderr)
            with open(log, errors='replace') as handle:
                tail = handle.read()[-3000:]
            print(tail, file=sys.stderr)
        return Result(got['wall'], got['user'] + got['sys'],
                      sent1 - sent0, received1 - received0,
                      target1 - target0, error,
                      timeline.summarize(stamps) if self.args.timeline
                      and error is None else None)


def with_timeline(extra: dict[str, str], stamps: str) -> dict[str, str]:
    """The environment that adds the bench_timeline callback, writing
    to *stamps*, to what *extra* enables."""
    def joined(key: str, value: str, sep: str) -> str:
        return sep.join(filter(None, [extra.get(key), value]))
    return {'ANSIBLE_CALLBACK_PLUGINS': joined(
                'ANSIBLE_CALLBACK_PLUGINS', TIMELINE_PLUGINS, os.pathsep),
            'ANSIBLE_CALLBACKS_ENABLED': joined(
                'ANSIBLE_CALLBACKS_ENABLED', 'bench_timeline', ','),
            'PLASMID_BENCH_TIMELINE': stamps}


# ----------------------------------------------------------------- output

def fmt_range(values: list[float], digits: int = 2) -> str:
    if len(values) == 1:
        return '%.*f' % (digits, values[0])
    return '%.*f (%.*f-%.*f)' % (digits, benchlib.median(values), digits,
                                 min(values), digits, max(values))


def kib(values: list[int]) -> str:
    med = benchlib.median(values) / 1024.0
    if len(values) == 1 or max(values) - min(values) <= 0.01 * med * 1024:
        return '%.1f' % med
    return '%.1f (%.1f-%.1f)' % (med, min(values) / 1024.0,
                                 max(values) / 1024.0)


def ratio(ours: float, theirs: float) -> str:
    return '%.2fx' % (ours / theirs) if theirs else '-'


def report(scenario: Scenario, results: dict[str, list[Result]],
           rtt_ms: float) -> list[str]:
    """Print the table of one scenario; return the target verdict lines."""
    where = 'through toxiproxy, RTT %.0f ms' % rtt_ms if scenario.rtt \
        else 'loopback'
    print()
    print('## %s: %s, %s' % (scenario.label, scenario.title, where))
    rows = []
    med = {}
    total_actions = scenario.hosts * scenario.actions
    for peer, runs in results.items():
        good = [r for r in runs if r.error is None]
        failed = len(runs) - len(good)
        if not good:
            rows.append([peer, '0/%d' % len(runs), 'FAILED', '', '', '', '',
                         '', ''])
            continue
        walls = [r.wall for r in good]
        cpus = [r.cpu for r in good]
        totals = [r.sent + r.received for r in good]
        med[peer] = {'wall': benchlib.median(walls),
                     'cpu': benchlib.median(cpus),
                     'bytes': benchlib.median(totals)}
        rows.append([
            peer, '%d/%d' % (len(good), len(runs)) if failed else
            str(len(good)),
            fmt_range(walls), fmt_range(cpus),
            kib([r.sent for r in good]), kib([r.received for r in good]),
            kib(totals),
            '%.1f' % (total_actions / med[peer]['wall']),
            fmt_range([r.target_cpu for r in good], 1)])
    for ours in PLASMID_PEERS + FLOOR_PEERS:
        for base in ('vanilla', 'mitogen'):
            if ours in med and base in med:
                p, b = med[ours], med[base]
                rows.append(['%s / %s' % (ours, base), '',
                             '%.2fx' % (p['wall'] / b['wall']),
                             '%.2fx' % (p['cpu'] / b['cpu']), '', '',
                             ratio(p['bytes'], b['bytes']),
                             '%.2fx' % (b['wall'] / p['wall']), ''])
    print(benchlib.table(
        ['peer', 'runs', 'wall s', 'controller CPU s', 'sent KiB',
         'received KiB', 'total KiB', 'actions/s', 'sshd-side CPU s'], rows))
    verdicts = []
    for ours in PLASMID_PEERS:
        if ours in med:
            verdicts += _verdicts(scenario, ours, med)
    for line in verdicts:
        print('target: ' + line)
    report_timelines(results)
    return verdicts


def report_timelines(results: dict[str, list[Result]]) -> None:
    """With --timeline: each peer's rounds, medians over its runs."""
    rows = []
    for peer, runs in results.items():
        lines = [r.timeline for r in runs if r.timeline is not None]
        if not lines:
            continue
        rows.append([peer, str(len(lines)), str(lines[0].rounds)] + [
            '%.3f' % benchlib.median([getattr(t, field) for t in lines])
            for field in ('first_round', 'later_round', 'queueing', 'tail')])
    if rows:
        print()
        print(benchlib.table(
            ['peer', 'runs', 'rounds', 'first round s', 'later round s',
             'queueing s', 'tail s'], rows))


def _verdicts(scenario: Scenario, ours: str, med: dict) -> list[str]:
    """The issue's targets for one plasmid peer."""
    verdicts = []
    p = med[ours]
    label = '%s (%s)' % (scenario.label, ours)
    if scenario.vanilla_slack is not None:
        if 'vanilla' in med:
            v = med['vanilla']
            verdicts.append('%s: wall <= vanilla + %.1f s: %+.2f s -> %s' % (
                label, scenario.vanilla_slack, p['wall'] - v['wall'],
                benchlib.met(p['wall'] <= v['wall'] + scenario.vanilla_slack)))
        return verdicts
    if scenario.hosts == 1 and 'mitogen' in med:
        m = med['mitogen']
        verdicts.append('%s: wall <= 1/2 of Mitogen: %.2fx -> %s' % (
            label, p['wall'] / m['wall'],
            benchlib.met(p['wall'] <= TARGET_WALL_VS_MITOGEN * m['wall'])))
        if scenario.where == 'ssh':  # no bytes cross the relay otherwise
            verdicts.append('%s: bytes <= Mitogen: %.2fx -> %s' % (
                label, p['bytes'] / m['bytes'],
                benchlib.met(p['bytes'] <= m['bytes'])))
    if scenario.hosts > 1 and 'mitogen' in med:
        m = med['mitogen']
        verdicts.append('%s: throughput >= 3x Mitogen: %.2fx -> %s' % (
            label, m['wall'] / p['wall'],
            benchlib.met(m['wall'] / p['wall'] >= TARGET_HOSTS_THROUGHPUT)))
    if 'vanilla' in med:
        v = med['vanilla']
        verdicts.append('%s: controller CPU <= 1/2 of vanilla: %.2fx -> %s' % (
            label, p['cpu'] / v['cpu'],
            benchlib.met(p['cpu'] <= TARGET_CPU_VS_VANILLA * v['cpu'])))
    return verdicts


# ------------------------------------------------------------------- main

def versions(args, peers: list[str]) -> tuple[str, Optional[str]]:
    ssh = subprocess.run(['ssh', '-V'], capture_output=True,
                         text=True).stderr.strip().split(',')[0]
    remote = subprocess.run([REMOTE_PYTHON, '-V'], capture_output=True,
                            text=True).stdout.strip()
    parts = ['ansible-core %s (%s)' % (ansible_version(args.venv), args.venv)]
    strategy = None
    if 'mitogen' in peers:
        version, strategy = mitogen_info(args.mitogen_venv)
        parts.append('mitogen %s on ansible-core %s (%s)' % (
            version, ansible_version(args.mitogen_venv), args.mitogen_venv))
    parts += [ssh, 'targets run %s (%s)' % (REMOTE_PYTHON, remote)]
    return '; '.join(parts), strategy


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--quick', action='store_true',
                        help='fewer tasks: 20 become tasks, 20 loop items, '
                        '5 copies + 2 templates, 10 hosts x 5 tasks')
    parser.add_argument('--reps', type=int, default=2,
                        help='runs per scenario and peer (default 2)')
    parser.add_argument('--scenarios',
                        default='become100,loop100,files,hosts50,become20@rtt,'
                        'files@rtt,loop100@rtt',
                        help='comma-separated, from %s; NAME@rtt runs '
                        'through the latency proxy (default %%(default)s)'
                        % ', '.join(scenarios(False)))
    parser.add_argument('--peers', default=','.join(PEERS),
                        help='comma-separated subset of %(default)s')
    parser.add_argument('--venv', default='/opt/ansible/2.21',
                        help='ansible venv for vanilla and plasmid '
                        '(default %(default)s)')
    parser.add_argument('--mitogen-venv', default=None,
                        help='ansible venv with mitogen installed (default: '
                        '--venv)')
    parser.add_argument('--latency-ms', type=int, default=25,
                        help='latency added each way for @rtt (default 25)')
    parser.add_argument('--log-dir', default=None,
                        help='keep every run\'s directory (ansible log, '
                        'result) here; default: a temp dir, removed')
    parser.add_argument('--strategy', choices=('linear', 'free'),
                        default='linear', help='the strategy every peer runs '
                        'its own flavour of (default %(default)s)')
    parser.add_argument('--no-warmup', action='store_true',
                        help='skip the untimed warm-up run per peer')
    parser.add_argument('--env', action='append', default=[],
                        metavar='KEY=VALUE', help='extra environment for '
                        'ansible-playbook, e.g. ANSIBLE_CALLBACKS_ENABLED='
                        'junit for per-task times (repeatable)')
    parser.add_argument('--ssh-option', action='append', default=[],
                        metavar='KEY=VALUE', help='an ssh -o option added to '
                        'ansible_ssh_common_args for every peer, e.g. '
                        'KexAlgorithms=curve25519-sha256 (repeatable)')
    parser.add_argument('--timeline', action='store_true',
                        help='stamp every task and host event and show '
                        'where each peer\'s rounds go')
    parser.add_argument('--ansible-arg', action='append', default=[],
                        metavar='ARG', help='extra ansible-playbook argument, '
                        'e.g. -vvv (repeatable)')
    args = parser.parse_args()
    # SIGTERM too should remove the account and stop the servers.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit('terminated'))
    args.mitogen_venv = args.mitogen_venv or args.venv
    peers = [p.strip() for p in args.peers.split(',')]
    for peer in peers:
        if peer not in PEERS:
            sys.exit('unknown peer %r' % peer)
    chosen = pick_scenarios(args.scenarios, args.quick)
    reason = unavailable_reason()
    if reason:
        sys.exit('cannot run: ' + reason)
    rtt_ms = 2.0 * args.latency_ms

    print('# ansible playbooks -- %s (source digest %s)' % (
        benchlib.machine_line(), plasmid_digest()))
    version_line, strategy = versions(args, peers)
    print('# ' + version_line)
    print('# strategy: %s (each peer its flavour of it)' % args.strategy)
    if args.ssh_option:
        print('# ssh options added for every peer: %s'
              % ' '.join(args.ssh_option))
    print('# %s; %d run(s) per scenario and peer, peers rotating%s' % (
        'quick' if args.quick else 'full size', args.reps,
        '' if args.no_warmup else ', after 1 untimed warm-up each'))

    if any(p in PLASMID_PEERS for p in peers):
        compile_plasmid(args.venv)
    work = args.log_dir or tempfile.mkdtemp(prefix='plasmid-ansible-bench-')
    os.makedirs(work, exist_ok=True)
    os.chmod(work, 0o755)
    max_hosts = max(s.hosts for s in chosen)
    relays: dict[bool, Relay] = {}
    proxy = None
    verdicts = []
    create_account()
    try:
        with BenchSshServer() as server, contextlib.ExitStack() as stack:
            server.authorize(BENCH_USER)
            server.extra_options = args.ssh_option  # every peer's ssh
            user = pwd.getpwnam(BENCH_USER)
            dest = os.path.join(user.pw_dir, 'ansible-bench')
            os.makedirs(dest, exist_ok=True)
            os.chown(dest, user.pw_uid, user.pw_gid)
            relays[False] = Relay(server.port, max_hosts)
            inventories = {False: os.path.join(work, 'inventory.yml')}
            write_inventory(inventories[False], server, relays[False].ports)
            if any(s.rtt for s in chosen):
                proxy = LatencyProxy(server.port, args.latency_ms).__enter__()
                relays[True] = Relay(proxy.port, max_hosts)
                inventories[True] = os.path.join(work, 'inventory-rtt.yml')
                write_inventory(inventories[True], server, relays[True].ports)
            bench = Bench(args, server, relays, inventories, work, strategy)
            if any(s.where in ('podman', 'kubectl') for s in chosen):
                bench.container = stack.enter_context(containers.container())
            if any(s.where == 'lxc' for s in chosen):
                bench.lxc = stack.enter_context(containers.lxc_container(
                    containers.ANSIBLE_WRITABLE))
            if any(s.where == 'kubectl' for s in chosen):
                bench.kubeconfig = stack.enter_context(kubectl.standin(
                    {'default/web': [['app', bench.container, 'root']]}))
            if any(s.name == 'bigfiles' for s in chosen):
                write_big_files(bench.src_dir, BIG_FILES_MIB[args.quick])
            if not args.no_warmup:
                warm = scenarios(True)['become20']
                for peer in peers:
                    bench.run(peer, warm)
            results = {s.label: {p: [] for p in peers
                                 if p not in FLOOR_PEERS or s.commands_only}
                       for s in chosen}
            for rep in range(args.reps):
                for n, scenario in enumerate(chosen):
                    for peer in benchlib.rotated(peers, rep + n):
                        if peer in FLOOR_PEERS and \
                                not scenario.commands_only:
                            continue
                        got = bench.run(peer, scenario)
                        results[scenario.label][peer].append(got)
                        print('# rep %d %-14s %-8s wall %6.2f s  cpu %6.2f s'
                              '  %s' % (rep + 1, scenario.label, peer,
                                        got.wall, got.cpu,
                                        got.error or 'ok'),
                              file=sys.stderr, flush=True)
            for scenario in chosen:
                verdicts += report(scenario, results[scenario.label], rtt_ms)
            if len(bench.digests) > 1:
                print()
                print('# plasmid\'s source changed during the run: the plasmid '
                      'runs used %d versions (%s); end: %s' % (
                          len(bench.digests), ', '.join(bench.digests),
                          benchlib.revision()))
    finally:
        for relay in relays.values():
            relay.close()
        if proxy is not None:
            proxy.stop()
        remove_account()
        if not args.log_dir:
            shutil.rmtree(work, ignore_errors=True)
    print()
    print('## targets')
    for line in verdicts:
        print(line)
    print()
    print('# load avg at the end: %s' % ' '.join('%.2f' % x
                                                  for x in os.getloadavg()))


if __name__ == '__main__':
    main()
