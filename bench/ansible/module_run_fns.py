"""What bench/ansible/module_run.py calls in its context."""


def children_usage():
    """(CPU seconds, minor faults) of the children this context waited
    for: the module processes and what they ran."""
    import resource
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime, usage.ru_minflt
