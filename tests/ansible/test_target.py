"""The accelerator's payload side, in contexts of the oldest and newest
target Pythons: zips arrive as files, those a context holds are not sent
again; modules run in forks, a spare one ready while nothing changed."""
from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
import zlib

import pytest

import plasmid
from plasmid.ansible import target
from plasmid.core import importer
from testbed.pythons import require_python

import target_fns


def packed(files: dict) -> dict:
    return {path: zlib.compress(text) for path, text in files.items()}


@pytest.mark.parametrize('version', ['2.7', '3.13'])
def test_a_second_zip_reuses_the_files_the_context_holds(version):
    shared = b'SHARED = 40\n'
    with plasmid.Router() as router:
        ctx = router.local(python_path=require_python(version))
        assert ctx.call(target.add_zip_files, 'one', {}, packed({
            'pkg/__init__.py': b'', 'pkg/utils.py': shared,
            'pkg/first.py': b'from pkg.utils import SHARED\nX = SHARED + 1\n',
        }), 'pkg.first') == 3
        held = ctx.call(target_fns.held_files)
        digest = hashlib.sha1(shared).hexdigest()
        init = hashlib.sha1(b'').hexdigest()
        # The second zip names the shared files by digest; only its own
        # module travels.
        assert ctx.call(target.add_zip_files, 'two', {
            'pkg/__init__.py': init, 'pkg/utils.py': digest}, packed({
                'pkg/second.py': b'from pkg.utils import SHARED\n'
                                 b'X = SHARED + 2\n'}), 'pkg.second') == 3
        assert ctx.call(target_fns.held_files) == held + 1
        assert ctx.call(target_fns.import_from_zip, 'one', 'pkg.first',
                        'X') == 41
        assert ctx.call(target_fns.import_from_zip, 'two', 'pkg.second',
                        'X') == 42
        with pytest.raises(plasmid.CallError):
            ctx.call(target.add_zip_files, 'three',
                     {'pkg/gone.py': 'f' * 40}, {}, 'pkg.gone')


# A payload as AnsiballZ would carry it: a module, the shared code it
# imports (which tries an import the target lacks) and the stand-in for
# ansible.module_utils.basic that the legacy runner sets arguments on.
PROBE_FILES = {
    'ansible/__init__.py': b'',
    'ansible/module_utils/__init__.py': b'',
    'ansible/module_utils/basic.py': b'_ANSIBLE_ARGS = None\n',
    'ansible/module_utils/helper.py': (
        b'try:\n'
        b'    import plasmid_test_absent_module\n'
        b'except ImportError:\n'
        b'    ABSENT = True\n'
        b'RUNS = []\n'),
    'ansible/modules/__init__.py': b'',
    'ansible/modules/probe.py': (
        b'import json, os, sys\n'
        b'WARM = "ansible.module_utils.helper" in sys.modules\n'
        b'from ansible.module_utils import basic, helper\n'
        b'helper.RUNS.append(1)\n'
        b'sys.stdout.write(json.dumps({"pid": os.getpid(),\n'
        b'                             "runs": len(helper.RUNS),\n'
        b'                             "warm": WARM,\n'
        b'                             "args": basic._ANSIBLE_ARGS.decode()}))\n'
        b'sys.exit(3)\n'),
}
PROBE_JOB = {'style': 'legacy', 'module_fqn': 'ansible.modules.probe',
             'params': b'{"x": 1}'}


def add_probe(ctx: plasmid.Context) -> None:
    ctx.call(target.add_zip_files, 'probe', {}, packed(PROBE_FILES),
             PROBE_JOB['module_fqn'])


def run_probe(ctx: plasmid.Context, digest: str = 'probe') -> dict:
    rc, out, err = ctx.call(target.run_module, digest, PROBE_JOB)
    assert (rc, err) == (3, b'')
    return json.loads(out)


