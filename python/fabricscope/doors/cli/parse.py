"""``fabricscope parse``: read counters into the canonical samples table (Parquet) and summarise."""

from __future__ import annotations

import argparse
import contextlib
import sys
import tempfile
import time as _time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import polars as pl

from fabricscope import __version__, _native
from fabricscope._atomic import atomic_file, write_parquet
from fabricscope.doors._text_table import terminal_width, text_table
from fabricscope.doors.cli._common import (
    EXIT_INPUT,
    EXIT_INTERNAL,
    EXIT_OK,
    EXIT_USAGE,
    add_future_margin_argument,
    add_reading_arguments,
    add_window_arguments,
)
from fabricscope.doors.cli.remote import add_remote_arguments, remote_options
from fabricscope.doors.input_summary import by_format, problems, skipped, summary_text
from fabricscope.exceptions import FabricscopeError, InternalError, OutputError
from fabricscope.fabric.entities import hosts_named, rename_hosts
from fabricscope.fabric.model import build as build_fabric
from fabricscope.fabric.model import path_host_names
from fabricscope.incidents.findings import json_text
from fabricscope.progress import ProgressBar
from fabricscope.reading.options import ReadOptions
from fabricscope.reading.prometheus import coarsest_resolution_ns, is_url, scan_url
from fabricscope.reading.scan import LIMITS, InputReport, ReaderPool, _time_ns, input_set_mtime
from fabricscope.reading.times import format_times
from fabricscope.reading.units import ATTRIBUTES, SAMPLES, raise_if_nothing_read, read_unit, work_units
from fabricscope.redaction import redact_text
from fabricscope.transport import redact

_EPILOG_PARSE = """\
examples:
  fabricscope parse http://prometheus:9090 --since 2026-12-02T14:00:00Z -o fabric.parquet
  fabricscope parse http://gpu017:9100/metrics --repeat 6 --interval 10 -o gpu017.parquet
  fabricscope parse sample_traces/ -o out/samples.parquet
  fabricscope parse /sys/class/infiniband -o now.parquet           live sysfs on this host
  fabricscope parse federate-*.prom.zst --lenient -o fabric.parquet
  fabricscope parse eth2.log --format ethtool --host gpu017 --time 2026-12-02T14:00:00Z

Hosts come from labels (instance, hostname, host, node), in-file `# host: NAME` lines, then
--host. Timestamps come from the data, a timestamp line before each snapshot (`date +%s` or
`date -Is` output), a timestamp in the file name, then --time, then the file's mtime (warned).
"""


def _parsed(bar: ProgressBar, done: int, total: int, rows: int, force: bool = False) -> None:
    """Parsing progress: bytes read of the inputs' total, the read rate and the rows so far."""
    mb = done / 1e6
    size = f"{mb:,.1f}/{total / 1e6:,.1f} MB" if total else f"{mb:,.1f} MB"
    bar.update(done, total, detail=f"{size}  {mb / bar.elapsed_s:,.0f} MB/s  {rows:,} rows", force=force)


def _fmt_time(t: object) -> str:
    return "-" if t is None else str(t)[:19].replace("T", " ")


