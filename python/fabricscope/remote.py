"""Reading counters over HTTP: a Prometheus server's API and live exporter endpoints.

A URL is read like a path (:func:`fabricscope.load`, ``fabricscope analyze URL``):

* a **Prometheus server** (recognised by answering ``/api/v1/status/buildinfo``) is asked for
  exactly the series the counter vocabulary knows (``node_infiniband_*``, ``node_ethtool_*``
  including per-priority pause and RoCE hardware counters, ``DCGM_FI_*``, infiniband_exporter's
  names, and their exporters' ``*_info`` series), over ``[since, until)`` in time chunks. By
  default each chunk is one remote read request (``POST /api/v1/read``, snappy-compressed
  protobuf), which returns every stored sample with its own timestamp and raw value: no
  resampling and no ``rate()``, so resets, wraps and saturation are judged from what the
  exporter reported. A server without remote read (404, 405, 501) is asked through range
  selectors (``{__name__=~"..."}[15m]`` on ``/api/v1/query``: the same samples as JSON, about
  4x slower); ``api="query"`` asks for that directly. With a ``step`` the pull uses
  ``/api/v1/query_range`` (values resampled onto the step grid);
* any other URL is an **exporter endpoint** (``http://node:9100/metrics``), scraped ``repeat``
  times ``interval_s`` apart.

The protobuf, JSON and exposition text are decoded in Rust (the ``prometheus-remote-read``,
``prometheus-api``, ``prometheus`` and ``openmetrics`` readers) into the canonical samples
table, so every detector works unchanged. The rows' ``source`` names that reader.

Credentials (bearer token, basic auth, header values) are sent, never logged: messages and
reports name the URL without its user info or query string.
"""

from __future__ import annotations

import base64
import concurrent.futures as _futures
import contextlib
import datetime as _dt
import http.client
import io
import json
import logging
import re
import socket
import ssl
import time as _time
import urllib.error
import urllib.parse
import urllib.request
import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import polars as pl

from fabricscope import _native
from fabricscope.exceptions import LimitExceededError, RemoteError
from fabricscope.redaction import redact_text, redact_url

__all__ = [
    "APIS",
    "Connection",
    "HttpClient",
    "RemoteError",
    "RemoteOptions",
    "is_url",
    "load_url",
    "probe",
    "redact",
    "scan_url",
]

_log = logging.getLogger("fabricscope")
# Security warnings (certificates not verified, credentials over plain HTTP) are shown even when
# the command line logs only errors: this logger's own level lets them through to the handlers.
_security_log = logging.getLogger("fabricscope.security")
_security_log.setLevel(logging.WARNING)

#: Default pull range when no ``since`` is given: the last hour (fabricscope default: what an
#: operator asks "what is the fabric doing now?" about, and a few dozen scrapes per series).
DEFAULT_RANGE_S = 3600
#: Samples one response should hold (fabricscope default: ~40 MB of JSON, well under the
#: 256 MiB ``max_document_bytes`` and Prometheus's 50 M ``--query.max-samples``).
TARGET_SAMPLES_PER_RESPONSE = 500_000
#: First chunk of a pull, before the sample density is known (fabricscope default).
FIRST_CHUNK_S = 900
#: Chunk bounds (fabricscope default: at least one scrape, at most one day per request).
MIN_CHUNK_S, MAX_CHUNK_S = 1, 86_400
#: How a server is asked: ``read`` (remote read, raw samples as protobuf), ``query`` (range
#: selectors on ``/api/v1/query``, raw samples as JSON), ``query_range`` (resampled to a step).
APIS = ("read", "query", "query_range")
#: Statuses that say a server has no remote read endpoint (Thanos Query, VictoriaMetrics, some
#: proxies): the pull goes on through ``/api/v1/query``.
_NO_REMOTE_READ = (404, 405, 501)
#: Redirects one request follows (fabricscope default: a server behind a proxy or a load
#: balancer redirects once or twice; curl's ``--max-redirs`` default is 50, requests' 30).
MAX_REDIRECTS = 5
#: Largest response body, before and after gzip, when the reader limits name none: the readers'
#: ``max_document_bytes`` default (a response is decoded as one document).
DEFAULT_MAX_BODY_BYTES = 256 << 20
#: Default overall deadline of one pull or scrape series (fabricscope default: the longest pull
#: measured in BENCHMARKS.md, 10^8 samples, takes well under 10 minutes on one core).
DEFAULT_DEADLINE_S = 3600.0
# Bytes asked of the socket per read: small enough that the byte budget and the deadline are
# checked often, large enough that a 256 MiB body takes a few thousand reads.
_READ_BYTES = 1 << 16
_REDIRECTS = frozenset({301, 302, 303, 307, 308})
# The redirects that repeat a request with its method and body (RFC 9110 sections 15.4.8, 15.4.9).
_REPEATS_POST = frozenset({307, 308})


def is_url(source: object) -> bool:
    """Whether an input names an HTTP(S) source rather than a path.

    Example:
        >>> from fabricscope.remote import is_url
        >>> is_url("http://prometheus:9090"), is_url("sample_traces/prometheus")
        (True, False)
    """
    return isinstance(source, str) and source.lower().startswith(("http://", "https://"))


def redact(url: str) -> str:
    """The URL as it may be shown: no user info, no query string, no fragment.

    The one redaction every output uses (:func:`fabricscope.redaction.redact_url`).

    Example:
        >>> from fabricscope.remote import redact
        >>> redact("https://admin:s3cret@prom.example:9090/api?token=x")
        'https://prom.example:9090/api'
    """
    return redact_url(url)


