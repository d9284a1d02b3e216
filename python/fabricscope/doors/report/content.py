"""What both report formats say, in neither's markup: the verdict, findings grouped per port, cell text.

The HTML (:mod:`fabricscope.doors.report.html`) and Markdown (:mod:`fabricscope.doors.report.markdown`)
renderers lay these out; neither decides what a report shows on its own.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
from typing import Any

import polars as pl

from fabricscope.doors.input_summary import time_range
from fabricscope.doors.report.gather import ReportData
from fabricscope.doors.summary import MAX_LISTED, fabric_summary
from fabricscope.incidents.severity import PAGING, SEVERITIES, Severity


def _sources_of(evidence: str | None) -> list[str]:
    """Every threshold source named in a finding's evidence (``threshold_source``, ``source``)."""
    out: list[str] = []

    def walk(o: Any) -> None:
        if isinstance(o, dict):
            for k, v in o.items():
                if k.endswith("source") and isinstance(v, str):
                    out.append(v)
                else:
                    walk(v)
        elif isinstance(o, list):
            for v in o:
                walk(v)

    with contextlib.suppress(ValueError):
        walk(json.loads(evidence or "{}"))
    return list(dict.fromkeys(out))


def _entity(r: dict[str, Any]) -> str:
    """A finding's ``host/device/port`` and priority, as the verdict names it (``gpu02/mlx5_0/1 p3``)."""
    ent = "/".join(str(x) for x in (r["host"], r["device"], r["port"]) if x is not None)
    return ent + (f" p{r['priority']}" if r["priority"] is not None else "")


def _port_of(r: dict[str, Any]) -> str:
    """The port (or device, or host) a finding is about: the report groups findings by it."""
    ent = "/".join(str(x) for x in (r["host"], r["device"], r["port"]) if x is not None)
    return ent or "fabric-wide"


def _fmt(v: Any) -> str:
    """A cell's text: ``-`` for a missing value, four significant digits, a time to the second."""
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.4g}"
    if isinstance(v, dt.datetime):
        return v.strftime("%Y-%m-%d %H:%M:%S")
    return str(v)


def _window(r: dict[str, Any]) -> str:
    """A finding's time window (UTC), as the input summary writes a range."""
    return time_range(r["start"], r["end"])


def _counts(findings: pl.DataFrame) -> dict[str, int]:
    """Findings per severity, every severity present."""
    c = dict.fromkeys(reversed(SEVERITIES), 0)
    for s in findings["severity"].to_list():
        c[s] += 1
    return c


def _groups(findings: pl.DataFrame) -> list[tuple[str, list[dict[str, Any]]]]:
    """Findings grouped per port; the port with the worst (then the most) findings first.

    Within a group the findings keep the frame's order (worst first).
    """
    groups: dict[str, list[dict[str, Any]]] = {}
    for r in findings.iter_rows(named=True):
        groups.setdefault(_port_of(r), []).append(r)
    return sorted(
        groups.items(),
        key=lambda kv: (-max(Severity(r["severity"]).rank for r in kv[1]), -len(kv[1])),
    )


def _listed(findings: pl.DataFrame) -> tuple[list[tuple[str, list[dict[str, Any]]]], pl.DataFrame]:
    """The port groups a person reads one by one (worst first, about :data:`MAX_LISTED` findings), and the rest.

    On a fabric of thousands of hosts one finding per port would bury the verdict and make a page
    of tens of megabytes; the rest is summarised per kind (:func:`fabricscope.doors.summary.fabric_summary`).
    """
    groups = _groups(findings)
    shown, n = [], 0
    for port, rows in groups:
        if shown and n + len(rows) > MAX_LISTED:
            break
        shown.append((port, rows))
        n += len(rows)
    if len(shown) == len(groups):
        return shown, findings.clear()
    listed = {port for port, _ in shown}
    rest = findings.filter(
        ~pl.Series([_port_of(r) in listed for r in findings.select("host", "device", "port").iter_rows(named=True)])
    )
    return shown, rest


