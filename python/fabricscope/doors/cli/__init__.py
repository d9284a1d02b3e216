"""The ``fabricscope`` command line: one module per command, assembled here.

Only this package parses arguments and prints; the library modules it calls return values (or
log) and raise :mod:`fabricscope.exceptions` errors, which the commands turn into exit statuses.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence

from fabricscope import __version__
from fabricscope.doors.cli import advise, analyze, catalog, cron, dashboard, parse, report, simulate, topology
from fabricscope.doors.cli._common import EXIT_INPUT, EXIT_INTERNAL, EXIT_OK, EXIT_USAGE, ArgumentParser
from fabricscope.redaction import redact_text

__all__ = ["EXIT_INPUT", "EXIT_INTERNAL", "EXIT_OK", "EXIT_USAGE", "build_parser", "main"]

_EPILOG_MAIN = """\
examples:
  fabricscope parse sample_traces/ -o samples.parquet      parse everything, write Parquet
  fabricscope parse dump.prom.gz --lenient                 summary only; skip bad records
  fabricscope parse ethtool.log --host gpu017 --format ethtool
  fabricscope analyze sample_traces/ --json findings.json  findings, Nagios exit status
  fabricscope topology sample_traces/ib                    which port is cabled to which
  fabricscope formats                                      what can be read
  fabricscope counters --layer network                     the counter vocabulary

exit status: 0 ok, 3 usage error or an input could not be read, 4 internal error;
analyze, cron and report: Nagios's 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN (usage errors included)
"""

# Commands whose exit status is Nagios's (README, "Exit status"): an internal error is UNKNOWN.
_NAGIOS_COMMANDS = frozenset({"analyze", "cron", "report"})

# The order of the commands in `fabricscope --help`.
_COMMANDS = (parse, analyze, topology, catalog, simulate, advise, cron, report, dashboard)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (exposed for docs and tests)."""
    p = ArgumentParser(
        prog="fabricscope",
        description="Fabric telemetry analyzer for InfiniBand and RoCEv2 GPU clusters.",
        epilog=_EPILOG_MAIN,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--version", action="version", version=f"fabricscope {__version__}")
    p.add_argument("-v", "--verbose", action="store_true", help="log warnings per input")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in _COMMANDS:
        command.add_parser(sub)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.WARNING if args.verbose else logging.ERROR, format="fabricscope: %(message)s")
    try:
        return int(args.func(args))
    except BrokenPipeError:
        return EXIT_OK
    except ValueError as e:
        print(f"fabricscope: {redact_text(str(e))}", file=sys.stderr)
        return EXIT_USAGE
    except Exception as e:
        # A check's status must stay Nagios's: UNKNOWN, not a traceback's 1 (WARNING).
        message = redact_text(str(e))
        print(
            f"fabricscope {args.command}: internal error: {type(e).__name__}: {message} (rerun with -v for the trace)",
            file=sys.stderr,
        )
        if args.verbose:
            import traceback

            print(redact_text(traceback.format_exc(), escape=False), file=sys.stderr, end="")
        return EXIT_USAGE if args.command in _NAGIOS_COMMANDS else EXIT_INTERNAL


if __name__ == "__main__":
    raise SystemExit(main())
