"""Start a context: run its program, answer prompts, boot the core.

The target receives a first stage on its command line, which prints a
ready marker with its Python's version and runs the compressed core; the
core reads its BOOT frame and answers HELLO.  Where the core and BOOT come
from depends on the method (its ``CORE_IN_ARGV``):

- ssh and local carry them on the command line too, as two base64 words.
  ssh forwards stdin only once the remote command has started (about one
  round trip after it sent the command), so a core on stdin would reach
  the target that much later; on the command line it arrives with the
  command, and the boot costs no round trip beyond ssh's own.
- sudo, su and doas read a password from stdin (or a terminal), and sudo
  and doas log the command line they run: there the first stage reads
  exactly the compressed core and then BOOT from stdin, sent once the
  interpreter says it is up.  That wait is local to the parent's machine.
- kubectl reads them from stdin too (its command travels in a URL, which
  proxies bound), but nothing asks for a password there: its core goes
  ahead, written at once (the method's ``CORE_AHEAD``).
"""
from __future__ import absolute_import
import base64
import collections
import errno
import logging
import os
import re
import select
import sys
import time
import zlib

from plasmid.core.compat import string_types
from plasmid.core.errors import ConnectError
from plasmid.core.framing import FrameReader, Message
from plasmid.core.loop import now, set_nonblocking
from plasmid.core.ostext import native, programs_environ
from plasmid.core.router import BOOT, HELLO, SHUTDOWN
from plasmid.core.stream import Stream
from plasmid.core.waiting import wait_for
from plasmid.connect import context_log, watchdog
from plasmid.connect.process import Process

READY_WORD = 'PLASMID-READY'
# The ready marker is READY, the Python's "major.minor", a newline: the
# master knows which bytecode a new context runs before its HELLO.
READY = READY_WORD.encode('ascii')
READY_LINE_MAX = len(READY) + 16  # a longer line is not the marker
READY_VERSION = re.compile(br'(\d{1,3})\.(\d{1,3})$')
REAP_TIMEOUT = 5.0
# How often a start in an intermediary looks whether it is shutting down.
STOP_POLL = 0.1
# How long a link whose program's stdout has ended waits for the rest of
# its stderr (ssh's reason for a lost connection) before it closes.
LAST_WORDS_WAIT = 0.5
# Only what it wrote from this long before its stdout ended counts: older
# lines (a warning at start-up) say nothing of why the link went.
LAST_WORDS_RECENT = 1.0
LAST_WORDS_SIZE = 4096  # characters of it kept, from a line's start
PARTIAL_LINE_KEPT = 4096  # characters of stderr held for their line's end
# How long a link whose program has exited may still deliver what the
# program wrote before it ends by itself (see ExitWatch).
EXITED_LINK_WAIT = 0.25
STDERR_KEPT = 65536  # bytes of a start's stderr kept to quote: its last
EXIT_POLL = 1.0  # where no pidfd tells of the exit, how often to ask
# A start's stages, each bounded by connect_timeout afresh: reaching the
# new Python, then booting it (Handshake.run).
START_STAGES = 2
# How a ConnectError says the program ran but its Python would not start.
NO_PYTHON = 'no Python at '
# How a ConnectError says the program asked for a password again after
# the one it was given, or asked for one when none was given.  Method
# modules name their own refusals in these words too, so a relayed
# error's text is enough to tell them apart (password_refused/_missing).
PASSWORD_REFUSED = 'the password was refused'
PASSWORD_MISSING = 'a password was asked for, but none was given'
PROMPT_AFTER_HAND_OVER = (
    'a password prompt came from the command %s ran, not from %s itself '
    '(code the target account controls, as its Python starts): not '
    'answered')

# Our own words in a program's output, shown as <bootstrap> in errors: the
# first stage's code (sudo quotes it in a refusal), and the base64 words of
# the core and BOOT (a shell that cannot run the command, fish for one,
# echoes all of it: some 22 KB).
BOOTSTRAP_TEXT = re.compile(r"\S*-c'? '?import sys;\S*import binascii,zlib;"
                            r"exec\S*|"
                            r"'?[A-Za-z0-9+/]{200,}={0,2}'?")

