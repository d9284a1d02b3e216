"""The ``fabricscope`` command line."""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time as _time
from collections.abc import Sequence
from pathlib import Path

import polars as pl

from fabricscope import __version__, _native
from fabricscope.exceptions import FabricscopeError, InternalError
from fabricscope.findings import SCHEMA_ID_V2, SCHEMAS
from fabricscope.incidents import Incident, incident_documents, standalone_mask
from fabricscope.io import LIMITS, InputReport, _limits, _paths, _reports, _time_ns

__all__ = ["main"]

EXIT_OK = 0
EXIT_USAGE = 2
EXIT_INPUT = 3
EXIT_INTERNAL = 4

_EPILOG_MAIN = """\
examples:
  fabricscope parse sample_traces/ -o samples.parquet      parse everything, write Parquet
  fabricscope parse dump.prom.gz --lenient                 summary only; skip bad records
  fabricscope parse ethtool.log --host gpu017 --format ethtool
  fabricscope analyze sample_traces/ --json findings.json  findings, Nagios exit status
  fabricscope topology sample_traces/ib                    which port is cabled to which
  fabricscope formats                                      what can be read
  fabricscope counters --layer network                     the counter vocabulary

exit status: 0 ok, 2 usage error, 3 an input could not be read, 4 internal error
"""

_EPILOG_ANALYZE = """\
examples:
  fabricscope analyze sample_traces/
  fabricscope analyze /var/lib/node_exporter/*.prom --json findings.json
  fabricscope analyze dumps/ --profile ndr400 --config thresholds.toml --json - | jq .status

exit status (Nagios): 0 OK (nothing above info), 1 WARNING, 2 CRITICAL, 3 UNKNOWN (could not analyse)
"""

_EPILOG_PARSE = """\
examples:
  fabricscope parse sample_traces/ -o out/samples.parquet
  fabricscope parse /sys/class/infiniband -o now.parquet           live sysfs on this host
  fabricscope parse federate-*.prom.zst --lenient -o fabric.parquet
  fabricscope parse eth2.log --format ethtool --host gpu017 --time 2026-12-02T14:00:00Z

Hosts come from labels (instance, hostname, host, node), in-file `# host: NAME` lines, then
--host. Timestamps come from the data, a timestamp line before each snapshot (`date +%s` or
`date -Is` output), a timestamp in the file name, then --time, then the file's mtime (warned).
"""


class _Progress:
    """A one-line progress bar on stderr, redrawn at most ten times a second."""

    def __init__(self, enabled: bool, total: int) -> None:
        self.enabled = enabled
        self.total = total
        self.start = _time.monotonic()
        self.last = 0.0

    def update(self, done: int, rows: int, force: bool = False) -> None:
        if not self.enabled:
            return
        now = _time.monotonic()
        if not force and now - self.last < 0.1:
            return
        self.last = now
        elapsed = max(now - self.start, 1e-9)
        mb = done / 1e6
        if self.total:
            frac = min(done / self.total, 1.0)
            bar = "#" * int(frac * 30)
            head = f"[{bar:<30}] {frac:6.1%} {mb:,.1f}/{self.total / 1e6:,.1f} MB"
        else:
            head = f"{mb:,.1f} MB"
        sys.stderr.write(f"\r{head}  {mb / elapsed:,.0f} MB/s  {rows:,} rows ")
        sys.stderr.flush()

    def close(self) -> None:
        if self.enabled:
            sys.stderr.write("\n")
            sys.stderr.flush()


def _fmt_time(t: object) -> str:
    return "-" if t is None else str(t)[:19].replace("T", " ")


