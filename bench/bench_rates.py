"""Rate-engine throughput against a naive Polars baseline, in one run.

    python bench/bench_rates.py [--rows 10000000] [--repeat 3]

Builds a samples table in memory shaped like a fabric scrape (10k ports x 10 counters, shuffled
as several exporters interleave), then times:

* baseline: the naive Polars rate anybody writes first (sort by series and time, diff over
  series), without wrap, saturation, reset, gap or duplicate handling;
* fabricscope.rates.rates_reference: the same rules in Polars expressions (the engine before the
  native kernel), on shuffled and time-ordered input;
* fabricscope.rates.rates (the native kernel) on shuffled, presorted and time-ordered input.
"""

from __future__ import annotations

import argparse
import statistics
import time

import polars as pl
from fabricscope.rates import SERIES_KEYS, rates, rates_reference


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


def timed(fn, df: pl.DataFrame, repeat: int) -> float:
    out = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn(df)
        out.append(time.perf_counter() - t)
    return statistics.median(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    df = build(args.rows)
    n = df.height
    t_naive = timed(naive, df, args.repeat)
    t_ref = timed(rates_reference, df, args.repeat)
    t_ours = timed(rates, df, args.repeat)
    sorted_df = df.sort([*SERIES_KEYS, "time"])
    t_ours_sorted = timed(rates, sorted_df, args.repeat)
    time_df = df.sort("time")  # scrapes appended in time order, as readers deliver one file
    t_ours_time = timed(rates, time_df, args.repeat)
    t_ref_time = timed(rates_reference, time_df, args.repeat)
    print(f"rows: {n:,}  polars {pl.__version__}  threads {pl.thread_pool_size()}")
    print()
    print("| engine | seconds | rows/s | vs naive |")
    print("|---|---|---|---|")
    print(
        f"| naive Polars sort + diff over series (no wrap/saturation/reset/gap rules) | {t_naive:.2f} | "
        f"{n / t_naive / 1e6:.1f} M | 1.00x |"
    )
    for label, t in (("shuffled", t_ref), ("time-ordered", t_ref_time)):
        print(f"| rates_reference (Polars), {label} input | {t:.2f} | {n / t / 1e6:.1f} M | {t_naive / t:.2f}x |")
    print(f"| fabricscope.rates, shuffled input | {t_ours:.2f} | {n / t_ours / 1e6:.1f} M | {t_naive / t_ours:.2f}x |")
    print(
        f"| fabricscope.rates, presorted input | {t_ours_sorted:.2f} | {n / t_ours_sorted / 1e6:.1f} M | "
        f"{t_naive / t_ours_sorted:.2f}x |"
    )
    print(
        f"| fabricscope.rates, time-ordered input (scrapes in order) | {t_ours_time:.2f} | "
        f"{n / t_ours_time / 1e6:.1f} M | {t_naive / t_ours_time:.2f}x |"
    )


if __name__ == "__main__":
    main()
