"""``fabricscope dashboard``: start the Streamlit fabric-health dashboard on this machine."""

from __future__ import annotations

import argparse
import ipaddress
import os
import sys
from pathlib import Path
from typing import Any

from fabricscope.doors.cli._common import (
    EXIT_USAGE,
    add_config_argument,
    add_engine_arguments,
    add_host_alias_argument,
    add_limit_argument,
    add_profile_argument,
    add_window_arguments,
    analysis_options,
)
from fabricscope.doors.cli.remote import add_remote_arguments, remote_options
from fabricscope.doors.dashboard import (
    ENV_ANALYSIS,
    ENV_APP,
    ENV_DATA,
    ENV_MAX_UPLOAD_MB,
    ENV_REMOTE_FILE,
    analysis_environment,
    default_data_dir,
    find_app,
    private_file,
    remote_environment,
    run_server,
    streamlit_command,
)
from fabricscope.reading.prometheus import is_url
from fabricscope.transport import redact

_EPILOG = """\
examples:
  fabricscope dashboard                                  sample_traces/ on http://127.0.0.1:8501
  fabricscope dashboard --data /var/lib/fabricscope/history --port 8600
  fabricscope dashboard --prometheus http://prometheus:9090              a live server, last hour
  fabricscope dashboard --prometheus https://prom.example --bearer-token-file /etc/fabricscope/token
  fabricscope dashboard --prometheus http://gpu017:9100/metrics --repeat 6 --interval 10
  fabricscope dashboard --data /var/lib/fabricscope/history --port 8600
  fabricscope dashboard --data dumps/ --host 0.0.0.0     reachable from other machines (no auth!)

The dashboard reads files under --data (a directory of counter files, or a `fabricscope cron`
history) and the servers and exporter endpoints named with --prometheus (a URL given as --data
counts as --prometheus); the browser picks among them and, for a server, a time range, but never
names a path or URL of its own. Credentials (headers, token and auth files) stay on this machine:
they are sent to the server, never shown in the page. Without --data and --prometheus it shows
the sample traces of a checkout (./sample_traces when run from one). Stopping this command
(Ctrl-C, SIGTERM, SIGHUP) stops the server with it.
"""


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _cmd_dashboard(args: argparse.Namespace) -> int:
    try:
        import streamlit  # noqa: F401
    except ImportError:
        print(
            "fabricscope: the dashboard needs the `dashboard` extra: pip install 'fabricscope[dashboard]'",
            file=sys.stderr,
        )
        return EXIT_USAGE
    try:
        app = find_app(args.app)
    except FileNotFoundError as e:
        print(f"fabricscope: {e}", file=sys.stderr)
        return EXIT_USAGE
    urls = list(args.prometheus)
    if args.data and is_url(args.data):
        urls.insert(0, args.data)
        args.data = None
    try:
        remote = remote_environment(urls, remote_options(args)) if urls else None
    except ValueError as e:
        print(f"fabricscope: --prometheus: {e}", file=sys.stderr)
        return EXIT_USAGE
    data: Path | None = None
    if args.data:
        data = Path(args.data).expanduser().resolve()
    elif not urls:
        data = default_data_dir(app)
        if data is None:
            print(
                "fabricscope: no sample_traces/ here to show: pass --data DIR (counter files or a `fabricscope cron` "
                "history; `fabricscope simulate demo --scenario pfc-storm` writes a demo one) or --prometheus URL",
                file=sys.stderr,
            )
            return EXIT_USAGE
    if data is not None and not data.is_dir():
        print(f"fabricscope: --data {data} is not a directory", file=sys.stderr)
        return 3
    if not 0 < args.port < 65536:
        print(f"fabricscope: --port {args.port} is not a TCP port", file=sys.stderr)
        return EXIT_USAGE
    if args.max_upload_mb < 1:
        print("fabricscope: --max-upload-mb must be at least 1", file=sys.stderr)
        return EXIT_USAGE
    shown = [str(data)] if data is not None else []
    shown += [redact(u) for u in urls]
    if not _is_loopback(args.host):
        print(
            f"fabricscope: warning: listening on {args.host}: anyone who can reach this port can read the "
            f"telemetry of {', '.join(shown)} (the dashboard has no authentication)",
            file=sys.stderr,
        )
    env = {**os.environ, ENV_MAX_UPLOAD_MB: str(args.max_upload_mb)}
    # The app reads only the servers named here, never a description inherited from our caller.
    env.pop(ENV_REMOTE_FILE, None)
    # The dashboard reads leniently (an upload is whatever the browser sent): strictness is not an
    # option; its --host is the address to bind, not the host of inputs that name none.
    options = {k: v for k, v in analysis_options(args).items() if k not in ("strict", "host")}
    env[ENV_ANALYSIS] = analysis_environment(options)
    if data is not None:
        env[ENV_DATA] = str(data)
    cmd = streamlit_command(app, host=args.host, port=args.port, max_upload_mb=args.max_upload_mb)
    print(f"fabricscope dashboard: http://{args.host}:{args.port}  (data: {', '.join(shown)})", file=sys.stderr)
    if remote is None:
        return run_server(cmd, env)
    # The credentials (URL user info and query strings, header values) go through a file only
    # this user can read, removed once the server stops: never the child's environment.
    with private_file(remote) as path:
        env[ENV_REMOTE_FILE] = str(path)
        return run_server(cmd, env)


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``dashboard`` subcommand to the ``fabricscope`` parser.

    Args:
        subparsers: The object ``ArgumentParser.add_subparsers`` returned.

    Returns:
        The subcommand's parser.
    """
    p = subparsers.add_parser(
        "dashboard",
        help="start the fabric-health dashboard (Streamlit) on this machine",
        description="Start the fabric-health dashboard over a data directory, a cron history or a Prometheus server.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "--data",
        metavar="DIR|URL",
        help="directory of counter files or a cron history (default: the sample traces); a URL is a --prometheus",
    )
    p.add_argument(
        "--prometheus",
        action="append",
        default=[],
        metavar="URL",
        help="a Prometheus server or exporter endpoint the dashboard may read (repeatable; the first is shown first)",
    )
    p.add_argument("--port", type=int, default=8501, help="TCP port (default 8501)")
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1: this machine only)")
    p.add_argument("--max-upload-mb", type=int, default=200, help="largest accepted upload per file (default 200)")
    p.add_argument(
        "--app",
        metavar="PATH",
        help=f"the dashboards/ directory or app.py (default: ${ENV_APP}, else the checkout's, else the installed copy)",
    )
    # The analysis options of `analyze` (lenient always; --host is the address to bind here).
    add_profile_argument(p)
    add_config_argument(p)
    add_limit_argument(p)
    add_window_arguments(p)
    add_engine_arguments(p)
    add_host_alias_argument(p)
    add_remote_arguments(p)
    p.set_defaults(func=_cmd_dashboard)
    return p