# ansible-core 2.18+ run modules on Python 3.8 and later only.
@pytest.mark.parametrize('version', ['3.8', '3.13'])
def test_modules_run_in_spare_forks_while_the_context_stays_the_same(
        version):
    with plasmid.Router() as router:
        ctx = router.local(python_path=require_python(version))
        add_probe(ctx)
        runs = [run_probe(ctx) for _ in range(3)]
        # Every run in a process of its own, starting from the context's
        # state, though the context has imported the helper since.
        assert len({r['pid'] for r in runs}) == 3
        assert [r['runs'] for r in runs] == [1, 1, 1]
        assert runs[0]['args'] == '{"x": 1}'
        # The first forks on demand and warms the context up; the spare
        # forked after it answered runs the second, the next the third.
        assert ctx.call(target.fork_counts) == {
            'fresh': 1, 'spare': 2, 'discarded': 0,
            'stayed': 0, 'given_up': 0}
        # A new payload: the waiting spare cannot know it.
        ctx.call(target.add_zip_files, 'probe2', {}, packed(dict(
            PROBE_FILES, **{'ansible/modules/__init__.py': b'# 2\n'})),
            'ansible.modules.probe')
        assert run_probe(ctx, 'probe2')['runs'] == 1
        assert ctx.call(target.fork_counts) == {
            'fresh': 2, 'spare': 2, 'discarded': 1,
            'stayed': 0, 'given_up': 0}


@pytest.mark.parametrize('version', ['3.8', '3.13'])
def test_warming_up_asks_the_master_for_no_module(version):
    """The context imports what the module used, as the module did: an
    import the target cannot satisfy fails there, costing no round trip
    (three such cost 150 ms per context at 50 ms RTT)."""
    with plasmid.Router() as router:
        ctx = router.local(python_path=require_python(version))
        add_probe(ctx)
        run_probe(ctx)
        assert ctx.call(target_fns.warm_modules) >= {
            'ansible.module_utils.helper'}
        requested = ctx.call(importer.stats)['requested']
        assert not [names for names in requested
                    if 'plasmid_test_absent_module' in names]


@pytest.mark.parametrize('version', ['2.7', '3.8', '3.13'])
def test_a_payloads_shared_code_is_imported_before_its_first_run(version):
    """So the first module process starts warm too.  The module itself
    (and any module proper) is never imported in the context: it would
    run there."""
    with plasmid.Router() as router:
        ctx = router.local(python_path=require_python(version))
        add_probe(ctx)
        warm = ctx.call(target_fns.warm_modules)
        assert {'ansible.module_utils.basic',
                'ansible.module_utils.helper'} <= warm
        assert 'ansible.modules.probe' not in warm
        if version != '2.7':  # 2.18+ run modules on 3.8 and later
            first = run_probe(ctx)
            assert first['warm'] is True and first['runs'] == 1



# Shared code that installs a finder of its own when imported, as six does
# for six.moves: the finder serves a module that exists in no file.
FINDER_FILES = {
    'ansible/__init__.py': b'',
    'ansible/module_utils/__init__.py': b'',
    'ansible/module_utils/basic.py': b'_ANSIBLE_ARGS = None\n',
    'ansible/module_utils/lazy.py': (
        b'import sys, types\n'
        b'__path__ = []\n'
        b'class LazyFinder(object):\n'
        b'    def find_spec(self, fullname, path=None, target=None):\n'
        b'        if fullname != __name__ + ".moves":\n'
        b'            return None\n'
        b'        import importlib.util\n'
        b'        return importlib.util.spec_from_loader(fullname, self)\n'
        b'    def create_module(self, spec):\n'
        b'        return types.ModuleType(spec.name)\n'
        b'    def exec_module(self, module):\n'
        b'        module.VALUE = "served"\n'
        b'sys.meta_path.append(LazyFinder())\n'),
    'ansible/modules/__init__.py': b'',
    'ansible/modules/lazy_user.py': (
        b'import sys\n'
        b'from ansible.module_utils.lazy.moves import VALUE\n'
        b'sys.stdout.write(VALUE)\n'
        b'sys.exit(0)\n'),
}


