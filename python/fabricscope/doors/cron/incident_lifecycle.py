"""Incident lifecycle: one incident across runs (first/last seen, resolved), like faults.

An incident is identified by its physical root: the host, device and port its root finding is on.
The same root found again by a later run continues the incident, whatever rule, detector or
consequences name it now (a port's flap alone in one run and its chain of loss in the next are one
fault, one page). An active incident this run did not find is resolved when its root's fault is resolved in the
fault lifecycle (the run had new data for the root's port and the root was gone); until then it
stays active, as its root does.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import polars as pl

from fabricscope.incidents.correlate import Incident
from fabricscope.incidents.severity import Severity
from fabricscope.reading.history import checked_parquet

__all__ = ["INCIDENTS_SCHEMA", "active_incidents", "read_incidents", "update_incidents"]

_TS = pl.Datetime("ns", "UTC")
_ROOT = ["root_kind", "host", "device", "port", "priority", "metric"]
INCIDENTS_SCHEMA = pl.Schema(
    {
        "incident_id": pl.String,
        "rule": pl.String,
        "root_kind": pl.String,
        "host": pl.String,
        "device": pl.String,
        "port": pl.Int64,
        "priority": pl.Int64,
        "metric": pl.String,
        "severity": pl.String,
        "title": pl.String,
        "action": pl.String,
        "first_seen": _TS,
        "last_seen": _TS,
        "resolved_at": _TS,
        "runs": pl.Int64,
        # JSON: the latest run's consequences (kind, host, device, port, relation)
        "members": pl.String,
    }
)


def read_incidents(history: Path) -> pl.DataFrame:
    """The stored incident lifecycle (empty with its schema when none was stored)."""
    p = Path(history) / "incidents.parquet"
    return pl.read_parquet(checked_parquet(p)) if p.is_file() else pl.DataFrame(schema=INCIDENTS_SCHEMA)


def _key(row: dict[str, Any]) -> tuple[Any, ...]:
    # an incident is its physical root: the port (or NIC, or host) its root finding is on, whatever
    # rule or detector names it this run (a flap alone last run, the same port's chain now)
    return (row["host"], row["device"], row["port"])


def _row(inc: Incident, now: dt.datetime) -> dict[str, Any]:
    r = inc.root
    members = [
        {k: c["finding"].get(k) for k in ("kind", "host", "device", "port")} | {"relation": c["relation"]}
        for c in inc.consequences
    ]
    return {
        "rule": inc.rule,
        "root_kind": r["kind"],
        "host": r.get("host"),
        "device": r.get("device"),
        "port": r.get("port"),
        "priority": r.get("priority"),
        "metric": r.get("metric"),
        "severity": inc.severity,
        "title": inc.title,
        "action": inc.action,
        "first_seen": inc.start or now,
        "last_seen": inc.end or now,
        "resolved_at": None,
        "runs": 1,
        "members": json.dumps(members, sort_keys=True, default=str),
    }


def update_incidents(
    stored: pl.DataFrame, incidents: Sequence[Incident], faults: pl.DataFrame, run_time: dt.datetime
) -> pl.DataFrame:
    """Fold this run's incidents into the stored lifecycle.

    Args:
        stored: The lifecycle so far (:data:`INCIDENTS_SCHEMA`).
        incidents: This run's incidents.
        faults: The fault lifecycle after this run (``fabricscope.reading.history.LIFECYCLE_SCHEMA``): an
            unseen incident resolves when its root's fault is resolved there.
        run_time: The run's wall time (for incidents without a window).

    Returns:
        The new lifecycle.
    """
    rows = {_key(r): r for r in stored.iter_rows(named=True)}
    seen: set[tuple[Any, ...]] = set()
    for inc in incidents:
        new = _row(inc, run_time)
        k = _key(new)
        seen.add(k)
        old = rows.get(k)
        if old is None or (old["resolved_at"] is not None and old["last_seen"] < new["first_seen"]):
            # a new incident (or the same root failing again after it was resolved: a new one)
            ident = "|".join(str(x) for x in (*k, new["first_seen"]))
            new["incident_id"] = "inc-" + hashlib.blake2b(ident.encode(), digest_size=5).hexdigest()
            rows[k] = new
            continue
        old.update(
            rule=new["rule"],
            root_kind=new["root_kind"],
            priority=new["priority"],
            metric=new["metric"],
            severity=str(Severity.worst([old["severity"], new["severity"]])),
            title=new["title"],
            action=new["action"],
            first_seen=min(old["first_seen"], new["first_seen"]),
            last_seen=max(old["last_seen"], new["last_seen"]),
            resolved_at=None,
            runs=old["runs"] + 1,
            members=new["members"],
        )
    resolved = {
        tuple(r[k] for k in ("kind", "host", "device", "port", "priority", "metric")): r["resolved_at"]
        for r in faults.iter_rows(named=True)
        if r["resolved_at"] is not None
    }
    active_roots = {
        tuple(r[k] for k in ("kind", "host", "device", "port", "priority", "metric"))
        for r in faults.iter_rows(named=True)
        if r["resolved_at"] is None
    }
    # A fault that stood alone last run and is now explained by another root is that incident's
    # member: its own incident ends, so no finding is alerted both alone and inside an incident.
    held_now = {
        (c["finding"].get("kind"), *(c["finding"].get(x) for x in ("host", "device", "port")))
        for inc in incidents
        for c in inc.consequences
    }
    for k, r in rows.items():
        if k in seen or r["resolved_at"] is not None:
            continue
        if (r["root_kind"], r["host"], r["device"], r["port"]) in held_now:
            r["resolved_at"] = run_time
            continue
        root = tuple(r[c] for c in _ROOT)
        if root not in active_roots and root in resolved:
            r["resolved_at"] = resolved[root]
    if not rows:
        return pl.DataFrame(schema=INCIDENTS_SCHEMA)
    return pl.DataFrame(list(rows.values()), schema=INCIDENTS_SCHEMA).sort("first_seen", "incident_id")


def active_incidents(lifecycle: pl.DataFrame) -> list[dict[str, Any]]:
    """Active incidents as JSON-ready dicts, worst first (the cron document's ``incident_lifecycle``)."""
    out = []
    for r in lifecycle.filter(pl.col("resolved_at").is_null()).iter_rows(named=True):
        d = {k: r[k] for k in INCIDENTS_SCHEMA.names() if k != "members"}
        for t in ("first_seen", "last_seen", "resolved_at"):
            d[t] = None if d[t] is None else d[t].isoformat().replace("+00:00", "Z")
        d["members"] = json.loads(r["members"] or "[]")
        out.append(d)
    out.sort(key=lambda d: (-Severity(d["severity"]).rank, d["first_seen"] or "", d["incident_id"]))
    return out