# READY is spelt out as a bytes literal, not with %r: a Python 2
# intermediary's repr of bytes has no b prefix, and a Python 3 child would
# take it for text.
# Both forms leave the compressed core in b (a context keeps it, to start
# its own children) and BOOT in f, None when it is to be read from stdin,
# and start the context's watchdog (connect/watchdog) once READY is out:
# watchdog.CODE, put in place of the first %s, defines *watch*.
FIRST_STAGE = '''import os,sys,zlib
%s
os.write(1,b'%s%%d.%%d\\n'%%sys.version_info[:2])
watch(%r)
n=%d
b=c=os.read(0,n)
while c and len(b)<n:c=os.read(0,n-len(b));b+=c
if len(b)<n:sys.exit(1)
f=None
exec(zlib.decompress(b))
'''
# The words after -c are the core and BOOT; they leave sys.argv, which is
# ['-c'] in every context, as with the other form.
FIRST_STAGE_ARGV = '''import binascii,os,sys,zlib
%s
os.write(1,b'%s%%d.%%d\\n'%%sys.version_info[:2])
watch(%r)
b,f=[binascii.a2b_base64(w) for w in sys.argv[1:3]]
del sys.argv[1:]
exec(zlib.decompress(b))
'''


def boot_argv(python_path, blob_size, grace=None):
    """The interpreter's argv: python -c <first stage>, which reads a core
    of *blob_size* bytes and then BOOT from stdin.  *grace*: seconds, see
    connect/watchdog (None: its GRACE)."""
    return _python_c(python_path, FIRST_STAGE % (
        watchdog.CODE, READY_WORD, _grace(grace), blob_size))


def boot_argv_carrying(python_path, blob, boot, grace=None):
    """The interpreter's argv: python -c <first stage> <core> <BOOT>, the
    compressed core *blob* and the encoded BOOT frame *boot* as base64
    words (plain ASCII, for any remote shell); nothing comes on stdin
    before HELLO."""
    words = [base64.b64encode(data).decode('ascii') for data in (blob, boot)]
    return _python_c(python_path, FIRST_STAGE_ARGV % (
        watchdog.CODE, READY_WORD, _grace(grace))) + words


def _grace(grace):
    return float(watchdog.GRACE if grace is None else grace)


def _python_c(python_path, code):
    encoded = base64.b64encode(zlib.compress(code.encode('ascii'), 9))
    # binascii, not base64: base64 imports re (~6 ms of a start).  First,
    # -c's '' (the working directory, which a sudo or su context keeps
    # from its caller) leaves sys.path: anyone who can write there could
    # name a file after a module we import and run as the new account.
    # Errors show it as <bootstrap>: keep BOOTSTRAP_TEXT in step.
    stub = ('import sys;sys.path[:]=filter(None,sys.path);'
            'import binascii,zlib;'
            'exec(zlib.decompress(binascii.a2b_base64("%s")))')
    if isinstance(python_path, string_types):  # unicode too, on 2.7
        python_path = [python_path]
    return list(python_path) + ['-c', stub % encoded.decode('ascii')]


def shell_command(argv):
    """*argv* as one command line for a login shell (ssh's remote command,
    ``su -c``): quoted word by word, and run by ``exec``, so that the
    shell gives its process to the interpreter instead of waiting beside
    it (dash, Debian's sh, does not do so by itself): one process less
    per context on the target, and signals reach the interpreter."""
    return 'exec ' + ' '.join(_shell_quote(w) for w in argv)


def _shell_quote(word):
    return "'" + word.replace("'", "'\"'\"'") + "'"


def connect_timeout(spec):
    """Seconds each stage of the start *spec* describes may take."""
    return spec.get('connect_timeout') or 30.0


def _without_bootstrap(text):
    """A program's words with our bootstrap command, which a shell that
    echoes its commands repeats, shown as "<bootstrap>"."""
    return BOOTSTRAP_TEXT.sub('<bootstrap>', text)


def start_failed(name, reason, said, ended):
    """The ConnectError of the context *name*'s start: *reason*, then what
    its program *said* on stderr, its lines joined into one."""
    lines = [line.strip() for line in said.splitlines() if line.strip()]
    if lines:
        reason += ': ' + ' '.join(lines)
    return ConnectError('%s: %s' % (name, reason), said, ended)


def ended_how(status):
    """' with status N', ' (killed by signal N)', or '' (*status* None:
    not known yet), as Popen's returncode says it."""
    if status is None:
        return ''
    if status < 0:
        return ' (killed by signal %d)' % -status
    return ' with status %d' % status


def password_refused(error):
    """Whether *error* (a ConnectError) says the program asked again for
    the password it was given."""
    return PASSWORD_REFUSED in str(error)


def password_missing(error):
    """Whether *error* (a ConnectError) says the program asked for a
    password and none was given."""
    return PASSWORD_MISSING in str(error)


def python_missing(error):
    """Whether *error* (a ConnectError, perhaps relayed by an
    intermediary, which keeps only its text) says the login or the become
    worked and the interpreter did not start."""
    return NO_PYTHON in str(error)


def method_module_name(method):
    return 'plasmid.connect.' + method


def method_module(name):
    module_name = method_module_name(name)
    __import__(module_name)
    return sys.modules[module_name]