def _summary(
    samples: pl.LazyFrame,
    reports: list[InputReport],
    elapsed: float,
    out: Path | None,
    side: list[str],
    verbose: bool = False,
) -> str:
    """One line per format and the problems; ``verbose`` adds the per-input and per-device tables."""
    width = terminal_width()
    lines: list[str] = []
    total_bytes = sum(r.bytes for r in reports)
    total_rows = sum(r.rows for r in reports)
    where = ""
    if total_rows:
        hosts, devices = (
            samples.select(pl.col("host").n_unique().alias("h"), pl.struct("host", "device").n_unique().alias("d"))
            .collect()
            .row(0)
        )
        where = f" from {hosts:,} host(s) ({devices:,} devices)"
    lines.append(
        f"fabricscope {__version__}: read {len(reports)} input(s), {total_bytes / 1e6:,.2f} MB, "
        f"{total_rows:,} samples{where} in {elapsed:.2f} s"
    )
    lines.append("")
    times = format_times(samples) if total_rows else None
    lines.append(
        summary_text(
            by_format(reports, times),
            skipped_paths=skipped(reports),
            problem_lines=problems(reports),
            max_problems=None if verbose else 20,
            width=width,
        )
    )
    if verbose:
        rows = []
        for r in reports:
            skip = any(w.startswith("skipped") for w in r.warnings)
            status = "FAILED" if r.failed else ("skipped" if skip else (r.format or "-"))
            rows.append([r.path, status, f"{r.rows:,}", f"{r.bad_records:,}", r.time_source])
        lines += ["", "per input:"]
        lines.append(
            text_table(
                ["input", "format", "samples", "bad records", "time from"],
                rows,  # paths stay whole (copyable), even when wider than the terminal
                align_right=[False, False, True, True, False],
            )
        )
    if total_rows and verbose:
        per_dev = (
            samples.group_by("host", "device")
            .agg(
                pl.col("port").drop_nulls().unique().sort().alias("ports"),
                pl.col("counter").n_unique().alias("counters"),
                pl.col("time").n_unique().alias("snapshots"),
                pl.col("time").min().alias("first"),
                pl.col("time").max().alias("last"),
            )
            .sort("host", "device")
            .collect()
        )
        rows = [
            [
                r["host"],
                r["device"],
                ",".join(str(p) for p in r["ports"]) or "-",
                r["counters"],
                r["snapshots"],
                _fmt_time(r["first"]),
                _fmt_time(r["last"]),
            ]
            for r in per_dev.iter_rows(named=True)
        ]
        lines += ["", "per host and device:"]
        header = ["host", "device", "ports", "counters", "snapshots", "first (UTC)", "last (UTC)"]
        lines.append(text_table(header, rows, width=width))
    else:
        lines.append("(every input and every host/device: --verbose)")
    if total_rows:
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
    if out is not None:
        lines.append("")
        lines.append(f"wrote {out}" + "".join(f", {p}" for p in side))
    return "\n".join(lines)


def _known_counters() -> list[str]:
    return [c["name"] for c in _native.counters()]


def _pull(url: str, args: argparse.Namespace, emit: Callable[[str, Any], None], show_progress: bool) -> InputReport:
    """Stream one server or exporter URL into ``emit(kind, record_batch)``; its report for the summary.

    The batches are cast to the tables' canonical Arrow schemas, so a URL's rows land in the same
    Parquet files as the files' rows.
    """
    import pyarrow as pa

    schemas = {
        "samples": pa.schema(_native.samples_schema_arrow()),
        "attributes": pa.schema(_native.attributes_schema_arrow()),
    }
    opts = replace(remote_options(args), since=_time_ns(args.since), until=_time_ns(args.until))
    chunks: list[dict[str, Any]] = []
    rows = 0
    seen_attributes: set[tuple[Any, ...]] = set()
    bar = ProgressBar(show_progress)
    try:
        for kind, frame, chunk in scan_url(
            url,
            opts,
            format=args.format,
            host=args.host,
            strict=not args.lenient,
            limits=_reading_limits(args),
            progress=bar.pulled,
        ):
            if kind == "attributes":
                # Every chunk repeats the exporters' *_info series: keep each attribute at its
                # first time, as the file readers do.
                frame = frame.unique(pl.exclude("time"), keep="first", maintain_order=True)
                keys = frame.drop("time").rows()
                frame = frame.filter(pl.Series([k not in seen_attributes for k in keys], dtype=pl.Boolean))
                seen_attributes.update(keys)
            for rb in frame.to_arrow().cast(schemas[kind]).to_batches():
                emit(kind, rb)
            if chunk is not None:
                chunks.append(chunk)
                rows += frame.height
    finally:
        bar.close()
    # One report for the URL over all its chunks (or scrapes).
    return InputReport(
        path=redact(url),
        format=str(chunks[-1]["format"]) if chunks else None,
        bytes=sum(int(c["bytes"]) for c in chunks),
        rows=rows,
        attribute_rows=sum(int(c["attribute_rows"]) for c in chunks),
        bad_records=sum(int(c["bad_records"]) for c in chunks),
        errors=list(dict.fromkeys(e for c in chunks for e in c["errors"])),
        warnings=list(dict.fromkeys(w for c in chunks for w in c["warnings"])),
        time_source=next((str(c["time_source"]) for c in chunks if c["time_source"] != "in-file"), "in-file"),
        time_resolution_ns=coarsest_resolution_ns(c["time_resolution_ns"] for c in chunks),
    )


def _reading_limits(args: argparse.Namespace) -> dict[str, int]:
    """``--max-line-bytes`` and the ``--limit`` options as one dict (a ``--limit`` wins)."""
    return {"max_line_bytes": args.max_line_bytes, **dict(args.limit)}


