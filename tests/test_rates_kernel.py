"""The native rate kernel against the Polars reference: same rows, values and flags on random
series with wraps, saturation, resets, gaps, duplicates, float and missing values, in any order."""

from __future__ import annotations

import datetime as dt

import polars as pl
import pytest
from fabricscope.detect import rates as rates_module
from fabricscope.detect.rates import SERIES_KEYS, overflow_table, rates, rates_reference
from fabricscope.reading.scan import samples_schema
from hypothesis import given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

T0 = dt.datetime(2026, 12, 2, 8, 0, tzinfo=dt.timezone.utc)

# The canonical samples table, as the core defines it.
SCHEMA = samples_schema()


def _one_counter_per_mode() -> list[str]:
    """A counter of each overflow behaviour, plus one the vocabulary does not know."""
    t = overflow_table().with_columns(pl.col("counter").cast(pl.String))
    picks = [
        ("wrap", 32),  # mlx5 Q counters
        ("saturate", 16),  # IB PMA error counters
        ("saturate", 32),
        ("wide", 32),  # IB data counters in sysfs
        ("wrap", 64),
        ("none", 64),
    ]
    names = []
    for mode, bits in picks:
        hit = t.filter((pl.col("overflow_mode") == mode) & (pl.col("overflow_bits") == bits))
        if hit.height:
            names.append(hit["counter"][0])
    return [*names, "vendor_weird_total"]


COUNTERS = _one_counter_per_mode()


def _value(bits: int) -> st.SearchStrategy[int | float | None]:
    top = (1 << bits) - 1
    return st.one_of(
        st.integers(0, 2**64 - 1),
        st.integers(0, 1_000),
        st.integers(max(0, top - 1_000), top),  # near the register's end: wraps and pegs
        st.sampled_from([v for v in (top, 4 * top, 2**32 - 1, 4 * (2**32 - 1), 2**16 - 1) if v < 2**64]),
        st.floats(allow_infinity=False, min_value=-1e3, max_value=1e20),
        st.just(float("nan")),
        st.none(),
    )


reading = st.tuples(
    st.integers(0, 3),  # series: host index
    st.sampled_from(COUNTERS),
    st.sampled_from([None, 3]),  # priority
    st.integers(0, 40),  # seconds (repeats give duplicates, holes give gaps)
    st.integers(0, 3).map(lambda k: [0, 1, 250_000_000, 999_999_999][k]),  # ns within the second
    st.one_of(_value(32), _value(16), _value(64)),
    st.sampled_from([1, 1, 4, 0]),  # scale (0: register unknown)
    st.booleans(),  # a gauge row mixed in
)


def _frame(rows: list[tuple]) -> pl.DataFrame:
    recs = []
    for host, counter, prio, sec, ns, value, scale, gauge in rows:
        recs.append(
            {
                "time": T0 + dt.timedelta(seconds=sec, microseconds=ns // 1000),
                "host": f"h{host}",
                "device": "mlx5_0",
                "port": 1,
                "priority": prio,
                "counter": counter,
                "value_u64": value if isinstance(value, int) else None,
                "value_f64": value if isinstance(value, float) else None,
                "scale": scale,
                "is_counter": not gauge,
                "source": "test",
            }
        )
    return pl.DataFrame(recs, schema=SCHEMA)


def _canonical(r: pl.DataFrame) -> pl.DataFrame:
    text = ("host", "device", "counter", "source")
    keys = [pl.col(k).cast(pl.String) if k in text else pl.col(k) for k in SERIES_KEYS]
    return r.sort([*keys, pl.col("end")], nulls_last=True, maintain_order=True)


def _split_in_tasks(df: pl.DataFrame, **kw: float) -> pl.DataFrame:
    """The kernel with one row per parallel task: small tables take the parallel path too."""
    saved = rates_module._MIN_ROWS_PER_TASK
    rates_module._MIN_ROWS_PER_TASK = 1
    try:
        return rates(df, **kw)
    finally:
        rates_module._MIN_ROWS_PER_TASK = saved


def _same(df: pl.DataFrame, **kw: float) -> None:
    kernel, reference = rates(df, **kw), rates_reference(df, **kw)
    assert kernel.schema == reference.schema
    assert_frame_equal(_canonical(kernel), _canonical(reference), check_exact=True)
    # Split over tasks, the kernel gives the very same frame (rows in the same order).
    assert_frame_equal(_split_in_tasks(df, **kw), kernel, check_exact=True)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(reading, min_size=0, max_size=80),
    st.randoms(use_true_random=False),
    st.sampled_from([(3.0, 0.0), (1.5, 0.0), (2.0, 5.0)]),
)
def test_kernel_matches_reference(rows: list[tuple], rnd: object, gap: tuple[float, float]) -> None:
    rnd.shuffle(rows)  # type: ignore[attr-defined]
    _same(_frame(rows), gap_factor=gap[0], min_gap_s=gap[1])


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 6), st.integers(2, 40), st.randoms(use_true_random=False))
def test_kernel_matches_reference_on_regular_scrapes(n_series: int, n_points: int, rnd: object) -> None:
    # Readings in scrape order, some scrapes missing, one reset, one 32-bit wrap.
    rows = []
    for t in range(n_points):
        for s in range(n_series):
            if rnd.random() < 0.1:  # type: ignore[attr-defined]
                continue
            value = (2**32 - 5_000 + 1_000 * t) % 2**32 if s % 2 else 10**6 + 500 * t
            rows.append((s, COUNTERS[s % len(COUNTERS)], None, 15 * t, 0, value, 1, False))
    _same(_frame(rows))