def _prompt_pattern(method, spec):
    """What a password prompt looks like: the method's own pattern, or
    where the spec gives a *password_prompt*, any output that contains
    that text (as ``sshpass -P`` watches for it)."""
    custom = spec.get('password_prompt')
    if not custom:
        return method.PROMPT
    if not isinstance(custom, bytes):
        custom = custom.encode('utf-8')
    return re.compile(re.escape(custom))


# What Handshake.run returns when told to stop at the ready marker.
STARTED = 'started'


class Handshake(object):
    """Drives one new process until its HELLO (or, *until_ready*, its
    Python's ready marker), answering prompts."""

    def __init__(self, proc, method, spec, payload, until_ready=False,
                 should_stop=None):
        self.proc = proc
        self.should_stop = should_stop  # a shutdown of the starter
        self.method = method
        self.spec = spec
        self.payload = payload
        self.until_ready = until_ready
        # The payload waits for the ready marker (a password may come
        # first on stdin), unless the method sends its core ahead.
        self.payload_queued = getattr(method, 'CORE_AHEAD', False)
        self.to_write = self.payload_queued and payload or b''
        self.stdout = b''  # until the ready marker's line
        # The last of what came before it: a login that ends says why
        # there (nologin: "This account is currently not available.").
        self.early_stdout = b''
        self.python = None  # (major, minor), as that line says
        self.stderr = b''
        self.prompt_buf = b''
        self.prompts = 0
        self.prompt = _prompt_pattern(method, spec)
        self.reader = None
        # When the program last wrote something that was neither a prompt
        # we answer nor its Python's first word (None: nothing such since).
        self.unanswered_since = None
        self.open = set(fd for fd in (proc.stdout, proc.stderr, proc.tty_fd)
                        if fd is not None)
        set_nonblocking(proc.stdin)

    def fail(self, reason, ended=False):
        self.proc.kill()
        said = self._stderr_said()
        if ended and not said.strip():  # its words, wherever they went
            said = self._early_stdout_said()
        raise start_failed(self.spec['name'], reason, said, ended)

    def _exit_reason(self):
        """Why the process ended before booting, as far as we can tell."""
        status = None
        deadline = now() + 0.5
        while status is None and now() < deadline:
            status = self.proc.poll()
            if status is None:
                time.sleep(0.01)
        for pattern, reason in getattr(self.method, 'REFUSALS', []):
            if pattern.search(self.stderr):
                return reason  # said as it exited (su's wrong password)
        if status == 127 or (self.reader is None and b'python' in
                             self.stderr.lower() and (
                                 b'not found' in self.stderr or
                                 b'No such file' in self.stderr)):
            return NO_PYTHON + repr(self.spec.get('python_path'))
        own_failure = getattr(self.method, 'OWN_FAILURE_STATUS', None)
        if own_failure is not None and self.reader is None and \
                status is not None and 0 <= status != own_failure:
            return '%s%r started (the remote command exited with status ' \
                '%d before a Python said a word)' % (
                    NO_PYTHON, self.spec.get('python_path'), status)
        if status == 0 and self.reader is None:
            # A success before the interpreter said a word: no Python ran.
            return ('the process exited during start-up with status 0 '
                    'before its interpreter started: is python_path=%r a '
                    'Python interpreter?' % (self.spec.get('python_path'),))
        return 'the process exited during start-up' + ended_how(status)

    def _stderr_said(self):
        """stderr, minus our own prompt marker and bootstrap command."""
        text = self.stderr.decode('utf-8', 'replace')
        prompt = getattr(self.method, 'PROMPT_TEXT', None)
        if prompt:
            text = text.replace(prompt, '')
        return _without_bootstrap(text)

    def _early_stdout_said(self):
        return _without_bootstrap(self.early_stdout.decode('utf-8',
                                                           'replace'))

    def run(self, timeout):
        """Drive the start until HELLO, and return what it says; with
        *until_ready*, only until the ready marker, and return STARTED.
        *timeout* bounds each of the two stages afresh: the program's start
        up to the new Python's first word (ssh's connection and login, a
        password prompt, the interpreter's start), then the core's boot up
        to its answer.  A machine too loaded to do both within one timeout
        still starts; one that stalls in either fails within that stage's.
        A program that waits at a prompt we cannot answer fails sooner:
        see _unanswered."""
        deadline = now() + timeout
        booting = False
        while True:
            if self.reader is not None and not booting:
                booting = True  # the Python runs: its boot gets its own
                deadline = now() + timeout
            remaining = deadline - now()
            if remaining <= 0:
                self.fail(booting and 'the Python started but did not boot '
                          'within %gs' % timeout or
                          'no answer within %gs' % timeout)
            remaining = min(remaining, self._unanswered())
            if self.should_stop is not None:
                if self.should_stop():
                    self.fail('the context starting it is shutting down')
                remaining = min(remaining, STOP_POLL)
            wlist = self.to_write and [self.proc.stdin] or []
            rlist, wlist = wait_for(list(self.open), wlist, remaining)
            if wlist:
                self._write()
            # stdout first: what the program writes on stderr after its
            # ready marker belongs to the stream's ErrorOutput (the last
            # words of a boot that fails), not to a handshake that ends.
            for fd in sorted(rlist, key=lambda fd: fd != self.proc.stdout):
                hello = self._read(fd)
                if hello is not None:
                    return hello

    def _unanswered(self):
        """Seconds the start may still wait after the program wrote what
        we took for no prompt of ours and fell silent: a prompt we cannot
        answer (a PAM one-time code, say), which nobody will.  Bounded by
        the spec's prompt_timeout, when it has one; fails once it is up."""
        limit = self.spec.get('prompt_timeout')
        if limit is None or self.unanswered_since is None or \
                self.reader is not None:
            return float('inf')
        left = self.unanswered_since + limit - now()
        if left <= 0:
            reason = 'it waits at a prompt we cannot answer (nothing more ' \
                'within %gs)' % limit
            if self._prompt_fds()[0] != self.proc.stderr:  # else fail says it
                said = self.prompt_buf.decode('utf-8', 'replace')
                reason += ': ' + said.strip().splitlines()[-1].strip()
            self.fail(reason)
        return left

    def _write(self):
        try:
            n = os.write(self.proc.stdin, self.to_write[:65536])
        except OSError as exc:
            if exc.errno == errno.EAGAIN:
                return
            # Most often it is ending (ssh refused at once): say why.
            self._fail_ending('the process stopped reading its input')
        self.to_write = self.to_write[n:]

    def _read(self, fd):
        try:
            data = os.read(fd, 65536)
        except OSError:
            data = b''  # EIO: the pty's other side is gone
        if fd == self.proc.stdout:
            if not data:
                self._fail_ending('the process closed its output during '
                                  'start-up')
            return self._on_stdout(data)
        if not data:
            self.open.discard(fd)
            return None
        if fd == self.proc.stderr:
            self._keep_stderr(data)
        if fd == self._prompt_fds()[0]:
            self._check_prompt(data)
        return None

    def _keep_stderr(self, data):
        """Its last STDERR_KEPT bytes: what a failure quotes (a program
        that says much while it starts is not copied whole at each read,
        nor quoted whole)."""
        self.stderr = (self.stderr + data)[-STDERR_KEPT:]

    def _fail_ending(self, if_running):
        """Fail a start that broke off (stdout closed, stdin refused):
        with the exit's reason and last words if the process ended, with
        *if_running* if it still runs after _exit_reason's grace."""
        self._drain_stderr(1.0)
        reason = self._exit_reason()
        if self.proc.poll() is None:
            self.fail(if_running)
        self.fail(reason, ended=True)

    def _drain_stderr(self, timeout):
        """Collect what the process wrote to stderr and we have not read
        yet, and what it writes within *timeout*: an ending process's
        reason may arrive after its stdout has closed."""
        deadline = now() + timeout
        fd = self.proc.stderr
        while fd in self.open:
            remaining = deadline - now()
            if not wait_for([fd], (), max(remaining, 0))[0]:
                return
            try:
                data = os.read(fd, 65536)
            except OSError:
                data = b''
            if not data:
                return
            self._keep_stderr(data)
            if remaining <= 0:
                return  # one read past the deadline, not a stream of them

    def _check_prompt(self, data):
        self.prompt_buf = (self.prompt_buf + data)[-4096:]
        for pattern, reason in getattr(self.method, 'REFUSALS', []):
            if pattern.search(self.prompt_buf):
                self.fail(reason)
        if not self.prompt or not self.prompt.search(self.prompt_buf):
            if data.strip():  # a newline after a typed password is none
                self.unanswered_since = now()
            return
        self.unanswered_since = None
        self.prompt_buf = b''
        self.prompts += 1
        password = self.spec.get('password')
        if password is None:
            self.fail(PASSWORD_MISSING)
        if getattr(self.method, 'ANSWER_ONLY_THE_PROGRAM', False) and \
                handed_over(self.proc):
            program = os.path.basename(str(self.proc.argv[0]))
            self.fail(PROMPT_AFTER_HAND_OVER % (program, program))
        if self.prompts > 1:
            # Why it asks again (ssh's "Permission denied") is on stderr
            # already, perhaps not yet read.
            self._drain_stderr(0)
            self.fail(PASSWORD_REFUSED)
        answer = (password + '\n').encode('utf-8')
        target = self._prompt_fds()[1]
        if target == self.proc.stdin:
            self.to_write = answer + self.to_write
        else:
            os.write(target, answer)

    def _prompt_fds(self):
        """Where the prompt shows and where the password goes: programs
        prompt on their terminal when they have one (ssh, su), else on
        stderr, reading stdin; sudo -S does that even with a terminal."""
        on_terminal = getattr(self.method, 'PROMPTS_ON_TERMINAL', True)
        if self.proc.tty_fd is not None and on_terminal:
            return self.proc.tty_fd, self.proc.tty_fd
        return self.proc.stderr, self.proc.stdin

    def _queue_payload(self):
        if not self.payload_queued:
            self.payload_queued = True
            self.to_write += self.payload

    def unsent(self):
        """What of the payload a start that stopped at the ready marker
        has not written: the stream sends it, ahead of everything."""
        self._queue_payload()
        rest, self.to_write = self.to_write, b''
        return rest

    def _on_stdout(self, data):
        if self.reader is None:
            self.early_stdout = (self.early_stdout + data)[-LAST_WORDS_SIZE:]
            self.python, rest = split_at_ready(self.stdout + data)
            if self.python is None:
                self.stdout = rest
                return None
            data, self.stdout = rest, b''
            self.reader = FrameReader()
            if self.until_ready:
                self.reader.buffer += data  # HELLO's first bytes, maybe
                return STARTED
            self._queue_payload()
        messages = self.reader.feed(data)
        if not messages:
            return None
        hello = messages[0]
        if hello.handle != HELLO or hello.src != self.spec['context_id']:
            self.fail('the process did not boot (got %r)' % (hello,))
        self.reader.buffer[0:0] = b''.join(m.to_bytes() for m in messages[1:])
        return hello.value()


