"""Build the report: gather (analysis or history), plot (matplotlib, inlined), render (HTML/Markdown)."""

from __future__ import annotations

import base64
import contextlib
import datetime as dt
import html
import importlib.util
import io
import json
import logging
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import polars as pl

from fabricscope import __version__, _atomic
from fabricscope.advise import advise
from fabricscope.entities import Conflict, conflicts_frame
from fabricscope.findings import links_to_replace
from fabricscope.history import History, is_history
from fabricscope.incidents import Incident
from fabricscope.input_summary import by_format, problems, time_range
from fabricscope.pipeline import run_analysis
from fabricscope.redaction import markdown_text, printable, printable_lines, redact_text
from fabricscope.remote import RemoteOptions
from fabricscope.summary import MAX_LISTED, fabric_summary
from fabricscope.vocabulary import counters_by_direction, counters_with_role

_log = logging.getLogger(__name__)

__all__ = ["ReportData", "gather", "render_html", "render_markdown", "write_report"]

# Which counters feed each panel, by role (the core's vocabulary), most preferred first. The first
# present counter is used, so one port never shows the same traffic twice from two sources; the
# kernel stack's counters (no RDMA) only for a port without any other.
_TX_BYTES = (*counters_with_role("tx_bytes"), *counters_with_role("tx_stack_bytes"))
_RX_BYTES = (*counters_with_role("rx_bytes"), *counters_with_role("rx_stack_bytes"))
_RX_PACKETS = (*counters_with_role("rx_packets"), *counters_with_role("rx_stack_packets"))
_ECN = (*counters_with_role("rx_priority_ecn_marked"), *counters_with_role("rx_ecn_marked"))
_CNP = (*counters_with_role("tx_cnp"), *counters_with_role("rx_cnp_handled"), *counters_with_role("rx_cnp_ignored"))
_PAUSE = tuple(counters_by_direction("pause_duration"))
_ERRORS = counters_with_role("link_errors")
# Loss on the traffic this port receives, over the same direction's packets (as packet_loss).
_LOSS = counters_with_role("rx_loss")
_SEV_COLOUR = {"critical": "#d62728", "warning": "#ff7f0e", "info": "#7f7f7f"}


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
            (:func:`fabricscope.input_summary.by_format`).
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


#: What a report without matplotlib says where its plots would be.
NO_MATPLOTLIB = "Plots omitted: matplotlib is not installed (pip install 'fabricscope[report]' adds them)."

ProgressCallback = Callable[[int, int, str], None]
"""``progress(done, total, what)``: stage ``done`` of ``total`` (0 while unknown) is ``what``."""


class _Stages:
    """Counts the report's stages and hands each to ``progress`` (else logs it at DEBUG level)."""

    def __init__(self, progress: ProgressCallback | None, total: int = 0) -> None:
        self.progress = progress
        self.total = total
        self.done = 0

    def step(self, what: str) -> None:
        self.done += 1
        if self.progress is not None:
            self.progress(self.done, self.total, what)
        else:
            _log.debug("report stage %d/%d: %s", self.done, self.total, what)


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
            the last hour; an exporter endpoint scraped): :class:`fabricscope.remote.RemoteOptions`.
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
    """The advisor's tables (``fabricscope.advise``), or why there are none."""
    try:
        res = advise(analysis=analysis)
    except Exception as e:  # an advisor failure must not lose the whole report
        return f"The advisor failed: {type(e).__name__}: {e}"
    tables = {n: getattr(res, n) for n in ("allreduce", "breakeven")}
    return {n: t for n, t in tables.items() if isinstance(t, pl.DataFrame)} or "The advisor returned no tables."


# ------------------------------------------------------------------------------------------- plots


def _series(rates: pl.DataFrame, names: Sequence[str]) -> pl.DataFrame:
    """Per time: the summed rate of the first counter of ``names`` present in ``rates``."""
    present = set(rates["counter"].cast(pl.String).unique().to_list()) if rates.height else set()
    for n in names:
        if n in present:
            return (
                rates.filter(pl.col("counter").cast(pl.String) == n)
                .group_by("end")
                .agg(pl.col("rate_per_s").sum())
                .sort("end")
            )
    return pl.DataFrame(schema={"end": pl.Datetime("ns", "UTC"), "rate_per_s": pl.Float64})


