"""``fabricscope formats`` and ``fabricscope counters``: what can be read, and the counter vocabulary."""

from __future__ import annotations

import argparse
from typing import Any

import polars as pl

from fabricscope import _native
from fabricscope.cli._common import EXIT_OK, add_output_arguments, print_table


def _cmd_formats(args: argparse.Namespace) -> int:
    print_table(pl.DataFrame(_native.formats()), args.output_format)
    return EXIT_OK


def _cmd_counters(args: argparse.Namespace) -> int:
    df = pl.DataFrame(_native.counters())
    if args.layer:
        df = df.filter(pl.col("layer") == args.layer)
    if args.output_format == "table":
        # Each counter's source spellings run to a dozen names: too wide for a table a person reads.
        df = df.select("name", "unit", "kind", "layer", pl.col("per_priority").alias("per priority"), "description")
    note = f"{df.height} counter(s); the source spellings of each: --json, --csv or docs/counters.md"
    print_table(df, args.output_format, note=note)
    return EXIT_OK


def add_parser(sub: Any) -> None:
    """Register ``fabricscope formats`` and ``fabricscope counters`` on the CLI's subparsers."""
    fmts = sub.add_parser("formats", help="list the formats fabricscope reads")
    add_output_arguments(fmts, "the formats")
    fmts.set_defaults(func=_cmd_formats)

    ctrs = sub.add_parser("counters", help="print the counter vocabulary")
    ctrs.add_argument("--layer", choices=["network", "nvlink", "pcie", "cxl", "device"])
    add_output_arguments(ctrs, "the counters")
    ctrs.set_defaults(func=_cmd_counters)