def handed_over(proc):
    """Whether the program *proc* runs (sudo, doas) has started its
    command already: it has a child, or has become another program (its
    name in /proc changed).  Where /proc cannot tell, False.

    The password such a program asks for is the caller's, and its command
    runs as another account, whose Python may print the program's prompt
    as it starts (a usercustomize.py) and read what we answer: the
    caller's password, where a rule needs none and the program never
    asked.  Before the command runs, the program has no child: it waits
    for the answer."""
    pid = proc.pid
    try:
        with open('/proc/%d/task/%d/children' % (pid, pid)) as handle:
            children = handle.read().split()
        with open('/proc/%d/stat' % pid, 'rb') as handle:
            stat = handle.read()
    except (IOError, OSError):
        return False
    name = stat[stat.find(b'(') + 1:stat.rfind(b')')]
    expected = os.path.basename(native(proc.argv[0]))[:15]
    if not isinstance(expected, bytes):
        expected = expected.encode('utf-8', 'surrogateescape')
    return bool(children) or name != expected


def split_at_ready(output):
    """A start's stdout so far, split at the ready marker's line: (the
    Python's (major, minor) it gives, what follows the line) once it has
    come; else (None, the end of *output* to read on from)."""
    while True:
        at = output.find(READY)
        if at < 0:
            return None, output[-len(READY):]
        end = output.find(b'\n', at)
        if 0 <= end - at <= READY_LINE_MAX:
            found = READY_VERSION.match(output[at + len(READY):end])
            if found:
                python = (int(found.group(1)), int(found.group(2)))
                return python, output[end + 1:]
        elif end < 0 and len(output) - at <= READY_LINE_MAX:
            return None, output[at:]  # the rest of the line is coming
        output = output[at + 1:]  # the word, not in our line: look on


