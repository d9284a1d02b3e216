"""The findings contract: schema, merging over time, severity, the JSON document, exit status.

Other tools and the dashboard depend on this exactly; change it only with a new schema version.

Document (``fabricscope analyze --json``)::

    {"schema": "fabricscope.findings/2",
     "status": "ok" | "warning" | "critical",
     "inputs": [{"path": str, "format": str, "records": int, "rejected": int}],
     "incidents": [{"id", "severity", "title", "action", "rule", "entity", "start", "end", "hosts",
                    "root", "consequences", "decided", "topology"}],
     "findings": [{"kind", "severity", "host", "device", "port", "priority", "layer",
                   "start", "end", "metric", "observed", "expected", "message", "evidence",
                   "incident", "role"}]}

``fabricscope.findings/1`` is the same without ``incidents`` and without the findings' ``incident``
and ``role`` (``--schema fabricscope.findings/1``).
"""

from __future__ import annotations

import datetime as dt
import json
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import polars as pl

from fabricscope.incidents.severity import SEVERITIES, Severity, Status

__all__ = [
    "FINDINGS_SCHEMA",
    "SCHEMAS",
    "SCHEMA_ID",
    "SCHEMA_ID_V2",
    "document",
    "document_order",
    "empty_findings",
    "exit_status",
    "finding_key",
    "json_safe",
    "json_text",
    "links_to_replace",
    "make_findings",
    "merge_same_fault",
    "merge_windows",
    "overall_status",
    "rfc3339",
]

SCHEMA_ID = "fabricscope.findings/1"
SCHEMA_ID_V2 = "fabricscope.findings/2"
SCHEMAS = (SCHEMA_ID_V2, SCHEMA_ID)
LAYERS = ("nvlink", "network", "pcie", "cxl")

FINDINGS_SCHEMA = pl.Schema(
    {
        "kind": pl.String,
        "severity": pl.String,
        "host": pl.String,
        "device": pl.String,
        "port": pl.Int64,
        "priority": pl.Int64,
        "layer": pl.String,
        "start": pl.Datetime("ns", "UTC"),
        "end": pl.Datetime("ns", "UTC"),
        "metric": pl.String,
        "observed": pl.Float64,
        "expected": pl.Float64,
        "message": pl.String,
        # JSON text: evidence objects differ per kind, and a struct column would force one shape.
        "evidence": pl.String,
    }
)


def empty_findings() -> pl.DataFrame:
    """A findings frame with no rows and the contract's schema."""
    return pl.DataFrame(schema=FINDINGS_SCHEMA)


def make_findings(rows: Iterable[dict[str, Any]]) -> pl.DataFrame:
    """Build a findings frame from dicts, validating kind, severity and layer.

    ``evidence`` may be a dict (serialised to JSON) or JSON text.

    Raises:
        ValueError: a value outside the contract.
    """
    out = []
    for r in rows:
        # Which kinds a detector may emit is its spec's business (fabricscope.detect.KINDS); here only shape.
        if not isinstance(r["kind"], str) or not r["kind"].isidentifier():
            raise ValueError(f"finding kind must be a name, not {r['kind']!r}")
        if r["severity"] not in SEVERITIES:
            raise ValueError(f"unknown severity {r['severity']!r}")
        if r.get("layer") is not None and r["layer"] not in LAYERS:
            raise ValueError(f"unknown layer {r['layer']!r}")
        row = {k: r.get(k) for k in FINDINGS_SCHEMA.names()}
        ev = r.get("evidence", {})
        if not isinstance(ev, str):
            ev = json_text(_significant(ev), sort_keys=True)
        row["evidence"] = ev
        out.append(row)
    if not out:
        return empty_findings()
    return pl.DataFrame(out, schema=FINDINGS_SCHEMA)


