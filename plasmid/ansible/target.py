"""What the Ansible accelerator runs inside a target context.

Shipped on demand like any other module, so it stays stdlib-only and
Python 2.7-compatible.  Three jobs:

* run a new-style Python module from RAM: its AnsiballZ zip arrives once
  per context (:func:`add_zip_files`), and of its files only those the
  context has not received with an earlier zip (modules share most of
  ``module_utils``); sources are compiled once, and every
  task runs in a fork of this warm interpreter (``forks.py``), so nothing a
  module leaves behind (globals, signal handlers, warnings filters,
  C-extension state) reaches the next task and nothing is written to disk;
  the modules of :data:`STAYING_MODULES` run in a process that stays for
  the next of them while it finds itself as it was (``baseline.py``);
* run a shell command with input, as ``/bin/sh -c`` would over ssh;
* write and read files in chunks, for ``put_file`` and ``fetch_file``.

A result larger than the broker's *hold_above* is held here and read in
pieces (:func:`read_held`): one message of the runtime is bounded, a
module's output is not.
"""
from __future__ import absolute_import
import errno
import hashlib
import itertools
import os
import signal
import subprocess
import sys
import time
import zlib

from plasmid.ansible import forks, shell_spawn, vfork, warm
from plasmid.core import resources
from plasmid.core.loop import now
from plasmid.core.waiting import wait_for
from plasmid.core import ostext
from plasmid.files import remote as files_remote

_ZIPS = {}  # digest -> ZipModules
_HELD = {}  # token -> (stdout, stderr) of a result too large for one message
HELD = 'held'  # first item of a held result's answer (an rc is an int)
# run_module's answer for a zip this Python cannot compile all of: one too
# old for the ansible-core in use (whose sanity tests compile every file
# for each target Python it supports).  The script runs as given then.
FROM_SCRIPT = 'from-script'
_HELD_TOKENS = itertools.count(1)
_FILES = {}  # sha1 of a payload file's content -> the content
_CODE = {}  # (module name, source digest) -> code object, shared by zips
ROOT = '/plasmid-ansiballz'  # where payload files seem to be; never on disk


class ZipModules(object):
    """The Python sources of one AnsiballZ zip, compiled once.  *files*
    maps paths to contents, *file_digests* paths to the sha1 of those
    contents (worked out once, as the files arrive)."""

    def __init__(self, files, file_digests):
        self.root = ROOT
        self.code = {}      # module name -> code object (None: broken)
        self.broken = {}    # module name -> why this Python cannot compile it
        self.digests = {}   # module name -> source digest
        self.packages = set()
        self.files = files  # path inside the zip -> bytes (package data)
        for path, source in self.files.items():
            if path.endswith('.py') and path != 'sitecustomize.py':
                self._compile(path, source, file_digests[path])

    def _compile(self, path, source, digest):
        name = path[:-3].replace('/', '.')
        if name.endswith('.__init__'):
            name = name[:-len('.__init__')]
            self.packages.add(name)
        code = _CODE.get((name, digest))
        if code is None:
            try:
                code = _CODE[name, digest] = compile(
                    source, self.filename(name), 'exec', dont_inherit=True)
            except (SyntaxError, ValueError) as exc:  # too old a Python
                self.broken[name] = exc
        self.code[name] = code
        self.digests[name] = digest

    def code_of(self, name):
        """*name*'s code.  A source this Python cannot compile raises its
        error here, where the module process imports it, as it would
        under the AnsiballZ wrapper: the task fails as vanilla's does, and
        the zip's arrival (sent ahead of another task) does not."""
        if name in self.broken:
            raise self.broken[name]
        return self.code[name]

    def filename(self, name):
        suffix = name in self.packages and '/__init__.py' or '.py'
        return '%s/%s%s' % (self.root, name.replace('.', '/'), suffix)