def _size(path: str) -> int:
    try:
        return Path(path).stat().st_size
    except OSError:
        return 0


def _cmd_parse(args: argparse.Namespace) -> int:
    with tempfile.TemporaryDirectory(prefix="fabricscope-") as scratch:
        return _parse_into(args, Path(scratch))


def _parse_into(args: argparse.Namespace, scratch: Path) -> int:
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        _time_ns(args.time)  # checked here: a bad --time is a usage error
    except (TypeError, ValueError) as e:
        print(f"fabricscope: --time: {e}", file=sys.stderr)
        return EXIT_USAGE
    try:
        _time_ns(args.since), _time_ns(args.until)
    except (TypeError, ValueError) as e:
        print(f"fabricscope: --since/--until: {e}", file=sys.stderr)
        return EXIT_USAGE
    urls = [i for i in args.inputs if is_url(i)]
    files = [i for i in args.inputs if not is_url(i)]
    # The read path every door uses (fabricscope.reading.units): the same units, reports, bad
    # records and host names as `analyze` of the same inputs.
    read = ReadOptions(
        format=args.format,
        host=args.host,
        time=input_set_mtime(files) if args.time is None else args.time,
        strict=not args.lenient,
        limits=tuple(_reading_limits(args).items()),
        host_from_path=args.host is None,
        future_margin_s=args.future_margin,
    )
    units = work_units(files, args.format) if files else []
    bytes_total = sum(_size(path) for path, _kind in units)
    show = not args.quiet and (args.progress or sys.stderr.isatty())
    progress = ProgressBar(show)
    out: Path | None = Path(args.output) if args.output else None
    # Without -o the samples go to the scratch directory; with it, each output is written to a
    # temporary file beside it and renamed onto its name once everything was read (readers of OUT
    # never see a half-written file, and a symlink planted at a name is never followed).
    base = out if out is not None else scratch / "samples.parquet"

    def side_path(kind: str) -> Path:
        # OUT.parquet -> OUT.attributes.parquet, OUT.packet_events.parquet, ...
        return base.with_name(f"{base.name.removesuffix('.parquet')}.{kind}.parquet")

    def destination(files: contextlib.ExitStack, path: Path) -> Any:
        return path if out is None else files.enter_context(atomic_file(path))

    schemas = {
        SAMPLES: pa.schema(_native.samples_schema_arrow()),
        ATTRIBUTES: pa.schema(_native.attributes_schema_arrow()),
    }
    side: dict[str, pq.ParquetWriter] = {}
    rows = 0
    reports: list[InputReport] = []
    started = _time.monotonic()
    try:
        with contextlib.ExitStack() as files_open:
            writer = files_open.enter_context(
                pq.ParquetWriter(destination(files_open, base), schemas[SAMPLES], compression="zstd")
            )

            def emit(kind: str, rb: pa.RecordBatch) -> None:
                nonlocal rows
                if kind == SAMPLES:
                    writer.write_batch(rb)
                    rows += rb.num_rows
                else:
                    if kind not in side:
                        # Entered after its file: the writer's footer is written before the rename.
                        side[kind] = files_open.enter_context(
                            pq.ParquetWriter(destination(files_open, side_path(kind)), rb.schema, compression="zstd")
                        )
                    side[kind].write_batch(rb)

            def write(kind: str, frame: pl.DataFrame) -> None:
                table = frame.to_arrow()
                if kind in schemas:
                    table = table.cast(schemas[kind])
                for rb in table.to_batches():
                    emit(kind, rb)

            # Each host-less input one host prints about itself is held (it is that host's
            # output: small) until every input was read and its path can be named as a host.
            held: list[tuple[str, pl.DataFrame]] = []
            hosts: set[str] = set()
            done = 0
            readers = ReaderPool()
            for path, kind in units:
                got = read_unit(path, kind, read, batch_rows=args.batch_rows, readers=readers, spill=write)
                reports += got.reports
                for name, frame in got.frames:
                    if got.needs_path_host and not got.spilled:
                        held.append((name, frame))
                        continue
                    hosts |= hosts_named(frame)
                    write(name, frame)
                done += _size(path)
                _parsed(progress, done, bytes_total, rows + sum(f.height for n, f in held if n == SAMPLES))
            if held:
                names = path_host_names(reports, [pl.DataFrame({"host": sorted(hosts)}), *(f for _, f in held)])
                for name, frame in held:
                    write(name, rename_hosts(frame, names))
            _parsed(progress, done, bytes_total, rows, force=True)
            # Arrow's pool keeps what the writers freed: returned before the fabric model is built
            # from the outputs, so the two never add up in the process's peak
            pa.default_memory_pool().release_unused()
            progress.close()
            for url in urls:
                reports.append(_pull(url, args, emit, show))
            # nothing read at all: the first error, and no output (as `analyze` has no verdict)
            raise_if_nothing_read(reports)
    except InternalError as e:
        progress.close()
        print(f"fabricscope: {redact_text(str(e))}", file=sys.stderr)
        return EXIT_INTERNAL
    except (FabricscopeError, ValueError) as e:
        progress.close()
        what = "cannot write output" if isinstance(e, OutputError) else "cannot read input"
        print(f"fabricscope: {what}: {redact_text(str(e))}", file=sys.stderr)
        return EXIT_INPUT
    progress.close()
    elapsed = _time.monotonic() - started
    side_outputs: dict[str, str] = {kind: str(side_path(kind)) for kind in side} if out is not None else {}
    if out is not None:
        samples = pl.scan_parquet(out)
        entities = _entities(samples, side_outputs)
        if entities.height:
            final = side_path("entities")
            try:
                write_parquet(final, entities)
            except OutputError as e:
                print(f"fabricscope: cannot write output: {redact_text(str(e))}", file=sys.stderr)
                return EXIT_INPUT
            side_outputs["entities"] = str(final)
    else:
        samples = pl.scan_parquet(base)
    if args.json:
        doc = {
            "version": __version__,
            "output": str(out) if out else None,
            "side_outputs": side_outputs,
            "samples": rows,
            "seconds": round(elapsed, 3),
            "inputs": [{k: v for k, v in r.__dict__.items() if k != "exception"} for r in reports],
        }
        print(json_text(doc, indent=2))
    else:
        print(_summary(samples, reports, elapsed, out, list(side_outputs.values()), verbose=args.verbose))
    failed = [r for r in reports if r.failed]
    for r in failed:
        # each input that could not be read, on stderr as well: its error names the file and line
        print(f"fabricscope: cannot read input: {redact_text(r.errors[0] if r.errors else r.path)}", file=sys.stderr)
    return EXIT_INPUT if failed else EXIT_OK