def _summary(
    samples: pl.LazyFrame, reports: list[InputReport], elapsed: float, out: Path | None, side: list[str]
) -> str:
    lines: list[str] = []
    total_bytes = sum(r.bytes for r in reports)
    total_rows = sum(r.rows for r in reports)
    lines.append(
        f"fabricscope {__version__}: read {len(reports)} input(s), {total_bytes / 1e6:,.2f} MB, "
        f"{total_rows:,} samples in {elapsed:.2f} s"
    )
    lines.append("")
    lines.append(f"{'input':<56} {'format':<12} {'samples':>10} {'bad':>5}  time from")
    for r in reports:
        name = r.path if len(r.path) <= 56 else "..." + r.path[-53:]
        skipped = any(w.startswith("skipped") for w in r.warnings)
        status = "FAILED" if r.failed else ("skipped" if skipped else (r.format or "-"))
        lines.append(f"{name:<56} {status:<12} {r.rows:>10,} {r.bad_records:>5}  {r.time_source}")
    if total_rows:
        per_dev = (
            samples.group_by("host", "device")
            .agg(
                pl.col("port").drop_nulls().unique().sort().alias("ports"),
                pl.col("counter").n_unique().alias("counters"),
                pl.col("time").n_unique().alias("snapshots"),
                pl.col("time").min().alias("first"),
                pl.col("time").max().alias("last"),
                pl.len().alias("samples"),
            )
            .sort("host", "device")
            .collect()
        )
        lines.append("")
        lines.append(
            f"{'host':<20} {'device':<20} {'ports':<8} {'counters':>8} {'snapshots':>9} "
            f"{'first (UTC)':<19}  {'last (UTC)':<19}"
        )
        for row in per_dev.iter_rows(named=True):
            ports = ",".join(str(p) for p in row["ports"]) or "-"
            lines.append(
                f"{str(row['host'])[:20]:<20} {str(row['device'])[:20]:<20} {ports[:8]:<8} "
                f"{row['counters']:>8} {row['snapshots']:>9} {_fmt_time(row['first']):<19}  "
                f"{_fmt_time(row['last']):<19}"
            )
        unknown = (
            samples.join(
                pl.LazyFrame({"counter": pl.Series(_known_counters(), dtype=pl.String)}),
                left_on=pl.col("counter").cast(pl.String),
                right_on="counter",
                how="anti",
            )
            .select(pl.col("counter").cast(pl.String).n_unique())
            .collect()
            .item()
        )
        if unknown:
            lines.append("")
            lines.append(
                f"{unknown} counter name(s) are not in the vocabulary and were kept under their raw "
                "names (see `fabricscope counters`)."
            )
    problems = [(r.path, m) for r in reports for m in (r.errors + r.warnings)]
    if problems:
        lines.append("")
        lines.append("problems:")
        for path, msg in problems[:20]:
            lines.append(f"  {msg}" if path in msg else f"  {path}: {msg}")
        if len(problems) > 20:
            lines.append(f"  ... and {len(problems) - 20} more")
    if out is not None:
        lines.append("")
        lines.append(f"wrote {out}" + "".join(f", {p}" for p in side))
    return "\n".join(lines)


def _known_counters() -> list[str]:
    return [c["name"] for c in _native.counters()]


def _cmd_parse(args: argparse.Namespace) -> int:
    import tempfile

    with tempfile.TemporaryDirectory(prefix="fabricscope-") as scratch:
        return _parse_into(args, Path(scratch))


def _parse_into(args: argparse.Namespace, scratch: Path) -> int:
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        time_ns = _time_ns(args.time)
    except (TypeError, ValueError) as e:
        print(f"fabricscope: --time: {e}", file=sys.stderr)
        return EXIT_USAGE
    paths = _paths(args.inputs)
    scanner = _native.Scanner(
        paths,
        format=args.format,
        host=args.host,
        time_ns=time_ns,
        strict=not args.lenient,
        batch_rows=args.batch_rows,
        **_limits(dict(args.limit), args.max_line_bytes),
    )
    show = not args.quiet and (args.progress or sys.stderr.isatty())
    progress = _Progress(show, scanner.bytes_total)
    out: Path | None = Path(args.output) if args.output else None
    if out is None:
        target = scratch / "samples.parquet"
    else:
        out.parent.mkdir(parents=True, exist_ok=True)
        target = out.with_name(out.name + ".tmp")

    def side_path(base: Path, kind: str) -> Path:
        # OUT.parquet -> OUT.attributes.parquet, OUT.packet_events.parquet, ...
        stem = base.name.removesuffix(".tmp").removesuffix(".parquet")
        return base.with_name(f"{stem}.{kind}.parquet" + (".tmp" if base.name.endswith(".tmp") else ""))

    samples_schema = pa.schema(_native.samples_schema_arrow())
    side: dict[str, pq.ParquetWriter] = {}
    rows = 0
    started = _time.monotonic()
    try:
        with pq.ParquetWriter(target, samples_schema, compression="zstd") as writer:
            try:
                for kind, batch in scanner:
                    rb = pa.record_batch(batch)
                    if kind == "samples":
                        writer.write_batch(rb)
                        rows += rb.num_rows
                    else:
                        if kind not in side:
                            side[kind] = pq.ParquetWriter(side_path(target, kind), rb.schema, compression="zstd")
                        side[kind].write_batch(rb)
                    progress.update(scanner.bytes_read, rows)
            finally:
                for w in side.values():
                    w.close()
        progress.update(scanner.bytes_read, rows, force=True)
    except InternalError as e:
        progress.close()
        print(f"fabricscope: {e}", file=sys.stderr)
        return EXIT_INTERNAL
    except FabricscopeError as e:
        progress.close()
        print(f"fabricscope: cannot read input: {e}", file=sys.stderr)
        target.unlink(missing_ok=True)
        for kind in side:
            side_path(target, kind).unlink(missing_ok=True)
        return EXIT_INPUT
    progress.close()
    elapsed = _time.monotonic() - started
    reports = _reports(scanner.reports())
    side_outputs: dict[str, str] = {}
    if out is not None:
        # Publish atomically: readers of OUT never see a half-written file.
        target.replace(out)
        for kind in side:
            final = side_path(out, kind)
            side_path(target, kind).replace(final)
            side_outputs[kind] = str(final)
        samples = pl.scan_parquet(out)
    else:
        samples = pl.scan_parquet(target)
    if args.json:
        doc = {
            "version": __version__,
            "output": str(out) if out else None,
            "side_outputs": side_outputs,
            "samples": rows,
            "seconds": round(elapsed, 3),
            "inputs": [r.__dict__ for r in reports],
        }
        print(json.dumps(doc, indent=2))
    else:
        print(_summary(samples, reports, elapsed, out, list(side_outputs.values())))
    return EXIT_INPUT if any(r.failed for r in reports) else EXIT_OK


