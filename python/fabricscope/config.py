"""Detector thresholds: defaults with their sources, overridable from a TOML file.

Every threshold a detector uses lives here; ``docs/detectors.md`` explains each with its source,
and every finding's evidence names the rule and the source of the threshold that fired.

TOML layout mirrors :data:`DEFAULTS`, e.g.::

    [link_errors.symbol_errors]
    warning_per_s = 0.01

    [ib_congestion]
    warning_wait_ratio = 0.2
"""

from __future__ import annotations

import copy
import os
import sys
from pathlib import Path
from typing import Any

__all__ = ["DEFAULTS", "load_config", "read_toml"]

NVSENTINEL = "NVIDIA/NVSentinel docs/configuration/nic-health-monitor.md"
IBQUERYERRORS = "rdma-core infiniband-diags ibqueryerrors (any error counter > 0)"
UFM_CBW = "UFM 'Congested Bandwidth %' event default 10% (UFM Enterprise telemetry docs)"
XMITWAIT_64 = "ibdiagnet congestion assessment: lost Gb/s = PortXmitWait x 64 / (t x 1e9) (formats.md 4.2)"
PFCWD = "SONiC/Juniper PFC watchdog: pause > 99% of a 200 ms detection window (sonic-swss #3036; prior-art b.4)"
MLX5_STORM = "mlx5 tx_pause_storm_{warning,error}_events 'should never increment under normal overload' (b.4)"
MLX5_PAUSE = "mlx5 counters.rst: rx pause = network cannot absorb the NIC; tx pause = NIC cannot absorb the network"
DCQCN = "DCQCN loop (prior-art b.4; node_exporter #2827, omnistat #317): rp_cnp_ignored 'should not raise' with CC on"
GBN = "prior-art b.5 go-back-N model 1/(1+p*W), go-back-0 (1-p)^M; article: RoCEv2 collapses at < 0.1% loss"
NGC_PERF = (
    "Mellanox/ngc_multinode_perf common.sh: ib_write_bw >= 90% of port rate; send/write lat <= 2.5 us, read <= 4.5 us"
)
NCCL_EXPECTED = (
    "prior-art (d): NDR400 46-48 GB/s per NIC (nccl-tests #290, #267); NVLink4 ring busbw ~370 GB/s (nccl-tests #212); "
    "NVLink5 830+ GB/s (nccl #1807); '> 20% below -> something is off' (alayanew nccl-tests reference table)"
)
NCCL_ACHIEVABLE = (
    "NCCL reaches ~80-85% of NVLink line rate (370/450, nccl-tests #212) and ~84% of PCIe Gen5 (nvbandwidth #24)"
)

