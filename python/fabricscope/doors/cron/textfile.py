"""node_exporter textfile collector output (``fabricscope cron --textfile``).

The file is the Prometheus text exposition format 0.0.4 that node_exporter's
``--collector.textfile.directory`` picks up; it is written atomically (temp file in the same
directory, fsync, rename), as node_exporter's documentation asks, so a scrape never sees half of it.

Metrics:

* ``fabricscope_findings{kind,severity}``: active faults (every kind and severity, zeros included,
  so alert rules never see a series vanish).
* ``fabricscope_port_health{host,device,port}``: 0 ok, 1 warning, 2 critical (worst active fault
  on the port; a device- or host-level fault counts for each of its ports).
* ``fabricscope_link_wearout_eta_seconds{host,device,port,counter}``: for each active
  ``link_wearout`` fault, seconds from the run's end until its error rate is forecast to cross the
  ``link_errors`` warning rate (``evidence.threshold_eta_s`` from its last sample; 0 once past).
* ``fabricscope_last_run_timestamp_seconds``, ``fabricscope_last_run_duration_seconds``.
* ``fabricscope_last_run_failed_inputs``: inputs the last run could not read (an unreadable file,
  a Prometheus server that failed): the faults above are then judged without them.
"""

from __future__ import annotations

import datetime as dt
import json
import os
from collections.abc import Mapping, Sequence
from typing import Any

import polars as pl

from fabricscope import _atomic
from fabricscope.detect import KINDS
from fabricscope.incidents.severity import PAGING, SEVERITIES, Severity
from fabricscope.redaction import printable

__all__ = ["render_textfile", "write_textfile"]


def _label(v: object) -> str:
    # Control characters (newline included) escaped first, as everywhere text from data is shown: a
    # raw ESC would reach whoever reads the file or the label in a console. Then the exposition
    # format's escaping of backslash and double quote, which keeps the escape's backslash literal
    # (node_exporter's parser accepts no other escape in a label value).
    return printable(str(v)).replace("\\", "\\\\").replace('"', '\\"')


def render_textfile(
    active: pl.DataFrame,
    ports: pl.DataFrame,
    finished: dt.datetime,
    duration_s: float,
    *,
    pages: Sequence[Mapping[str, Any]] | None = None,
    failed_inputs: int = 0,
) -> str:
    """The textfile's content.

    Args:
        active: Active faults (findings schema).
        ports: Frame with ``host``, ``device``, ``port`` columns: every port known to the state.
        finished: When the run finished.
        duration_s: How long it took.
        pages: The active pages (:func:`fabricscope.incidents.correlate.active_pages`): one per fault of the
            fabric, counted by severity in ``fabricscope_incidents`` (the number to alert on; the
            findings gauge counts symptoms). Default: each active warning or critical finding.
        failed_inputs: Inputs the run could not read.

    Returns:
        Prometheus text exposition format.

    Example:
        >>> import datetime as dt, polars as pl
        >>> from fabricscope.incidents.findings import make_findings
        >>> f = make_findings([{"kind": "link_errors", "severity": "warning", "host": "h", "device": "mlx5_0",
        ...                     "port": 1, "metric": "symbol_errors", "message": "m"}])
        >>> p = pl.DataFrame({"host": ["h"], "device": ["mlx5_0"], "port": [1]})
        >>> text = render_textfile(f, p, dt.datetime(2026, 12, 2, tzinfo=dt.timezone.utc), 1.5)
        >>> 'fabricscope_port_health{host="h",device="mlx5_0",port="1"} 1' in text
        True
    """
    lines = [
        "# HELP fabricscope_findings Active fabricscope faults by kind and severity.",
        "# TYPE fabricscope_findings gauge",
    ]
    counts = active.group_by("kind", "severity").len() if active.height else None
    by = {} if counts is None else {(k, s): n for k, s, n in counts.iter_rows()}
    for kind in KINDS:
        for sev in SEVERITIES:
            lines.append(f'fabricscope_findings{{kind="{kind}",severity="{sev}"}} {by.get((kind, sev), 0)}')
    if pages is None:
        pages = [r for r in active.iter_rows(named=True) if r["severity"] != "info"]
    lines += [
        "# HELP fabricscope_incidents Active faults of the fabric by severity: one per incident (its root and "
        "every consequence), the number of pages.",
        "# TYPE fabricscope_incidents gauge",
    ]
    for sev in PAGING:
        lines.append(f'fabricscope_incidents{{severity="{sev}"}} {sum(1 for pg in pages if pg["severity"] == sev)}')
    lines += [
        "# HELP fabricscope_port_health Worst active fault per port: 0 ok, 1 warning, 2 critical.",
        "# TYPE fabricscope_port_health gauge",
    ]
    p = ports.select(
        pl.col("host").cast(pl.String), pl.col("device").cast(pl.String), pl.col("port").cast(pl.Int64)
    ).unique()
    sev = active.select(
        "host",
        "device",
        pl.col("port").cast(pl.Int64),
        Severity.rank_expr().cast(pl.Int64).alias("h"),
    )
    # A fault naming no device (or no port) applies to every port below what it names.
    matched = (
        p.with_row_index("_r")
        .join(sev, on="host", how="inner", nulls_equal=True, suffix="_f")
        .filter(
            (pl.col("device_f").is_null() | (pl.col("device_f") == pl.col("device")))
            & (pl.col("port_f").is_null() | pl.col("port_f").eq_missing(pl.col("port")))
        )
        .group_by("_r")
        .agg(pl.col("h").max())
    )
    health = (
        p.with_row_index("_r")
        .join(matched, on="_r", how="left")
        .with_columns(pl.col("h").fill_null(0))
        .sort("host", "device", "port", nulls_last=True)
    )
    for host, device, port, h in health.select("host", "device", "port", "h").iter_rows():
        port_s = "" if port is None else str(port)
        lines.append(f'fabricscope_port_health{{host="{_label(host)}",device="{_label(device)}",port="{port_s}"}} {h}')
    lines += _wearout_lines(active, finished)
    ts = finished.timestamp()
    lines += [
        "# HELP fabricscope_last_run_timestamp_seconds When the last fabricscope cron run finished (Unix time).",
        "# TYPE fabricscope_last_run_timestamp_seconds gauge",
        f"fabricscope_last_run_timestamp_seconds {ts:.3f}",
        "# HELP fabricscope_last_run_duration_seconds How long the last fabricscope cron run took.",
        "# TYPE fabricscope_last_run_duration_seconds gauge",
        f"fabricscope_last_run_duration_seconds {duration_s:.3f}",
        "# HELP fabricscope_last_run_failed_inputs Inputs the last fabricscope cron run could not read.",
        "# TYPE fabricscope_last_run_failed_inputs gauge",
        f"fabricscope_last_run_failed_inputs {failed_inputs}",
    ]
    return "\n".join(lines) + "\n"


