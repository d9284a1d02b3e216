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

Every request goes through the transport (:mod:`fabricscope.transport`): credentials (bearer
token, basic auth, header values) are sent, never logged, and messages and reports name the URL
without its user info or query string.
"""

from __future__ import annotations

import concurrent.futures as _futures
import datetime as _dt
import json
import logging
import re
import time as _time
import urllib.parse
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace

import polars as pl

from fabricscope import _native
from fabricscope.exceptions import LimitExceededError, RemoteError
from fabricscope.redaction import redact_text
from fabricscope.transport import BodyTooLargeError, Connection, HttpClient, redact

__all__ = [
    "APIS",
    "RemoteOptions",
    "is_url",
    "load_url",
    "probe",
    "scan_url",
]

_log = logging.getLogger("fabricscope")

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


def is_url(source: object) -> bool:
    """Whether an input names an HTTP(S) source rather than a path.

    Example:
        >>> from fabricscope.reading.prometheus import is_url
        >>> is_url("http://prometheus:9090"), is_url("sample_traces/prometheus")
        (True, False)
    """
    return isinstance(source, str) and source.lower().startswith(("http://", "https://"))


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
    http = HttpClient(url, replace(connection or Connection(), retries=0), deadline=deadline)
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


def _known_names(http: HttpClient, opts: RemoteOptions, since: int, until: int) -> list[str]:
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


# What remote read asks with every request (the protocol's version 0.1.0, snappy-framed protobuf).
_REMOTE_READ_HEADERS = {
    "Content-Type": "application/x-protobuf",
    "Content-Encoding": "snappy",
    "X-Prometheus-Remote-Read-Version": "0.1.0",
}


@dataclass
class _Plan:
    """What one server pull asks for, and through which API.

    Attributes:
        http: The client of the server.
        api: ``read``, ``query`` or ``query_range``; a ``read`` becomes ``query`` when the server
            has no remote read.
        extra: The user's matchers as the inside of one selector (the query APIs).
        matchers: The user's matchers as ``(label, op, value)`` triples (remote read).
        groups: The metric names, one group per request in flight.
        step_ms: The step of ``query_range``; None: raw samples.
        read_kwargs: What the reader is given (host, strictness, limits).
    """

    http: HttpClient
    api: str
    extra: str
    matchers: list[tuple[str, str, str]]
    groups: list[list[str]]
    step_ms: int | None
    read_kwargs: Mapping[str, object]


def _plan(
    http: HttpClient, opts: RemoteOptions, read_kwargs: Mapping[str, object], since: int, until: int
) -> _Plan | None:
    """The pull's plan; None (after a warning) when the server holds no series the vocabulary knows."""
    api = opts.server_api()
    # Read before any request: a malformed matcher is the caller's error, not the server's.
    matchers: list[tuple[str, str, str]] = []
    if api == "read":
        try:
            matchers = _matchers(opts.match)
        except ValueError:
            if opts.api is not None:
                raise
            # A matcher only PromQL reads (quoted UTF-8 label names, ...): the query API takes it.
            _log.info("%s: label matchers %s go through /api/v1/query", http.shown, list(opts.match))
            api = "query"
    names = _known_names(http, opts, since, until)
    if not names:
        _log.warning("%s: no series the counter vocabulary knows in %s..%s", http.shown, _iso(since), _iso(until))
        return None
    step_ms = None if opts.step_s is None else max(1, round(opts.step_s * 1000))
    groups = _groups(names, opts.connection.concurrency)
    return _Plan(http, api, _selector(opts.match), matchers, groups, step_ms, read_kwargs)


