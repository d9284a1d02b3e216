"""``bottleneck``: which layer of the stack (NVLink, PCIe, network, CXL) holds a host back.

Per host and time window (a grid of ``window_s``), the utilisation of each layer is the busiest
component's throughput over its capacity:

* ``nvlink``: per GPU, DCGM ``nvlink_{tx,rx}_bytes_per_s`` gauges (PROF fields are rates), else the
  rate of nvidia-smi ``nvlink_{tx,rx}_bytes`` counters summed over links; capacity from the
  links' reported speed (``nvlink_speed_gb_per_s`` attributes), else the GPU model's NVLink
  profile, else ``nvlink_profile``.
* ``pcie``: per GPU, DCGM ``pcie_{tx,rx}_bytes_per_s``; capacity ``pcie_profile``.
* ``network``: per NIC port, data bytes each way over the link rate, plus the share of time the
  port could not send (PortXmitWait ticks on InfiniBand, received pause time on RoCE): a port that
  moves 60% of line rate and waits for credits 35% of the time is 95% used. Capacity: the port's
  rate gauge, else another port of the host, else ``--profile`` / ``network_profile``.
* ``cxl``: per CXL PMU (``perf stat`` of ``cxl_pmu_mem<X>.<Y>``), data messages x 64 B each way
  (MemData returned to the host; MemWr/MemWrPtl and cache data to the device); capacity
  ``cxl_profile``.

A reading is assigned to the window that contains the end of its interval (a reading on a window
boundary closes the earlier window), so gauges and counter intervals of one scrape agree.

A layer whose data throughput reaches ``saturated_ratio`` of its capacity is saturated; the one
with the highest share in a window saturates first and is a ``warning`` (windows merged per host
and layer). Time a port spends unable to send counts in its utilisation but not as saturation: that
is congestion, which ``ib_congestion`` and the PFC detectors report. Hosts with nothing saturated
get one ``info`` verdict naming their busiest layer. A window is communication-bound when its
busiest layer averages at least ``comm_bound_ratio`` of capacity: collectives run near line rate
while they run, so the busiest layer's average use estimates the share of time spent
communicating.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import polars as pl

from fabricscope.detect._base import AnalysisInput, DetectorSpec, View
from fabricscope.detect._shared import network_wide, window_start
from fabricscope.fabric.profiles import get_profile, nvlink_profile_for_gpu
from fabricscope.fabric.relations import JOB, SAME_HOST, SAME_PORT, Relation
from fabricscope.incidents.findings import make_findings, merge_windows
from fabricscope.reading.vocabulary import counters_with_role
from fabricscope.sources import NCCL_ACHIEVABLE, NGC_PERF, default

__all__ = ["LAYERS_SCHEMA", "SPEC", "detect", "layer_utilisation"]

KIND = "bottleneck"

LAYERS_SCHEMA = pl.Schema(
    {
        "host": pl.String,
        "window_start": pl.Datetime("ns", "UTC"),
        "window_end": pl.Datetime("ns", "UTC"),
        "layer": pl.String,
        "utilisation_ratio": pl.Float64,
        "throughput_bytes_per_s": pl.Float64,
        "capacity_bytes_per_s": pl.Float64,
        "metric": pl.String,
    }
)

# Internal: the busiest component of each layer keeps its device and where its capacity came from.
_COMPONENT = pl.Schema(
    {
        **LAYERS_SCHEMA,
        "device": pl.String,
        "port": pl.Int64,
        "capacity_source": pl.String,
    }
)

GPU_GAUGES = {
    layer: (*counters_with_role("tx_bytes", layer, "gauge"), *counters_with_role("rx_bytes", layer, "gauge"))
    for layer in ("nvlink", "pcie")
}
NVLINK_COUNTERS = (
    *counters_with_role("tx_bytes", "nvlink", "counter"),
    *counters_with_role("rx_bytes", "nvlink", "counter"),
)
# CXL PMU messages that carry data, by direction (event names: kernel Documentation/admin-guide/perf/cxl.rst).
# Assumption, not checked against a measurement (no public CXL bandwidth measurement was found): each data
# message carries one 64-byte cache line, CXL's coherence granularity; a partial write counts as a
# full line (an upper bound).
CXL_LINE_BYTES = 64
CXL_DATA = {
    **dict.fromkeys(counters_with_role("to_host_messages", "cxl"), "to_host"),
    **dict.fromkeys(counters_with_role("to_device_messages", "cxl"), "to_device"),
}


def _only(df: pl.DataFrame, counters: Iterable[str]) -> pl.DataFrame:
    """Rows of some counters; compares the categorical directly (casting every row costs more)."""
    return df.filter(pl.col("counter").is_in(list(counters)))


def _finish(df: pl.DataFrame, layer: str, window_s: float) -> pl.DataFrame:
    """Busiest component per host and window, in the component schema."""
    if df.is_empty():
        return pl.DataFrame(schema=_COMPONENT)
    return (
        # ties are broken by name so the verdict never depends on row order (engines partition rows)
        df.sort(
            ties := ["utilisation_ratio", *(c for c in ("device", "port", "metric") if c in df.columns)],
            descending=[True] + [False] * (len(ties) - 1),
            nulls_last=True,
        )
        .group_by(["host", "window_start"], maintain_order=True)
        .first()
        .with_columns(
            (pl.col("window_start") + pl.duration(microseconds=round(window_s * 1e6))).alias("window_end"),
            pl.lit(layer).alias("layer"),
        )
        .with_columns(pl.col("port") if "port" in df.columns else pl.lit(None, pl.Int64).alias("port"))
        .select([pl.col(c).cast(t) for c, t in _COMPONENT.items()])
    )


def _gpu_capacity(inp: AnalysisInput, layer: str, counted: pl.DataFrame) -> pl.DataFrame:
    """Per (host, device): capacity in bytes/s and its source, for GPUs that name one.

    ``counted`` holds the links each GPU's counters cover (``_counted``): when ``nvlink -s`` listed
    fewer links than the counters show, the unlisted ones are taken to run at the listed links'
    mean speed.
    """
    schema = {"host": pl.String, "device": pl.String, "_cap": pl.Float64, "_cap_source": pl.String}
    attrs = inp.attributes
    if layer != "nvlink" or attrs.is_empty():
        return pl.DataFrame(schema=schema)
    a = attrs.with_columns(pl.col("host", "device", "key").cast(pl.String)).sort("time")
    speed = (
        a.filter(pl.col("key") == "nvlink_speed_gb_per_s")
        .group_by(["host", "device", "port"])
        .agg(pl.col("value").last().cast(pl.Float64, strict=False))
        .group_by(["host", "device"])
        .agg((pl.col("value").mean() * 1e9).alias("_speed"), pl.len().alias("_links"))
        .filter(pl.col("_speed") > 0)
        .join(counted, on=["host", "device"], how="left")
        .with_columns(pl.max_horizontal("_links", pl.col("_counted").fill_null(0)).alias("_n"))
        .select(
            "host",
            "device",
            (pl.col("_speed") * pl.col("_n")).alias("_cap"),
            pl.format(
                "{} links x {} GB/s (nvidia-smi nvlink -s, {} listed)", pl.col("_n"), pl.col("_speed") / 1e9, "_links"
            ).alias("_cap_source"),
        )
    )
    names = (
        a.filter(pl.col("key").is_in(["gpu_name", "modelName"]))
        .group_by(["host", "device"])
        .agg(pl.col("value").last().alias("gpu_name"))
    )
    rows = []
    for r in names.iter_rows(named=True):
        p = nvlink_profile_for_gpu(r["gpu_name"])
        if p is not None:
            rows.append((r["host"], r["device"], p.line_rate_bytes_per_s, f"{r['gpu_name']}: profile {p.name}"))
    by_model = pl.DataFrame(rows, schema=schema, orient="row")
    return pl.concat([speed.cast(schema), by_model]).unique(["host", "device"], keep="first")  # type: ignore[arg-type]


def _gpu_layer(inp: AnalysisInput, layer: str, cfg: dict[str, Any], window_s: float) -> pl.DataFrame:
    g = _only(inp.gauges, GPU_GAUGES[layer]).filter(pl.col("value").is_not_null())
    parts = []
    if not g.is_empty():
        parts.append(
            g.with_columns(pl.col("host", "device", "counter").cast(pl.String), window_start("time", window_s))
            .group_by(["host", "device", "window_start", "counter"])
            .agg(pl.col("value").mean().alias("bps"))
            .with_columns(pl.lit(0).alias("_rank"))
        )
    counted = pl.DataFrame(schema={"host": pl.String, "device": pl.String, "_counted": pl.UInt32})
    if layer == "nvlink":
        c = _only(inp.rates, NVLINK_COUNTERS).filter(pl.col("delta").is_not_null())
        if not c.is_empty():
            parts.append(
                c.with_columns(pl.col("host", "device", "counter").cast(pl.String), window_start("end", window_s))
                .group_by(["host", "device", "port", "window_start", "counter"])
                .agg((pl.col("delta").sum() / pl.col("interval_s").sum()).alias("bps"))
                .group_by(["host", "device", "window_start", "counter"])
                .agg(pl.col("bps").sum())
                .with_columns(pl.lit(1).alias("_rank"))
            )
            counted = (
                c.with_columns(pl.col("host", "device").cast(pl.String))
                .group_by(["host", "device"])
                .agg(pl.col("port").n_unique().cast(pl.UInt32).alias("_counted"))
            )
    if not parts:
        return pl.DataFrame(schema=_COMPONENT)
    df = pl.concat(parts, how="vertical_relaxed")
    # DCGM gauges and nvidia-smi counters of one GPU measure the same links: keep the gauges.
    best = df.group_by(["host", "device"]).agg(pl.col("_rank").min().alias("_best"))
    df = df.join(best, on=["host", "device"]).filter(pl.col("_rank") == pl.col("_best"))
    df = (
        df.sort(["bps", "counter"], descending=[True, False])
        .group_by(["host", "device", "window_start"], maintain_order=True)
        .agg(pl.col("bps").first().alias("throughput_bytes_per_s"), pl.col("counter").first().alias("metric"))
    )
    default = get_profile(cfg[f"{layer}_profile"])
    cap = _gpu_capacity(inp, layer, counted)
    df = df.join(cap, on=["host", "device"], how="left").with_columns(
        pl.col("_cap").fill_null(default.line_rate_bytes_per_s).alias("capacity_bytes_per_s"),
        pl.col("_cap_source")
        .fill_null(f"assumed profile {default.name} ([bottleneck] {layer}_profile)")
        .alias("capacity_source"),
    )
    df = df.with_columns((pl.col("throughput_bytes_per_s") / pl.col("capacity_bytes_per_s")).alias("utilisation_ratio"))
    return _finish(df, layer, window_s)


def _network_layer(inp: AnalysisInput, cfg: dict[str, Any], window_s: float) -> pl.DataFrame:
    wide = network_wide(inp, window_s)
    if wide.is_empty():
        return pl.DataFrame(schema=_COMPONENT)
    tx = pl.col("v_tx").fill_null(0.0)
    rx = pl.col("v_rx").fill_null(0.0)
    stall = pl.max_horizontal(
        (pl.col("v_stall_bytes") / pl.col("capacity_bytes_per_s")).fill_null(0.0), pl.col("v_pause_s").fill_null(0.0)
    )
    send = tx / pl.col("capacity_bytes_per_s") + stall
    recv = rx / pl.col("capacity_bytes_per_s")
    stall_name = pl.coalesce("counter_stall_bytes", "counter_pause_s")
    wide = wide.with_columns(
        pl.min_horizontal(pl.max_horizontal(send, recv), pl.lit(1.0)).alias("utilisation_ratio"),
        pl.max_horizontal(tx, rx).alias("throughput_bytes_per_s"),
        pl.when(send >= recv)
        .then(
            pl.when(stall >= 0.01)
            .then(pl.concat_str(pl.col("counter_tx").fill_null("-"), pl.lit("+"), stall_name))
            .otherwise(pl.col("counter_tx"))
        )
        .otherwise(pl.col("counter_rx"))
        .alias("metric"),
    )
    wide = wide.with_columns(pl.when(pl.col("_port") >= 0).then(pl.col("_port")).alias("port"))
    return _finish(wide, "network", window_s)


def _cxl_layer(inp: AnalysisInput, cfg: dict[str, Any], window_s: float) -> pl.DataFrame:
    c = _only(inp.rates, CXL_DATA).filter(pl.col("delta").is_not_null())
    if c.is_empty():
        return pl.DataFrame(schema=_COMPONENT)
    prof = get_profile(cfg["cxl_profile"])
    df = (
        c.with_columns(
            pl.col("host", "device", "counter").cast(pl.String),
            window_start("end", window_s),
            (pl.col("delta") * CXL_LINE_BYTES).alias("_bytes"),
        )
        .with_columns(pl.col("counter").replace_strict(CXL_DATA, return_dtype=pl.String).alias("_dir"))
        .group_by(["host", "device", "window_start", "counter", "_dir"])
        .agg((pl.col("_bytes").sum() / pl.col("interval_s").sum()).alias("bps"))
        .group_by(["host", "device", "window_start", "_dir"])
        .agg(pl.col("bps").sum(), pl.col("counter").sort().str.join("+").alias("metric"))
        # the link is as busy as its busier direction
        .sort(["bps", "_dir"], descending=[True, False])
        .group_by(["host", "device", "window_start"], maintain_order=True)
        .agg(pl.col("bps").first().alias("throughput_bytes_per_s"), pl.col("metric").first())
        .with_columns(
            pl.lit(prof.line_rate_bytes_per_s).alias("capacity_bytes_per_s"),
            pl.lit(f"assumed profile {prof.name} ([bottleneck] cxl_profile)").alias("capacity_source"),
        )
        .with_columns((pl.col("throughput_bytes_per_s") / pl.col("capacity_bytes_per_s")).alias("utilisation_ratio"))
    )
    return _finish(df, "cxl", window_s)


def _components(inp: AnalysisInput) -> pl.DataFrame:
    # The detector and its ``layers`` view read the same components of one input.
    return inp.once("bottleneck.components", lambda: _make_components(inp))


def _make_components(inp: AnalysisInput) -> pl.DataFrame:
    cfg = inp.config["bottleneck"]
    w = float(cfg["window_s"])
    frames = [
        _gpu_layer(inp, "nvlink", cfg, w),
        _gpu_layer(inp, "pcie", cfg, w),
        _network_layer(inp, cfg, w),
        _cxl_layer(inp, cfg, w),
    ]
    frames = [f for f in frames if not f.is_empty()]
    if not frames:
        return pl.DataFrame(schema=_COMPONENT)
    comp = pl.concat(frames)
    # A window ends where its host's data ends: the last bin must not claim time nobody measured.
    # Latest per host on the dictionary codes first: casting every rate row's host costs more.
    ends = [
        df.group_by("host").agg(pl.col(col).max().alias("_last")).with_columns(pl.col("host").cast(pl.String))
        for df, col in ((inp.rates, "end"), (inp.gauges, "time"))
        if df.height
    ]
    if not ends:
        return comp.sort("host", "window_start", "layer")
    last = pl.concat(ends).group_by("host").agg(pl.col("_last").max())
    comp = (
        comp.join(last, on="host", how="left")
        .with_columns(
            pl.when(pl.col("_last").is_not_null() & (pl.col("_last") > pl.col("window_start")))
            .then(pl.min_horizontal("window_end", "_last"))
            .otherwise(pl.col("window_end"))
            .alias("window_end")
        )
        .drop("_last")
    )
    return comp.sort("host", "window_start", "layer")


def layer_utilisation(inp: AnalysisInput) -> pl.DataFrame:
    """Per host, window and layer: the busiest component's utilisation, throughput and capacity.

    Args:
        inp: The analysis input (rates, gauges, attributes, config ``[bottleneck]``).

    Returns:
        A frame with :data:`LAYERS_SCHEMA` (``host``, ``window_start``, ``window_end``, ``layer``,
        ``utilisation_ratio``, ``throughput_bytes_per_s``, ``capacity_bytes_per_s``, ``metric``);
        empty with that schema when no layer was measured.

    Example:
        >>> import fabricscope
        >>> a = fabricscope.run_analysis("sample_traces/scenarios/nvlink-saturated")
        >>> layers = a.views["layers"]
        >>> busy = layers.filter(layers["host"] == "nvlink-gpu03")
        >>> busy.group_by("layer").agg(busy["utilisation_ratio"].max()).sort("layer")["layer"].to_list()
        ['network', 'nvlink']
    """
    return _components(inp).select(LAYERS_SCHEMA.names())


def _fmt_layers(lay: pl.DataFrame) -> str:
    return ", ".join(f"{r['layer']} {r['u']:.0%}" for r in lay.sort("u", descending=True).iter_rows(named=True))


def detect(inp: AnalysisInput) -> pl.DataFrame:
    """Name the layer that saturates first, per host and window."""
    cfg = inp.config["bottleneck"]
    comp = _components(inp)
    if comp.is_empty():
        return make_findings([])
    w = float(cfg["window_s"])
    # Saturation is judged on the data a layer moves: a port that mostly waits (credits, pause)
    # is congested, which ib_congestion and the PFC detectors report; its busy time still counts
    # in the utilisation and the verdict.
    flagged = (
        comp.with_columns((pl.col("throughput_bytes_per_s") / pl.col("capacity_bytes_per_s")).alias("data_ratio"))
        .filter(pl.col("data_ratio") >= cfg["saturated_ratio"])
        .sort(["data_ratio", "layer", "device", "port"], descending=[True, False, False, False], nulls_last=True)
        .group_by(["host", "window_start"], maintain_order=True)
        .first()
        .rename({"window_start": "start", "window_end": "end"})
    )
    rows: list[dict[str, Any]] = []
    warned: set[str] = set()
    if not flagged.is_empty():
        windows = merge_windows(
            flagged,
            keys=["host", "layer"],
            max_gap_s=w,
            aggs=[
                pl.col("data_ratio").mean().alias("mean_ratio"),
                pl.col("data_ratio").max().alias("peak_ratio"),
                pl.col("utilisation_ratio").mean().alias("busy_ratio"),
                pl.col("throughput_bytes_per_s").mean().alias("throughput"),
                pl.col("capacity_bytes_per_s").max().alias("capacity"),
                pl.col("capacity_source").first(),
                pl.col("metric").first(),
                pl.col("device").mode().sort().first().alias("device"),
                pl.col("port").mode().sort().first().alias("port"),
            ],
        )
        for x in windows.iter_rows(named=True):
            warned.add(x["host"])
            others = (
                comp.filter(
                    (pl.col("host") == x["host"])
                    & (pl.col("window_start") >= x["start"])
                    & (pl.col("window_end") <= x["end"])
                )
                .group_by("layer")
                .agg(pl.col("utilisation_ratio").mean().alias("u"))
            )
            rest = others.filter(pl.col("layer") != x["layer"])
            rows.append(
                {
                    "kind": KIND,
                    "severity": "warning",
                    "host": x["host"],
                    # the busiest NIC port or GPU: where to look first
                    "device": x["device"],
                    "port": x["port"],
                    "layer": x["layer"],
                    "start": x["start"],
                    "end": x["end"],
                    "metric": "utilisation_ratio",
                    "observed": x["mean_ratio"],
                    "expected": cfg["saturated_ratio"],
                    "message": (
                        f"{x['layer']} saturates first: {x['mean_ratio']:.0%} of "
                        f"{x['capacity'] / 1e9:.0f} GB/s on {x['device']} (peak {x['peak_ratio']:.0%})"
                        + (f"; {_fmt_layers(rest)}" if rest.height else "; no other layer measured")
                        + "; communication-bound"
                    ),
                    "evidence": {
                        "rule": "bottleneck.saturated_layer",
                        "threshold_source": cfg["source"],
                        "busiest_device": x["device"],
                        "measured_bytes_per_s": x["throughput"],
                        "expected_bytes_per_s": x["capacity"],
                        "ratio": x["mean_ratio"],
                        "data_ratio": x["mean_ratio"],
                        "peak_data_ratio": x["peak_ratio"],
                        "utilisation_ratio": x["busy_ratio"],
                        "expectation_source": x["capacity_source"],
                        "metric": x["metric"],
                        "other_layers_ratio": {r["layer"]: r["u"] for r in rest.iter_rows(named=True)},
                        "communication_bound": bool(x["mean_ratio"] >= cfg["comm_bound_ratio"]),
                        "windows": x["intervals"],
                        "window_s": w,
                    },
                }
            )
    # One verdict per host that has no saturated layer: its busiest layer over the observation.
    per_host = (
        comp.filter(~pl.col("host").is_in(list(warned)))
        # Sum in window order, a window's devices and ports in theirs: a float mean must not depend
        # on how partitions ordered the rows.
        .sort(["host", "layer", "window_start", "device", "port"], nulls_last=True)
        .group_by(["host", "layer"], maintain_order=True)
        .agg(
            pl.col("utilisation_ratio").mean().alias("u"),
            pl.col("utilisation_ratio").max().alias("peak"),
            pl.col("throughput_bytes_per_s").mean().alias("throughput"),
            pl.col("capacity_bytes_per_s").max().alias("capacity"),
            pl.col("capacity_source").first(),
            pl.col("metric").first(),
            pl.col("window_start").min().alias("start"),
            pl.col("window_end").max().alias("end"),
        )
        .sort(["host", "u"], descending=[False, True])
    )
    # Plain rows grouped in Python: one small frame per host would cost more than the verdicts.
    by_host: dict[str, list[dict[str, Any]]] = {}
    for r in per_host.iter_rows(named=True):
        by_host.setdefault(r["host"], []).append(r)
    for host, grp in by_host.items():
        b = grp[0]
        comm = b["u"] >= cfg["comm_bound_ratio"]
        # Busiest first; sorted() is stable, so ties keep per_host's order.
        layers = ", ".join(f"{r['layer']} {r['u']:.0%}" for r in sorted(grp, key=lambda r: r["u"], reverse=True))
        rows.append(
            {
                "kind": KIND,
                "severity": "info",
                "host": host,
                "layer": b["layer"],
                "start": min(r["start"] for r in grp),
                "end": max(r["end"] for r in grp),
                "metric": "utilisation_ratio",
                "observed": b["u"],
                "expected": cfg["saturated_ratio"],
                "message": (
                    f"no layer saturated; busiest {b['layer']} at {b['u']:.0%} on average (peak {b['peak']:.0%}) "
                    f"[{layers}]: " + ("communication-bound" if comm else "not communication-bound")
                ),
                "evidence": {
                    "rule": "bottleneck.verdict",
                    "threshold_source": cfg["source"],
                    "measured_bytes_per_s": b["throughput"],
                    "expected_bytes_per_s": b["capacity"],
                    "ratio": b["throughput"] / b["capacity"] if b["capacity"] else None,
                    "utilisation_ratio": b["u"],
                    "expectation_source": b["capacity_source"],
                    "metric": b["metric"],
                    "layers_ratio": {r["layer"]: r["u"] for r in grp},
                    "communication_bound": bool(comm),
                    "window_s": w,
                },
            }
        )
    return make_findings(rows)


# a layer held busy by a fault on its port, host or job (load alone is context, not a fault)
RELATIONS = (
    Relation("link_loss_go_back_n", "consequence", "bottleneck", (SAME_PORT, SAME_HOST, JOB)),
    Relation("pause_storm_head_of_line", "consequence", "bottleneck", (SAME_PORT, SAME_HOST, JOB)),
    Relation("lossless_off_drops", "consequence", "bottleneck", (SAME_PORT, SAME_HOST, JOB)),
    Relation("degraded_link_ring", "consequence", "bottleneck", (SAME_PORT, SAME_HOST, JOB)),
    Relation("spine_credit_starvation", "consequence", "bottleneck", (SAME_PORT, SAME_HOST, JOB)),
    Relation("incast_ecn", "consequence", "bottleneck", (SAME_PORT, SAME_HOST)),
)


SPEC = DetectorSpec(
    name=KIND,
    summary="per host and window, the utilisation of NVLink, PCIe, network (incl. credit wait and pause) "
    "and CXL, the layer that saturates first, communication-bound or not",
    detect=detect,
    scope="partition",
    relations=RELATIONS,
    views={"layers": View(layer_utilisation, LAYERS_SCHEMA)},
    # a saturated layer is a busy one: the job's load, not a fault (an incident only when a fault explains it)
    fault=False,
    defaults={
        # windows on a grid of window_s; a layer at or above saturated_ratio of its capacity is saturated
        "window_s": 60.0,
        "saturated_ratio": 0.90,
        "comm_bound_ratio": 0.50,
        "nvlink_profile": "nvlink4",
        "pcie_profile": "pcie5x16",
        "cxl_profile": "cxl2x8",
        "network_profile": "ndr400",
        "source": f"{NGC_PERF} (a link moving >= 90% of its rate is at its ceiling: NCCL reaches 92-96% of NDR, "
        f"https://github.com/NVIDIA/nccl-tests/issues/290); {NCCL_ACHIEVABLE}; communication-bound at >= 50% "
        "average use of the busiest layer: " + default("the busiest layer is busy at least half the time"),
    },
)
