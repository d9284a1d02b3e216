"""Computations several detectors read, each made at most once per analysis input.

Loss intervals (``packet_loss``, ``lossless_misconfig``, ``lossy_collapse``), a NIC's traffic
beside another of its counters (``ecn_congestion``, ``lossy_collapse``), pause intervals
(``pfc_congestion``, ``pfc_storm``), intervals a NIC spent stalled (``pfc_storm``'s rule, read by
``lossy_collapse``) and per-port utilisation windows (``bottleneck``, ``underperformance``) live
here, so no detector imports another. The frames are kept in the input's own cache
(:meth:`fabricscope.detect.AnalysisInput.once`): computed once per run and per engine partition,
whichever detector asks first.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from fabricscope.detect._base import AnalysisInput
from fabricscope.detect._common import (
    NIC,
    attach_rate,
    entity_strings,
    keyed,
    port_facts,
    preferred,
    rate_rows,
    series_of,
    typical_interval,
)
from fabricscope.fabric.profiles import Profile, get_profile
from fabricscope.incidents.findings import merge_windows
from fabricscope.reading.vocabulary import counters_by_direction, counters_with_role

# Loss signals per side (what this NIC received, rx; what it sent, tx) and traffic per direction,
# by role (the core's vocabulary); traffic counters most preferred first: RoCE vport counters, the
# IB port's (64-bit copies first), the wire. See packet_loss.
DIRECTIONS = ("rx", "tx")
LOSS_COUNTERS = {d: counters_with_role(f"{d}_loss") for d in DIRECTIONS}
PACKETS = {d: counters_with_role(f"{d}_packets") for d in DIRECTIONS}
BYTES = {d: counters_with_role(f"{d}_bytes") for d in DIRECTIONS}

# Pause time per direction: received pause (the network holds us back), sent pause (we hold it back).
PAUSE = counters_by_direction("pause_duration")
# One pause series: a NIC port, a priority and a direction.
SERIES = ["host", "device", "_port", "_prio", "direction"]
MEANING = {
    "rx": "received pause: the network cannot absorb this NIC's traffic",
    "tx": "sent pause: this NIC cannot absorb the network's traffic",
}

# Data bytes per direction, by role (the core's vocabulary ranks them: RDMA counters first, then the
# IB port counters, the wire last); a port's most preferred counter with data is used.
TX_COUNTERS = counters_with_role("tx_bytes")
RX_COUNTERS = counters_with_role("rx_bytes")

# What keeps a port from sending: IB credit waits, RoCE pause received from the switch.
WAIT_COUNTERS = counters_with_role("tx_wait")
PAUSED_COUNTERS = counters_with_role("rx_pause_duration")

# One XOFF pauses its priority for at most 65535 quanta of 512 bit times (IEEE 802.1Qbb).
MAX_QUANTA_BITS = 65535 * 512


def traffic(inp: AnalysisInput, base: pl.DataFrame, direction: str, mtu_bytes: float) -> pl.DataFrame:
    """Attach ``packets_per_s`` (and ``packets_estimated``) of ``direction`` to NIC intervals."""
    pk = preferred(series_of(inp, PACKETS[direction]))
    by = preferred(series_of(inp, BYTES[direction]))
    out = attach_rate(base, pk, "_pk_rate")
    out = attach_rate(out, by, "_by_rate")
    return out.with_columns(
        pl.coalesce(pl.col("_pk_rate"), pl.col("_by_rate") / mtu_bytes).alias("packets_per_s"),
        (pl.col("_pk_rate").is_null() & pl.col("_by_rate").is_not_null()).alias("packets_estimated"),
        pl.col("_by_rate").alias("bytes_per_s"),
    ).drop("_pk_rate", "_by_rate")


def with_traffic(
    r: pl.DataFrame, base: Sequence[str], directions: Sequence[str], extra: Sequence[str] = ()
) -> pl.DataFrame:
    """Rate rows of NIC counters ``base`` (+ ``extra``) and the same NICs' packets and bytes.

    Detectors join a NIC's base counters with its traffic (:func:`traffic`); traffic of NICs without any
    base counter can never join, so a partition does not ship it to the fabric-wide step.
    """
    own = rate_rows(r, [*base, *extra])
    nics = rate_rows(own, base).select("host", "device", "port").unique()
    if nics.is_empty():
        return own
    moved = rate_rows(r, [c for d in directions for c in (*PACKETS[d], *BYTES[d])])
    return pl.concat(
        [own, moved.join(nics, on=["host", "device", "port"], how="semi", nulls_equal=True, maintain_order="left")]
    )


def loss_intervals(inp: AnalysisInput) -> pl.DataFrame:
    """Per NIC, direction and interval: loss events (largest side counter), packets and ``p``.

    ``packet_loss``'s estimator (its module says why the largest counter of a side), with its
    ``mtu_bytes`` for NICs that count bytes only; computed once per input.

    Returns:
        Columns host, device, port, ``_port``, direction, start, end, interval_s, ``events``,
        ``counts`` (struct of each counter's delta), ``packets`` (null when unknown),
        ``packets_estimated``, ``bytes_per_s``, ``p`` (null when packets are unknown or zero),
        ``_gap`` (merge distance).
    """
    return inp.once("loss_intervals", lambda: _loss_intervals(inp))


def _loss_intervals(inp: AnalysisInput) -> pl.DataFrame:
    cfg = inp.config["packet_loss"]
    factor = inp.config["merge"]["max_gap_factor"]
    frames = []
    for direction, counters in LOSS_COUNTERS.items():
        r = series_of(inp, counters).filter(pl.col("delta").is_not_null())
        if r.is_empty():
            continue
        r = r.with_columns((typical_interval(inp.rates) * factor).alias("_gap"))
        wide = (
            r.group_by([*NIC, "start", "end"])
            .agg(
                pl.col("port").first(),
                pl.col("interval_s").first(),
                pl.col("_gap").max(),
                pl.col("delta").max().alias("events"),
                *[pl.col("delta").filter(pl.col("counter") == c).sum().alias(c) for c in counters],
            )
            .with_columns(
                pl.struct(counters).alias("counts"),
                pl.lit(direction).alias("direction"),
            )
            .drop(counters)
        )
        wide = traffic(inp, wide, direction, cfg["mtu_bytes"])
        frames.append(wide)
    if not frames:
        return pl.DataFrame()
    out = pl.concat(frames, how="diagonal_relaxed")
    packets = pl.col("packets_per_s") * pl.col("interval_s")
    return out.with_columns(
        packets.alias("packets"),
        pl.when(packets > 0).then(pl.col("events") / packets).alias("p"),
    )


def loss_windows(loss: pl.DataFrame, min_p: float) -> pl.DataFrame:
    """Merge intervals with ``p >= min_p`` into windows per NIC and direction; p over the window."""
    flagged = loss.filter((pl.col("p") >= min_p) & (pl.col("events") > 0))
    if flagged.is_empty():
        return flagged
    return merge_windows(
        flagged,
        keys=[*NIC, "direction"],
        max_gap_s=pl.col("_gap"),
        aggs=[
            pl.col("port").first(),
            pl.col("events").sum(),
            pl.col("packets").sum(),
            pl.col("p").max().alias("peak_p"),
            pl.col("packets_estimated").any(),
            pl.col("interval_s").sum().alias("covered_s"),
            (pl.col("bytes_per_s") * pl.col("interval_s")).sum().alias("bytes"),
            pl.col("counts"),
        ],
    ).with_columns((pl.col("events") / pl.col("packets")).alias("p"))


def timestamp_resolution_s(keys: list[str]) -> pl.Expr:
    """The resolution of a series' timestamps, in seconds.

    1 when every reading is a whole second (``date +%s`` between snapshots), 0.001 when every
    reading is a whole millisecond (Prometheus), else 0 (``date +%s.%N``, pcap nanoseconds).

    An interval between two readings stamped to the second is known to within that second (each end
    is truncated by up to 1 s): a ``sleep 15`` loop that really runs every 15.07 s reads some
    intervals as 16 s. A series whose every reading lands on a whole second by chance is judged
    with the wider uncertainty, which only ever widens a ratio's bound.
    """
    ns = [pl.col(c).dt.epoch("ns") for c in ("start", "end")]
    whole_s = ((ns[0] % 1_000_000_000 == 0) & (ns[1] % 1_000_000_000 == 0)).all().over(keys)
    whole_ms = ((ns[0] % 1_000_000 == 0) & (ns[1] % 1_000_000 == 0)).all().over(keys)
    return pl.when(whole_s).then(1.0).when(whole_ms).then(0.001).otherwise(0.0)


def pause_intervals(inp: AnalysisInput) -> pl.DataFrame:
    """Pause-duration intervals with ``direction`` and ``ratio`` (null on gaps, resets, zero-length).

    Also ``resolution_s`` (:func:`timestamp_resolution_s`) and ``ratio_upper``: the ratio over the
    shortest interval the timestamps allow (``Δt - resolution``). Computed once per input.
    """
    return inp.once("pause_intervals", lambda: _pause_intervals(inp))


def _pause_intervals(inp: AnalysisInput) -> pl.DataFrame:
    r = inp.rates.filter(pl.col("counter").is_in(list(PAUSE)))
    out = keyed(r).with_columns(
        pl.col("counter").replace_strict(PAUSE, return_dtype=pl.String).alias("direction"),
        # A product, not `/ 1e6`: Polars divides two or more rows by a constant as a product with
        # its reciprocal and one row exactly, so a quotient's last bit would depend on how many
        # rows the partition holds.
        (pl.col("rate_per_s") * 1e-6).alias("ratio"),
        timestamp_resolution_s(["host", "device", "_port", "_prio", "counter"]).alias("resolution_s"),
    )
    return out.with_columns(over_shortest_span("ratio", "interval_s").alias("ratio_upper"))


def over_shortest_span(ratio: str, span_s: str) -> pl.Expr:
    """A time share measured over ``span_s`` seconds, over the shortest span the timestamps allow.

    The span is known to its timestamps' ``resolution_s`` (1 s for ``date +%s``): the share of the
    same pause time over ``span - resolution`` is its upper bound (the share itself when the span
    is no longer than the resolution).
    """
    shortest = pl.col(span_s) - pl.col("resolution_s")
    return pl.when(shortest > 0).then(pl.col(ratio) * pl.col(span_s) / shortest).otherwise(pl.col(ratio))


def stalled_intervals(inp: AnalysisInput) -> pl.DataFrame:
    """Intervals in which a NIC sent pause for at least ``unbroken_ratio`` of the time.

    Measured by pause time or by XOFF refreshes (see ``xoff_refresh``): the NIC's receive pipeline
    had stopped, the way the mlx5 storm watchdog reports it. Columns host, ``_s``, ``_e``. For NICs
    without a watchdog counter (bnxt_en, ice), so that drops in a storm are charged to the storm,
    not to the link. Thresholds from ``[pfc_storm]``.
    """
    cfg = inp.config["pfc_storm"]
    paused_us = counters_with_role("tx_pause_duration")
    r = entity_strings(inp.rates.filter(pl.col("counter").is_in([*paused_us, *counters_with_role("tx_xoff_frames")])))
    quanta_s = MAX_QUANTA_BITS / cfg["xoff_link_bps"]
    share = (
        pl.when(pl.col("counter").is_in(paused_us))
        .then(pl.col("rate_per_s") * 1e-6)  # a product at any length, as in _pause_intervals
        .otherwise(pl.col("rate_per_s") * quanta_s)
    )
    return r.filter(share >= cfg["unbroken_ratio"]).select(
        "host", pl.col("start").alias("_s"), pl.col("end").alias("_e")
    )


def _every(window_s: float) -> str:
    return f"{max(1, round(window_s * 1e6))}us"


def window_start(col: str, window_s: float) -> pl.Expr:
    """The start of the ``window_s`` grid window a time column falls in, as ``window_start``."""
    # A reading stamped exactly on a boundary describes the interval before it.
    return (pl.col(col) - pl.duration(nanoseconds=1)).dt.truncate(_every(window_s)).alias("window_start")


def network_wide(inp: AnalysisInput, window_s: float) -> pl.DataFrame:
    """Per NIC port and ``window_s`` window: bytes each way, stall time and the port's capacity.

    Columns ``host``, ``device``, ``_port``, ``window_start``, ``v_tx``/``v_rx`` (bytes/s) with
    ``counter_tx``/``counter_rx``, ``v_stall_bytes``/``v_pause_s`` with their counters,
    ``link_rate_bytes_per_s``, ``capacity_bytes_per_s``, ``capacity_source``; empty when no NIC data
    counter was read. Capacity falls back to ``[bottleneck] network_profile``. Computed once per
    input and window length.
    """
    return inp.once(f"network_wide@{window_s}", lambda: _network_wide(inp, window_s))


def _network_wide(inp: AnalysisInput, window_s: float) -> pl.DataFrame:
    cfg = inp.config["bottleneck"]
    keys = ["host", "device", "_port"]
    # Sums per port, counter and window first, grouped on the dictionary codes: a few rows per
    # port instead of one per interval before anything is cast to strings, ranked or joined.
    # Each group holds exactly the intervals (in the same order) that a port's window sums
    # over, so the values are those of summing the intervals themselves.
    # Lazy, so each sum reads only the columns it needs of the rows it needs.
    r = (
        inp.rates.lazy()
        .select("host", "device", "port", "priority", "counter", "end", "interval_s", "delta", "rate_per_s")
        .filter(pl.col("delta").is_not_null())
    )
    bits_per_tick = inp.config["ib_congestion"]["bits_per_tick"]

    def window_sums(names: Sequence[str], delta: pl.Expr, per_priority: bool) -> pl.DataFrame:
        by = ["host", "device", "port", *(["priority"] if per_priority else []), "counter", "window_start"]
        return (
            r.filter(pl.col("counter").is_in(names))
            .with_columns(window_start("end", window_s), delta.alias("delta"))
            .group_by(by)
            .agg(
                pl.col("delta").sum().alias("_delta"),
                pl.col("interval_s").sum().alias("_interval"),
                # A counter is preferred for a port when any of its intervals has a rate.
                pl.col("rate_per_s").is_not_null().any().alias("_rated"),
            )
            # The in-memory engine, as eager frames use: the same sums in the same row order.
            .collect(engine="in-memory")
            .pipe(keyed)
            .with_columns((pl.col("_delta") / pl.col("_interval")).alias("v"))
        )

    frames = []
    for q, names in (("tx", TX_COUNTERS), ("rx", RX_COUNTERS)):
        s = window_sums(names, pl.col("delta"), per_priority=False)
        if s.is_empty():
            continue
        # The most preferred counter that has any rate, per port (as :func:`preferred` does).
        s = s.with_columns(pl.col("counter").replace_strict({c: i for i, c in enumerate(names)}).alias("_rank"))
        best = s.filter(pl.col("_rated")).group_by(keys).agg(pl.col("_rank").min().alias("_best"))
        s = s.join(best, on=keys, how="inner").filter(pl.col("_rank") == pl.col("_best"))
        frames.append(s.select(*keys, "window_start", pl.lit(q).alias("q"), "v", "counter"))
    if not frames:
        return pl.DataFrame()
    # Stall time only adds to a port whose data was read: a port with pause time but no byte
    # counter (bnxt_en's ethtool has no wire-byte counter we map) has no utilisation to add it to,
    # whatever other hosts are analysed with it.
    data_ports = pl.concat([f.select(keys) for f in frames]).unique()
    wait = window_sums(WAIT_COUNTERS, pl.col("delta") * bits_per_tick / 8, per_priority=False)
    wait = wait.join(data_ports, on=keys, how="semi", nulls_equal=True) if not wait.is_empty() else wait
    if not wait.is_empty():
        frames.append(wait.select(*keys, "window_start", pl.lit("stall_bytes").alias("q"), "v", "counter"))
    pause = window_sums(PAUSED_COUNTERS, pl.col("delta") * 1e-6, per_priority=True)  # as in _pause_intervals
    pause = pause.join(data_ports, on=keys, how="semi", nulls_equal=True) if not pause.is_empty() else pause
    if not pause.is_empty():
        frames.append(
            pause.sort(["v", "_prio"], descending=[True, False], nulls_last=True)
            # pause on several priorities at once is one stalled port: the worst priority counts
            .group_by([*keys, "window_start"], maintain_order=True)
            .agg(pl.col("v").first(), pl.col("counter").first())
            .select(*keys, "window_start", pl.lit("pause_s").alias("q"), "v", "counter")
        )
    # One row per port, window and quantity (the other quantities have no priority).
    agg = pl.concat(frames, how="vertical_relaxed")
    wide = agg.pivot(on="q", index=[*keys, "window_start"], values=["v", "counter"])
    for q in ("tx", "rx", "stall_bytes", "pause_s"):
        if f"v_{q}" not in wide.columns:
            wide = wide.with_columns(
                pl.lit(None, pl.Float64).alias(f"v_{q}"), pl.lit(None, pl.String).alias(f"counter_{q}")
            )
    facts = (
        port_facts(inp)
        .select("host", "device", pl.col("port").fill_null(-1).alias("_port"), "link_rate_bytes_per_s")
        .filter(pl.col("link_rate_bytes_per_s") > 0)
    )
    default: Profile = inp.profile or get_profile(cfg["network_profile"])
    host_rate = facts.group_by("host").agg(pl.col("link_rate_bytes_per_s").max().alias("_host_rate"))
    wide = (
        wide.join(facts, on=keys, how="left")
        .join(host_rate, on="host", how="left")
        .with_columns(
            pl.coalesce("link_rate_bytes_per_s", "_host_rate", pl.lit(default.line_rate_bytes_per_s)).alias(
                "capacity_bytes_per_s"
            ),
            pl.when(pl.col("link_rate_bytes_per_s").is_not_null())
            .then(pl.lit("port rate gauge"))
            .when(pl.col("_host_rate").is_not_null())
            .then(pl.lit("rate of another port of the host"))
            .otherwise(pl.lit(f"assumed profile {default.name}"))
            .alias("capacity_source"),
        )
    )
    # A left join on a one-row frame (one host with one rated port) broadcasts its value as a
    # constant column, and Polars divides by a constant as a multiplication by its reciprocal,
    # which can differ from the division in the last bit: materialised, every ratio below is
    # the same whichever hosts share the frame (the in-memory path and every partitioning).
    return pl.from_arrow(wide.to_arrow())  # type: ignore[return-value]


def network_ports(inp: AnalysisInput, window_s: float) -> pl.DataFrame:
    """Per NIC port and window: send, receive and stall shares of the port's capacity.

    Args:
        inp: The analysis input.
        window_s: Window length in seconds.

    Returns:
        Columns ``host``, ``device``, ``_port``, ``window_start``, ``send_ratio`` (transmit bytes
        over capacity), ``stall_ratio`` (time the port could not send), ``recv_ratio``, ``tx_bytes_per_s``,
        ``rx_bytes_per_s``, ``capacity_bytes_per_s``, ``capacity_source`` and the counters used;
        empty when no NIC data counter was read.
    """
    wide = network_wide(inp, window_s)
    if wide.is_empty():
        return wide
    cap = pl.col("capacity_bytes_per_s")
    return wide.with_columns(
        pl.col("v_tx").alias("tx_bytes_per_s"),
        pl.col("v_rx").alias("rx_bytes_per_s"),
        (pl.col("v_tx").fill_null(0.0) / cap).alias("send_ratio"),
        (pl.col("v_rx").fill_null(0.0) / cap).alias("recv_ratio"),
        pl.max_horizontal((pl.col("v_stall_bytes") / cap).fill_null(0.0), pl.col("v_pause_s").fill_null(0.0)).alias(
            "stall_ratio"
        ),
    )
