"""``fabricscope formats`` and ``fabricscope counters``: what can be read, and the counter vocabulary."""

from __future__ import annotations

import argparse
import sys
from typing import Any

import polars as pl

from fabricscope import _native
from fabricscope.doors.cli._common import EXIT_OK, EXIT_USAGE, add_output_arguments, print_table
from fabricscope.reading.vocabulary import roles


def _cmd_formats(args: argparse.Namespace) -> int:
    table = pl.DataFrame(_native.formats())
    if args.output_format != "json":  # text and CSV cells hold one string
        table = table.with_columns(pl.col("aliases").list.join(", "))
    print_table(table, args.output_format)
    return EXIT_OK


# Vendor names `--vendor` accepts besides the kernel driver names the vocabulary records.
VENDOR_DRIVERS = {
    "broadcom": ["bnxt_en", "bnxt_re"],
    "intel": ["ice", "i40e", "irdma"],
    "amd": ["ionic"],
    "pensando": ["ionic"],
    "marvell": ["qede"],
    "qlogic": ["qede"],
}


def _drivers_of(spelling: str) -> list[str]:
    """``ethtool:rx_pfc_frames [bnxt_en, qede]`` → ``["bnxt_en", "qede"]``; untagged spellings have none."""
    if not spelling.endswith("]") or " [" not in spelling:
        return []
    return spelling[spelling.rindex(" [") + 2 : -1].split(", ")


def _vendor_spellings(df: pl.DataFrame, vendor: str) -> pl.DataFrame:
    """The counters ``vendor`` (a driver or vendor name) provides, with that vendor's spellings only."""
    drivers = VENDOR_DRIVERS.get(vendor.lower(), [vendor])
    keep = [[s for s in spellings if set(drivers) & set(_drivers_of(s))] for spellings in df["spellings"]]
    df = df.with_columns(
        pl.Series("spellings", keep, dtype=pl.List(pl.String)),
        pl.col("drivers").list.set_intersection(pl.lit(drivers, dtype=pl.List(pl.String))),
    )
    return df.filter(pl.col("spellings").list.len() > 0)


def _native_drivers() -> list[list[str]]:
    return [c["drivers"] for c in _native.counters()]


def _cmd_counters(args: argparse.Namespace) -> int:
    df = pl.DataFrame(_native.counters(), infer_schema_length=None)
    if args.layer:
        df = df.filter(pl.col("layer") == args.layer)
    if args.vendor:
        df = _vendor_spellings(df, args.vendor)
        if df.is_empty():
            known = sorted({d for ds in _native_drivers() for d in ds} | set(VENDOR_DRIVERS))
            print(
                f"fabricscope counters: no counter spelled by vendor {args.vendor!r}; known: {', '.join(known)}",
                file=sys.stderr,
            )
            return EXIT_USAGE
    if args.role:
        if args.role not in roles():
            print(f"fabricscope counters: no counter role {args.role!r}; known: {', '.join(roles())}", file=sys.stderr)
            return EXIT_USAGE
        rank = [dict(zip(r, k, strict=True)).get(args.role) for r, k in zip(df["roles"], df["role_ranks"], strict=True)]
        df = (
            df.with_columns(pl.Series("rank", rank, dtype=pl.Int64))
            .filter(pl.col("rank").is_not_null())
            .sort("layer", "rank", maintain_order=True)
        )
        if args.output_format == "table":
            df = df.select("name", "layer", "rank", "description")
    if args.output_format == "table" and not args.role:
        # Each counter's source spellings run to a dozen names: too wide for a table a person reads.
        cols = ["name", "unit", "kind", "layer", pl.col("per_priority").alias("per priority"), "description"]
        if args.vendor:
            # With one vendor the spellings are few, and they are what was asked for.
            cols = [
                "name",
                "unit",
                "kind",
                pl.col("per_priority").alias("per priority"),
                pl.col("spellings").list.join(" "),
            ]
        df = df.select(cols)
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
    ctrs.add_argument(
        "--vendor",
        metavar="NAME",
        help="only the counters a NIC vendor's driver provides, with its spellings: a driver (bnxt_en, bnxt_re, "
        "ice, irdma, ionic, qede) or a vendor (broadcom, intel, amd, marvell)",
    )
    ctrs.add_argument(
        "--role",
        metavar="ROLE",
        help="only the counters analyses read for ROLE (tx_bytes, rx_loss, rx_pause_duration...), most preferred "
        "first per layer",
    )
    add_output_arguments(ctrs, "the counters")
    ctrs.set_defaults(func=_cmd_counters)