def _entities(samples: pl.LazyFrame, side_outputs: dict[str, str]) -> pl.DataFrame:
    """The entities table of the fabric model (:func:`fabricscope.fabric.model.build`) of what was read.

    Every name of a host, HCA, switch and cable across the inputs, beside ``links``, for the
    Parquet outputs: the model every analysis builds from the same tables.
    """
    tables = {k: pl.read_parquet(v) for k, v in side_outputs.items() if k in ("links", "nccl_ranks", "attributes")}
    hosts = samples.select(pl.col("host").cast(pl.String).unique()).collect()["host"].to_list()
    return build_fabric(hosts=hosts, attributes=tables.pop("attributes", None), tables=tables).entities.table


def add_parser(sub: Any) -> None:
    """Register ``fabricscope parse`` on the CLI's subparsers."""
    parse = sub.add_parser(
        "parse",
        help="read counters into the canonical samples table (Parquet) and summarise",
        description="Read counter exports into the canonical samples table and print a summary.",
        epilog=_EPILOG_PARSE,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parse.add_argument(
        "inputs", nargs="+", metavar="INPUT", help="files or directories (.gz/.zst ok), or a Prometheus/exporter URL"
    )
    parse.add_argument("-o", "--output", metavar="OUT.parquet", help="write samples here (atomically)")
    add_reading_arguments(parse)
    parse.add_argument("--json", action="store_true", help="print the summary as JSON")
    parse.add_argument(
        "-v", "--verbose", action="store_true", help="also list every input and every host/device; log warnings"
    )
    parse.add_argument("--progress", action="store_true", help="show progress even when stderr is not a TTY")
    parse.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    parse.add_argument("--batch-rows", type=int, default=1 << 20, help=argparse.SUPPRESS)
    parse.add_argument(
        "--max-line-bytes",
        type=int,
        default=LIMITS["max_line_bytes"],
        help=f"longest accepted line (default {LIMITS['max_line_bytes']:,} bytes)",
    )
    # A server URL is pulled over --since/--until (default: the last hour).
    add_window_arguments(parse, hosts=False)
    add_future_margin_argument(parse)
    add_remote_arguments(parse)
    parse.set_defaults(func=_cmd_parse)
