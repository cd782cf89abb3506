"""What bench/ansible/module_run.py measures with, in its context and in
itself."""


def children_usage():
    """(CPU seconds, minor faults) of the children this process waited
    for: in the context, the module processes and what they ran."""
    import resource
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime, usage.ru_minflt


def context_usage():
    """(CPU seconds of the waited-for children, their minor faults, CPU
    seconds of this process itself): in the context, the module processes,
    and its own share of each run (the call, the fork, reading the
    child's answer, the next spare's fork)."""
    import resource
    own = resource.getrusage(resource.RUSAGE_SELF)
    return children_usage() + (own.ru_utime + own.ru_stime,)