@pytest.mark.parametrize('version', ['3.8', '3.13'])
def test_a_finder_that_shared_code_installs_serves_the_module(version):
    """The context imports the payload's shared code ahead of the first
    run with the payload's finders in place, then puts its own back: a
    finder that code installed must stay for the module processes."""
    job = {'style': 'legacy', 'module_fqn': 'ansible.modules.lazy_user',
           'params': b'{}'}
    with plasmid.Router() as router:
        ctx = router.local(python_path=require_python(version))
        ctx.call(target.add_zip_files, 'lazy', {}, packed(FINDER_FILES),
                 job['module_fqn'])
        assert 'ansible.module_utils.lazy' in \
            ctx.call(target_fns.warm_modules)
        for _ in range(2):  # a fresh fork, then a spare
            assert ctx.call(target.run_module, 'lazy', job) == \
                (0, b'served', b'')

# A module reading its payload's files as package data, every way
# Python offers (files() since 3.9, the older reader API, pkgutil).
RESOURCE_FILES = {
    'ansible/__init__.py': b'',
    'ansible/module_utils/__init__.py': b'',
    'ansible/module_utils/basic.py': b'_ANSIBLE_ARGS = None\n',
    'ansible/module_utils/data/__init__.py': b'',
    'ansible/module_utils/data/table.py': b'ROWS = 2\n',
    'ansible/module_utils/data/deeper/__init__.py': b'',
    'ansible/modules/__init__.py': b'',
    'ansible/modules/reader.py': (
        b'import json, pkgutil, sys, warnings\n'
        b'import importlib.resources as r\n'
        b'warnings.simplefilter("ignore")  # read_text: deprecated in 3.11\n'
        b'pkg = "ansible.module_utils.data"\n'
        b'root = r.files(pkg)\n'
        b'try:\n'
        b'    (root / "absent.txt").read_bytes()\n'
        b'    absent = "read"\n'
        b'except (IOError, OSError) as exc:\n'
        b'    absent = type(exc).__name__\n'
        b'sys.stdout.write(json.dumps({\n'
        b'    "files": (root / "table.py").read_text(),\n'
        b'    "listing": sorted(p.name for p in root.iterdir()),\n'
        b'    "is_dir": (root / "deeper").is_dir(),\n'
        b'    "absent": absent,\n'
        b'    "read_text": r.read_text(pkg, "table.py"),\n'
        b'    "get_data": pkgutil.get_data(pkg, "table.py").decode()}))\n'
        b'sys.exit(0)\n'),
}


@pytest.mark.parametrize('version', ['3.9', '3.13'])
def test_a_module_reads_its_payload_as_package_data(version):
    """As from AnsiballZ's zip under vanilla; 3.9's files() knows only
    files on disk or in a zip file, and is shown the payload."""
    job = {'style': 'legacy', 'module_fqn': 'ansible.modules.reader',
           'params': b'{}'}
    with plasmid.Router() as router:
        ctx = router.local(python_path=require_python(version))
        ctx.call(target.add_zip_files, 'reader', {}, packed(RESOURCE_FILES),
                 job['module_fqn'])
        rc, out, err = ctx.call(target.run_module, 'reader', job)
        assert (rc, err) == (0, b''), err
        assert json.loads(out) == {
            'files': 'ROWS = 2\n', 'read_text': 'ROWS = 2\n',
            'get_data': 'ROWS = 2\n',
            'listing': ['__init__.py', 'deeper', 'table.py'],
            'is_dir': True, 'absent': 'FileNotFoundError'}


@pytest.mark.parametrize('version, hangup', [
    ('2.7', signal.SIG_DFL), ('3.13', signal.SIG_DFL),
    ('3.13', signal.SIG_IGN)], ids=['2.7', '3.13', 'under-nohup'])