DEFAULTS: dict[str, Any] = {
    "rates": {"gap_factor": 3.0, "min_gap_s": 0.0},
    # Flagged intervals up to this many sampling intervals apart are one finding (an intermittent
    # fault is one finding with a window, not one per burst).
    "merge": {"max_gap_factor": 6.0},
    "link_errors": {
        # warning_per_s: rate for a warning, averaged over the finding's window but at least over
        # window_s (or the whole observation when shorter); critical_per_s: peak rate of one
        # sampling interval for a critical; min_count: smallest increase that may raise anything.
        "symbol_errors": {
            "warning_per_s": 120 / 3600,
            "window_s": 3600.0,
            "critical_per_s": 10.0,
            "min_count": 1,
            "source": f"{NVSENTINEL}: symbol_error > 120/hour (IBTA BER 1e-12) drains; > 10/s degradation",
        },
        "port_rcv_errors": {
            "warning_per_s": 0.0,
            "window_s": 0.0,
            "critical_per_s": 10.0,
            "min_count": 1,
            "source": f"{IBQUERYERRORS}; {NVSENTINEL}: port_rcv_errors > 10/s",
        },
        "port_rcv_remote_physical_errors": {
            "warning_per_s": 0.0,
            "window_s": 0.0,
            "critical_per_s": 10.0,
            "min_count": 1,
            "source": f"{IBQUERYERRORS}; critical by analogy with port_rcv_errors",
        },
        "port_xmit_discards": {
            "warning_per_s": 0.0,
            "window_s": 0.0,
            "critical_per_s": 100.0,
            "min_count": 1,
            "source": f"{IBQUERYERRORS}; {NVSENTINEL}: port_xmit_discards > 100/s",
        },
        "local_link_integrity_errors": {
            "warning_per_s": 0.0,
            "window_s": 0.0,
            "critical_per_s": 0.0,
            "min_count": 1,
            "source": f"{NVSENTINEL}: any increase of local_link_integrity_errors is fatal",
        },
        "excessive_buffer_overrun_errors": {
            "warning_per_s": 0.0,
            "window_s": 0.0,
            "critical_per_s": 0.0,
            "min_count": 1,
            "source": f"{NVSENTINEL}: any increase of excessive_buffer_overrun_errors is fatal",
        },
        "link_error_recovery_events": {
            "warning_per_s": 0.0,
            "window_s": 0.0,
            "critical_per_s": 5 / 60,
            "min_count": 1,
            "source": f"{IBQUERYERRORS}; {NVSENTINEL}: link_error_recovery > 5/min",
        },
    },
    "link_flap": {
        "source_downed": f"{NVSENTINEL}: any link_downed increase is fatal; PDR plugin rule 1 (both ends)",
        "source_state": "Health Validation infiniband check: RDMA link outage is CRITICAL",
        "min_state_transitions": 2,
    },
    "link_degraded": {
        "majority_min_ports": 3,
        "critical_ratio": 0.5,
        "source": "rdma-core ibdiag 'Could be' rule; ibdiagnet Fabric Links Validation (expected speed/width)",
    },
    "ib_congestion": {
        "bits_per_tick": 64,
        "warning_wait_ratio": 0.10,
        "critical_wait_ratio": 0.50,
        "source": f"{UFM_CBW}; tick conversion: {XMITWAIT_64}; critical 50% is a fabricscope default",
    },
    "counter_anomaly": {
        "source": "fabricscope rate engine flags (resets, saturation, wraps, gaps)",
        # a pegged error register is a lower bound on the events since the last clear
        "source_saturated_errors": "IBTA PortCounters: error counters stop at their maximum (perfquery(8), "
        "ibqueryerrors(8)); a pegged register proves at least 2^bits-1 events since the last clear",
    },
    "pfc_storm": {
        # storm_ratio of at least window_s (or one sampling interval when longer); NIC watchdog
        # events; or pause of at least unbroken_ratio with no Xoff->Xon transition while the
        # paused direction's bytes on that priority fall to collapse_ratio of their p90.
        "storm_ratio": 0.99,
        "window_s": 0.2,
        "unbroken_ratio": 0.95,
        "collapse_ratio": 0.10,
        "source": f"{PFCWD}; {MLX5_STORM}; unbroken pause with collapse: Microsoft NIC watchdog (SIGCOMM'16)",
    },
    "pfc_congestion": {
        # time-weighted pause ratio over the trailing sustain_s (or one longer interval)
        "warning_ratio": 0.05,
        "critical_ratio": 0.50,
        "sustain_s": 20.0,
        "source": f"{MLX5_PAUSE}; prior-art b.4 '> few % sustained = chronic congestion'; 5%/50%/20 s fabricscope",
    },
    "ecn_congestion": {
        "warning_marked_ratio": 0.01,
        "critical_marked_ratio": 0.10,
        "min_marks": 100,
        "min_loop_ratio": 0.5,
        "mtu_bytes": 4096,
        "source": f"{DCQCN}; marked-share 1%/10% and CNP balance 0.5 are fabricscope defaults",
    },
    "packet_loss": {
        "warning_p": 1e-6,
        "min_events": 10,
        "mtu_bytes": 4096,
        "source": "mlx5 RoCE loss counters (prior-art b.5); a lossless fabric should lose nothing; "
        "p >= 1e-6 with >= 10 events is a fabricscope default, 1000x below the 0.1% collapse line",
    },
    "lossy_collapse": {
        "collapse_p": 1e-3,
        "rtt_us": 10.0,
        "mtu_bytes": 4096,
        "message_bytes": 4 * 1024 * 1024,
        "min_efficiency": 0.9,
        "max_drop_ratio": 0.1,
        "source": f"{GBN}; RTT 10 us, 4 KB MTU, 4 MB messages as in prior-art b.5",
    },
    "underperformance": {
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
        "source": f"{NGC_PERF}; {NCCL_EXPECTED}; busy-but-slow 90%/50% is a fabricscope default",
    },
    "bottleneck": {
        # windows on a grid of window_s; a layer at or above saturated_ratio of its capacity is saturated
        "window_s": 60.0,
        "saturated_ratio": 0.90,
        "comm_bound_ratio": 0.50,
        "nvlink_profile": "nvlink4",
        "pcie_profile": "pcie5x16",
        "cxl_profile": "cxl2x8",
        "network_profile": "ndr400",
        "source": f"{NGC_PERF} (a link moving >= 90% of its rate is at its ceiling: NCCL reaches 92-96% of NDR, "
        f"nccl-tests #290); {NCCL_ACHIEVABLE}; communication-bound at >= 50% average use of the busiest layer "
        "is a fabricscope default",
    },
    "lossless_misconfig": {
        "min_events": 10,
        "source": "article: RoCEv2 needs PFC and ECN; NetQ 'check roce' / host-side lossless config (prior-art b.4); "
        "mlx5 emits rx_prio<p>_pause only for PFC-enabled priorities (formats.md 2.2)",
    },
}


def _merge(base: dict[str, Any], over: dict[str, Any], path: str) -> None:
    for k, v in over.items():
        if k not in base:
            raise ValueError(f"config: unknown key {path}{k}")
        if isinstance(base[k], dict):
            if not isinstance(v, dict):
                raise ValueError(f"config: {path}{k} must be a table")
            _merge(base[k], v, f"{path}{k}.")
        else:
            if isinstance(base[k], (int, float)) and not isinstance(v, (int, float)):
                raise ValueError(f"config: {path}{k} must be a number")
            base[k] = v


def load_config(path: str | os.PathLike[str] | None = None) -> dict[str, Any]:
    """Defaults, overridden by a TOML file when given.

    Raises:
        ValueError: unknown keys or wrong types (the message names the key).
        OSError: the file cannot be read.

    Example:
        >>> from fabricscope.config import load_config
        >>> load_config()["ib_congestion"]["warning_wait_ratio"]
        0.1
    """
    cfg = copy.deepcopy(DEFAULTS)
    if path is None:
        return cfg
    _merge(cfg, read_toml(path), "")
    return cfg


def read_toml(path: str | os.PathLike[str]) -> dict[str, Any]:
    """A TOML file as a dict.

    Raises:
        ValueError: the file is not valid TOML (the message names the file and where).
        OSError: the file cannot be read.
    """
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10
        import tomli as tomllib
    with Path(path).open("rb") as f:
        try:
            return tomllib.load(f)
        except tomllib.TOMLDecodeError as e:
            raise ValueError(f"config {os.fspath(path)}: {e}") from e
