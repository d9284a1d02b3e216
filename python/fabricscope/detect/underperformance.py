"""``underperformance``: measured throughput or latency against what the hardware should give.

Three sources, each finding stating measured, expected, their ratio and the source of the
expectation:

* ``perftest_bw``: ``ib_*_bw`` BW average at the run's largest message size (at least
  ``perftest_min_size_bytes``, perftest's default 64 KiB: tiny messages measure message rate) below
  ``perftest_min_ratio`` (90%) of the port rate (NVIDIA ngc_multinode_perf pass criterion;
  bidirectional tests count both directions). The port rate is the port's rate gauge when the
  same analysis read it, else ``--profile``, else ``network_profile`` (``expected_assumed``).
* ``perftest_latency``: ``ib_{send,write}_lat`` typical latency above 2.5 µs, ``ib_read_lat``
  above 4.5 µs at the run's smallest size (same source).
* ``nccl_busbw``: nccl-tests bus bandwidth at the largest size of at least
  ``nccl_min_size_bytes`` below ``nccl_min_ratio`` (80%) of what the topology read from the log
  gives: within one node the GPUs' NVLink generation (from the rank lines' GPU name), across
  nodes the lesser of that and NICs per node x the NIC's achievable rate (46-48 GB/s per NDR400
  NIC). NICs per node: the host's ports in the same analysis, else one per GPU (DGX/HGX layout).
* ``busy_but_slow``: a NIC port busy (sending or unable to send: PortXmitWait, received pause)
  at least ``busy_ratio`` of a window while its throughput stayed below ``counter_min_ratio`` of
  its line rate (info: the cause is reported by ``ib_congestion`` or the PFC detectors).
"""

from __future__ import annotations

from typing import Any

import polars as pl

from fabricscope.detect._base import AnalysisInput, DetectorSpec, no_rates
from fabricscope.detect._common import port_facts
from fabricscope.detect.bottleneck import network_ports
from fabricscope.findings import make_findings, merge_windows
from fabricscope.profiles import Profile, get_profile, nvlink_profile_for_gpu, profile_for_port
from fabricscope.sources import NCCL_EXPECTED, NGC_PERF, default

__all__ = ["SPEC", "detect", "expected_busbw"]

KIND = "underperformance"


def _facts(inp: AnalysisInput) -> pl.DataFrame:
    return port_facts(inp).filter(pl.col("link_rate_bytes_per_s") > 0)


def _perftest_bw(inp: AnalysisInput, cfg: dict[str, Any], facts: pl.DataFrame) -> list[dict[str, Any]]:
    t = inp.tables.get("perftest_results")
    if t is None or t.is_empty():
        return []
    bw = t.filter((pl.col("kind") == "bw") & pl.col("bw_average_gbit_per_s").is_not_null())
    if bw.is_empty():
        return []
    keys = ["host", "run", "test", "device", "port"]
    largest = (
        bw.sort("size_bytes", descending=True)
        .group_by(keys, maintain_order=True)
        .first()
        .with_columns(pl.col("port").cast(pl.Int64))
        .join(
            facts.select("host", "device", "port", "link_rate_bytes_per_s", "profile"),
            on=["host", "device", "port"],
            how="left",
            nulls_equal=True,
        )
    )
    largest = largest.filter(pl.col("size_bytes") >= cfg["perftest_min_size_bytes"])
    default = inp.profile or get_profile(cfg["network_profile"])
    rows = []
    for r in largest.iter_rows(named=True):
        directions = 2 if "bidir" in (r["test"] or "").lower() else 1
        if r["link_rate_bytes_per_s"] is not None:
            line, basis, assumed = r["link_rate_bytes_per_s"], "port rate gauge", False
        else:
            # an Ethernet port of the assumed rate is RoCE, not InfiniBand
            prof = (
                inp.profile or profile_for_port(r["link_type"], default.line_rate_bytes_per_s, default.lanes) or default
            )
            line, basis, assumed = prof.line_rate_bytes_per_s, f"profile {prof.name}", True
        expected_gbps = line * 8 / 1e9 * directions
        measured = r["bw_average_gbit_per_s"]
        ratio = measured / expected_gbps
        if ratio >= cfg["perftest_min_ratio"]:
            continue
        rows.append(
            {
                "kind": KIND,
                "severity": "critical" if ratio < cfg["perftest_critical_ratio"] else "warning",
                "host": r["host"],
                "device": r["device"],
                "port": r["port"],
                "layer": "network",
                "start": r["time"],
                "end": r["time"],
                "metric": "bw_average_gbit_per_s",
                "observed": measured,
                "expected": expected_gbps,
                "message": (
                    f"{r['test']} reached {measured:.1f} Gb/s at {r['size_bytes']} B, {ratio:.0%} of the "
                    f"{expected_gbps:.0f} Gb/s port rate (pass: >= {cfg['perftest_min_ratio']:.0%})"
                ),
                "evidence": {
                    "rule": "underperformance.perftest_bw",
                    "threshold_source": cfg["source"],
                    "measured_gbit_per_s": measured,
                    "expected_gbit_per_s": expected_gbps,
                    "ratio": ratio,
                    "expectation_source": basis,
                    "expected_assumed": assumed,
                    "directions": directions,
                    "size_bytes": r["size_bytes"],
                    "run": r["run"],
                    "duration_mode": r["duration_mode"],
                },
            }
        )
    return rows


