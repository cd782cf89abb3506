"""Routing between contexts, local handles, and replies awaited.

A router knows one parent stream (none in the master) and, for every
context below it, the child stream that leads there.  It checks where each
message came from before acting on it:

* a message's ``src`` must agree with the stream it arrived on, so nobody
  can speak in another context's name;
* routing is one-way: a child's messages may go up or to this context, never
  back down to a sibling's subtree;
* each local handle says whose messages it takes (parent, child, or one
  context), so a child can never reach, say, the call dispatcher.
"""
from __future__ import absolute_import
import itertools
import threading

from plasmid.core import codec
from plasmid.core.errors import ContextLost, ProtocolError, StreamError
from plasmid.core.framing import DEFAULT_MAX_MESSAGE, Message
from plasmid.core.logger import Logger

LOG = Logger('plasmid.router')

# Well-known handles present in every context.
CALL = 1         # parent -> child: run a function
LOG_RECORD = 2   # child -> master: a log record or output line
GET_MODULE = 3   # child -> parent: please send this module
LOAD_MODULE = 4  # parent -> child: a module (or its absence)
DEL_ROUTE = 5    # child -> parent: these contexts are gone
ADD_ROUTE = 6    # parent -> child: a new context lives behind this one
SHUTDOWN = 7     # parent -> child: finish up and exit
HELLO = 8        # child -> parent: booted, here is who I am
BOOT = 9         # parent -> child: your identity and settings
GET_DATA = 10    # child -> parent: a package data file (replied to)
FIRST_DYNAMIC = 1000

# Who may send to a handle.
FROM_PARENT = 'parent'
FROM_CHILD = 'child'
FROM_ANY = 'any'