def merge_windows(
    flagged: pl.DataFrame,
    *,
    keys: Sequence[str],
    max_gap_s: float | pl.Expr,
    aggs: Sequence[pl.Expr] = (),
) -> pl.DataFrame:
    """Merge flagged intervals of one entity into windows (one finding per fault, not per sample).

    Args:
        flagged: Rows with ``start``/``end`` datetimes and the ``keys`` columns, one per flagged
            interval.
        keys: Columns identifying the entity and fault (e.g. host, device, port, counter).
        max_gap_s: Intervals separated by at most this much join one window (a number, or an
            expression evaluated per row, e.g. twice the series' sampling interval).
        aggs: Extra aggregations per window (e.g. ``pl.col("delta").sum()``).

    Returns:
        One row per window: ``keys``, ``_window``, ``start``, ``end``, ``intervals`` (count) and
        the extra aggregations.
    """
    gap_s = pl.lit(max_gap_s) if not isinstance(max_gap_s, pl.Expr) else max_gap_s
    gap = pl.duration(microseconds=(gap_s * 1e6).cast(pl.Int64))
    return (
        flagged.sort([*keys, "start"])
        .with_columns(
            ((pl.col("start") - pl.col("end").shift(1).over(list(keys))).fill_null(pl.duration(days=365_000)) > gap)
            .cum_sum()
            .over(list(keys))
            .alias("_window")
        )
        .group_by([*keys, "_window"], maintain_order=True)
        .agg(pl.col("start").min(), pl.col("end").max(), pl.len().alias("intervals"), *aggs)
    )