def _ask(plan: _Plan, group: list[str], a_ms: int, b_ms: int) -> bytes:
    """The answer of one request: ``group``'s series over ``[a_ms, b_ms)``, through the plan's API."""
    http = plan.http
    if plan.api == "read":
        # Remote read includes both ends: [a, b - 1 ms] is [a, b) at Prometheus's resolution.
        matchers = [("__name__", "=~", _name_regex(group)), *plan.matchers]
        request = _native.remote_read_request(a_ms, b_ms - 1, matchers)
        _, body = http.request("/api/v1/read", body=request, headers=_REMOTE_READ_HEADERS)
        return body
    selector = f'{{__name__=~"{_name_regex(group)}"{"," + plan.extra if plan.extra else ""}}}'
    if plan.step_ms is None:
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
            "step": f"{plan.step_ms / 1000:g}",
        }
        _, body = http.request("/api/v1/query_range", form)
        _raise_api_error(http, body, "/api/v1/query_range")
    return body


def _decode(
    plan: _Plan, body: bytes, a_ms: int, b_ms: int
) -> tuple[pl.DataFrame, pl.DataFrame, dict[str, object] | None, int]:
    """One answer as ``(samples, attributes, report, body bytes)``, the samples cut to ``[a_ms, b_ms)``."""
    fmt = "prometheus-remote-read" if plan.api == "read" else "prometheus-api"
    samples, attributes, _tables, reports = _native.read_buffer(body, plan.http.shown, format=fmt, **plan.read_kwargs)
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