def test_a_sudo_job_leaves_its_background_running(version, hangup,
                                                  tmp_path):
    """On a terminal, a command's shell leads the session, as under
    ``ssh -tt``: what it left in the background gets SIGHUP when it ends.
    Run as a job (what sudo's use_pty does), it does not: a reboot
    command that backgrounds its work must outlive the command.  A
    context that inherited SIGHUP ignored (started under ``nohup``) still
    starts its commands with it at its default, as sshd does."""
    script = '(sleep 1; echo %s > %s) >/dev/null 2>&1 &'
    leader, job = tmp_path / 'leader', tmp_path / 'job'
    with plasmid.Router() as router:
        was = signal.signal(signal.SIGHUP, hangup)
        try:  # a disposition the context inherits through exec
            ctx = router.local(python_path=require_python(version))
        finally:
            signal.signal(signal.SIGHUP, was)

        def on_tty(command, *as_job):
            # Python 2's output travels as native strings: text here.
            rc, out, err = ctx.call(target.run_shell, command, None, None,
                                    None, None, '', 30, *as_job)
            return (rc,) + tuple(x.decode() if isinstance(x, bytes) else x
                                 for x in (out, err))
        assert on_tty(script % ('gone', leader)) == (0, '', '')
        assert on_tty(script % ('kept', job), True) == (0, '', '')
        rc, out, err = on_tty('tty; exit 3', True)
        assert (rc, out.startswith('/dev/pts/'), err) == (3, True, '')
    deadline = time.time() + 10
    while not job.exists() and time.time() < deadline:
        time.sleep(0.1)
    time.sleep(0.5)  # the other writer had as long
    assert job.read_text() == 'kept\n'
    assert not leader.exists()


@pytest.mark.parametrize('version', ['2.7', '3.13'])
def test_a_terminal_gets_the_type_it_is_given(version):
    with plasmid.Router() as router:
        ctx = router.local(python_path=require_python(version))
        rc, out, _ = ctx.call(target.run_shell, 'echo "[$TERM]"', None, None,
                              None, None, u'vt220')
        if isinstance(out, bytes):  # Python 2's: a native string
            out = out.decode()
        assert (rc, out) == (0, '[vt220]\r\n')


@pytest.mark.parametrize('version', ['2.7', '3.13'])
def test_a_command_that_lets_go_of_its_terminal_before_it_ends(version):
    """Its exit status, not a hang-up: the terminal's reader sees the end
    (EIO) once nothing holds the terminal, and closed its side before
    waiting, which hung up a command still running (raw under bash, which
    runs a single command in its own place, failed "Failed to connect to
    the host via ssh" when its command had not yet exited)."""
    with plasmid.Router() as router:
        ctx = router.local(python_path=require_python(version))
        rc, out, _ = ctx.call(target.run_shell,
                              'exec <&- >&- 2>&-; sleep 0.3; exit 3',
                              None, None, None, None, u'vt220')
        assert (rc, out) in ((3, b''), (3, u''))


@pytest.mark.parametrize('version', ['3.8', '3.13'])
def test_code_this_python_cannot_compile_sends_the_module_to_its_script(
        version):
    """Shared code in a syntax the target's Python lacks (one too old for
    the ansible-core in use): the zip arrives (it was sent ahead of some
    other task, which must not fail), and the module is not run here,
    where our frames would wrap the error: the answer says to run the
    AnsiballZ script as given, which fails in the interpreter's own words,
    as vanilla's does (test_failures.py compares them)."""
    files = dict(PROBE_FILES, **{'ansible/module_utils/helper.py': (
        b'match 1:\n    case _:\n        pass\n' if version == '3.8' else
        b'print "only Python 2 reads this"\n')})
    with plasmid.Router() as router:
        ctx = router.local(python_path=require_python(version))
        assert ctx.call(target.add_zip_files, 'old', {}, packed(files),
                        PROBE_JOB['module_fqn']) == len(files)
        for _ in range(2):
            assert ctx.call(target.run_module, 'old', PROBE_JOB) == \
                (target.FROM_SCRIPT,)
        assert ctx.call(target.fork_counts)['fresh'] == 0


