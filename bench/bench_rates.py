"""Rate-engine throughput against a naive Polars baseline, in one run.

    python bench/bench_rates.py [--rows 10000000] [--repeat 3]

Builds a samples table in memory shaped like a fabric scrape (10k ports x 10 counters), then
times, each on the same table in three orders (time-ordered: scrapes appended in time order, as
readers deliver one file; shuffled: rows in random order, as several exporters interleave;
presorted: grouped by series):

* baseline: the naive Polars rate anybody writes first (sort by series and time, diff over
  series), without wrap, saturation, reset, gap or duplicate handling;
* fabricscope.detect.rates.rates_reference: the same rules in Polars expressions (the engine before the
  native kernel);
* fabricscope.detect.rates.rates (the native kernel plus its Python glue: input codes, keys per series).

Prints the load average before and after and a Markdown table: the median wall time of
``--repeat`` runs, rows per second of wall time, the CPU time (all threads) of the same run, and
the speed-up over the naive baseline.
"""

from __future__ import annotations

import argparse
import os
import time

import polars as pl
from fabricscope.detect.rates import SERIES_KEYS, rates, rates_reference


def build(rows: int) -> pl.DataFrame:
    counters = [
        "port_xmit_data_bytes",
        "port_rcv_data_bytes",
        "port_xmit_packets",
        "port_rcv_packets",
        "symbol_errors",
        "port_rcv_errors",
        "link_downed_events",
        "port_xmit_wait_ticks",
        "port_xmit_discards",
        "out_of_sequence_packets",
    ]
    ports = 10_000
    series = ports * len(counters)
    steps = max(2, rows // series)
    n = series * steps
    names = pl.Series("names", counters, dtype=pl.String)
    base = pl.DataFrame({"i": pl.int_range(0, n, dtype=pl.Int64, eager=True)}).with_columns(
        (pl.col("i") % series).alias("s"), (pl.col("i") // series).alias("t")
    )
    df = base.select(
        (pl.lit(1_796_200_000_000_000_000) + pl.col("t") * 15_000_000_000).cast(pl.Datetime("ns", "UTC")).alias("time"),
        (pl.col("s") // len(counters) // 8).cast(pl.String).str.zfill(5).cast(pl.Categorical).alias("host"),
        (pl.lit("mlx5_") + ((pl.col("s") // len(counters)) % 8).cast(pl.String)).cast(pl.Categorical).alias("device"),
        pl.lit(1, pl.UInt16).alias("port"),
        pl.lit(None, pl.UInt8).alias("priority"),
        pl.lit(names).gather((pl.col("s") % len(counters)).cast(pl.UInt32)).cast(pl.Categorical).alias("counter"),
        (pl.lit(10**12, pl.UInt64) + (pl.col("t") * 1_000_000 + pl.col("s")).cast(pl.UInt64)).alias("value_u64"),
        pl.lit(None, pl.Float64).alias("value_f64"),
        pl.lit(1, pl.UInt32).alias("scale"),
        pl.lit(True).alias("is_counter"),
        pl.lit("prometheus").cast(pl.Categorical).alias("source"),
    )
    return df.sample(fraction=1.0, shuffle=True, seed=1)


def naive(df: pl.DataFrame) -> pl.DataFrame:
    return (
        df.lazy()
        .sort([*SERIES_KEYS, "time"])
        .with_columns(
            (pl.col("value_u64").cast(pl.Float64).diff().over(SERIES_KEYS)).alias("delta"),
            pl.col("time").diff().over(SERIES_KEYS).dt.total_nanoseconds().alias("dt_ns"),
        )
        .with_columns((pl.col("delta") / (pl.col("dt_ns") / 1e9)).alias("rate_per_s"))
        .collect()
    )


def timed(fn, df: pl.DataFrame, repeat: int) -> tuple[float, float]:
    """Median wall time and the CPU time (every thread of the process) of that same run."""
    runs = []
    for _ in range(repeat):
        wall, cpu = time.perf_counter(), time.process_time()
        fn(df)
        runs.append((time.perf_counter() - wall, time.process_time() - cpu))
    runs.sort()
    return runs[(len(runs) - 1) // 2]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument(
        "--engines",
        default="naive,reference,native",
        help="comma-separated subset of naive,reference,native (naive is the speed-up's baseline)",
    )
    args = ap.parse_args()
    engines = set(args.engines.split(","))
    load_before = os.getloadavg()
    shuffled = build(args.rows)
    n = shuffled.height
    inputs = {
        "time-ordered": shuffled.sort("time"),  # scrapes appended in time order (stable sort)
        "shuffled": shuffled,
        "presorted by series": shuffled.sort([*SERIES_KEYS, "time"]),
    }
    cases = [
        ("naive", "naive Polars sort + diff over series (no wrap/saturation/reset/gap rules)", naive, "shuffled"),
        ("reference", "`rates_reference` (Polars engine)", rates_reference, "time-ordered"),
        ("reference", "`rates_reference` (Polars engine)", rates_reference, "shuffled"),
        ("native", "`fabricscope.detect.rates.rates` (native kernel)", rates, "time-ordered"),
        ("native", "`fabricscope.detect.rates.rates` (native kernel)", rates, "shuffled"),
        ("native", "`fabricscope.detect.rates.rates` (native kernel)", rates, "presorted by series"),
    ]
    results = [
        (label, order, *timed(fn, inputs[order], args.repeat))
        for engine, label, fn, order in cases
        if engine in engines
    ]
    load_after = os.getloadavg()
    t_naive = results[0][2] if "naive" in engines else None
    print(
        f"rows: {n:,}  repeat: {args.repeat} (median)  polars {pl.__version__}  "
        f"polars threads {pl.thread_pool_size()}  cpus {os.cpu_count()}"
    )
    print("load average before: {:.2f} {:.2f} {:.2f}  after: {:.2f} {:.2f} {:.2f}".format(*load_before, *load_after))
    print()
    print("| engine | input | wall s | rows/s (wall) | CPU s | vs naive |")
    print("|---|---|---:|---:|---:|---:|")
    for label, order, wall, cpu in results:
        speedup = f"{t_naive / wall:.2f}x" if t_naive else "-"
        print(f"| {label} | {order} | {wall:.2f} | {n / wall / 1e6:.1f} M | {cpu:.2f} | {speedup} |")


if __name__ == "__main__":
    main()
