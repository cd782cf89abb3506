"""What bench/ansible/module_run.py measures with, in its context and in
itself."""


def children_usage():
    """(CPU seconds, minor faults) of the children this process waited
    for and of those alive (a spare, a module process that stayed, and
    what they waited for): in the context, the module processes and what
    they ran."""
    import resource
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu, faults = _live_children_usage()
    return usage.ru_utime + usage.ru_stime + cpu, usage.ru_minflt + faults


def _live_children_usage():
    import glob
    import os
    tick = float(os.sysconf('SC_CLK_TCK'))
    cpu = faults = 0
    for listing in glob.glob('/proc/self/task/*/children'):
        with open(listing) as handle:
            pids = handle.read().split()
        for pid in pids:
            try:
                with open('/proc/%s/stat' % pid) as handle:
                    fields = handle.read().rsplit(')', 1)[1].split()
            except (IOError, OSError):  # gone meanwhile: reaped, counted
                continue
            # minflt, cminflt at 8 and 10, utime .. cstime at 12-15 (after
            # the name: state is field 1 here)
            faults += int(fields[7]) + int(fields[9])
            cpu += sum(int(f) for f in fields[11:15]) / tick
    return cpu, faults


def context_usage():
    """(CPU seconds of this process's children, waited-for and alive, their
    minor faults, CPU seconds of this process itself): in the context, the
    module processes and its own share of each run (the call, the fork,
    reading the child's answer, the next spare's fork)."""
    import resource
    own = resource.getrusage(resource.RUSAGE_SELF)
    return children_usage() + (own.ru_utime + own.ru_stime,)