@pytest.mark.parametrize('version', ['2.7', '3.13'])
def test_output_beyond_hold_above_is_held_and_read_in_pieces(version):
    with plasmid.Router() as router:
        ctx = router.local(python_path=require_python(version))
        held = ctx.call(target.run_shell, 'seq 1 3000; echo oops >&2',
                        None, None, None, None, None, 30, False, 1000)
        out = ''.join('%d\n' % i for i in range(1, 3001)).encode()
        assert held[0] == target.HELD and held[2:] == (0, len(out), 5), held
        token = held[1]
        pieces = [ctx.call(target.read_held, token, 0, offset, 4096)
                  for offset in range(0, len(out), 4096)]
        assert b''.join(_as_bytes(p) for p in pieces) == out
        assert _as_bytes(ctx.call(target.read_held, token, 1, 0, 100)) == \
            b'oops\n'
        assert ctx.call(target.held_count) == 1
        ctx.call(target.drop_held, token)
        assert ctx.call(target.held_count) == 0
        # At or under the bound, and without one, the result is as ever.
        rc, hi, err = ctx.call(target.run_shell, 'echo hi', None, None,
                               None, None, None, 30, False, 3)
        assert (rc, _as_bytes(hi), _as_bytes(err)) == (0, b'hi\n', b'')
        assert _as_bytes(ctx.call(target.run_shell, 'seq 1 3000')[1]) == out


def _as_bytes(value) -> bytes:
    """A Python 2 context's str arrives as text."""
    return value if isinstance(value, bytes) else \
        value.encode('utf-8', 'surrogateescape')


# Python 2 and 3.6 in the C locale encode text as ASCII; 3.7+ as UTF-8.
NOT_ASCII_VERSIONS = ['2.7', '3.6', '3.13']


@pytest.mark.parametrize('version', NOT_ASCII_VERSIONS)
def test_a_command_that_is_not_ascii_runs_as_over_ssh(version):
    """In the C locale, as over ssh without LANG, Python 2 and 3.6 would
    encode the command as ASCII; sshd hands the shell its UTF-8."""
    with plasmid.Router() as router:
        ctx = router.local(python_path=['env', 'LC_ALL=C', 'LANG=C',
                                        require_python(version)])
        rc, out, _ = ctx.call(target.run_shell, u'echo caf\xe9')
        assert (rc, _as_bytes(out)) == (0, b'caf\xc3\xa9\n')


@pytest.mark.parametrize('version', NOT_ASCII_VERSIONS)
def test_a_path_that_is_not_ascii_is_written_and_read(version, tmp_path):
    """As sftp would, in the C locale too."""
    path = str(tmp_path / u'caf\xe9.txt')
    with plasmid.Router() as router:
        ctx = router.local(python_path=['env', 'LC_ALL=C', 'LANG=C',
                                        require_python(version)])
        assert ctx.call(target.write_file, path, b'data') == 4
        assert _as_bytes(ctx.call(target.read_file, path, 0, 100)) == b'data'
    with open(path, 'rb') as written:
        assert written.read() == b'data'



def test_sudo_command_is_named_as_sudo_names_it(monkeypatch, tmp_path):
    """The module process names vanilla's sudo command in SUDO_COMMAND as
    sudo would: a program without a slash as found in PATH, the arguments
    cut at 4096 bytes (a character that straddles the cut is cut too);
    where sudo set none, or the program is not found, nothing changes."""
    export = target._export_sudo_command
    monkeypatch.delenv('SUDO_COMMAND', raising=False)
    export(['/bin/sh', '-c', 'echo BECOME-SUCCESS-x ; /usr/bin/python3'])
    assert 'SUDO_COMMAND' not in os.environ  # not under sudo
    monkeypatch.setenv('SUDO_COMMAND', '/usr/bin/python3 -c ours')
    export(['/bin/sh', '-c', 'echo BECOME-SUCCESS-x ; /usr/bin/python3'])
    assert os.environ['SUDO_COMMAND'] == \
        '/bin/sh -c echo BECOME-SUCCESS-x ; /usr/bin/python3'
    shell = tmp_path / 'bin' / 'ash'
    shell.parent.mkdir()
    shell.write_text('#!/bin/sh\n')
    shell.chmod(0o755)
    monkeypatch.setenv('PATH', 'relative:%s:/bin' % shell.parent)
    export(['ash', '-c', 'true'])
    assert os.environ['SUDO_COMMAND'] == '%s -c true' % shell
    export(['plasmid-no-such-shell', '-c', 'false'])
    assert os.environ['SUDO_COMMAND'] == '%s -c true' % shell
    # 8 + 4087 bytes, then é (2 bytes): the cut at 4096 falls inside it
    long = 'echo ' + 'a' * 4087 + '\xe9\xe9'
    export(['/bin/sh', '-c', long])
    assert os.fsencode(os.environ['SUDO_COMMAND']) == \
        b'/bin/sh ' + os.fsencode('-c ' + long)[:4096]