@dataclass(frozen=True)
class Connection:
    """How to talk to a server: authentication, TLS, timeouts, retries, parallelism.

    Attributes:
        headers: Extra request headers as ``(name, value)`` pairs (``--prometheus-header``).
        bearer_token_file: A file holding a bearer token (sent as ``Authorization: Bearer``).
        basic_auth_file: A file holding ``user:password`` on its first line.
        ca_file: A PEM CA bundle to verify the server with.
        insecure: Do not verify TLS certificates.
        timeout_s: Seconds any one socket operation may wait (connect, each read).
        deadline_s: Seconds one pull (or one series of scrapes) may take in all, retries and
            redirects included; None: no overall deadline.
        retries: Extra attempts after a timeout, a refused connection, 429 or a 5xx status.
        backoff_s: First wait between attempts; doubled each retry.
        concurrency: Most requests in flight at once.
    """

    headers: tuple[tuple[str, str], ...] = ()
    bearer_token_file: str | None = None
    basic_auth_file: str | None = None
    ca_file: str | None = None
    insecure: bool = False
    timeout_s: float = 30.0
    deadline_s: float | None = DEFAULT_DEADLINE_S
    retries: int = 3
    backoff_s: float = 0.5
    concurrency: int = 4

    def _secrets_and_headers(self, url: str) -> tuple[dict[str, str], list[str]]:
        headers = {"User-Agent": f"fabricscope/{_native.__version__}", "Accept-Encoding": "gzip"}
        secrets: list[str] = []
        # Where each credential header came from, for a message that names it and not its value.
        origin_of: dict[str, str] = {}
        # User info in the URL is the weakest: an explicit token or auth file replaces it.
        p = urllib.parse.urlsplit(url)
        if p.username or p.password:
            user = urllib.parse.unquote(p.username or "")
            password = urllib.parse.unquote(p.password or "")
            encoded = base64.b64encode(f"{user}:{password}".encode()).decode()
            headers["Authorization"] = "Basic " + encoded
            origin_of["Authorization"] = "user info of the URL"
            secrets.extend([password, p.password or "", encoded])
        for name, value in self.headers:
            headers[name] = value
            origin_of[name] = f"--prometheus-header {name}"
            secrets.append(value)
        if self.bearer_token_file:
            token = _read_secret(self.bearer_token_file, url, "bearer token file")
            headers["Authorization"] = f"Bearer {token}"
            origin_of["Authorization"] = f"bearer token file {self.bearer_token_file}"
            secrets.append(token)
        if self.basic_auth_file:
            pair = _read_secret(self.basic_auth_file, url, "basic auth file").splitlines()[0]
            if ":" not in pair:
                raise RemoteError(redact(url), None, "the basic auth file must hold `user:password` on its first line")
            encoded = base64.b64encode(pair.encode()).decode()
            headers["Authorization"] = "Basic " + encoded
            origin_of["Authorization"] = f"basic auth file {self.basic_auth_file}"
            secrets.extend([pair, pair.split(":", 1)[1], encoded])
        for name, value in headers.items():
            # http.client refuses a header value with a line break (ValueError quoting the value:
            # the secret) and latin-1 is all a header carries: refused here, naming the source.
            if re.search(r"[\x00-\x08\x0a-\x1f\x7f]", value) or not value.isascii():
                what = origin_of.get(name, f"header {name}")
                raise RemoteError(
                    redact(url),
                    None,
                    f"the {what} holds a line break, a control or a non-ASCII character: "
                    "expected one line of printable ASCII for the HTTP header",
                )
        return headers, [s for s in secrets if s]

    def _ssl_context(self) -> ssl.SSLContext:
        ctx = ssl.create_default_context(cafile=self.ca_file)
        if self.insecure:
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
        return ctx


def _read_secret(path: str, url: str, what: str) -> str:
    try:
        value = Path(path).read_text(encoding="utf-8").strip()
    except OSError as e:
        # The file's path is not secret; its content is never shown.
        raise RemoteError(redact(url), None, f"cannot read the {what} {path}: {e.strerror}") from None
    if not value:
        raise RemoteError(redact(url), None, f"the {what} {path} is empty")
    return value


@dataclass(frozen=True)
class RemoteOptions:
    """What to pull from a URL.

    Attributes:
        since: Start of the range (ns since the epoch, UTC); None: ``until`` minus one hour.
        until: End of the range, exclusive (ns); None: now.
        match: Label matchers every pulled series must satisfy, ANDed (``job="node"``,
            ``{instance=~"gpu0.*"}``).
        step_s: Pull through ``query_range`` with this step (seconds) instead of raw samples.
        api: ``read``, ``query`` or ``query_range`` (see :data:`APIS`); None: ``query_range``
            with a ``step_s``, else ``read``, falling back to ``query`` on a server without
            remote read.
        chunk_s: Fixed chunk length (seconds); None adapts it to hold about
            :data:`TARGET_SAMPLES_PER_RESPONSE` samples per response.
        repeat: Exporter endpoints: scrapes to take.
        interval_s: Exporter endpoints: seconds between scrapes.
        connection: Authentication, TLS, timeouts, retries, concurrency.
        progress: Called as ``progress(done, total, samples)`` while pulling.
    """

    since: int | None = None
    until: int | None = None
    match: tuple[str, ...] = ()
    step_s: float | None = None
    chunk_s: float | None = None
    repeat: int = 1
    interval_s: float = 10.0
    connection: Connection = field(default_factory=Connection)
    #: Called as ``progress(done, total, samples)`` while pulling (a progress bar).
    progress: Callable[[int, int, int], None] | None = field(default=None, compare=False)
    api: str | None = None

    def with_range(self, since: int | None, until: int | None) -> RemoteOptions:
        """These options with ``since``/``until`` filled in where they are unset."""
        return replace(self, since=self.since if self.since is not None else since, until=self.until or until)

    def window(self, now_ns: int | None = None) -> tuple[int, int]:
        """The pull range ``[since, until)`` in ns, defaults applied."""
        until = self.until if self.until is not None else (now_ns or _time.time_ns())
        since = self.since if self.since is not None else until - DEFAULT_RANGE_S * 1_000_000_000
        if since >= until:
            raise ValueError(f"empty time range: since {_iso(since)} is not before until {_iso(until)}")
        return since, until

    def server_api(self) -> str:
        """The API a server pull uses first (``read``, ``query`` or ``query_range``)."""
        if self.api is not None and self.api not in APIS:
            raise ValueError(f"unknown Prometheus API {self.api!r}: expected one of {', '.join(APIS)}")
        if self.step_s is not None:
            if self.api not in (None, "query_range"):
                raise ValueError(f"a step resamples through query_range: it cannot be used with api={self.api!r}")
            return "query_range"
        if self.api == "query_range":
            raise ValueError("api='query_range' needs a step (step_s, --step)")
        return self.api or "read"


def _iso(ns: int) -> str:
    return _dt.datetime.fromtimestamp(ns / 1e9, tz=_dt.timezone.utc).isoformat().replace("+00:00", "Z")


class _AttemptFailedError(Exception):
    """One attempt failed: the status (None without a response), a safe message, retry or not."""

    def __init__(
        self,
        status: int | None,
        message: str,
        retry: bool,
        *,
        over_budget: bool = False,
        body_bytes: int | None = None,
    ) -> None:
        super().__init__(message)
        self.status, self.message, self.retry, self.over_budget = status, message, retry, over_budget
        # The size an answer beyond the budget declared (its Content-Length), when it declared one.
        self.body_bytes = body_bytes


class _BodyTooLargeError(RemoteError):
    """An answer beyond the byte budget (``max_document_bytes``), refused without being held.

    Attributes:
        body_bytes: The size the answer declared (its Content-Length), or None when it declared
            none (a chunked or gzip body found to outgrow the budget while read).
    """

    def __init__(self, url: str, status: int | None, message: str, body_bytes: int | None) -> None:
        super().__init__(url, status, message)
        self.message, self.body_bytes = message, body_bytes


# URLs already warned about (insecure TLS, credentials over http) in this process.
_WARNED: set[str] = set()


class _RefuseRedirects(urllib.request.HTTPRedirectHandler):
    # Redirects come back as HTTPError and are followed by HttpClient, which re-checks each hop.
    def redirect_request(self, *args: object, **kwargs: object) -> None:
        return None


