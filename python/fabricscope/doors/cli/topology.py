"""``fabricscope topology``: which port is cabled to which."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from fabricscope.doors._text_table import terminal_width
from fabricscope.doors.cli._common import EXIT_INPUT, EXIT_OK, add_lenient_argument, add_output_arguments, print_table
from fabricscope.exceptions import FabricscopeError
from fabricscope.fabric.topology import format_topology, topology
from fabricscope.redaction import redact_text


def _cmd_topology(args: argparse.Namespace) -> int:
    try:
        links = topology(args.inputs, strict=not args.lenient)
    except FabricscopeError as e:
        print(f"fabricscope: cannot read input: {redact_text(str(e))}", file=sys.stderr)
        return EXIT_INPUT
    if args.output_format == "table":
        print(format_topology(links, width=terminal_width()))
    else:
        print_table(links, args.output_format)
    return EXIT_OK


def add_parser(sub: Any) -> None:
    """Register ``fabricscope topology`` on the CLI's subparsers."""
    topo = sub.add_parser(
        "topology",
        help="print which port is cabled to which (ibnetdiscover -p, iblinkinfo, ibdiagnet2.db_csv, lldpctl, "
        "SONiC show lldp table)",
        description="Read topology sources and print the links table with tiers (hca, leaf, spine).",
    )
    topo.add_argument("inputs", nargs="+", metavar="INPUT")
    add_output_arguments(topo, "the links")
    add_lenient_argument(topo)
    topo.set_defaults(func=_cmd_topology)