def _not_listed(rest: pl.DataFrame) -> tuple[str, list[str]]:
    """The sentence and the per-kind lines that stand for findings not listed one by one."""
    hosts = rest["host"].drop_nulls().n_unique()
    head = (
        f"{rest.height:,} more finding(s) on {hosts:,} host(s), summarised per kind "
        "(every finding: fabricscope analyze --json):"
    )
    return head, fabric_summary(rest)


def _verdict(data: ReportData) -> tuple[str, str]:
    """The status and one sentence a person reads first: the incidents' roots when there are any."""
    status = data.status
    c = _counts(data.findings)
    serious = data.findings.filter(pl.col("severity") != "info")
    if not serious.height:
        note = f" ({c['info']} info finding(s) about the data, listed below)" if c["info"] else ""
        return status, f"No faults found in the inputs{note}."
    ports = len({_port_of(r) for r in serious.iter_rows(named=True)})
    parts = [f"{c[s]} {s}" for s in reversed(PAGING) if c[s]]
    if data.incidents:
        # The incidents are worst first; each names its root cause, which is what to fix.
        roots = "; ".join(f"{i.root['kind']} on {_entity(i.root)}" for i in data.incidents[:3])
        more = f" and {len(data.incidents) - 3} more" if len(data.incidents) > 3 else ""
        return status, (
            f"{len(data.incidents)} incident(s), root cause(s): {roots}{more}. "
            f"{' and '.join(parts)} finding(s) on {ports} port(s). First action: {data.incidents[0].action}"
        )
    worst = serious.row(0, named=True)
    return status, (
        f"{' and '.join(parts)} finding(s) on {ports} port(s). Worst: {worst['kind']} on {_entity(worst)}: "
        f"{worst['message']}"
    )


def _where(f: dict[str, Any]) -> str:
    """Where a finding is, in words (``gpu02 mlx5_0 port 1``); ``-`` when it names nothing."""
    bits = [str(x) for x in (f.get("host"), f.get("device")) if x]
    if f.get("port") is not None:
        bits.append(f"port {f['port']}")
    return " ".join(bits) or "-"


_CONFLICTS_NOTE = (
    "Names two inputs map differently: decided by the claims alone (never by the inputs' order); "
    "a tie is not joined. Settle a host's name with --host-alias ALIAS=HOST."
)


def _measured(r: dict[str, Any]) -> str:
    """What a finding measured against its limit (``pause_ratio = 0.42 (limit 0.1)``)."""
    if r["metric"] is None and r["observed"] is None:
        return "-"
    text = f"{r['metric'] or 'value'} = {_fmt(r['observed'])}"
    return text + (f" (limit {_fmt(r['expected'])})" if r["expected"] is not None else "")


def _busiest(findings: pl.DataFrame) -> pl.DataFrame:
    """The bottleneck findings, the busiest (largest observed) first."""
    bn = findings.filter(pl.col("kind") == "bottleneck")
    return bn.sort("observed", descending=True, nulls_last=True, maintain_order=True)


def _more_bottlenecks(bn: pl.DataFrame) -> str:
    """The note under a bottleneck list cut at :data:`~fabricscope.doors.summary.MAX_LISTED`."""
    return f"The {MAX_LISTED} busiest of {bn.height:,} shown; every one: fabricscope analyze --json."


def _formats_rows(data: ReportData) -> pl.DataFrame | None:
    """The per-format input summary as a table for people (time range in one column)."""
    if data.formats is None or not data.formats.height:
        return None
    return data.formats.select(
        "format",
        "files",
        "failed",
        "samples",
        "bad_records",
        pl.struct("first", "last")
        .map_elements(lambda t: time_range(t["first"], t["last"]), return_dtype=pl.String)
        .alias("time range (UTC)"),
    )
