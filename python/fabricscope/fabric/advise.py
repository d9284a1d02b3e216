"""``fabricscope advise``: the what-if of a cluster network choice, as tables.

Two questions, every default with its source:

* **All-reduce time** per gradient size, GPU count and network bandwidth. Flat ring over all GPUs,
  bound by each GPU's network share: ``2(n-1)/n x S / B_net``. Hierarchical (NVLink inside the
  node, then the network across nodes, then NVLink again): reduce-scatter and all-gather inside
  each node of ``g`` GPUs cost ``2(g-1)/g x S / B_nvlink``; the ``m = n/g`` nodes all-reduce each
  GPU's ``S/g`` shard over its own rail, ``2(m-1)/m x S / (g x B_net)``.
* **InfiniBand versus RoCEv2 break-even**: the fabric cost saved per GPU by RoCEv2 against the
  GPU time lost to its 5-15% throughput penalty on communication-bound work, per utilisation:
  payback years, the GPU-hour value and the utilisation at which the two break even.

Measured bandwidths from an analysis (perftest, single-node nccl-tests) replace profiled ones.

Example:
    >>> import polars as pl
    >>> from fabricscope.fabric.advise import advise, load_inputs
    >>> a = advise(load_inputs(gpus=[256], gradient_gb=[1.0, 10.0], bandwidth_gbps=[400.0]))
    >>> a.allreduce.select("gradient_gb", pl.col("flat_ring_ms", "hierarchical_ms").round(1)).rows()
    [(1.0, 42.4, 9.9), (10.0, 423.9, 98.7)]
    >>> a.breakeven.filter((a.breakeven["utilisation_ratio"] == 0.8) & (a.breakeven["penalty_ratio"] == 0.1))[
    ...     "choice"
    ... ].item()
    'infiniband'
"""

from __future__ import annotations

import dataclasses
import math
import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import polars as pl

from fabricscope.detect.config import read_toml
from fabricscope.fabric.profiles import get_profile

if TYPE_CHECKING:
    from fabricscope.pipeline import Analysis

__all__ = ["Advice", "AdviseInputs", "advise", "load_inputs"]

SCHEMA_ID = "fabricscope.advice/1"
HOURS_PER_YEAR = 8760.0

_NDR = get_profile("ndr400")
_NVL4 = get_profile("nvlink4")


def _f(default: Any, source: str) -> Any:
    if isinstance(default, tuple):
        return field(default_factory=lambda: default, metadata={"source": source})
    return field(default=default, metadata={"source": source})


_WHATIF = "fabricscope default (a what-if assumption): "