def _perftest_lat(inp: AnalysisInput, cfg: dict[str, Any]) -> list[dict[str, Any]]:
    t = inp.tables.get("perftest_results")
    if t is None or t.is_empty():
        return []
    lat = t.filter(pl.col("kind") == "lat").with_columns(
        pl.coalesce("lat_typical_us", "lat_avg_us").alias("_lat"),
        pl.col("test").str.to_lowercase().alias("_test"),
    )
    # The criterion names send, write and read; atomics and others have no sourced limit.
    lat = lat.filter(pl.col("_lat").is_not_null() & pl.col("_test").str.contains("^(send|write|read)"))
    if lat.is_empty():
        return []
    smallest = lat.sort("size_bytes").group_by(["host", "run", "test", "device", "port"], maintain_order=True).first()
    rows = []
    for r in smallest.iter_rows(named=True):
        limit = cfg["perftest_max_read_lat_us"] if r["_test"].startswith("read") else cfg["perftest_max_write_lat_us"]
        if r["_lat"] <= limit:
            continue
        rows.append(
            {
                "kind": KIND,
                "severity": "warning",
                "host": r["host"],
                "device": r["device"],
                "port": r["port"],
                "layer": "network",
                "start": r["time"],
                "end": r["time"],
                "metric": "lat_typical_us",
                "observed": r["_lat"],
                "expected": limit,
                "message": f"{r['test']} typical latency {r['_lat']:.2f} us at {r['size_bytes']} B, above {limit} us",
                "evidence": {
                    "rule": "underperformance.perftest_latency",
                    "threshold_source": cfg["source"],
                    "measured_us": r["_lat"],
                    "expected_max_us": limit,
                    "ratio": r["_lat"] / limit,
                    "expectation_source": "ngc_multinode_perf latency limits",
                    "size_bytes": r["size_bytes"],
                    "run": r["run"],
                },
            }
        )
    return rows


def expected_busbw(
    gpu_name: str | None,
    n_nodes: int,
    gpus_per_node: int,
    *,
    nics_per_node: int | None = None,
    network: Profile | None = None,
    nvlink_default: str = "nvlink4",
) -> tuple[float, str, str, bool]:
    """The bus bandwidth (bytes/s) nccl-tests should reach at large sizes for a topology.

    Within a node: the GPUs' NVLink (or PCIe) achievable rate. Across nodes: the lesser of that
    and NICs per node x the NIC's achievable rate (every rail carries 1/NICs of the data).

    Args:
        gpu_name: GPU model (``NVIDIA H100 80GB HBM3``); None when unknown.
        n_nodes: Nodes in the run.
        gpus_per_node: GPUs per node.
        nics_per_node: NICs per node (None: one per GPU, as DGX/HGX systems are built).
        network: The NIC's profile (None: ``ndr400``).
        nvlink_default: Profile when the GPU model is unknown.

    Returns:
        ``(expected_bytes_per_s, layer, basis, assumed)``: the limiting layer (``nvlink``, ``pcie``
        or ``network``), a sentence naming the sources, and whether a profile was assumed.

    Example:
        >>> from fabricscope.detect.underperformance import expected_busbw
        >>> bw, layer, basis, assumed = expected_busbw("NVIDIA H100 80GB HBM3", 2, 8)
        >>> round(bw / 1e9, 1), layer, assumed
        (371.2, 'nvlink', False)
    """
    gpu = nvlink_profile_for_gpu(gpu_name)
    assumed = gpu is None
    gpu = gpu or get_profile(nvlink_default)
    intra = gpu.achievable_bytes_per_s
    basis = f"{gpu.name} achievable {intra / 1e9:.0f} GB/s ({gpu.source})"
    if n_nodes <= 1:
        return intra, gpu.layer, basis, assumed
    net = network or get_profile("ndr400")
    nics = nics_per_node or gpus_per_node
    inter = nics * net.achievable_bytes_per_s
    nic_basis = (
        f"{nics} x {net.name} achievable {net.achievable_bytes_per_s / 1e9:.0f} GB/s"
        + ("" if nics_per_node else " (one NIC per GPU assumed)")
        + f" ({net.source})"
    )
    if inter < intra:
        return inter, "network", f"{nic_basis}; NVLink allows more: {basis}", assumed or nics_per_node is None
    return intra, gpu.layer, f"{basis}; network allows {inter / 1e9:.0f} GB/s: {nic_basis}", assumed


