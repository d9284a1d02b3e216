"""Hostile HTTP servers for the tests: real sockets on 127.0.0.1, not a mock of urllib.

Each behaviour is a handler for :class:`tests.prometheus_server.Endpoint` (a real
``ThreadingHTTPServer``): redirects, gzip bombs, oversized and endless bodies, a byte drip,
corrupt and truncated gzip, text with control characters, secrets echoed back. An HTTPS
endpoint serves a self-signed certificate made with ``openssl`` for the downgrade test.
"""

from __future__ import annotations

import contextlib
import gzip
import http.server
import ssl
import subprocess
import time
import zlib
from collections.abc import Callable
from pathlib import Path

from tests.prometheus_server import Endpoint

REPO = Path(__file__).resolve().parent.parent
#: A real node_exporter exposition (provenance in tests/fixtures/SOURCES.md).
EXPORTER_TEXT = (REPO / "tests/fixtures/prometheus/e2e-output.infiniband.prom").read_bytes()

Handler = Callable[[http.server.BaseHTTPRequestHandler], None]


def _is_metrics(h: http.server.BaseHTTPRequestHandler) -> bool:
    return h.path.split("?", 1)[0] == "/metrics"


def not_found(h: http.server.BaseHTTPRequestHandler) -> None:
    """404 with an empty body (the buildinfo probe of an exporter)."""
    h.send_response(404)
    h.send_header("Content-Length", "0")
    h.end_headers()


def exporter(h: http.server.BaseHTTPRequestHandler) -> None:
    """A well-behaved exporter: the real exposition at ``/metrics``."""
    if not _is_metrics(h):
        not_found(h)
        return
    exposition(h)


def exposition(h: http.server.BaseHTTPRequestHandler) -> None:
    """The real exposition, whatever the path."""
    h.send_response(200)
    h.send_header("Content-Type", "text/plain; version=0.0.4")
    h.send_header("Content-Length", str(len(EXPORTER_TEXT)))
    h.end_headers()
    h.wfile.write(EXPORTER_TEXT)


def redirect_to(location: str, status: int = 302) -> Handler:
    """``/metrics`` answers ``status`` with ``Location: location``; other paths 404."""

    def handle(h: http.server.BaseHTTPRequestHandler) -> None:
        if not _is_metrics(h):
            not_found(h)
            return
        h.send_response(status)
        h.send_header("Location", location)
        h.send_header("Content-Length", "0")
        h.end_headers()

    return handle


def body(payload: bytes, *, encoding: str | None = None, length: int | None = None) -> Handler:
    """``/metrics`` answers 200 with ``payload`` (and a Content-Encoding, a declared length)."""

    def handle(h: http.server.BaseHTTPRequestHandler) -> None:
        if not _is_metrics(h):
            not_found(h)
            return
        h.send_response(200)
        h.send_header("Content-Type", "text/plain; version=0.0.4")
        if encoding:
            h.send_header("Content-Encoding", encoding)
        h.send_header("Content-Length", str(len(payload) if length is None else length))
        h.end_headers()
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            h.wfile.write(payload)

    return handle


def endless(h: http.server.BaseHTTPRequestHandler) -> None:
    """``/metrics`` sends comment lines without end and without a Content-Length, until the client leaves."""
    if not _is_metrics(h):
        not_found(h)
        return
    h.send_response(200)
    h.send_header("Content-Type", "text/plain; version=0.0.4")
    h.end_headers()
    line = b"# " + b"x" * 1022 + b"\n"
    try:
        for _ in range(1 << 20):  # at most 1 GiB: the test fails long before, never hangs forever
            h.wfile.write(line * 64)
    except (BrokenPipeError, ConnectionResetError):
        pass


def drip(every_s: float, bytes_total: int = 120) -> Handler:
    """``/metrics`` sends its headers, then one byte every ``every_s`` seconds."""

    def handle(h: http.server.BaseHTTPRequestHandler) -> None:
        if not _is_metrics(h):
            not_found(h)
            return
        h.send_response(200)
        h.send_header("Content-Type", "text/plain; version=0.0.4")
        h.send_header("Content-Length", str(bytes_total))
        h.end_headers()
        try:
            for _ in range(bytes_total):
                h.wfile.write(b"#")
                h.wfile.flush()
                time.sleep(every_s)
        except (BrokenPipeError, ConnectionResetError):
            pass

    return handle


