"""A TCP relay that counts the bytes between ssh clients and sshd.

    python3 relay.py UPSTREAM_PORT LISTENERS

Listens on LISTENERS ports of 127.0.0.1 (chosen by the kernel) and forwards
every connection to 127.0.0.1:UPSTREAM_PORT (the sshd, or a toxiproxy in
front of it).  run.py gives each inventory host a port of its own, so that
every tool opens one connection per host as it would with real hosts (with
one port, Mitogen and plasmid would share a single connection between all
hosts and vanilla ssh one ControlMaster).

Prints the ports as one line of space-separated numbers once it accepts
connections, then answers each line read on stdin:

    count  ->  "SENT RECEIVED OPEN ACCEPTED"

SENT: bytes from clients to the upstream, RECEIVED: bytes from the upstream
to clients (both cumulative, TCP payload, i.e. ssh's encrypted stream);
OPEN: connections not yet closed on both sides; ACCEPTED: connections so far.
Exits at the end of stdin.  One thread, select-based; bytes are counted as
they are read.
"""
import errno
import os
import selectors
import socket
import sys

CHUNK = 65536
HOST = '127.0.0.1'


class Pipe:
    """One direction of a connection: reads *src*, writes *dst*."""

    def __init__(self, src, dst, counter):
        self.src, self.dst = src, dst
        self.counter = counter          # index into Relay.totals
        self.pending = b''
        self.eof = False                # src said EOF
        self.done = False               # EOF passed on to dst


class Conn:
    def __init__(self, client, upstream):
        self.socks = (client, upstream)
        self.pipes = (Pipe(client, upstream, 0), Pipe(upstream, client, 1))
        self.closed = False


class Relay:
    def __init__(self, upstream_port, listeners):
        self.upstream = (HOST, upstream_port)
        self.sel = selectors.DefaultSelector()
        self.totals = [0, 0]
        self.open = 0
        self.accepted = 0
        self.ports = []
        for _ in range(listeners):
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((HOST, 0))
            sock.listen(256)
            sock.setblocking(False)
            self.ports.append(sock.getsockname()[1])
            self.sel.register(sock, selectors.EVENT_READ, ('listen', sock))
        self.sel.register(sys.stdin.fileno(), selectors.EVENT_READ,
                          ('control', None))
        self.control_buf = b''

    # -- events ---------------------------------------------------------

    def accept(self, listener):
        try:
            client, _ = listener.accept()
        except BlockingIOError:
            return
        upstream = socket.create_connection(self.upstream)
        for sock in (client, upstream):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            sock.setblocking(False)
        conn = Conn(client, upstream)
        self.open += 1
        self.accepted += 1
        self.update(conn)

    def update(self, conn):
        """(Re)register both sockets for what their pipes need now."""
        if conn.closed:
            return
        for pipe in conn.pipes:
            if pipe.eof and not pipe.done and not pipe.pending:
                self.flush(conn, pipe)
        for sock in conn.socks:
            events = 0
            for pipe in conn.pipes:
                if pipe.src is sock and not pipe.eof and not pipe.pending:
                    events |= selectors.EVENT_READ
                if pipe.dst is sock and pipe.pending:
                    events |= selectors.EVENT_WRITE
            try:
                self.sel.unregister(sock)
            except KeyError:
                pass
            if events:
                self.sel.register(sock, events, ('conn', conn))
        if all(p.done for p in conn.pipes):
            self.close(conn)

    def close(self, conn):
        conn.closed = True
        self.open -= 1
        for sock in conn.socks:
            try:
                self.sel.unregister(sock)
            except KeyError:
                pass
            sock.close()

    def service(self, conn, sock, mask):
        if conn.closed:    # both its sockets were ready in one select()
            return
        for pipe in conn.pipes:
            if pipe.src is sock and mask & selectors.EVENT_READ and \
                    not pipe.eof and not pipe.pending:
                try:
                    data = sock.recv(CHUNK)
                except BlockingIOError:
                    data = None
                except OSError:          # reset: the connection is over
                    data = b''
                    self.broken(conn)
                if data == b'':
                    pipe.eof = True
                elif data:
                    self.totals[pipe.counter] += len(data)
                    pipe.pending = data
            if pipe.pending or (pipe.eof and not pipe.done):
                self.flush(conn, pipe)
        self.update(conn)

    def broken(self, conn):
        for pipe in conn.pipes:
            pipe.eof = True
            pipe.pending = b''

    def flush(self, conn, pipe):
        while pipe.pending:
            try:
                sent = pipe.dst.send(pipe.pending)
            except BlockingIOError:
                return
            except OSError:          # the receiver is gone
                self.broken(conn)
                break
            pipe.pending = pipe.pending[sent:]
        if pipe.eof and not pipe.done:
            pipe.done = True
            try:
                pipe.dst.shutdown(socket.SHUT_WR)
            except OSError:
                pass

    def control(self):
        try:
            data = os.read(sys.stdin.fileno(), 4096)
        except OSError as exc:
            if exc.errno == errno.EAGAIN:
                return True
            data = b''
        if not data:
            return False
        self.control_buf += data
        while b'\n' in self.control_buf:
            line, self.control_buf = self.control_buf.split(b'\n', 1)
            if line.strip() == b'count':
                sys.stdout.write('%d %d %d %d\n' % (
                    self.totals[0], self.totals[1], self.open, self.accepted))
                sys.stdout.flush()
        return True

    def run(self):
        sys.stdout.write(' '.join(str(p) for p in self.ports) + '\n')
        sys.stdout.flush()
        while True:
            for key, mask in self.sel.select():
                kind, obj = key.data
                if kind == 'listen':
                    self.accept(obj)
                elif kind == 'control':
                    if not self.control():
                        return
                else:
                    self.service(obj, key.fileobj, mask)


def main():
    Relay(int(sys.argv[1]), int(sys.argv[2])).run()


if __name__ == '__main__':
    main()