def _nccl(inp: AnalysisInput, cfg: dict[str, Any], facts: pl.DataFrame) -> list[dict[str, Any]]:
    t = inp.tables.get("nccl_results")
    if t is None or t.is_empty():
        return []
    big = t.filter(pl.col("busbw_gb_per_s").is_not_null() & (pl.col("size_bytes") >= cfg["nccl_min_size_bytes"]))
    if big.is_empty():
        return []
    keys = ["host", "run", "collective"]
    # The largest size of each run; of its two placements the better one (in-place and
    # out-of-place run the same transfers, so the better shows what the fabric can do).
    at_max = big.filter(pl.col("size_bytes") == pl.col("size_bytes").max().over(keys))
    best = (
        at_max.sort("busbw_gb_per_s", descending=True)
        .group_by(keys, maintain_order=True)
        .agg(pl.all().first(), pl.col("busbw_gb_per_s").alias("_all_busbw"), pl.col("placement").alias("_places"))
        .sort(keys)
    )
    ranks = inp.tables.get("nccl_ranks")
    # Runs are numbered per log, so run 0 of two logs collide: match the log's host among the
    # run's ranks first, and use a run's GPU model alone only when all its ranks agree.
    gpu_by_host: dict[tuple[int, str], str] = {}
    gpu_by_run: dict[int, str] = {}
    if ranks is not None and not ranks.is_empty():
        named = ranks.filter(pl.col("gpu_name").is_not_null())
        for run, host, name in named.group_by("run", "host").agg(pl.col("gpu_name").mode().first()).iter_rows():
            gpu_by_host[(run, host)] = name
        for run, names in named.group_by("run").agg(pl.col("gpu_name").unique()).iter_rows():
            if len(names) == 1:
                gpu_by_run[run] = names[0]
    nics = (
        facts.filter(pl.col("profile").is_not_null())
        .group_by("host")
        .agg(pl.len().alias("nics"), pl.col("profile").mode().first())
    )
    nic_by_host = {r["host"]: (r["nics"], r["profile"]) for r in nics.iter_rows(named=True)}
    rows = []
    for r in best.iter_rows(named=True):
        if r["n_nodes"] is None or r["gpus_per_node"] is None:
            continue  # no rank lines: the topology, and so the expectation, is unknown
        if r["n_nodes"] <= 1 and r["gpus_per_node"] <= 1:
            continue  # one GPU: no interconnect to judge
        known = nic_by_host.get(r["host"])
        net = inp.profile or (get_profile(known[1]) if known else get_profile(cfg["network_profile"]))
        gpu_name = gpu_by_host.get((r["run"], r["host"]), gpu_by_run.get(r["run"]))
        exp, layer, basis, assumed = expected_busbw(
            gpu_name,
            r["n_nodes"],
            r["gpus_per_node"],
            nics_per_node=known[0] if known else None,
            network=net,
            nvlink_default=cfg["nvlink_profile"],
        )
        measured = r["busbw_gb_per_s"] * 1e9
        ratio = measured / exp
        if ratio >= cfg["nccl_min_ratio"]:
            continue
        rows.append(
            {
                "kind": KIND,
                "severity": "critical" if ratio < cfg["nccl_critical_ratio"] else "warning",
                "host": r["host"],
                "layer": layer,
                "start": r["time"],
                "end": r["time"],
                "metric": "busbw_gb_per_s",
                "observed": r["busbw_gb_per_s"],
                "expected": exp / 1e9,
                "message": (
                    f"nccl-tests {r['collective']} bus bandwidth {r['busbw_gb_per_s']:.1f} GB/s at "
                    f"{r['size_bytes'] / 2**30:g} GiB on {r['n_nodes']}x{r['gpus_per_node']} GPUs is {ratio:.0%} "
                    f"of the {exp / 1e9:.0f} GB/s the {layer} should give"
                ),
                "evidence": {
                    "rule": "underperformance.nccl_busbw",
                    "threshold_source": cfg["source"],
                    "measured_gb_per_s": r["busbw_gb_per_s"],
                    "expected_gb_per_s": exp / 1e9,
                    "ratio": ratio,
                    "expectation_source": basis,
                    "expected_assumed": assumed,
                    "gpu_name": gpu_name,
                    "n_ranks": r["n_ranks"],
                    "n_nodes": r["n_nodes"],
                    "gpus_per_node": r["gpus_per_node"],
                    "size_bytes": r["size_bytes"],
                    "placements": dict(zip(r["_places"], r["_all_busbw"], strict=True)),
                    "run": r["run"],
                },
            }
        )
    return rows


