"""A file copy's steps for many contexts at once: a context does a step of
:mod:`plasmid.files.remote` for itself, when it is one of the copy's
targets, and passes it on to the contexts below it that lead to others, so
a file crosses each link once whatever number of targets lie beyond it.

A plan node is ``[context, here, below]``: *here* is the context's id if
it is a target (its temporary file's name carries it: targets may share a
file system), else 0; *below* lists the nodes it passes the step to
(contexts it started, at any depth).  Shipped into contexts on first use: stdlib and
plasmid.core only, Python 2.7-compatible.
"""
from __future__ import absolute_import

from plasmid.core.compat import bytes_from_wire
from plasmid.core.dispatch import error_for
from plasmid.core.errors import CallError, ContextLost
from plasmid.files import remote

# Steps by name: a function is not a value a call may carry.
STEPS = {'write': remote.write, 'commit': remote.commit,
         'put_whole': remote.put_whole, 'discard': remote.discard}
# Where a step's bytes are among its arguments.  An intermediary on
# Python 2 passes bytes on as its str, which Python 3 decodes as text.
DATA_AT = {'write': 2, 'put_whole': 2}


def run(step, args, here, below):
    """Do *step* with *args* here if *here*, and in every node of *below*
    at the same time; wait for all of them.  Return the failures as
    ``[context, error]`` pairs, context None for this one."""
    started = [(node, _start(node, step, args)) for node in below]
    failures = []
    if here:
        try:
            STEPS[step](*_own(step, args, here))
        except Exception as exc:
            failures.append([None, error_for(exc)])
    for node, call in started:
        failures.extend(collect(node, call))
    return failures


def _own(step, args, here):
    """*args* for this target: its own temporary file, and bytes."""
    args = list(args)
    args[0] = '%s-%d' % (args[0], here)
    at = DATA_AT.get(step)
    if at is not None:
        args[at] = bytes_from_wire(args[at])
    return args


def _start(node, step, args):
    """The call passing *step* to *node*, or why it could not start."""
    try:
        return node[0].call_async(run, step, args, node[1], node[2])
    except Exception as exc:  # a lost context refuses calls at once
        return sendable(exc)


def collect(node, call):
    """*node*'s failures, naming the context of each: all of its targets
    when the call itself failed (a context on the way was lost)."""
    if not isinstance(call, Exception):
        try:
            return [[node[0] if who is None else who, error]
                    for who, error in call.result()]
        except Exception as exc:
            call = sendable(exc)
    return [[target, call] for target in targets(node)]


def targets(node):
    """The contexts of *node* and below it that are targets."""
    context, here, below = node
    found = [context] if here else []
    for child in below:
        found.extend(targets(child))
    return found


def sendable(exc):
    """*exc* as a value a reply can carry."""
    if isinstance(exc, (CallError, ContextLost)):
        return exc
    return error_for(exc)