def _origin(url: str) -> tuple[str, str, int | None]:
    p = urllib.parse.urlsplit(url)
    scheme = p.scheme.lower()
    return scheme, (p.hostname or "").lower(), p.port or {"http": 80, "https": 443}.get(scheme)


class _Gunzip:
    """Incremental gzip decoding into one buffer that never receives more than ``limit`` bytes in all."""

    # Bytes asked of the decoder per call: a bomb's 64 KiB of input never becomes one huge piece.
    _PIECE = 1 << 20

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.produced = 0
        self.decoder = zlib.decompressobj(16 + zlib.MAX_WBITS)

    def feed(self, data: bytes, sink: io.BytesIO) -> None:
        """Write what ``data`` decodes to into ``sink``.

        Raises:
            _AttemptFailedError: beyond the limit, or corrupt data.
        """
        try:
            while data:
                # At most one byte beyond the budget is ever produced: a bomb is stopped there.
                out = self.decoder.decompress(data, min(self._PIECE, self.limit - self.produced + 1))
                self.produced += len(out)
                if self.produced > self.limit:
                    raise _AttemptFailedError(
                        200,
                        f"the gzip body decompresses to more than {self.limit} bytes "
                        "(max_document_bytes; raise it with --limit max_document_bytes=N)",
                        False,
                        over_budget=True,
                    )
                sink.write(out)
                if self.decoder.eof and self.decoder.unused_data:
                    # A gzip file may hold several members, one after the other.
                    data = self.decoder.unused_data
                    self.decoder = zlib.decompressobj(16 + zlib.MAX_WBITS)
                else:
                    data = self.decoder.unconsumed_tail
        except zlib.error as e:
            raise _AttemptFailedError(
                200, f"expected a gzip body (Content-Encoding: gzip), found corrupt data ({e})", False
            ) from None

    def finish(self) -> None:
        """Raise :class:`_AttemptFailedError` when the body ended inside a gzip member."""
        if not self.decoder.eof:
            raise _AttemptFailedError(200, "the gzip body is truncated (it ended inside a compressed member)", False)


class _DeadlineReachedError(Exception):
    """The client's deadline passed in the middle of an exchange (turned into a RemoteError naming it)."""


class _DeadlineReader(io.RawIOBase):
    """A socket's reads, each waiting at most what the client allows: ``timeout_s``, or less near the deadline.

    http.client reads the status line, the headers and the body through this, so a server that
    sends any of them one byte at a time cannot outlive the deadline.
    """

    def __init__(self, raw: io.RawIOBase, sock: socket.socket, client: HttpClient) -> None:
        super().__init__()
        self._raw, self._sock, self._client = raw, sock, client

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int | None:  # type: ignore[override]
        with self._client._bounded(self._sock):
            return self._raw.readinto(buffer)

    def close(self) -> None:
        self._raw.close()  # releases the socket's file reference, as socket.makefile's own would
        super().close()


class _DeadlineSocket:
    """A connected socket whose sends and reads end at the client's deadline (see :class:`_DeadlineReader`)."""

    def __init__(self, sock: socket.socket, client: HttpClient) -> None:
        self._sock, self._client = sock, client

    def makefile(self, mode: str = "r", buffering: int | None = None, **_kwargs: object) -> io.BufferedReader:
        # http.client asks for "rb" only: the response is read through a buffer over bounded reads.
        raw = self._sock.makefile("rb", buffering=0)
        return io.BufferedReader(_DeadlineReader(raw, self._sock, self._client))  # type: ignore[arg-type]

    def sendall(self, data: bytes, *args: int) -> None:
        # A socket's timeout bounds the whole sendall (not each send): a server that reads the
        # request slowly is bounded too.
        with self._client._bounded(self._sock):
            self._sock.sendall(data, *args)

    def __getattr__(self, name: str) -> object:
        return getattr(self._sock, name)


class _DeadlineConnection(http.client.HTTPConnection):
    """An HTTP(S) connection whose connect, TLS handshake, sends and reads all end at the client's deadline."""

    def __init__(self, host: str, *, client: HttpClient, **kwargs: object) -> None:
        super().__init__(host, **kwargs)  # type: ignore[arg-type]
        self._client = client

    def connect(self) -> None:
        # The connect (and the TLS handshake, which CPython bounds as a whole by the socket's
        # timeout) waits at most what the deadline leaves.
        self.timeout, by_deadline = self._client._next_wait()
        try:
            super().connect()
        except TimeoutError:
            if by_deadline:
                raise _DeadlineReachedError from None
            raise
        self.sock = _DeadlineSocket(self.sock, self._client)  # type: ignore[assignment]


class _DeadlineHTTPSConnection(_DeadlineConnection, http.client.HTTPSConnection):
    pass


class _DeadlineHTTPHandler(urllib.request.HTTPHandler):
    def __init__(self, client: HttpClient) -> None:
        super().__init__()
        self._client = client

    def http_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        return self.do_open(_DeadlineConnection, req, client=self._client)


class _DeadlineHTTPSHandler(urllib.request.HTTPSHandler):
    def __init__(self, client: HttpClient, context: ssl.SSLContext) -> None:
        super().__init__(context=context)
        self._client, self._ssl_context = client, context

    def https_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        return self.do_open(_DeadlineHTTPSConnection, req, client=self._client, context=self._ssl_context)


