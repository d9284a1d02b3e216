"""Command-line options for HTTP inputs (a Prometheus server, an exporter endpoint).

Shared by every command that reads inputs, so one spelling of each option exists.
"""

from __future__ import annotations

import argparse

from fabricscope.reading.prometheus import APIS, RemoteOptions
from fabricscope.transport import DEFAULT_DEADLINE_S, Connection

__all__ = [
    "add_credential_arguments",
    "add_remote_arguments",
    "credential_options",
    "remote_options",
]


def _header(text: str) -> tuple[str, str]:
    name, sep, value = text.partition("=")
    if not sep:
        name, sep, value = text.partition(":")
    if not sep or not name.strip():
        raise argparse.ArgumentTypeError("expected NAME=VALUE (or NAME: VALUE)")
    return name.strip(), value.strip()


def add_credential_arguments(
    g: argparse._ArgumentGroup, *, header_flag: str, prefix: str = "", what: str = "the server"
) -> None:
    """Header, bearer token, basic auth, CA and ``--insecure`` options: one spelling for every HTTP client.

    Args:
        g: The argument group to add them to.
        header_flag: The repeatable ``NAME=VALUE`` header option (``--prometheus-header``).
        prefix: Put before the other options' names (``alertmanager-`` gives ``--alertmanager-ca-file``).
        what: The server, as the help texts name it.
    """
    g.add_argument(
        header_flag,
        action="append",
        type=_header,
        default=[],
        metavar="NAME=VALUE",
        help="extra request header (repeatable; its value is never printed)",
    )
    g.add_argument(
        f"--{prefix}bearer-token-file", metavar="PATH", help=f"send the token in this file as a bearer token to {what}"
    )
    g.add_argument(f"--{prefix}basic-auth-file", metavar="PATH", help=f"basic auth (user:password) for {what}")
    g.add_argument(f"--{prefix}ca-file", metavar="PATH", help=f"verify {what} with this PEM CA bundle")
    g.add_argument(f"--{prefix}insecure", action="store_true", help=f"do not verify the TLS certificate of {what}")


def credential_options(args: argparse.Namespace, *, header_flag: str, prefix: str = "") -> dict[str, object]:
    """The :class:`~fabricscope.transport.Connection` fields :func:`add_credential_arguments` gives."""
    dest = prefix.replace("-", "_")
    return {
        "headers": tuple(getattr(args, header_flag.lstrip("-").replace("-", "_"))),
        "bearer_token_file": getattr(args, f"{dest}bearer_token_file"),
        "basic_auth_file": getattr(args, f"{dest}basic_auth_file"),
        "ca_file": getattr(args, f"{dest}ca_file"),
        "insecure": getattr(args, f"{dest}insecure"),
    }


def add_remote_arguments(p: argparse.ArgumentParser) -> None:
    """Add the options that say how to read an ``http(s)://`` input."""
    g = p.add_argument_group(
        "Prometheus server and exporter URLs",
        "An INPUT may be a Prometheus server (recognised by /api/v1/status/buildinfo; pulled over "
        "--since/--until, default the last hour) or an exporter endpoint (http://node:9100/metrics, scraped).",
    )
    g.add_argument(
        "--match",
        action="append",
        default=[],
        metavar="MATCHER",
        help='pull only series matching this label matcher (repeatable, ANDed): job="node", {cluster=~"a|b"}',
    )
    g.add_argument(
        "--prometheus-api",
        choices=APIS,
        metavar="{" + ",".join(APIS) + "}",
        help="how to ask the server: read (remote read, raw samples as protobuf; the default, with a fallback to "
        "query on a server without it), query (range selectors, raw samples as JSON), query_range (needs --step)",
    )
    g.add_argument(
        "--step", type=float, metavar="SECONDS", help="pull through query_range with this step (default: raw samples)"
    )
    g.add_argument("--chunk", type=float, metavar="SECONDS", help="fixed time chunk per request (default: adaptive)")
    g.add_argument("--repeat", type=int, default=1, metavar="N", help="exporter URLs: scrapes to take (default 1)")
    g.add_argument("--interval", type=float, default=10.0, metavar="S", help="exporter URLs: seconds between scrapes")
    add_credential_arguments(g, header_flag="--prometheus-header")
    g.add_argument(
        "--timeout", type=float, default=30.0, metavar="S", help="seconds any socket operation may wait (default 30)"
    )
    g.add_argument(
        "--deadline",
        type=float,
        default=DEFAULT_DEADLINE_S,
        metavar="S",
        help=f"seconds one pull may take in all, retries and redirects included (default {DEFAULT_DEADLINE_S:g}; "
        "0: none)",
    )
    g.add_argument(
        "--retries", type=int, default=3, metavar="N", help="retries after timeouts, 429 and 5xx (default 3)"
    )
    g.add_argument("--concurrency", type=int, default=4, metavar="N", help="requests in flight at once (default 4)")


def remote_options(args: argparse.Namespace) -> RemoteOptions:
    """The :class:`RemoteOptions` the parsed options ask for (the range comes from the filters)."""
    return RemoteOptions(
        match=tuple(args.match),
        step_s=args.step,
        chunk_s=args.chunk,
        api=args.prometheus_api,
        repeat=args.repeat,
        interval_s=args.interval,
        connection=Connection(
            **credential_options(args, header_flag="--prometheus-header"),
            timeout_s=args.timeout,
            deadline_s=args.deadline if args.deadline and args.deadline > 0 else None,
            retries=max(0, args.retries),
            concurrency=max(1, args.concurrency),
        ),
    )
