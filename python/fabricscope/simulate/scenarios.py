"""Named scenarios: a fabric, a workload, faults and traps, and what a correct analysis reports.

Fault windows are fractions of the duration so ``--duration`` and ``--hosts`` keep them inside the
trace. Host names carry a per-scenario prefix, so analysing several scenarios together never
mixes their series.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from fabricscope.simulate.model import Fault, Workload

__all__ = ["SCENARIOS", "Scenario"]


@dataclass
class Scenario:
    """A scenario definition.

    Attributes:
        name: CLI name.
        summary: One line for ``--list`` and the README.
        tech: Technology key.
        hosts: Default host count.
        nics: NICs per host.
        workload: The workload.
        faults: Builder ``(hosts, duration) -> faults``.
        expected: Builder ``(hosts, duration) -> expected findings`` (dicts with ``kind``,
            ``severity`` (floor), ``host`` (index), ``nic``, ``priority``, ``layer``, ``start``,
            ``end`` (seconds; None = trace bounds), ``note``).
        allowed: Builder of findings that may appear but are not required (``kind``, ``host``, ``nic``;
            ``host`` ``"topology"``: any finding of that kind read from the topology dump).
        must_not: Builder of (host, nic or None, reason): no warning or critical finding there.
        formats: Default formats.
        hosts_per_leaf: Hosts per leaf switch.
        spines: Spine switches (every leaf is cabled to each).
        oversubscription: Leaf oversubscription.
        duration: Default seconds.
        interval: Default sampling interval.
        topology: Write the fabric's ``ibnetdiscover -p`` (InfiniBand scenarios).
        jobs: Builder of nccl-tests ``all_reduce_perf`` runs: ``{"hosts": [index...], "at": seconds}``.
        incidents: Builder of expected incidents: ``root`` (``kind``, ``host``, ``nic``, ``peer``: the
            leaf port at the cable's far end when the topology is written), ``members`` (findings the
            incident must hold: ``kind``, ``host``), ``optional`` (findings it may hold).
        separate: Builder of host-index groups that no incident may join (unrelated faults).
        nic_driver: The Ethernet driver whose ``ethtool -S`` dialect the ethtool logs are written in:
            ``mlx5`` (default), ``bnxt_en`` (Broadcom) or ``ice`` (Intel E810).
    """

    name: str
    summary: str
    tech: str
    hosts: int
    nics: int
    workload: Workload
    faults: Callable[[int, float], list[Fault]]
    expected: Callable[[int, float], list[dict[str, Any]]] = lambda h, d: []
    allowed: Callable[[int, float], list[dict[str, Any]]] = lambda h, d: []
    must_not: Callable[[int, float], list[tuple[int, int | None, str]]] = lambda h, d: []
    formats: tuple[str, ...] = ("prometheus", "sysfs")
    hosts_per_leaf: int = 4
    spines: int = 2
    oversubscription: float = 1.0
    duration: float = 240.0
    interval: float = 10.0
    prefix: str = ""
    extra: dict[str, Any] = field(default_factory=dict)
    topology: bool = False
    jobs: Callable[[int, float], list[dict[str, Any]]] = lambda h, d: []
    incidents: Callable[[int, float], list[dict[str, Any]]] = lambda h, d: []
    separate: Callable[[int, float], list[list[int]]] = lambda h, d: []
    nic_driver: str = "mlx5"


def _all(h: int, reason: str) -> list[tuple[int, int | None, str]]:
    return [(i, None, reason) for i in range(h)]


_TRAIN = Workload("training", gradient_bytes=4e9, compute_s=1.2)
_ROCE_FMT = ("ethtool", "sysfs-grep")
_ALLTOALL = Workload("alltoall", gradient_bytes=4e9, compute_s=1.2)
_ALLTOALL_TWO_JOBS = Workload("alltoall", gradient_bytes=4e9, compute_s=1.2, groups=2)
_LOSS_KINDS = ("packet_loss", "lossy_collapse", "underperformance", "bottleneck")
_LINK_VICTIM_KINDS = ("packet_loss", "ib_congestion", "counter_anomaly", "underperformance", "bottleneck", "port_down")
_STORM_VICTIM_KINDS = ("pfc_storm", "pfc_congestion", "packet_loss", "lossy_collapse", "underperformance", "bottleneck")


def _fan_in_allowed(h: int) -> list[dict[str, Any]]:
    """What a lossy NIC's exchange partners may show besides their loss: its consequences, no fault of theirs."""
    return [{"kind": k, "host": i, "nic": None} for i in range(h) for k in _LOSS_KINDS]


