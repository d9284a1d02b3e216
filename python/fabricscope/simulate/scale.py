"""Scale mode: N ports x M counters x T readings of a healthy NDR fabric as Prometheus ``/federate`` text.

For benchmarks of the whole pipeline at 10^6 to 10^8 samples. The text is what Prometheus
``/federate`` serves for node_exporter's InfiniBand collector (``node_infiniband_*`` families with
``device``, ``instance``, ``job`` and ``port`` labels, ms timestamps, one ``# TYPE`` line per family
and scrape), split over several files by host, as a sharded Prometheus or one dump per rack would
write it, so that readers can parse the files in parallel.

Values are built per batch of readings with Polars expressions (a cross join of readings and
series, then formatted by ``concat_str``), never by a Python loop per sample: every series is a
monotonic counter ``offset + r * mean + jitter(r)`` with ``0 <= jitter < 0.3 * mean``, so each
increment stays between 0.7 and 1.3 times the mean and below the line rate.
"""

from __future__ import annotations

import math
import os
import time as _time
from pathlib import Path

import polars as pl

__all__ = ["parse_scale", "scale_counters", "write_scale"]

T0_MS = 1_796_572_800_000
"""First scrape: 2026-12-05T00:00:00Z in ms."""

DEVICES_PER_HOST = 8


def scale_counters() -> list[tuple[str, str, float]]:
    """The counters scale mode can write: (canonical name, node_exporter family, share of line rate).

    The share is in the counter's unit per second as a fraction of the NDR line rate in bytes/s
    (packets: per 4 KiB frame); error counters stay flat (0) as on a healthy fabric.

    Example:
        >>> from fabricscope.simulate.scale import scale_counters
        >>> scale_counters()[0][:2]
        ('port_xmit_data_bytes', 'node_infiniband_port_data_transmitted_bytes_total')
    """
    from fabricscope.simulate.fabric import TECHNOLOGIES
    from fabricscope.simulate.writers import spellings

    tech = TECHNOLOGIES["ndr400"]
    per_frame = 1.0 / tech.data_frame
    out = []
    for name, per in spellings().items():
        if "prometheus" not in per or not per["prometheus"][0].startswith("node_infiniband_"):
            continue
        if name.endswith("_data_bytes"):
            share = 0.6
        elif name.endswith(("unicast_xmit_packets", "unicast_rcv_packets")) or name in (
            "port_xmit_packets",
            "port_rcv_packets",
            "ext_port_xmit_packets",
            "ext_port_rcv_packets",
        ):
            share = 0.6 * per_frame
        elif "multicast" in name:
            share = 1e-6 * per_frame
        elif name == "port_xmit_wait_ticks":
            share = 0.01 * 8 / 64
        else:
            share = 0.0
        out.append((name, per["prometheus"][0], share * tech.line_rate))
    return out


def parse_scale(text: str) -> tuple[int, int, int]:
    """Parse ``PORTSxCOUNTERSxREADINGS`` (``8192x12x1018``; ``_`` separators allowed).

    Example:
        >>> from fabricscope.simulate.scale import parse_scale
        >>> parse_scale("8_192x12x1018")
        (8192, 12, 1018)
    """
    parts = text.lower().replace("_", "").split("x")
    if len(parts) != 3 or not all(p.isdigit() and int(p) > 0 for p in parts):
        raise ValueError(f"--scale: expected PORTSxCOUNTERSxREADINGS with positive integers, got {text!r}")
    ports, counters, readings = (int(p) for p in parts)
    available = len(scale_counters())
    if counters > available:
        raise ValueError(f"--scale: at most {available} counters per port, got {counters}")
    return ports, counters, readings