def slow_headers(every_s: float, total_s: float = 300.0) -> Handler:
    """Every path gets its status line and headers one byte every ``every_s`` seconds, for ``total_s`` at most.

    The header is one long value, so the client's line and header-count limits never end it:
    only a deadline over the whole exchange does. The drip stops as soon as the client leaves.
    """

    def handle(h: http.server.BaseHTTPRequestHandler) -> None:
        length = int(h.headers.get("Content-Length") or 0)
        if length:
            h.rfile.read(length)
        head = b"HTTP/1.1 200 OK\r\nX-Slow: " + b"x" * max(1, int(total_s / every_s))
        try:
            for i in range(len(head)):
                h.wfile.write(head[i : i + 1])
                h.wfile.flush()
                time.sleep(every_s)
        except (BrokenPipeError, ConnectionResetError):
            pass
        h.close_connection = True

    return handle


def cut_short(payload: bytes, sent: int) -> Handler:
    """``/metrics`` declares ``len(payload)`` bytes (Content-Length), sends the first ``sent`` and closes."""

    def handle(h: http.server.BaseHTTPRequestHandler) -> None:
        if not _is_metrics(h):
            not_found(h)
            return
        h.send_response(200)
        h.send_header("Content-Type", "text/plain; version=0.0.4")
        h.send_header("Content-Length", str(len(payload)))
        h.end_headers()
        h.wfile.write(payload[:sent])
        h.close_connection = True

    return handle


def chunked_cut_short(payload: bytes, sent: int) -> Handler:
    """``/metrics`` sends the first ``sent`` bytes of ``payload`` as one chunk, then closes without the last chunk."""

    def handle(h: http.server.BaseHTTPRequestHandler) -> None:
        if not _is_metrics(h):
            not_found(h)
            return
        h.protocol_version = "HTTP/1.1"  # chunked transfer coding is HTTP/1.1's
        h.send_response(200)
        h.send_header("Content-Type", "text/plain; version=0.0.4")
        h.send_header("Transfer-Encoding", "chunked")
        h.end_headers()
        h.wfile.write(b"%x\r\n%s\r\n" % (sent, payload[:sent]))
        h.close_connection = True

    return handle


def error(status: int, text: bytes) -> Handler:
    """Every path answers ``status`` with ``text`` as its body."""

    def handle(h: http.server.BaseHTTPRequestHandler) -> None:
        h.send_response(status)
        h.send_header("Content-Type", "text/plain")
        h.send_header("Content-Length", str(len(text)))
        h.end_headers()
        h.wfile.write(text)

    return handle


def gzip_bomb(expanded_bytes: int) -> bytes:
    """A gzip member of ``expanded_bytes`` zero bytes (about 1/1000 of that compressed)."""
    c = zlib.compressobj(9, zlib.DEFLATED, 31)
    block = bytes(1 << 20)
    parts = [c.compress(block) for _ in range(expanded_bytes >> 20)]
    parts.append(c.flush())
    return b"".join(parts)


def gzipped(data: bytes) -> bytes:
    """``data`` as one gzip member."""
    return gzip.compress(data)


class HttpsEndpoint(Endpoint):
    """An :class:`Endpoint` over TLS with a self-signed certificate for 127.0.0.1 (made with openssl)."""

    def __init__(self, handle: Handler, workdir: Path) -> None:
        super().__init__(handle)
        cert, key = workdir / "cert.pem", workdir / "key.pem"
        subprocess.run(
            [
                "openssl",
                "req",
                "-x509",
                "-newkey",
                "rsa:2048",
                "-nodes",
                "-days",
                "1",
                "-subj",
                "/CN=127.0.0.1",
                "-addext",
                "subjectAltName=IP:127.0.0.1",
                "-keyout",
                str(key),
                "-out",
                str(cert),
            ],
            check=True,
            capture_output=True,
        )
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert, key)
        self.httpd.socket = context.wrap_socket(self.httpd.socket, server_side=True)
        self.url = self.url.replace("http://", "https://")
        self.ca_file = cert