def connect(router, spec, blob, watch_boot=None, on_process=None,
            should_stop=None):
    """Start the context *spec* describes; return (stream, hello info).

    Runs in the calling thread and blocks until the context has booted
    or failed with :class:`ConnectError`.  A method that refuses to run
    without a terminal (sudo under ``requiretty``) is started once more
    with one.

    With *watch_boot*, it returns as soon as the new Python is up, with
    only its version for the info (``{'version': [major, minor]}``, from
    its ready marker): the core boots there while the caller's first
    messages travel, and ``watch_boot(stream)``, run on the loop before
    the stream reads anything, sees its HELLO or its failure (see
    plasmid.master.booting).

    *on_process*, if given, is called with each program's Process as soon
    as it runs (a master's shutdown kills the starts under way).  With
    *should_stop*, the start fails (its program killed) once
    ``should_stop()`` is true: an intermediary's shutdown.
    """
    method = method_module(spec['method'])
    tty = method.TTY
    if tty is None:
        tty = method.wants_tty(spec)
    try:
        return _connect(router, spec, blob, method, tty, watch_boot,
                        on_process, should_stop)
    except ConnectError as exc:
        tty_required = getattr(method, 'tty_required', None)
        if tty or tty_required is None or not tty_required(exc.output):
            raise
    return _connect(router, spec, blob, method, True, watch_boot, on_process,
                    should_stop)


