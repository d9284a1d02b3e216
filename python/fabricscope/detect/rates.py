"""Counters into rates: per-series deltas with wrap, saturation, reset and gap handling.

A *series* is one (host, device, port, priority, counter, source). :func:`rates` runs the native
kernel (``fabricscope-core``'s ``rates`` module: a counting sort by series id, then one pass per
series, on every core with the GIL released); :func:`rates_reference` computes the same result
with vectorised Polars expressions and is what the kernel is tested against.

Rules (each row of the result is one interval between two consecutive readings of a series):

* **Duplicates**: several readings of a series at the same timestamp are merged; the largest one
  wins (a counter only grows, so it is the latest reading), whatever order the inputs were read
  in (:func:`one_reading_per_time`).
* **Wrap**: a decrease of a wrapping counter whose earlier raw reading was in the upper half of
  its range (`Overflow` `wrap@N` in the vocabulary, e.g. mlx5 Q counters at 2^32) is a wrap; the
  delta adds the range. 64-bit counters never wrap in practice: a decrease there is a reset.
* **Saturation**: IB PMA counters stop at ``2^w - 1`` in register units (``value / scale``). An
  interval that ends on a pegged register has no rate (``saturated``): a zero delta from a pegged
  counter means "unknown", never "no errors". ``saturate@32|wrap@64`` counters are judged wide
  (64-bit) when any reading of the series exceeds the 32-bit register maximum.
* **Reset**: any other decrease (driver reload, ``perfquery -R``, reboot) is flagged ``reset``
  with no delta and no rate (UFM PDR would use 0 and NVSentinel the new value; both invent data).
* **Gap**: an interval longer than ``gap_factor`` times the series' median interval (and longer
  than ``min_gap_s``) is flagged ``gap`` and gets no rate: averaging over a hole hides bursts.

Gauges (``is_counter`` false) are not rated; see :func:`latest_gauges`.
"""

from __future__ import annotations

import functools

import polars as pl

from fabricscope import _native

__all__ = ["SERIES_KEYS", "latest_gauges", "overflow_table", "rates", "rates_reference", "value_as_float"]

# The source is part of a series: two exporters reading one port sample at different moments and
# may disagree in absolute value (resets at different times), so they are rated separately.
SERIES_KEYS = ["host", "device", "port", "priority", "counter", "source"]
# Columns of the rates table, in order (both engines).
_RATES_COLUMNS = [
    *SERIES_KEYS,
    "start",
    "end",
    "interval_s",
    "value",
    "delta",
    "rate_per_s",
    "scale",
    "wrapped",
    "saturated",
    "reset",
    "gap",
]

_U64_MAX = (1 << 64) - 1
# Overflow modes as small integers in the reference's expressions: comparing strings on every row
# costs more than the rules. The kernel resolves its rules itself, by counter name.
_NONE, _SATURATE, _WRAP, _WIDE = 0, 1, 2, 3
_MODE_CODES = {"none": _NONE, "saturate": _SATURATE, "wrap": _WRAP, "wide": _WIDE}


def value_as_float() -> pl.Expr:
    """A sample's value as one float: the exact integer when there is one, else ``value_f64``."""
    return pl.coalesce(pl.col("value_u64").cast(pl.Float64), pl.col("value_f64"))


def overflow_table() -> pl.DataFrame:
    """Per canonical counter: overflow mode (``saturate``, ``wrap``, ``wide``, ``none``) and width.

    ``wide`` marks ``saturate@32|wrap@64`` counters: 32-bit saturating unless a reading exceeds
    the 32-bit register, in which case the series is a 64-bit wrapping counter. The rules are the
    rate kernel's own (``fabricscope-core`` resolves them from the vocabulary).

    Returns:
        Columns ``counter`` (Categorical), ``overflow_mode``, ``overflow_bits``, ``overflow_max``
        (the register maximum ``2^bits - 1`` of the basic width).
    """
    return pl.DataFrame(
        _native.overflow_rules(),
        schema={
            "counter": pl.Categorical(),
            "overflow_mode": pl.String,
            "overflow_bits": pl.Int64,
            "overflow_max": pl.UInt64,
        },
        orient="row",
    )


@functools.cache
def _overflow_rules() -> dict[str, tuple[int, int, int]]:
    """The reference's view of the kernel's rules: mode code, bits and register maximum by name."""
    return {name: (_MODE_CODES[mode], bits, top) for name, mode, bits, top in _native.overflow_rules()}