@dataclass
class AdviseInputs:
    """What the advisor computes with; every default names its source (``AdviseInputs.sources``).

    Attributes:
        gpus: GPU counts to evaluate.
        gpus_per_node: GPUs per node (one NVLink domain).
        gradient_gb: Gradient bytes all-reduced per step, GB (1e9 B).
        bandwidth_gbps: Network bandwidth per GPU (one NIC per GPU), Gb/s line rate.
        network_efficiency_ratio: Share of line rate NCCL reaches on the network (profiled runs).
        nvlink_gb_per_s: NVLink bandwidth per GPU NCCL reaches (bus bandwidth), GB/s.
        cluster_gpus: GPUs the fabric costs below are quoted for.
        ib_fabric_cost_usd: InfiniBand fabric cost (switches, cables, NICs) for ``cluster_gpus``.
        roce_fabric_cost_usd: RoCEv2 fabric cost for ``cluster_gpus``.
        penalty_ratio: RoCEv2 throughput penalties on communication-bound work to evaluate.
        utilisation_ratio: Cluster utilisations to evaluate.
        comm_bound_ratio: Share of the GPU time spent on communication-bound work.
        gpu_hour_usd: What one GPU-hour is worth (the rent it would fetch).
        lifetime_years: Years the fabric serves (the horizon of the break-even).
    """

    gpus: tuple[int, ...] = _f(
        (64, 256, 1024),
        _WHATIF + "< 128 GPUs matter less, a 256-GPU H100 cluster, > 512 GPUs favour IB",
    )
    gpus_per_node: int = _f(8, _WHATIF + "fully connected 8-GPU NVLink nodes")
    gradient_gb: tuple[float, ...] = _f(
        (1.0, 2.0, 5.0, 10.0),
        _WHATIF + "1-10 GB of gradients per step for a 70B model",
    )
    bandwidth_gbps: tuple[float, ...] = _f(
        (200.0, 400.0, 800.0), _WHATIF + "200 Gb/s RoCEv2, 400 Gb/s NDR, 800 Gb/s UEC"
    )
    network_efficiency_ratio: float = _f(
        round(_NDR.achievable_bytes_per_s / _NDR.line_rate_bytes_per_s, 4),
        f"profile ndr400 achievable: {_NDR.source}",
    )
    nvlink_gb_per_s: float = _f(round(_NVL4.achievable_bytes_per_s / 1e9, 2), f"profile nvlink4: {_NVL4.source}")
    cluster_gpus: int = _f(256, _WHATIF + "256-GPU H100 cluster")
    ib_fabric_cost_usd: float = _f(2.0e6, _WHATIF + "NDR400 fabric $1.5-2.5M for 256 GPUs, midpoint")
    roce_fabric_cost_usd: float = _f(1.15e6, _WHATIF + "400G RoCEv2 fabric $0.8-1.5M for 256 GPUs, midpoint")
    penalty_ratio: tuple[float, ...] = _f(
        (0.05, 0.10, 0.15),
        _WHATIF + "RoCEv2 5-15% slower on communication-bound training",
    )
    utilisation_ratio: tuple[float, ...] = _f(
        (0.3, 0.5, 0.8, 0.95),
        _WHATIF + "the 80% utilisation example; the others sweep around it",
    )
    comm_bound_ratio: float = _f(
        1.0,
        _WHATIF + "large-scale data-parallel training is communication-sensitive throughout",
    )
    gpu_hour_usd: float = _f(
        2.25,
        "H100/H200 on-demand ~$2.00-2.50 per GPU-hour, May 2026 (SpendArk via "
        "aitechconnect-976.pages.dev/news/h100-gpu-price-decline-2026-builders-guide); $1.99-5.00 across "
        "providers (mercatus-ai.com/blog/cloud-gpu-pricing)",
    )
    lifetime_years: float = _f(
        3.0, "3-year TCO horizon for owned H100 clusters (mercatus-ai.com/blog/cloud-gpu-pricing)"
    )
    overridden: dict[str, str] = field(default_factory=dict, repr=False)

    @property
    def sources(self) -> dict[str, str]:
        """Per input: where its value comes from (the default's source, or who overrode it)."""
        out = {}
        for f in dataclasses.fields(self):
            if f.name == "overridden":
                continue
            out[f.name] = self.overridden.get(f.name, f.metadata["source"])
        return out

    def values(self) -> dict[str, Any]:
        """The inputs as plain JSON values."""
        return {
            f.name: list(v) if isinstance(v := getattr(self, f.name), tuple) else v
            for f in dataclasses.fields(self)
            if f.name != "overridden"
        }


_FIELDS = {f.name: f for f in dataclasses.fields(AdviseInputs) if f.name != "overridden"}


def _coerce(name: str, value: Any) -> Any:
    f = _FIELDS.get(name)
    if f is None:
        raise ValueError(f"advise: unknown input {name!r}; known: {', '.join(_FIELDS)}")
    default = AdviseInputs().__getattribute__(name)
    kind = type(default[0]) if isinstance(default, tuple) else type(default)

    def one(v: Any) -> Any:
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise ValueError(f"advise: {name} must be a number, got {v!r}")
        x = kind(v)
        if not math.isfinite(x) or x <= 0 or (name.endswith("_ratio") and x > 1):
            raise ValueError(f"advise: {name} = {v!r} is out of range")
        return x

    if isinstance(default, tuple):
        items = value if isinstance(value, (list, tuple)) else [value]
        if not items:
            raise ValueError(f"advise: {name} needs at least one value")
        return tuple(one(v) for v in items)
    if isinstance(value, (list, tuple)):
        raise ValueError(f"advise: {name} takes one value")
    return one(value)


def load_inputs(path: str | os.PathLike[str] | None = None, **overrides: Any) -> AdviseInputs:
    """Defaults, then a TOML file (top level or an ``[advise]`` table), then keyword overrides.

    Args:
        path: TOML file with keys named like :class:`AdviseInputs` fields, e.g.
            ``gpus = [512]``, ``gradient_gb = [4.0]``, ``gpu_hour_usd = 3.0``.
        **overrides: Field values (None values are ignored, so CLI flags can be passed through).

    Returns:
        The inputs, with ``sources`` naming the file or ``override`` for changed values.

    Raises:
        ValueError: unknown key, wrong type, or a value out of range.
        OSError: the file cannot be read.

    Example:
        >>> from fabricscope.fabric.advise import load_inputs
        >>> i = load_inputs(gpus=512)
        >>> i.gpus, i.sources["gpus"], i.gpus_per_node
        ((512,), 'override', 8)
    """
    inp = AdviseInputs()
    given: list[tuple[str, Any, str]] = []
    if path is not None:
        data = read_toml(path)
        data = data.get("advise", data) if isinstance(data.get("advise"), dict) else data
        given += [(k, v, f"config {os.fspath(path)}") for k, v in data.items()]
    given += [(k, v, "override") for k, v in overrides.items() if v is not None]
    for name, value, who in given:
        setattr(inp, name, _coerce(name, value))
        inp.overridden[name] = who
    return inp