class ZipFinder(object):
    """Meta-path finder and loader over one :class:`ZipModules`; first on
    ``sys.meta_path`` in the forked module process, as the zip is first on
    ``sys.path`` under the AnsiballZ wrapper."""

    def __init__(self, modules):
        self.modules = modules

    # Python 3
    def find_spec(self, fullname, path=None, target=None):
        if fullname not in self.modules.code:
            return None
        import importlib.util
        is_pkg = fullname in self.modules.packages
        spec = importlib.util.spec_from_loader(fullname, self,
                                               is_package=is_pkg)
        spec.origin = self.modules.filename(fullname)
        spec.has_location = True
        if is_pkg:
            spec.submodule_search_locations = [
                self.modules.filename(fullname).rsplit('/', 1)[0]]
        return spec

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        exec(self.modules.code_of(module.__name__), module.__dict__)

    # Python 2
    def find_module(self, fullname, path=None):
        return fullname in self.modules.code and self or None

    def load_module(self, fullname):
        import imp
        module = sys.modules.setdefault(fullname, imp.new_module(fullname))
        module.__file__ = self.modules.filename(fullname)
        module.__loader__ = self
        if fullname in self.modules.packages:
            module.__path__ = [module.__file__.rsplit('/', 1)[0]]
            module.__package__ = fullname
        else:
            module.__package__ = fullname.rpartition('.')[0]
        exec(self.modules.code_of(fullname), module.__dict__)
        return sys.modules[fullname]

    # both: what runpy, inspect and pkgutil ask for
    def get_code(self, fullname):
        return self.modules.code_of(fullname)

    def is_package(self, fullname):
        return fullname in self.modules.packages

    def get_source(self, fullname):
        name = fullname.replace('.', '/')
        for path in (name + '.py', name + '/__init__.py'):
            if path in self.modules.files:
                return self.modules.files[path].decode('utf-8')
        return None

    def get_filename(self, fullname):
        return self.modules.filename(fullname)

    def get_data(self, path):
        prefix = self.modules.root + '/'
        if path.startswith(prefix) and path[len(prefix):] in \
                self.modules.files:
            return self.modules.files[path[len(prefix):]]
        raise IOError(errno.ENOENT, 'not in the module payload', path)

    # importlib.resources: a package's files as the zip holds them
    def get_resource_reader(self, fullname):
        if fullname not in self.modules.packages:
            return None
        return resources.Reader(self, fullname)

    def fetch_data(self, package, relpath):
        """What the reader asks (the importer's contract): ('file',
        bytes), ('dir', [names]) or ('missing', None)."""
        path = '/'.join(p for p in (package.replace('.', '/'), relpath) if p)
        if path in self.modules.files:
            return 'file', self.modules.files[path]
        below = path + '/'
        names = set(name[len(below):].split('/', 1)[0]
                    for name in self.modules.files if name.startswith(below))
        if names:
            return 'dir', sorted(names)
        return 'missing', None


# ------------------------------------------------------- module payloads

def add_zip_files(digest, known, new, module_fqn):
    """The files of zip *digest*, which runs module *module_fqn*: *known*
    maps paths to the digests of contents an earlier zip brought; *new*
    maps paths to zlib-compressed contents.  Its shared code is imported
    here at once, so that even the first module process starts warm.
    Returns how many modules it holds."""
    files = {}
    file_digests = dict(known)
    for path, content_digest in known.items():
        files[path] = _FILES[content_digest]
    for path, packed in new.items():
        content = zlib.decompress(packed)
        file_digests[path] = hashlib.sha1(content).hexdigest()
        _FILES[file_digests[path]] = content
        files[path] = content
    if digest not in _ZIPS:
        modules = _ZIPS[digest] = ZipModules(files, file_digests)
        _FORKER.invalidate()  # a spare forked before could not run it
        warm.import_modules(modules, sorted(modules.code),
                            _payload_finders(modules), module_fqn)
        warm.fill_process_caches()
    return len(_ZIPS[digest].code)


def run_module(digest, job, hold_above=None):
    """Run one module as the AnsiballZ wrapper would, in a fork of this
    context; return ``(rc, stdout, stderr)`` as bytes, like the pipelined
    interpreter.

    Once the answer is sent, import here what the module process imported
    beyond what this context holds (from the target's own library, mostly),
    so that the next fork finds it loaded.  Output beyond *hold_above*
    bytes is held: see :func:`_held_if_large`.  A zip with a source this
    Python cannot compile is not run: the answer is ``(FROM_SCRIPT,)``.
    """
    modules = _ZIPS.get(digest)
    if modules is None:
        raise KeyError('module payload %s was never sent here' % digest)
    if modules.broken or not _is_found_first(job):
        # Run here, the module would fail with our frames around the
        # error; the AnsiballZ wrapper fails with this Python's own words.
        # Or the task's PATH finds another Python than this one.
        return (FROM_SCRIPT,)
    site_files = _site_files_changed()
    if site_files is None:  # a .pth file this interpreter read is gone
        return (FROM_SCRIPT,)
    changed = warm.forget_changed_library()
    user_site = _add_user_site()
    if site_files or user_site:  # a library there now: as if installed
        warm.forget_warm()
        changed = True
    if changed:
        _FORKER.invalidate()  # a spare forked before holds the old state
    rc, out, err, imported = _FORKER.run(
        (digest, job, warm.stale_names(digest, modules)),
        then=lambda names: _learn(modules, names, job['module_fqn']))
    if rc < 0:  # killed by signal -rc: what the shell around vanilla's says
        err += _shell_words_for_signal(-rc)
        rc = 128 - rc
    return _held_if_large(rc, out, err, hold_above)


def _is_found_first(job):
    """Whether the interpreter named bare in *job* (``python3``), looked
    up on the task's PATH as vanilla's shell does, is surely this Python;
    False where it is another, none (vanilla's shell: rc 127), or where
    the answer depends on the shell (bash expands ``~`` in PATH, and a
    relative entry depends on the directory)."""
    name = job.get('bare_interpreter')
    if name is None:
        return True
    for folder in job['env']['PATH'].split(':'):
        if not os.path.isabs(folder):
            return False
        candidate = os.path.join(folder, name)
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return _same_python(candidate, sys.executable)
    return False