@pytest.mark.parametrize("shuffle", [False, True])
def test_kernel_on_read_samples_matches_reference(shuffle: bool) -> None:
    import fabricscope

    df = fabricscope.read("sample_traces")
    if shuffle:
        df = df.sample(fraction=1.0, shuffle=True, seed=4791)
    _same(df)
    assert rates(df).height == rates_reference(df).height > 100


def test_parallel_path_on_many_series_matches_reference() -> None:
    # 400 series x 30 scrapes, shuffled, with wraps, resets, gaps and duplicates: enough series
    # that every task of the split gets many of them.
    rows = []
    for t in range(30):
        for s in range(400):
            sec = 15 * t + (15 if s % 11 == 0 and t % 7 == 0 else 0) + (200 if t >= 25 and s % 5 == 0 else 0)
            value = (2**32 - 50_000 + 4_000 * t) % 2**32 if s % 2 else (5 if t == 20 else 10**6 + 700 * t)
            rows.append((s, COUNTERS[(s // 2) % len(COUNTERS)], (s // 4) % 2 * 3 or None, sec, 0, value, 1, False))
    df = _frame(rows).sample(fraction=1.0, shuffle=True, seed=7)
    _same(df)
    r = _split_in_tasks(df)
    assert r.height == rates_reference(df).height > 10_000
    assert (r["wrapped"].sum(), r["reset"].sum(), r["gap"].sum()) == (34, 366, 80)


def test_enum_keys_take_the_kernel_with_the_same_result() -> None:
    # Enum codes number the enum's own categories: the overflow rules must follow them.
    rows = [(0, c, None, t, 0, (2**32 - 300 + 100 * t) % 2**32, 1, False) for t in range(6) for c in COUNTERS]
    enum = pl.Enum(list(reversed(COUNTERS)))
    df = _frame(rows).with_columns(pl.col("counter").cast(pl.String).cast(enum))
    _same(df)
    r = rates(df)
    assert r.schema["counter"] == enum
    wrap32 = r.filter(pl.col("counter") == COUNTERS[0])
    assert wrap32["wrapped"].to_list() == [False, False, True, False, False]


@pytest.mark.parametrize("dtype", [pl.Datetime("us"), pl.Datetime("ms", "Europe/Berlin")])
def test_other_time_units_and_zones_keep_the_input_dtype(dtype: pl.Datetime) -> None:
    rows = [(s, COUNTERS[0], None, 15 * t, 0, 1_000 * t + s, 1, False) for t in range(5) for s in range(3)]
    df = _frame(rows).with_columns(pl.col("time").cast(dtype))
    _same(df)
    r = rates(df)
    assert r.schema["start"] == r.schema["end"] == dtype
    assert r.filter(pl.col("host") == "h2")["end"].to_list() == df.filter(pl.col("host") == "h2")["time"][1:].to_list()


def test_kernel_output_schema_on_empty_input() -> None:
    empty = _frame([])
    assert rates(empty).schema == rates_reference(empty).schema
    assert rates(empty).height == 0


def test_string_keys_take_the_kernel_with_the_same_result() -> None:
    rows = [(0, "out_of_sequence_packets", None, t, 0, (2**32 - 300 + 100 * t) % 2**32, 1, False) for t in range(6)]
    df = _frame(rows).with_columns(pl.col("host", "device", "counter", "source").cast(pl.String))
    _same(df)
    assert rates(df)["wrapped"].to_list() == [False, False, True, False, False]
