"""The report as Markdown (plots as inline PNG data URIs): every string of the data shown as text."""

from __future__ import annotations

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
from fabricscope.redaction import markdown_text, printable_lines

__all__ = ["render_markdown"]


def _replace_md(findings: pl.DataFrame) -> list[str]:
    """The links the wear-out forecasts say to replace, soonest first (nothing when there are none)."""
    table = links_to_replace(findings)
    if not table.height:
        return []
    return [f"## Links to replace ({table.height})", "", *_md_table(table), ""]


def _incidents_md(incidents: Sequence[Incident]) -> list[str]:
    """Each incident: title, action, root, and its consequences with their paths."""
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


def _conflicts_md(conflicts: Sequence[Conflict]) -> list[str]:
    """The names the inputs disagree on and what was decided (nothing when they agree)."""
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
        >>> from fabricscope.doors.report import gather
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