class HttpClient:
    """Every HTTP request fabricscope makes goes through here: one policy for every module.

    * Credentials (bearer token, basic auth, header values, user info of the URL) are sent in
      headers only, never shown: every message goes through :meth:`scrub`.
    * Redirects are followed by hand, at most :data:`MAX_REDIRECTS`, each re-checked: never from
      https to http, only to http(s), and a hop to another origin (scheme, host, port) drops
      the credential headers for the rest of the request.
    * A POST follows only a 307 or 308 redirect, which repeat it with its body (RFC 9110,
      section 15.4): a 301, 302 or 303 would turn it into a GET without its body, so it is a
      failed request, never a success that delivered nothing.
    * One deadline bounds the whole exchange: the connect, the TLS handshake, sending the
      request, the status line, the headers and the body. Each socket operation waits at most
      ``timeout_s`` and all of them together end at ``deadline``, however slowly a server sends.
    * Bodies are read in pieces within a byte budget, before and after gzip (``max_body_bytes``,
      derived from the readers' ``max_document_bytes``); a body shorter than its
      Content-Length, or a chunked body without its last chunk, is an error, never a complete
      document.
    * Every failure is a :class:`RemoteError` naming the URL without credentials.

    Args:
        base: The server's URL (may carry user info and a query string, both kept secret).
        connection: Authentication, TLS, timeouts, retries.
        max_body_bytes: Largest body accepted, on the wire and decompressed.
        deadline: ``time.monotonic()`` value after which no request starts or continues; None:
            ``connection.deadline_s`` from now.
        deadline_option: What set the deadline, as its message names it (``--deadline``).

    Example:
        >>> from fabricscope.remote import Connection, HttpClient
        >>> client = HttpClient("http://ops:pw@127.0.0.1:1/?tenant=a", Connection(retries=0))
        >>> client.shown
        'http://127.0.0.1:1'
        >>> client.request("/api/v1/alerts")  # doctest: +SKIP
    """

    def __init__(
        self,
        base: str,
        connection: Connection,
        *,
        max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
        deadline: float | None = None,
        deadline_option: str = "--deadline",
    ) -> None:
        self.conn = connection
        self.deadline_option = deadline_option
        self.headers, self.secrets = connection._secrets_and_headers(base)
        p = urllib.parse.urlsplit(base)
        # Credentials go in the header only: request URLs never carry user info. A query string
        # in the given URL (some proxies take parameters) is kept on every request, never shown.
        self.prefix = urllib.parse.urlunsplit((p.scheme, p.netloc.rsplit("@", 1)[-1], p.path.rstrip("/"), "", ""))
        self.query = p.query
        if p.query:
            self.secrets.append(p.query)
            # A value alone may come back in a message; values this short are no credential.
            for _, value in urllib.parse.parse_qsl(p.query, keep_blank_values=True):
                if len(value) >= 4:
                    self.secrets.append(value)
        self.shown = redact(self.prefix)
        self.origin = _origin(self.prefix)
        self.max_body_bytes = max_body_bytes
        if deadline is None and connection.deadline_s is not None:
            deadline = _time.monotonic() + connection.deadline_s
        self.deadline = deadline
        try:
            # Also for an http:// URL: a redirect may lead to https.
            context = connection._ssl_context()
        except (OSError, ssl.SSLError) as e:
            raise RemoteError(self.shown, None, f"cannot load the CA file {connection.ca_file}: {e}") from None
        self.opener = urllib.request.build_opener(
            _RefuseRedirects(), _DeadlineHTTPHandler(self), _DeadlineHTTPSHandler(self, context)
        )
        self._credential_headers = {name.lower() for name, _ in connection.headers} | {"authorization", "cookie"}
        self._warn_transport(p.scheme.lower(), bool(p.query))

    def _warn_transport(self, scheme: str, query: bool) -> None:
        # Once per URL and process: a pull builds a client for the probe and one for the data.
        if self.shown in _WARNED:
            return
        _WARNED.add(self.shown)
        if self.conn.insecure and scheme == "https":
            _security_log.warning("%s: TLS certificates are not verified (--insecure)", self.shown)
        if scheme == "http" and ("Authorization" in self.headers or self.conn.headers or query):
            _security_log.warning(
                "%s: credentials are sent over plain http:// (anyone on the path can read them); use https://",
                self.shown,
            )

    def scrub(self, text: str) -> str:
        """``text`` safe to show: URLs redacted, this client's secrets replaced, control characters escaped."""
        return redact_text(text, self.secrets)

    def remaining_s(self, shown: str) -> float:
        """Seconds left before the deadline (``inf`` without one); raises RemoteError once it passed."""
        if self.deadline is None:
            return float("inf")
        left = self.deadline - _time.monotonic()
        if left <= 0:
            raise self._deadline_error(shown)
        return left

    def _deadline_error(self, shown: str) -> RemoteError:
        return RemoteError(shown, None, f"the deadline of {self.conn.deadline_s:g} s passed ({self.deadline_option})")

    def _next_wait(self) -> tuple[float, bool]:
        """How long the next socket operation may wait, and whether the deadline (not ``timeout_s``) set it.

        Raises:
            _DeadlineReachedError: the deadline has passed.
        """
        if self.deadline is None:
            return self.conn.timeout_s, False
        left = self.deadline - _time.monotonic()
        if left <= 0:
            raise _DeadlineReachedError
        return min(self.conn.timeout_s, left), left < self.conn.timeout_s

    @contextlib.contextmanager
    def _bounded(self, sock: socket.socket) -> Iterator[None]:
        """One socket operation within what :meth:`_next_wait` allows; a wait the deadline cut ends the exchange."""
        timeout, by_deadline = self._next_wait()
        sock.settimeout(timeout)
        try:
            yield
        except TimeoutError:
            if by_deadline:
                raise _DeadlineReachedError from None
            raise

    def request(
        self,
        path: str,
        form: Mapping[str, str | Sequence[str]] | None = None,
        *,
        body: bytes | None = None,
        headers: Mapping[str, str | None] | None = None,
    ) -> tuple[int, bytes]:
        """GET ``path`` (or POST ``form`` or ``body``); returns ``(status, body)`` of a 2xx response.

        ``headers`` add to (or, with a None value, remove) the connection's headers.

        Raises:
            RemoteError: no 2xx response within the retries and the deadline, a redirect the
                policy refuses, a body beyond the budget or not the gzip it claims to be.
        """
        path, _, query = path.partition("?")
        query = "&".join(q for q in (self.query, query) if q)
        url = self.prefix + path + (f"?{query}" if query else "")
        shown = self.shown + path
        data = urllib.parse.urlencode(form, doseq=True).encode() if form is not None else body
        sent = dict(self.headers)
        if form is not None:
            sent["Content-Type"] = "application/x-www-form-urlencoded"
        for name, value in (headers or {}).items():
            if value is None:
                sent.pop(name, None)
            else:
                sent[name] = value
        attempt = 0
        while True:
            self.remaining_s(shown)
            try:
                return self._follow(url, shown, data, sent)
            except _AttemptFailedError as e:
                failure = e
            if failure.over_budget:
                # Never retried as it is: the pull may ask for a narrower range once.
                raise _BodyTooLargeError(shown, failure.status, failure.message, failure.body_bytes)
            if not failure.retry or attempt >= self.conn.retries:
                tries = f" (after {attempt + 1} attempts)" if attempt else ""
                raise RemoteError(shown, failure.status, failure.message + tries)
            status = failure.status
            _log.info("%s: %s; retrying", shown, f"HTTP {status}" if status else failure.message)
            pause = self.conn.backoff_s * 2**attempt
            if pause >= self.remaining_s(shown):
                left = f" (the deadline leaves no time to retry after {attempt + 1} attempts)"
                raise RemoteError(shown, status, failure.message + left)
            _time.sleep(pause)
            attempt += 1

    def _follow(self, url: str, shown: str, data: bytes | None, sent: dict[str, str]) -> tuple[int, bytes]:
        """One attempt: the request and the redirects it is allowed to follow."""
        method = "POST" if data else "GET"
        for _hop in range(MAX_REDIRECTS + 1):
            timeout, _ = self._next_wait_or_error(shown)
            req = urllib.request.Request(url, data=data, headers=sent, method=method)
            try:
                try:
                    resp = self.opener.open(req, timeout=timeout)
                except urllib.error.HTTPError as e:
                    if e.code not in _REDIRECTS:
                        try:
                            message = self.scrub(_error_text(e))
                        finally:
                            e.close()  # the error holds the response and its socket
                        raise _AttemptFailedError(e.code, message, e.code == 429 or e.code >= 500) from None
                    location = e.headers.get("Location", "")
                    e.close()
                    url = self._redirect_target(url, location, e.code)
                    if method == "POST" and e.code not in _REPEATS_POST:
                        # urllib (and browsers) would follow it as a GET without the body: the
                        # server's answer to that GET is no answer to the POST.
                        raise _AttemptFailedError(
                            e.code,
                            f"refused to follow the redirect of a POST to {redact(url)}: it would become a GET "
                            "without its body (only 307 and 308 repeat a POST, RFC 9110 section 15.4)",
                            False,
                        ) from None
                    if _origin(url) != self.origin:
                        # Another origin gets no credential: not the token, not the custom headers.
                        sent = {k: v for k, v in sent.items() if k.lower() not in self._credential_headers}
                    if e.code == 303:
                        method, data = "GET", None
                        sent.pop("Content-Type", None)
                        sent.pop("Content-Encoding", None)
                    _log.info("%s: HTTP %s redirect to %s", shown, e.code, redact(url))
                    continue
                with resp:
                    return resp.status, self._read(resp, shown)
            except (_AttemptFailedError, RemoteError):
                raise
            except _DeadlineReachedError:
                raise self._deadline_error(shown) from None
            except urllib.error.URLError as e:
                reason = e.reason
                if isinstance(reason, _DeadlineReachedError):
                    raise self._deadline_error(shown) from None
                message = self.scrub(f"{type(reason).__name__}: {reason}")
                raise _AttemptFailedError(None, message, not isinstance(reason, ssl.SSLCertVerificationError)) from None
            except (TimeoutError, ConnectionError, OSError, http.client.HTTPException) as e:
                raise _AttemptFailedError(None, self.scrub(f"{type(e).__name__}: {e}"), True) from None
            except ValueError as e:
                # http.client's refusals (a header value, a URL it cannot send) quote what they
                # refuse: scrubbed, never retried.
                raise _AttemptFailedError(None, self.scrub(f"{type(e).__name__}: {e}"), False) from None
        raise _AttemptFailedError(None, f"more than {MAX_REDIRECTS} redirects", False)

    def _next_wait_or_error(self, shown: str) -> tuple[float, bool]:
        try:
            return self._next_wait()
        except _DeadlineReachedError:
            raise self._deadline_error(shown) from None

    def _redirect_target(self, url: str, location: str, status: int) -> str:
        if not location:
            raise _AttemptFailedError(status, "a redirect without a Location header", False)
        target = urllib.parse.urljoin(url, location.strip())
        scheme = urllib.parse.urlsplit(target).scheme.lower()
        shown_target = redact(target)
        if scheme not in ("http", "https"):
            raise _AttemptFailedError(status, f"refused a redirect to {shown_target}: only http(s) is followed", False)
        if urllib.parse.urlsplit(url).scheme.lower() == "https" and scheme == "http":
            raise _AttemptFailedError(status, f"refused a redirect from https to plain http ({shown_target})", False)
        p = urllib.parse.urlsplit(target)
        # User info in a Location is never sent (urllib would not send it as a header either).
        return urllib.parse.urlunsplit((p.scheme, p.netloc.rsplit("@", 1)[-1], p.path, p.query, ""))

    def _read(self, resp: http.client.HTTPResponse, shown: str) -> bytes:
        """The whole body, within the byte budget (wire and decompressed); a body cut short is an error.

        The body is streamed into one buffer whose bytes become the returned object without a
        copy (``BytesIO.getvalue`` hands over its buffer): the body is held once, never as a list
        of pieces plus their join. Reading stops as soon as the budget is passed.
        """
        limit = self.max_body_bytes
        length = resp.headers.get("Content-Length", "").strip()
        if length.isdigit() and int(length) > limit:
            raise _AttemptFailedError(
                resp.status,
                f"the response declares {length} bytes: {self.too_big()}",
                False,
                over_budget=True,
                body_bytes=int(length),
            )
        # A chunked body's length is its chunks' (http.client ignores a Content-Length beside it).
        declared = int(length) if length.isdigit() and not resp.chunked else None
        encoding = resp.headers.get("Content-Encoding", "").strip().lower()
        sink = io.BytesIO()
        # Closed on the way out: a failed attempt's traceback holds the frames that read the body,
        # and its bytes must not outlive them (the next attempt would hold a second budget's worth).
        try:
            self._stream(resp, sink, declared, _Gunzip(limit) if encoding in ("gzip", "x-gzip") else None)
            return sink.getvalue()
        finally:
            sink.close()

    def _stream(
        self, resp: http.client.HTTPResponse, sink: io.BytesIO, declared: int | None, gunzip: _Gunzip | None
    ) -> None:
        """Copy the body into ``sink`` in 64 KiB reads, stopping as soon as it passes the budget."""
        wire = 0
        while True:
            try:
                chunk = resp.read1(_READ_BYTES)
            except http.client.IncompleteRead:
                # The connection closed inside a chunk or before the last (zero-length) chunk.
                raise _AttemptFailedError(
                    resp.status,
                    f"the chunked body ended after {wire} bytes, before its last chunk (the connection closed early)",
                    True,
                ) from None
            if not chunk:
                if declared is not None and wire < declared:
                    raise _AttemptFailedError(
                        resp.status,
                        f"the body ended after {wire} of the {declared} bytes its Content-Length declares "
                        "(the connection closed early)",
                        True,
                    )
                break
            wire += len(chunk)
            if wire > self.max_body_bytes:
                raise _AttemptFailedError(resp.status, f"the response is {self.too_big()}", False, over_budget=True)
            if gunzip is not None:
                gunzip.feed(chunk, sink)
            else:
                sink.write(chunk)
        if gunzip is not None:
            gunzip.finish()

    def too_big(self) -> str:
        """What an answer beyond the byte budget is, naming the budget and the option that raises it."""
        return f"more than {self.max_body_bytes} bytes (max_document_bytes; raise it with --limit max_document_bytes=N)"


