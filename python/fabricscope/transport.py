"""The HTTP transport: every request fabricscope makes, under one policy for a hostile network.

Its one job is the exchange with a server: send a request and hand back a 2xx answer's body, or
raise a :class:`~fabricscope.exceptions.RemoteError` that names the URL without its credentials.
What to ask and what the answer means belong to the callers (the Prometheus client,
:mod:`fabricscope.reading.prometheus`; cron's Alertmanager delivery,
:mod:`fabricscope.doors.cron.alertmanager`). The public surface, as httpx separates it:

* :class:`Connection`: configuration and authentication (credentials, TLS, timeouts, the
  deadline, retries, concurrency), a frozen value the command lines build;
* :class:`HttpClient`: the transport for one server (redirect policy, byte budget, deadline,
  retries, redaction);
* :class:`BodyTooLargeError`: an answer beyond the byte budget, which a caller may ask for in
  smaller pieces;
* :func:`redact`: a URL as every message shows it.

Why the standard library (``http.client`` under ``urllib.request``) and not urllib3 or httpx:
neither bounds a whole exchange by a deadline, the behaviour a hostile server tests first.
httpx (not installed here) has per-operation timeouts only (connect, read, write, pool; the
overall timeout proposed to httpcore, encode/httpcore#936, was closed unmerged). urllib3 2.8
(installed through requests) has ``Timeout(total=...)``, but each socket read waits anew: a
server sending a 40-byte answer one byte every 0.3 s took 12 s against ``total=1.0``
(measured). Bounding that needs the socket wrapping written here, reached through the
library's private connection classes. Its redirects also follow https to plain http, strip
only ``Authorization``, ``Cookie`` and ``Proxy-Authorization`` on another host, and repeat a
POST on a 301 or 302; the byte budget before and after gzip and the scrubbing of its messages
(which quote the URL with its query string) would still be written here. The library would
be wrapped in as much code as it replaces, plus a dependency, so the transport stays on the
standard library, in this one module.
"""

from __future__ import annotations

import base64
import contextlib
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
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from fabricscope import _native
from fabricscope.exceptions import RemoteError
from fabricscope.redaction import redact_text, redact_url

__all__ = [
    "DEFAULT_DEADLINE_S",
    "DEFAULT_MAX_BODY_BYTES",
    "MAX_REDIRECTS",
    "BodyTooLargeError",
    "Connection",
    "HttpClient",
    "redact",
]

_log = logging.getLogger("fabricscope")
# Security warnings (certificates not verified, credentials over plain HTTP) are shown even when
# the command line logs only errors: this logger's own level lets them through to the handlers.
_security_log = logging.getLogger("fabricscope.security")
_security_log.setLevel(logging.WARNING)

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


def redact(url: str) -> str:
    """The URL as it may be shown: no user info, no query string, no fragment.

    The one redaction every output uses (:func:`fabricscope.redaction.redact_url`).

    Example:
        >>> from fabricscope.transport import redact
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


class BodyTooLargeError(RemoteError):
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
        >>> from fabricscope.transport import Connection, HttpClient
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
                raise BodyTooLargeError(shown, failure.status, failure.message, failure.body_bytes)
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