def _same_python(one, other):
    """Whether the executables *one* and *other* run the same Python: the
    same file, and the same venv or none.  (A venv's ``python3`` links to
    the system's: Python sees the venv by a ``pyvenv.cfg`` beside the path
    it was started by, or one directory up.)"""
    def venv_of(path):
        folder = os.path.dirname(path)
        for place in (folder, os.path.dirname(folder)):
            config = os.path.join(place, 'pyvenv.cfg')
            if os.path.isfile(config):
                return os.path.realpath(config)
        return None
    return (os.path.realpath(one) == os.path.realpath(other)
            and venv_of(one) == venv_of(other))


# What /bin/sh (dash) says of a command a signal killed, where this Python
# cannot ask the C library (os.strsignal, 3.8+); nothing for SIGINT and
# SIGPIPE, as dash.
_SIGNAL_WORDS = {signal.SIGKILL: 'Killed',
                 signal.SIGSEGV: 'Segmentation fault',
                 signal.SIGABRT: 'Aborted', signal.SIGTERM: 'Terminated',
                 signal.SIGBUS: 'Bus error',
                 signal.SIGILL: 'Illegal instruction',
                 signal.SIGFPE: 'Floating point exception'}


def _shell_words_for_signal(number):
    """The line the shell around vanilla's interpreter writes on the
    module's stderr when a signal kills it ("Killed", "Segmentation
    fault"), as bytes."""
    if number in (signal.SIGINT, signal.SIGPIPE):
        return b''
    words = getattr(os, 'strsignal', _SIGNAL_WORDS.get)(number)
    return words and (words + '\n').encode('ascii', 'replace') or b''


def _learn(modules, imported, module_fqn):
    if warm.import_modules(modules, imported, _payload_finders(modules),
                           module_fqn):
        warm.fill_process_caches()
        _FORKER.warmed()  # the next child should start warmer


def _run_in_child(payload):
    """What a module process runs: :func:`_module_main` of *payload*."""
    digest, job, stale = payload
    _module_main(_ZIPS[digest], job, stale)


# ansible-core's modules that may run in a module process an earlier task
# of theirs ran in: measured by bench/ansible/module_state.py (what a run
# leaves: only what every run sets again, and what baseline.py puts back)
# and checked for each release by tests/ansible/test_staying.py.  Forking
# costs them 6-35x their own CPU.  Not setup (it caches what it learns of
# the system), nor any module of a user or collection (unmeasured).
STAYING_MODULES = frozenset('ansible.modules.' + name for name in (
    'blockinfile', 'command', 'copy', 'file', 'find', 'lineinfile', 'ping',
    'replace', 'slurp', 'stat', 'tempfile'))


def _may_stay(payload):
    """The module's name if its process may stay for the next task of
    that module (the kind the Forker counts its leavings by), else None."""
    digest, job, stale = payload
    fqn = job['module_fqn']
    if fqn in STAYING_MODULES and not stale and \
            job.get('stay', True):  # the broker's PLASMID_ANSIBLE_STAYING
        return fqn
    return None


_FORKER = forks.Forker(_run_in_child, _may_stay)


def fork_counts():
    """How module processes started: ``fresh`` forks on a task's path,
    ``spare`` ones forked ahead, spares ``discarded`` as stale; how many
    tasks a process that ``stayed`` after an earlier one ran, and for how
    many staying modules the context has ``given_up`` (their processes
    kept leaving)."""
    return dict(_FORKER.counts)


def _payload_finders(modules):
    """The payload first, then the target's own finders, without the
    runtime's importer: a module finds what it would under AnsiballZ."""
    return [ZipFinder(modules)] + [
        f for f in sys.meta_path
        if not type(f).__module__.startswith('plasmid.')]


def _forget(names):
    """In the module process: drop *names* and their submodules."""
    for name in names:
        for loaded in [n for n in sys.modules
                       if n == name or n.startswith(name + '.')]:
            del sys.modules[loaded]


def _add_user_site():
    """Put the account's own site-packages on sys.path if a task created
    it after this interpreter started (``pip install --user``), as a
    fresh interpreter, vanilla's, would have it; True if it did."""
    import site
    if not getattr(site, 'ENABLE_USER_SITE', False):
        return False
    path = site.getusersitepackages()
    if path in sys.path or not os.path.isdir(path):
        return False
    # Before the system's site folders, as site.py puts it, its .pth
    # files' folders with it: a library the task installed there over
    # the system's (``pip install --user -U``) is the one imported.
    before = len(sys.path)
    site.addsitedir(path)  # its .pth files with it
    added = sys.path[before:]
    del sys.path[before:]
    system = [sys.path.index(folder) for folder in _system_site_folders()]
    at = min(system) if system else len(sys.path)
    sys.path[at:at] = added
    if _PTH_READ is not None:
        found = _pth_files([path])
        _PTH_READ.update(found)
        for (folder, _), content in found.items():
            _await_folders(folder, content)
    return True