@dataclass
class Advice:
    """What :func:`advise` returns.

    Attributes:
        allreduce: Per gradient size, GPU count and bandwidth: flat ring and hierarchical time.
        breakeven: Per utilisation and penalty: InfiniBand versus RoCEv2 cost and payback.
        sources: Per input, where its value came from.
        inputs: The inputs used.
    """

    allreduce: pl.DataFrame
    breakeven: pl.DataFrame
    sources: dict[str, str]
    inputs: AdviseInputs

    def to_dict(self) -> dict[str, Any]:
        """The JSON document (``fabricscope.advice/1``)."""
        return {
            "schema": SCHEMA_ID,
            "inputs": self.inputs.values(),
            "sources": self.sources,
            "allreduce": self.allreduce.to_dicts(),
            "breakeven": self.breakeven.to_dicts(),
        }


def _measured(analysis: Analysis) -> dict[str, tuple[Any, str]]:
    """Bandwidths measured in an analysis: perftest per NIC, single-node nccl-tests for NVLink."""
    out: dict[str, tuple[Any, str]] = {}
    pt = analysis.tables.get("perftest_results")
    if pt is not None and not pt.is_empty():
        bw = pt.filter(
            (pl.col("kind") == "bw")
            & pl.col("bw_average_gbit_per_s").is_not_null()
            & ~pl.col("test").str.to_lowercase().str.contains("bidir")
        )
        if bw.height:
            best = bw.sort("bw_average_gbit_per_s", descending=True).row(0, named=True)
            out["bandwidth_gbps"] = (
                (best["bw_average_gbit_per_s"],),
                f"measured: perftest {best['test']} on {best['host']} {best['device'] or ''} "
                f"{best['bw_average_gbit_per_s']:.1f} Gb/s at {best['size_bytes']} B",
            )
            out["network_efficiency_ratio"] = (1.0, "measured bandwidth is already what the NIC achieves")
    nr = analysis.tables.get("nccl_results")
    if nr is not None and not nr.is_empty():
        single = nr.filter(
            (pl.col("n_nodes") == 1) & (pl.col("gpus_per_node") > 1) & pl.col("busbw_gb_per_s").is_not_null()
        )
        if single.height:
            top = single.filter(pl.col("size_bytes") == pl.col("size_bytes").max())
            best = top.sort("busbw_gb_per_s", descending=True).row(0, named=True)
            out["nvlink_gb_per_s"] = (
                best["busbw_gb_per_s"],
                f"measured: nccl-tests {best['collective']} busbw on {best['host']} at {best['size_bytes']} B "
                f"({best['gpus_per_node']} GPUs, one node)",
            )
    return out


def _allreduce(i: AdviseInputs) -> pl.DataFrame:
    g = pl.lit(float(i.gpus_per_node))
    n = pl.col("gpus").cast(pl.Float64)
    s = pl.col("gradient_bytes")
    b_net = pl.col("network_bytes_per_s")
    b_nvl = pl.lit(i.nvlink_gb_per_s * 1e9)
    # A job smaller than a node never leaves NVLink.
    in_node = n <= g
    nodes = (n / g).ceil()
    local = pl.min_horizontal(n, g)
    flat = pl.when(in_node).then(2 * (n - 1) / n * s / b_nvl).otherwise(2 * (n - 1) / n * s / b_net)
    hier = 2 * (local - 1) / local * s / b_nvl + pl.when(nodes > 1).then(
        2 * (nodes - 1) / nodes * s / (local * b_net)
    ).otherwise(0.0)
    df = (
        pl.DataFrame({"gradient_gb": list(i.gradient_gb)}, schema={"gradient_gb": pl.Float64})
        .join(pl.DataFrame({"gpus": list(i.gpus)}, schema={"gpus": pl.Int64}), how="cross")
        .join(
            pl.DataFrame({"bandwidth_gbps": list(i.bandwidth_gbps)}, schema={"bandwidth_gbps": pl.Float64}), how="cross"
        )
        .with_columns(
            (pl.col("gradient_gb") * 1e9).alias("gradient_bytes"),
            pl.lit(i.gpus_per_node, pl.Int64).alias("gpus_per_node"),
            (pl.col("bandwidth_gbps") * 1e9 / 8 * i.network_efficiency_ratio).alias("network_bytes_per_s"),
            pl.lit(i.nvlink_gb_per_s * 1e9).alias("nvlink_bytes_per_s"),
        )
        .with_columns(nodes.cast(pl.Int64).alias("nodes"), flat.alias("flat_ring_s"), hier.alias("hierarchical_s"))
        .with_columns(
            (pl.col("flat_ring_s") * 1e3).alias("flat_ring_ms"),
            (pl.col("hierarchical_s") * 1e3).alias("hierarchical_ms"),
            (pl.col("flat_ring_s") / pl.col("hierarchical_s")).alias("hierarchical_speedup_ratio"),
        )
    )
    return df.select(
        "gradient_gb",
        "gradient_bytes",
        "gpus",
        "gpus_per_node",
        "nodes",
        "bandwidth_gbps",
        "network_bytes_per_s",
        "nvlink_bytes_per_s",
        "flat_ring_s",
        "flat_ring_ms",
        "hierarchical_s",
        "hierarchical_ms",
        "hierarchical_speedup_ratio",
    ).sort("gpus", "bandwidth_gbps", "gradient_gb")


