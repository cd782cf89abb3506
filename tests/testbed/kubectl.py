"""A stand-in Kubernetes API server for the kubectl method's tests.

No cluster can run on this machine kind (no images can be fetched, no
kubelet runs), but its image has a real kubectl client (1.32, from the
Google Cloud SDK).  So the client is real and the server pretends, only as
far as ``kubectl exec`` needs one: discovery (``/api``, ``/api/v1``), a
pod's GET, and its ``exec`` subresource over WebSocket with the
``v5.channel.k8s.io`` sub-protocol (kubectl's default since 1.30), with
the API server's answers for a pod or a container that does not exist.
A pod's containers are real: each is a podman container of the test bed,
and an exec runs ``podman exec -i`` there, its stdin closed when kubectl
closes its stream or goes, as a kubelet closes it.

Plain HTTP on loopback, no authentication: ``standin`` writes the
kubeconfig that points kubectl at it.
"""
from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import os
import shutil
import struct
import subprocess
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Iterator, Optional
from urllib.parse import parse_qs, urlsplit

PROTOCOL = 'v5.channel.k8s.io'
WEBSOCKET_GUID = '258EAFA5-E914-47DA-95CA-C5AB0DC85B11'
STDIN, STDOUT, STDERR, STATUS, CLOSE = 0, 1, 2, 3, 255
OP_BINARY, OP_CLOSE, OP_PING, OP_PONG = 0x2, 0x8, 0x9, 0xA


def unavailable_reason() -> Optional[str]:
    if shutil.which('kubectl') is None:
        return 'no kubectl client on this machine'
    return None


@contextlib.contextmanager
def standin(pods: dict, namespace: str = 'default') -> Iterator[str]:
    """Serve *pods* (``{'NAMESPACE/POD': [(container, podman container,
    user), ...]}``, the first container the pod's default); yield the
    path of a kubeconfig whose current context is this server and
    *namespace*."""
    server = ThreadingHTTPServer(('127.0.0.1', 0), _Handler)
    server.daemon_threads = True
    server.pods = pods  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True,
                              name='kubectl-standin')
    thread.start()
    try:
        with tempfile.TemporaryDirectory(prefix='plasmid-kube-') as work:
            config = os.path.join(work, 'kubeconfig')
            with open(config, 'w') as handle:
                json.dump(_kubeconfig(server.server_address[1], namespace),
                          handle)
            os.chmod(work, 0o755)
            yield config
    finally:
        server.shutdown()
        server.server_close()


def _kubeconfig(port: int, namespace: str) -> dict:
    return {
        'apiVersion': 'v1', 'kind': 'Config', 'current-context': 'standin',
        'clusters': [{'name': 'standin', 'cluster': {
            'server': 'http://127.0.0.1:%d' % port}}],
        'users': [{'name': 'standin', 'user': {}}],
        'contexts': [{'name': 'standin', 'context': {
            'cluster': 'standin', 'user': 'standin',
            'namespace': namespace}}],
    }


DISCOVERY = {
    '/api': {'kind': 'APIVersions', 'versions': ['v1']},
    '/apis': {'kind': 'APIGroupList', 'apiVersion': 'v1', 'groups': []},
    '/api/v1': {'kind': 'APIResourceList', 'groupVersion': 'v1',
                'resources': [
                    {'name': 'pods', 'singularName': 'pod', 'kind': 'Pod',
                     'namespaced': True, 'verbs': ['get']},
                    {'name': 'pods/exec', 'singularName': '',
                     'kind': 'PodExecOptions', 'namespaced': True,
                     'verbs': ['create', 'get']}]},
}


def _status(code: int, reason: str, message: str) -> dict:
    return {'kind': 'Status', 'apiVersion': 'v1', 'metadata': {},
            'status': 'Failure', 'message': message, 'reason': reason,
            'code': code}


