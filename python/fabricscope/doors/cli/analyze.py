"""``fabricscope analyze``: run every detector and print the findings (Nagios exit status)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import polars as pl

from fabricscope import __version__, _atomic
from fabricscope.doors._text_table import terminal_width, text_table
from fabricscope.doors.cli._common import (
    EXIT_INPUT,
    add_analysis_arguments,
    analysis_options,
    cannot_analyse,
    status_notes,
)
from fabricscope.doors.cli.remote import add_remote_arguments, remote_options
from fabricscope.doors.input_summary import by_format, problems, skipped, summary_text, time_range
from fabricscope.doors.summary import MAX_LISTED, fabric_summary
from fabricscope.engines.streaming import parse_memory
from fabricscope.exceptions import FabricscopeError, OutputError
from fabricscope.incidents.correlate import Incident, incident_documents, standalone_mask
from fabricscope.incidents.findings import SCHEMA_ID_V2, SCHEMAS, document, json_text
from fabricscope.incidents.severity import Severity
from fabricscope.pipeline import Analysis, run_analysis
from fabricscope.progress import ProgressBar
from fabricscope.redaction import printable_lines, redact_text

_EPILOG_ANALYZE = """\
examples:
  fabricscope analyze http://prometheus:9090 --since 2026-12-02T14:00:00Z --match 'job="node"'
  fabricscope analyze http://gpu017:9100/metrics --repeat 6 --interval 10
  fabricscope analyze sample_traces/
  fabricscope analyze /var/lib/node_exporter/*.prom --json findings.json
  fabricscope analyze dumps/ --profile ndr400 --config thresholds.toml --json - | jq .status

exit status (Nagios): 0 OK (nothing above info), 1 WARNING, 2 CRITICAL, 3 UNKNOWN (could not analyse)
an input that cannot be read (or, without --lenient, has a malformed record) is listed with its error
and the others are analysed; the status is then UNKNOWN (3) unless a finding is CRITICAL (2)
"""


def _incident_lines(incidents: Sequence[Incident]) -> list[str]:
    """Incidents first: title, action, root, then each consequence with its path."""
    lines: list[str] = []
    for inc in incidents:
        window = f"{str(inc.start)[:19]} .. {str(inc.end)[11:19]}" if inc.start is not None else "-"
        lines.append("")
        lines.append(f"{Severity(inc.severity).mark:<4}  INCIDENT {inc.id}  {inc.title}")
        lines.append(f"      action: {inc.action}")
        lines.append(f"      window: {window}   rule: {inc.rule}")
        r = inc.root
        lines.append(f"      root:   {r['kind']} on {_where(r)}: {r['message']}")
        for c in inc.consequences:
            f = c["finding"]
            lines.append(f"      -> {f['kind']} on {_where(f)} [{c['relation']}: {' -> '.join(c['path'])}]")
        lines.append(f"      topology: {inc.topology}")
    return lines


def _where(f: dict[str, Any]) -> str:
    bits = [str(x) for x in (f.get("host"), f.get("device")) if x]
    if f.get("port") is not None:
        bits.append(f"port {f['port']}")
    return " ".join(bits) or "-"


def _analysis_summary(analysis: Analysis, status: str, verbose: bool) -> str:
    """Status, the findings (info ones with ``verbose``), then what was read: one line per format."""
    findings, inputs, reports = analysis.findings, analysis.inputs, analysis.reports
    incidents = analysis.incidents
    width = terminal_width()
    held = int((~standalone_mask(findings, incidents)).sum()) if incidents else 0
    verdict = f"{status.upper()} - {len(inputs)} input(s), {findings.height} finding(s)"
    if incidents:
        verdict += f": {held} in {len(incidents)} incident(s), {findings.height - held} standalone"
    lines = [f"fabricscope {__version__}: {verdict}"]
    counts = findings.group_by("severity").len() if findings.height else None
    if counts is not None:
        by = dict(zip(counts["severity"].to_list(), counts["len"].to_list(), strict=True))
        lines.append("  " + ", ".join(f"{by.get(s, 0)} {s}" for s in ("critical", "warning", "info")))
    lines += _incident_lines(incidents)
    # findings an incident holds were listed under it: the table has the standalone ones
    findings = findings.filter(standalone_mask(findings, incidents)) if incidents else findings
    shown = findings if verbose else findings.filter(pl.col("severity") != "info")
    if shown.height > MAX_LISTED and not verbose:
        # thousands of ports with the same finding: one line per kind, every finding in --json
        lines += ["", f"fabric summary ({shown.height:,} findings; each one with --verbose or --json):"]
        lines += [f"  {line}" for line in fabric_summary(shown)]
        shown = shown.clear()
    if shown.height:
        rows = []
        for r in shown.iter_rows(named=True):
            port = "" if r["port"] is None else str(r["port"])
            if r["priority"] is not None:
                port += f"/p{r['priority']}"
            rows.append(
                [
                    Severity(r["severity"]).mark,
                    r["kind"],
                    r["host"],
                    r["device"],
                    port or "-",
                    time_range(r["start"], r["end"]),
                    r["message"],
                ]
            )
        header = ["sev", "kind", "host", "device", "port", "window (UTC)", "message"]
        # Only the message wraps: the other columns stay one line each, so rows scan down the page.
        right = [False] * 4 + [True, False, False]
        lines += ["", *(["standalone findings:"] if incidents else [])]
        lines += text_table(header, rows, width=width, align_right=right, wrap=[False] * 6 + [True]).splitlines()
    if not verbose and (findings["severity"] == "info").any():
        lines.append("")
        info = findings.filter(pl.col("severity") == "info")
        lines.append(f"{info.height:,} info finding(s) not listed; each one with --verbose or --json:")
        lines += [f"  {line}" for line in fabric_summary(info)]
    if analysis.conflicts:
        # names two inputs map differently: what was decided, and how to settle a host's name
        lines += ["", "names the inputs disagree on (settle a host's with --host-alias ALIAS=HOST):"]
        lines += [f"  {c}" for c in analysis.conflicts]
    if reports:
        lines += ["", "inputs:"]
        lines += summary_text(
            by_format(reports, analysis.times),
            skipped_paths=skipped(reports),
            problem_lines=problems(reports),
            max_problems=None if verbose else 20,
            width=width,
        ).splitlines()
        if verbose:
            rows = [[i["path"], i["format"], f"{i['records']:,}", f"{i['rejected']:,}"] for i in inputs]
            header = ["input", "format", "records", "bad records"]
            # Paths stay whole (copyable), even when the table gets wider than the terminal.
            lines += ["", *text_table(header, rows, align_right=[False, False, True, True]).splitlines()]
    # The verdict again where the eye lands after a long listing: the last line.
    roots = ", ".join(f"{i.root['kind']} on {_where(i.root)}" for i in incidents[:3])
    more = f" and {len(incidents) - 3} more" if len(incidents) > 3 else ""
    lines += ["", f"{verdict}" + (f"; root causes: {roots}{more}" if incidents else "")]
    # Each entry is one line; names and messages from the data may hold any character.
    return printable_lines(lines)


def _memory_size(text: str) -> int:
    try:
        return parse_memory(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _cmd_analyze(args: argparse.Namespace) -> int:
    bar = ProgressBar()
    try:
        analysis = run_analysis(
            args.inputs,
            **analysis_options(args),
            remote=replace(remote_options(args), progress=bar.pulled),
            memory=args.memory,
            progress=True if args.progress else None,
        )
    except (FabricscopeError, OSError, ValueError) as e:
        bar.close()
        print(cannot_analyse(e), file=sys.stderr)
        return EXIT_INPUT
    bar.close()
    doc = document(
        analysis.findings,
        analysis.inputs,
        incident_documents(analysis.incidents),
        schema=args.schema,
        analysed=analysis.analysed,
        conflicts=[c.as_dict() for c in analysis.conflicts],
    )
    if args.json:
        text = json_text(doc, indent=2)
        if args.json == "-":
            print(text)
        else:
            try:
                _atomic.write_text(Path(args.json), text + "\n")
            except OutputError as e:
                print(f"UNKNOWN - fabricscope cannot write --json: {redact_text(str(e))}", file=sys.stderr)
                return EXIT_INPUT
    if args.json != "-":
        print(_analysis_summary(analysis, analysis.status, args.verbose))
        notes = status_notes(analysis)
        if notes:
            print(notes)
    return analysis.exit_status


def add_parser(sub: Any) -> None:
    """Register ``fabricscope analyze`` on the CLI's subparsers."""
    an = sub.add_parser(
        "analyze",
        help="find lossy, flapping, degraded and congested links (Nagios exit status)",
        description="Rate the counters and run every detector; print findings, optionally as JSON.",
        epilog=_EPILOG_ANALYZE,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    an.add_argument(
        "inputs", nargs="+", metavar="INPUT", help="files or directories (.gz/.zst ok), or a Prometheus/exporter URL"
    )
    an.add_argument("--json", metavar="PATH|-", help="write the findings document (fabricscope.findings/2)")
    an.add_argument(
        "--schema",
        choices=list(SCHEMAS),
        default=SCHEMA_ID_V2,
        help="findings document version: /2 adds incidents (default); /1 for existing consumers",
    )
    add_analysis_arguments(an)
    an.add_argument("--verbose", action="store_true", help="also list info findings (data quality) and every input")
    an.add_argument(
        "--memory",
        type=_memory_size,
        metavar="SIZE",
        help="analyse in this memory budget (512M, 4G), spilling to a temporary directory; "
        "without it, an input estimated larger than FABRICSCOPE_MEMORY (default: half of the machine; off: never) "
        "streams in that budget; --engine ray: shared by the workers (docs/scale.md)",
    )
    an.add_argument("--progress", action="store_true", help="progress bar with ETA on stderr (default: on a terminal)")
    add_remote_arguments(an)
    an.set_defaults(func=_cmd_analyze)