def _breakeven(i: AdviseInputs) -> pl.DataFrame:
    saving = (i.ib_fabric_cost_usd - i.roce_fabric_cost_usd) / i.cluster_gpus
    lost_h = HOURS_PER_YEAR * pl.col("utilisation_ratio") * i.comm_bound_ratio * pl.col("penalty_ratio")
    df = (
        pl.DataFrame({"utilisation_ratio": list(i.utilisation_ratio)}, schema={"utilisation_ratio": pl.Float64})
        .join(pl.DataFrame({"penalty_ratio": list(i.penalty_ratio)}, schema={"penalty_ratio": pl.Float64}), how="cross")
        .with_columns(
            pl.lit(i.comm_bound_ratio).alias("comm_bound_ratio"),
            pl.lit(i.ib_fabric_cost_usd / i.cluster_gpus).alias("ib_cost_per_gpu_usd"),
            pl.lit(i.roce_fabric_cost_usd / i.cluster_gpus).alias("roce_cost_per_gpu_usd"),
            pl.lit(saving).alias("saving_per_gpu_usd"),
            lost_h.alias("lost_gpu_hours_per_gpu_per_year"),
        )
        .with_columns(
            (pl.col("lost_gpu_hours_per_gpu_per_year") * i.gpu_hour_usd).alias("lost_usd_per_gpu_per_year"),
        )
        .with_columns(
            (pl.col("saving_per_gpu_usd") / pl.col("lost_usd_per_gpu_per_year")).alias("payback_years"),
            (pl.col("saving_per_gpu_usd") / (pl.col("lost_gpu_hours_per_gpu_per_year") * i.lifetime_years)).alias(
                "break_even_gpu_hour_usd"
            ),
            # the utilisation at which the GPU time lost over the lifetime equals the fabric saving
            (
                pl.lit(saving)
                / (HOURS_PER_YEAR * i.lifetime_years * i.comm_bound_ratio * pl.col("penalty_ratio") * i.gpu_hour_usd)
            ).alias("break_even_utilisation_ratio"),
        )
        .with_columns(
            pl.when(pl.col("payback_years") <= i.lifetime_years)
            .then(pl.lit("infiniband"))
            .otherwise(pl.lit("roce"))
            .alias("choice")
        )
    )
    return df.sort("utilisation_ratio", "penalty_ratio")


def advise(inputs: AdviseInputs | None = None, *, analysis: Analysis | None = None) -> Advice:
    """All-reduce times and the InfiniBand/RoCEv2 break-even for the given inputs.

    Args:
        inputs: From :func:`load_inputs` (default: every sourced default).
        analysis: A :func:`fabricscope.run_analysis` result; its measured bandwidths (perftest
            BW average per NIC, single-node nccl-tests bus bandwidth for NVLink) replace the
            profiled ones unless the inputs set them explicitly.

    Returns:
        An :class:`Advice`.
    """
    i = dataclasses.replace(inputs) if inputs is not None else AdviseInputs()
    i.overridden = dict(i.overridden)
    if analysis is not None:
        for name, (value, source) in _measured(analysis).items():
            if name not in i.overridden:
                setattr(i, name, value)
                i.overridden[name] = source
    return Advice(allreduce=_allreduce(i), breakeven=_breakeven(i), sources=i.sources, inputs=i)