# The name the pull and scrape code uses.
_Http = HttpClient


def _error_text(e: urllib.error.HTTPError) -> str:
    try:
        body = e.read(4096)
    except OSError:
        body = b""
    try:
        doc = json.loads(body)
        if isinstance(doc, dict) and "error" in doc:
            return f"{doc.get('errorType', 'error')}: {doc['error']}"
    except ValueError:
        pass
    text = body.decode("utf-8", "replace").strip().splitlines()
    return text[0][:200] if text else (e.reason or "")


# Authentication refused: the answer says nothing about what the URL serves.
_REFUSED = frozenset({401, 403, 407})


def probe(url: str, connection: Connection | None = None, *, deadline: float | None = None) -> str:
    """What a URL is: ``"prometheus"`` when it answers the Prometheus API, else ``"exporter"``.

    The server is recognised by ``/api/v1/status/buildinfo`` answering a successful JSON
    document, never by its host name or port.

    Raises:
        RemoteError: the URL does not answer at all (refused, timeout, TLS failure), or refuses
            the credentials (HTTP 401, 403, 407): a server behind authentication is not an
            exporter, and the user must see the refusal, not a scrape of the wrong path.
    """
    http = _Http(url, replace(connection or Connection(), retries=0), deadline=deadline)
    try:
        _, body = http.request("/api/v1/status/buildinfo")
    except RemoteError as e:
        if e.status is None or e.status in _REFUSED:
            raise
        return "exporter"
    try:
        doc = json.loads(body)
    except ValueError:
        return "exporter"
    return "prometheus" if isinstance(doc, dict) and doc.get("status") == "success" else "exporter"