def _overflow_by_code(counter: pl.Series) -> tuple[pl.Expr, dict[object, int], dict[object, int], dict[object, int]]:
    """Overflow mode, bits and register maximum per counter present, keyed by dictionary code.

    Returns the key expression (the dictionary code, or the name for a plain string column) and
    the three mappings.
    """
    rules = _overflow_rules()
    names = counter.unique().drop_nulls()
    dictionary = isinstance(counter.dtype, (pl.Categorical, pl.Enum))
    keys = names.to_physical().to_list() if dictionary else names.cast(pl.String).to_list()
    modes: dict[object, int] = {}
    bits: dict[object, int] = {}
    maxes: dict[object, int] = {}
    for key, name in zip(keys, names.cast(pl.String).to_list(), strict=True):
        if name in rules:
            modes[key], bits[key], maxes[key] = rules[name]
    expr = pl.col("counter").to_physical() if dictionary else pl.col("counter").cast(pl.String)
    return expr, modes, bits, maxes


def rates(
    samples: pl.DataFrame | pl.LazyFrame,
    *,
    gap_factor: float = 3.0,
    min_gap_s: float = 0.0,
) -> pl.DataFrame:
    """Turn the samples table into per-interval deltas and rates.

    Runs the native rate kernel (dense series ids from the dictionary codes, a counting sort by
    series, one pass per series; ranges of series in parallel) with the rules above; :func:`rates_reference` is the same
    computation in Polars expressions and gives the same rows, values and flags (rows ordered by
    series, then time; the order of the series may differ).

    Args:
        samples: The canonical samples table (``fabricscope.read``), or a lazy frame of it.
        gap_factor: An interval longer than this many times the series' median interval is a gap.
        min_gap_s: Intervals no longer than this are never gaps (guards series with jitter).

    Returns:
        One row per interval: the series keys, ``start``, ``end``, ``interval_s``, ``value`` (at
        ``end``, as float), ``delta`` (in the counter's unit, null when unknown), ``rate_per_s``
        (null when unknown), ``scale``, ``source`` and the flags ``wrapped``, ``saturated``,
        ``reset``, ``gap``.

    Example:
        >>> import fabricscope
        >>> from fabricscope.detect.rates import rates
        >>> r = rates(fabricscope.read("sample_traces/ethtool"))
        >>> r.filter(r["counter"] == "rx_pause_duration_us")["rate_per_s"].to_list()
        [20000.0, 600000.0, 970000.0]
    """
    df = samples.collect() if isinstance(samples, pl.LazyFrame) else samples
    return _rates_native(df, gap_factor=gap_factor, min_gap_s=min_gap_s)


# fabricscope default: the kernel's own (about 64k rows per parallel task); tests lower it to run
# the parallel path on small tables.
_MIN_ROWS_PER_TASK: int | None = None


def _rates_native(df: pl.DataFrame, *, gap_factor: float, min_gap_s: float) -> pl.DataFrame:
    """:func:`rates` on a collected frame: the kernel, or the reference for frames it cannot take."""
    prepared = _kernel_input(df)
    if prepared is None:
        return rates_reference(df, gap_factor=gap_factor, min_gap_s=min_gap_s)
    table, counters = prepared
    intervals, series_rows = _native.rates(
        table, counters, gap_factor=gap_factor, min_gap_s=min_gap_s, min_rows_per_task=_MIN_ROWS_PER_TASK
    )
    kernel = pl.DataFrame(intervals)
    # Every counter reading but each series' first ends one interval, unless the kernel merged
    # readings of one time (it keeps the last one read). Only then, the readings are merged here,
    # largest first, and the kernel runs again: the result does not depend on the input's order.
    counter_rows = int(table["is_counter"].sum())
    if counter_rows - len(series_rows) > kernel.height:
        df = one_reading_per_time(df)
        prepared = _kernel_input(df)
        assert prepared is not None  # the same columns, fewer rows
        table, counters = prepared
        intervals, series_rows = _native.rates(
            table, counters, gap_factor=gap_factor, min_gap_s=min_gap_s, min_rows_per_task=_MIN_ROWS_PER_TASK
        )
        kernel = pl.DataFrame(intervals)
    time_dtype = df.schema["time"]
    assert isinstance(time_dtype, pl.Datetime)  # checked by _kernel_input
    # The kernel numbers series and returns the input row of each one's first reading: the keys
    # are taken from the input there (so their dtypes, categories included, stay the input's),
    # then repeated over the series' intervals (a gather by sorted indices from a small table).
    keys = df.select(SERIES_KEYS)[pl.Series(series_rows)][kernel["series"]]
    as_time = pl.Datetime("ns", time_dtype.time_zone)
    return pl.concat([keys, kernel], how="horizontal").select(
        pl.col(*SERIES_KEYS),
        pl.col("start", "end").cast(as_time).cast(time_dtype),
        pl.col(*_RATES_COLUMNS[len(SERIES_KEYS) + 2 :]),
    )