def boot_frame(router, spec):
    """The encoded BOOT frame of the context *spec* describes, a child of
    *router*'s context: who it is, who its parent is, its limits."""
    return Message.encoding(spec['context_id'], router.context_id, BOOT, {
        'context_id': spec['context_id'],
        'parent_id': router.context_id,
        'name': spec['name'],
        'log_level': spec.get('log_level', logging.WARNING),
        'max_message': router.max_message,
        'master_version': spec.get('master_version', '?'),
    }).to_bytes()


def program_environment(spec):
    """The environment of the program that starts the context: this
    process's, as a program should have it (``ostext.programs_environ``),
    with the spec's ``program_env`` on top.  Given to the program, not on
    its command line, where every user of the machine could read it."""
    env = programs_environ()
    for name, value in (spec.get('program_env') or {}).items():
        env[native(name)] = native(value)
    return env


def _connect(router, spec, blob, method, tty, watch_boot, on_process,
             should_stop):
    boot = boot_frame(router, spec)
    if method.CORE_IN_ARGV:
        python = boot_argv_carrying(spec['python_path'], blob, boot,
                                    spec.get('watchdog_grace'))
        payload = b''
    else:
        python = boot_argv(spec['python_path'], len(blob),
                           spec.get('watchdog_grace'))
        payload = blob + boot
    proc = Process(method.argv(spec, python), tty=tty,
                   env=program_environment(spec))
    if on_process is not None:
        on_process(proc)
    handshake = Handshake(proc, method, spec, payload,
                          until_ready=watch_boot is not None,
                          should_stop=should_stop)
    try:
        info = handshake.run(connect_timeout(spec))
    except BaseException as exc:
        proc.close_all()
        # A failed start's program (ssh refused) ends of itself; Ctrl-C
        # is the user's wish to stop now, not a second later.
        reap(proc, 0 if isinstance(exc, KeyboardInterrupt) else 1.0)
        raise
    proc.close_tty_slave()
    handshake.reader.max_message = router.max_message  # the router's limit
    stream = Stream(router, proc.stdout, proc.stdin, spec['name'],
                    handshake.reader)
    stream.process = proc
    # The stream owns and closes these fds now; closing them again later
    # (close_all) could close another thread's newly opened fds.
    proc.stdin = proc.stdout = None
    if watch_boot is not None:
        # HELLO comes on the stream, to watch_boot; till then, the version
        # the ready marker gave.
        info = handshake.python and {'version': list(handshake.python)}
        unsent = handshake.unsent()
        if unsent:
            stream.send(unsent)  # a core read from stdin: ahead of all
        router.loop.defer(watch_boot, stream)
    stream.context_id = spec['context_id']  # whose program it holds
    router.add_child(stream, spec['context_id'])
    router.loop.defer(stream.start)
    if proc.stderr is not None:
        stream.error_output = ErrorOutput(router.loop, proc, spec['name'])
        stream.error_output.start(stream)
    ExitWatch(router.loop, stream, proc).start()
    return stream, info


class ExitWatch(object):
    """Ends a link whose program has exited when something else keeps
    the link's pipes open.

    A link normally ends when the program's stdout does.  But a process
    the context left behind may hold both pipes (a fork on Python 2.7 or
    3.6, which have no fork hook to let go of them): then nothing ends,
    writes still succeed, and a call would wait for as long as that
    process lives.  The program's exit tells the truth: once it is gone,
    whatever holds the pipes is not the context (every method's program
    lives as long as the context: ssh, sudo and su wait for it, local and
    doas become it).  It is seen through a pidfd where there is one (Linux
    5.3+, Python 3.9+), else by asking every EXIT_POLL seconds: the link
    gets EXITED_LINK_WAIT to deliver what was written before the exit and
    to end by itself, then it is ended as if its output had.  Not when no
    writer is left (POLLHUP): then it ends by itself once read, which a
    link paused by Stream.hold is not, for now (its pipe still holds the
    program's last output); nor while it is paused.
    """

    def __init__(self, loop, stream, proc):
        self.loop = loop
        self.stream = stream
        self.proc = proc

    def start(self):
        self.proc.open_pidfd()
        # Run by whoever closes the stream: the loop's owner.
        self.stream.on_close.append(lambda _: self._stop())
        self.loop.defer(self._watch)

    def _watch(self):
        if self.stream.closed:  # before the callback above was in place
            self._stop()
        elif self.proc.pidfd is not None:
            self.loop.add_reader(self.proc.pidfd, self._exited)
        else:
            self.loop.call_later(EXIT_POLL, self._poll)

    def _poll(self):
        if self.stream.closed:
            return
        if self.proc.poll() is None:
            self.loop.call_later(EXIT_POLL, self._poll)
        else:
            self._exited()

    def _stop(self):
        fd, self.proc.pidfd = self.proc.pidfd, None
        if fd is not None:
            self.loop.remove_fd(fd)
            os.close(fd)

    def _exited(self):
        self._stop()
        if not self.stream.closed:
            self.loop.call_later(EXITED_LINK_WAIT, self._end_link)

    def _end_link(self):
        if self.stream.closed or self._writers_gone():
            # Nobody holds the link: it ends by itself once read.  Paused
            # (Stream.hold: our parent reads slowly), its pipe still holds
            # what the program wrote before it exited.
            return
        if self.stream.paused:  # not read for now: give it its time then
            self.loop.call_later(EXITED_LINK_WAIT, self._end_link)
            return
        logging.getLogger(__name__).warning(
            '%r: its program has exited, but another process holds the '
            'link open: ending it', self.stream)
        self.stream.end_of_input()

    def _writers_gone(self):
        """Whether every process that could write to the link has closed
        it: POLLHUP, which comes even while data waits unread."""
        poller = select.poll()
        poller.register(self.stream.rfd, select.POLLIN)
        try:
            return any(event & select.POLLHUP for _, event in poller.poll(0))
        except (select.error, OSError):
            return False


