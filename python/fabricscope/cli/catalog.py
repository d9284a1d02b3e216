"""``fabricscope formats`` and ``fabricscope counters``: what can be read, and the counter vocabulary."""

from __future__ import annotations

import argparse
from typing import Any

import polars as pl

from fabricscope import _native
from fabricscope.cli._common import EXIT_OK, print_table


def _cmd_formats(args: argparse.Namespace) -> int:
    print_table(pl.DataFrame(_native.formats()), args.output_format)
    return EXIT_OK


def _cmd_counters(args: argparse.Namespace) -> int:
    df = pl.DataFrame(_native.counters())
    if args.layer:
        df = df.filter(pl.col("layer") == args.layer)
    if args.output_format != "json":
        df = df.with_columns(pl.col("spellings").list.join(", "))
    print_table(df, args.output_format)
    return EXIT_OK


def add_parser(sub: Any) -> None:
    """Register ``fabricscope formats`` and ``fabricscope counters`` on the CLI's subparsers."""
    fmts = sub.add_parser("formats", help="list the formats fabricscope reads")
    fmts.add_argument("--output-format", choices=["table", "csv", "json", "markdown"], default="table")
    fmts.set_defaults(func=_cmd_formats)

    ctrs = sub.add_parser("counters", help="print the counter vocabulary")
    ctrs.add_argument("--layer", choices=["network", "nvlink", "pcie", "cxl", "device"])
    ctrs.add_argument("--output-format", choices=["table", "csv", "json", "markdown"], default="table")
    ctrs.set_defaults(func=_cmd_counters)