SCENARIOS: dict[str, Scenario] = {
    s.name: s
    for s in [
        Scenario(
            "pfc-storm",
            "RoCE 400G ring all-reduce; one NIC's receive pipeline stalls and it pauses priority 3 for 40% of the run",
            "roce400",
            4,
            1,
            _TRAIN,
            lambda h, d: [Fault("pfc_storm", 2 % h, 0, 0.3 * d, 0.4 * d)],
            expected=lambda h, d: [
                {
                    "kind": "pfc_storm",
                    "severity": "critical",
                    "host": 2 % h,
                    "nic": 0,
                    "priority": 3,
                    "start": 0.3 * d,
                    "end": 0.7 * d,
                    "note": "tx_prio3_pause_duration ~97% of each interval, tx_pause_storm_* events",
                }
            ],
            allowed=lambda h, d: (
                [{"kind": k, "host": (2 - 1) % h, "nic": 0} for k in ("pfc_storm", "pfc_congestion")]
                + [{"kind": k, "host": 2 % h, "nic": 0} for k in ("pfc_congestion", "packet_loss")]
                + [{"kind": k, "host": i, "nic": 0} for i in range(h) for k in ("underperformance", "bottleneck")]
            ),
            formats=("ethtool", "prometheus"),
            prefix="pfcstorm",
        ),
        *[
            Scenario(
                f"pfc-storm-{vendor}",
                f"pfc-storm on {nic}: the storming NIC's ethtool -S in the {driver} dialect ({counters})",
                "roce400",
                4,
                1,
                _TRAIN,
                lambda h, d: [Fault("pfc_storm", 2 % h, 0, 0.3 * d, 0.4 * d)],
                expected=lambda h, d, note=note: [
                    {
                        "kind": "pfc_storm",
                        "severity": "critical",
                        "host": 2 % h,
                        "nic": 0,
                        "priority": 3,
                        "start": 0.3 * d,
                        "end": 0.7 * d,
                        "note": note,
                    }
                ],
                allowed=lambda h, d: (
                    [{"kind": k, "host": (2 - 1) % h, "nic": 0} for k in ("pfc_storm", "pfc_congestion")]
                    + [{"kind": k, "host": 2 % h, "nic": 0} for k in ("pfc_congestion", "packet_loss")]
                    + [{"kind": k, "host": i, "nic": 0} for i in range(h) for k in ("underperformance", "bottleneck")]
                ),
                formats=("ethtool",),
                prefix=f"pfcstorm{vendor}",
                nic_driver=driver,
            )
            for vendor, nic, driver, counters, note in [
                (
                    "bnxt",
                    "Broadcom Thor (bnxt_en)",
                    "bnxt_en",
                    "pfc_pri3_tx_duration_us, tx_pfc_ena_frames_pri3; no storm watchdog counters",
                    "pfc_pri3_tx_duration_us ~97% of each interval",
                ),
                (
                    "ice",
                    "Intel E810 (ice)",
                    "ice",
                    "tx_priority_3_xoff.nic / _xon.nic frame counts only, no pause duration",
                    "tx_priority_3_xoff.nic refreshed every half quanta with no XON for 40% of the run",
                ),
            ]
        ],
        Scenario(
            "lossy-link",
            "RoCE 400G; the cable into one NIC drops 0.05% of packets: go-back-N retransmissions, ~94% goodput",
            "roce400",
            4,
            1,
            _TRAIN,
            lambda h, d: [Fault("lossy_link", 1 % h, 0, 0.2 * d, 0.6 * d, {"p": 5e-4})],
            expected=lambda h, d: [
                {
                    "kind": "packet_loss",
                    "severity": "warning",
                    "host": 1 % h,
                    "nic": 0,
                    "start": 0.2 * d,
                    "end": 0.8 * d,
                    "note": "out_of_sequence and rx_crc_errors_phy on the receiver, packet_seq_err at the sender",
                }
            ],
            allowed=lambda h, d: (
                [{"kind": "packet_loss", "host": 0, "nic": 0}]
                + [{"kind": k, "host": i, "nic": 0} for i in range(h) for k in ("underperformance", "bottleneck")]
            ),
            formats=_ROCE_FMT,
            prefix="lossy",
            # the receiver's loss and its ring predecessor's retransmissions are the same events
            incidents=lambda h, d: [
                {
                    "rule": "link_loss_go_back_n",
                    "root": {"kind": "packet_loss", "host": 1 % h, "nic": 0},
                    "members": [{"kind": "packet_loss", "host": 0}],
                    "optional": [{"kind": k, "host": i} for i in range(h) for k in ("underperformance", "bottleneck")],
                }
            ],
            separate=lambda h, d: [[0, 1 % h], *[[i] for i in range(2, h)]],
        ),
        Scenario(
            "lossy-collapse",
            "RoCE 400G; 1.5% loss into one NIC: go-back-N goodput collapses to ~36% for the whole ring",
            "roce400",
            4,
            1,
            _TRAIN,
            lambda h, d: [Fault("lossy_link", 1 % h, 0, 0.3 * d, 0.5 * d, {"p": 1.5e-2})],
            expected=lambda h, d: [
                {
                    "kind": "lossy_collapse",
                    "severity": "critical",
                    "host": 1 % h,
                    "nic": 0,
                    "start": 0.3 * d,
                    "end": 0.8 * d,
                    "note": "p ~1.5e-2 with W ~120: modelled go-back-N efficiency 1/(1+pW) ~ 36%",
                }
            ],
            allowed=lambda h, d: (
                [{"kind": "packet_loss", "host": i, "nic": 0} for i in (0, 1 % h)]
                + [{"kind": "lossy_collapse", "host": 0, "nic": 0}]  # the sender sees the same loss as NAKs
                + [{"kind": k, "host": i, "nic": 0} for i in range(h) for k in ("underperformance", "bottleneck")]
            ),
            formats=_ROCE_FMT,
            prefix="collapse",
            incidents=lambda h, d: [
                {
                    "rule": "link_loss_go_back_n",
                    "root": {"kind": "lossy_collapse", "host": 1 % h, "nic": 0},
                    "members": [{"kind": "packet_loss", "host": 0}],
                    "optional": [
                        {"kind": k, "host": i}
                        for i in range(h)
                        for k in ("packet_loss", "lossy_collapse", "underperformance", "bottleneck")
                    ],
                }
            ],
        ),
        Scenario(
            "roce-no-lossless",
            "RoCE 400G; one host has PFC and DCQCN disabled on priority 3 (config drift): drops instead of pauses",
            "roce400",
            4,
            1,
            _TRAIN,
            lambda h, d: [Fault("no_lossless", 2 % h, 0, 0.0, None)],
            expected=lambda h, d: [
                {
                    "kind": "lossless_misconfig",
                    "severity": "warning",
                    "host": 2 % h,
                    "nic": 0,
                    "note": "no rx/tx_prio3_pause counters, ecn/roce_np/enable/3 = 0, drops (out_of_sequence)",
                }
            ],
            allowed=lambda h, d: [
                {"kind": k, "host": i, "nic": 0}
                for i in ((2 - 1) % h, 2 % h)
                for k in ("packet_loss", "ecn_congestion")
            ],
            formats=_ROCE_FMT,
            prefix="nolossless",
            # ibdev2netdev joins each NIC's ethtool name (eth0) to its sysfs name (mlx5_0 port 1)
            extra={"ibdev2netdev": True},
            incidents=lambda h, d: [
                {
                    "rule": "lossless_off_drops",
                    "root": {"kind": "lossless_misconfig", "host": 2 % h, "nic": 0},
                    "members": [{"kind": "packet_loss", "host": 1 % h}, {"kind": "packet_loss", "host": 2 % h}],
                    "optional": [{"kind": "lossless_misconfig", "host": 2 % h}]
                    + [{"kind": k, "host": i} for i in range(h) for k in ("underperformance", "bottleneck")],
                }
            ],
        ),
        Scenario(
            "ecn-incast",
            "RoCE 400G disaggregated inference; all prefill hosts stream KV cache into one decode host (4:1 incast)",
            "roce400",
            6,
            1,
            Workload("inference", load=0.45, prefill_share=4 / 6),
            lambda h, d: [Fault("incast", h - 1, 0, 0.4 * d, 0.4 * d)],
            expected=lambda h, d: [
                {
                    "kind": "ecn_congestion",
                    "severity": "warning",
                    "host": h - 1,
                    "nic": 0,
                    "start": 0.4 * d,
                    "end": 0.8 * d,
                    "note": "np_ecn_marked_roce_packets and np_cnp_sent on the receiver; rp_cnp_handled on the senders",
                }
            ],
            allowed=lambda h, d: (
                [{"kind": k, "host": i, "nic": 0} for i in range(h) for k in ("pfc_congestion", "ecn_congestion")]
                # decode hosts receive 2:1 (82% of line) and the incast victim at line rate: their network saturates
                + [{"kind": "bottleneck", "host": i, "nic": 0} for i in range(round(h * 4 / 6), h)]
            ),
            formats=_ROCE_FMT,
            prefix="incast",
        ),
        Scenario(
            "ib-symbol-errors",
            "NDR400; a marginal cable on one HCA port: ~20 symbol errors/s and receive errors",
            "ndr400",
            4,
            1,
            _TRAIN,
            lambda h, d: [Fault("symbol_errors", 1 % h, 0, 0.2 * d, None, {"rate_per_s": 20.0})],
            expected=lambda h, d: [
                {
                    "kind": "link_errors",
                    "severity": "critical",
                    "host": 1 % h,
                    "nic": 0,
                    "start": 0.2 * d,
                    "end": d,
                    "note": "symbol_error > 10/s (NVSentinel degradation), port_rcv_errors",
                }
            ],
            allowed=lambda h, d: [{"kind": "packet_loss", "host": i, "nic": 0} for i in (0, 1 % h)],
            prefix="symerr",
        ),
        Scenario(
            "link-flap",
            "NDR400; one HCA port goes down twice for ~12 s (link_downed, state DOWN/Polling), the ring stalls",
            "ndr400",
            4,
            1,
            _TRAIN,
            lambda h, d: [
                Fault(
                    "link_flap", 2 % h, 0, 0.0, None, {"at": [round(0.33 * d) - 1, round(0.83 * d) - 1], "down_s": 12.0}
                )
            ],
            expected=lambda h, d: [
                {
                    "kind": "link_flap",
                    "severity": "critical",
                    "host": 2 % h,
                    "nic": 0,
                    "start": 0.33 * d - 11,
                    "end": 0.83 * d + 21,
                    "note": "link_downed +2, port_state 4 -> 1 -> 4 twice",
                }
            ],
            allowed=lambda h, d: (
                [{"kind": k, "host": i, "nic": 0} for i in range(h) for k in ("underperformance", "bottleneck")]
                # the ring predecessor holds data for the down port: it waits for credits while the link is down
                + [{"kind": "ib_congestion", "host": (2 - 1) % h, "nic": 0}]
            ),
            prefix="flap",
        ),
        Scenario(
            "link-degraded",
            "NDR400; one port trained at 2X width and another at HDR speed (both 200 Gb/s) among 4X NDR peers",
            "ndr400",
            4,
            2,
            _TRAIN,
            lambda h, d: [
                Fault("degraded", 1 % h, 0, params={"width": 2}),
                Fault("degraded", 3 % h, 1, params={"speed": ("HDR", 50)}),
            ],
            expected=lambda h, d: [
                {
                    "kind": "link_degraded",
                    "severity": "critical",
                    "host": 1 % h,
                    "nic": 0,
                    "note": "200 Gb/sec (2X NDR)",
                },
                {
                    "kind": "link_degraded",
                    "severity": "critical",
                    "host": 3 % h,
                    "nic": 1,
                    "note": "200 Gb/sec (4X HDR)",
                },
            ],
            allowed=lambda h, d: [
                {"kind": k, "host": i, "nic": n}
                for i in range(h)
                for n in (0, 1)
                for k in ("underperformance", "bottleneck")
            ],
            prefix="degraded",
        ),
        Scenario(
            "ib-congestion",
            "NDR400 inference across a 2:1 oversubscribed leaf pair: prefill HCAs wait for credits ~35% of the time",
            "ndr400",
            6,
            1,
            Workload("inference", load=0.9, prefill_share=0.5),
            lambda h, d: [],
            expected=lambda h, d: [
                {
                    "kind": "ib_congestion",
                    "severity": "warning",
                    "host": i,
                    "nic": 0,
                    "note": "PortXmitWait ~35% of the time",
                }
                for i in range(h // 2)
            ],
            allowed=lambda h, d: [
                {"kind": k, "host": i, "nic": 0} for i in range(h) for k in ("underperformance", "bottleneck")
            ],
            must_not=lambda h, d: [
                (i, None, "decode hosts receive; they do not wait for credits") for i in range(h // 2, h)
            ],
            hosts_per_leaf=3,
            oversubscription=2.0,
            prefix="ibcong",
        ),
        Scenario(
            "nvlink-saturated",
            "NDR400 training; one node's GPUs run NVLink at ~97% of 450 GB/s (tensor-parallel bound), the ring slows",
            "ndr400",
            4,
            1,
            _TRAIN,
            lambda h, d: [Fault("nvlink_saturated", 2 % h, None, 0.2 * d, None)],
            expected=lambda h, d: [
                {
                    "kind": "bottleneck",
                    "severity": "warning",
                    "host": 2 % h,
                    "nic": None,
                    "layer": "nvlink",
                    "start": 0.2 * d,
                    "end": d,
                    "note": "DCGM_FI_PROF_NVLINK_TX_BYTES ~97% of 450 GB/s on every GPU",
                }
            ],
            allowed=lambda h, d: [{"kind": "underperformance", "host": i, "nic": None} for i in range(h)],
            prefix="nvlink",
        ),
        Scenario(
            "nvlink-bound",
            "NDR400 training with 8-way tensor parallelism in every node: NVLink ~90% of 450 GB/s, network ~10%, "
            "PCIe light",
            "ndr400",
            3,
            1,
            Workload("training", gradient_bytes=4e9, compute_s=1.2, nvlink_share=0.9, pcie_h2d_bytes_per_s=2e9),
            lambda h, d: [],
            expected=lambda h, d: [
                {
                    "kind": "bottleneck",
                    "severity": "warning",
                    "host": i,
                    "nic": None,
                    "layer": "nvlink",
                    "note": "DCGM_FI_PROF_NVLINK_TX_BYTES ~90% of 450 GB/s on every GPU; network and PCIe far below",
                }
                for i in range(h)
            ],
            allowed=lambda h, d: [{"kind": "underperformance", "host": i, "nic": None} for i in range(h)],
            formats=("prometheus",),
            duration=180.0,
            interval=15.0,
            prefix="nvbound",
        ),
        Scenario(
            "network-bound",
            "NDR400 data-parallel training, 10 GB gradients per step (70B model class), all-reduce not overlapped "
            "with the 5 ms of compute: every HCA ~93% busy, NVLink ~35%, PCIe carries the NIC traffic",
            "ndr400",
            3,
            1,
            Workload("training", gradient_bytes=10e9, compute_s=0.005, pcie_h2d_bytes_per_s=2e9),
            lambda h, d: [],
            expected=lambda h, d: [
                {
                    "kind": "bottleneck",
                    "severity": "warning",
                    "host": i,
                    "nic": 0,
                    "layer": "network",
                    "note": "port_xmit_data ~93% of 50 GB/s on every HCA; NVLink ~35%, PCIe ~13%",
                }
                for i in range(h)
            ],
            allowed=lambda h, d: [{"kind": "underperformance", "host": i, "nic": 0} for i in range(h)],
            formats=("prometheus",),
            duration=180.0,
            interval=15.0,
            prefix="netbound",
        ),
        Scenario(
            "balanced",
            "NDR400 training: network, NVLink and PCIe each ~20-45% busy; nothing saturates",
            "ndr400",
            3,
            1,
            Workload("training", gradient_bytes=4e9, compute_s=0.15, nvlink_share=0.4, pcie_h2d_bytes_per_s=8e9),
            lambda h, d: [],
            must_not=lambda h, d: _all(h, "no layer saturates: the bottleneck verdict is info only"),
            formats=("prometheus",),
            duration=180.0,
            interval=15.0,
            prefix="balanced",
        ),
        Scenario(
            "chain-bad-cable",
            "NDR400 ring all-reduce over two leaves; the cable between one HCA and its leaf port corrupts "
            "packets: symbol errors, 0.5% loss, go-back-N on the sender, slow all_reduce on every rank",
            "ndr400",
            4,
            1,
            _TRAIN,
            lambda h, d: [
                Fault("symbol_errors", 1 % h, 0, 0.3 * d, None, {"rate_per_s": 40.0}),
                Fault("lossy_link", 1 % h, 0, 0.3 * d, None, {"p": 5e-3}),
            ],
            expected=lambda h, d: [
                {
                    "kind": "link_errors",
                    "severity": "critical",
                    "host": 1 % h,
                    "nic": 0,
                    "start": 0.3 * d,
                    "end": d,
                    "note": "symbol_error and port_rcv_errors on the HCA end of the cable",
                }
            ],
            allowed=lambda h, d: (
                [{"kind": k, "host": i, "nic": 0} for i in (0, 1 % h) for k in ("packet_loss", "lossy_collapse")]
                + [{"kind": k, "host": i, "nic": 0} for i in range(h) for k in ("underperformance", "bottleneck")]
                # ~5,000 symbol errors/s peg the 16-bit PortCounters registers within a minute
                + [{"kind": "counter_anomaly", "host": 1 % h, "nic": 0}]
                + [{"kind": "underperformance", "host": i, "nic": None} for i in range(h)]
            ),
            prefix="cable",
            formats=("sysfs-grep",),
            hosts_per_leaf=2,
            duration=180.0,
            topology=True,
            jobs=lambda h, d: [{"hosts": list(range(h)), "at": 0.6 * d}],
            incidents=lambda h, d: [
                {
                    "rule": "link_loss_go_back_n",
                    "root": {"kind": "link_errors", "host": 1 % h, "nic": 0, "peer": ("leaf", 0, 2)},
                    "members": [{"kind": "underperformance", "host": 0}, {"kind": "packet_loss", "host": 0}],
                    "optional": [
                        {"kind": k, "host": i}
                        for i in range(h)
                        for k in ("packet_loss", "lossy_collapse", "bottleneck", "underperformance")
                    ]
                    + [{"kind": "counter_anomaly", "host": 1 % h}],
                }
            ],
        ),
        Scenario(
            "chain-pause-storm",
            "RoCE 400G ring all-reduce over two leaves; one NIC storms pauses and its leaf pauses the other "
            "hosts under it (head-of-line blocking); the all_reduce collapses",
            "roce400",
            4,
            1,
            _TRAIN,
            lambda h, d: [Fault("pfc_storm", 2 % h, 0, 0.3 * d, 0.4 * d, {"leaf_spread": 0.5})],
            expected=lambda h, d: (
                [
                    {
                        "kind": "pfc_storm",
                        "severity": "critical",
                        "host": 2 % h,
                        "nic": 0,
                        "priority": 3,
                        "start": 0.3 * d,
                        "end": 0.7 * d,
                        "note": "tx_prio3_pause_duration ~97% of each interval, tx_pause_storm_* events",
                    }
                ]
                + [
                    {
                        "kind": "pfc_congestion",
                        "severity": "warning",
                        "host": i,
                        "nic": 0,
                        "priority": 3,
                        "start": 0.3 * d,
                        "end": 0.7 * d,
                        "note": "rx_prio3_pause_duration ~50%: paused by the leaf they share with the storm",
                    }
                    for i in (1, 3 % h)
                ]
            ),
            allowed=lambda h, d: (
                [{"kind": k, "host": i, "nic": 0} for i in (0, 1, 3) for k in ("pfc_storm", "pfc_congestion")]
                + [{"kind": k, "host": 2 % h, "nic": 0} for k in ("pfc_congestion", "packet_loss")]
                + [{"kind": k, "host": i, "nic": 0} for i in range(h) for k in ("underperformance", "bottleneck")]
                + [{"kind": "underperformance", "host": i, "nic": None} for i in range(h)]
            ),
            formats=("ethtool",),
            prefix="spread",
            hosts_per_leaf=2,
            duration=180.0,
            topology=True,
            jobs=lambda h, d: [{"hosts": list(range(h)), "at": 0.5 * d}],
            incidents=lambda h, d: [
                {
                    "rule": "pause_storm_head_of_line",
                    "root": {"kind": "pfc_storm", "host": 2 % h, "nic": 0},
                    "members": [
                        {"kind": "pfc_congestion", "host": 1},
                        {"kind": "pfc_congestion", "host": 3 % h},
                        {"kind": "underperformance", "host": 0},
                    ],
                    "optional": [
                        {"kind": k, "host": i}
                        for i in range(h)
                        for k in ("pfc_storm", "pfc_congestion", "packet_loss", "bottleneck", "underperformance")
                    ],
                }
            ],
        ),
        Scenario(
            "chain-degraded-ring",
            "NDR400 ring all-reduce; one HCA trained at 2X (200 Gb/s): the ring, and all_reduce on every rank, "
            "runs at half rate",
            "ndr400",
            4,
            1,
            _TRAIN,
            lambda h, d: [Fault("degraded", 1 % h, 0, params={"width": 2})],
            expected=lambda h, d: [
                {
                    "kind": "link_degraded",
                    "severity": "critical",
                    "host": 1 % h,
                    "nic": 0,
                    "note": "200 Gb/sec (2X NDR)",
                }
            ],
            allowed=lambda h, d: (
                [{"kind": k, "host": i, "nic": 0} for i in range(h) for k in ("underperformance", "bottleneck")]
                + [{"kind": "underperformance", "host": i, "nic": None} for i in range(h)]
                + [{"kind": "link_degraded", "host": "topology"}]
            ),
            prefix="ring",
            formats=("sysfs-grep",),
            duration=180.0,
            topology=True,
            jobs=lambda h, d: [{"hosts": list(range(h)), "at": 0.5 * d}],
            incidents=lambda h, d: [
                {
                    "rule": "degraded_link_ring",
                    "root": {"kind": "link_degraded", "host": 1 % h, "nic": 0, "peer": ("leaf", 0, 2)},
                    "members": [{"kind": "underperformance", "host": 0}],
                    "optional": [{"kind": k, "host": i} for i in range(h) for k in ("bottleneck", "underperformance")]
                    + [{"kind": "link_degraded", "host": "topology"}],
                }
            ],
        ),
        Scenario(
            "chain-two-faults",
            "NDR400, two jobs on two leaves at once: a corrupting cable under job A (leaf01) and a 2X link under "
            "job B (leaf02): two incidents, not one",
            "ndr400",
            4,
            1,
            _TRAIN,
            lambda h, d: [
                Fault("symbol_errors", 1, 0, 0.3 * d, None, {"rate_per_s": 40.0}),
                Fault("lossy_link", 1, 0, 0.3 * d, None, {"p": 5e-3}),
                Fault("degraded", h - 1, 0, params={"width": 2}),
            ],
            expected=lambda h, d: [
                {
                    "kind": "link_errors",
                    "severity": "critical",
                    "host": 1,
                    "nic": 0,
                    "start": 0.3 * d,
                    "end": d,
                    "note": "symbol_error and port_rcv_errors",
                },
                {"kind": "link_degraded", "severity": "critical", "host": h - 1, "nic": 0, "note": "200 Gb/sec"},
            ],
            allowed=lambda h, d: (
                [{"kind": k, "host": i, "nic": 0} for i in (0, 1) for k in ("packet_loss", "lossy_collapse")]
                + [{"kind": k, "host": i, "nic": 0} for i in range(h) for k in ("underperformance", "bottleneck")]
                + [{"kind": "counter_anomaly", "host": 1, "nic": 0}]
                + [{"kind": "underperformance", "host": i, "nic": None} for i in range(h)]
                + [{"kind": "link_degraded", "host": "topology"}]
            ),
            prefix="twofault",
            formats=("sysfs-grep",),
            hosts_per_leaf=2,
            duration=180.0,
            topology=True,
            jobs=lambda h, d: [
                {"hosts": list(range(h // 2)), "at": 0.6 * d},
                {"hosts": list(range(h // 2, h)), "at": 0.6 * d},
            ],
            incidents=lambda h, d: [
                {
                    "rule": "link_loss_go_back_n",
                    "root": {"kind": "link_errors", "host": 1, "nic": 0, "peer": ("leaf", 0, 2)},
                    "members": [{"kind": "underperformance", "host": 0}, {"kind": "packet_loss", "host": 0}],
                    "optional": [
                        {"kind": k, "host": i}
                        for i in range(h // 2)
                        for k in ("packet_loss", "lossy_collapse", "bottleneck", "underperformance")
                    ]
                    + [{"kind": "counter_anomaly", "host": 1}],
                },
                {
                    "rule": "degraded_link_ring",
                    "root": {"kind": "link_degraded", "host": h - 1, "nic": 0, "peer": ("leaf", (h - 1) // 2, 2)},
                    "members": [{"kind": "underperformance", "host": h // 2}],
                    "optional": [
                        {"kind": k, "host": i} for i in range(h // 2, h) for k in ("bottleneck", "underperformance")
                    ]
                    + [{"kind": "link_degraded", "host": "topology"}],
                },
            ],
            separate=lambda h, d: [list(range(h // 2)), list(range(h // 2, h))],
        ),
        Scenario(
            "chain-fqdn-cable",
            "NDR400 ring all-reduce, the corrupting cable of chain-bad-cable seen through Prometheus, which names "
            "hosts by FQDN (gpu02.cluster.local), while ibnetdiscover node descriptions and nccl-tests rank lines "
            "use the short name: one host, one incident",
            "ndr400",
            4,
            1,
            _TRAIN,
            lambda h, d: [
                Fault("symbol_errors", 1 % h, 0, 0.3 * d, None, {"rate_per_s": 40.0}),
                Fault("lossy_link", 1 % h, 0, 0.3 * d, None, {"p": 5e-3}),
            ],
            expected=lambda h, d: [
                {
                    "kind": "link_errors",
                    "severity": "critical",
                    "host": 1 % h,
                    "nic": 0,
                    "start": 0.3 * d,
                    "end": d,
                    "note": "symbol_error on the HCA end of the cable, reported under the FQDN Prometheus gives "
                    "(the most qualified name)",
                }
            ],
            allowed=lambda h, d: (
                [{"kind": k, "host": i, "nic": 0} for i in (0, 1 % h) for k in ("packet_loss", "lossy_collapse")]
                + [{"kind": k, "host": i, "nic": 0} for i in range(h) for k in ("underperformance", "bottleneck")]
                + [{"kind": "counter_anomaly", "host": 1 % h, "nic": 0}]
                + [{"kind": "underperformance", "host": i, "nic": None} for i in range(h)]
            ),
            prefix="fqdn",
            formats=("prometheus",),
            hosts_per_leaf=2,
            duration=180.0,
            topology=True,
            extra={"domain": "cluster.local"},
            jobs=lambda h, d: [{"hosts": list(range(h)), "at": 0.6 * d}],
            incidents=lambda h, d: [
                {
                    "rule": "link_loss_go_back_n",
                    "root": {"kind": "link_errors", "host": 1 % h, "nic": 0, "peer": ("leaf", 0, 2)},
                    "members": [{"kind": "underperformance", "host": 0}],
                    "optional": [
                        {"kind": k, "host": i}
                        for i in range(h)
                        for k in ("packet_loss", "lossy_collapse", "bottleneck", "underperformance")
                    ]
                    + [{"kind": "counter_anomaly", "host": 1 % h}],
                }
            ],
        ),
        Scenario(
            "pfc-storm-1s",
            "RoCE 400G; one NIC pauses priority 3 99.7% of the time for two minutes, logged by a "
            "`date +%s; ethtool -S` loop that really runs every 15.07 s: intervals read 15 or 16 s, yet the "
            "storm is one storm",
            "roce400",
            2,
            1,
            _TRAIN,
            lambda h, d: [
                Fault("pfc_storm", 1, 0, 0.25 * d, 0.5 * d, {"pause_share": 0.997, "watchdog": False}),
            ],
            expected=lambda h, d: [
                {
                    "kind": "pfc_storm",
                    "severity": "critical",
                    "host": 1,
                    "nic": 0,
                    "priority": 3,
                    "start": 0.25 * d,
                    "end": 0.75 * d,
                    "note": "tx_prio3_pause_duration 99.7% of each 15.07 s interval; a 16 s interval reads 94%",
                }
            ],
            allowed=lambda h, d: (
                [{"kind": k, "host": 1, "nic": 0} for k in ("pfc_congestion", "packet_loss", "lossy_collapse")]
                # the ring predecessor sends into the stalled NIC and is paused in turn
                + [{"kind": "pfc_congestion", "host": 0, "nic": 0}]
                + [
                    {"kind": k, "host": i, "nic": n}
                    for i in range(h)
                    for k in ("underperformance", "bottleneck")
                    for n in (0, None)
                ]
            ),
            formats=("ethtool",),
            prefix="storm1s",
            duration=480.0,
            interval=15.07,
            extra={"whole_seconds": True},
            incidents=lambda h, d: [
                {
                    "rule": "pause_storm_head_of_line",
                    "root": {"kind": "pfc_storm", "host": 1, "nic": 0},
                    # The stalled NIC's own drops are the storm's, not a lossy link's: lossy_collapse
                    # is excused on a NIC whose pause held without a break, so it may be absent.
                    "members": [{"kind": "pfc_congestion", "host": 1}],
                    "optional": [{"kind": "packet_loss", "host": 1}, {"kind": "lossy_collapse", "host": 1}],
                }
            ],
        ),
        Scenario(
            "trap-busy-healthy",
            "trap: NDR400 data-parallel training keeps every HCA ~93% busy and all_reduce at full speed: "
            "bottleneck verdicts, but no fault and no incident",
            "ndr400",
            4,
            1,
            Workload("training", gradient_bytes=10e9, compute_s=0.005, pcie_h2d_bytes_per_s=2e9),
            lambda h, d: [],
            expected=lambda h, d: [
                {
                    "kind": "bottleneck",
                    "severity": "warning",
                    "host": i,
                    "nic": 0,
                    "layer": "network",
                    "note": "port_xmit_data ~93% of 50 GB/s: busy, not broken",
                }
                for i in range(h)
            ],
            allowed=lambda h, d: [
                {"kind": "underperformance", "host": i, "nic": n} for i in range(h) for n in (0, None)
            ],
            formats=("sysfs-grep",),
            duration=180.0,
            interval=15.0,
            prefix="busy",
            extra={"no_incidents": True},
            topology=True,
            jobs=lambda h, d: [{"hosts": list(range(h)), "at": 0.5 * d}],
            separate=lambda h, d: [[i] for i in range(h)],
        ),
        Scenario(
            "trap-coincident-leaves",
            "trap: NDR400, at the same minute a marginal cable on leaf01 (symbol errors) and a flapping port on "
            "leaf02: two unrelated faults on different leaves, no shared job",
            "ndr400",
            4,
            1,
            _TRAIN,
            lambda h, d: [
                Fault("symbol_errors", 1, 0, 0.4 * d, None, {"rate_per_s": 20.0}),
                Fault("link_flap", h - 1, 0, 0.0, None, {"at": [round(0.45 * d) - 1], "down_s": 12.0}),
            ],
            expected=lambda h, d: [
                {
                    "kind": "link_errors",
                    "severity": "critical",
                    "host": 1,
                    "nic": 0,
                    "start": 0.4 * d,
                    "end": d,
                    "note": "symbol_error ~20/s",
                },
                {
                    "kind": "link_flap",
                    "severity": "critical",
                    "host": h - 1,
                    "nic": 0,
                    "start": 0.45 * d - 11,
                    "end": 0.45 * d + 21,
                    "note": "link_downed +1",
                },
            ],
            allowed=lambda h, d: (
                [{"kind": "packet_loss", "host": i, "nic": 0} for i in (0, 1)]
                + [{"kind": k, "host": i, "nic": 0} for i in range(h) for k in ("underperformance", "bottleneck")]
                + [{"kind": "underperformance", "host": i, "nic": None} for i in range(h)]
                + [{"kind": "ib_congestion", "host": h - 2, "nic": 0}]
            ),
            incidents=lambda h, d: [
                {
                    # the marginal cable's own loss is its consequence; nothing on the other leaf is
                    "rule": "link_loss_go_back_n",
                    "root": {"kind": "link_errors", "host": 1, "nic": 0, "peer": ("leaf", 0, 2)},
                    "members": [{"kind": "packet_loss", "host": 1}],
                    # its ring predecessor on the same leaf resends what the cable corrupts
                    "optional": [{"kind": "link_errors", "host": 1}, {"kind": "packet_loss", "host": 0}],
                },
                {
                    # the flap is a fault of its own: a second incident, on the other leaf, never merged
                    "rule": "link_loss_go_back_n",
                    "root": {"kind": "link_flap", "host": h - 1, "nic": 0, "peer": ("leaf", 1, 2)},
                    "members": [],
                    # its leaf neighbour waits for credits while the leaf's port toward it is down
                    "optional": [{"kind": "ib_congestion", "host": h - 2}],
                },
            ],
            prefix="coincident",
            formats=("sysfs-grep",),
            hosts_per_leaf=2,
            duration=180.0,
            topology=True,
            separate=lambda h, d: [list(range(h // 2)), list(range(h // 2, h))],
        ),
        Scenario(
            "trap-roce-coincident-leaves",
            "trap: RoCE 400G, in the same minutes a NIC on leaf01 storms pauses (its leaf-mate, which sends into "
            "it, is paused) and the cable into a NIC on leaf02 drops packets: two unrelated faults, no shared job, "
            "topology from the leaves' SONiC LLDP tables",
            "roce400",
            4,
            1,
            _TRAIN,
            lambda h, d: [
                Fault("pfc_storm", 1, 0, 0.3 * d, 0.4 * d, {"leaf_spread": 0.5}),
                Fault("lossy_link", h - 1, 0, 0.3 * d, 0.4 * d, {"p": 5e-4}),
            ],
            expected=lambda h, d: [
                {
                    "kind": "pfc_storm",
                    "severity": "critical",
                    "host": 1,
                    "nic": 0,
                    "priority": 3,
                    "start": 0.3 * d,
                    "end": 0.7 * d,
                    "note": "tx_prio3_pause_duration ~97% of each interval",
                },
                {
                    "kind": "pfc_congestion",
                    "severity": "warning",
                    "host": 0,
                    "nic": 0,
                    "priority": 3,
                    "start": 0.3 * d,
                    "end": 0.7 * d,
                    "note": "rx_prio3_pause_duration ~50%: paused by the leaf it shares with the storm",
                },
                {
                    "kind": "packet_loss",
                    "severity": "warning",
                    "host": h - 1,
                    "nic": 0,
                    "start": 0.3 * d,
                    "end": 0.7 * d,
                    "note": "out_of_sequence and rx_crc_errors_phy on the receiver, packet_seq_err at the sender",
                },
            ],
            allowed=lambda h, d: (
                [{"kind": k, "host": 1, "nic": 0} for k in ("pfc_congestion", "packet_loss")]
                + [{"kind": "packet_loss", "host": h - 2, "nic": 0}]
                + [{"kind": k, "host": i, "nic": 0} for i in range(h) for k in ("underperformance", "bottleneck")]
            ),
            formats=_ROCE_FMT,
            prefix="rocecoin",
            hosts_per_leaf=2,
            duration=180.0,
            topology=True,
            extra={"lldp": "sonic"},
            incidents=lambda h, d: [
                {
                    # the storm's pause reaches its leaf-mate only
                    "rule": "pause_storm_head_of_line",
                    "root": {"kind": "pfc_storm", "host": 1, "nic": 0},
                    "members": [{"kind": "pfc_congestion", "host": 0}],
                    "optional": [{"kind": k, "host": 1} for k in ("pfc_congestion", "packet_loss")],
                },
                {
                    # the lossy cable on the other leaf is a fault of its own, never merged into the storm
                    "rule": "link_loss_go_back_n",
                    "root": {"kind": "packet_loss", "host": h - 1, "nic": 0},
                    "members": [],
                    "optional": [{"kind": "packet_loss", "host": h - 2}],
                },
            ],
            separate=lambda h, d: [[0, 1], [h - 2, h - 1]],
        ),
        Scenario(
            "chain-pause-across-leaves",
            "RoCE 400G over two leaves and one spine; a NIC on leaf01 storms pauses: its leaf pauses its "
            "leaf-mate, and through the spine leaf02 pauses its two hosts (40% of the time); no shared job, "
            "topology from the leaves' SONiC LLDP tables",
            "roce400",
            4,
            1,
            _TRAIN,
            lambda h, d: [Fault("pfc_storm", 0, 0, 0.3 * d, 0.4 * d, {"leaf_spread": 0.5, "spine_spread": 0.4})],
            expected=lambda h, d: (
                [
                    {
                        "kind": "pfc_storm",
                        "severity": "critical",
                        "host": 0,
                        "nic": 0,
                        "priority": 3,
                        "start": 0.3 * d,
                        "end": 0.7 * d,
                        "note": "tx_prio3_pause_duration ~97% of each interval, tx_pause_storm_* events",
                    }
                ]
                + [
                    {
                        "kind": "pfc_congestion",
                        "severity": "warning",
                        "host": i,
                        "nic": 0,
                        "priority": 3,
                        "start": 0.3 * d,
                        "end": 0.7 * d,
                        "note": note,
                    }
                    for i, note in [(1, "rx_prio3_pause_duration ~50%: paused by the leaf it shares with the storm")]
                    + [(i, "rx_prio3_pause_duration ~40%: paused by leaf02, held through the spine") for i in (2, 3)]
                ]
            ),
            allowed=lambda h, d: (
                [{"kind": k, "host": 0, "nic": 0} for k in ("pfc_congestion", "packet_loss")]
                + [{"kind": k, "host": i, "nic": 0} for i in range(h) for k in ("underperformance", "bottleneck")]
            ),
            formats=("ethtool",),
            prefix="acrossleaf",
            hosts_per_leaf=2,
            spines=1,
            duration=180.0,
            topology=True,
            extra={"lldp": "sonic"},
            incidents=lambda h, d: [
                {
                    "rule": "pause_storm_head_of_line",
                    "root": {"kind": "pfc_storm", "host": 0, "nic": 0},
                    # the leaf-mate through the leaf, the other leaf's hosts through the spine
                    "members": [{"kind": "pfc_congestion", "host": i} for i in (1, 2, 3)],
                    "optional": [{"kind": k, "host": 0} for k in ("pfc_congestion", "packet_loss")],
                }
            ],
        ),
        Scenario(
            "trap-pause-across-leaves-later",
            "trap: chain-pause-across-leaves' fabric, but the storm on leaf01 pauses only its leaf-mate; leaf02's "
            "hosts are paused (40%) after it ended, by congestion of their own, and the ring's sender into the "
            "storm 7% during it: the spine path alone relates nothing, three incidents",
            "roce400",
            4,
            1,
            _TRAIN,
            lambda h, d: [
                Fault("pfc_storm", 0, 0, 0.3 * d, 0.3 * d, {"leaf_spread": 0.5}),
                *[Fault("leaf_pause", i, 0, 0.75 * d, 0.2 * d, {"share": 0.4}) for i in (2, 3)],
            ],
            expected=lambda h, d: (
                [
                    {
                        "kind": "pfc_storm",
                        "severity": "critical",
                        "host": 0,
                        "nic": 0,
                        "priority": 3,
                        "start": 0.3 * d,
                        "end": 0.6 * d,
                        "note": "tx_prio3_pause_duration ~97% of each interval, tx_pause_storm_* events",
                    },
                    {
                        "kind": "pfc_congestion",
                        "severity": "warning",
                        "host": 1,
                        "nic": 0,
                        "priority": 3,
                        "start": 0.3 * d,
                        "end": 0.6 * d,
                        "note": "rx_prio3_pause_duration ~50%: paused by the leaf it shares with the storm",
                    },
                ]
                + [
                    {
                        "kind": "pfc_congestion",
                        "severity": "warning",
                        "host": i,
                        "nic": 0,
                        "priority": 3,
                        "start": 0.75 * d,
                        "end": 0.95 * d,
                        "note": "rx_prio3_pause_duration ~40%, after the storm ended: congestion of their own",
                    }
                    for i in (2, 3)
                ]
                + [
                    {
                        "kind": "pfc_congestion",
                        "severity": "warning",
                        "host": 3,
                        "nic": 0,
                        "priority": 3,
                        "start": 0.3 * d,
                        "end": 0.6 * d,
                        "note": "rx_prio3_pause_duration ~7%: the ring sends into the storm, held back; a small "
                        "share of the storm's 97%, as the microbursts of any busy host",
                    }
                ]
            ),
            allowed=lambda h, d: (
                [{"kind": k, "host": 0, "nic": 0} for k in ("pfc_congestion", "packet_loss")]
                + [{"kind": k, "host": i, "nic": 0} for i in range(h) for k in ("underperformance", "bottleneck")]
            ),
            formats=("ethtool",),
            prefix="laterleaf",
            hosts_per_leaf=2,
            spines=1,
            duration=180.0,
            topology=True,
            extra={"lldp": "sonic"},
            incidents=lambda h, d: [
                {
                    "rule": "pause_storm_head_of_line",
                    "root": {"kind": "pfc_storm", "host": 0, "nic": 0},
                    "members": [{"kind": "pfc_congestion", "host": 1}],
                    "optional": [{"kind": k, "host": 0} for k in ("pfc_congestion", "packet_loss")],
                },
                *[
                    {"rule": "single_fault", "root": {"kind": "pfc_congestion", "host": i, "nic": 0}, "members": []}
                    for i in (2, 3)
                ],
            ],
            separate=lambda h, d: [[0, 1], [2], [3]],
        ),
        Scenario(
            "trap-counter-reset",
            "trap: mlx5 driver reload on one host mid-run: every counter of one HCA restarts near zero",
            "ndr400",
            4,
            1,
            _TRAIN,
            lambda h, d: [Fault("counter_reset", 1 % h, 0, 0.5 * d)],
            must_not=lambda h, d: [(1 % h, None, "a reset is data quality (counter_anomaly info), not a fault")],
            prefix="reset",
        ),
        Scenario(
            "trap-saturated-32bit",
            "trap: an HCA without 64-bit PMA counters: port_xmit_data/packets peg at 2^32-1, port_xmit_wait pegged",
            "ndr400",
            4,
            2,
            _TRAIN,
            lambda h, d: [Fault("saturated_32bit", 2 % h, 1)],
            must_not=lambda h, d: [(2 % h, 1, "pegged registers carry no information: counter_anomaly info only")],
            prefix="sat32",
        ),
        Scenario(
            "trap-q-counter-wrap",
            "trap: RoCE mlx5 Q counters (rx_write_requests, out_of_sequence) wrap at 2^32 with normal rates",
            "roce400",
            4,
            1,
            _TRAIN,
            lambda h, d: [
                Fault("q_counter_wrap", 0, 0, 0.0, None, {"oos_per_s": 0.05, "oos_headroom": 6, "headroom_s": 0.4 * d})
            ],
            must_not=lambda h, d: [(0, None, "a 32-bit wrap is unwrapped; ~0.05 out-of-sequence/s is noise")],
            formats=_ROCE_FMT,
            prefix="qwrap",
        ),
        Scenario(
            "trap-bursty-pfc",
            "trap: RoCE training with step-synchronous microbursts: brief pauses, ~3% of the time, no storm",
            "roce400",
            4,
            1,
            _TRAIN,
            lambda h, d: [Fault("bursty_pfc", -1, None, 0.0, None, {"share": 0.03})],
            must_not=lambda h, d: _all(h, "a few % of pause time in bursts is how lossless Ethernet works"),
            formats=_ROCE_FMT,
            prefix="bursty",
        ),
        Scenario(
            "fanin-loss",
            "RoCE 400G expert-parallel all-to-all over 5 hosts of two NICs; one NIC's cable corrupts 0.5% of what "
            "it sends and receives: its four peers see out-of-sequence arrivals and NAKs that are its loss",
            "roce400",
            5,
            2,
            _ALLTOALL,
            lambda h, d: [Fault("lossy_link", 0, 0, 0.3 * d, 0.5 * d, {"p": 5e-3, "direction": "both"})],
            expected=lambda h, d: [
                {
                    "kind": "lossy_collapse",
                    "severity": "critical",
                    "host": 0,
                    "nic": 0,
                    "start": 0.3 * d,
                    "end": 0.8 * d,
                    "note": "p 0.5% both ways on fanin-gpu01 mlx5_0: go-back-N collapses the all-to-all",
                }
            ],
            allowed=lambda h, d: _fan_in_allowed(h),
            formats=("sysfs-grep",),
            duration=120.0,
            prefix="fanin",
            incidents=lambda h, d: [
                {
                    "rule": "link_loss_go_back_n",
                    "root": {"kind": "lossy_collapse", "host": 0, "nic": 0},
                    # every peer's NIC 0 exchanges with the lossy NIC: its loss is the root's
                    "members": [{"kind": "packet_loss", "host": i} for i in range(1, h)],
                    "optional": _fan_in_allowed(h),
                }
            ],
        ),
        Scenario(
            "fanin-loss-tx",
            "RoCE 400G all-to-all over 6 hosts; one NIC's transmit lane corrupts 0.3% of what it sends (dropped at "
            "the leaf): five receivers see out-of-sequence arrivals, the sender counts their NAKs",
            "roce400",
            6,
            1,
            _ALLTOALL,
            lambda h, d: [Fault("lossy_link", 1, 0, 0.3 * d, 0.5 * d, {"p": 3e-3, "direction": "tx"})],
            expected=lambda h, d: [
                {
                    "kind": "lossy_collapse",
                    "severity": "critical",
                    "host": 1,
                    "nic": 0,
                    "start": 0.3 * d,
                    "end": 0.8 * d,
                    "note": "p 0.3% on what it sends; packet_seq_errors = the sum of its receivers' out_of_sequence",
                }
            ],
            allowed=lambda h, d: _fan_in_allowed(h),
            formats=("sysfs-grep",),
            duration=180.0,
            prefix="fanintx",
            incidents=lambda h, d: [
                {
                    "rule": "loss_fan_in",
                    "root": {"kind": "lossy_collapse", "host": 1, "nic": 0},
                    "members": [{"kind": "packet_loss", "host": i} for i in range(h) if i != 1],
                    "optional": _fan_in_allowed(h),
                }
            ],
        ),
        Scenario(
            "trap-two-lossy-jobs",
            "trap: RoCE 400G, two all-to-all jobs of four hosts; in each, one NIC's cable loses 0.4% both ways, "
            "the second half a minute after the first: two faults, never one",
            "roce400",
            8,
            1,
            _ALLTOALL_TWO_JOBS,
            lambda h, d: [
                Fault("lossy_link", 0, 0, 0.25 * d, 0.5 * d, {"p": 4e-3, "direction": "both"}),
                Fault("lossy_link", h - 1, 0, 0.5 * d, 0.4 * d, {"p": 4e-3, "direction": "both"}),
            ],
            expected=lambda h, d: [
                {"kind": "lossy_collapse", "severity": "critical", "host": 0, "nic": 0, "note": "job A's lossy NIC"},
                {"kind": "lossy_collapse", "severity": "critical", "host": h - 1, "nic": 0, "note": "job B's"},
            ],
            allowed=lambda h, d: _fan_in_allowed(h),
            formats=("sysfs-grep",),
            duration=120.0,
            prefix="twolossy",
            incidents=lambda h, d: [
                {
                    "rule": "link_loss_go_back_n",
                    "root": {"kind": "lossy_collapse", "host": 0, "nic": 0},
                    "members": [{"kind": "packet_loss", "host": i} for i in range(1, h // 2)],
                    "optional": _fan_in_allowed(h // 2),
                },
                {
                    "rule": "link_loss_go_back_n",
                    "root": {"kind": "lossy_collapse", "host": h - 1, "nic": 0},
                    "members": [{"kind": "packet_loss", "host": i} for i in range(h // 2, h - 1)],
                    "optional": [{"kind": k, "host": i} for i in range(h // 2, h) for k in _LOSS_KINDS],
                },
            ],
            separate=lambda h, d: [list(range(h // 2)), list(range(h // 2, h))],
        ),
        Scenario(
            "link-flap-windows",
            "NDR400; a failing cable: one HCA port's symbol errors rise and it goes down in three windows "
            "minutes apart: one fault, one page",
            "ndr400",
            4,
            1,
            _TRAIN,
            lambda h, d: [
                Fault("symbol_errors", 2 % h, 0, 0.1 * d, None, {"rate_per_s": 15.0}),
                Fault(
                    "link_flap",
                    2 % h,
                    0,
                    0.0,
                    None,
                    {"at": [round(f * d) - 1 for f in (0.2, 0.5, 0.8)], "down_s": 12.0},
                ),
            ],
            expected=lambda h, d: [
                {"kind": "link_flap", "severity": "critical", "host": 2 % h, "nic": 0, "note": "three flaps"},
                {"kind": "link_errors", "severity": "critical", "host": 2 % h, "nic": 0, "note": "~15/s"},
            ],
            allowed=lambda h, d: ([{"kind": k, "host": i, "nic": None} for i in range(h) for k in _LINK_VICTIM_KINDS]),
            formats=("sysfs-grep",),
            prefix="flapwin",
            duration=360.0,
            topology=True,
            incidents=lambda h, d: [
                {
                    "rule": "link_loss_go_back_n",
                    "root": {"kind": "link_flap", "host": 2 % h, "nic": 0, "peer": ("leaf", 0, 3)},
                    "members": [{"kind": "link_flap", "host": 2 % h}, {"kind": "link_errors", "host": 2 % h}],
                    "optional": [{"kind": k, "host": i} for i in range(h) for k in _LINK_VICTIM_KINDS],
                }
            ],
        ),
        Scenario(
            "guid-cable-end",
            "NDR400; a flapping HCA port seen twice: by its host's node_exporter and, by node GUID only, by "
            "UFM on the management node; the topology's node descriptions name the GUID's host",
            "ndr400",
            4,
            1,
            _TRAIN,
            lambda h, d: [Fault("link_flap", 1, 0, 0.0, None, {"at": [round(0.4 * d) - 1], "down_s": 12.0})],
            expected=lambda h, d: [
                {"kind": "link_flap", "severity": "critical", "host": 1, "nic": 0, "note": "link_downed +1"}
            ],
            allowed=lambda h, d: (
                [{"kind": k, "host": i, "nic": None} for i in range(h) for k in _LINK_VICTIM_KINDS]
                + [{"kind": k, "host": "topology"} for k in ("link_flap", "ib_congestion")]
            ),
            formats=("prometheus", "ufm-csv"),
            prefix="guidend",
            duration=120.0,
            topology=True,
            incidents=lambda h, d: [
                {
                    "rule": "single_fault",
                    "root": {"kind": "link_flap", "host": 1, "nic": 0, "peer": ("leaf", 0, 2)},
                    "members": [],
                    "optional": [{"kind": k, "host": i} for i in range(h) for k in _LINK_VICTIM_KINDS],
                }
            ],
        ),
        Scenario(
            "storm-one-leaf",
            "RoCE 400G, eight hosts under one leaf; one NIC storms pauses and the leaf pauses its seven "
            "leaf-mates 40% of the time (head-of-line blocking); topology from the leaf's SONiC LLDP table",
            "roce400",
            8,
            1,
            _TRAIN,
            lambda h, d: [Fault("pfc_storm", 3, 0, 0.3 * d, 0.4 * d, {"leaf_spread": 0.4})],
            expected=lambda h, d: [
                {"kind": "pfc_storm", "severity": "critical", "host": 3, "nic": 0, "priority": 3, "note": "storm"}
            ],
            allowed=lambda h, d: [{"kind": k, "host": i, "nic": None} for i in range(h) for k in _STORM_VICTIM_KINDS],
            formats=("ethtool",),
            prefix="oneleaf",
            hosts_per_leaf=8,
            duration=180.0,
            topology=True,
            extra={"lldp": "sonic"},
            incidents=lambda h, d: [
                {
                    "rule": "pause_storm_head_of_line",
                    "root": {"kind": "pfc_storm", "host": 3, "nic": 0},
                    "members": [{"kind": "pfc_congestion", "host": i} for i in range(h) if i != 3],
                    "optional": [{"kind": k, "host": i} for i in range(h) for k in _STORM_VICTIM_KINDS],
                }
            ],
        ),
        Scenario(
            "trap-two-storms-one-leaf",
            "trap: RoCE 400G, two NICs under one leaf storm pauses at the same time (two stalled receive "
            "pipelines), topology from the leaf's SONiC LLDP table: two faults, never one",
            "roce400",
            4,
            1,
            _TRAIN,
            lambda h, d: [
                Fault("pfc_storm", 0, 0, 0.3 * d, 0.4 * d, {"leaf_spread": 0.3}),
                Fault("pfc_storm", 2, 0, 0.3 * d, 0.4 * d, {"leaf_spread": 0.3}),
            ],
            expected=lambda h, d: [
                {"kind": "pfc_storm", "severity": "critical", "host": i, "nic": 0, "priority": 3, "note": "storm"}
                for i in (0, 2)
            ],
            allowed=lambda h, d: [{"kind": k, "host": i, "nic": None} for i in range(h) for k in _STORM_VICTIM_KINDS],
            formats=("ethtool",),
            prefix="twostorm",
            hosts_per_leaf=4,
            duration=180.0,
            topology=True,
            extra={"lldp": "sonic"},
            incidents=lambda h, d: [
                {
                    "rule": "pause_storm_head_of_line",
                    "root": {"kind": "pfc_storm", "host": i, "nic": 0},
                    "members": [],
                    "optional": [{"kind": k, "host": j} for j in range(h) for k in _STORM_VICTIM_KINDS],
                }
                for i in (0, 2)
            ],
        ),
        Scenario(
            "nvlink-crc",
            "HGX H100 training; one GPU's NVLink link 7 on one host takes ~250 CRC errors/s (and their replays) "
            "from 30% of the run (nvidia-smi nvlink -e per link) and its driver logs XID 74 halfway (the DCGM "
            "exporter's last-XID gauge): one incident, the link",
            "ndr400",
            4,
            1,
            _TRAIN,
            lambda h, d: [],
            expected=lambda h, d: [
                {
                    "kind": "link_errors",
                    "severity": "critical",
                    "host": 1 % h,
                    "gpu": 3,
                    "link": 7,
                    "layer": "nvlink",
                    "start": 0.3 * d,
                    "end": d,
                    "note": "CRC Errors ~250/s on GPU 3 link 7: above DCGM's 100/s health limit",
                },
                {
                    "kind": "gpu_xid",
                    "severity": "critical",
                    "host": 1 % h,
                    "gpu": 3,
                    "layer": "nvlink",
                    "start": 0.5 * d,
                    "end": d,
                    "note": "the driver's XID 74 (NVLINK_ERROR) on GPU 3, halfway through the errors",
                },
            ],
            incidents=lambda h, d: [
                {
                    "rule": "nvlink_link_xid",
                    "root": {"kind": "link_errors", "host": 1 % h},
                    "members": [{"kind": "gpu_xid", "host": 1 % h}],
                }
            ],
            allowed=lambda h, d: [{"kind": k, "host": i, "nic": None} for i in range(h) for k in ("bottleneck",)],
            formats=("prometheus",),
            duration=240.0,
            interval=15.0,
            prefix="nvlcrc",
            extra={
                "gpu": {
                    "errors": {
                        "gpu_name": "NVIDIA H100 80GB HBM3",
                        "gpus": 8,
                        "links": 18,
                        "background_per_hour": 0.0,
                        "faults": [{"host": 1, "gpu": 3, "link": 7, "crc_per_s": 250.0, "start": 0.3}],
                    },
                    "xids": {
                        "gpus": 8,
                        "gpu_name": "NVIDIA H100 80GB HBM3",
                        "events": [{"host": 1, "gpu": 3, "code": 74, "at": 0.5}],
                    },
                }
            },
        ),
        Scenario(
            "trap-nvlink-background",
            "trap: HGX B200 NVLink links with a steady background of ~3 CRC errors/hour each, and a driver "
            "reload on one host halfway that resets every NVLink counter: nothing to report",
            "ndr400",
            2,
            1,
            _TRAIN,
            lambda h, d: [],
            must_not=lambda h, d: _all(h, "a few CRC errors an hour are healthy; a reset is data quality (info)"),
            formats=("prometheus",),
            duration=1800.0,
            interval=60.0,
            prefix="nvlbg",
            extra={
                "no_incidents": True,
                "gpu": {
                    "errors": {
                        "gpu_name": "NVIDIA B200",
                        "gpus": 8,
                        "links": 18,
                        "background_per_hour": 3.0,
                        "reloads": [{"host": 0, "at": 0.5}],
                    }
                },
            },
        ),
        Scenario(
            "nvl72-tray-lost",
            "GB200 NVL72 rack (18 compute trays of 4 GPUs): NVSwitch tray 3 fails, links 6 and 7 go inactive on "
            "every GPU, the fabric reports every GPU's bandwidth degraded and every GPU logs XID 149: one incident, "
            "the domain",
            "ndr400",
            18,
            1,
            _TRAIN,
            lambda h, d: [],
            expected=lambda h, d: (
                [
                    {
                        "kind": "nvlink_fabric",
                        "severity": "critical",
                        "host": i,
                        "layer": "nvlink",
                        "note": "links 6, 7 inactive",
                    }
                    for i in range(h)
                ]
                + [
                    {
                        "kind": "nvlink_domain",
                        "severity": "critical",
                        "entity": "nvlink domain 5d2c6a90-3f61-4b8e-9a47-1c0e7b25d9f3/clique 32766",
                        "device": ["nvswitch tray 3"],
                        "layer": "nvlink",
                        "note": "every compute tray lost links 6 and 7: the switch tray they share",
                    }
                ]
                + [
                    {
                        "kind": "gpu_xid",
                        "severity": "warning",
                        "host": i,
                        "layer": "nvlink",
                        "start": 0.5 * d,
                        "end": d,
                        "note": "XID 149 (NVLINK_NETIR_ERROR) on every GPU when the tray's links went down",
                    }
                    for i in range(h)
                ]
            ),
            allowed=lambda h, d: [{"kind": k, "host": i, "nic": None} for i in range(h) for k in ("bottleneck",)],
            incidents=lambda h, d: [
                {
                    "rule": "nvlink_domain_down",
                    "root": {
                        "kind": "nvlink_domain",
                        "entity": "nvlink domain 5d2c6a90-3f61-4b8e-9a47-1c0e7b25d9f3/clique 32766",
                        "device": ["nvswitch tray 3"],
                    },
                    "members": [{"kind": k, "host": i} for i in range(h) for k in ("nvlink_fabric", "gpu_xid")],
                }
            ],
            formats=("prometheus",),
            duration=120.0,
            interval=15.0,
            hosts_per_leaf=6,
            prefix="nvl72",
            extra={
                "gpu": {
                    "nvl72": {
                        "gpus": 4,
                        "links": 18,
                        "cluster_uuid": "5d2c6a90-3f61-4b8e-9a47-1c0e7b25d9f3",
                        "clique": 32766,
                        "lost_tray": 3,
                        "links_per_tray": 2,
                    },
                    "xids": {
                        "gpus": 4,
                        "gpu_name": "NVIDIA GB200",
                        "events": [{"host": None, "gpu": None, "code": 149, "at": 0.5}],
                    },
                }
            },
        ),
        Scenario(
            "nvl72-jobs-two-racks",
            "two GB200 NVL72 racks, three compute trays each: an all_reduce on two trays of rack A runs at the "
            "NIC rate (its NVLink fabric unused) and is underperformance against NVLink; the same rate on a tray of "
            "each rack is what the network gives: nothing",
            "ndr400",
            6,
            1,
            _TRAIN,
            lambda h, d: [],
            expected=lambda h, d: [
                {
                    "kind": "underperformance",
                    "severity": "critical",
                    "host": 0,
                    "layer": "nvlink",
                    "note": "trays 1 and 2 share rack A's NVLink domain: judged against NVLink5, not the NICs",
                    "start": 0.5 * d,
                    "end": 0.5 * d,
                }
            ],
            allowed=lambda h, d: [{"kind": "bottleneck", "host": i, "nic": None} for i in range(h)],
            must_not=lambda h, d: [
                (i, None, "the cross-rack all_reduce at the NIC rate is what the network gives") for i in (2, 3, 4, 5)
            ],
            formats=("prometheus",),
            duration=60.0,
            interval=15.0,
            hosts_per_leaf=6,
            prefix="racks",
            jobs=lambda h, d: [
                {"hosts": [0, 1], "at": 0.5 * d, "gpus": 4, "gpu_name": "NVIDIA GB200"},
                {"hosts": [2, 3], "at": 0.6 * d, "gpus": 4, "gpu_name": "NVIDIA GB200"},
            ],
            extra={
                "gpu": {
                    "nvl72": {
                        "gpus": 4,
                        "links": 18,
                        # racks of their own: nvl72-tray-lost's domain is another scenario's
                        "cluster_uuids": [
                            "3a7e51c2-94d0-4b6f-a1e8-6c2f0d9b7a15",
                            "0b9f7c1e-2d4a-4f6b-8c3d-9e5a1b7f2c40",
                        ],
                        "clique": 32766,
                    },
                }
            },
        ),
        Scenario(
            "trap-missing-samples",
            "trap: the collector on one host missed scrapes (one 4-scrape hole, isolated misses)",
            "ndr400",
            4,
            1,
            _TRAIN,
            lambda h, d: [Fault("missing_samples", 1 % h, None, params={"samples": [5, 12, 13, 14, 15, 20]})],
            must_not=lambda h, d: [(1 % h, None, "gaps are data quality (counter_anomaly info)")],
            prefix="missing",
        ),
    ]
}