def _busy_but_slow(inp: AnalysisInput, cfg: dict[str, Any]) -> list[dict[str, Any]]:
    w = float(inp.config["bottleneck"]["window_s"])
    ports = network_ports(inp, w)
    if ports.is_empty():
        return []
    flagged = ports.filter(
        (pl.col("send_ratio") + pl.col("stall_ratio") >= cfg["busy_ratio"])
        & (pl.col("send_ratio") < cfg["counter_min_ratio"])
    ).with_columns(
        pl.col("window_start").alias("start"),
        (pl.col("window_start") + pl.duration(microseconds=round(w * 1e6))).alias("end"),
    )
    if flagged.is_empty():
        return []
    windows = merge_windows(
        flagged,
        keys=["host", "device", "_port"],
        max_gap_s=w,
        aggs=[
            pl.col("send_ratio").max().alias("peak_ratio"),
            pl.col("tx_bytes_per_s").max().alias("peak_bps"),
            (pl.col("send_ratio") + pl.col("stall_ratio")).mean().alias("busy"),
            pl.col("stall_ratio").mean().alias("stall"),
            pl.col("capacity_bytes_per_s").max().alias("line"),
            pl.col("capacity_source").first(),
            pl.col("counter_tx").first(),
        ],
    )
    rows = []
    for x in windows.iter_rows(named=True):
        rows.append(
            {
                "kind": KIND,
                # the cause (credits, pause) is ib_congestion's or pfc_*'s finding: this one states
                # achieved against expected without raising the status a second time
                "severity": "info",
                "host": x["host"],
                "device": x["device"],
                "port": None if x["_port"] == -1 else x["_port"],
                "layer": "network",
                "start": x["start"],
                "end": x["end"],
                "metric": "tx_bytes_per_s",
                "observed": x["peak_bps"],
                "expected": x["line"],
                "message": (
                    f"port busy {x['busy']:.0%} of the time (unable to send {x['stall']:.0%}) but moved at most "
                    f"{x['peak_ratio']:.0%} of its {x['line'] / 1e9:.0f} GB/s line rate"
                ),
                "evidence": {
                    "rule": "underperformance.busy_but_slow",
                    "threshold_source": cfg["source"],
                    "measured_bytes_per_s": x["peak_bps"],
                    "expected_bytes_per_s": x["line"],
                    "ratio": x["peak_ratio"],
                    "busy_ratio": x["busy"],
                    "stall_ratio": x["stall"],
                    "expectation_source": x["capacity_source"],
                    "metric": x["counter_tx"],
                    "windows": x["intervals"],
                    "window_s": w,
                },
            }
        )
    return rows


def detect(inp: AnalysisInput) -> pl.DataFrame:
    """Find measured throughput or latency short of what the hardware should give."""
    cfg = inp.config["underperformance"]
    facts = _facts(inp)
    rows = _perftest_bw(inp, cfg, facts) + _perftest_lat(inp, cfg) + _nccl(inp, cfg, facts) + _busy_but_slow(inp, cfg)
    return make_findings(rows)


SPEC = DetectorSpec(
    name=KIND,
    summary="perftest below 90% of port rate or over latency limits; nccl-tests busbw below 80% of what the "
    "log's topology should give; busy ports far below line rate",
    detect=detect,
    scope="fabric",
    rates_needed=no_rates,
    defaults={
        # perftest: the largest message size of each run (if >= perftest_min_size_bytes, perftest's default
        # BW message size) against the port rate (NVIDIA's pass criterion)
        "perftest_min_ratio": 0.90,
        "perftest_critical_ratio": 0.50,
        "perftest_min_size_bytes": 65536,
        "perftest_max_write_lat_us": 2.5,
        "perftest_max_read_lat_us": 4.5,
        # nccl-tests: bus bandwidth at the largest size >= nccl_min_size_bytes against the topology's expectation
        "nccl_min_ratio": 0.80,
        "nccl_critical_ratio": 0.50,
        "nccl_min_size_bytes": 1 << 30,
        # counters: a port busy (sending or waiting) this share of a window moving less than min_ratio of line rate
        "busy_ratio": 0.90,
        "counter_min_ratio": 0.50,
        # what a profile-less GPU or network is assumed to be (evidence says expected_assumed)
        "nvlink_profile": "nvlink4",
        "network_profile": "ndr400",
        "source": f"{NGC_PERF}; {NCCL_EXPECTED}; busy but slow at 90%/50%: "
        + default("a port busy nearly all the time should move at least half its line rate"),
    },
)
