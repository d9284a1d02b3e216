"""``underperformance``: measured throughput or latency against what the hardware should give.

Three sources, each finding stating measured, expected, their ratio and the source of the
expectation:

* ``perftest_bw``: ``ib_*_bw`` BW average at the run's largest message size (at least
  ``perftest_min_size_bytes``, perftest's default 64 KiB: tiny messages measure message rate) below
  ``perftest_min_ratio`` (90%) of the port rate (NVIDIA ngc_multinode_perf pass criterion;
  bidirectional tests count both directions). The port rate is the port's rate gauge when the
  same analysis read it (sysfs or counters of the same host), else ``--profile``, else the
  fastest rate the device's hardware supports when its driver says so (``mlx4``: ConnectX-3,
  FDR 56 Gb/s or 40 GbE), else ``network_profile``. A rate that was not measured is marked
  ``expected_assumed``, named in the message, and caps the severity at warning.
* ``perftest_latency``: ``ib_{send,write}_lat`` typical latency above 2.5 µs, ``ib_read_lat``
  above 4.5 µs at the run's smallest size (same source).
* ``nccl_busbw``: nccl-tests bus bandwidth at the largest size of at least
  ``nccl_min_size_bytes`` below ``nccl_min_ratio`` (80%) of what the topology read from the log
  gives for the collective's traffic pattern (:func:`expected_busbw`): within one node the GPUs'
  NVLink generation (from the rank lines' GPU name); across nodes, ring collectives get the
  lesser of that and NICs per node x the NIC's achievable rate (46-48 GB/s per NDR400 NIC),
  all-to-all the per-GPU NIC share x N/(N-1) x (n-1)/n, send/recv one NIC. NICs per node: the
  host's ports in the same analysis, else one per GPU (DGX/HGX layout). The NVLink domain is the
  boundary, not the node: when every node of the run reports one NVLink domain (``nvidia-smi -q``
  ClusterUUID and CliqueId: an NVL72 rack), nodes of one domain are judged against NVLink as
  within a node, nodes of several against the network, and the evidence names the domains
  (``nvlink_domains``).
* ``busy_but_slow``: a NIC port busy (sending or unable to send: PortXmitWait, received pause)
  at least ``busy_ratio`` of a window while its throughput stayed below ``counter_min_ratio`` of
  its line rate (info: the cause is reported by ``ib_congestion`` or the PFC detectors).
"""

from __future__ import annotations

from typing import Any

import polars as pl