class QueryApi:
    """A minimal Prometheus HTTP API over a list of samples the test changes between runs.

    It answers what a pull asks (``/api/v1/status/buildinfo``, the ``__name__`` label values,
    ``/api/v1/query`` with a range selector), refuses remote read (404, so the pull goes through
    the query API, as with Thanos or VictoriaMetrics) and returns the samples stored at the time
    of each request: a sample added later arrives late, as from remote-write or federation lag.
    ``gate``, when set, holds each query until the test releases it (``arrived`` is set first).
    """

    def __init__(self, metric: str, labels: dict[str, str]) -> None:
        import threading

        self.metric, self.labels = metric, labels
        self.samples: list[tuple[int, str]] = []  # (ms since the epoch, value text)
        self.gate: threading.Event | None = None
        self.arrived = threading.Event()

    def _json(self, h: http.server.BaseHTTPRequestHandler, doc: object) -> None:
        import json

        payload = json.dumps(doc).encode()
        h.send_response(200)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Length", str(len(payload)))
        h.end_headers()
        h.wfile.write(payload)

    def __call__(self, h: http.server.BaseHTTPRequestHandler) -> None:
        import re
        import urllib.parse

        path, _, query = h.path.partition("?")
        if h.command == "POST":
            length = int(h.headers.get("Content-Length") or 0)
            query = h.rfile.read(length).decode("latin-1") if path == "/api/v1/query" else ""
        form = dict(urllib.parse.parse_qsl(query))
        if path == "/api/v1/status/buildinfo":
            self._json(h, {"status": "success", "data": {"version": "2.45.0"}})
        elif path == "/api/v1/label/__name__/values":
            self._json(h, {"status": "success", "data": [self.metric]})
        elif path == "/api/v1/query":
            self.arrived.set()
            if self.gate is not None:
                self.gate.wait(60)
            # {__name__=~"..."}[Nms] at time T: the samples in (T - N, T].
            span = re.search(r"\[(\d+)ms\]$", form.get("query", ""))
            end_ms = round(float(form["time"]) * 1000)
            start_ms = end_ms - int(span.group(1)) if span else end_ms
            values = [[t / 1000, v] for t, v in sorted(self.samples) if start_ms < t <= end_ms]
            result = [{"metric": {"__name__": self.metric, **self.labels}, "values": values}] if values else []
            self._json(h, {"status": "success", "data": {"resultType": "matrix", "result": result}})
        else:
            not_found(h)


def failing_query_api(metric: str, status: int, doc: object) -> Handler:
    """A Prometheus server whose probe and label values succeed and whose every query fails.

    ``/api/v1/status/buildinfo`` and the ``__name__`` label values answer as a server does,
    remote read is refused (404: the pull goes through ``/api/v1/query``), and each query
    answers ``status`` with ``doc`` as JSON: a 422 or 503 with Prometheus's error document, or a
    ``200`` carrying ``{"status":"error"}`` as a broken proxy sends it.
    """
    import json

    def send(h: http.server.BaseHTTPRequestHandler, code: int, payload: object) -> None:
        data = json.dumps(payload).encode()
        h.send_response(code)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Length", str(len(data)))
        h.end_headers()
        h.wfile.write(data)

    def handle(h: http.server.BaseHTTPRequestHandler) -> None:
        length = int(h.headers.get("Content-Length") or 0)
        if length:
            h.rfile.read(length)
        path = h.path.split("?", 1)[0]
        if path == "/api/v1/status/buildinfo":
            send(h, 200, {"status": "success", "data": {"version": "2.45.0"}})
        elif path == "/api/v1/label/__name__/values":
            send(h, 200, {"status": "success", "data": [metric]})
        elif path == "/api/v1/query":
            send(h, status, doc)
        else:
            not_found(h)

    return handle


def oversized_query_api(metric: str, body_bytes: int, *, declared: bool) -> Handler:
    """A Prometheus server whose every query answers ``body_bytes`` of JSON, whatever its range.

    The probe and the label values succeed and remote read is refused (404). The answer is a
    valid document padded with whitespace; ``declared`` sends its Content-Length, else it is sent
    chunked (as Prometheus sends a large answer), so the client finds its size only by reading.
    """
    import json

    def send(h: http.server.BaseHTTPRequestHandler, payload: bytes) -> None:
        h.send_response(200)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Length", str(len(payload)))
        h.end_headers()
        h.wfile.write(payload)

    head = b'{"status":"success","data":{"resultType":"matrix","result":[]}}'
    answer = head + b" " * max(0, body_bytes - len(head))

    def handle(h: http.server.BaseHTTPRequestHandler) -> None:
        length = int(h.headers.get("Content-Length") or 0)
        if length:
            h.rfile.read(length)
        path = h.path.split("?", 1)[0]
        if path == "/api/v1/status/buildinfo":
            send(h, json.dumps({"status": "success", "data": {"version": "2.45.0"}}).encode())
        elif path == "/api/v1/label/__name__/values":
            send(h, json.dumps({"status": "success", "data": [metric]}).encode())
        elif path != "/api/v1/query":
            not_found(h)
        elif declared:
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                send(h, answer)
        else:
            h.protocol_version = "HTTP/1.1"  # chunked transfer coding is HTTP/1.1's
            h.send_response(200)
            h.send_header("Content-Type", "application/json")
            h.send_header("Transfer-Encoding", "chunked")
            h.end_headers()
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                for i in range(0, len(answer), 1 << 16):
                    piece = answer[i : i + (1 << 16)]
                    h.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
                h.wfile.write(b"0\r\n\r\n")
            h.close_connection = True

    return handle