class Router(object):
    """Routes messages for one context; thread-safe where it must be."""

    def __init__(self, loop, context_id, max_message=DEFAULT_MAX_MESSAGE):
        self.loop = loop
        self.context_id = context_id
        self.max_message = max_message
        self.parent = None
        self.parent_id = None
        self.routes = {}     # context id -> Stream leading to it
        self.handlers = {}   # handle -> (callback(msg), policy)
        self.pending = {}    # reply handle -> (target id, Latch)
        self.lost = set()    # ids of contexts known to be gone
        self.lost_reason = {}
        self.lost_said = {}  # ids -> the lost link's program's last words
        self.on_lost = []    # callbacks(ids) when contexts go away
        self.on_parent_lost = []
        self.lock = threading.Lock()
        self.handle_ids = itertools.count(FIRST_DYNAMIC)
        self.add_handler(DEL_ROUTE, self._on_del_route, FROM_CHILD)
        self.add_handler(ADD_ROUTE, self._on_add_route, FROM_PARENT)

    # ----------------------------------------------------------- set-up

    def add_handler(self, handle, callback, policy=FROM_PARENT):
        self.handlers[handle] = (callback, policy)

    def alloc_handle(self):
        return next(self.handle_ids)

    def set_parent(self, stream, parent_id):
        self.parent = stream
        self.parent_id = parent_id
        stream.on_close.append(self._on_stream_closed)

    def add_child(self, stream, context_id):
        """Route *context_id* (and later its descendants) via *stream*."""
        stream.on_close.append(self._on_stream_closed)
        self.add_route(context_id, stream)

    def add_route(self, context_id, stream):
        self.lost.discard(context_id)
        self.routes[context_id] = stream

    # ---------------------------------------------------------- sending

    def send(self, msg):
        """Send a message from this context; any thread.

        Raises StreamError for a message over the size limit: every
        router on its way would refuse it and drop the whole link."""
        if len(msg.data) > self.max_message:
            raise StreamError('a message of %d bytes exceeds the %d byte '
                              'limit' % (len(msg.data), self.max_message))
        if msg.dst == self.context_id:
            self.loop.defer(self._deliver, msg)
            return
        stream = self.routes.get(msg.dst, self.parent)
        if stream is None or msg.dst in self.lost:
            self._undeliverable(msg, 'no route to context %d' % msg.dst)
        elif not stream.send(msg.to_bytes()):  # dead, not yet seen so
            self._lost_on_send(msg, stream)

    def _lost_on_send(self, msg, stream):
        self._undeliverable(msg, 'the connection to %s was lost'
                            % stream.name)

    def send_value(self, dst, handle, value, reply_to=0):
        self.send(Message.encoding(dst, self.context_id, handle, value,
                                   reply_to))

    def reply(self, msg, value):
        """Answer *msg* (if it wants an answer) with *value*."""
        if msg.reply_to:
            self.send_value(msg.src, msg.reply_to, value)

    def expect_reply(self, target_id, latch):
        """Allocate a handle whose single reply from *target_id* sets
        *latch* (with the raw message); fail it if the target is lost."""
        handle = self.alloc_handle()
        # The handler first: a loss failing the entry meanwhile (another
        # thread) then takes both, not the entry alone.
        self.handlers[handle] = (self._on_reply, target_id)
        with self.lock:
            self.pending[handle] = (target_id, latch)
        if target_id in self.lost:
            self._fail_pending(set([target_id]))
        return handle

    def forget_reply(self, handle):
        with self.lock:
            self.pending.pop(handle, None)
        self.handlers.pop(handle, None)

    def _on_reply(self, msg):
        with self.lock:
            entry = self.pending.pop(msg.handle, None)
        self.handlers.pop(msg.handle, None)
        if entry is not None:
            entry[1].set(msg)

    # -------------------------------------------------------- receiving

    def receive(self, msg):
        """Act on a message that arrived on ``msg.stream``; loop thread."""
        if not self._source_matches(msg):
            LOG.error('%r: dropping %r: source does not match the link',
                      msg.stream, msg)
            return
        if msg.dst == self.context_id:
            self._deliver(msg)
        else:
            self._forward(msg)

    def _source_matches(self, msg):
        if msg.stream is self.parent:
            return msg.src != self.context_id and msg.src not in self.routes
        return self.routes.get(msg.src) is msg.stream

    def _forward(self, msg):
        stream = self.routes.get(msg.dst)
        if msg.stream is not self.parent:
            if stream is not None:
                self._refuse(msg)  # a child addressing a context below
                return
            stream = self.parent
        if stream is None or not stream.send(msg.to_bytes()):
            self._undeliverable(msg, 'no route to context %d' % msg.dst)
        elif stream is self.parent:
            stream.hold(msg.stream)

    def _deliver(self, msg):
        entry = self.handlers.get(msg.handle)
        if entry is None:
            if msg.handle < FIRST_DYNAMIC:
                # Well-known handles this context does not serve (a CALL
                # or SHUTDOWN to the master...): never legitimate, so say
                # so, to the sender too if it waits.
                why = 'context %d takes no messages on handle %d' % (
                    self.context_id, msg.handle)
                LOG.error('%r: refusing %r: %s', msg.stream, msg, why)
                self._undeliverable(msg, why)
            else:
                LOG.debug('no handler for %r', msg)  # e.g. a late reply
            return
        callback, policy = entry
        if not self._policy_allows(policy, msg):
            # Answered, as a call to a context one may not address is:
            # a child's call to its parent would wait for ever.
            self._refuse(msg)
            return
        try:
            callback(msg)
        except ProtocolError as exc:
            LOG.error('%r: malformed %r: %s', msg.stream, msg, exc)
        except Exception:
            LOG.exception('handler for %r failed', msg)

    def _refuse(self, msg):
        why = 'context %d may not address context %d' % (msg.src, msg.dst)
        LOG.error('%r: refusing %r: %s', msg.stream, msg, why)
        self._undeliverable(msg, why)

    def _policy_allows(self, policy, msg):
        if policy == FROM_PARENT:
            # Not from this context itself: its calls run one at a time,
            # and one to itself would wait for ever (it is answered).
            return msg.stream is self.parent
        if policy == FROM_CHILD:
            return msg.stream is not None and msg.stream is not self.parent
        if policy == FROM_ANY:
            return True
        # One context's replies, this router's own error answers, or an
        # error answer from a router on the way to that context (which
        # could not pass the call on): it comes on the link the reply
        # would take, whose routers can drop or answer for it anyway.
        return msg.src == policy or msg.stream is None or \
            msg.stream is self.routes.get(policy, self.parent)

    def _undeliverable(self, msg, reason):
        if msg.reply_to and msg.handle != LOG_RECORD:
            err = ContextLost(reason)
            back = Message.encoding(msg.src, self.context_id, msg.reply_to,
                                    (False, err))
            if msg.src == self.context_id:
                self.loop.defer(self._deliver, back)
            else:
                stream = self.routes.get(msg.src, self.parent)
                if stream is not None:
                    stream.send(back.to_bytes())

    # ---------------------------------------------------- lost contexts

    def _on_stream_closed(self, stream):
        ids = [cid for cid, s in list(self.routes.items()) if s is stream]
        reason = 'the connection to %s was lost' % (stream.name,)
        said = stream.broken or (stream.error_output.said()
                                 if stream.error_output else '')
        if said:
            reason += ': ' + ' '.join(said.split())
        self.lose(ids, reason, said)
        if stream is self.parent:
            for callback in self.on_parent_lost:
                callback()

    def _on_del_route(self, msg):
        ids, reason = msg.value()
        ids = [cid for cid in ids if self.routes.get(cid) is msg.stream]
        self.lose(ids, reason)

    def _on_add_route(self, msg):
        context_id, via_id = msg.value()
        stream = self.routes.get(via_id)
        if stream is not None and context_id not in self.routes:
            self.add_route(context_id, stream)

    def lose(self, ids, reason, said=''):
        """Forget routes to *ids*, fail what waits on them, tell upward
        (*said*: the link's program's last words, kept here only)."""
        if not ids:
            return
        for cid in ids:
            self.routes.pop(cid, None)
            self.lost.add(cid)
            self.lost_reason[cid] = reason
            self.lost_said[cid] = said
        self._fail_pending(set(ids))
        for callback in self.on_lost:
            callback(ids)
        if self.parent is not None and not self.parent.closed:
            self.send_value(self.parent_id, DEL_ROUTE, (list(ids), reason))

    def _fail_pending(self, ids):
        with self.lock:
            handles = [h for h, (target, _) in self.pending.items()
                       if target in ids]
            entries = [(h, self.pending.pop(h)) for h in handles]
        for handle, (target, latch) in entries:
            self.handlers.pop(handle, None)
            latch.set(error=self.lost_error(target))

    def lost_error(self, target):
        """The ContextLost that says why context *target* is gone."""
        return ContextLost('context %d is gone: %s' % (
            target, self.lost_reason.get(target, 'context lost')),
            self.lost_said.get(target, ''))

    def decode(self, msg, context_factory=None):
        return codec.decode(msg.data, context_factory)
