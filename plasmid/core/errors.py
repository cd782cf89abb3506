"""The exceptions users catch; every one derives from :class:`Error`."""
from __future__ import absolute_import
from plasmid.core.compat import builtin_timeout


class Error(Exception):
    """Base class of every error plasmid raises."""


class CallError(Error):
    """A function raised in a remote context.

    Carries the remote exception's type name, its message and the formatted
    remote traceback; ``str()`` shows all three.
    """

    def __init__(self, type_name, message, remote_traceback=''):
        Error.__init__(self, type_name, message, remote_traceback)
        self.type_name = type_name
        self.message = message
        self.remote_traceback = remote_traceback

    def __str__(self):
        text = '%s: %s' % (self.type_name, self.message)
        if self.remote_traceback:
            text += '\n--- remote traceback ---\n' + self.remote_traceback.rstrip()
        return text


class ConnectError(Error):
    """A context could not be started; the message says why.

    ``output`` is what the starting program wrote on stderr, as it wrote
    it ('' if nothing, or relayed by an intermediary, which keeps only
    the message); ``ended`` says that the program ended by itself, so
    that its output says why, for callers that show a program's own words
    as its error (rather than ours: a refused password, a timeout).
    """

    def __init__(self, message, output='', ended=False):
        Error.__init__(self, message)
        self.output = output
        self.ended = ended


class ContextLost(Error):
    """A context, or a hop on its route, went away.

    ``said`` is what the program that carried the link (ssh) wrote on
    stderr after the context had started, up to its exit; where it wrote
    nothing and ended badly, how it ended ("python3 was killed by signal
    9"); '' for a context shut down, or a link further away than this
    context's own child.
    """

    def __init__(self, message, said=''):
        Error.__init__(self, message)
        self.said = said


class TimeoutError(Error, builtin_timeout):
    """A wait ran out of time (also the built-in ``TimeoutError``)."""


class ProtocolError(Error):
    """A peer sent bytes that are not a valid frame or message."""


class StreamError(Error):
    """Data could not be encoded for the wire (the message names the type)."""