def _selector(match: Sequence[str]) -> str:
    """User matchers (``job="node"``, ``{a="b", c=~"d"}``) as the inside of one selector."""
    parts = []
    for m in match:
        m = m.strip()
        if m.startswith("{") and m.endswith("}"):
            m = m[1:-1]
        if m.strip():
            parts.append(m.strip().rstrip(","))
    return ",".join(parts)


def _known_names(http: _Http, opts: RemoteOptions, since: int, until: int) -> list[str]:
    extra = _selector(opts.match)
    form: dict[str, str | list[str]] = {"start": _seconds(since), "end": _seconds(until)}
    if extra:
        form["match[]"] = [f'{{__name__=~".+",{extra}}}']
    # GET with the form in the query: label values is a GET endpoint on every server version.
    _, body = http.request("/api/v1/label/__name__/values?" + urllib.parse.urlencode(form, doseq=True))
    _raise_api_error(http, body, "/api/v1/label/__name__/values")
    try:
        doc = json.loads(body)
        names = [str(n) for n in doc["data"]]
    except (ValueError, KeyError, TypeError):
        raise RemoteError(http.shown + "/api/v1/label/__name__/values", 200, "not a label values response") from None
    return sorted(_native.known_prometheus_metrics(names))


def _printable_report(report: dict[str, object]) -> dict[str, object]:
    """A reader's report with a server's text (its ``warnings``, echoed values) escaped and redacted."""
    out = dict(report)
    for key in ("errors", "warnings"):
        items = report.get(key)
        if isinstance(items, list):
            out[key] = [redact_text(x) if isinstance(x, str) else x for x in items]
    return out


#: How much narrower the one retry of a range is when its answer outgrew the byte budget without
#: declaring its size (a chunked body; Prometheus declares none for a large answer): answers up to
#: 8x the budget then fit in half of it. The next chunk is sized from the density measured.
_NARROW_UNDECLARED = 16


def _narrower(span_ms: int, body_bytes: int | None, budget: int) -> int:
    """The one narrower range asked for after an answer over ``span_ms`` outgrew ``budget``.

    With a declared size the range is scaled to half the budget; without one, to a sixteenth.
    """
    fraction = budget / body_bytes / 2 if body_bytes else 1 / _NARROW_UNDECLARED
    return max(MIN_CHUNK_S * 1000, int(span_ms * fraction))


# A Prometheus API answer whose first member says it succeeded (every server writes it first).
_SUCCESS_HEAD = re.compile(rb'\s*\{\s*"status"\s*:\s*"success"')
# Error answers are a few hundred bytes: a larger body is never parsed here a second time.
_API_ERROR_BYTES = 1 << 20


def _raise_api_error(http: HttpClient, body: bytes, path: str) -> None:
    """Raise :class:`RemoteError` when a 200 answer of the HTTP API reports a failure.

    A proxy or a server may answer ``200 {"status":"error","errorType":...,"error":...}``: that
    is a failed request (the source failed), never a document with one rejected record.
    """
    if len(body) > _API_ERROR_BYTES or _SUCCESS_HEAD.match(body) or body.lstrip()[:1] != b"{":
        return
    try:
        doc = json.loads(body)
    except ValueError:
        return  # not JSON: the reader says what it expected
    if not isinstance(doc, dict) or "status" not in doc or doc["status"] == "success":
        return
    why = f"{doc.get('errorType', 'error')}: {doc.get('error', '')}".rstrip(": ")
    message = f"the answer reports a failure (status {json.dumps(doc['status'])}): {why}"
    raise RemoteError(http.shown + path, 200, http.scrub(message))


def _body_budget(read_kwargs: Mapping[str, object]) -> int:
    """Largest response body (wire and decompressed): the readers' document limit."""
    limits = read_kwargs.get("limits")
    return dict(_native.limits(limits if isinstance(limits, dict) else None))["max_document_bytes"]


def _seconds(ns: int) -> str:
    """Ns as the API's seconds, exact to the millisecond (Prometheus's resolution)."""
    ms = ns // 1_000_000
    return f"{ms // 1000}.{ms % 1000:03d}"


def _groups(names: list[str], groups: int) -> list[list[str]]:
    groups = max(1, min(groups, len(names)))
    return [names[i::groups] for i in range(groups)]


def _name_regex(names: Sequence[str]) -> str:
    return "|".join(re.escape(n) for n in names)


# One PromQL label matcher: a label name, an operator and a quoted string ("...", '...' or `...`).
_MATCHER = re.compile(
    r"""\s*([A-Za-z_][A-Za-z0-9_]*)\s*(=~|!~|!=|=)\s*("(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`)\s*(?:,|$)"""
)


def _unquote(literal: str) -> str:
    """A PromQL string literal's value (Go escapes in double and single quotes, none in backticks)."""
    if literal[0] == "`":
        return literal[1:-1]
    inner = literal[1:-1]
    if literal[0] == "'":
        inner = inner.replace("\\'", "'").replace('"', '\\"')
    try:
        return str(json.loads(f'"{inner}"'))
    except ValueError:
        raise ValueError(f"cannot read the label matcher value {literal}") from None


def _matchers(match: Sequence[str]) -> list[tuple[str, str, str]]:
    """User matchers (``job="node"``, ``{a="b", c=~"d"}``) as ``(label, op, value)`` triples.

    Raises:
        ValueError: a matcher is not ``label<op>"value"`` (the message names it).
    """
    out = []
    text = _selector(match)
    pos = 0
    while pos < len(text):
        m = _MATCHER.match(text, pos)
        if m is None or m.end() == pos:
            raise ValueError(f'cannot read the label matcher {text[pos:]!r}: expected label="value" (or !=, =~, !~)')
        out.append((m.group(1), m.group(2), _unquote(m.group(3))))
        pos = m.end()
    return out


Progress = Callable[[int, int, int], None]
"""``progress(done_ns, total_ns, samples)``: how much of the range has been pulled."""