# Key columns the kernel reads as integer codes: categoricals by their dictionary code, small
# unsigned integers as they are. Anything else (user frames with other dtypes) takes the reference.
_CODE_DTYPES = (pl.UInt8, pl.UInt16, pl.UInt32)
_MAX_KERNEL_ROWS = 1 << 30


def _kernel_input(df: pl.DataFrame) -> tuple[pl.DataFrame, list[tuple[int, str]]] | None:
    """The frame and counter names by code the native kernel takes, or None when it cannot take ``df``."""
    schema = df.schema
    if not isinstance(schema.get("time"), pl.Datetime) or df.height >= _MAX_KERNEL_ROWS:
        return None
    expected = {"value_u64": pl.UInt64, "value_f64": pl.Float64, "scale": pl.UInt32, "is_counter": pl.Boolean}
    if any(schema.get(c) != t for c, t in expected.items()) or df["time"].null_count():
        return None
    codes = []
    for k in SERIES_KEYS:
        dtype = schema.get(k)
        if isinstance(dtype, (pl.Categorical, pl.Enum)):
            codes.append(pl.col(k).to_physical().cast(pl.UInt32))
        elif dtype == pl.String:
            codes.append(pl.col(k).cast(pl.Categorical).to_physical().cast(pl.UInt32))
        elif dtype in _CODE_DTYPES:
            codes.append(pl.col(k))
        else:
            return None
    table = df.select(
        pl.col("time").dt.cast_time_unit("ns").to_physical(),
        *codes,
        *expected,
    )
    counter_dtype = pl.Categorical() if schema["counter"] == pl.String else schema["counter"]
    return table, _counter_codes(counter_dtype)


def _counter_codes(counter_dtype: pl.DataType) -> list[tuple[int, str]]:
    """``(dictionary code, name)`` of every vocabulary counter under ``counter_dtype``.

    The codes come from casting the vocabulary's names to the column's dtype (a few hundred
    strings), not from scanning the column for the codes present. Names an ``Enum`` lacks are
    left out; integer counter columns have no names, hence no rules (the kernel's default).
    """
    if not isinstance(counter_dtype, (pl.Categorical, pl.Enum)):
        return []
    names = pl.Series("counter", list(_overflow_rules()), dtype=pl.String)
    codes = names.cast(counter_dtype, strict=False).to_physical()
    return [(code, name) for name, code in zip(names.to_list(), codes.to_list(), strict=True) if code is not None]


def one_reading_per_time(samples: pl.DataFrame, *, check: bool = True) -> pl.DataFrame:
    """One reading per series and time: of several, the largest, so the input's order cannot matter.

    Two inputs (a file and its copy of another day, two exporters) may hold one series at one time
    with different values. Keeping the last one read made the result depend on the order of the
    files; the largest is the same in every order, and for a counter (which only grows) it is the
    latest reading. Ties are broken by the exact value, then the scale, so the row kept is always
    the same one. The other rows keep their order.

    Args:
        samples: A samples frame.
        check: Look for duplicates first and return ``samples`` itself when there are none.

    Example:
        >>> import fabricscope
        >>> from fabricscope.detect.rates import one_reading_per_time
        >>> s = fabricscope.read("sample_traces/ethtool")
        >>> first = s.head(1)
        >>> twice = first.vstack(first.with_columns(value_u64=first["value_u64"] + 5))
        >>> one_reading_per_time(twice)["value_u64"].to_list() == [first["value_u64"][0] + 5]
        True
    """
    key = [*SERIES_KEYS, "time"]
    if samples.height < 2 or not set(key) <= set(samples.columns):
        return samples
    physical = [
        pl.col(k).to_physical() if isinstance(samples.schema[k], (pl.Categorical, pl.Enum)) else pl.col(k) for k in key
    ]
    repeated = samples.select(pl.struct(physical).is_duplicated()).to_series()
    if check and not repeated.any():
        return samples
    ranked = samples.with_row_index("_row")
    values = [c for c in ("value_u64", "value_f64", "scale", "is_counter") if c in samples.columns]
    by = [value_as_float(), *values] if {"value_u64", "value_f64"} <= set(values) else values
    best = (
        ranked.filter(repeated)
        .sort(by, descending=True, nulls_last=True, maintain_order=True)
        .unique(subset=key, keep="first", maintain_order=True)
    )
    dropped = ranked.filter(repeated).join(best.select("_row"), on="_row", how="anti")["_row"]
    return ranked.filter(~pl.col("_row").is_in(dropped.implode())).drop("_row")