def _port_frames(
    data: ReportData, max_ports: int
) -> list[tuple[tuple[str, str, int | None], pl.DataFrame, pl.DataFrame]]:
    """The ports to plot (those with findings first), each with its rates and findings."""
    r = data.rates.with_columns(
        pl.col("host").cast(pl.String), pl.col("device").cast(pl.String), pl.col("port").cast(pl.Int64)
    )
    ports = r.select("host", "device", "port").unique()
    f = data.findings
    flagged = (
        f.filter(pl.col("severity") != "info").select("host", "device", "port").unique()
        if f.height
        else f.select("host", "device", "port")
    )
    # A finding naming a device but no port flags every port of the device.
    hit = ports.join(flagged, on=["host", "device"], how="inner", suffix="_f").filter(
        pl.col("port_f").is_null() | pl.col("port").eq_missing(pl.col("port_f"))
    )
    ordered = pl.concat(
        [hit.select("host", "device", "port").unique(maintain_order=True), ports], how="vertical"
    ).unique(maintain_order=True)
    # Ports with the worst findings first (the order of the findings section), then the rest by name.
    rank = (
        hit.join(
            f.select(
                "host",
                "device",
                pl.col("port").alias("port_f"),
                pl.col("severity").replace_strict(_SEVERITY_ORDER, return_dtype=pl.Int8).alias("rank"),
            ),
            on=["host", "device"],
        )
        .filter(pl.col("port_f").is_null() | pl.col("port").eq_missing(pl.col("port_f")))
        .group_by("host", "device", "port")
        .agg(pl.col("rank").min())
    )
    ordered = (
        ordered.join(rank, on=["host", "device", "port"], how="left", nulls_equal=True)
        .sort(pl.col("rank").fill_null(3), "host", "device", "port", nulls_last=True)
        .drop("rank")
        .head(max_ports)
    )
    out = []
    for host, device, port in ordered.iter_rows():
        pr = r.filter((pl.col("host") == host) & (pl.col("device") == device) & pl.col("port").eq_missing(port))
        pf = f.filter(
            pl.col("host").eq_missing(host)
            & (pl.col("device").is_null() | (pl.col("device") == device))
            & (pl.col("port").is_null() | pl.col("port").eq_missing(port))
        )
        out.append(((host, device, port), pr, pf))
    return out


