"""Public documents that thresholds and models cite.

Every threshold's ``source`` in :data:`fabricscope.detect.config.DEFAULTS` and in a finding's evidence names a
document a user can open (a vendor manual page, a kernel document, a project's file or issue, a paper),
or says ``fabricscope default: <why>``. The constants here are those citations, written once.
"""

from __future__ import annotations

__all__ = [
    "DCGM_HEALTH",
    "DCQCN",
    "GBN",
    "IBQUERYERRORS",
    "MLX5_PAUSE",
    "MLX5_STORM",
    "NCCL_ACHIEVABLE",
    "NCCL_EXPECTED",
    "NGC_PERF",
    "NVSENTINEL",
    "PFCWD",
    "UFM_CBW",
    "XMITWAIT_64",
    "XOFF_QUANTA",
    "default",
]

DCGM_HEALTH = (
    "NVIDIA DCGM modules/health/DcgmHealthWatch.cpp MonitorNvLinkErrorCounts and DcgmGPUHardwareLimits.h "
    "(https://github.com/NVIDIA/DCGM)"
)
NVSENTINEL = "NVIDIA NVSentinel, docs/configuration/nic-health-monitor.md (https://github.com/NVIDIA/NVSentinel)"
IBQUERYERRORS = "ibqueryerrors(8), rdma-core infiniband-diags: any error counter above its threshold, default 0"
UFM_CBW = (
    "NVIDIA UFM Enterprise User Manual, Telemetry: 'Congested Bandwidth %' event, default 10% "
    "(https://docs.nvidia.com/networking/display/ufmenterpriseumv6156/telemetry)"
)
XMITWAIT_64 = (
    "ibdiagnet(1) congestion assessment: lost bandwidth = PortXmitWait x 64 bits per tick / interval "
    "(NVIDIA ibdiagnet User Manual)"
)
PFCWD = (
    "SONiC PFC watchdog: storm when pause blocks > 99% of a 200 ms detection window "
    "(https://github.com/sonic-net/sonic-swss/pull/3036); Juniper 'Configuring PFC Watchdog'"
)
MLX5_STORM = (
    "Linux kernel Documentation/networking/device_drivers/ethernet/mellanox/mlx5/counters.rst: "
    "tx_pause_storm_warning_events/tx_pause_storm_error_events (device stalled, pause storm prevention)"
)
XOFF_QUANTA = (
    "IEEE 802.1Qbb / 802.3 Annex 31D: a PFC XOFF pauses a priority for its quanta x 512 bit times, at most "
    "65535 quanta; a sender keeps a priority paused by refreshing XOFF before the quanta expire and ends "
    "the pause with an XON (quanta 0). Intel E810 (ice) counts XOFF and XON frames per priority "
    "(ice_ethtool.c rx/tx_priority_<p>_xoff.nic) and no pause time; 100 Gb/s is the E810's fastest link"
)
MLX5_PAUSE = (
    "Linux kernel Documentation/networking/device_drivers/ethernet/mellanox/mlx5/counters.rst: rx pause = the "
    "network cannot absorb the NIC's traffic; tx pause = the NIC cannot absorb the network's traffic"
)
DCQCN = (
    "DCQCN (Zhu et al., 'Congestion Control for Large-Scale RDMA Deployments', SIGCOMM 2015); mlx5 counters "
    "np_cnp_sent/rp_cnp_handled/rp_cnp_ignored (https://github.com/prometheus/node_exporter/pull/2827)"
)
GBN = (
    "go-back-N efficiency 1/(1+p*W) and go-back-0 (1-p)^M (Mittal et al., 'Revisiting Network Support for RDMA', "
    "SIGCOMM 2018; Guo et al., 'RDMA over Commodity Ethernet at Scale', SIGCOMM 2016: 1/256 loss -> zero goodput)"
)
NGC_PERF = (
    "NVIDIA ngc_multinode_perf common.sh (https://github.com/Mellanox/ngc_multinode_perf): ib_write_bw >= 90% of "
    "the port rate; send/write latency <= 2.5 us, read <= 4.5 us"
)
NCCL_EXPECTED = (
    "NDR400 46-48 GB/s per NIC (https://github.com/NVIDIA/nccl-tests/issues/290); NVLink4 ring busbw ~370 GB/s "
    "(https://github.com/NVIDIA/nccl-tests/issues/212); NVLink5 830+ GB/s (https://github.com/NVIDIA/nccl/issues/1807)"
)
NCCL_ACHIEVABLE = (
    "NCCL reaches ~80-85% of NVLink line rate (https://github.com/NVIDIA/nccl-tests/issues/212) and ~84% of "
    "PCIe Gen5 (https://github.com/NVIDIA/nvbandwidth/issues/24)"
)


def default(why: str) -> str:
    """A threshold chosen by fabricscope, with the reason.

    Example:
        >>> from fabricscope.sources import default
        >>> default("a lossless fabric should lose nothing")
        'fabricscope default: a lossless fabric should lose nothing'
    """
    return f"fabricscope default: {why}"