def rates_reference(
    samples: pl.DataFrame | pl.LazyFrame,
    *,
    gap_factor: float = 3.0,
    min_gap_s: float = 0.0,
) -> pl.DataFrame:
    """The rate engine in Polars expressions: the reference :func:`rates` is checked against.

    Same arguments, rules and result as :func:`rates` (rows ordered by a hash of the series keys,
    then time).

    Args:
        samples: The canonical samples table (``fabricscope.read``), or a lazy frame of it.
        gap_factor: An interval longer than this many times the series' median interval is a gap.
        min_gap_s: Intervals no longer than this are never gaps (guards series with jitter).

    Returns:
        One row per interval: the series keys, ``start``, ``end``, ``interval_s``, ``value`` (at
        ``end``, as float), ``delta`` (in the counter's unit, null when unknown), ``rate_per_s``
        (null when unknown), ``scale``, ``source`` and the flags ``wrapped``, ``saturated``,
        ``reset``, ``gap``.

    """
    df = samples.collect() if isinstance(samples, pl.LazyFrame) else samples
    df = one_reading_per_time(df.filter(pl.col("is_counter")))
    # Overflow rules per counter through its dictionary code: a small mapping instead of a hash
    # join of every row on the counter name.
    code, modes, bits, maxes = _overflow_by_code(df["counter"])
    sorted_df = (
        df.lazy()
        .select(*SERIES_KEYS, "time", "value_u64", "value_f64", "scale")
        .with_columns(
            code.replace_strict(modes, default=_WRAP, return_dtype=pl.UInt8).alias("overflow_mode"),
            code.replace_strict(bits, default=64, return_dtype=pl.Int64).alias("overflow_bits"),
            code.replace_strict(maxes, default=_U64_MAX, return_dtype=pl.UInt64).alias("overflow_max"),
            # One integer per series (hash of the keys' physical codes): sorting one numeric
            # column is far cheaper than six keys, two of them strings.
            pl.struct([pl.col(k).to_physical() for k in SERIES_KEYS]).hash(seed=4791).alias("_sid"),
        )
        # Stable, so among readings of one series at one time the last one read stays last.
        .sort("_sid", maintain_order=True)
        .collect(engine="in-memory")
    )
    # A one-key sort costs less than half of a (series, time) sort. It is enough when every series
    # already arrives in time order (scrapes in order, one file per time range), which one cheap
    # pass checks; otherwise sort again by time within series (stable: same result as sorting the
    # input by both keys).
    out_of_order = sorted_df.select(
        ((pl.col("_sid") == pl.col("_sid").shift(1)) & (pl.col("time") < pl.col("time").shift(1))).any()
    ).item()
    if out_of_order:
        sorted_df = sorted_df.sort(["_sid", "time"], maintain_order=True)
    lf = sorted_df.lazy()
    # The hash orders series; equality of the real keys decides continuity, so even a hash
    # collision cannot splice two series together.
    same_prev = (
        (pl.col("_sid") == pl.col("_sid").shift(1))
        & pl.all_horizontal([pl.col(k).eq_missing(pl.col(k).shift(1)) for k in SERIES_KEYS])
    ).fill_null(False)
    same_next = (
        (pl.col("_sid") == pl.col("_sid").shift(-1))
        & pl.all_horizontal([pl.col(k).eq_missing(pl.col(k).shift(-1)) for k in SERIES_KEYS])
    ).fill_null(False)
    lf = (
        lf.with_columns(same_next.alias("_same_next"))
        # Duplicate timestamps: keep the last reading of a (series, time).
        .filter(~(pl.col("_same_next") & (pl.col("time") == pl.col("time").shift(-1))).fill_null(False))
        .with_columns(same_prev.alias("_same_prev"))
    )
    raw_u = pl.col("value_u64") // pl.col("scale").cast(pl.UInt64)
    lf = lf.with_columns(
        raw_u.alias("_raw"),
        # A `wide` series is 64-bit if any register reading exceeds the basic width.
        ((raw_u > pl.col("overflow_max")).any().over("_sid") & (pl.col("overflow_mode") == _WIDE)).alias("_is_wide"),
    ).with_columns(
        pl.when(pl.col("_is_wide"))
        .then(pl.lit(_WRAP, pl.UInt8))
        .when(pl.col("overflow_mode") == _WIDE)
        .then(pl.lit(_SATURATE, pl.UInt8))
        .otherwise(pl.col("overflow_mode"))
        .alias("_mode"),
        pl.when(pl.col("_is_wide")).then(pl.lit(64)).otherwise(pl.col("overflow_bits")).alias("_bits"),
        pl.when(pl.col("_is_wide")).then(pl.lit(_U64_MAX, pl.UInt64)).otherwise(pl.col("overflow_max")).alias("_max"),
    )
    reg_max = pl.col("_max")
    prev_u = pl.col("value_u64").shift(1)
    prev_f = value_as_float().shift(1)
    prev_raw = pl.col("_raw").shift(1)
    cur_f = value_as_float()
    both_int = pl.col("value_u64").is_not_null() & prev_u.is_not_null()
    decreased = pl.when(both_int).then(pl.col("value_u64") < prev_u).otherwise(cur_f < prev_f)
    saturating = pl.col("_mode") == _SATURATE
    pegged = saturating & (pl.col("_raw") == reg_max)
    # Upper half of the register range: a decrease from there is a wrap, not a reset.
    half = reg_max // 2 + 1
    wrapped = (pl.col("_mode") == _WRAP) & (pl.col("_bits") < 64) & both_int & decreased & (prev_raw >= half)
    reset = decreased & ~wrapped
    int_delta = (
        pl.when(wrapped)
        # (range - prev) + cur, in register units, then back to stored units
        .then(((reg_max - prev_raw) + pl.col("_raw") + 1).cast(pl.Float64) * pl.col("scale").cast(pl.Float64))
        .when(~decreased)
        .then((pl.col("value_u64") - prev_u).cast(pl.Float64))
    )
    float_delta = pl.when(~decreased).then(cur_f - prev_f)
    delta = pl.when(both_int).then(int_delta).otherwise(float_delta)
    # Whole seconds plus the remainder: exact for whole-second intervals, whereas `* 1e-9` (what
    # Polars makes of `/ 1e9` on two or more rows) would read 15 s as 15.000000000000002. The
    # remainder is multiplied, not divided: Polars divides one row exactly, so a partition of one
    # row would differ in the last bit.
    step_ns = (pl.col("time") - pl.col("time").shift(1)).dt.total_nanoseconds()
    interval_s = (step_ns // 1_000_000_000).cast(pl.Float64) + (step_ns % 1_000_000_000).cast(pl.Float64) * 1e-9
    out = (
        lf.with_columns(
            pl.col("time").shift(1).alias("start"),
            interval_s.alias("interval_s"),
            cur_f.alias("value"),
            delta.alias("_delta"),
            wrapped.fill_null(False).alias("wrapped"),
            pegged.fill_null(False).alias("saturated"),
            reset.fill_null(False).alias("reset"),
        )
        .filter(pl.col("_same_prev"))
        .with_columns(
            (
                (pl.col("interval_s") > gap_factor * pl.col("interval_s").median().over("_sid"))
                & (pl.col("interval_s") > min_gap_s)
            ).alias("gap")
        )
        .with_columns(
            pl.when(pl.col("saturated") | pl.col("reset") | (pl.col("value").is_null()))
            .then(None)
            .otherwise(pl.col("_delta"))
            .alias("delta"),
        )
        .with_columns(
            pl.when(pl.col("gap") | (pl.col("interval_s") <= 0))
            .then(None)
            .otherwise(pl.col("delta") / pl.col("interval_s"))
            .alias("rate_per_s")
        )
        .rename({"time": "end"})
        .select(_RATES_COLUMNS)
    )
    # The in-memory engine sorts and windows faster than the streaming default here (bench/).
    return out.collect(engine="in-memory")


def latest_gauges(samples: pl.DataFrame | pl.LazyFrame) -> pl.DataFrame:
    """The last reading of every gauge series (link rate, width, state, temperatures, ...).

    Args:
        samples: The canonical samples table.

    Returns:
        One row per gauge series: keys, ``time`` and ``value`` (float).

    Example:
        >>> import fabricscope
        >>> from fabricscope.detect.rates import latest_gauges
        >>> g = latest_gauges(fabricscope.read("sample_traces/sysfs"))
        >>> g.filter((g["counter"] == "link_rate_bytes_per_s") & (g["device"] == "mlx5_0"))["value"].item()
        50000000000.0
    """
    df = samples.collect() if isinstance(samples, pl.LazyFrame) else samples
    # of several readings at one time, the largest (the same whatever order the inputs were read in)
    gauges = one_reading_per_time(df.filter(~pl.col("is_counter")))
    return (
        gauges.lazy()
        .with_columns(value_as_float().alias("value"))
        .sort("time", maintain_order=True)
        .group_by(SERIES_KEYS, maintain_order=True)
        .agg(pl.col("time").last(), pl.col("value").last())
        .collect()
    )