def _ask_again(
    plan: _Plan,
    opts: RemoteOptions,
    error: LimitExceededError | RemoteError,
    a_ms: int,
    b_ms: int,
    chunk_ms: int,
    *,
    first: bool,
    narrowed: bool,
) -> tuple[int, bool]:
    """How ``[a_ms, b_ms)`` is asked for again after ``error``: ``(chunk_ms, narrowed)``.

    An answer beyond the byte budget, or one that decodes beyond a reader limit, is asked for
    once more, narrower (``narrowed``: never halved again and again, each attempt costs a
    budget's transfer); a server without remote read is asked the first chunk again through
    ``/api/v1/query``; too many samples for the server in one query, the range in halves.

    Raises:
        LimitExceededError: the answer decodes beyond a reader limit after one narrowing.
        RemoteError: any other failure, or an answer beyond the budget after one narrowing.
    """
    span_ms = b_ms - a_ms
    can_narrow = span_ms > MIN_CHUNK_S * 1000
    if isinstance(error, LimitExceededError):
        # A response within the byte budget that decodes beyond a reader limit (a remote read
        # body's snappy expansion): the same range once more, narrower.
        if not narrowed and can_narrow:
            return _narrower(span_ms, None, plan.http.max_body_bytes), True
        raise error
    if isinstance(error, BodyTooLargeError):
        if not narrowed and can_narrow:
            chunk_ms = _narrower(span_ms, error.body_bytes, plan.http.max_body_bytes)
            _log.info(
                "%s: %s; asking for %g s instead of %g s", error.url, error.message, chunk_ms / 1000, span_ms / 1000
            )
            return chunk_ms, True
        tried = f"the range {_iso(a_ms * 1_000_000)}..{_iso(b_ms * 1_000_000)} ({span_ms / 1000:g} s)"
        how = ", already narrowed once" if narrowed else ""
        raise BodyTooLargeError(error.url, error.status, f"{error.message}: {tried}{how}", error.body_bytes) from None
    if plan.api == "read" and opts.api is None and first and error.status in _NO_REMOTE_READ:
        _log.info("%s: no remote read (HTTP %s); pulling through /api/v1/query", plan.http.shown, error.status)
        plan.api = "query"
        return chunk_ms, narrowed
    # Too many samples for the server in one query: the same range in halves (the server's
    # refusal is a few bytes, not a body).
    too_many = (error.status == 422 and "too many samples" in str(error)) or (
        error.status == 400 and "sample limit" in str(error)
    )
    if too_many and can_narrow:
        return max(MIN_CHUNK_S * 1000, span_ms // 2), narrowed
    raise error


def _next_chunk_ms(samples: int, largest_body: int, span_ms: int, groups: int, budget: int) -> int:
    """The next chunk's length, from the density of the chunk just pulled over ``span_ms``.

    Aimed at :data:`TARGET_SAMPLES_PER_RESPONSE` samples per response, and at half the byte
    budget per answer, so that a small ``--limit max_document_bytes`` is met by the chunk size,
    not by refused answers.
    """
    per_ms = samples / max(1, span_ms) / max(1, groups)
    want = TARGET_SAMPLES_PER_RESPONSE / per_ms if per_ms > 0 else MAX_CHUNK_S * 1000
    bytes_per_ms = largest_body / max(1, span_ms)
    if bytes_per_ms > 0:
        want = min(want, budget / 2 / bytes_per_ms)
    return int(min(MAX_CHUNK_S * 1000, max(MIN_CHUNK_S * 1000, want)))


def _pull(
    url: str, opts: RemoteOptions, read_kwargs: Mapping[str, object], progress: Progress | None, deadline: float | None
) -> Iterator[tuple[str, pl.DataFrame, dict[str, object] | None]]:
    """Yield ``(kind, frame, report)`` for a server pull, chunk by chunk, in time order."""
    http = HttpClient(url, opts.connection, max_body_bytes=_body_budget(read_kwargs), deadline=deadline)
    # No gzip from a server: compressing tens of MB of JSON costs the server more CPU than the
    # transfer saves on a data-centre network (measured in BENCHMARKS.md: a 10^6-sample pull took
    # 3x longer with gzip); remote read bodies are snappy-compressed already.
    http.headers.pop("Accept-Encoding", None)
    since, until = opts.window()
    plan = _plan(http, opts, read_kwargs, since, until)
    if plan is None:
        return
    chunk_ms = round((opts.chunk_s or FIRST_CHUNK_S) * 1000)
    start_ms, end_ms = -(-since // 1_000_000), -(-until // 1_000_000)
    total_samples = 0
    # Whether the chunk in hand was narrowed already because an answer outgrew the byte budget.
    narrowed = False
    with _futures.ThreadPoolExecutor(max_workers=max(1, opts.connection.concurrency)) as pool:
        a = start_ms
        while a < end_ms:
            if plan.step_ms is not None:
                # Chunks of whole steps keep one step grid, anchored at ``since``, across chunks.
                chunk_ms = max(plan.step_ms, chunk_ms // plan.step_ms * plan.step_ms)
            b = min(end_ms, a + chunk_ms)
            try:
                # Each request is decoded on its worker thread as soon as it arrives (the decoder
                # releases the GIL), so decoding overlaps the server's work on the other groups.
                results = list(pool.map(lambda g, a=a, b=b: _decode(plan, _ask(plan, g, a, b), a, b), plan.groups))
            except (LimitExceededError, RemoteError) as e:
                chunk_ms, narrowed = _ask_again(plan, opts, e, a, b, chunk_ms, first=a == start_ms, narrowed=narrowed)
                continue
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
                largest = max(size for *_, size in results)
                chunk_ms = _next_chunk_ms(chunk_samples, largest, b - a, len(plan.groups), http.max_body_bytes)
            a = b


def _scrape(
    url: str, opts: RemoteOptions, read_kwargs: Mapping[str, object], progress: Progress | None, deadline: float | None
) -> Iterator[tuple[str, pl.DataFrame, dict[str, object] | None]]:
    """Yield ``(kind, frame, report)`` for ``repeat`` scrapes of an exporter endpoint."""
    http = HttpClient(url, opts.connection, max_body_bytes=_body_budget(read_kwargs), deadline=deadline)
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
        >>> from fabricscope.reading.prometheus import load_url
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
    # As fabricscope.reading.scan.empty_samples builds it (that module imports this one): the core's schema
    # through the Arrow C interface, without importing pyarrow.
    return pl.DataFrame(schema=pl.Schema(schema))  # type: ignore[arg-type]