_SEV_MARK = {"critical": "CRIT", "warning": "WARN", "info": "info"}


def _incident_lines(incidents: Sequence[Incident]) -> list[str]:
    """Incidents first: title, action, root, then each consequence with its path."""
    lines: list[str] = []
    for inc in incidents:
        window = f"{str(inc.start)[:19]} .. {str(inc.end)[11:19]}" if inc.start is not None else "-"
        lines.append("")
        lines.append(f"{_SEV_MARK[inc.severity]:<4}  INCIDENT {inc.id}  {inc.title}")
        lines.append(f"      action: {inc.action}")
        lines.append(f"      window: {window}   rule: {inc.rule}")
        r = inc.root
        lines.append(f"      root:   {r['kind']} on {_where(r)}: {r['message']}")
        for c in inc.consequences:
            f = c["finding"]
            lines.append(f"      -> {f['kind']} on {_where(f)} [{c['relation']}: {' -> '.join(c['path'])}]")
        lines.append(f"      topology: {inc.topology}")
    return lines


def _where(f: dict[str, object]) -> str:
    bits = [str(x) for x in (f.get("host"), f.get("device")) if x]
    if f.get("port") is not None:
        bits.append(f"port {f['port']}")
    return " ".join(bits) or "-"


def _analysis_summary(
    findings: pl.DataFrame,
    inputs: list[dict[str, object]],
    status: str,
    verbose: bool,
    incidents: Sequence[Incident] = (),
) -> str:
    head = f"fabricscope {__version__}: {status.upper()} - {len(inputs)} input(s), {findings.height} finding(s)"
    if incidents:
        head += f" in {len(incidents)} incident(s) and standalone"
    lines = [head]
    counts = findings.group_by("severity").len() if findings.height else None
    if counts is not None:
        by = dict(zip(counts["severity"].to_list(), counts["len"].to_list(), strict=True))
        lines.append("  " + ", ".join(f"{by.get(s, 0)} {s}" for s in ("critical", "warning", "info")))
    lines += _incident_lines(incidents)
    # findings an incident holds were listed under it: the table has the standalone ones
    findings = findings.filter(standalone_mask(findings, incidents)) if incidents else findings
    shown = findings if verbose else findings.filter(pl.col("severity") != "info")
    if shown.height:
        lines.append("")
        if incidents:
            lines.append("standalone findings:")
        lines.append(f"{'sev':<4}  {'kind':<17} {'host':<14} {'device':<20} {'port':>4}  {'window (UTC)':<33}  message")
        for r in shown.iter_rows(named=True):
            window = "-"
            if r["start"] is not None:
                window = f"{str(r['start'])[:19]} .. {str(r['end'])[11:19]}"
            port = "" if r["port"] is None else str(r["port"])
            if r["priority"] is not None:
                port += f"/p{r['priority']}"
            lines.append(
                f"{_SEV_MARK[r['severity']]:<4}  {r['kind']:<17} {str(r['host'] or '-')[:14]:<14} "
                f"{str(r['device'] or '-')[:20]:<20} {port:>4}  {window:<33}  {r['message']}"
            )
    hidden = findings.height - shown.height
    if hidden:
        lines.append("")
        kinds = ", ".join(sorted(set(findings.filter(pl.col("severity") == "info")["kind"].to_list())))
        lines.append(f"{hidden} info finding(s) hidden ({kinds}); show them with --verbose or --json")
    return "\n".join(lines)