def _pull(
    url: str, opts: RemoteOptions, read_kwargs: Mapping[str, object], progress: Progress | None, deadline: float | None
) -> Iterator[tuple[str, pl.DataFrame, dict[str, object] | None]]:
    """Yield ``(kind, frame, report)`` for a server pull, chunk by chunk, in time order."""
    http = _Http(url, opts.connection, max_body_bytes=_body_budget(read_kwargs), deadline=deadline)
    # No gzip from a server: compressing tens of MB of JSON costs the server more CPU than the
    # transfer saves on a data-centre network (measured in BENCHMARKS.md: a 10^6-sample pull took
    # 3x longer with gzip); remote read bodies are snappy-compressed already.
    http.headers.pop("Accept-Encoding", None)
    since, until = opts.window()
    api = opts.server_api()
    extra = _selector(opts.match)
    # Read before any request: a malformed matcher is the caller's error, not the server's.
    user_matchers: list[tuple[str, str, str]] = []
    if api == "read":
        try:
            user_matchers = _matchers(opts.match)
        except ValueError:
            if opts.api is not None:
                raise
            # A matcher only PromQL reads (quoted UTF-8 label names, ...): the query API takes it.
            _log.info("%s: label matchers %s go through /api/v1/query", http.shown, list(opts.match))
            api = "query"
    names = _known_names(http, opts, since, until)
    if not names:
        _log.warning("%s: no series the counter vocabulary knows in %s..%s", http.shown, _iso(since), _iso(until))
        return
    groups = _groups(names, opts.connection.concurrency)
    step_ms = None if opts.step_s is None else max(1, round(opts.step_s * 1000))
    chunk_ms = round((opts.chunk_s or FIRST_CHUNK_S) * 1000)
    start_ms, end_ms = -(-since // 1_000_000), -(-until // 1_000_000)
    total_samples = 0
    read_headers = {
        "Content-Type": "application/x-protobuf",
        "Content-Encoding": "snappy",
        "X-Prometheus-Remote-Read-Version": "0.1.0",
    }

    def query(group: list[str], a_ms: int, b_ms: int) -> bytes:
        if api == "read":
            # Remote read includes both ends: [a, b - 1 ms] is [a, b) at Prometheus's resolution.
            matchers = [("__name__", "=~", _name_regex(group)), *user_matchers]
            request = _native.remote_read_request(a_ms, b_ms - 1, matchers)
            _, body = http.request("/api/v1/read", body=request, headers=read_headers)
            return body
        selector = f'{{__name__=~"{_name_regex(group)}"{"," + extra if extra else ""}}}'
        if step_ms is None:
            # [a, b): the selector at b-1 ms covers [a-1 ms, b-1 ms] (both ends on 2.x, left-open
            # on 3.x); the rows are cut to [a, b) after decoding.
            form = {"query": f"{selector}[{b_ms - a_ms}ms]", "time": _seconds((b_ms - 1) * 1_000_000)}
            _, body = http.request("/api/v1/query", form)
            _raise_api_error(http, body, "/api/v1/query")
        else:
            form = {
                "query": selector,
                "start": _seconds(a_ms * 1_000_000),
                "end": _seconds((b_ms - 1) * 1_000_000),
                "step": f"{step_ms / 1000:g}",
            }
            _, body = http.request("/api/v1/query_range", form)
            _raise_api_error(http, body, "/api/v1/query_range")
        return body

    def decode(body: bytes, a_ms: int, b_ms: int) -> tuple[pl.DataFrame, pl.DataFrame, dict[str, object] | None, int]:
        fmt = "prometheus-remote-read" if api == "read" else "prometheus-api"
        samples, attributes, _tables, reports = _native.read_buffer(body, http.shown, format=fmt, **read_kwargs)
        reports = [_printable_report(r) for r in reports]
        frame = pl.DataFrame(samples)
        if frame.height:
            # Range selectors reach 1 ms before ``a``: cut to [a, b) (a no-op for remote read).
            t = frame["time"].dt.epoch("ms")
            lo, hi = t.min(), t.max()
            assert isinstance(lo, int) and isinstance(hi, int)
            if lo < a_ms or hi >= b_ms:
                frame = frame.filter(t.is_between(a_ms, b_ms, closed="left"))
        return frame, pl.DataFrame(attributes), reports[0] if reports else None, len(body)

    # Whether the chunk in hand was narrowed already because an answer outgrew the byte budget:
    # it is narrowed once, never halved again and again (each attempt costs a budget's transfer).
    narrowed = False
    with _futures.ThreadPoolExecutor(max_workers=max(1, opts.connection.concurrency)) as pool:
        a = start_ms
        while a < end_ms:
            if step_ms is not None:
                # Chunks of whole steps keep one step grid, anchored at ``since``, across chunks.
                chunk_ms = max(step_ms, chunk_ms // step_ms * step_ms)
            b = min(end_ms, a + chunk_ms)
            try:
                # Each request is decoded on its worker thread as soon as it arrives (the decoder
                # releases the GIL), so decoding overlaps the server's work on the other groups.
                results = list(pool.map(lambda g, a=a, b=b: decode(query(g, a, b), a, b), groups))
            except LimitExceededError:
                # A response within the byte budget that decodes beyond a reader limit (a remote
                # read body's snappy expansion): the same range once more, narrower.
                if not narrowed and b - a > MIN_CHUNK_S * 1000:
                    chunk_ms, narrowed = _narrower(b - a, None, http.max_body_bytes), True
                    continue
                raise
            except _BodyTooLargeError as e:
                if not narrowed and b - a > MIN_CHUNK_S * 1000:
                    chunk_ms, narrowed = _narrower(b - a, e.body_bytes, http.max_body_bytes), True
                    _log.info(
                        "%s: %s; asking for %g s instead of %g s", e.url, e.message, chunk_ms / 1000, (b - a) / 1000
                    )
                    continue
                tried = f"the range {_iso(a * 1_000_000)}..{_iso(b * 1_000_000)} ({(b - a) / 1000:g} s)"
                how = ", already narrowed once" if narrowed else ""
                raise _BodyTooLargeError(e.url, e.status, f"{e.message}: {tried}{how}", e.body_bytes) from None
            except RemoteError as e:
                if api == "read" and opts.api is None and a == start_ms and e.status in _NO_REMOTE_READ:
                    _log.info("%s: no remote read (HTTP %s); pulling through /api/v1/query", http.shown, e.status)
                    api = "query"
                    continue
                # Too many samples for the server in one query: the same range in halves (the
                # server's refusal is a few bytes, not a body).
                too_many = (e.status == 422 and "too many samples" in str(e)) or (
                    e.status == 400 and "sample limit" in str(e)
                )
                if too_many and b - a > MIN_CHUNK_S * 1000:
                    chunk_ms = max(MIN_CHUNK_S * 1000, (b - a) // 2)
                    continue
                raise
            narrowed = False
            chunk_samples = 0
            for frame, attrs, report, _ in results:
                chunk_samples += frame.height
                yield "samples", frame, report
                if attrs.height:
                    yield "attributes", attrs, None
            total_samples += chunk_samples
            if progress is not None:
                progress((b - start_ms) * 1_000_000, (end_ms - start_ms) * 1_000_000, total_samples)
            if opts.chunk_s is None:
                # Aim the next chunk at the target response size from this chunk's density.
                per_ms = chunk_samples / max(1, b - a) / max(1, len(groups))
                want = TARGET_SAMPLES_PER_RESPONSE / per_ms if per_ms > 0 else MAX_CHUNK_S * 1000
                # ... and at half the byte budget from this chunk's bytes per ms, so that a small
                # --limit max_document_bytes is met by the chunk size, not by refused answers.
                bytes_per_ms = max(size for *_, size in results) / max(1, b - a)
                if bytes_per_ms > 0:
                    want = min(want, http.max_body_bytes / 2 / bytes_per_ms)
                chunk_ms = int(min(MAX_CHUNK_S * 1000, max(MIN_CHUNK_S * 1000, want)))
            a = b


def _scrape(
    url: str, opts: RemoteOptions, read_kwargs: Mapping[str, object], progress: Progress | None, deadline: float | None
) -> Iterator[tuple[str, pl.DataFrame, dict[str, object] | None]]:
    """Yield ``(kind, frame, report)`` for ``repeat`` scrapes of an exporter endpoint."""
    http = _Http(url, opts.connection, max_body_bytes=_body_budget(read_kwargs), deadline=deadline)
    http.headers["Accept"] = "text/plain;version=0.0.4;q=1,*/*;q=0.1"
    kwargs = dict(read_kwargs)
    # node_exporter's samples carry no instance label (Prometheus adds it): the host is the
    # endpoint's host unless the caller names one.
    kwargs["host"] = kwargs.get("host") or urllib.parse.urlsplit(url).hostname
    fmt = kwargs.pop("format", None)
    repeat = max(1, opts.repeat)
    # An exporter named by host and port alone serves its samples at /metrics (its root is HTML).
    path = "/metrics" if urllib.parse.urlsplit(url).path in ("", "/") else ""
    for i in range(repeat):
        started = _time.monotonic()
        now = _time.time_ns()
        _, body = http.request(path)
        _raise_api_error(http, body, path)
        samples, attributes, _tables, reports = _native.read_buffer(
            body, http.shown, format=None if fmt in (None, "auto", "prometheus-api") else fmt, time_ns=now, **kwargs
        )
        reports = [_printable_report(r) for r in reports]
        yield "samples", pl.DataFrame(samples), reports[0] if reports else None
        attrs = pl.DataFrame(attributes)
        if attrs.height:
            yield "attributes", attrs, None
        if progress is not None:
            progress(i + 1, repeat, 0)
        if i + 1 < repeat:
            _time.sleep(max(0.0, opts.interval_s - (_time.monotonic() - started)))


def scan_url(
    url: str,
    options: RemoteOptions | None = None,
    *,
    format: str = "auto",
    host: str | None = None,
    strict: bool = True,
    limits: Mapping[str, int] | None = None,
    progress: Progress | None = None,
) -> Iterator[tuple[str, pl.DataFrame, dict[str, object] | None]]:
    """Stream what a URL holds as ``(kind, frame, report)``: kind ``samples`` or ``attributes``.

    A Prometheus server is pulled chunk by chunk (memory bounded by one chunk); an exporter
    endpoint is scraped ``options.repeat`` times. ``report`` is the reader's report of the
    chunk or scrape (None for attribute frames).

    Raises:
        RemoteError: a request failed (the message names the URL and the HTTP status).
        fabricscope.exceptions.FormatError: a response is not what the reader expected.
    """
    opts = options or RemoteOptions()
    progress = progress or opts.progress
    # The limits go to the reader as given: the core validates them (one place).
    read_kwargs: dict[str, object] = {
        "host": host,
        "strict": strict,
        "limits": None if limits is None else dict(limits),
    }
    if format not in ("auto", "prometheus-api"):
        read_kwargs["format"] = format
    # One deadline for the whole pull: the probe, every chunk, every retry and redirect.
    deadline = None if opts.connection.deadline_s is None else _time.monotonic() + opts.connection.deadline_s
    kind = probe(url, opts.connection, deadline=deadline)
    if kind == "prometheus":
        read_kwargs.pop("format", None)
        yield from _pull(url, opts, read_kwargs, progress, deadline)
    else:
        yield from _scrape(url, opts, read_kwargs, progress, deadline)


def load_url(
    url: str,
    options: RemoteOptions | None = None,
    *,
    format: str = "auto",
    host: str | None = None,
    strict: bool = True,
    limits: Mapping[str, int] | None = None,
    progress: Progress | None = None,
) -> tuple[pl.DataFrame, pl.DataFrame, dict[str, object]]:
    """Read a URL whole: ``(samples, attributes, report)`` with one report for the URL.

    Example:
        >>> from fabricscope.remote import load_url
        >>> load_url("http://127.0.0.1:1/")  # doctest: +SKIP
    """
    samples: list[pl.DataFrame] = []
    attrs: list[pl.DataFrame] = []
    report: dict[str, object] = {
        "path": redact(url),
        "format": None,
        "bytes": 0,
        "rows": 0,
        "attribute_rows": 0,
        "bad_records": 0,
        "errors": [],
        "warnings": [],
        "time_source": "in-file",
        "time_resolution_ns": None,
        "failed": False,
    }
    for kind, frame, r in scan_url(
        url, options, format=format, host=host, strict=strict, limits=limits, progress=progress
    ):
        if kind == "samples":
            samples.append(frame)
        else:
            attrs.append(frame)
        if r is not None:
            report["format"] = r["format"]
            for k in ("bytes", "attribute_rows", "bad_records"):
                report[k] = int(report[k]) + int(r[k])  # type: ignore[call-overload]
            report["rows"] = int(report["rows"]) + frame.height  # type: ignore[call-overload]
            for k in ("errors", "warnings"):
                seen = report[k]
                assert isinstance(seen, list)
                seen.extend(x for x in r[k] if x not in seen)  # type: ignore[union-attr]
            if r["time_source"] != "in-file":
                report["time_source"] = r["time_source"]
            report["time_resolution_ns"] = coarsest_resolution_ns(
                [report["time_resolution_ns"], r["time_resolution_ns"]]
            )
    out_s = pl.concat(samples, how="vertical") if samples else _empty(_native.samples_schema_arrow())
    out_a = (
        pl.concat(attrs, how="vertical").unique(maintain_order=True)
        if attrs
        else _empty(_native.attributes_schema_arrow())
    )
    return out_s, out_a, report


def coarsest_resolution_ns(resolutions: Iterable[object]) -> int | None:
    """The coarsest of several reports' ``time_resolution_ns`` (None when none is known)."""
    known = [int(r) for r in resolutions if isinstance(r, int)]
    return max(known) if known else None


def _empty(schema: object) -> pl.DataFrame:
    # As fabricscope.io.empty_samples builds it (that module imports this one): the core's schema
    # through the Arrow C interface, without importing pyarrow.
    return pl.DataFrame(schema=pl.Schema(schema))  # type: ignore[arg-type]
