"""Rate engine: exact deltas and every trap (wrap, saturation, reset, gaps, duplicates)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable

import polars as pl
import pytest
from fabricscope.detect.rates import latest_gauges, rates, rates_reference

T0 = dt.datetime(2026, 12, 2, 8, 0, tzinfo=dt.timezone.utc)

RateFn = Callable[..., pl.DataFrame]


@pytest.fixture(params=[rates, rates_reference], ids=["kernel", "reference"])
def rate_fn(request: pytest.FixtureRequest) -> RateFn:
    """Every rule is checked on the native kernel and on the Polars reference."""
    return request.param


def samples(rows: list[tuple]) -> pl.DataFrame:
    """rows: (seconds, counter, value, scale[, host, device, port, priority, is_counter])."""
    recs = []
    for r in rows:
        sec, counter, value, scale, *rest = r
        host, device, port, prio, is_counter = [*rest, *["h1", "mlx5_0", 1, None, True][len(rest) :]]
        recs.append(
            {
                "time": T0 + dt.timedelta(seconds=sec),
                "host": host,
                "device": device,
                "port": port,
                "priority": prio,
                "counter": counter,
                "value_u64": value if isinstance(value, int) else None,
                "value_f64": value if isinstance(value, float) else None,
                "scale": scale,
                "is_counter": is_counter,
                "source": "test",
            }
        )
    return pl.DataFrame(
        recs,
        schema={
            "time": pl.Datetime("ns", "UTC"),
            "host": pl.Categorical(),
            "device": pl.Categorical(),
            "port": pl.UInt16,
            "priority": pl.UInt8,
            "counter": pl.Categorical(),
            "value_u64": pl.UInt64,
            "value_f64": pl.Float64,
            "scale": pl.UInt32,
            "is_counter": pl.Boolean,
            "source": pl.Categorical(),
        },
    )


def test_plain_counter_delta_and_rate_exact(rate_fn: RateFn) -> None:
    big = 2**62
    r = rate_fn(samples([(0, "port_xmit_packets", big, 1), (10, "port_xmit_packets", big + 1_000_000, 1)]))
    assert r["delta"].to_list() == [1_000_000.0]
    assert r["rate_per_s"].to_list() == [100_000.0]
    assert r["interval_s"].to_list() == [10.0]
    assert not r.select(pl.any_horizontal("wrapped", "saturated", "reset", "gap")).to_series().any()


def test_q_counter_wraps_at_2_32(rate_fn: RateFn) -> None:
    # mlx5 out_of_sequence is a 32-bit Q counter: 2^32-100 -> 50 is a wrap of 150 packets
    r = rate_fn(samples([(0, "out_of_sequence_packets", 2**32 - 100, 1), (1, "out_of_sequence_packets", 50, 1)]))
    assert r["wrapped"].to_list() == [True]
    assert r["delta"].to_list() == [150.0]
    assert r["rate_per_s"].to_list() == [150.0]


def test_decrease_from_lower_half_is_a_reset_not_a_wrap(rate_fn: RateFn) -> None:
    r = rate_fn(samples([(0, "out_of_sequence_packets", 1_000, 1), (1, "out_of_sequence_packets", 10, 1)]))
    assert r["reset"].to_list() == [True]
    assert r["wrapped"].to_list() == [False]
    assert r["delta"].to_list() == [None]
    assert r["rate_per_s"].to_list() == [None]


def test_64_bit_decrease_is_reset(rate_fn: RateFn) -> None:
    r = rate_fn(samples([(0, "phy_rx_bytes", 2**63 + 5, 1), (1, "phy_rx_bytes", 3, 1)]))
    assert r["reset"].to_list() == [True] and r["delta"].to_list() == [None]


def test_saturated_ib_counter_gives_no_rate_never_zero(rate_fn: RateFn) -> None:
    # symbol_error is a 16-bit saturating PMA counter: pegged at 65535
    r = rate_fn(
        samples(
            [
                (0, "symbol_errors", 65_000, 1),
                (10, "symbol_errors", 65_535, 1),
                (20, "symbol_errors", 65_535, 1),
            ]
        )
    )
    assert r["saturated"].to_list() == [True, True]
    assert r["delta"].to_list() == [None, None]
    assert r["rate_per_s"].to_list() == [None, None]


def test_saturated_data_counter_uses_register_units(rate_fn: RateFn) -> None:
    # 32-bit PortXmitData pegged at 2^32-1 words = 4*(2^32-1) bytes, scale 4
    pegged = 4 * (2**32 - 1)
    r = rate_fn(samples([(0, "port_xmit_data_bytes", pegged - 400, 4), (1, "port_xmit_data_bytes", pegged, 4)]))
    assert r["saturated"].to_list() == [True]
    assert r["rate_per_s"].to_list() == [None]


def test_wide_data_counter_is_64_bit_when_it_exceeds_32_bits(rate_fn: RateFn) -> None:
    # the same file name carries 64-bit extended counters on modern HCAs: no saturation at 2^32-1
    v0 = 4 * (2**32 - 1)  # equal to the 32-bit peg, but the series later exceeds it
    r = rate_fn(samples([(0, "port_xmit_data_bytes", v0, 4), (1, "port_xmit_data_bytes", v0 + 50_000_000_000, 4)]))
    assert r["saturated"].to_list() == [False]
    assert r["rate_per_s"].to_list() == [50_000_000_000.0]


def test_gap_breaks_the_series(rate_fn: RateFn) -> None:
    rows = [(t, "port_rcv_packets", 1_000 * t, 1) for t in (0, 10, 20, 30, 200, 210)]
    r = rate_fn(samples(rows))
    assert r["gap"].to_list() == [False, False, False, True, False]
    assert r["rate_per_s"].to_list() == [1000.0, 1000.0, 1000.0, None, 1000.0]


def test_duplicate_timestamps_are_merged_last_wins(rate_fn: RateFn) -> None:
    r = rate_fn(
        samples(
            [
                (0, "port_rcv_packets", 100, 1),
                (10, "port_rcv_packets", 150, 1),
                (10, "port_rcv_packets", 200, 1),
                (20, "port_rcv_packets", 300, 1),
            ]
        )
    )
    assert r["delta"].to_list() == [100.0, 100.0]


def test_series_are_separate_by_port_priority_and_unsorted_input(rate_fn: RateFn) -> None:
    rows = [
        (10, "rx_pause_duration_us", 2_000, 1, "h1", "eth2", None, 3, True),
        (0, "rx_pause_duration_us", 1_000, 1, "h1", "eth2", None, 3, True),
        (0, "rx_pause_duration_us", 50, 1, "h1", "eth2", None, 4, True),
        (10, "rx_pause_duration_us", 60, 1, "h1", "eth2", None, 4, True),
    ]
    r = rate_fn(samples(rows)).sort("priority")
    assert r["priority"].to_list() == [3, 4]
    assert r["rate_per_s"].to_list() == [100.0, 1.0]


def test_float_valued_counters_and_gauges(rate_fn: RateFn) -> None:
    rows = [
        (0, "weird_total", 1.5, 1),
        (2, "weird_total", 3.5, 1),
        (0, "link_rate_bytes_per_s", 50_000_000_000, 1, "h1", "mlx5_0", 1, None, False),
        (5, "link_rate_bytes_per_s", 25_000_000_000, 1, "h1", "mlx5_0", 1, None, False),
    ]
    df = samples(rows)
    r = rate_fn(df)
    assert r["counter"].cast(pl.String).to_list() == ["weird_total"]
    assert r["rate_per_s"].to_list() == [1.0]
    g = latest_gauges(df)
    assert g["value"].to_list() == [25_000_000_000.0]


@pytest.mark.parametrize("n_series,n_points", [(50, 20)])
def test_many_series_add_up(rate_fn: RateFn, n_series: int, n_points: int) -> None:
    rows = [
        (t * 15, "port_xmit_packets", 10**12 + s * 7 + t * 1_500, 1, f"h{s}", "mlx5_0", 1, None, True)
        for s in range(n_series)
        for t in range(n_points)
    ]
    r = rate_fn(samples(rows))
    assert r.height == n_series * (n_points - 1)
    assert set(r["rate_per_s"].round(9).to_list()) == {100.0}