def _limit_arg(text: str) -> tuple[str, int]:
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


def _add_limit_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--limit",
        action="append",
        default=[],
        type=_limit_arg,
        metavar="NAME=VALUE",
        help=f"raise a resource limit (repeatable; docs/security.md): {', '.join(LIMITS)}",
    )


def _cmd_analyze(args: argparse.Namespace) -> int:
    from fabricscope.analyze import run_analysis
    from fabricscope.findings import document, exit_status

    try:
        analysis = run_analysis(
            args.inputs,
            profile=args.profile,
            config=args.config,
            strict=not args.lenient,
            host=args.host,
            format=args.format,
            time=args.time,
            engine=args.engine,
            address=args.address,
            since=args.since,
            until=args.until,
            hosts=args.hosts.split(",") if args.hosts else None,
            limits=dict(args.limit),
        )
    except FabricscopeError as e:
        print(f"UNKNOWN - fabricscope cannot analyse: {e}", file=sys.stderr)
        return EXIT_INPUT
    except (OSError, ValueError) as e:
        print(f"UNKNOWN - fabricscope: {e}", file=sys.stderr)
        return EXIT_INPUT
    doc = document(analysis.findings, analysis.inputs, incident_documents(analysis.incidents), schema=args.schema)
    if args.json:
        text = json.dumps(doc, indent=2)
        if args.json == "-":
            print(text)
        else:
            target = Path(args.json)
            target.parent.mkdir(parents=True, exist_ok=True)
            tmp = target.with_name(target.name + ".tmp")
            tmp.write_text(text + "\n")
            tmp.replace(target)
    if args.json != "-":
        print(_analysis_summary(analysis.findings, analysis.inputs, doc["status"], args.verbose, analysis.incidents))
    return exit_status(analysis.findings)


def _cmd_topology(args: argparse.Namespace) -> int:
    from fabricscope.topology import format_topology, topology

    try:
        links = topology(args.inputs, strict=not args.lenient)
    except FabricscopeError as e:
        print(f"fabricscope: cannot read input: {e}", file=sys.stderr)
        return EXIT_INPUT
    if args.json:
        print(json.dumps(links.to_dicts(), indent=2, default=str))
    else:
        print(format_topology(links))
    return EXIT_OK


def _print_table(df: pl.DataFrame, fmt: str) -> None:
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


def _cmd_formats(args: argparse.Namespace) -> int:
    _print_table(pl.DataFrame(_native.formats()), args.output_format)
    return EXIT_OK


