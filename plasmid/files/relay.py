"""A file copy's steps for many contexts at once: a context does a step of
:mod:`plasmid.files.remote` for itself, when it is one of the copy's
targets, and passes it on to the contexts below it that lead to others, so
a file crosses each link once whatever number of targets lie beyond it.

A plan node is ``[context, here, below]``: *here* is the context's id if
it is a target (its temporary file's name carries it: targets may share a
file system), else 0; *below* lists the nodes it passes the step to
(contexts it started, at any depth).  Shipped into contexts on first use:
stdlib and plasmid.core only, Python 2.7-compatible.
"""
from __future__ import absolute_import

from plasmid.core.compat import bytes_from_wire
from plasmid.core.dispatch import error_for
from plasmid.core.errors import CallError, ConnectError, ContextLost, \
    TimeoutError
from plasmid.core.loop import now
from plasmid.files import remote

# Steps by name: a function is not a value a call may carry.
STEPS = {'write': remote.write, 'commit': remote.commit,
         'put_whole': remote.put_whole, 'discard': remote.discard}
# Where a step's bytes are among its arguments.  An intermediary on
# Python 2 passes bytes on as its str, which Python 3 decodes as text.
DATA_AT = {'write': 2, 'put_whole': 2}
LAST_STEPS = ('commit', 'put_whole', 'discard')

# A copy's temporary name -> the ids of the branches that missed a
# deadline: they get no more of its steps (they would only wait again).
_GIVEN_UP = {}


def run(step, args, here, below, timeout=None):
    """Do *step* with *args* here if *here*, and in every node of *below*
    at the same time; wait for all of them.  Return the failures as
    ``[context, error]`` pairs, context None for this one.

    *timeout*: seconds one level may take.  The branches are waited for
    as long as the deepest may take (a level each), so a level below
    gives up first and answers in time; a branch that does not fails
    with :class:`plasmid.TimeoutError` and is sent only a discard."""
    given_up = _GIVEN_UP.setdefault(args[0], set())
    wait = timeout and timeout * height_below(below)
    deadline = timeout and now() + wait
    started = [(node, _start(node, step, args, timeout)) for node in below
               if node[0].context_id not in given_up]
    failures = []
    if here:
        try:
            STEPS[step](*_own(step, args, here))
        except Exception as exc:
            failures.append([None, error_for(exc)])
    for node, call in started:
        failures.extend(collect(node, call, deadline, wait, given_up,
                                args[0]))
    if step in LAST_STEPS:
        del _GIVEN_UP[args[0]]
    return failures


def _own(step, args, here):
    """*args* for this target: its own temporary file, and bytes."""
    args = list(args)
    args[0] = '%s-%d' % (args[0], here)
    at = DATA_AT.get(step)
    if at is not None:
        args[at] = bytes_from_wire(args[at])
    return args


def _start(node, step, args, timeout):
    """The call passing *step* to *node*, or why it could not start."""
    try:
        return node[0].call_async(run, step, args, node[1], node[2],
                                  timeout)
    except Exception as exc:  # a lost context refuses calls at once
        return sendable(exc)


def collect(node, call, deadline, wait, given_up, temp):
    """*node*'s failures, naming the context of each: all of its targets
    when the call itself failed (a context on the way was lost, or did
    not answer before *deadline*, *wait* seconds from the start)."""
    if not isinstance(call, Exception):
        try:
            return [[node[0] if who is None else who, error]
                    for who, error in call.result(_left(deadline))]
        except TimeoutError:
            given_up.add(node[0].context_id)
            discard_later(node, temp)
            # The branches share the deadline: one waited for after
            # another gave up had a moment left, which its error would name.
            call = TimeoutError('no result within %.3gs' % wait)
        except Exception as exc:
            call = sendable(exc)
    return [[target, call] for target in targets(node)]


def _left(deadline):
    """Seconds until *deadline*; a late answer already here still counts."""
    if deadline is None:
        return None
    return max(deadline - now(), 0.001)


def discard_later(node, temp):
    """Have *node*'s temporary files removed once it gets there (after
    the steps it is stuck on); nothing waits for it."""
    try:
        node[0].call_no_reply(run, 'discard', [temp], node[1], node[2])
    except Exception:  # lost meanwhile: nothing left to remove it
        pass


def height_below(below):
    """Levels of contexts under a node: 0 for a node with none."""
    return max([height_below(node[2]) + 1 for node in below] or [0])


def targets(node):
    """The contexts of *node* and below it that are targets."""
    context, here, below = node
    found = [context] if here else []
    for child in below:
        found.extend(targets(child))
    return found


def sendable(exc):
    """*exc* as a value a reply can carry."""
    if isinstance(exc, (CallError, ConnectError, ContextLost, TimeoutError)):
        return exc
    return error_for(exc)
