"""Functions the tests in tests/connect/ run inside remote contexts.

Contexts import this module from the master by name, on any target
Python, so it must stay Python 2.7-compatible: no f-strings, no
annotations, stdlib only.
"""
import logging
import os
import socket
import sys
import threading
import time


def identity():
    """Who and where this context is."""
    return {
        'uid': os.getuid(),
        'euid': os.geteuid(),
        'pid': os.getpid(),
        'ppid': os.getppid(),
        'hostname': socket.gethostname(),
        'home': os.environ.get('HOME'),
    }


def getuid():
    return os.getuid()


def getpid():
    return os.getpid()


def parent_command():
    """The command name of this interpreter's parent process."""
    with open('/proc/%d/comm' % os.getppid()) as handle:
        return handle.read().strip()


def version_info():
    return list(sys.version_info[:3])


def cmdline():
    """This process's argv as the kernel sees it."""
    with open('/proc/self/cmdline', 'rb') as f:
        raw = f.read()
    return [part.decode('utf-8', 'replace') for part in raw.split(b'\0')
            if part]


def loader_name():
    """Which loader imported this module: the master's one or a file's."""
    module = sys.modules[__name__]
    return type(getattr(module, '__loader__', None)).__name__


def fail(message):
    raise ValueError(message)


def sleep(seconds):
    time.sleep(seconds)
    return seconds


def spin_holding_the_gil(marker=None):
    """Sum numbers in C for days: no other thread of this interpreter runs
    meanwhile, its I/O loop included.  First create the file *marker*, if
    given: the call has started."""
    if marker is not None:
        open(marker, 'w').close()
    try:
        numbers = xrange  # noqa: F821 (Python 2: range makes a list)
    except NameError:
        numbers = range
    return sum(numbers(10 ** 15))


def any_child_status():
    """What os.waitpid(-1) says at once: ECHILD where this process has no
    child, else (0, 0) while none has exited."""
    try:
        return os.waitpid(-1, os.WNOHANG)
    except OSError as exc:  # ChildProcessError on Python 3
        return exc.errno


def log_warning(text):
    logging.getLogger('connect_fns').warning('%s', text)
    return text


def pid_alive(pid):
    """True if *pid* exists and is not a zombie (works across users)."""
    try:
        with open('/proc/%d/stat' % pid) as f:
            stat = f.read()
    except (IOError, OSError):
        return False
    return stat.rsplit(')', 1)[1].split()[0] != 'Z'


def wait_pid_gone(pid, timeout):
    """Poll until *pid* is gone; True if it went within *timeout*."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        if not pid_alive(pid):
            return True
        time.sleep(0.02)
    return not pid_alive(pid)


def child_pids():
    """Processes whose parent is this one."""
    me = os.getpid()
    found = []
    for name in os.listdir('/proc'):
        if not name.isdigit():
            continue
        try:
            with open('/proc/%s/stat' % name) as f:
                fields = f.read().rsplit(')', 1)[1].split()
        except (IOError, OSError):
            continue
        if int(fields[1]) == me:
            found.append(int(name))
    return found


def wait_no_children(timeout):
    """Poll until this process has no children; return those left."""
    deadline = time.time() + timeout
    left = child_pids()
    while left and time.time() < deadline:
        time.sleep(0.02)
        left = child_pids()
    return left


def username():
    import pwd
    import os
    return pwd.getpwuid(os.getuid()).pw_name


def has_controlling_terminal():
    """Whether this process has a controlling terminal (/dev/tty opens)."""
    try:
        fd = os.open('/dev/tty', os.O_RDWR | os.O_NOCTTY)
    except OSError:
        return False
    os.close(fd)
    return True


_HELD = []


def hold_descriptors(count):
    """Open *count* descriptors and keep them, so that this context's next
    ones are numbered above them (past select()'s 1023 for count > 1024);
    raises the soft limit as far as that needs.  Returns the highest."""
    import resource
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = count + 256
    if soft < wanted:
        resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
    for _ in range(count):
        _HELD.append(os.open(os.devnull, os.O_RDONLY))
    return _HELD[-1]


def release_descriptors():
    while _HELD:
        os.close(_HELD.pop())


def set_environ(values):
    """Set environment variables here, for the programs started later."""
    os.environ.update(values)


def output_of(argv):
    """What *argv* writes on stdout and stderr, as text, run without a
    terminal and with nothing on its stdin."""
    import subprocess
    proc = subprocess.Popen(argv, stdin=open(os.devnull),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    out = proc.communicate()[0]
    return out.decode('utf-8', 'replace')


def network_interfaces():
    """The names of the network interfaces of this process's network
    namespace (/proc/self/net follows it, where /sys/class/net shows the
    namespace of whoever mounted /sys)."""
    with open('/proc/self/net/dev') as handle:
        lines = handle.read().splitlines()[2:]
    return sorted(line.split(':')[0].strip() for line in lines)


def in_a_container():
    """Whether podman's marker file is here: the container's filesystem."""
    return os.path.exists('/run/.containerenv')


def getenv(name):
    return os.environ.get(name)


def ignore_sigchld():
    """As a daemon does: its children are reaped without a wait."""
    import signal
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)


def locale_mode():
    """LC_CTYPE in this process's environment, and whether Python runs in
    its UTF-8 mode (PEP 540: it does when it starts in the C locale)."""
    return os.environ.get('LC_CTYPE'), getattr(sys.flags, 'utf8_mode', None)


def status_of_false():
    """What subprocess says `false` exited with (0 where SIGCHLD is
    ignored: the kernel reaps it before the wait)."""
    import subprocess
    return subprocess.call(['false'])


def pause_reading_children(paused):
    """In an intermediary: stop (or resume) reading its children's links,
    as Stream.hold does while its parent reads slowly.  How many."""
    from plasmid.core import child
    here = child.current
    done = threading.Event()

    def on_the_loop():
        for stream in here.children:
            stream.pause(paused)
        done.set()
    here.loop.defer(on_the_loop)
    done.wait(10)
    return len(here.children)


def print_then_exit(count):
    """Print *count* lines, wait until the link to our parent has taken
    them all (in its pipe), then exit at once."""
    from plasmid.core import child
    for i in range(count):
        print('line %d' % i)
    deadline = time.time() + 30
    while child.current.parent.outbox and time.time() < deadline:
        time.sleep(0.01)
    os._exit(0)
