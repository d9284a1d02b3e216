"""What every ``fabricscope`` command shares: exit statuses, the analysis options, table output.

The options every command that analyses takes (``analyze``, ``report``, ``dashboard``, ``cron``,
``parse``, ``topology``, ``advise``) are declared here once, in groups, and turned into the keyword
arguments of :func:`fabricscope.run_analysis` by :func:`analysis_options`.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, NoReturn

import polars as pl

from fabricscope import _native
from fabricscope.doors._text_table import cell_text, terminal_width, text_table
from fabricscope.exceptions import FabricscopeError
from fabricscope.incidents.findings import json_text
from fabricscope.incidents.severity import Status
from fabricscope.pipeline import Analysis
from fabricscope.reading.options import FUTURE_MARGIN_S
from fabricscope.reading.scan import LIMITS, _time_ns
from fabricscope.redaction import redact_text

# One rule for every command, Nagios's (analyze, cron and report are Nagios checks): a run that
# could not judge the fabric is UNKNOWN (3), a bad command line included, as the Nagios plugin
# guidelines ask of plugins given invalid arguments (nagios-plugins.org/doc/guidelines.html).
EXIT_OK = Status.OK.exit_code
EXIT_USAGE = Status.UNKNOWN.exit_code
EXIT_INPUT = Status.UNKNOWN.exit_code
EXIT_INTERNAL = 4


class ArgumentParser(argparse.ArgumentParser):
    """argparse with the usage error's exit status 3 (UNKNOWN) instead of argparse's 2 (CRITICAL)."""

    def error(self, message: str) -> NoReturn:
        """Print the usage and the error, exit with :data:`EXIT_USAGE`."""
        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")


def limit_arg(text: str) -> tuple[str, int]:
    """Parse ``--limit NAME=VALUE`` (VALUE an integer, ``_`` separators allowed); the core judges it."""
    name, sep, value = text.partition("=")
    name = name.strip().replace("-", "_")
    if not sep:
        raise argparse.ArgumentTypeError(f"expected NAME=VALUE with NAME one of {', '.join(LIMITS)}, got {text!r}")
    try:
        number = int(value.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"{name}: expected a positive integer, got {value!r}") from None
    try:
        _native.limits({name: number})
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    return name, number


# The times a sample can carry: nanoseconds since the epoch in a signed 64-bit integer (Arrow's and
# Polars' datetime), 1677-09-21 to 2262-04-11.
_NS_MIN, _NS_MAX = -(2**63), 2**63 - 1


def time_arg(text: str) -> str:
    """Check a time option (``--since``, ``--until``, ``--time``): epoch seconds or ISO 8601 in the samples' range.

    Returns the text as given (the readers parse it); a value no sample time can hold (``1e400``,
    ``nan``, the year 3000) is a usage error naming what is expected.
    """
    expected = "expected epoch seconds or ISO 8601, a time between 1677-09-22 and 2262-04-11"
    try:
        ns = _time_ns(text)
    except (TypeError, ValueError, OverflowError):
        raise argparse.ArgumentTypeError(f"{expected}, got {text!r}") from None
    if ns is None or not _NS_MIN <= ns <= _NS_MAX:
        raise argparse.ArgumentTypeError(f"{expected}, got {text!r}")
    return text


def seconds_arg(text: str, *, infinite: bool = False, most: float = 1e10, unit: str = "seconds") -> float:
    """Parse a duration option: a number from 0 to ``most`` (``inf`` too where ``infinite``).

    The bound keeps a clock minus the duration a date (``datetime`` ends at year 1): 10^10 s is
    three centuries.
    """
    expected = f"expected a number of {unit} from 0 to {most:g}" + (" or inf" if infinite else "")
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{expected}, got {text!r}") from None
    if not (0 <= value <= most or (infinite and value == float("inf"))):  # NaN fails both
        raise argparse.ArgumentTypeError(f"{expected}, got {text!r}")
    return value


def positive_seconds_arg(text: str) -> float:
    """:func:`seconds_arg` above 0 (a simulated duration, a sampling interval)."""
    value = seconds_arg(text)
    if value == 0:
        raise argparse.ArgumentTypeError(f"expected a number of seconds above 0 and at most 1e+10, got {text!r}")
    return value


def days_arg(text: str) -> float:
    """:func:`seconds_arg` in days (``--retain-days``): from 0 to 10^5 days."""
    return seconds_arg(text, most=1e5, unit="days")


def infinite_seconds_arg(text: str) -> float:
    """:func:`seconds_arg` that also takes ``inf`` (no bound)."""
    return seconds_arg(text, infinite=True)


def add_future_margin_argument(p: argparse.ArgumentParser) -> None:
    """``--future-margin SECONDS``: how far past the clock a sample may be dated (docs/security.md)."""
    p.add_argument(
        "--future-margin",
        type=infinite_seconds_arg,
        default=FUTURE_MARGIN_S,
        metavar="SECONDS",
        help="a sample dated more than this after the clock is a bad record "
        f"(default {FUTURE_MARGIN_S:g}, a day; inf: no bound)",
    )


def add_lenient_argument(p: argparse.ArgumentParser, help: str = "skip and count bad records") -> None:
    """``--lenient``: skip and count malformed records instead of failing on the first."""
    p.add_argument("--lenient", action="store_true", help=help)


def add_config_argument(p: argparse.ArgumentParser, help: str = "TOML thresholds (see docs/detectors.md)") -> None:
    """``--config PATH``."""
    p.add_argument("--config", metavar="PATH", help=help)


def add_profile_argument(p: argparse.ArgumentParser) -> None:
    """``--profile``: force a technology profile instead of detecting one per port."""
    p.add_argument("--profile", help="force a technology profile (ndr400, hdr200, roce400, ...)")


def add_input_format_argument(p: argparse.ArgumentParser) -> None:
    """``--format``: the input format (``auto`` detects it)."""
    p.add_argument("--format", default="auto", help="input format (default: detect); see `fabricscope formats`")
    p.set_defaults(input_format_declared=True)


def add_reading_arguments(p: argparse.ArgumentParser, *, input_format: bool = True) -> None:
    """How inputs are read: ``--format``, ``--host``, ``--time``, ``--lenient``, ``--limit``.

    ``input_format`` False leaves ``--format`` to a command whose ``--format`` is its output's.
    """
    if input_format:
        add_input_format_argument(p)
    p.add_argument("--host", help="host for inputs that name none")
    p.add_argument("--time", type=time_arg, help="timestamp for inputs without one (epoch seconds or ISO 8601)")
    add_lenient_argument(p)
    add_limit_argument(p)


def add_window_arguments(p: argparse.ArgumentParser, *, hosts: bool = True) -> None:
    """Which samples are analysed: ``--since``, ``--until`` (a server URL is pulled over them) and ``--hosts``."""
    p.add_argument("--since", type=time_arg, help="only samples at or after this time (epoch seconds or ISO 8601)")
    p.add_argument("--until", type=time_arg, help="only samples before this time (epoch seconds or ISO 8601)")
    if hosts:
        p.add_argument("--hosts", metavar="H1,H2,...", help="analyse only these hosts")


def add_engine_arguments(p: argparse.ArgumentParser) -> None:
    """``--engine`` and ``--address``: who runs the partitions (docs/scale.md)."""
    p.add_argument(
        "--engine",
        choices=["local", "ray", "stream"],
        default="local",
        help="run partitioned by host in this process (default), as Ray tasks, or streamed through "
        "spill files in a memory budget (docs/scale.md)",
    )
    p.add_argument("--address", help="Ray cluster address for --engine ray (default: start a local Ray)")


def add_analysis_arguments(p: argparse.ArgumentParser, *, input_format: bool = True) -> None:
    """Every option of :func:`fabricscope.run_analysis` a command line can give, as ``analyze`` takes them."""
    add_profile_argument(p)
    add_config_argument(p)
    add_reading_arguments(p, input_format=input_format)
    add_window_arguments(p)
    add_future_margin_argument(p)
    add_engine_arguments(p)
    add_host_alias_argument(p)


def analysis_options(args: argparse.Namespace) -> dict[str, Any]:
    """The keyword arguments of :func:`fabricscope.run_analysis` from the options of :func:`add_analysis_arguments`.

    An option a command does not declare keeps the analysis default; ``format`` (the input format)
    is given only where :func:`add_input_format_argument` declared ``--format``.
    """
    hosts = getattr(args, "hosts", None)
    options: dict[str, Any] = {
        "profile": getattr(args, "profile", None),
        "config": getattr(args, "config", None),
        "strict": not getattr(args, "lenient", False),
        "host": getattr(args, "host", None),
        "time": getattr(args, "time", None),
        "engine": getattr(args, "engine", None),
        "address": getattr(args, "address", None),
        "since": getattr(args, "since", None),
        "until": getattr(args, "until", None),
        "hosts": hosts.split(",") if hosts else None,
        "limits": dict(getattr(args, "limit", None) or []),
        "host_aliases": host_aliases(getattr(args, "host_alias", None) or []),
        "future_margin_s": getattr(args, "future_margin", FUTURE_MARGIN_S),
    }
    if getattr(args, "input_format_declared", False):
        options["format"] = args.format
    return options


def cannot_analyse(err: BaseException) -> str:
    """The one stderr line of a run that could not analyse at all (exit :data:`EXIT_INPUT`)."""
    if isinstance(err, FabricscopeError):
        return f"UNKNOWN - fabricscope cannot analyse: {redact_text(str(err))}"
    return f"UNKNOWN - fabricscope: {redact_text(str(err))}"


def status_notes(analysis: Analysis) -> str:
    """Why a status is UNKNOWN beyond the findings: inputs that could not be read, nothing analysed."""
    lines = []
    failed = analysis.failed_inputs
    if failed:
        lines.append(f"\n{len(failed)} input(s) could not be read (status at least UNKNOWN):")
        # a reader's error names its input already ("<path>: line 8 ..."): the path once
        lines += [
            f"  {redact_text(str(i['error']))}"
            if str(i["error"]).startswith(f"{i['path']}:")
            else f"  {redact_text(str(i['path']))}: {redact_text(str(i['error']))}"
            for i in failed
        ]
    if not analysis.analysed:
        lines.append("\nnothing was analysed: no input held counters or results (status UNKNOWN)")
    return "\n".join(lines)


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


class _HostAliasAction(argparse.Action):
    """Append one ``--host-alias`` pair; one alias given two different hosts is a usage error."""

    def __call__(
        self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, value: Any, option: str | None = None
    ) -> None:
        pairs = list(getattr(namespace, self.dest, None) or [])
        alias, host = value
        for given_alias, given_host in pairs:
            if given_alias == alias and given_host != host:
                parser.error(
                    f"--host-alias {alias}: given two hosts, {alias}={given_host} and {alias}={host}; name one"
                )
        setattr(namespace, self.dest, [*pairs, value])


def add_host_alias_argument(p: argparse.ArgumentParser) -> None:
    """``--host-alias ALIAS=HOST``: name one host the same in every input (settles ambiguous FQDNs)."""
    p.add_argument(
        "--host-alias",
        action=_HostAliasAction,
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


# Rows turned into Python objects at a time by --json: a million links as dicts at once took gigabytes.
_JSON_SLICE_ROWS = 10_000


def _print_json_rows(df: pl.DataFrame) -> None:
    """Print ``df`` as a JSON array of row objects, a slice at a time, in ``json.dumps(rows, indent=2)``'s text.

    The text is what one ``json.dumps`` of every row would give, strict JSON (non-finite
    numbers as null, :func:`fabricscope.incidents.findings.json_text`), but only one slice of rows is
    ever held as Python objects.
    """
    if df.height == 0:
        print("[]")
        return
    out = sys.stdout
    out.write("[")
    sep = "\n"
    for piece in df.iter_slices(_JSON_SLICE_ROWS):
        rows = piece.to_dicts()
        # A slice whose floats are all finite needs no walk over its values (the common case).
        text = json.dumps(rows, indent=2, default=str) if _all_finite(piece) else json_text(rows, indent=2, default=str)
        # "[\n  {...},\n  {...}\n]": the rows, indented as the whole array's
        out.write(sep + text[2:-2])
        sep = ",\n"
    out.write("\n]\n")


def _all_finite(df: pl.DataFrame) -> bool:
    """Whether every float of ``df`` is finite or null (False for nested columns: not looked into)."""
    if any(t.is_nested() for t in df.dtypes):
        return False
    floats = [pl.col(c) for c, t in df.schema.items() if t.is_float()]
    if not floats:
        return True
    return bool(df.select(pl.all_horizontal([c.is_finite().fill_null(True) for c in floats]).all()).item())


def print_table(df: pl.DataFrame, fmt: str, *, note: str = "") -> None:
    """Print a frame as an aligned text table (``note`` below it), or as JSON, CSV or Markdown."""
    if fmt == "json":
        _print_json_rows(df)
        return
    # Lists read as "a; b" in a cell (CSV has no list type).
    flat = df.with_columns(
        pl.col(c).cast(pl.List(pl.String)).list.join("; ") for c, t in df.schema.items() if isinstance(t, pl.List)
    )
    if fmt == "csv":
        print(flat.write_csv(), end="")
    elif fmt == "markdown":
        print(_markdown(flat))
    else:
        print(text_table(flat.columns, flat.rows(), width=terminal_width()))
        if note:
            print(note)
