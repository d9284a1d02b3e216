"""``fabricscope cron``: the command line of :mod:`fabricscope.doors.cron`."""

from __future__ import annotations

import argparse
import sys
import traceback
from pathlib import Path
from typing import Any

from fabricscope.doors.cli._common import (
    add_config_argument,
    add_future_margin_argument,
    add_profile_argument,
    days_arg,
    infinite_seconds_arg,
    seconds_arg,
)
from fabricscope.doors.cli.remote import (
    add_credential_arguments,
    add_remote_arguments,
    credential_options,
    remote_options,
)
from fabricscope.doors.cron import EXIT_UNKNOWN, CronOptions, LockedError, StateError, run_cron
from fabricscope.doors.cron.alertmanager import MAX_TIMEOUT_S, AlertmanagerOptions
from fabricscope.doors.cron.options import SERVER_LOOKBACK_S
from fabricscope.exceptions import FabricscopeError, OutputError
from fabricscope.incidents.findings import json_text
from fabricscope.redaction import printable, redact_text
from fabricscope.transport import Connection

_EPILOG = """\
examples:
  fabricscope cron --inputs /var/log/fabric --state /var/lib/fabricscope/state \\
      --history /var/lib/fabricscope/history --textfile /var/lib/node_exporter/textfile/fabricscope.prom
  fabricscope cron --inputs dumps/ --state st/ --history hist/ --json - --retain-days 30
  fabricscope cron ... --reset-state        rebuild a corrupt state from the history
  fabricscope cron ... --alertmanager http://alertmanager:9093 --fabric cluster-a
                                          send open incidents to Alertmanager (v2 API)

exit status (Nagios): 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN (locked by another run, corrupt
state, unreadable input in --strict mode). See docs/cron.md for crontab and systemd units.
"""


