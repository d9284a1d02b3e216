"""What every ``fabricscope`` command shares: exit statuses, the ``--limit`` argument, table output."""

from __future__ import annotations

import argparse
import json
import sys
from typing import NoReturn

import polars as pl

from fabricscope._text_table import cell_text, terminal_width, text_table
from fabricscope.io import LIMITS

# One rule for every command, Nagios's (analyze, cron and report are Nagios checks): a run that
# could not judge the fabric is UNKNOWN (3), a bad command line included, as the Nagios plugin
# guidelines ask of plugins given invalid arguments (nagios-plugins.org/doc/guidelines.html).
EXIT_OK = 0
EXIT_USAGE = 3
EXIT_INPUT = 3
EXIT_INTERNAL = 4


class ArgumentParser(argparse.ArgumentParser):
    """argparse with the usage error's exit status 3 (UNKNOWN) instead of argparse's 2 (CRITICAL)."""

    def error(self, message: str) -> NoReturn:
        """Print the usage and the error, exit with :data:`EXIT_USAGE`."""
        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")


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


def _host_alias_arg(text: str) -> tuple[str, str]:
    alias, sep, host = text.partition("=")
    if not sep or not alias.strip() or not host.strip():
        raise argparse.ArgumentTypeError(f"expected ALIAS=HOST (gpu-g02.cluster.local=gpu-g02), got {text!r}")
    return alias.strip(), host.strip()


def add_host_alias_argument(p: argparse.ArgumentParser) -> None:
    """``--host-alias ALIAS=HOST``: name one host the same in every input (settles ambiguous FQDNs)."""
    p.add_argument(
        "--host-alias",
        action="append",
        default=[],
        type=_host_alias_arg,
        metavar="ALIAS=HOST",
        help="the input name ALIAS is host HOST (repeatable); FQDN and short name join by themselves when unambiguous",
    )


def host_aliases(pairs: list[tuple[str, str]]) -> dict[str, str]:
    """``--host-alias`` pairs as the mapping :func:`fabricscope.run_analysis` takes."""
    return dict(pairs)


def add_output_arguments(p: argparse.ArgumentParser, what: str) -> None:
    """``--json`` and ``--csv`` for machines; without them a plain-text table for people."""
    g = p.add_mutually_exclusive_group()
    g.add_argument("--json", dest="output_format", action="store_const", const="json", help=f"print {what} as JSON")
    g.add_argument("--csv", dest="output_format", action="store_const", const="csv", help=f"print {what} as CSV")
    # The older spelling, kept for scripts (markdown: a Markdown table).
    g.add_argument("--output-format", choices=["table", "csv", "json", "markdown"], help=argparse.SUPPRESS)
    p.set_defaults(output_format="table")


def _markdown(df: pl.DataFrame) -> str:
    def cell(v: object) -> str:
        return cell_text(v).replace("|", "\\|").replace("\n", " ")

    lines = ["| " + " | ".join(df.columns) + " |", "|" + "---|" * len(df.columns)]
    lines += ["| " + " | ".join(cell(v) for v in r) + " |" for r in df.iter_rows()]
    return "\n".join(lines)


def print_table(df: pl.DataFrame, fmt: str, *, note: str = "") -> None:
    """Print a frame as an aligned text table (``note`` below it), or as JSON, CSV or Markdown."""
    if fmt == "json":
        print(json.dumps(df.to_dicts(), indent=2, default=str))
        return
    # Lists read as "a; b" in a cell (CSV has no list type).
    flat = df.with_columns(pl.col(c).list.join("; ") for c, t in df.schema.items() if t == pl.List(pl.String))
    if fmt == "csv":
        print(flat.write_csv(), end="")
    elif fmt == "markdown":
        print(_markdown(flat))
    else:
        print(text_table(flat.columns, flat.rows(), width=terminal_width()))
        if note:
            print(note)
