"""What bench/ansible/shell_start.py runs in its context."""


def usage():
    """CPU seconds of this context and of the children it waited for."""
    import resource
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (own.ru_utime + own.ru_stime,
            children.ru_utime + children.ru_stime)


def by_subprocess_only():
    """Make target.shell start commands by subprocess, as before spawn."""
    from plasmid.ansible import shell_spawn
    shell_spawn.available = lambda: False