def add_parser(sub: Any) -> None:
    """Register ``fabricscope cron`` on the CLI's subparsers."""
    p = sub.add_parser(
        "cron",
        help="incremental run for cron/systemd: history, lifecycle, Nagios/JSON/textfile outputs",
        description="Read only what is new since the last run, store it in a Parquet history, run the "
        "detectors, track each fault across runs and report (Nagios exit status).",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--inputs", nargs="+", default=[], metavar="DIR", help="files or directories to watch")
    p.add_argument(
        "--prometheus",
        action="append",
        default=[],
        metavar="URL",
        help="Prometheus server to pull (repeatable): each run pulls only what is new since the last one",
    )
    p.add_argument("--state", required=True, metavar="DIR", help="state directory (manifest, lock)")
    p.add_argument("--history", required=True, metavar="DIR", help="history directory (Hive-partitioned Parquet)")
    add_config_argument(p)
    add_profile_argument(p)
    p.add_argument(
        "--lookback",
        type=seconds_arg,
        default=900.0,
        metavar="SECONDS",
        help="history prepended for the detectors (default 900)",
    )
    p.add_argument(
        "--server-lookback",
        type=seconds_arg,
        default=SERVER_LOOKBACK_S,
        metavar="SECONDS",
        help="each --prometheus pull starts this long before the last one ended, for samples that reached the "
        f"server late; stored ones are dropped (default {SERVER_LOOKBACK_S:g})",
    )
    p.add_argument("--retain-days", type=days_arg, metavar="DAYS", help="delete history older than this")
    p.add_argument(
        "--compact-parts",
        type=int,
        default=8,
        metavar="N",
        help="merge a partition's files when it has N (default 8; 0 off)",
    )
    p.add_argument("--strict", action="store_true", help="fail on a malformed record (default: skip and count)")
    add_future_margin_argument(p)
    p.add_argument(
        "--wait",
        nargs="?",
        type=infinite_seconds_arg,
        const=float("inf"),
        default=0.0,
        metavar="SECONDS",
        help="wait for a running run's lock (default: exit 3 at once)",
    )
    p.add_argument("--reset-state", action="store_true", help="rebuild the state from the history (after corruption)")
    p.add_argument("--json", metavar="PATH|-", help="write the findings document with the run record")
    p.add_argument("--textfile", metavar="PATH", help="write node_exporter textfile collector metrics (atomically)")
    add_remote_arguments(p)
    _add_alertmanager_arguments(p)
    p.set_defaults(func=_cmd_cron)


def _add_alertmanager_arguments(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group(
        "Alertmanager",
        "Each open incident is one alert (POST /api/v2/alerts), re-sent every run while it is open and "
        "sent with endsAt when it resolves. Delivery follows the run's commit: one attempt, bounded as a whole by "
        f"--timeout (at most {MAX_TIMEOUT_S:g} s); only a 2xx answer to the POST counts. A down Alertmanager is "
        "reported on stderr and in --json, never fails the run, and gets the resolutions it missed next run.",
    )
    g.add_argument(
        "--alertmanager", action="append", default=[], metavar="URL", help="Alertmanager to send to (repeatable)"
    )
    g.add_argument("--fabric", default="default", metavar="NAME", help="the alerts' fabric label (default: default)")
    g.add_argument(
        "--alert-interval",
        type=seconds_arg,
        default=60.0,
        metavar="SECONDS",
        help="seconds between cron runs: a firing alert stays valid for 4 of them (default 60)",
    )
    g.add_argument(
        "--evidence-url",
        metavar="URL",
        help="link sent with each alert (generatorURL and the evidence annotation); {incident_id} is replaced",
    )
    add_credential_arguments(g, header_flag="--alertmanager-header", prefix="alertmanager-", what="Alertmanager")


def _alertmanager_options(args: argparse.Namespace) -> AlertmanagerOptions | None:
    if not args.alertmanager:
        return None
    return AlertmanagerOptions(
        urls=tuple(args.alertmanager),
        connection=Connection(
            **credential_options(args, header_flag="--alertmanager-header", prefix="alertmanager-"),
            timeout_s=args.timeout,
        ),
        fabric=args.fabric,
        interval_s=args.alert_interval,
        evidence_url=args.evidence_url,
    )


def _nagios_text(text: str) -> str:
    r"""The text of a Nagios status line: one line whatever the data holds, and no ``|`` of its own.

    Nagios reads a plugin's first line, and takes what follows its first ``|`` as performance
    data (nagios-plugins.org/doc/guidelines.html): a name from the data must neither start a line
    nor end the text early, so ``|`` is escaped too, in the same ``\x..`` spelling as the rest.
    """
    return printable(text).replace("|", "\\x7c")


def _cmd_cron(args: argparse.Namespace) -> int:
    if not args.inputs and not args.prometheus:
        print("FABRICSCOPE UNKNOWN - give --inputs and/or --prometheus")
        return EXIT_UNKNOWN
    opts = CronOptions(
        inputs=args.inputs,
        state=Path(args.state),
        history=Path(args.history),
        config=args.config,
        profile=args.profile,
        lookback_s=args.lookback,
        retain_days=args.retain_days,
        compact_min_parts=args.compact_parts,
        strict=args.strict,
        wait_s=args.wait,
        reset_state=args.reset_state,
        json_path=args.json,
        textfile=args.textfile,
        prometheus=args.prometheus,
        remote=remote_options(args),
        alertmanager=_alertmanager_options(args),
        server_lookback_s=max(0.0, args.server_lookback),
        future_margin_s=args.future_margin,
    )
    try:
        res = run_cron(opts)
    except (LockedError, StateError) as e:
        print(f"FABRICSCOPE UNKNOWN - {_nagios_text(redact_text(str(e)))}")
        return EXIT_UNKNOWN
    except OutputError as e:
        print(f"FABRICSCOPE UNKNOWN - cannot write: {_nagios_text(redact_text(str(e)))}")
        return EXIT_UNKNOWN
    except FabricscopeError as e:
        print(f"FABRICSCOPE UNKNOWN - cannot read input: {_nagios_text(redact_text(str(e)))}")
        return EXIT_UNKNOWN
    except (OSError, ValueError) as e:
        print(f"FABRICSCOPE UNKNOWN - {_nagios_text(redact_text(str(e)))}")
        return EXIT_UNKNOWN
    except Exception as e:  # Nagios must see UNKNOWN, not a traceback's exit status 1 (WARNING)
        # The traceback's text may quote a URL with its credentials: redacted like every message.
        print(redact_text(traceback.format_exc(), escape=False), file=sys.stderr, end="")
        print(f"FABRICSCOPE UNKNOWN - internal error: {type(e).__name__}: {_nagios_text(redact_text(str(e)))}")
        return EXIT_UNKNOWN
    for source in res.document.get("inputs", []):
        if source.get("error"):
            # The Nagios line counts the inputs it could not read; stderr says which and why.
            failure = str(source["error"])
            if not failure.startswith(str(source["path"])):
                failure = f"{source['path']}: {failure}"
            print(f"fabricscope cron: {redact_text(failure)}", file=sys.stderr)
    for d in res.deliveries:
        if d.error:
            failure = f"alertmanager {d.url}: not delivered ({d.error}); the next run sends again"
            print(f"fabricscope cron: {redact_text(failure)}", file=sys.stderr)
    if args.json == "-":
        print(json_text(res.document, indent=2))
    if args.json != "-":
        perf = f" | samples={res.samples} files={res.files_read} duplicates_dropped={res.duplicates_dropped}"
        print(_nagios_text(res.status_line) + perf)
    sys.stdout.flush()
    return res.exit_code
