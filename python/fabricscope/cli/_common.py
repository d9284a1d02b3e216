"""What every ``fabricscope`` command shares: exit statuses, the ``--limit`` argument, table output."""

from __future__ import annotations

import argparse
import json

import polars as pl

from fabricscope.io import LIMITS

EXIT_OK = 0
EXIT_USAGE = 2
EXIT_INPUT = 3
EXIT_INTERNAL = 4


def limit_arg(text: str) -> tuple[str, int]:
    """Parse ``--limit NAME=VALUE`` (VALUE an integer, ``_`` separators allowed)."""
    name, sep, value = text.partition("=")
    name = name.strip().replace("-", "_")
    if not sep or name not in LIMITS:
        raise argparse.ArgumentTypeError(f"expected NAME=VALUE with NAME one of {', '.join(LIMITS)}, got {text!r}")
    try:
        number = int(value.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"{name}: expected a positive integer, got {value!r}") from None
    if number <= 0:
        raise argparse.ArgumentTypeError(f"{name}: expected a positive integer, got {number}")
    return name, number


def add_limit_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--limit",
        action="append",
        default=[],
        type=limit_arg,
        metavar="NAME=VALUE",
        help=f"raise a resource limit (repeatable; docs/security.md): {', '.join(LIMITS)}",
    )


def print_table(df: pl.DataFrame, fmt: str) -> None:
    if fmt == "json":
        print(json.dumps(df.to_dicts(), indent=2))
        return
    if fmt == "csv":
        print(df.write_csv(), end="")
        return
    cfg = {"tbl_rows": -1, "tbl_cols": -1, "fmt_str_lengths": 200, "tbl_width_chars": 250}
    if fmt == "markdown":
        cfg["tbl_formatting"] = "MARKDOWN"
        cfg["tbl_hide_dataframe_shape"] = True
        cfg["tbl_hide_column_data_types"] = True
    with pl.Config(**cfg):  # type: ignore[arg-type]
        print(df)
