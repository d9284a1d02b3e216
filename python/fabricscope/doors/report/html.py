"""The report as one self-contained HTML document: its markup and its CSS (nothing fetched when viewed)."""

from __future__ import annotations

import datetime as dt
import html
import json
from collections.abc import Sequence
from typing import Any

import polars as pl

from fabricscope import __version__
from fabricscope.doors.report.content import (
    _CONFLICTS_NOTE,
    _busiest,
    _counts,
    _fmt,
    _formats_rows,
    _listed,
    _measured,
    _more_bottlenecks,
    _not_listed,
    _sources_of,
    _verdict,
    _where,
    _window,
)
from fabricscope.doors.report.gather import ReportData
from fabricscope.doors.report.plots import _data_uri
from fabricscope.doors.summary import MAX_LISTED
from fabricscope.fabric.entities import Conflict, conflicts_frame
from fabricscope.incidents.correlate import Incident
from fabricscope.incidents.findings import links_to_replace
from fabricscope.incidents.severity import Severity
from fabricscope.redaction import printable

__all__ = ["render_html"]


def _html_text(text: str) -> str:
    """``text`` for HTML: control characters escaped (as in every output), then HTML's own escaping."""
    return html.escape(printable(text))


# In table cells (the group heading spells it out): short enough for a narrow column.


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
    """The links the wear-out forecasts say to replace, soonest first (nothing when there are none)."""
    table = links_to_replace(findings)
    if not table.height:
        return []
    return [
        f"<h2 id='replace'>Links to replace ({table.height})</h2>",
        "<p class='note'>Error rates rising towards their warning rate (link_wearout): replace these in a "
        "maintenance window, soonest first.</p>",
        _html_table(table),
    ]


def _conflicts_html(conflicts: Sequence[Conflict]) -> list[str]:
    """The names the inputs disagree on and what was decided (nothing when they agree)."""
    if not conflicts:
        return []
    return [
        f"<h2 id='conflicts'>Names the inputs disagree on ({len(conflicts)})</h2>",
        f"<p class='note'>{_html_text(_CONFLICTS_NOTE)}</p>",
        _html_table(conflicts_frame(conflicts)),
    ]


def _html_image(title: str, image: str | bytes) -> str:
    """A plot in the HTML report: SVG inline, PNG as an image of its data URI."""
    if isinstance(image, str):
        return image
    return f"<img alt='{_html_text(title)}' src='{_data_uri(image)}'>"


def _html_table(df: pl.DataFrame, limit: int = 200) -> str:
    """``df`` as an HTML table of its first ``limit`` rows, numbers right-aligned, every cell escaped."""
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


def _summary_html(head: str, lines: list[str]) -> str:
    """The findings not listed one by one: a sentence and one line per kind."""
    e = _html_text
    return f"<p class='note'>{e(head)}</p><ul>" + "".join(f"<li>{e(x)}</li>" for x in lines) + "</ul>"


def _findings_html(rows: list[dict[str, Any]]) -> str:
    """One port's findings as a table, each with its evidence folded under it."""
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
            f"{e(Severity(r['severity']).mark.lower())}</span></td>"
            f"<td>{e(r['kind'])}</td><td>{e(_fmt(r['priority']))}</td><td>{e(_window(r))}</td>"
            f"<td>{e(_measured(r))}</td>"
            f"<td>{e(r['message'] or '')}<details><summary>evidence</summary><pre>{e(pretty)}</pre></details></td>"
            f"<td>{e('; '.join(_sources_of(ev)) or '-')}</td></tr>"
        )
    out.append("</table>")
    return "".join(out)


def render_html(data: ReportData) -> str:
    """One self-contained HTML document (inline CSS and SVG; nothing fetched when viewed).

    It opens with the verdict and the findings, worst port first; then the evidence plots, the
    bottleneck view and the advisor; the inputs come last, collapsed. Printed (or saved as PDF)
    it keeps rows and plots whole and hides the navigation.

    Example:
        >>> from fabricscope.doors.report import gather
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
