"""``fabricscope report``: one self-contained HTML (or Markdown) report from inputs or a history."""

from __future__ import annotations

import argparse
import sys
import time as _time
from pathlib import Path
from typing import Any

from fabricscope.doors.cli._common import EXIT_INPUT, add_analysis_arguments, analysis_options, cannot_analyse
from fabricscope.doors.cli.remote import add_remote_arguments, remote_options
from fabricscope.doors.report.build import write_report
from fabricscope.exceptions import FabricscopeError
from fabricscope.incidents.findings import STATUS_EXIT
from fabricscope.redaction import redact_text

_EPILOG = """\
exit status (Nagios), as analyze: 0 OK (nothing above info), 1 WARNING, 2 CRITICAL, 3 UNKNOWN
an input that cannot be read (or, without --lenient, has a malformed record) is listed with its error
and the others are reported; the status is then UNKNOWN (3) unless a finding is CRITICAL (2);
no report is written (exit 3) only when no input could be read at all
"""


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
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "inputs",
        nargs="+",
        metavar="INPUT-or-HISTORY",
        help="files, directories, cron history dirs, or a Prometheus/exporter URL",
    )
    p.add_argument("-o", "--output", required=True, metavar="report.html", help="the report file (atomically)")
    p.add_argument("--format", choices=["html", "md"], default=None, help="default: from the output's suffix")
    p.add_argument("--max-ports", type=int, default=12, help="most ports plotted (default 12; flagged first)")
    # The same analysis options as `analyze` (its --format is the report's: the input format is detected).
    add_analysis_arguments(p, input_format=False)
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
            remote=remote_options(args),
            **analysis_options(args),
        )
    except (FabricscopeError, OSError, ValueError) as e:
        stages.close()
        print(cannot_analyse(e), file=sys.stderr)
        return EXIT_INPUT
    stages.close()
    plots = f"{len(data.plots)} port plot(s)" if not data.plot_note else "no plots (the `report` extra adds them)"
    print(
        f"wrote {Path(args.output)}: {data.status.upper()}, {len(data.incidents)} incident(s), "
        f"{data.findings.height} finding(s), {plots}"
    )
    for i in data.inputs:
        if i.get("error"):
            print(f"  could not read {redact_text(str(i['path']))}: {redact_text(str(i['error']))}")
    # Nagios, with analyze's rules: the report's verdict is its exit status.
    return STATUS_EXIT[data.status]