def _wearout_lines(active: pl.DataFrame, finished: dt.datetime) -> list[str]:
    """The forecast of each active wear-out fault, counted from the run's end."""
    lines = [
        "# HELP fabricscope_link_wearout_eta_seconds Seconds until a wearing link's errors cross their warning rate.",
        "# TYPE fabricscope_link_wearout_eta_seconds gauge",
    ]
    worn = active.filter(pl.col("kind") == "link_wearout").sort("host", "device", "port", nulls_last=True)
    for r in worn.iter_rows(named=True):
        try:
            ev = json.loads(r["evidence"] or "{}")
        except ValueError:
            continue
        eta = ev.get("threshold_eta_s") if isinstance(ev, dict) else None
        if not isinstance(eta, (int, float)) or r["end"] is None:
            continue
        left = max(0.0, eta - (finished - r["end"]).total_seconds())
        counter = str(r["metric"] or "").removesuffix("_eta_s")
        port_s = "" if r["port"] is None else str(r["port"])
        lines.append(
            f'fabricscope_link_wearout_eta_seconds{{host="{_label(r["host"])}",device="{_label(r["device"])}",'
            f'port="{port_s}",counter="{_label(counter)}"}} {left:.0f}'
        )
    return lines


def write_textfile(
    path: str | os.PathLike[str],
    active: pl.DataFrame,
    ports: pl.DataFrame,
    finished: dt.datetime,
    duration_s: float,
    *,
    pages: Sequence[Mapping[str, Any]] | None = None,
    failed_inputs: int = 0,
) -> None:
    """Render and atomically write the textfile (see :func:`render_textfile`).

    Example:
        >>> import datetime as dt, tempfile, pathlib, polars as pl
        >>> from fabricscope.incidents.findings import empty_findings
        >>> p = pathlib.Path(tempfile.mkdtemp()) / "fabricscope.prom"
        >>> ports = pl.DataFrame(schema={"host": pl.String, "device": pl.String, "port": pl.Int64})
        >>> write_textfile(p, empty_findings(), ports, dt.datetime.now(dt.timezone.utc), 0.1)
        >>> "fabricscope_last_run_duration_seconds 0.100" in p.read_text()
        True
    """
    _atomic.write_text(
        path, render_textfile(active, ports, finished, duration_s, failed_inputs=failed_inputs, pages=pages)
    )
