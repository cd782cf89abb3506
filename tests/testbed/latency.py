"""Add network latency between a client and a local server with toxiproxy.

Each LatencyProxy runs its own toxiproxy server (API on a free loopback
port), so tests never share or leak proxy state.  Talks to the API with
urllib to avoid a client library dependency.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from typing import Any, Optional

from .ports import LOOPBACK, free_port
from .procs import start_reaped, stop_reaped

PROXY_NAME = "plasmid-latency"
START_TIMEOUT = 10.0
ATTEMPTS = 3  # free_port() is racy: retry when a port was taken meanwhile


class ToxiproxyMissing(RuntimeError):
    """No toxiproxy server binary; tests should pytest.skip(str(exc))."""


class ToxiproxyError(RuntimeError):
    """toxiproxy is there but would not start or accept the proxy."""


def find_toxiproxy() -> Optional[str]:
    """$TOXIPROXY_SERVER, toxiproxy-server on PATH, or `go install`'s ~/go/bin/server."""
    candidates = [
        os.environ.get("TOXIPROXY_SERVER", ""),
        shutil.which("toxiproxy-server") or "",
        os.path.expanduser("~/go/bin/server"),
        "/root/go/bin/server",
    ]
    for path in candidates:
        if path and os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    return None


class LatencyProxy:
    """Listens on 127.0.0.1:.port, forwards to upstream, delaying each way."""

    def __init__(self, upstream_port: int, latency_ms: int,
                 upstream_host: str = LOOPBACK, server_path: Optional[str] = None) -> None:
        self.server_path = server_path or find_toxiproxy()
        if self.server_path is None:
            raise ToxiproxyMissing(
                "toxiproxy server not found (go install "
                "github.com/Shopify/toxiproxy/v2/cmd/server@v2.5.0, or run .ci/setup)")
        self.upstream = f"{upstream_host}:{upstream_port}"
        self.latency_ms = latency_ms
        self.host = LOOPBACK
        self.port = 0
        self.api_port = 0
        self._proc: Optional[subprocess.Popen] = None
        self._log = None

    def __enter__(self) -> "LatencyProxy":
        try:
            self._start_server()
            self._create_proxy()
            for stream in ("upstream", "downstream"):
                self._add_latency(stream)
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        self._kill_server()
        if self._log is not None:
            self._log.close()
            self._log = None

    # -- server ----------------------------------------------------------

    def _start_server(self) -> None:
        # The server logs every connection; keep it for error messages only.
        self._log = tempfile.TemporaryFile()
        for _ in range(ATTEMPTS):
            self.api_port = free_port()
            self._proc = start_reaped(
                [self.server_path, "-host", LOOPBACK, "-port", str(self.api_port)],
                stdin=subprocess.DEVNULL, stdout=self._log, stderr=self._log,
            )
            if self._wait_api():
                return
            self._kill_server()
        raise ToxiproxyError(f"toxiproxy did not start:\n{self._read_log()}")

    def _kill_server(self) -> None:
        if self._proc is not None:
            stop_reaped(self._proc)
            self._proc = None

    def _wait_api(self) -> bool:
        """True once the API answers; False if the server died (port taken)."""
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                return False
            try:
                self._api("GET", "/version")
                return True
            except (OSError, ToxiproxyError):
                time.sleep(0.05)
        return False

    def _read_log(self) -> str:
        if self._log is None:
            return ""
        self._log.seek(0)
        return self._log.read().decode(errors="replace")

    # -- API -------------------------------------------------------------

    def _api(self, method: str, path: str, body: Optional[dict] = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(
            f"http://{LOOPBACK}:{self.api_port}{path}", data=data, method=method,
            headers={"Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(req, timeout=5) as resp:
                raw = resp.read()
                is_json = resp.headers.get_content_type() == "application/json"
        except urllib.error.HTTPError as exc:
            raise ToxiproxyError(f"{method} {path}: {exc.code} {exc.read().decode(errors='replace')}")
        # /version answers plain text; everything else JSON.
        return json.loads(raw) if is_json and raw.strip() else raw.decode()

    def _create_proxy(self) -> None:
        for _ in range(ATTEMPTS):
            self.port = free_port()
            try:
                self._api("POST", "/proxies", {
                    "name": PROXY_NAME,
                    "listen": f"{LOOPBACK}:{self.port}",
                    "upstream": self.upstream,
                    "enabled": True,
                })
                return
            except ToxiproxyError as exc:
                last = exc  # most likely the listen port was taken
        raise last

    def _add_latency(self, stream: str) -> None:
        self._api("POST", f"/proxies/{PROXY_NAME}/toxics", {
            "name": f"latency-{stream}",
            "type": "latency",
            "stream": stream,
            "toxicity": 1.0,
            "attributes": {"latency": self.latency_ms, "jitter": 0},
        })

    def blackhole(self) -> None:
        """From now on, drop everything in both directions without closing
        a connection: a link that died without a word."""
        for stream in ("upstream", "downstream"):
            self._api("POST", f"/proxies/{PROXY_NAME}/toxics", {
                "name": f"blackhole-{stream}",
                "type": "timeout",
                "stream": stream,
                "toxicity": 1.0,
                "attributes": {"timeout": 0},
            })

    def restore(self) -> None:
        """Undo blackhole(): new connections pass again."""
        toxics = self._api("GET", f"/proxies/{PROXY_NAME}/toxics")
        for toxic in toxics:
            if toxic["name"].startswith("blackhole-"):
                self._api("DELETE",
                          f"/proxies/{PROXY_NAME}/toxics/{toxic['name']}")
