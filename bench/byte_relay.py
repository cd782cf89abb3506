"""Run a program between pipes and count the bytes that pass each way.

    python3 byte_relay.py COUNT_FILE -- PROGRAM [ARGS...]

bootstrap_size.py puts this in front of the interpreter a tool starts (as
its python_path), so the bytes the tool really sends to a new context and
gets back can be counted.  Before forwarding each chunk the running totals
are written to COUNT_FILE as "to_child from_child", so once the tool has
seen an answer, the file already counts everything that led to it.
stderr is inherited untouched.
"""
import os
import select
import subprocess
import sys


def save(path, to_child, from_child):
    tmp = path + '.tmp'
    with open(tmp, 'w') as handle:
        handle.write('%d %d\n' % (to_child, from_child))
    os.replace(tmp, path)


def main():
    count_file = sys.argv[1]
    argv = sys.argv[sys.argv.index('--') + 1:]
    child = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    to_child_fd, from_child_fd = child.stdin.fileno(), child.stdout.fileno()
    totals = {'in': 0, 'out': 0}
    open_fds = {0: to_child_fd, from_child_fd: 1}   # read fd -> write fd
    save(count_file, 0, 0)
    while open_fds:
        ready, _, _ = select.select(list(open_fds), [], [])
        for fd in ready:
            data = os.read(fd, 65536)
            target = open_fds[fd]
            if not data:
                del open_fds[fd]
                os.close(target)   # pass the end of input on
                if fd == from_child_fd:
                    open_fds.clear()   # the program is done: so are we
                continue
            totals['in' if fd == 0 else 'out'] += len(data)
            save(count_file, totals['in'], totals['out'])
            view = memoryview(data)
            while view:
                view = view[os.write(target, view):]
    sys.exit(child.wait())


if __name__ == '__main__':
    main()