# The .pth files of the site folders on sys.path that this interpreter
# has read, (folder, name) -> content; None until its first task (then
# those it read as it started).  A fresh interpreter reads them all as it
# starts: one that a task adds (``pip install -e``, a package shipping
# one) puts a folder on sys.path or a finder on sys.meta_path.
_PTH_READ = None
_PTH_LISTED = {}  # site folder -> (mtime, its .pth files) when last listed
# Folders that path lines of the .pth files read name, not there when read.
_PTH_AWAITED = set()


def _site_files_changed():
    """Read the .pth files added to the site folders on sys.path since
    the last module, as a fresh interpreter would have as it started;
    True if there were any, or if a folder a .pth file read names, not
    there then, is there now (a fresh interpreter would put it on
    sys.path: this puts it there).  None if one read before has gone or
    changed since: what it put on sys.path or sys.meta_path cannot be
    taken back here, so modules run as a fresh interpreter until it is
    back as read.  A stat per site folder and task (and per folder
    awaited); a folder that changed is listed and its .pth files read
    again."""
    import site
    if _site_files_read():
        return False
    found = _pth_files(_site_folders())
    added = False
    if found != _PTH_READ:
        if any(found.get(key) != content
               for key, content in _PTH_READ.items()):
            return None
        for folder, name in sorted(set(found) - set(_PTH_READ)):
            site.addpackage(folder, name, None)
            _PTH_READ[folder, name] = found[folder, name]
            _await_folders(folder, found[folder, name])
            added = True
    return _awaited_folders_made() or added


def _site_files_read():
    """Note the .pth files read as this interpreter started, at its first
    task; True then (and where it read none: ``python -S``)."""
    global _PTH_READ
    if sys.flags.no_site:
        return True
    if _PTH_READ is not None:
        return False
    _PTH_READ = _pth_files(_site_folders())
    for (folder, _), content in _PTH_READ.items():
        _await_folders(folder, content)
    return True


def _await_folders(site_folder, content):
    """Note the folders that the path lines of a .pth file read (its
    *content*, in *site_folder*) name and that are not there: site.py
    skips such a line, and the next fresh interpreter, once the folder is
    made, puts it on sys.path."""
    if not isinstance(content, str):  # Python 3: bytes
        try:
            content = content.decode('utf-8')
        except UnicodeDecodeError:
            return
    for line in content.splitlines():
        if (line.startswith('#') or not line.strip() or
                line.startswith(('import ', 'import\t'))):
            continue
        folder = os.path.abspath(os.path.join(site_folder, line.rstrip()))
        if not os.path.exists(folder):
            _PTH_AWAITED.add(folder)


def _awaited_folders_made():
    """Put on sys.path the folders awaited (see _await_folders) that are
    there now, as a fresh interpreter would; True if there were any."""
    made = sorted(f for f in _PTH_AWAITED if os.path.exists(f))
    for folder in made:
        _PTH_AWAITED.discard(folder)
        if folder not in sys.path:
            sys.path.append(folder)
    return bool(made)


def _site_folders():
    """The site folders on sys.path, whose .pth files a fresh interpreter
    reads as it starts."""
    import site
    folders = _system_site_folders()
    if getattr(site, 'ENABLE_USER_SITE', False) and \
            site.getusersitepackages() in sys.path:
        folders.append(site.getusersitepackages())
    return folders


def _system_site_folders():
    """The system's site folders (site.getsitepackages) on sys.path."""
    import site
    return [folder for folder in getattr(site, 'getsitepackages',
                                         lambda: [])()
            if folder in sys.path]


def _pth_files(folders):
    """(folder, name) -> content of the .pth files in *folders*, as
    site.py picks them (not hidden ones)."""
    found = {}
    for folder in folders:
        try:
            mtime = os.stat(folder).st_mtime
        except OSError:
            continue
        listed = _PTH_LISTED.get(folder)
        if listed is None or listed[0] != mtime:
            listed = _PTH_LISTED[folder] = (mtime, _read_pth_files(folder))
        for name, content in listed[1].items():
            found[folder, name] = content
    return found


def _read_pth_files(folder):
    contents = {}
    try:
        names = os.listdir(folder)
    except OSError:
        return contents
    for name in names:
        if name.endswith('.pth') and not name.startswith('.'):
            try:
                with open(os.path.join(folder, name), 'rb') as handle:
                    contents[name] = handle.read()
            except (IOError, OSError):
                pass
    return contents


