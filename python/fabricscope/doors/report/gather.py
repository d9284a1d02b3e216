"""The report's data: one analysis of inputs or cron histories gathered into :class:`ReportData`."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from fabricscope.doors.input_summary import by_format, problems
from fabricscope.fabric.advise import advise
from fabricscope.fabric.entities import Conflict
from fabricscope.incidents.correlate import Incident
from fabricscope.pipeline import run_analysis
from fabricscope.reading.history import History, is_history
from fabricscope.reading.prometheus import RemoteOptions
from fabricscope.redaction import redact_text

__all__ = ["ReportData", "gather"]


@dataclass
class ReportData:
    """Everything a report shows.

    Attributes:
        title: Report title.
        sources: The inputs or history directories.
        findings: Findings frame (worst first).
        rates: Rates the detectors saw.
        gauges: Latest gauges (link rate per port).
        inputs: The contract's per-input rows.
        formats: Per format read: files, samples, bad records, time range
            (:func:`fabricscope.doors.input_summary.by_format`).
        problems: The readers' errors and warnings, each naming its input.
        lifecycle: Fault lifecycle when the report is over a history.
        layers: ``Analysis.views["layers"]`` (the bottleneck detector's view) when the analysis provides it.
        advice: Advisor tables by name, or a note why there are none.
        plots: Per port: title and image, SVG text (what the HTML report inlines) or PNG bytes (what
            the Markdown report inlines); :func:`write_report` draws only its format's.
        incidents: ``Analysis.incidents``: the report's first screen.
        conflicts: ``Analysis.conflicts``: names the inputs disagree on, and what was decided.
        failed_inputs: Inputs that could not be read: the status is at least unknown.
        plot_note: Why there are no plots although there are ports to plot (empty: plots drawn).
    """

    title: str
    sources: list[str]
    findings: pl.DataFrame
    rates: pl.DataFrame
    gauges: pl.DataFrame
    inputs: list[dict[str, Any]]
    formats: pl.DataFrame | None = None
    problems: list[str] = field(default_factory=list)
    lifecycle: pl.DataFrame | None = None
    layers: pl.DataFrame | None = None
    advice: dict[str, pl.DataFrame] | str = ""
    plots: list[tuple[str, str | bytes]] = field(default_factory=list)
    incidents: list[Incident] = field(default_factory=list)
    conflicts: list[Conflict] = field(default_factory=list)
    failed_inputs: int = 0
    plot_note: str = ""
    status: str = "ok"
    """``ok``, ``warning``, ``critical`` or ``unknown``: :attr:`fabricscope.Analysis.status`, as ``analyze`` says."""


def gather(
    sources: Sequence[str | os.PathLike[str]],
    *,
    remote: RemoteOptions | None = None,
    **options: Any,
) -> ReportData:
    """Analyse inputs and histories (:func:`fabricscope.run_analysis`) into :class:`ReportData`.

    Args:
        sources: Input files/directories, URLs, or history directories written by ``fabricscope cron``.
        remote: How to read URLs (a Prometheus server pulled over ``since``/``until``, default
            the last hour; an exporter endpoint scraped): :class:`fabricscope.reading.prometheus.RemoteOptions`.
        **options: The options of :func:`fabricscope.run_analysis` (``profile``, ``config``,
            ``strict``, ``since``, ``until``, ``hosts``, ``limits``, ``engine`` ...), as ``analyze``
            takes them; the report keeps every rate, whichever engine runs.

    Returns:
        The report's data (plots not yet drawn); its ``status`` is the analysis's.

    Raises:
        fabricscope.exceptions.FabricscopeError: no input could be read at all.

    Example:
        >>> d = gather(["sample_traces/ethtool"])
        >>> d.rates.height > 0, d.status
        (True, 'critical')
    """
    paths = [os.fspath(s) for s in sources]
    analysis = run_analysis(paths, remote=remote, keep_detail=True, **options)
    histories = [p for p in paths if is_history(p)]
    gauges = (
        analysis.gauges.filter(pl.col("counter").cast(pl.String) == "link_rate_bytes_per_s")
        .group_by("host", "device", "port")
        .agg(pl.col("value").sort_by("time").last().alias("link_rate_bytes_per_s"))
        .with_columns([pl.col(c).cast(pl.String) for c in ("host", "device")])
        if analysis.gauges.height
        else pl.DataFrame(schema={"host": pl.String, "device": pl.String, "port": pl.UInt16})
    )
    return ReportData(
        title="fabricscope report",
        # What the report shows of its inputs: a URL without its user info or query string.
        sources=[redact_text(p) for p in paths],
        findings=analysis.findings,
        rates=analysis.rates,
        gauges=gauges,
        inputs=_shown_inputs(analysis.inputs, histories),
        formats=by_format(analysis.reports, analysis.times) if analysis.reports else None,
        problems=[redact_text(t) for t in problems(analysis.reports)],
        lifecycle=pl.concat([History(h).lifecycle() for h in histories]) if histories else None,
        layers=analysis.views["layers"],
        advice=_advice(analysis),
        incidents=list(analysis.incidents),
        conflicts=list(analysis.conflicts),
        failed_inputs=len(analysis.failed_inputs),
        status=analysis.status,
    )


def _shown_inputs(inputs: list[dict[str, Any]], histories: list[str]) -> list[dict[str, Any]]:
    """The analysis's inputs, each history as one row (its runs counted) instead of one per Parquet part."""
    shown: list[dict[str, Any]] = []
    folded: dict[str, dict[str, Any]] = {}
    for i in inputs:
        path = Path(i["path"])
        root = next((h for h in histories if path == Path(h) or Path(h) in path.parents), None)
        if root is None:
            shown.append(i)
            continue
        if root not in folded:
            folded[root] = {
                "path": root,
                "format": "history",
                "records": 0,
                "rejected": 0,
                "runs": History(root).runs().height,
            }
            shown.append(folded[root])
        folded[root]["records"] += int(i["records"] or 0)
        folded[root]["rejected"] += int(i["rejected"] or 0)
        if i.get("error") and not folded[root].get("error"):
            folded[root]["error"] = i["error"]
    return shown


def _advice(analysis: Any) -> dict[str, pl.DataFrame] | str:
    """The advisor's tables (``fabricscope.fabric.advise``), or why there are none."""
    try:
        res = advise(analysis=analysis)
    except Exception as e:  # an advisor failure must not lose the whole report
        return f"The advisor failed: {type(e).__name__}: {e}"
    tables = {n: getattr(res, n) for n in ("allreduce", "breakeven")}
    return {n: t for n, t in tables.items() if isinstance(t, pl.DataFrame)} or "The advisor returned no tables."