# Runs in its own mount and UTS namespaces (unshare): reads the local time
# zone and the host's name, has them changed under it as a timezone or
# hostname task would, then asks again as a module process starts.
HOST_VIEW = '''
import os, platform, shutil, socket, subprocess, sys, time
sys.path[:0] = %r
from plasmid.ansible import target
zone = '/tmp/plasmid-localtime-%%d' %% os.getpid()
shutil.copy('/usr/share/zoneinfo/UTC', zone)
subprocess.check_call(['mount', '--bind', zone, '/etc/localtime'])
time.tzset()
before = time.strftime('%%Z'), platform.node()
shutil.copy('/usr/share/zoneinfo/Asia/Tokyo', zone)  # the file, in place
socket.sethostname('plasmid-renamed')
time.tzset()
plain = time.strftime('%%Z')  # tzset alone: the file is not read again
target._fresh_host_view(False)
print(before, plain, (time.strftime('%%Z'), platform.node()))
os.unlink(zone)
'''


def test_a_module_process_reads_the_time_zone_and_host_name_afresh():
    """A task that changed /etc/localtime or the host's name: the next
    module kept the context's local time (glibc reads the file again only
    when TZ changes) and platform's cached uname()."""
    if os.geteuid() != 0:
        pytest.skip('namespaces need root')
    done = subprocess.run(
        ['unshare', '--mount', '--uts', '--propagation', 'private',
         sys.executable, '-c', HOST_VIEW % (sys.path,)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split('\n')[0] == \
        "('UTC', '%s') UTC ('JST', 'plasmid-renamed')" % os.uname().nodename


def _python_link(where, python):
    os.makedirs(where, exist_ok=True)
    os.symlink(python, os.path.join(where, 'python3'))
    return where


def test_a_bare_interpreter_runs_warm_only_where_the_path_finds_this_one(
        monkeypatch, tmp_path):
    """What the task's PATH finds first must be this very Python: the same
    file (through any link), the same venv or none.  Anything a shell may
    read otherwise (bash expands ~, a relative entry depends on the
    directory) goes to the script, as does a PATH that finds none."""
    python = os.path.realpath(sys.executable)
    here = _python_link(str(tmp_path / 'here'), python)
    monkeypatch.setattr(sys, 'executable', os.path.join(here, 'python3'))
    other = _python_link(str(tmp_path / 'other'), python)  # same file
    venv = _python_link(str(tmp_path / 'venv' / 'bin'), python)
    (tmp_path / 'venv' / 'pyvenv.cfg').write_text('home = /x\n')
    os.symlink(venv, str(tmp_path / 'venv-link'))
    empty = str(tmp_path / 'empty')
    os.mkdir(empty)

    def found_first(path):
        return target._is_found_first({'bare_interpreter': 'python3',
                                       'env': {'PATH': path}})
    assert found_first(here)
    assert found_first(empty + ':' + other + ':' + venv)
    assert not found_first(venv + ':' + here)
    # Started by a link to the venv's directory, Python is no venv's.
    venv_link = str(tmp_path / 'venv-link')
    assert found_first(venv_link + ':' + venv)
    assert not found_first('~/bin:' + here)
    assert not found_first('bin:' + here)
    assert not found_first(':' + here)
    assert not found_first(empty)
    assert target._is_found_first({'env': {'PATH': empty}})
    monkeypatch.setattr(sys, 'executable', os.path.join(venv, 'python3'))
    assert found_first(venv) and not found_first(here)
    assert not found_first(venv_link)