def _plot_port(
    key: tuple[str, str, int | None],
    pr: pl.DataFrame,
    pf: pl.DataFrame,
    gauges: pl.DataFrame,
    image_format: Literal["svg", "png"] = "svg",
) -> str | bytes:
    """Five panels for one port, fault windows shaded: SVG text or PNG bytes.

    One format per plot: drawing each figure in both took a third more time, for an image the
    report does not show.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    host, device, port = key
    fig, axes = plt.subplots(5, 1, figsize=(10, 11), sharex=True)
    # 1. throughput vs line rate
    ax = axes[0]
    for label, names in (("tx", _TX_BYTES), ("rx", _RX_BYTES)):
        s = _series(pr, names)
        if s.height:
            ax.plot(s["end"].to_list(), (s["rate_per_s"] * 8 / 1e9).to_list(), label=f"{label} Gb/s")
    g = gauges.filter(
        (pl.col("host") == host) & (pl.col("device") == device) & pl.col("port").cast(pl.Int64).eq_missing(port)
    )
    if g.height and g["link_rate_bytes_per_s"][0] is not None:
        ax.axhline(g["link_rate_bytes_per_s"][0] * 8 / 1e9, color="k", linestyle="--", label="line rate")
    ax.set_ylabel("throughput Gb/s")
    # 2. pause ratio per priority
    ax = axes[1]
    pause = pr.filter(pl.col("counter").cast(pl.String).is_in(_PAUSE))
    for (counter, prio), grp in pause.group_by("counter", "priority", maintain_order=True):
        grp = grp.sort("end")
        ax.plot(
            grp["end"].to_list(),
            (grp["rate_per_s"] / 1e6).to_list(),
            label=f"{str(counter)[:2]} p{prio if prio is not None else '-'}",
        )
    ax.set_ylabel("pause ratio")
    # 3. ECN share and CNP rate
    ax = axes[2]
    ecn, pk = _series(pr, _ECN), _series(pr, _RX_PACKETS)
    if ecn.height and pk.height:
        share = ecn.join(pk, on="end", suffix="_pk").with_columns(
            (pl.col("rate_per_s") / pl.col("rate_per_s_pk")).alias("share")
        )
        ax.plot(share["end"].to_list(), share["share"].to_list(), label="ECN-marked share")
    ax.set_ylabel("ECN share")
    cnp = _series(pr, _CNP)
    if cnp.height:
        ax2 = ax.twinx()
        ax2.plot(cnp["end"].to_list(), cnp["rate_per_s"].to_list(), color="tab:purple", label="CNP /s")
        ax2.set_ylabel("CNP /s")
    # 4. error rates
    ax = axes[3]
    for name in _ERRORS:
        s = _series(pr, [name])
        if s.height and (s["rate_per_s"].fill_null(0) > 0).any():
            ax.plot(s["end"].to_list(), s["rate_per_s"].to_list(), label=name)
    ax.set_ylabel("errors /s")
    # 5. estimated loss
    ax = axes[4]
    # One lost packet shows in several loss counters: the largest per interval, never a double count.
    loss = pr.filter(pl.col("counter").cast(pl.String).is_in(_LOSS)).group_by("end").agg(pl.col("rate_per_s").max())
    if loss.height and pk.height:
        p = loss.join(pk, on="end", suffix="_pk").sort("end")
        ax.plot(p["end"].to_list(), (p["rate_per_s"] / p["rate_per_s_pk"]).to_list(), label="loss p")
    ax.set_ylabel("est. loss ratio")
    for r in pf.iter_rows(named=True):
        # Info findings (data quality, bottleneck verdicts) often span the whole run: shading them
        # would hide the fault windows.
        if r["start"] is None or r["end"] is None or r["severity"] == "info":
            continue
        for a in axes:
            a.axvspan(r["start"], r["end"], color=_SEV_COLOUR[r["severity"]], alpha=0.15)
    for a in axes:
        if a.get_legend_handles_labels()[0]:
            a.legend(loc="upper left", fontsize=7)
        a.grid(alpha=0.3)
    # The title is also written into the SVG (as a comment beside its glyphs).
    fig.suptitle(printable(f"{host} {device}" + (f" port {port}" if port is not None else "")))
    fig.tight_layout()
    if image_format == "png":
        png = io.BytesIO()
        fig.savefig(png, format="png", dpi=70)
        plt.close(fig)
        return png.getvalue()
    svg = io.StringIO()
    fig.savefig(svg, format="svg")
    plt.close(fig)
    text = svg.getvalue()
    return text[text.find("<svg") :]


# ------------------------------------------------------------------------------------------ render


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
    ent = "/".join(str(x) for x in (r["host"], r["device"], r["port"]) if x is not None)
    return ent + (f" p{r['priority']}" if r["priority"] is not None else "")


def _port_of(r: dict[str, Any]) -> str:
    """The port (or device, or host) a finding is about: the report groups findings by it."""
    ent = "/".join(str(x) for x in (r["host"], r["device"], r["port"]) if x is not None)
    return ent or "fabric-wide"


def _fmt(v: Any) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.4g}"
    if isinstance(v, dt.datetime):
        return v.strftime("%Y-%m-%d %H:%M:%S")
    return str(v)


def _html_text(text: str) -> str:
    """``text`` for HTML: control characters escaped (as in every output), then HTML's own escaping."""
    return html.escape(printable(text))


def _window(r: dict[str, Any]) -> str:
    return time_range(r["start"], r["end"])


def _counts(findings: pl.DataFrame) -> dict[str, int]:
    c = {"critical": 0, "warning": 0, "info": 0}
    for s in findings["severity"].to_list():
        c[s] += 1
    return c


_SEVERITY_ORDER = {"critical": 0, "warning": 1, "info": 2}
# In table cells (the group heading spells it out): short enough for a narrow column.
_SEV_SHORT = {"critical": "crit", "warning": "warn", "info": "info"}


def _groups(findings: pl.DataFrame) -> list[tuple[str, list[dict[str, Any]]]]:
    """Findings grouped per port; the port with the worst (then the most) findings first.

    Within a group the findings keep the frame's order (worst first).
    """
    groups: dict[str, list[dict[str, Any]]] = {}
    for r in findings.iter_rows(named=True):
        groups.setdefault(_port_of(r), []).append(r)
    return sorted(
        groups.items(),
        key=lambda kv: (min(_SEVERITY_ORDER[r["severity"]] for r in kv[1]), -len(kv[1])),
    )