class _Handler(BaseHTTPRequestHandler):
    protocol_version = 'HTTP/1.1'

    def log_message(self, *args) -> None:
        pass

    def do_GET(self) -> None:
        url = urlsplit(self.path)
        if url.path in DISCOVERY:
            return self._json(200, DISCOVERY[url.path])
        parts = url.path.strip('/').split('/')
        # api/v1/namespaces/NS/pods/POD[/exec]
        if len(parts) not in (6, 7) or parts[:3] != ['api', 'v1',
                                                      'namespaces'] \
                or parts[4] != 'pods':
            return self._json(404, _status(404, 'NotFound', 'the server '
                                           'could not find the requested '
                                           'resource'))
        namespace, pod = parts[3], parts[5]
        containers = self.server.pods.get('%s/%s' % (namespace, pod))
        if containers is None:
            return self._json(404, _status(404, 'NotFound',
                                           'pods "%s" not found' % pod))
        if len(parts) == 6:
            return self._json(200, _pod(namespace, pod, containers))
        if parts[6] != 'exec':
            return self._json(404, _status(404, 'NotFound', 'no such '
                                           'subresource'))
        return self._exec(pod, containers, parse_qs(url.query))

    do_POST = do_GET  # kubectl's fallback to SPDY posts

    def _json(self, code: int, document: dict) -> None:
        body = json.dumps(document).encode()
        self.send_response(code)
        self.send_header('Content-Type', 'application/json')
        self.send_header('Content-Length', str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _exec(self, pod: str, containers: list, query: dict) -> None:
        name = query.get('container', [containers[0][0]])[0]
        chosen = [c for c in containers if c[0] == name]
        if not chosen:
            return self._json(400, _status(400, 'BadRequest', 'container '
                                           '%s is not valid for pod %s'
                                           % (name, pod)))
        if self.headers.get('Upgrade', '').lower() != 'websocket' or \
                PROTOCOL not in self.headers.get('Sec-WebSocket-Protocol',
                                                 ''):
            return self._json(400, _status(400, 'BadRequest', 'this '
                                           'stand-in speaks %s only'
                                           % PROTOCOL))
        self._upgrade()
        _, target, user = chosen[0]
        argv = ['podman', 'exec'] + \
            (['-i'] if query.get('stdin') == ['true'] else []) + \
            ['--user', user, target] + query.get('command', [])
        _Exec(self.rfile, self.wfile, argv).run()
        self.close_connection = True

    def _upgrade(self) -> None:
        key = self.headers['Sec-WebSocket-Key'] + WEBSOCKET_GUID
        self.send_response(101)
        self.send_header('Upgrade', 'websocket')
        self.send_header('Connection', 'Upgrade')
        self.send_header('Sec-WebSocket-Accept', base64.b64encode(
            hashlib.sha1(key.encode()).digest()).decode())
        self.send_header('Sec-WebSocket-Protocol', PROTOCOL)
        self.end_headers()
        self.wfile.flush()


def _pod(namespace: str, pod: str, containers: list) -> dict:
    return {'apiVersion': 'v1', 'kind': 'Pod',
            'metadata': {'name': pod, 'namespace': namespace},
            'spec': {'containers': [{'name': c[0], 'image': 'testbed'}
                                    for c in containers]},
            'status': {'phase': 'Running'}}


class _Exec:
    """One exec: the process's output to kubectl on channels 1 and 2,
    kubectl's stdin to the process until it closes channel 0 or the
    connection, then the exit status on channel 3."""

    def __init__(self, rfile, wfile, argv: list) -> None:
        self.rfile, self.wfile = rfile, wfile
        self.lock = threading.Lock()
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE)

    def run(self) -> None:
        pumps = [threading.Thread(target=self._pump, args=(pipe, channel))
                 for pipe, channel in ((self.proc.stdout, STDOUT),
                                       (self.proc.stderr, STDERR))]
        for pump in pumps:
            pump.start()
        threading.Thread(target=self._read_stdin, daemon=True).start()
        rc = self.proc.wait()
        for pump in pumps:
            pump.join()
        status: dict = {'metadata': {}, 'status': 'Success'}
        if rc != 0:
            status = {'metadata': {}, 'status': 'Failure',
                      'reason': 'NonZeroExitCode',
                      'message': 'command terminated with non-zero exit '
                                 'code: exit status %d' % rc,
                      'details': {'causes': [{'reason': 'ExitCode',
                                              'message': str(rc)}]}}
        with contextlib.suppress(OSError):
            self._send(OP_BINARY, bytes([STATUS]) + json.dumps(
                status).encode())
            self._send(OP_CLOSE, struct.pack('>H', 1000))

    def _send(self, opcode: int, payload: bytes) -> None:
        size = len(payload)
        if size < 126:
            head = struct.pack('>BB', 0x80 | opcode, size)
        elif size < 1 << 16:
            head = struct.pack('>BBH', 0x80 | opcode, 126, size)
        else:
            head = struct.pack('>BBQ', 0x80 | opcode, 127, size)
        with self.lock:
            self.wfile.write(head + payload)

    def _pump(self, pipe, channel: int) -> None:
        try:
            while True:
                data = os.read(pipe.fileno(), 65536)
                if not data:
                    return
                self._send(OP_BINARY, bytes([channel]) + data)
        except OSError:  # kubectl went: the process's stdin ends too
            return

    def _read_stdin(self) -> None:
        try:
            for opcode, data in self._frames():
                if opcode == OP_CLOSE:
                    break
                if opcode == OP_PING:
                    self._send(OP_PONG, data)
                elif data[:1] == bytes([STDIN]) and len(data) > 1:
                    self.proc.stdin.write(data[1:])
                    self.proc.stdin.flush()
                elif data == bytes([CLOSE, STDIN]):
                    break
        except (OSError, ValueError):
            pass
        finally:
            with contextlib.suppress(OSError):
                self.proc.stdin.close()

    def _frames(self) -> Iterator[tuple]:
        """kubectl's WebSocket frames (masked, as a client's are); ends
        when the connection does."""
        while True:
            head = self._read(2)
            if head is None:
                return
            opcode, size = head[0] & 0x0F, head[1] & 0x7F
            if size == 126:
                size = struct.unpack('>H', self._read(2) or b'\0\0')[0]
            elif size == 127:
                size = struct.unpack('>Q', self._read(8) or bytes(8))[0]
            mask = self._read(4) if head[1] & 0x80 else bytes(4)
            data = self._read(size) if size else b''
            if mask is None or data is None:
                return
            yield opcode, bytes(b ^ mask[i % 4] for i, b in enumerate(data))

    def _read(self, size: int) -> Optional[bytes]:
        data = self.rfile.read(size)
        return data if len(data) == size else None