def merge_same_fault(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Fold finding rows of one kind and entity whose windows overlap into one finding.

    A detector with several rules (e.g. a PFC storm seen both as 99% pause and as unbroken pause
    with collapsed throughput) must still report one finding per fault and entity. The most severe
    row (first on ties) is kept; the others' evidence is appended under ``also_fired``, and the
    window becomes the union.
    """
    ordered = sorted(rows, key=lambda r: -Severity(r["severity"]).rank)
    kept: list[dict[str, Any]] = []
    for r in ordered:
        key = (r["kind"], r.get("host"), r.get("device"), r.get("port"), r.get("priority"))
        for k in kept:
            if (k["kind"], k.get("host"), k.get("device"), k.get("port"), k.get("priority")) != key:
                continue
            ks, ke, rs, re_ = k.get("start"), k.get("end"), r.get("start"), r.get("end")
            overlap = None in (ks, ke, rs, re_) or (rs <= ke and ks <= re_)
            if overlap:
                ev = dict(k.get("evidence") or {})
                ev.setdefault("also_fired", []).append(r.get("evidence") or {})
                k["evidence"] = ev
                if None not in (ks, ke, rs, re_):
                    k["start"], k["end"] = min(ks, rs), max(ke, re_)
                break
        else:
            kept.append(dict(r))
    return kept


def overall_status(findings: pl.DataFrame, failed_inputs: int = 0, *, analysed: bool = True) -> str:
    """``ok`` when nothing is above info, else the worst severity; ``unknown`` for an unreadable input.

    An input that could not be read makes the verdict incomplete, so it raises the status to
    ``unknown`` unless a critical finding was made anyway: the order is the worst-state order of
    Nagios and Icinga (OK < WARNING < UNKNOWN < CRITICAL; Icinga 2 documentation, "Monitoring
    Basics", state types and the `icinga` check's "worst state"). A check that analysed nothing
    (``analysed`` False: no input held counters or results) has no verdict either: ``unknown``, never ``ok``.

    Example:
        >>> from fabricscope.incidents.findings import make_findings, overall_status
        >>> f = make_findings([{"kind": "link_errors", "severity": "warning", "metric": "m", "message": "x",
        ...                     "evidence": {"rule": "r"}}])
        >>> overall_status(f), overall_status(f, failed_inputs=1)
        ('warning', 'unknown')
    """
    worst = Severity.worst(findings["severity"].to_list())
    return Status.of(worst, failed_inputs=failed_inputs, analysed=analysed).value


STATUS_EXIT = {s.value: s.exit_code for s in Status}
"""The Nagios exit status of each :func:`overall_status` verdict (:attr:`Status.exit_code`)."""


def exit_status(findings: pl.DataFrame, failed_inputs: int = 0, *, analysed: bool = True) -> int:
    """Nagios convention: 0 nothing above info, 1 a warning, 2 a critical, 3 unknown.

    3 means an unreadable input, or nothing analysed, and no critical finding (see
    :func:`overall_status`).
    """
    return STATUS_EXIT[overall_status(findings, failed_inputs, analysed=analysed)]


DESCRIPTIVE_TABLES = frozenset({"links", "entities", "attributes", "nccl_ranks"})
"""Tables that describe the fabric (cables, names, port attributes, rank placement) without measuring it."""


def analysed_anything(sample_rows: int, tables: Mapping[str, pl.DataFrame] | None = None) -> bool:
    """Whether anything was measured: a counter sample, or a row of a result table (benchmarks, captures).

    An input that only describes the fabric (``ibdev2netdev``, an LLDP or ``ibnetdiscover`` table:
    the :data:`DESCRIPTIVE_TABLES` and port attributes) judges no counter: no verdict exists.

    Example:
        >>> import polars as pl
        >>> from fabricscope.incidents.findings import analysed_anything
        >>> links = pl.DataFrame({"node_guid": ["0x1"]})
        >>> analysed_anything(0, {"links": links}), analysed_anything(0, {"perftest_results": links})
        (False, True)
    """
    measured = (t.height > 0 for name, t in (tables or {}).items() if name not in DESCRIPTIVE_TABLES)
    return sample_rows > 0 or any(measured) or _holds_states((tables or {}).get("attributes"))


STATE_KEYS = frozenset(
    {"state", "phys_state", "port_state", "link_state", "nvlink_state", "fabric_state", "fabric_status"}
)
"""Attribute keys that are a port's or link's state (``rdma link``, ``nvidia-smi nvlink -s``, sysfs):
an input holding them is judged (a Polling port is a finding, all links up is OK; a GPU's NVLink fabric state
from `nvidia-smi -q`), not descriptive."""


def _holds_states(attributes: pl.DataFrame | None) -> bool:
    if attributes is None or attributes.is_empty() or "key" not in attributes.columns:
        return False
    return not attributes.filter(pl.col("key").cast(pl.String).is_in(list(STATE_KEYS))).is_empty()


def _significant(value: Any) -> Any:
    """Evidence floats to 12 significant digits.

    A sum's last bits depend on the order rows arrive in (partitions, threads) and no reader needs
    them; rounded, the same evidence reads the same on every path.
    """
    if isinstance(value, float):
        return float(f"{value:.12g}")
    if isinstance(value, dict):
        return {k: _significant(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_significant(v) for v in value]
    return value


def _json_default(o: object) -> object:
    if isinstance(o, dt.datetime):
        return rfc3339(o)
    if isinstance(o, float) and o != o:  # NaN is not JSON
        return None
    return str(o)


def json_safe(value: Any) -> Any:
    """``value`` with every non-finite float (``inf``, ``-inf``, ``nan``) replaced by None, at any depth.

    JSON has no such numbers: Python writes them as ``Infinity`` and ``NaN``, which no strict
    parser (``jq``, JavaScript's ``JSON.parse``, Go) reads. A number that is not finite is
    unknown, and JSON says unknown as ``null`` (docs/schema.md).

    Example:
        >>> from fabricscope.incidents.findings import json_safe
        >>> json_safe({"count": float("inf"), "rates": [1.5, float("nan")]})
        {'count': None, 'rates': [1.5, None]}
    """
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    return value


def json_text(
    value: Any, *, indent: int | None = None, sort_keys: bool = False, default: Callable[[Any], Any] | None = None
) -> str:
    """Strict JSON text of ``value``: non-finite numbers as null (:func:`json_safe`), datetimes as RFC 3339.

    Every ``--json`` output of every command is written by this function, so each is JSON any
    parser reads; objects JSON has no type for are written as their text (``default`` overrides how).

    Example:
        >>> from fabricscope.incidents.findings import json_text
        >>> json_text({"count": float("inf")})
        '{"count": null}'
    """
    return json.dumps(
        json_safe(value), indent=indent, sort_keys=sort_keys, default=default or _json_default, allow_nan=False
    )


def rfc3339(t: dt.datetime | None) -> str | None:
    """A datetime as RFC 3339 UTC text (``...Z``), as the document writes times; None stays None."""
    if t is None:
        return None
    if t.tzinfo is None:
        t = t.replace(tzinfo=dt.timezone.utc)
    return t.astimezone(dt.timezone.utc).isoformat().replace("+00:00", "Z")


def _finite(v: float | None) -> float | None:
    if v is None or v != v or v in (float("inf"), float("-inf")):
        return None
    return v


def document_order(findings: pl.DataFrame) -> pl.DataFrame:
    """Findings in the order the document lists them: worst first, then kind, host, device, port.

    Ties (two metrics of one port) are broken by priority, metric, window and message, so the same
    inputs in any order list the same document; stable beyond that, so lists kept beside the
    document (cron's ``fault_ids``) stay aligned.
    """
    rank = -Severity.rank_expr()
    keys = [rank, "kind", pl.col("host").fill_null(""), pl.col("device").fill_null(""), pl.col("port").fill_null(0)]
    ties = [pl.col("priority").fill_null(-1), pl.col("metric").fill_null(""), "start", "end", "message"]
    return findings.sort([*keys, *ties], nulls_last=True, maintain_order=True)


def document(
    findings: pl.DataFrame,
    inputs: Sequence[dict[str, Any]],
    incidents: Sequence[dict[str, Any]] | None = None,
    *,
    schema: str | None = None,
    analysed: bool = True,
    conflicts: Sequence[Mapping[str, Any]] = (),
) -> dict[str, Any]:
    """The JSON document of the contract.

    Args:
        findings: A frame with :data:`FINDINGS_SCHEMA`.
        inputs: ``{"path", "format", "records", "rejected"}`` per input, plus ``"error"`` (the reason)
            for an input that could not be read.
        incidents: Incident documents (:func:`fabricscope.incidents.correlate.incident_documents`).
        schema: :data:`SCHEMA_ID_V2` (with ``incidents``; the default when incidents are given) or
            :data:`SCHEMA_ID` (the version 1 shape, for existing consumers).
        analysed: False when no input gave telemetry: the status is then ``unknown``
            (see :func:`overall_status`).
        conflicts: Names two inputs map differently and what was decided
            (:meth:`fabricscope.fabric.entities.Conflict.as_dict`, sorted); version 2 lists them.

    Raises:
        ValueError: an unknown schema.

    Example:
        >>> from fabricscope.incidents.findings import document, make_findings
        >>> f = make_findings([{"kind": "link_errors", "severity": "warning", "metric": "symbol_errors",
        ...                     "message": "x", "evidence": {"rule": "r"}}])
        >>> document(f, [])["status"]
        'warning'
    """
    schema = schema or (SCHEMA_ID if incidents is None else SCHEMA_ID_V2)
    if schema not in SCHEMAS:
        raise ValueError(f"unknown findings schema {schema!r}; known: {', '.join(SCHEMAS)}")
    v2 = schema == SCHEMA_ID_V2
    role: dict[tuple[Any, ...], tuple[str, str]] = {}
    for inc in incidents or []:
        role[finding_key(inc["root"])] = (inc["id"], "root")
        for c in inc["consequences"]:
            role[finding_key(c["finding"])] = (inc["id"], "consequence")
    out = []
    for r in document_order(findings).iter_rows(named=True):
        out.append(
            {
                "kind": r["kind"],
                "severity": r["severity"],
                "host": r["host"],
                "device": r["device"],
                "port": r["port"],
                "priority": r["priority"],
                "layer": r["layer"],
                "start": rfc3339(r["start"]),
                "end": rfc3339(r["end"]),
                "metric": r["metric"],
                "observed": _finite(r["observed"]),
                "expected": _finite(r["expected"]),
                "message": r["message"],
                "evidence": json.loads(r["evidence"]) if r["evidence"] else {},
            }
        )
        if v2:
            inc_id, inc_role = role.get(finding_key(r), (None, None))
            out[-1]["incident"] = inc_id
            out[-1]["role"] = inc_role
    failed = sum(1 for i in inputs if i.get("error"))
    doc: dict[str, Any] = {
        "schema": schema,
        "status": overall_status(findings, failed, analysed=analysed),
        "inputs": [
            {
                "path": i["path"],
                "format": i["format"],
                "records": int(i["records"]),
                "rejected": int(i["rejected"]),
                **({"error": i["error"]} if i.get("error") else {}),
            }
            # by path: the same inputs given in any order make the same document
            for i in sorted(inputs, key=lambda i: str(i["path"]))
        ],
    }
    if v2:
        doc["incidents"] = list(incidents or [])
        doc["conflicts"] = list(conflicts)
    doc["findings"] = out
    return doc


def finding_key(f: Mapping[str, Any]) -> tuple[Any, ...]:
    """A finding's identity across the frame and incident references (start as RFC 3339 text)."""
    s = f.get("start")
    return (
        f["kind"],
        f.get("host"),
        f.get("device"),
        f.get("port"),
        f.get("priority"),
        f.get("metric"),
        s if isinstance(s, str) or s is None else rfc3339(s),
    )


def links_to_replace(findings: pl.DataFrame) -> pl.DataFrame:
    """The ``link_wearout`` forecasts as a table, soonest crossing first.

    The report and the dashboard show it; the fitted curve of each link is
    ``rate now x 2 ** (t / doubling)`` up to the warning rate.

    Example:
        >>> from fabricscope.incidents.findings import empty_findings
        >>> links_to_replace(empty_findings()).columns[:3]
        ['link', 'counter', 'crossing in (days)']
    """
    rows = []
    for r in findings.filter(pl.col("kind") == "link_wearout").iter_rows(named=True):
        ev = json.loads(r["evidence"] or "{}") if isinstance(r["evidence"], str) else (r["evidence"] or {})
        rows.append(
            {
                "link": "/".join(str(x) for x in (r["host"], r["device"], r["port"]) if x is not None),
                "counter": str(r["metric"] or "").removesuffix("_eta_s"),
                "crossing in (days)": ev.get("threshold_eta_s", float("nan")) / 86400,
                "crossing (UTC)": (r["end"] + dt.timedelta(seconds=ev["threshold_eta_s"])).strftime("%Y-%m-%d %H:%M")
                if r["end"] is not None and isinstance(ev.get("threshold_eta_s"), (int, float))
                else "-",
                "rate now (/h)": ev.get("current_rate_per_h"),
                "warning rate (/h)": ev.get("threshold_per_h"),
                "doubling (days)": (ev.get("doubling_time_s") or float("nan")) / 86400,
                "z": ev.get("z"),
                "hours used": ev.get("hours_used"),
            }
        )
    schema = {
        "link": pl.String,
        "counter": pl.String,
        "crossing in (days)": pl.Float64,
        "crossing (UTC)": pl.String,
        "rate now (/h)": pl.Float64,
        "warning rate (/h)": pl.Float64,
        "doubling (days)": pl.Float64,
        "z": pl.Float64,
        "hours used": pl.Int64,
    }
    return pl.DataFrame(rows, schema=schema).sort("crossing in (days)")