def _cmd_counters(args: argparse.Namespace) -> int:
    df = pl.DataFrame(_native.counters())
    if args.layer:
        df = df.filter(pl.col("layer") == args.layer)
    if args.output_format != "json":
        df = df.with_columns(pl.col("spellings").list.join(", "))
    _print_table(df, args.output_format)
    return EXIT_OK


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (exposed for docs and tests)."""
    p = argparse.ArgumentParser(
        prog="fabricscope",
        description="Fabric telemetry analyzer for InfiniBand and RoCEv2 GPU clusters.",
        epilog=_EPILOG_MAIN,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--version", action="version", version=f"fabricscope {__version__}")
    p.add_argument("-v", "--verbose", action="store_true", help="log warnings per input")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    parse = sub.add_parser(
        "parse",
        help="read counters into the canonical samples table (Parquet) and summarise",
        description="Read counter exports into the canonical samples table and print a summary.",
        epilog=_EPILOG_PARSE,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parse.add_argument("inputs", nargs="+", metavar="INPUT", help="files or directories (.gz/.zst ok)")
    parse.add_argument("-o", "--output", metavar="OUT.parquet", help="write samples here (atomically)")
    parse.add_argument("--format", default="auto", help="input format (default: detect); see `formats`")
    parse.add_argument("--host", help="host for inputs that name none")
    parse.add_argument("--time", help="timestamp for inputs without one (epoch seconds or ISO 8601)")
    parse.add_argument("--lenient", action="store_true", help="skip and count bad records instead of failing")
    parse.add_argument("--json", action="store_true", help="print the summary as JSON")
    parse.add_argument("--progress", action="store_true", help="show progress even when stderr is not a TTY")
    parse.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    parse.add_argument("--batch-rows", type=int, default=1 << 20, help=argparse.SUPPRESS)
    parse.add_argument("--max-line-bytes", type=int, default=1 << 20, help="longest accepted line (default 1 MiB)")
    _add_limit_argument(parse)
    parse.set_defaults(func=_cmd_parse)

    an = sub.add_parser(
        "analyze",
        help="find lossy, flapping, degraded and congested links (Nagios exit status)",
        description="Rate the counters and run every detector; print findings, optionally as JSON.",
        epilog=_EPILOG_ANALYZE,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    an.add_argument("inputs", nargs="+", metavar="INPUT", help="files or directories (.gz/.zst ok)")
    an.add_argument("--json", metavar="PATH|-", help="write the findings document (fabricscope.findings/2)")
    an.add_argument(
        "--schema",
        choices=list(SCHEMAS),
        default=SCHEMA_ID_V2,
        help="findings document version: /2 adds incidents (default); /1 for existing consumers",
    )
    an.add_argument("--profile", help="force a technology profile (ndr400, hdr200, roce400, ...)")
    an.add_argument("--config", metavar="PATH", help="TOML thresholds (see docs/detectors.md)")
    an.add_argument("--format", default="auto", help="input format (default: detect)")
    an.add_argument("--host", help="host for inputs that name none")
    an.add_argument("--time", help="timestamp for inputs without one (epoch seconds or ISO 8601)")
    an.add_argument("--lenient", action="store_true", help="skip and count bad records")
    an.add_argument("--verbose", action="store_true", help="also list info findings (data quality)")
    an.add_argument(
        "--engine",
        choices=["local", "ray"],
        default="local",
        help="run partitioned by host in this process (default) or as Ray tasks (docs/scale.md)",
    )
    an.add_argument("--address", help="Ray cluster address for --engine ray (default: start a local Ray)")
    an.add_argument("--since", help="analyse samples at or after this time (epoch seconds or ISO 8601)")
    an.add_argument("--until", help="analyse samples before this time (epoch seconds or ISO 8601)")
    an.add_argument("--hosts", metavar="H1,H2,...", help="analyse only these hosts")
    _add_limit_argument(an)
    an.set_defaults(func=_cmd_analyze)

    topo = sub.add_parser(
        "topology",
        help="print which port is cabled to which (ibnetdiscover -p, iblinkinfo, ibdiagnet2.db_csv)",
        description="Read topology sources and print the links table with tiers (hca, leaf, spine).",
    )
    topo.add_argument("inputs", nargs="+", metavar="INPUT")
    topo.add_argument("--json", action="store_true", help="print the links as JSON")
    topo.add_argument("--lenient", action="store_true", help="skip and count bad records")
    topo.set_defaults(func=_cmd_topology)

    fmts = sub.add_parser("formats", help="list the formats fabricscope reads")
    fmts.add_argument("--output-format", choices=["table", "csv", "json", "markdown"], default="table")
    fmts.set_defaults(func=_cmd_formats)

    ctrs = sub.add_parser("counters", help="print the counter vocabulary")
    ctrs.add_argument("--layer", choices=["network", "nvlink", "pcie", "cxl", "device"])
    ctrs.add_argument("--output-format", choices=["table", "csv", "json", "markdown"], default="table")
    ctrs.set_defaults(func=_cmd_counters)
    from fabricscope.simulate import add_simulate_parser

    add_simulate_parser(sub)
    from fabricscope.advise import add_advise_parser

    add_advise_parser(sub)
    from fabricscope.cron import add_cron_parser
    from fabricscope.report import add_report_parser

    add_cron_parser(sub)
    add_report_parser(sub)
    from fabricscope.dashboard import add_dashboard_parser

    add_dashboard_parser(sub)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.WARNING if args.verbose else logging.ERROR, format="fabricscope: %(message)s")
    try:
        return int(args.func(args))
    except BrokenPipeError:
        return EXIT_OK
    except ValueError as e:
        print(f"fabricscope: {e}", file=sys.stderr)
        return EXIT_USAGE


if __name__ == "__main__":
    raise SystemExit(main())