def _module_main(modules, job, stale):
    """In the forked process: set the stage, run the module, exit."""
    _forget(stale)
    sys.meta_path[:] = _payload_finders(modules)
    _files_from_readers_on_3_9()
    _export_pwd()
    _export_underscore()
    _export_sudo_command(job.get('sudo_command'))
    os.environ.update(job.get('env') or {})
    _fresh_host_view('TZ' in (job.get('env') or {}))
    _check_cwd()
    _set_nofile(job.get('rlimit_nofile') or 0)
    vfork.install()
    fqn = job['module_fqn']
    sys.argv = [modules.filename(fqn)]
    params = job['params']
    if job['style'] == 'loader':
        from ansible.module_utils._internal._ansiballz import _loader
        more = {}
        if 'secrets' in job:  # 2.22+
            more['secrets'] = frozenset(job['secrets'])
        _loader.run_module(json_params=params, profile=job['profile'],
                           module_fqn=fqn, modlib_path=modules.root,
                           extensions=job.get('extensions') or {}, **more)
    else:
        import runpy
        from ansible.module_utils import basic
        basic._ANSIBLE_ARGS = params
        if 'profile' in job:
            basic._ANSIBLE_PROFILE = job['profile']
        runpy.run_module(mod_name=fqn, run_name='__main__', alter_sys=True,
                         init_globals=dict(_module_fqn=fqn,
                                           _modlib_path=modules.root))
        raise RuntimeError('New-style module did not handle its own exit.')


def _fresh_host_view(tz_given):
    """In the module process: the time zone and the host's name as a
    fresh interpreter reads them, not as this context read them when it
    started (a task may have changed them: the timezone and hostname
    modules).  glibc reads /etc/localtime again only when TZ names
    something else in between; platform keeps uname() once asked."""
    if not tz_given and 'TZ' not in os.environ:
        os.environ['TZ'] = 'UTC0'
        time.tzset()
        del os.environ['TZ']
    time.tzset()
    platform = sys.modules.get('platform')
    if platform is not None and hasattr(platform, '_uname_cache'):
        platform._uname_cache = None


def _files_from_readers_on_3_9():
    """In the module process: Python 3.9's ``importlib.resources.files()``
    looks for a package's files only on disk, or in the zip file its
    loader names as ``archive`` (AnsiballZ's, under vanilla); 3.10 and
    later ask the loader's resource reader, as this makes 3.9 do for the
    payload's packages."""
    if sys.version_info[:2] != (3, 9):
        return
    from importlib import _common
    on_disk = _common.from_package
    if getattr(on_disk, 'plasmid_readers', False):
        return  # a process that stayed did this for an earlier task

    def from_package(package):
        loader = getattr(package.__spec__, 'loader', None)
        if isinstance(loader, ZipFinder):
            reader = loader.get_resource_reader(package.__spec__.name)
            if reader is not None:
                return reader.files()
        return on_disk(package)
    from_package.plasmid_readers = True
    _common.from_package = from_package


def change_dir(path):
    """Move this context to *path*, the directory the local connection's
    commands run in (module processes and shells inherit it).  One this
    account cannot enter leaves it where it was: True if it moved.  The
    module processes forked ahead, or kept for the next task, are in the
    old one: they go."""
    try:
        os.chdir(path)
    except OSError:
        return False
    _FORKER.invalidate()
    return True


def _export_pwd():
    """In the module process: PWD as the ``/bin/sh -c`` that vanilla puts
    before every interpreter leaves it.  sh keeps an inherited PWD that
    names the current directory and exports getcwd() otherwise; sudo's
    env_reset drops PWD, and our become interpreter is started by sudo
    with no shell between, so without this a module (and what it runs
    without a shell: ``command``) would see none."""
    here = os.environ.get('PWD', '')
    if here.startswith('/') and _names_cwd(here):
        return
    try:
        os.environ['PWD'] = os.getcwd()
    except OSError:  # a directory we cannot name: sh sets none either
        pass


def _export_underscore():
    """In the module process: ``_`` as vanilla's module has it."""
    value = _vanillas_underscore(os.environ)
    if value:
        os.environ['_'] = value


# Whether vanilla's ``/bin/sh -c`` here is started by the account's shell
# (sshd runs a command through the login shell; su through the user's):
# False in a login context of the local or a container connection, whose
# vanilla plugin starts /bin/sh itself (``commands_start_sh``).
_ACCOUNT_SHELL_STARTS_SH = [True]


def commands_start_sh():
    """This login's vanilla counterpart starts ``/bin/sh`` itself, with no
    shell of the account's before it (ansible-core's local plugin, a
    container's exec): its commands and modules get no ``_`` from one,
    whatever ``SHELL`` says; they keep the one this context inherited, if
    any.  The broker calls this first, before any module process forks."""
    _ACCOUNT_SHELL_STARTS_SH[0] = False
    _FORKER.invalidate()


def _vanillas_underscore(env):
    """``_`` for what vanilla runs through ``/bin/sh -c`` (a module, a
    command), given this context's environment *env*; None for none.
    The account's shell (the login's, or the one su runs) starts that
    ``/bin/sh``: bash and zsh export ``_`` naming it, dash exports none,
    and sudo (env_reset) and doas drop it.  This context was started by
    ``exec python``, for which bash exports none.  Where no account's
    shell starts it (``commands_start_sh``), there is none to add."""
    if not _ACCOUNT_SHELL_STARTS_SH[0] or '_' in env or \
            'SUDO_COMMAND' in env or 'DOAS_USER' in env:
        return None
    if os.path.basename(env.get('SHELL', '')) in ('bash', 'zsh'):
        return '/bin/sh'
    return None