def _listed(findings: pl.DataFrame) -> tuple[list[tuple[str, list[dict[str, Any]]]], pl.DataFrame]:
    """The port groups a person reads one by one (worst first, about :data:`MAX_LISTED` findings), and the rest.

    On a fabric of thousands of hosts one finding per port would bury the verdict and make a page
    of tens of megabytes; the rest is summarised per kind (:func:`fabricscope.summary.fabric_summary`).
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
    parts = [f"{c[s]} {s}" for s in ("critical", "warning") if c[s]]
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


_CSS = """
:root{--crit:#b71c1c;--warn:#e65100;--info:#616161}
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:1.5em auto;max-width:1200px;padding:0 1em;
color:#222;line-height:1.4}
h1{margin:.2em 0}h2{margin-top:1.6em;border-bottom:1px solid #ddd;padding-bottom:.2em}
h3{margin:1.2em 0 .4em}
.verdict{border-left:8px solid var(--info);background:#f6f6f6;padding:.6em 1em;margin:1em 0}
.verdict.critical{border-color:var(--crit);background:#fdecea}.verdict.warning{border-color:var(--warn);background:#fff3e0}
.verdict.ok{border-color:#2e7d32;background:#edf7ed}
.status{font-size:150%;font-weight:bold;margin-right:.6em}
.verdict.critical .status{color:var(--crit)}.verdict.warning .status{color:var(--warn)}
.verdict.ok .status{color:#2e7d32}
.verdict p{margin:.3em 0;font-size:110%}
.badge{display:inline-block;font-size:75%;font-weight:bold;text-transform:uppercase;padding:.05em .5em;
border-radius:3px;color:#fff;background:var(--info);vertical-align:middle;white-space:nowrap;overflow-wrap:normal}
.badge.critical{background:var(--crit)}.badge.warning{background:var(--warn)}
table{border-collapse:collapse;margin:.5em 0 1em;font-size:90%;width:100%}
table.findings{table-layout:fixed}
td,th{border:1px solid #ccc;padding:3px 6px;vertical-align:top;text-align:left;overflow-wrap:anywhere}
th{background:#f0f0f0}table.findings th{overflow-wrap:normal;word-break:keep-all}
@media (max-width:900px){body{font-size:95%}table.findings{font-size:80%}}
tr.critical td:first-child{border-left:4px solid var(--crit)}
tr.warning td:first-child{border-left:4px solid var(--warn)}
td.num{text-align:right;font-variant-numeric:tabular-nums}
pre{white-space:pre-wrap;overflow-wrap:anywhere;font-size:85%;margin:.3em 0 0}
details summary{cursor:pointer;color:#555}
figure{margin:1em 0;break-inside:avoid}figure svg{max-width:100%;height:auto}
figcaption{font-weight:bold}
.note{color:#666}nav a{margin-right:1em}
@media print{
  @page{size:A4;margin:14mm}
  body{margin:0;max-width:none;font-size:10pt}
  nav,.screen-only{display:none}
  h2,h3{break-after:avoid}
  tr,figure,.verdict{break-inside:avoid}
  table{font-size:8.5pt}
  a{color:inherit;text-decoration:none}
}
.incident{border:1px solid #ccc;border-radius:4px;padding:.5em 1em;margin:.5em 0;break-inside:avoid}
.incident .action{font-weight:bold}
"""

# Findings table: what each column holds and how much of the page width it gets.
_FINDING_COLUMNS = [
    ("sev", "6%"),
    ("kind", "13%"),
    ("prio", "5%"),
    ("window (UTC)", "13%"),
    ("measured", "13%"),
    ("what it means", "30%"),
    ("threshold source", "20%"),
]


def _where(f: dict[str, Any]) -> str:
    bits = [str(x) for x in (f.get("host"), f.get("device")) if x]
    if f.get("port") is not None:
        bits.append(f"port {f['port']}")
    return " ".join(bits) or "-"


def _incidents_html(incidents: Sequence[Incident]) -> list[str]:
    """Each incident: title, action, root, and its consequences with their paths (first screen)."""
    e = _html_text
    if not incidents:
        return ["<h2>Incidents</h2>", "<p>No incident: no finding explains another (findings below).</p>"]
    out = [f"<h2>Incidents ({len(incidents)})</h2>"]
    for i in incidents:
        r = i.root
        if not i.consequences:
            # A fault with no consequence: one line (its finding is in the tables below), so the
            # first screen still reaches the worst findings.
            out.append(
                f"<div class='incident {e(i.severity)}'><b>{e(i.severity.upper())}</b> {e(i.title)}. "
                f"<span class='action'>Action: {e(i.action)}</span> ({e(_fmt(i.start))} .. {e(_fmt(i.end))})</div>"
            )
            continue
        out.append(
            f"<div class='incident {e(i.severity)}'><b>{e(i.severity.upper())}</b> {e(i.title)}"
            f"<p class='action'>Action: {e(i.action)}</p>"
            f"<p>Root: {e(r['kind'])} on {e(_where(r))}: {e(r['message'] or '')}<br>"
            f"Window: {e(_fmt(i.start))} .. {e(_fmt(i.end))}; rule {e(i.rule)}; {e(i.topology)}</p>"
            "<details><summary>consequences</summary><ul>"
            + "".join(
                f"<li>{e(c['finding']['kind'])} on {e(_where(c['finding']))} ({e(c['relation'])}: "
                f"{e(' -> '.join(c['path']))}; {e(c['timing'])}; {e(c['magnitude'])})</li>"
                for c in i.consequences
            )
            + "</ul></details></div>"
        )
    return out


def _replace_html(findings: pl.DataFrame) -> list[str]:
    table = links_to_replace(findings)
    if not table.height:
        return []
    return [
        f"<h2 id='replace'>Links to replace ({table.height})</h2>",
        "<p class='note'>Error rates rising towards their warning rate (link_wearout): replace these in a "
        "maintenance window, soonest first.</p>",
        _html_table(table),
    ]


def _replace_md(findings: pl.DataFrame) -> list[str]:
    table = links_to_replace(findings)
    if not table.height:
        return []
    return [f"## Links to replace ({table.height})", "", *_md_table(table), ""]


def _incidents_md(incidents: Sequence[Incident]) -> list[str]:
    m = markdown_text
    if not incidents:
        return ["## Incidents", "", "No incident: no finding explains another (findings below).", ""]
    out = [f"## Incidents ({len(incidents)})", ""]
    for i in incidents:
        out += [
            f"### {m(i.severity.upper())}: {m(i.title)}",
            "",
            f"**Action:** {m(i.action)}",
            "",
            m(f"Root: {i.root['kind']} on {_where(i.root)}; window {_fmt(i.start)} .. {_fmt(i.end)}; rule {i.rule}"),
            "",
        ]
        out += [
            "- " + m(f"{c['finding']['kind']} on {_where(c['finding'])} ({c['relation']}: {' -> '.join(c['path'])})")
            for c in i.consequences
        ]
        out.append("")
    return out


_CONFLICTS_NOTE = (
    "Names two inputs map differently: decided by the claims alone (never by the inputs' order); "
    "a tie is not joined. Settle a host's name with --host-alias ALIAS=HOST."
)


def _conflicts_html(conflicts: Sequence[Conflict]) -> list[str]:
    if not conflicts:
        return []
    return [
        f"<h2 id='conflicts'>Names the inputs disagree on ({len(conflicts)})</h2>",
        f"<p class='note'>{_html_text(_CONFLICTS_NOTE)}</p>",
        _html_table(conflicts_frame(conflicts)),
    ]


def _conflicts_md(conflicts: Sequence[Conflict]) -> list[str]:
    if not conflicts:
        return []
    return [
        f"## Names the inputs disagree on ({len(conflicts)})",
        "",
        markdown_text(_CONFLICTS_NOTE),
        "",
        *_md_table(conflicts_frame(conflicts)),
        "",
    ]


def _data_uri(image: str | bytes) -> str:
    """A plot as a data URI: PNG bytes or SVG text."""
    if isinstance(image, bytes):
        return f"data:image/png;base64,{base64.b64encode(image).decode()}"
    return f"data:image/svg+xml;base64,{base64.b64encode(image.encode()).decode()}"


def _html_image(title: str, image: str | bytes) -> str:
    """A plot in the HTML report: SVG inline, PNG as an image of its data URI."""
    if isinstance(image, str):
        return image
    return f"<img alt='{_html_text(title)}' src='{_data_uri(image)}'>"


def _html_table(df: pl.DataFrame, limit: int = 200) -> str:
    cols = df.columns
    numeric = [df.schema[c].is_numeric() for c in cols]

    def td(v: Any, num: bool) -> str:
        return f"<td class='num'>{_html_text(_fmt(v))}</td>" if num else f"<td>{_html_text(_fmt(v))}</td>"

    rows = "".join(
        "<tr>" + "".join(td(v, n) for v, n in zip(r, numeric, strict=True)) + "</tr>"
        for r in df.head(limit).iter_rows()
    )
    more = f"<p class='note'>{df.height - limit} more rows not shown.</p>" if df.height > limit else ""
    head = "".join(f"<th>{_html_text(c)}</th>" for c in cols)
    return f"<table><tr>{head}</tr>{rows}</table>{more}"


def _measured(r: dict[str, Any]) -> str:
    if r["metric"] is None and r["observed"] is None:
        return "-"
    text = f"{r['metric'] or 'value'} = {_fmt(r['observed'])}"
    return text + (f" (limit {_fmt(r['expected'])})" if r["expected"] is not None else "")


def _summary_html(head: str, lines: list[str]) -> str:
    e = _html_text
    return f"<p class='note'>{e(head)}</p><ul>" + "".join(f"<li>{e(x)}</li>" for x in lines) + "</ul>"


def _busiest(findings: pl.DataFrame) -> pl.DataFrame:
    """The bottleneck findings, the busiest (largest observed) first."""
    bn = findings.filter(pl.col("kind") == "bottleneck")
    return bn.sort("observed", descending=True, nulls_last=True, maintain_order=True)


def _more_bottlenecks(bn: pl.DataFrame) -> str:
    return f"The {MAX_LISTED} busiest of {bn.height:,} shown; every one: fabricscope analyze --json."


def _findings_html(rows: list[dict[str, Any]]) -> str:
    e = _html_text
    out = ["<table class='findings'><colgroup>"]
    out += [f"<col style='width:{w}'>" for _, w in _FINDING_COLUMNS]
    out.append("</colgroup><tr>" + "".join(f"<th>{e(c)}</th>" for c, _ in _FINDING_COLUMNS) + "</tr>")
    for r in rows:
        ev = r["evidence"] or "{}"
        try:
            pretty = json.dumps(json.loads(ev), indent=1, sort_keys=True)
        except ValueError:
            pretty = ev
        out.append(
            f"<tr class='{e(r['severity'])}'><td><span class='badge {e(r['severity'])}' title='{e(r['severity'])}'>"
            f"{e(_SEV_SHORT[r['severity']])}</span></td>"
            f"<td>{e(r['kind'])}</td><td>{e(_fmt(r['priority']))}</td><td>{e(_window(r))}</td>"
            f"<td>{e(_measured(r))}</td>"
            f"<td>{e(r['message'] or '')}<details><summary>evidence</summary><pre>{e(pretty)}</pre></details></td>"
            f"<td>{e('; '.join(_sources_of(ev)) or '-')}</td></tr>"
        )
    out.append("</table>")
    return "".join(out)


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


def render_html(data: ReportData) -> str:
    """One self-contained HTML document (inline CSS and SVG; nothing fetched when viewed).

    It opens with the verdict and the findings, worst port first; then the evidence plots, the
    bottleneck view and the advisor; the inputs come last, collapsed. Printed (or saved as PDF)
    it keeps rows and plots whole and hides the navigation.

    Example:
        >>> d = gather(["sample_traces/ethtool"])
        >>> "<h2 id='findings'>Findings</h2>" in render_html(d)
        True
    """
    status, sentence = _verdict(data)
    c = _counts(data.findings)
    e = _html_text
    n_inputs = len(data.inputs)
    out = [
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
        "<meta name='viewport' content='width=device-width, initial-scale=1'>",
        f"<title>{e(status.upper())}: {e(data.title)}</title><style>{_CSS}</style></head><body>",
        f"<h1>{e(data.title)}</h1>",
        f"<div class='verdict {e(status)}'><span class='status'>{e(status.upper())}</span>"
        f"{c['critical']} critical, {c['warning']} warning, {c['info']} info"
        f"<p>{e(sentence)}</p></div>",
        f"<p class='note'>From {e(', '.join(data.sources))} ({n_inputs} input(s), listed at the end); "
        f"fabricscope {e(__version__)}, generated "
        f"{dt.datetime.now(dt.timezone.utc).strftime('%Y-%m-%d %H:%M:%S')} UTC.</p>",
        "<nav><a href='#findings'>Findings</a><a href='#plots'>Evidence plots</a>"
        "<a href='#bottlenecks'>Bottlenecks</a><a href='#advisor'>Advisor</a><a href='#inputs'>Inputs</a></nav>",
        *_incidents_html(data.incidents),
        *_replace_html(data.findings),
        "<h2 id='findings'>Findings</h2>",
    ]
    serious = data.findings.filter(pl.col("severity") != "info")
    info = data.findings.filter(pl.col("severity") == "info")
    if not data.findings.height:
        out.append("<p>No findings.</p>")
    shown, rest = _listed(serious)
    for port, rows in shown:
        worst = rows[0]["severity"]
        out.append(
            f"<h3><span class='badge {e(worst)}'>{e(worst)}</span> {e(port)} "
            f"<span class='note'>({len(rows)} finding(s))</span></h3>"
        )
        out.append(_findings_html(rows))
    if rest.height:
        out.append(_summary_html(*_not_listed(rest)))
    if info.height:
        kinds = ", ".join(sorted(set(info["kind"].to_list())))
        out.append(
            f"<details><summary>{info.height} info finding(s) about the data and its collection ({e(kinds)})</summary>"
        )
        shown, rest = _listed(info)
        for port, rows in shown:
            out += [f"<h3>{e(port)}</h3>", _findings_html(rows)]
        if rest.height:
            out.append(_summary_html(*_not_listed(rest)))
        out.append("</details>")
    if data.lifecycle is not None and data.lifecycle.height:
        out += ["<h2>Fault lifecycle (history)</h2>", _html_table(data.lifecycle.drop("last_evidence"))]
    out.append("<h2 id='plots'>Evidence: per-port time series</h2>")
    out.append(
        "<p class='note'>Throughput vs line rate, pause ratio per priority, ECN-marked share and CNP rate, "
        "error rates, estimated loss (receiver sequence errors and drops / received packets). Shaded: fault "
        "windows (red critical, orange warning). Worst ports first.</p>"
    )
    for title, image in data.plots:
        out.append(f"<figure><figcaption>{e(title)}</figcaption>{_html_image(title, image)}</figure>")
    if not data.plots:
        out.append(f"<p>{e(data.plot_note or 'No rated counters to plot.')}</p>")
    out.append("<h2 id='bottlenecks'>Bottlenecks</h2>")
    bn = _busiest(data.findings)
    if bn.height:
        out.append(_findings_html(list(bn.head(MAX_LISTED).iter_rows(named=True))))
        if bn.height > MAX_LISTED:
            out.append(f"<p class='note'>{e(_more_bottlenecks(bn))}</p>")
    else:
        out.append("<p>No bottleneck findings.</p>")
    if data.layers is not None and data.layers.height:
        out += [
            f"<details><summary>Utilisation per layer ({data.layers.height} rows)</summary>",
            _html_table(data.layers),
            "</details>",
        ]
    out.append("<h2 id='advisor'>Advisor</h2>")
    if isinstance(data.advice, str) or not data.advice:
        out.append(f"<p class='note'>{e(data.advice or 'The advisor returned no tables.')}</p>")
    else:
        for name, df in data.advice.items():
            out += [f"<h3>{e(name)}</h3>", _html_table(df)]
    out += _conflicts_html(data.conflicts)
    out.append("<h2 id='inputs'>Inputs</h2>")
    formats = _formats_rows(data)
    summary = f"{n_inputs} input(s)" + (f" in {formats.height} format(s)" if formats is not None else "")
    if data.problems:
        summary += f", {len(data.problems)} problem(s)"
    out.append(f"<details><summary>{e(summary)}</summary>")
    if formats is not None:
        out.append(_html_table(formats))
    if data.problems:
        out.append("<h3>Problems</h3><ul>" + "".join(f"<li>{e(p)}</li>" for p in data.problems[:200]) + "</ul>")
    if data.inputs:
        out += ["<h3>Every input</h3>", _html_table(pl.DataFrame(data.inputs, infer_schema_length=None))]
    out.append("</details>")
    out.append("</body></html>")
    return "\n".join(out)


def _md_table(df: pl.DataFrame, limit: int = 200) -> list[str]:
    """``df`` as Markdown table lines: a list, since the report escapes any newline inside a line.

    Every cell is text (:func:`fabricscope.redaction.markdown_text`): a ``|`` of the data ends no
    cell, and no link, image or HTML of the data is rendered.
    """

    def cell(v: Any) -> str:
        return markdown_text(_fmt(v))

    lines = ["| " + " | ".join(df.columns) + " |", "|" + "---|" * len(df.columns)]
    lines += ["| " + " | ".join(cell(v) for v in r) + " |" for r in df.head(limit).iter_rows()]
    return lines + (["", f"{df.height - limit} more rows not shown."] if df.height > limit else [])


def render_markdown(data: ReportData) -> str:
    """The report as Markdown (plots as inline PNG data URIs), in the HTML report's order.

    Example:
        >>> d = gather(["sample_traces/ethtool"])
        >>> render_markdown(d).startswith("# fabricscope report")
        True
    """
    # Every string from the data (names, messages, sources, problems) goes through markdown_text:
    # text in the report, never a link, an image or HTML a viewer would render or fetch.
    m = markdown_text
    status, sentence = _verdict(data)
    c = _counts(data.findings)
    out = [
        f"# {m(data.title)}",
        "",
        f"## Status: {status.upper()}",
        "",
        f"{c['critical']} critical, {c['warning']} warning, {c['info']} info finding(s). {m(sentence)}",
        "",
        m(f"fabricscope {__version__}; sources: {', '.join(data.sources)}"),
        "",
        *_incidents_md(data.incidents),
        *_replace_md(data.findings),
        "## Findings",
        "",
    ]
    if not data.findings.height:
        out.append("No findings.")
    shown, rest = _listed(data.findings)
    for port, rows in shown:
        table = pl.DataFrame(
            [
                {
                    "severity": r["severity"],
                    "kind": r["kind"],
                    "priority": r["priority"],
                    "window (UTC)": _window(r),
                    "measured": _measured(r),
                    "message": r["message"],
                    "threshold source": "; ".join(_sources_of(r["evidence"])) or "-",
                }
                for r in rows
            ],
            infer_schema_length=None,
        )
        out += [f"### {m(port)}", "", *_md_table(table)]
    if rest.height:
        head, lines = _not_listed(rest)
        out += ["", m(head), "", *(f"- {m(x)}" for x in lines)]
    out += ["", "## Per-port time series", ""]
    for title, image in data.plots:
        out += [f"### {m(title)}", "", f"![{m(title)}]({_data_uri(image)})", ""]
    if data.plot_note:
        out += [m(data.plot_note), ""]
    out += ["## Bottlenecks", ""]
    bn = _busiest(data.findings)
    out += _md_table(bn.drop("evidence").head(MAX_LISTED)) if bn.height else ["No bottleneck findings."]
    if bn.height > MAX_LISTED:
        out += ["", _more_bottlenecks(bn)]
    if data.layers is not None and data.layers.height:
        out += ["", *_md_table(data.layers)]
    out += ["", "## Advisor", ""]
    if isinstance(data.advice, str) or not data.advice:
        out.append(m(data.advice) if data.advice else "The advisor returned no tables.")
    else:
        for name, df in data.advice.items():
            out += [f"### {m(name)}", "", *_md_table(df)]
    out += ["", *_conflicts_md(data.conflicts)]
    out += ["", "## Inputs", ""]
    formats = _formats_rows(data)
    out += _md_table(formats) if formats is not None else [f"{len(data.inputs)} input(s)."]
    if data.problems:
        out += ["", "Problems:", ""] + [f"- {m(p)}" for p in data.problems[:200]]
    # Each entry is one line (tables split above, their cells escaped): a newline from the data
    # inside one stays visible instead of starting a heading or a row of its own.
    return printable_lines(out) + "\n"


def write_report(
    sources: Sequence[str | os.PathLike[str]],
    output: str | os.PathLike[str],
    *,
    format: str = "html",
    progress: ProgressCallback | None = None,
    max_ports: int = 12,
    **kwargs: Any,
) -> ReportData:
    """Gather, plot and write a report atomically.

    Args:
        sources: Inputs or history directories.
        output: The report file.
        format: ``html`` or ``md``.
        progress: Called once per stage (analysing, plotting each port, writing); the
            command line draws it on stderr. None: stages are logged at DEBUG level.
        max_ports: Most ports plotted (ports with findings first).
        **kwargs: Passed to :func:`gather`.

    Returns:
        The :class:`ReportData` written.

    Example:
        >>> import tempfile, pathlib
        >>> out = pathlib.Path(tempfile.mkdtemp()) / "r.html"
        >>> _ = write_report(["sample_traces/ethtool"], out)
        >>> out.read_text().startswith("<!DOCTYPE html>")
        True
    """
    stages = _Stages(progress)
    stages.step("analysing")
    data = gather(sources, **kwargs)
    ports = _port_frames(data, max_ports)
    stages.total = len(ports) + 2
    if ports and importlib.util.find_spec("matplotlib") is None:
        # matplotlib is the `report` extra: without it the report is whole but for its plots.
        data.plot_note = NO_MATPLOTLIB
        ports = []
    for key, pr, pf in ports:
        stages.step("plotting " + "/".join(str(k) for k in key if k is not None))
        image = _plot_port(key, pr, pf, data.gauges, "png" if format == "md" else "svg")
        data.plots.append(("/".join(str(k) for k in key if k is not None), image))
    stages.step("writing")
    text = render_markdown(data) if format == "md" else render_html(data)
    _atomic.write_text(output, text)
    return data
