"""``fabricscope report``: one self-contained HTML (or Markdown) report from inputs or a history."""

from __future__ import annotations

import argparse
import sys
import time as _time
from pathlib import Path
from typing import Any

from fabricscope.cli.remote import add_remote_arguments, remote_options
from fabricscope.exceptions import FabricscopeError
from fabricscope.report.build import write_report

_NAGIOS = {"ok": 0, "warning": 1, "critical": 2, "unknown": 3}


class _StageLine:
    """The report's stages on one stderr line (``[3/9]   2.1 s  plotting gpu01/mlx5_0/1``)."""

    def __init__(self) -> None:
        self.t0 = _time.monotonic()
        self.drawn = False

    def show(self, done: int, total: int, what: str) -> None:
        of = f"/{total}" if total else ""
        sys.stderr.write(f"\r[{done}{of}] {_time.monotonic() - self.t0:5.1f} s  {what[:60]:<60}")
        sys.stderr.flush()
        self.drawn = True

    def close(self) -> None:
        if self.drawn:
            sys.stderr.write("\n")
            sys.stderr.flush()


def add_parser(sub: Any) -> None:
    """Register ``fabricscope report``."""
    p = sub.add_parser(
        "report",
        help="one self-contained HTML (or Markdown) report: findings, per-port plots, bottlenecks, advice",
        description="Analyse inputs (or a cron history) and write a report with the findings, their evidence "
        "and threshold sources, per-port time series with fault windows, the bottleneck view and the advisor.",
    )
    p.add_argument(
        "inputs",
        nargs="+",
        metavar="INPUT-or-HISTORY",
        help="files, directories, cron history dirs, or a Prometheus/exporter URL",
    )
    p.add_argument("-o", "--output", required=True, metavar="report.html", help="the report file (atomically)")
    p.add_argument("--format", choices=["html", "md"], default=None, help="default: from the output's suffix")
    p.add_argument("--profile", help="force a technology profile")
    p.add_argument("--config", metavar="PATH", help="TOML thresholds")
    p.add_argument("--since", help="for histories and URLs: only samples from this time (ISO 8601)")
    p.add_argument("--until", help="for URLs: only samples before this time (ISO 8601)")
    p.add_argument("--max-ports", type=int, default=12, help="most ports plotted (default 12; flagged first)")
    p.add_argument("--lenient", action="store_true", help="skip and count bad records")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress on stderr")
    add_remote_arguments(p)
    p.set_defaults(func=_cmd_report)


def _cmd_report(args: argparse.Namespace) -> int:
    quiet = args.quiet or not sys.stderr.isatty()
    stages = _StageLine()
    fmt = args.format or ("md" if str(args.output).endswith((".md", ".markdown")) else "html")
    try:
        data = write_report(
            args.inputs,
            args.output,
            format=fmt,
            progress=None if quiet else stages.show,
            max_ports=args.max_ports,
            profile=args.profile,
            config=args.config,
            strict=not args.lenient,
            since=args.since,
            until=args.until,
            remote=remote_options(args),
        )
    except FabricscopeError as e:
        stages.close()
        print(f"fabricscope: cannot read input: {e}", file=sys.stderr)
        return 3
    stages.close()
    plots = f"{len(data.plots)} port plot(s)" if not data.plot_note else "no plots (the `report` extra adds them)"
    print(
        f"wrote {Path(args.output)}: {data.status.upper()}, {len(data.incidents)} incident(s), "
        f"{data.findings.height} finding(s), {plots}"
    )
    # Nagios, like analyze: the report's verdict is its exit status.
    return _NAGIOS[data.status]