# sudo names at most this much of its command's arguments in SUDO_COMMAND
# (bytes; sudo's env.c, 1.9).
_SUDO_ARGS_KEPT = 4096


def _export_sudo_command(words):
    """In the module process: SUDO_COMMAND as sudo sets it for vanilla's
    command, *words* (``/bin/sh``, ``-c``, ``echo <marker> ; <interpreter>``:
    the task's own marker), instead of the command that started this
    context.  sudo names the program as it found it (a name without a
    slash looked up in PATH, the one sudo gave us) and its arguments
    joined by spaces, cut at 4096 bytes.  Nothing changes where sudo set
    none (*words* come under sudo become only) or where the program is not
    on PATH.  The task's environment, applied after, may set it, as its
    variables follow sudo in vanilla's command."""
    if not words or 'SUDO_COMMAND' not in os.environ:
        return
    program = words[0]
    if '/' not in program:
        program = _on_path(program)
        if program is None:
            return
    args = ' '.join(words[1:])
    if hasattr(os, 'fsencode'):  # the cut counts bytes, as sudo's does
        args = os.fsdecode(os.fsencode(args)[:_SUDO_ARGS_KEPT])
    else:
        args = args[:_SUDO_ARGS_KEPT]
    os.environ['SUDO_COMMAND'] = '%s %s' % (program, args)


def _on_path(name):
    """The first executable *name* in PATH's absolute folders, or None."""
    for folder in os.environ.get('PATH', '').split(os.pathsep):
        path = os.path.join(folder, name)
        if folder.startswith('/') and os.path.isfile(path) and \
                os.access(path, os.X_OK):
            return path
    return None


def runs_here(path):
    """Whether the program at *path* (an absolute path) can be run."""
    return os.path.isfile(path) and os.access(path, os.X_OK)


def _names_cwd(path):
    try:
        return os.path.samefile(path, '.')
    except OSError:  # gone or out of reach: not where we are
        return False


def _check_cwd():
    """Become may leave us in a directory we cannot read; so may the
    wrapper's caller: it moves to ~ or / then, and so do we."""
    try:
        os.getcwd()
    except OSError:
        try:
            os.chdir(os.path.expanduser('~'))
        except OSError:
            os.chdir('/')


def _set_nofile(wanted):
    if not wanted:
        return
    import resource
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = min(hard, wanted)
    if wanted != soft:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
        except ValueError:
            pass


# -------------------------------------------------------- shell commands

def _shell_environment():
    """The environment for shell commands: this interpreter's, with
    vanilla's ``_``, without what Python added for itself (as a shell
    that sshd starts has it: ``ostext.programs_environ``)."""
    env = ostext.programs_environ()
    underscore = _vanillas_underscore(env)
    if underscore:
        env['_'] = underscore
    return env


def run_shell(command, in_data=None, prompt=None, password=None,
              success=None, terminal=None, timeout=30, as_job=False,
              hold_above=None, login=False):
    """:func:`shell`, its output held beyond *hold_above* bytes (see
    :func:`_held_if_large`)."""
    _site_files_read()  # before a command (raw) may add one
    rc, out, err = shell(command, in_data, prompt, password, success,
                         terminal, timeout, as_job, login)
    return _held_if_large(rc, out, err, hold_above)


def shell(command, in_data=None, prompt=None, password=None,
          success=None, terminal=None, timeout=30, as_job=False,
          login=False):
    """``/bin/sh -c command``; *in_data* on its stdin.  With *login*,
    the account's login shell runs it instead, as sshd runs a command:
    ansible-core's ``raw`` (and a become command given as is) reaches
    that shell unwrapped, and may use what only it understands.

    A become command with a password (sudo -S, su) may ask for it: if
    *prompt* (bytes) shows up before *success* (the become plugin's
    marker), *password* is typed first; then *in_data* follows.  With a
    *terminal* (its type, for TERM; '' for none), the command runs on a new
    terminal instead, as under ``ssh -tt``; with *as_job* too, as a job in
    the foreground of a shell that holds the terminal, as sudo runs a
    command on a terminal of its own (use_pty).
    """
    command = _native(command)
    # sshd names a login shell by its base name ($0 is bash); ansible-core's
    # and the container plugins' /bin/sh -c keep the path.
    path = login_shell() if login else '/bin/sh'
    argv = [os.path.basename(path) if login else path, '-c', command]
    if terminal is not None:
        if as_job:
            path, argv = '/bin/sh', ['sh', '-c', _JOB_SCRIPT, 'sh', command]
        return _run_on_tty(path, argv, terminal, prompt, password, success,
                           timeout)
    proc = _start_on_pipes(path, argv)
    try:
        if prompt is None and success is None:
            out, err = proc.communicate(in_data or b'')
            return proc.returncode, out, err

        def type_in(data):
            proc.stdin.write(data)
            proc.stdin.flush()
        head_out, head_err = _answer_prompt(
            proc, [proc.stdout.fileno(), proc.stderr.fileno()], type_in,
            prompt, password, success, timeout)
        if proc.returncode is not None:  # killed: refused or timed out
            proc.stdout.close()
            proc.stderr.close()
            return proc.returncode, head_out, head_err
        out, err = proc.communicate(in_data or b'')
    except BaseException:
        _stop(proc)
        raise
    return proc.returncode, head_out + out, head_err + err


