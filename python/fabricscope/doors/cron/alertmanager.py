"""Alertmanager: cron's open incidents as alerts, through the v2 API (``POST /api/v2/alerts``).

Each active incident of cron's incident lifecycle is one alert. Every warning or critical fault is
an incident's root or member (a fault nothing relates to another finding is a one-finding incident),
so one alert per incident covers them all, and no finding is sent both alone and inside an
incident. A fault of a lifecycle stored before that (an active warning or critical fault no active
incident holds) is still sent, as ``FabricscopeFault`` with a ``fault_id`` label instead of
``incident_id`` and ``rule``, so that nothing ``fabricscope analyze`` reports is missing from
Alertmanager. Its labels are stable for the life
of the incident (``alertname``, ``fabric``, ``incident_id``, ``rule``, ``kind`` of the root,
``host``, ``device``, ``port``, ``priority`` where the root names them, and ``severity``), so
Alertmanager deduplicates the re-sends of every run into one alert and groups them by whatever its
route's ``group_by`` names. Annotations carry what a human reads: ``title`` (also ``summary``),
``action``, ``description`` (the consequences), and ``evidence`` (a link, when given).

Alertmanager expects the sender to repeat a firing alert: an alert not re-sent before its
``endsAt`` resolves by itself. A firing alert is sent with ``endsAt`` four run intervals ahead, as
Prometheus does for its own alerting rules (``ValidUntil = now + 4 * max(evaluation interval,
resend delay)``, prometheus/rules/alerting.go ``sendAlerts``: "allow for two Eval or Alertmanager
send failures"). When the lifecycle resolves an incident, its alert is sent once more with
``endsAt`` at the resolution time.

What each Alertmanager last received is kept in ``alertmanager.json`` in cron's state directory,
per URL (without credentials): an incident that resolved while an Alertmanager was down is
resolved there at its next successful delivery, and an incident whose labels changed (its
severity rose) has its old alert resolved. Delivery comes after cron's commit point: a down,
slow or refusing Alertmanager costs one short attempt per run and never cron's state. Only a 2xx
answer to the POST itself counts as delivered: a redirect is followed only as 307 or 308 (which
repeat the POST with its body); a 301, 302 or 303 would turn it into a GET that delivers nothing,
so it is a failed delivery, sent again next run.
"""

from __future__ import annotations

import datetime as dt
import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import polars as pl

from fabricscope import _atomic
from fabricscope.exceptions import RemoteError
from fabricscope.incidents.correlate import standalone_faults
from fabricscope.redaction import printable
from fabricscope.transport import Connection, HttpClient, redact

__all__ = [
    "ALERTNAME",
    "FAULT_ALERTNAME",
    "AlertmanagerOptions",
    "Delivery",
    "deliver",
    "incident_alerts",
]

#: The ``alertname`` label of every fabricscope incident alert.
ALERTNAME = "FabricscopeIncident"
#: The ``alertname`` of an active fault that no incident holds.
FAULT_ALERTNAME = "FabricscopeFault"
#: A firing alert is valid for this many run intervals (Prometheus's rule manager: 4, see the
#: module docstring).
VALID_INTERVALS = 4
#: Seconds one delivery (connect, request and answer) may take at most (fabricscope default: cron
#: runs every minute in the documented crontab; the next run re-sends whatever this one could not
#: deliver). A lower ``--timeout`` lowers it.
MAX_TIMEOUT_S = 10.0
#: The file in cron's state directory that records what each Alertmanager received.
STATE_FILE = "alertmanager.json"

_LABEL_COLUMNS = (("kind", "root_kind"), ("host", "host"), ("device", "device"), ("port", "port"))


@dataclass(frozen=True)
class AlertmanagerOptions:
    """Where and how cron sends its incidents.

    Attributes:
        urls: Alertmanager base URLs (``http://alertmanager:9093``); each gets every alert.
        connection: Authentication, TLS, headers and timeout (one attempt per run: its
            ``timeout_s``, at most :data:`MAX_TIMEOUT_S` seconds, bounds the whole exchange).
        fabric: The ``fabric`` label: which fabric this cron watches.
        interval_s: Seconds between cron runs: a firing alert is valid for
            :data:`VALID_INTERVALS` of them.
        evidence_url: A link to the evidence (a dashboard or report URL); ``{incident_id}`` in
            it is replaced by the incident's id. Sent as ``generatorURL`` and the ``evidence``
            annotation.
    """

    urls: tuple[str, ...]
    connection: Connection = field(default_factory=Connection)
    fabric: str = "default"
    interval_s: float = 60.0
    evidence_url: str | None = None