def write_scale(
    outdir: str | os.PathLike[str],
    *,
    ports: int,
    counters: int,
    readings: int,
    interval_s: float = 10.0,
    files: int = 1,
    seed: int = 1,
) -> dict[str, float]:
    """Write ``ports x counters x readings`` samples as ``/federate`` text under ``outdir/prometheus``.

    Args:
        outdir: Output directory; files are ``prometheus/federate-scale-NNN.prom``.
        ports: HCA ports (8 per host: ``mlx5_0``..``mlx5_7``, port 1).
        counters: Counters per port, the first ones of :func:`scale_counters`.
        readings: Scrapes (readings per series).
        interval_s: Seconds between scrapes.
        files: Split the hosts over this many files.
        seed: Random seed (offsets and jitter).

    Returns:
        ``samples``, ``bytes``, ``files``, ``seconds``, ``mb_per_s``.

    Example:
        >>> import tempfile, fabricscope
        >>> from fabricscope.simulate.scale import write_scale
        >>> d = tempfile.mkdtemp()
        >>> write_scale(d, ports=16, counters=3, readings=5, files=2)["samples"]
        240
        >>> fabricscope.read(d).height
        240
    """
    from fabricscope.simulate.writers import go_float_expr

    started = _time.monotonic()
    chosen = scale_counters()[:counters]
    hosts = math.ceil(ports / DEVICES_PER_HOST)
    series = (
        pl.DataFrame({"p": pl.int_range(0, ports, eager=True)})
        .with_columns((pl.col("p") // DEVICES_PER_HOST).alias("h"), (pl.col("p") % DEVICES_PER_HOST).alias("d"))
        .join(
            pl.DataFrame(
                {
                    "k": list(range(len(chosen))),
                    "metric": [m for _, m, _ in chosen],
                    "per_s": [r for _, _, r in chosen],
                    "words": [c.endswith("_data_bytes") for c, _, _ in chosen],
                }
            ),
            how="cross",
        )
        .with_columns(
            pl.concat_str(
                pl.col("metric"),
                pl.lit('{device="mlx5_'),
                pl.col("d").cast(pl.String),
                pl.lit('",instance="scale-gpu'),
                pl.col("h").cast(pl.String).str.zfill(5),
                pl.lit(':9100",job="node",port="1"} '),
            ).alias("prefix"),
            pl.struct("p", "k").hash(seed=seed).alias("_id"),
            (pl.col("per_s") * interval_s).floor().cast(pl.UInt64).alias("mean"),
            (pl.col("h") * files // hosts).alias("file"),
        )
        .with_columns(
            # Large offsets make the text as long as real counters after days of uptime.
            pl.when(pl.col("per_s") > 0).then(pl.col("_id") % 10**13 + 10**12).otherwise(0).alias("offset")
        )
        .sort("file", "k", "h", "d")
    )
    out = Path(outdir) / "prometheus"
    out.mkdir(parents=True, exist_ok=True)
    # About 4 M lines per formatting batch: large enough for Polars' threads, small enough for memory.
    per_file = series.group_by("file").len()["len"].max() or 1
    batch = max(1, 4_000_000 // int(per_file))
    written = 0
    samples = 0
    paths = []
    for f, part in series.partition_by("file", as_dict=True, maintain_order=True).items():
        path = out / f"federate-scale-{int(f[0]):03d}.prom"  # type: ignore[call-overload]
        paths.append(path)
        with path.open("wb") as fh:
            for r0 in range(0, readings, batch):
                reads = pl.DataFrame({"r": pl.int_range(r0, min(readings, r0 + batch), eager=True).cast(pl.UInt64)})
                jitter = pl.struct("_id", "r").hash(seed=seed + 1) % (pl.col("mean") * 3 // 10 + 1)
                value = pl.col("offset").cast(pl.UInt64) + pl.col("r") * pl.col("mean") + jitter
                df = reads.join(part, how="cross").with_columns(
                    # IB data counters count 4-octet words: node_exporter prints words x 4.
                    pl.when(pl.col("words")).then(value // 4 * 4).otherwise(value).alias("value")
                )
                first = (pl.col("k") != pl.col("k").shift(1)) | (pl.col("r") != pl.col("r").shift(1))
                lines = df.select(
                    pl.concat_str(
                        pl.when(first.fill_null(True))
                        .then(pl.concat_str(pl.lit("# TYPE "), pl.col("metric"), pl.lit(" untyped\n")))
                        .otherwise(pl.lit("")),
                        pl.col("prefix"),
                        go_float_expr("value"),
                        pl.lit(" "),
                        (pl.col("r").cast(pl.Int64) * round(interval_s * 1000) + T0_MS).cast(pl.String),
                    ).alias("l")
                )
                pos = fh.tell()
                lines.write_csv(fh, include_header=False, quote_style="never")
                written += fh.tell() - pos
                samples += df.height
    secs = _time.monotonic() - started
    return {
        "samples": samples,
        "bytes": written,
        "files": len(paths),
        "seconds": secs,
        "mb_per_s": written / 1e6 / max(secs, 1e-9),
    }