_login_shell = []  # the one answer, once looked up


def login_shell():
    """The shell sshd runs this account's commands with: its login shell
    from the password database, ``/bin/sh`` where that names none."""
    if not _login_shell:
        import pwd
        try:
            found = pwd.getpwuid(os.getuid()).pw_shell
        except KeyError:  # an account the database does not know
            found = ''
        _login_shell.append(found if os.path.isabs(found) else '/bin/sh')
    return _login_shell[0]


def _start_on_pipes(path, argv):
    """The program *path* started with *argv* as sshd starts a command
    (see _own_session), with pipes for its stdin, stdout and stderr: by
    posix_spawn where it can, without forking this context; a Popen or
    what stands for one."""
    env = _shell_environment()
    if shell_spawn.available():
        proc = shell_spawn.start_on_pipes(path, argv, env)
        if proc is not None:
            return proc
    return subprocess.Popen(argv, executable=path, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            close_fds=True, preexec_fn=_own_session,
                            env=env)


def _stop(proc):
    """After an error on the way, a command still running is killed and
    reaped, with what it started, rather than left behind or a zombie."""
    if proc.returncode is None:
        _kill(proc)


def run_shell_checked(command):
    """For commands sent ahead: their failure is an error, not an rc."""
    rc, out, err = shell(command)
    if rc != 0:
        raise RuntimeError('%r failed (rc %d): %s' % (
            command, rc, (err or out).decode('utf-8', 'replace').strip()))
    return rc


# A command or path as sshd and sftp hand it on.  (A module job's
# environment needs no such care: only Python 3.8 and later run modules.)
_native = ostext.native


def _held_if_large(rc, out, err, hold_above):
    """``(rc, out, err)``, or, when *out* and *err* together pass
    *hold_above* bytes (None: never), ``(HELD, token, rc, len(out),
    len(err))`` with both kept here for :func:`read_held` until
    :func:`drop_held`."""
    if hold_above is None or len(out) + len(err) <= hold_above:
        return rc, out, err
    token = next(_HELD_TOKENS)
    _HELD[token] = (out, err)
    return HELD, token, rc, len(out), len(err)


def read_held(token, which, offset, size):
    """*size* bytes from *offset* of held result *token*'s stdout
    (*which* 0) or stderr (1)."""
    return _HELD[token][which][offset:offset + size]


def drop_held(token):
    _HELD.pop(token, None)


def held_count():
    """How many results are held (for tests)."""
    return len(_HELD)


# What relay() may run: the calls a broker orders behind calls sent ahead.
_RELAYABLE = ('run_module', 'run_shell', 'write_file', 'read_file')


def relay(context, name, args):
    """Run the function *name* of this module in *context*, a child of
    this context, after every call this context received before."""
    if name not in _RELAYABLE:
        raise ValueError('%r cannot be relayed' % (name,))
    return context.call(globals()[name], *args)


# With job control on (-m), sh runs the command in a process group of its
# own, gives it the terminal and takes the terminal back when it ends.  The
# command's shell is then not the terminal's session leader: when it ends,
# what it left running in the background is not sent SIGHUP, as under sudo.
# (The exit keeps a shell from exec-ing its last command in its own place.)
_JOB_SCRIPT = '(set -m) 2>/dev/null && set -m; /bin/sh -c "$1"; exit $?'


def _run_on_tty(path, argv, terminal, prompt=None, password=None,
                success=None, timeout=30):
    """Run the program *path* with *argv* on a pseudo-terminal; its stdout
    and stderr both go there, as with ``ssh -tt``, and so do a become
    program's prompt and the password typed at it.  TERM is *terminal*,
    the type the ssh client announces with its terminal (its own TERM),
    unless that is empty."""
    import pty
    master, slave = pty.openpty()
    env = _shell_environment()
    if terminal:
        env['TERM'] = terminal
    if 'SSH_CONNECTION' in env:
        # sshd names the terminal it gives a command in SSH_TTY; where its
        # other variables were dropped (sudo's env_reset) so would this be.
        env['SSH_TTY'] = os.ttyname(slave)
    try:
        proc = None
        if shell_spawn.available():
            proc = shell_spawn.start_on_terminal(path, argv, env, slave)
        if proc is None:  # 2.7-3.7, no setsid in posix_spawn, no pts name
            proc = subprocess.Popen(argv, executable=path, stdin=slave,
                                    stdout=slave, stderr=slave, close_fds=True,
                                    preexec_fn=_new_session, env=env)
    finally:
        os.close(slave)
    try:
        head = b''
        if prompt is not None or success is not None:
            head, = _answer_prompt(proc, [master],
                                   lambda data: os.write(master, data),
                                   prompt, password, success, timeout)
            if proc.returncode is not None:  # killed: refused or timed out
                return proc.returncode, head, b''
        chunks = [head]
        while True:
            data = _read_some(master)
            if not data:
                break
            chunks.append(data)
        # Waited for before our side closes: nothing holds the terminal
        # now, but the command may still be running (bash runs a single
        # command in its own place, and it may close its fds early); the
        # close would hang it up (SIGHUP), where sshd waits for its exit.
        return proc.wait(), b''.join(chunks), b''
    except BaseException:
        _stop(proc)
        raise
    finally:
        os.close(master)