class ErrorOutput(object):
    """Keeps reading a child program's stderr after boot and logs it.

    ssh may still have things to say (warnings, a dropped connection), and
    a closed pipe would kill it with SIGPIPE.  The last lines are kept as
    the program's last words: why the link was lost, in its own words.
    """

    def __init__(self, loop, proc, name):
        self.loop = loop
        self.proc = proc
        self.name = name  # its records: context_log, under plasmid.ctx.<name>
        # (time, text) as read, as written (ssh ends its lines \r\n)
        self.recent = collections.deque(maxlen=64)
        self.input_ended = None  # when the link's stdout ended
        self.ended = False
        # The start of a line not ended yet: a program whose stderr has
        # no buffer (Python's traceback) writes a line in pieces.
        self.partial = u''
        self.closing = None  # the stream's close, held for the last words
        # Once the link is closed, the stream's owner may close stderr at
        # any moment (Router._release, once the program has exited),
        # without our reading its end: nothing is held for a line's end.
        self.link_closed = False

    def said(self):
        """What the program wrote shortly before its stdout ended (or
        before now) and since, up to LAST_WORDS_SIZE; where it wrote
        nothing and has ended badly, how it ended ("python3 was killed
        by signal 9"): a context killed by the OOM killer, or that called
        os._exit(), was lost without a reason."""
        since = (self.input_ended or now()) - LAST_WORDS_RECENT
        text = u''.join(t for stamp, t in self.recent if stamp >= since)
        if len(text) > LAST_WORDS_SIZE:
            text = text[-LAST_WORDS_SIZE:]
            text = text[text.find('\n') + 1:]  # whole lines only
        return text or self._how_it_ended()

    def _how_it_ended(self):
        if not self.input_ended:
            return u''
        status = self.proc.poll()
        for _ in range(10):  # its files close a moment before it is a zombie
            if status is not None:
                break
            time.sleep(0.0005)
            status = self.proc.poll()
        if not status:  # running (a wrapper's child has our pipes), or 0
            return u''
        program = os.path.basename(str(self.proc.argv[0]))
        if status < 0:
            return u'%s was killed by signal %d' % (program, -status)
        return u'%s exited with status %d' % (program, status)

    def linger(self, close):
        """Call *close* once stderr has ended (the program exits), or after
        LAST_WORDS_WAIT if something else holds it open; loop thread."""
        self.input_ended = now()
        if self.ended:
            close()
            return
        self.closing = close
        self.loop.call_later(LAST_WORDS_WAIT, self._release)

    def _release(self):
        close, self.closing = self.closing, None
        if close is not None:
            close()

    def start(self, stream):
        """Read the program's stderr from now on, and hear of *stream*'s
        close (its link)."""
        set_nonblocking(self.proc.stderr)
        # First: the loss that the router's callback makes carries what
        # _link_gone reads (said()).
        stream.on_close.insert(0, self._link_gone)
        self.loop.defer(self._watch)

    def _watch(self):
        # Not once stderr has ended: _link_gone may read its end before
        # the loop first runs (a late start's link closed at once).
        if self.proc.stderr is not None:
            self.loop.add_reader(self.proc.stderr, self._read)

    def _link_gone(self, _stream):
        """The link is closed, perhaps with stderr still open (a process
        the program left holds it): log what the pipe holds now and the
        line held for its end, which the owner's close of stderr would
        drop unread; loop thread (or the shutdown's, the loop stopped)."""
        self.link_closed = True
        if self.proc.stderr is not None:
            self._read()
        self._log(self.partial)
        self.partial = u''

    def _read(self):
        try:
            data = os.read(self.proc.stderr, 65536)
        except OSError as exc:
            if exc.errno in (errno.EAGAIN, errno.EINTR):
                return  # nothing there yet (_link_gone reads unasked)
            data = b''
        if not data:
            self._end()
            return
        text = data.decode('utf-8', 'replace')
        self.recent.append((now(), text))
        self._log_lines(text)

    def _end(self):
        self.loop.remove_fd(self.proc.stderr)
        os.close(self.proc.stderr)
        self.proc.stderr = None
        self.ended = True
        self._log(self.partial)
        self.partial = u''
        self._release()

    def _log_lines(self, text):
        """Log *text*, after the line held from before, a record per
        line; hold its unended last line.  A lone \\r ends a record too,
        as \\n and \\r\\n do (ssh ends its lines \\r\\n: the empty line
        between the two is no record): what a program rewrites in place
        (a progress count, a prompt after "\\r") is a record per state,
        as a terminal showed each in turn, not one record with \\r in it
        held until a \\n that may never come."""
        lines = (self.partial + text).replace(u'\r', u'\n').split(u'\n')
        self.partial = lines.pop()
        if self.link_closed or len(self.partial) > PARTIAL_LINE_KEPT:
            lines.append(self.partial)  # nobody to wait for, or too long
            self.partial = u''
        for line in lines:
            self._log(line)

    def _log(self, line):
        if line.strip():
            context_log.log(self.name, logging.WARNING, '%s', (line,))