@dataclass(frozen=True)
class Delivery:
    """What one Alertmanager was sent by one run.

    Attributes:
        url: The Alertmanager's URL without credentials or query.
        firing: Firing alerts sent.
        resolved: Resolved alerts sent.
        error: Why the delivery failed (None: delivered); the next run sends again.
    """

    url: str
    firing: int
    resolved: int
    error: str | None = None

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready (cron's document)."""
        return {"url": self.url, "firing": self.firing, "resolved": self.resolved, "error": self.error}


def _iso(t: dt.datetime) -> str:
    return t.astimezone(dt.timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _utc(t: dt.datetime) -> dt.datetime:
    return t if t.tzinfo is not None else t.replace(tzinfo=dt.timezone.utc)


def _labels(row: dict[str, Any], fabric: str) -> dict[str, str]:
    if row.get("fault_id"):
        labels = {"alertname": FAULT_ALERTNAME, "fabric": fabric, "fault_id": row["fault_id"]}
    else:
        labels = {"alertname": ALERTNAME, "fabric": fabric, "incident_id": row["incident_id"], "rule": row["rule"]}
    for name, col in _LABEL_COLUMNS:
        if row.get(col) is not None:
            # Names from the data, shown by every receiver (mail, chat, pager): escaped as in any output.
            labels[name] = printable(str(row[col]))
    if row.get("priority") is not None:
        labels["priority"] = str(row["priority"])
    labels["severity"] = row["severity"]
    return labels


def _description(row: dict[str, Any]) -> str:
    try:
        members = json.loads(row.get("members") or "[]")
    except ValueError:
        members = []
    where = " ".join(str(row[c]) for c in ("host", "device", "port") if row.get(c) is not None)
    text = f"{row['root_kind']} on {where or 'the fabric'} ({row['severity']}), seen in {row['runs']} run(s)"
    if members:
        shown = ", ".join(
            f"{m.get('kind')} on {' '.join(str(m[c]) for c in ('host', 'device', 'port') if m.get(c) is not None)}"
            for m in members[:5]
        )
        more = f" and {len(members) - 5} more" if len(members) > 5 else ""
        text += f"; consequences: {shown}{more}"
    return text


def _affected_hosts(row: dict[str, Any]) -> list[str]:
    """The root's host, then every other host among the incident's consequences, each once."""
    try:
        members = json.loads(row.get("members") or "[]")
    except ValueError:
        members = []
    out: list[str] = []
    for h in [row.get("host"), *(m.get("host") for m in members if isinstance(m, dict))]:
        if h and str(h) not in out:
            out.append(str(h))
    return out


def _forecast_annotations(row: dict[str, Any], faults: pl.DataFrame | None) -> dict[str, str]:
    """A wear-out forecast's crossing time, from its fault's last evidence (``threshold_eta``, RFC 3339)."""
    if row["root_kind"] != "link_wearout" or faults is None or faults.is_empty():
        return {}
    match = faults.filter(
        (pl.col("kind") == "link_wearout")
        & (pl.col("host") == row["host"])
        & pl.col("device").eq_missing(row["device"])
        & pl.col("port").eq_missing(row["port"])
        & pl.col("resolved_at").is_null()
    )
    for f in match.iter_rows(named=True):
        try:
            ev = json.loads(f["last_evidence"] or "{}")
        except ValueError:
            continue
        eta = ev.get("threshold_eta_s") if isinstance(ev, dict) else None
        if isinstance(eta, (int, float)) and f["last_seen"] is not None:
            crossing = _utc(f["last_seen"]) + dt.timedelta(seconds=float(eta))
            return {"threshold_eta": _iso(crossing), "threshold_eta_s": f"{eta:.0f}"}
    return {}


def incident_alerts(
    lifecycle: pl.DataFrame,
    delivered: dict[str, dict[str, Any]],
    now: dt.datetime,
    opts: AlertmanagerOptions,
    faults: pl.DataFrame | None = None,
) -> tuple[list[dict[str, Any]], dict[str, dict[str, Any]], int]:
    """The v2 alerts one run sends, and what the receiver holds once it accepts them.

    Args:
        lifecycle: Cron's incident lifecycle (``fabricscope.doors.cron.incident_lifecycle.INCIDENTS_SCHEMA``).
        delivered: What the receiver last accepted: incident (or fault) id -> ``{"labels", "startsAt"}``.
        now: The run's wall time.
        opts: Labels, interval and evidence link.
        faults: Cron's fault lifecycle (``fabricscope.reading.history.LIFECYCLE_SCHEMA``): its warning and
            critical faults outside every active incident are alerts of their own.

    Returns:
        ``(alerts, firing, resolved)``: the JSON alerts (firing first), the firing ones as the
        new ``delivered`` record, and how many alerts are resolutions.
    """
    now = _utc(now)
    valid_until = now + dt.timedelta(seconds=VALID_INTERVALS * opts.interval_s)
    rows = {r["incident_id"]: r for r in lifecycle.iter_rows(named=True)}
    rows.update((r["fault_id"], r) for r in standalone_faults(lifecycle, faults))
    alerts: list[dict[str, Any]] = []
    firing: dict[str, dict[str, Any]] = {}
    for ident, row in rows.items():
        if row["resolved_at"] is not None:
            continue
        starts = min(_utc(row["first_seen"]) if row["first_seen"] is not None else now, now)
        labels = _labels(row, opts.fabric)
        annotations = {
            "title": printable(row["title"] or row["root_kind"]),
            "summary": printable(row["title"] or row["root_kind"]),
            "description": printable(_description(row)),
        }
        if row["action"]:
            annotations["action"] = printable(row["action"])
        if hosts := _affected_hosts(row):
            # every host the fault reached, root first: the members the description abbreviates
            annotations["hosts"] = printable(", ".join(hosts))
        annotations.update(_forecast_annotations(row, faults))
        alert: dict[str, Any] = {
            "labels": labels,
            "annotations": annotations,
            "startsAt": _iso(starts),
            "endsAt": _iso(valid_until),
        }
        if opts.evidence_url:
            link = opts.evidence_url.replace("{incident_id}", ident)
            annotations["evidence"] = link
            alert["generatorURL"] = link
        alerts.append(alert)
        firing[ident] = {"labels": labels, "startsAt": alert["startsAt"]}
    resolved = 0
    for ident, sent in sorted(delivered.items()):
        if ident in firing and firing[ident]["labels"] == sent.get("labels"):
            continue
        row = rows.get(ident)
        # Resolved by the lifecycle: at its resolution time (never in the future, never before
        # the alert began); gone from the lifecycle or relabelled: now.
        ends = now
        if row is not None and row["resolved_at"] is not None and ident not in firing:
            ends = min(_utc(row["resolved_at"]), now)
        starts = dt.datetime.fromisoformat(str(sent.get("startsAt", _iso(now))).replace("Z", "+00:00"))
        alerts.append({"labels": sent.get("labels", {}), "startsAt": _iso(starts), "endsAt": _iso(max(ends, starts))})
        resolved += 1
    return alerts, firing, resolved


def _read_state(path: Path) -> dict[str, dict[str, dict[str, Any]]]:
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError):
        # A damaged record only means some resolutions are not re-sent: those alerts still end
        # by themselves at their endsAt.
        return {}
    return doc if isinstance(doc, dict) else {}


def deliver(
    opts: AlertmanagerOptions,
    lifecycle: pl.DataFrame,
    state_dir: Path,
    now: dt.datetime,
    faults: pl.DataFrame | None = None,
) -> list[Delivery]:
    """Send the incident (and standalone fault) alerts to every Alertmanager; one :class:`Delivery` per URL.

    Never raises for a receiver's failure: it is reported in the :class:`Delivery` and the
    receiver's record is left as it was, so the next run sends the same resolutions again.
    """
    path = Path(state_dir) / STATE_FILE
    record = _read_state(path)
    # One bound for the whole delivery to one receiver (connect, request, answer): --timeout, at
    # most MAX_TIMEOUT_S. The delivery runs while cron holds its locks, so a receiver that drips
    # its answer costs one bounded attempt per run, never a run that does not end.
    bound = min(opts.connection.timeout_s, MAX_TIMEOUT_S)
    conn = replace(opts.connection, retries=0, timeout_s=bound, deadline_s=bound)
    if opts.connection.timeout_s <= MAX_TIMEOUT_S:
        option = "--timeout"
    else:
        option = f"one Alertmanager delivery takes at most {MAX_TIMEOUT_S:g} s; --timeout lowers it"
    out: list[Delivery] = []
    for url in _unique(opts.urls):
        shown = redact(url)
        delivered = record.get(shown, {})
        alerts, firing, resolved = incident_alerts(lifecycle, delivered, now, opts, faults)
        if not alerts:
            out.append(Delivery(shown, 0, 0))
            continue
        try:
            # One policy for every request (redirects, byte budget, redaction, the deadline).
            http = HttpClient(url, conn, deadline=time.monotonic() + bound, deadline_option=option)
            http.request(
                "/api/v2/alerts", body=json.dumps(alerts).encode(), headers={"Content-Type": "application/json"}
            )
        except RemoteError as e:
            out.append(Delivery(shown, len(firing), resolved, str(e)))
            continue
        record[shown] = firing
        out.append(Delivery(shown, len(firing), resolved))
    try:
        _atomic.write_text(path, json.dumps(record, indent=1, sort_keys=True) + "\n", mode=0o600)
    except OSError as e:
        out = [replace(d, error=d.error or f"cannot record the delivery in {path}: {e.strerror}") for d in out]
    return out


def _unique(urls: Sequence[str]) -> list[str]:
    seen: dict[str, None] = {}
    for u in urls:
        seen.setdefault(u.rstrip("/"), None)
    return list(seen)