from fabricscope.detect._base import AnalysisInput, DetectorSpec, no_rates
from fabricscope.detect._common import port_facts
from fabricscope.detect._shared import network_ports
from fabricscope.fabric.profiles import (
    Profile,
    get_profile,
    nvlink_profile_for_gpu,
    profile_for_device,
    profile_for_port,
)
from fabricscope.fabric.relations import JOB, SAME_HOST, SAME_PORT, Relation
from fabricscope.incidents.findings import make_findings, merge_windows
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
    # A port without a port number in the perftest header (perftest prints none for the default
    # port) takes its device's rate when the same host measured exactly one port of that device.
    one_port = (
        facts.group_by("host", "device")
        .agg(pl.col("link_rate_bytes_per_s").first().alias("_dev_rate"), pl.len().alias("_ports"))
        .filter(pl.col("_ports") == 1)
        .drop("_ports")
        .with_columns(pl.col("host", "device").cast(pl.String))
    )
    largest = largest.join(one_port, on=["host", "device"], how="left")
    default = inp.profile or get_profile(cfg["network_profile"])
    rows = []
    for r in largest.iter_rows(named=True):
        directions = 2 if "bidir" in (r["test"] or "").lower() else 1
        measured_rate = r["link_rate_bytes_per_s"] or (r["_dev_rate"] if r["port"] is None else None)
        hardware = profile_for_device(r["device"], r["link_type"])
        if measured_rate is not None:
            line, basis, assumed = measured_rate, "port rate gauge", False
        elif inp.profile is not None:
            line, basis, assumed = inp.profile.line_rate_bytes_per_s, f"--profile {inp.profile.name}", False
        elif hardware is not None:
            # the device's driver bounds the rate: judge against the fastest link it supports
            prof, why = hardware
            line, basis, assumed = prof.line_rate_bytes_per_s, f"{why} (profile {prof.name})", True
        else:
            # an Ethernet port of the assumed rate is RoCE, not InfiniBand
            prof = profile_for_port(r["link_type"], default.line_rate_bytes_per_s, default.lanes) or default
            line, basis, assumed = prof.line_rate_bytes_per_s, f"profile {prof.name}", True
        expected_gbps = line * 8 / 1e9 * directions
        measured = r["bw_average_gbit_per_s"]
        ratio = measured / expected_gbps
        if ratio >= cfg["perftest_min_ratio"]:
            continue
        # Judged against a rate nothing in the input measured: the link may simply be slower than
        # assumed (an FDR10 port on an FDR-capable card), so this is at most a warning.
        critical = ratio < cfg["perftest_critical_ratio"] and not assumed
        rate_text = (
            f"{expected_gbps:.0f} Gb/s port rate"
            if not assumed
            else f"{expected_gbps:.0f} Gb/s assumed port rate ({basis}; no port rate in the input: "
            "add the host's sysfs or counters to judge against the real link)"
        )
        rows.append(
            {
                "kind": KIND,
                "severity": "critical" if critical else "warning",
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
                    f"{rate_text} (pass: >= {cfg['perftest_min_ratio']:.0%})"
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
                    "link_type": r["link_type"],
                    "mtu_bytes": r["mtu_bytes"],
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


# Traffic patterns of the nccl-tests collectives (doc/PERFORMANCE.md busbw factors). Ring
# collectives spread a node's traffic over all its NICs; all-to-all cannot aggregate NICs (each
# GPU sends through its own); point-to-point crosses nodes on one GPU's NIC.
RING = {"all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce"}
ALL_TO_ALL = {"alltoall"}
POINT_TO_POINT = {"sendrecv"}


def expected_busbw(
    gpu_name: str | None,
    n_nodes: int,
    gpus_per_node: int,
    *,
    nics_per_node: int | None = None,
    network: Profile | None = None,
    nvlink_default: str = "nvlink4",
    collective: str | None = None,
) -> tuple[float, str, str, bool] | None:
    """The bus bandwidth (bytes/s) nccl-tests should reach at large sizes for a topology.

    Within a node: the GPUs' NVLink (or PCIe) achievable rate. Across nodes it depends on the
    collective's traffic pattern, with ``B`` the NIC's achievable rate, ``N`` nodes, ``n`` ranks:

    * ring collectives (all-reduce, all-gather, reduce-scatter, broadcast, reduce; and unknown
      ones): the lesser of NVLink and NICs per node x ``B`` (every rail carries 1/NICs of the data);
    * all-to-all: each GPU sends the ``(N-1)/N`` of its data bound for other nodes through its
      own NIC share ``B x min(1, NICs/GPUs)``, so ``algbw = share x N/(N-1)`` and
      ``busbw = algbw x (n-1)/n`` (github.com/NVIDIA/nccl-tests/issues/130; ~1x the per-GPU NIC rate for many nodes);
    * send/recv: the ranks at a node boundary exchange through one NIC: ``B``.

    Args:
        gpu_name: GPU model (``NVIDIA H100 80GB HBM3``); None when unknown.
        n_nodes: Nodes in the run.
        gpus_per_node: GPUs per node.
        nics_per_node: NICs per node (None: one per GPU, as DGX/HGX systems are built).
        network: The NIC's profile (None: ``ndr400``).
        nvlink_default: Profile when the GPU model is unknown.
        collective: nccl-tests collective (``all_reduce``, ``alltoall``, ``sendrecv`` ...); None
            is judged as a ring collective.

    Returns:
        ``(expected_bytes_per_s, layer, basis, assumed)``: the limiting layer (``nvlink``, ``pcie``
        or ``network``), a sentence naming the sources, and whether a profile was assumed. None
        for a multi-node collective whose bound has no sourced formula (scatter, gather,
        hypercube).

    Example:
        >>> from fabricscope.detect.underperformance import expected_busbw
        >>> bw, layer, basis, assumed = expected_busbw("NVIDIA H100 80GB HBM3", 2, 8)
        >>> round(bw / 1e9, 1), layer, assumed
        (371.2, 'nvlink', False)
        >>> bw, layer, _, _ = expected_busbw("NVIDIA H100 80GB HBM3", 10, 8, collective="alltoall")
        >>> round(bw / 1e9, 1), layer
        (51.6, 'network')
    """
    gpu = nvlink_profile_for_gpu(gpu_name)
    assumed = gpu is None
    gpu = gpu or get_profile(nvlink_default)
    intra = gpu.achievable_bytes_per_s
    basis = f"{gpu.name} achievable {intra / 1e9:.0f} GB/s ({gpu.source})"
    if n_nodes <= 1:
        return intra, gpu.layer, basis, assumed
    name = collective or "unknown"
    if name not in RING | ALL_TO_ALL | POINT_TO_POINT and name != "unknown":
        return None
    net = network or get_profile("ndr400")
    nics = nics_per_node or gpus_per_node
    nic_assumption = "" if nics_per_node else " (one NIC per GPU assumed)"
    b = net.achievable_bytes_per_s
    assumed_nics = assumed or nics_per_node is None
    if name in ALL_TO_ALL:
        n_ranks = n_nodes * gpus_per_node
        share = b * min(1.0, nics / gpus_per_node)
        inter = share * n_nodes / (n_nodes - 1) * (n_ranks - 1) / n_ranks
        nic_basis = (
            f"all-to-all across {n_nodes} nodes: per-GPU NIC share {share / 1e9:.1f} GB/s ({nics} x {net.name} "
            f"achievable {b / 1e9:.0f} GB/s for {gpus_per_node} GPUs{nic_assumption}) x N/(N-1) x (n-1)/n "
            f"(github.com/NVIDIA/nccl-tests/issues/130, nccl-tests doc/PERFORMANCE.md; {net.source})"
        )
    elif name in POINT_TO_POINT:
        inter = b
        nic_basis = (
            f"send/recv across nodes: one {net.name} NIC per boundary pair, achievable {b / 1e9:.0f} GB/s "
            f"(doc/PERFORMANCE.md; {net.source})"
        )
    else:
        inter = nics * b
        nic_basis = f"{nics} x {net.name} achievable {b / 1e9:.0f} GB/s{nic_assumption} ({net.source})"
    if inter < intra:
        return inter, "network", f"{nic_basis}; NVLink allows more: {basis}", assumed_nics
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
    hosts_of_run: dict[int, list[set[str]]] = {}
    if ranks is not None and not ranks.is_empty():
        # each rank list (in read order, restarting at rank 0) is one log's run: two logs' run 0
        # are two jobs
        for run, rank, host in ranks.select("run", "rank", pl.col("host").cast(pl.String)).iter_rows():
            jobs = hosts_of_run.setdefault(run, [])
            if rank == 0 or not jobs:
                jobs.append(set())
            jobs[-1].add(host)
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
        domains = _run_domains(inp, hosts_of_run.get(r["run"], []), r["host"]) if r["n_nodes"] > 1 else None
        # Nodes of one NVLink domain (an NVL72 rack) exchange over NVLink: the bound is NVLink's,
        # as within a node. Nodes of several domains cross the network between them.
        one_domain = domains is not None and len(domains) == 1
        judged = expected_busbw(
            gpu_name,
            1 if one_domain else r["n_nodes"],
            r["gpus_per_node"],
            nics_per_node=known[0] if known else None,
            network=net,
            nvlink_default=cfg["nvlink_profile"],
            collective=r["collective"],
        )
        if judged is None:
            continue  # no sourced bound for this collective across nodes
        exp, layer, basis, assumed = judged
        if domains:
            basis += (
                f"; its {r['n_nodes']} nodes share the NVLink domain {next(iter(domains))}"
                if one_domain
                else f"; its nodes span the NVLink domains {', '.join(sorted(domains))}: "
                "the traffic between them crosses the network"
            )
        measured = r["busbw_gb_per_s"] * 1e9
        ratio = measured / exp
        if ratio >= cfg["nccl_min_ratio"]:
            continue
        # A network bound from an assumed NIC (none in the input, no --profile) may simply be the
        # wrong NIC: at most a warning, and the message says what was assumed.
        net_assumed = layer == "network" and inp.profile is None and known is None
        # Likewise a GPU-side bound from a GPU model the log does not name (or names generically,
        # "NVIDIA Graphics Device"): the assumed NVLink domain may not be the one in the run.
        gpu_assumed = layer != "network" and assumed
        should = f"the {exp / 1e9:.0f} GB/s the {layer} should give"
        if net_assumed:
            should += f" (assumed {net.name} NICs, one per GPU: no NIC in the input; add the hosts' sysfs or counters)"
        elif gpu_assumed:
            named = f"its GPU model {gpu_name!r} matches no profile" if gpu_name else "it names no GPU model"
            should += f" (assumed an {cfg['nvlink_profile']} NVLink domain: {named})"
        rows.append(
            {
                "kind": KIND,
                "severity": (
                    "critical" if ratio < cfg["nccl_critical_ratio"] and not (net_assumed or gpu_assumed) else "warning"
                ),
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
                    f"of {should}"
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
                    # where the run's nodes sit, when every node says (an NVL72 rack's trays)
                    **({"nvlink_domains": sorted(domains)} if domains else {}),
                },
            }
        )
    return rows


def _run_domains(inp: AnalysisInput, runs: list[set[str]], log_host: str) -> set[str] | None:
    """The NVLink domains of a run's nodes, None unless every node's GPUs name exactly one.

    Runs are numbered per log: of the runs with its number, the one whose ranks hold the log's
    host. A node whose GPUs report no domain (no ``nvidia-smi -q`` fabric block, no DCGM fabric
    fields) leaves the placement unknown, and the run is judged by its node count alone.
    """
    hosts = next((h for h in runs if log_host in h), None)
    if not hosts or not inp.fabric.nvlink_domains:
        return None
    by_host: dict[str, set[str]] = {}
    for (host, _device), domain in inp.fabric.nvlink_domains.items():
        by_host.setdefault(host, set()).add(domain)
    found = [by_host.get(h, set()) for h in hosts]
    if any(len(d) != 1 for d in found):
        return None
    return set().union(*found)


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


# a ring collective moves at its slowest hop: it slows with any fault on one of its ranks
RELATIONS = (
    Relation("link_loss_go_back_n", "consequence", "underperformance", (SAME_PORT, SAME_HOST, JOB)),
    Relation("pause_storm_head_of_line", "consequence", "underperformance", (SAME_PORT, SAME_HOST, JOB)),
    Relation("lossless_off_drops", "consequence", "underperformance", (SAME_PORT, SAME_HOST, JOB)),
    Relation("degraded_link_ring", "consequence", "underperformance", (SAME_PORT, SAME_HOST, JOB)),
    Relation("spine_credit_starvation", "consequence", "underperformance", (SAME_PORT, SAME_HOST, JOB)),
)


SPEC = DetectorSpec(
    name=KIND,
    summary="perftest below 90% of port rate or over latency limits; nccl-tests busbw below 80% of what the "
    "log's topology should give; busy ports far below line rate",
    detect=detect,
    scope="fabric",
    relations=RELATIONS,
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
    actions={
        "underperformance": (
            "measure {entity} against a known-good peer (ib_write_bw / nccl-tests on one pair) to separate NIC, PCIe "
            "slot and link; check its link width/speed and PCIe link (lspci -vv LnkSta) against the profile"
        ),
    },
)