def reap(proc, timeout=REAP_TIMEOUT):
    """Wait for *proc* to exit, killing it after *timeout*; no zombies."""
    deadline = now() + timeout
    while proc.poll() is None:
        if now() >= deadline:
            proc.kill()
            proc.popen.wait()
            return
        time.sleep(0.01)


def stop_child(context_id):
    """Called in an intermediary: stop its child *context_id*, if it has
    one (a start the master gave up waiting for)."""
    from plasmid.core import child
    router = child.current.router
    if context_id in router.routes:
        router.send_value(context_id, SHUTDOWN, None)


def kill_child(context_id):
    """Called in an intermediary: kill the program of its own child
    *context_id* (not a deeper one's hop), whose shutdown timed out (busy
    in code that never lets its loop run); return whether there was one."""
    from plasmid.core import child
    for stream in list(child.current.children):
        if getattr(stream, 'context_id', None) == context_id and \
                stream.process is not None:
            stream.process.kill()
            return True
    return False


def connect_child(spec):
    """Called in an intermediary: start a child of this context; return
    its HELLO info, or the ConnectError that says why it did not start
    (returned: raised, it would be a call's failure, a CallError, as a
    ConnectError that a user's function raises is)."""
    from plasmid.core import child
    here = child.current
    try:
        # Its SHUTDOWN comes while this call runs: the start then ends at
        # once instead of leaving its program behind when this one exits.
        stream, info = connect(here.router, spec, here.blob,
                               should_stop=lambda: here.stopping)
    except BaseException as exc:
        # The hops above were told the route to it before the start: the
        # loss, sent up ahead of the failure's reply, clears it there.
        here.router.lose([spec['context_id']], 'start-up failed')
        if isinstance(exc, ConnectError):
            return exc
        raise
    adopt(here.children, stream)
    python = python_of(info)
    if python is not None:  # then it may get the bytecode we got
        here.importer.pythons[spec['context_id']] = python
    stream.on_close.append(lambda s: here.loop.defer(_reap_later, here.loop,
                                                     s.process, 0))
    return info


def adopt(children, stream):
    """Keep *stream*, the link to a child started here, in *children*
    (a fork lets go of them; the exit waits for them to close) while it is
    open: a closed one was 40 KiB an intermediary kept for good.  The
    loop thread may close it meanwhile."""
    def forget(_):
        try:
            children.remove(stream)
        except ValueError:  # the other thread was first
            pass
    children.append(stream)
    stream.on_close.append(forget)
    if stream.closed:  # before the callback was in place
        forget(stream)


def python_of(info):
    """The (major, minor) of a child's Python from its HELLO *info*, or
    None: a child's word, checked, not trusted."""
    version = info.get('version') if isinstance(info, dict) else None
    if isinstance(version, list) and len(version) >= 2:
        return tuple(version[:2])
    return None


def _reap_later(loop, proc, tries):
    """Reap from the loop without blocking it."""
    if proc.poll() is not None:
        return
    if tries > REAP_TIMEOUT / 0.05:
        proc.kill()
    loop.call_later(0.05, lambda: _reap_later(loop, proc, tries + 1))