def _read_some(fd):
    """Up to 64 KiB from *fd*; b'' at its end, which a terminal's master
    side reports as EIO once every holder of the other side is gone."""
    try:
        return os.read(fd, 65536)
    except OSError as exc:
        if exc.errno != errno.EIO:
            raise
        return b''


def _own_session():
    """As sshd gives each command a session of its own: and the command's
    children can be stopped together (_kill).  sshd's commands start with
    SIGXFSZ ignored (a write past ``ulimit -f`` fails with EFBIG instead
    of killing the writer); Python's subprocess set it back to default.
    Their other signals start at their defaults, whatever this context
    inherited: one started under ``nohup`` would otherwise hand SIGHUP
    ignored on to its commands (a shell's ``cmd &``, SIGINT and SIGQUIT),
    and what a command leaves in the background on a terminal would
    outlive it."""
    _default_signals()
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    os.setsid()


def _new_session():
    """_own_session, with the terminal on fd 0 as its controlling one."""
    _own_session()
    import fcntl
    import termios
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


def _default_signals():
    for signum in shell_spawn.signals_to_default():
        signal.signal(signum, signal.SIG_DFL)


def _answer_prompt(proc, fds, type_in, prompt, password, success,
                   timeout):
    """Read *fds* (the command's stdout and stderr, or its terminal) until
    the become marker shows, typing *password* with *type_in* at the
    first prompt (*prompt*: a regex, bytes).  A second prompt means the
    password was refused; nothing within *timeout* seconds means the
    become program waits for something we cannot give.  In both cases the
    process is killed and what it said is returned, for the controller to
    judge.  Returns what each fd said, in order."""
    import re
    seen = dict((fd, b'') for fd in fds)
    _read_through_become(proc, fds, seen, type_in,
                         prompt and re.compile(prompt, re.I), password,
                         success, timeout)
    return [seen[fd] for fd in fds]


def _read_through_become(proc, fds, seen, type_in, pattern, password,
                         success, timeout):
    """_answer_prompt's reading, adding to *seen* what each fd says; it
    returns once the marker shows, an fd ends, or the process is killed."""
    fresh = dict((fd, b'') for fd in fds)  # said since the last answer
    answered = False
    deadline = now() + timeout
    while True:
        left = deadline - now()
        ready = left > 0 and wait_for(fds, (), left)[0]
        if not ready:
            _kill(proc)
            seen[fds[-1]] += b'\nplasmid: timed out waiting for become\n'
            return
        for fd in ready:
            data = _read_some(fd)
            if not data:
                return
            seen[fd] += data
            fresh[fd] += data
            if success and success in seen[fd]:
                return
            found = pattern and pattern.search(fresh[fd])
            if found:
                if answered or password is None:
                    _kill(proc)
                    return
                type_in(password + b'\n')
                answered = True
                # Vanilla's ssh plugin leaves the prompt's line out of
                # the output: what follows the answer is the command's.
                at = len(seen[fd]) - len(fresh[fd]) + found.start()
                seen[fd] = seen[fd][:seen[fd].rfind(b'\n', 0, at) + 1]
                fresh = dict((f, b'') for f in fds)
                deadline = now() + timeout


def _kill(proc):
    """Stop a become command we gave up on, with what it started (su
    under sudo under a shell): they share its session."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except OSError:
        proc.kill()
    if proc.stdin is not None:  # None on a terminal
        try:
            proc.stdin.close()
        except (IOError, OSError):
            pass
    proc.wait()


# ----------------------------------------------------------------- files

def write_file(path, data, offset=0, truncate=True, mode=None):
    """Write one chunk of a file; the first chunk creates or truncates."""
    flags = os.O_WRONLY | os.O_CREAT
    if truncate:
        flags |= os.O_TRUNC
    fd = os.open(_native(path), flags, mode if mode is not None else 0o666)
    try:
        files_remote.write_at(fd, data, offset)
    finally:
        os.close(fd)
    return len(data)


def read_file(path, offset, size):
    """*size* bytes of a file from *offset*: fewer only at its end (the
    reader stops at the first short chunk), b'' past it."""
    return files_remote.read(path, offset, size)


def read_file_head(path, size):
    """A fetch's first call: the file's permission bits, which sftp gives
    the copy it makes, and its first *size* bytes."""
    data = files_remote.read(path, 0, size)
    return os.stat(_native(path)).st_mode & 0o777, data
