"""Workloads, faults and the physics that turns them into cumulative counters.

The model works per sampling interval and per rail (NIC index ``j`` of every host forms one
plane, as in rail-optimised GPU clusters). For each interval it computes the flows the workload
wants, the capacity each constraint offers (sender link, receiver link, leaf uplinks), the share
of time senders are held back, and what the hardware counts as a consequence:

* throughput never exceeds the active line rate; bytes are whole packets of known wire size;
* a held-back InfiniBand sender counts PortXmitWait ticks for the time it waited for credits;
* a held-back lossless RoCE sender is paused (per-priority pause duration in microseconds, pause
  frames at the refresh interval of a full-quanta pause), and DCQCN marks ECN at the congested
  receiver, which answers with CNPs that the senders handle;
* loss with per-packet probability ``p`` costs go-back-N goodput ``1 / (1 + p * W)`` with
  ``W = BDP / frame``; every loss is a NAK sequence error at the sender and an out-of-sequence
  packet at the receiver; retransmitted bytes are on the wire and in the byte counters;
* a ring all-reduce runs at the pace of its slowest member.

Counters then start from large offsets and accumulate. Register widths follow the hardware:
IB PMA counters saturate (16/8/4-bit errors, 32-bit data without extended width), mlx5 Q
counters wrap at 2^32, everything else is 64-bit.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from fabricscope.simulate.fabric import NVLINK_BYTES_PER_S, Fabric, Host, Nic

__all__ = ["Fault", "Simulation", "Workload", "run_model"]

RTT_S = 10e-6  # two-tier leaf-spine round trip
ACHIEVABLE = 0.96  # share of line rate bulk RDMA reaches when nothing is wrong
PAUSE_QUANTA_BITS = 65535 * 512  # one full-quanta pause frame stops the peer this many bit times
XMIT_WAIT_TICK_BITS = 64  # one PortXmitWait tick ~ 64 bit times (ibdiagnet congestion assessment)
MCAST_PER_S = 3  # SA/multicast housekeeping packets
U32 = (1 << 32) - 1

# Register widths of IB PMA error counters (kernel sysfs.c PORT_PMA_ATTR).
PMA_ERROR_BITS = {
    "symbol_errors": 16,
    "link_error_recovery_events": 8,
    "link_downed_events": 8,
    "port_rcv_errors": 16,
    "port_rcv_remote_physical_errors": 16,
    "port_rcv_switch_relay_errors": 16,
    "port_xmit_discards": 16,
    "port_xmit_constraint_errors": 8,
    "port_rcv_constraint_errors": 8,
    "local_link_integrity_errors": 4,
    "excessive_buffer_overrun_errors": 4,
    "vl15_dropped_packets": 16,
}
Q_COUNTERS = (
    "rx_write_requests",
    "rx_read_requests",
    "rx_atomic_requests",
    "rx_out_of_buffer_packets",
    "out_of_sequence_packets",
    "duplicate_requests",
    "rnr_nak_retry_errors",
    "packet_seq_errors",
    "implied_nak_seq_errors",
    "local_ack_timeout_errors",
)
CONG_COUNTERS = (
    "rp_cnp_ignored_packets",
    "rp_cnp_handled_packets",
    "np_ecn_marked_roce_packets",
    "np_cnp_sent_packets",
)
ROCE_PRIORITY = 3
CNP_PRIORITY = 6


@dataclass
class Workload:
    """What the GPUs do.

    Attributes:
        kind: ``training`` (data-parallel ring all-reduce once per step), ``alltoall``
            (expert-parallel all-to-all once per step: every host sends a share to every other host
            of its group) or ``inference`` (prefill hosts stream KV cache to decode hosts).
        gradient_bytes: Gradient bytes all-reduced per step (training; 1-10 GB for a 70B model).
        compute_s: Compute time per step between all-reduces (training).
        load: Share of line rate a prefill NIC streams at (inference).
        prefill_share: Share of hosts in the prefill pool (inference).
        nvlink_share: Typical NVLink utilisation of a GPU (tensor parallel traffic).
        pcie_h2d_bytes_per_s: Host-to-GPU input traffic per GPU over PCIe (data loading), or None
            to export no DCGM PCIe gauges. With it, each GPU also carries its share of the host's
            NIC traffic over PCIe (GPUDirect RDMA: the NIC reads and writes GPU memory).
        groups: ``alltoall``: the hosts split into this many contiguous groups (jobs), each
            exchanging only among itself.
    """

    kind: str = "training"
    gradient_bytes: float = 4e9
    compute_s: float = 1.2
    load: float = 0.7
    prefill_share: float = 0.5
    nvlink_share: float = 0.35
    pcie_h2d_bytes_per_s: float | None = None
    groups: int = 1


@dataclass
class Fault:
    """A fault or trap on one target, during a time window.

    Attributes:
        kind: ``pfc_storm``, ``lossy_link``, ``no_lossless``, ``incast``, ``symbol_errors``,
            ``link_flap``, ``degraded``, ``nvlink_saturated``, ``counter_reset``,
            ``saturated_32bit``, ``q_counter_wrap``, ``bursty_pfc``, ``leaf_pause`` or ``missing_samples``.
        host: Host index (0-based).
        nic: NIC index, or None for every NIC of the host.
        start: Seconds after the first sample.
        duration: Seconds (None: until the end).
        params: Kind-specific parameters (``p``, ``rate_per_s``, ``width``, ``flaps`` ...;
            ``pfc_storm``'s ``leaf_spread``: share of each interval the storm's leaf pauses its other
            hosts, ``spine_spread``: share of each interval the storm pauses the hosts of the other
            leaves (through the spine), ``pause_share``: share of the storm the NIC's pause-duration
            counter accrues (0.97), ``watchdog``: whether the NIC's storm watchdog counts events
            (True); ``lossy_link``'s ``direction``: ``rx`` (default: the host's cable corrupts what
            it receives, its NIC counts the CRC errors), ``tx`` (what it sends is corrupted and dropped
            at the leaf's ingress: its peers see only out-of-sequence arrivals) or ``both``;
            ``leaf_pause``'s ``share``: share of each interval the host's leaf pauses it (0.4),
            with no storm behind it).
    """

    kind: str
    host: int = 0
    nic: int | None = 0
    start: float = 0.0
    duration: float | None = None
    params: dict[str, Any] = field(default_factory=dict)

    def overlap(self, t0: float, t1: float, end: float) -> float:
        """Seconds of [t0, t1] inside the fault window."""
        fe = end if self.duration is None else self.start + self.duration
        return max(0.0, min(t1, fe) - max(t0, self.start))

    def hits(self, host: int, nic: int) -> bool:
        """Whether the fault targets this NIC."""
        return host == self.host and (self.nic is None or self.nic == nic)


@dataclass
class Simulation:
    """The result of the model.

    Attributes:
        fabric: The fabric.
        times_ms: Sample times, epoch milliseconds (before per-host scrape jitter).
        samples: Truth frame, one row per (host, device, port, priority, counter, sample):
            ``k`` (sample index), ``host``, ``device``, ``port``, ``priority``, ``counter``,
            ``value`` (UInt64, exactly what the device exposes), ``family`` (``ib``, ``eth``
            or ``gpu``), ``is_counter``.
        missing: (host, sample index) pairs the collectors did not record.
        rates: Per (host, NIC, interval) physics summary for checks: ``tx_bps``, ``rx_bps``,
            ``line`` (bytes/s).
        pfc_disabled: (host, nic) pairs without PFC on the RoCE priority.
        ecn_disabled: (host, nic) pairs with DCQCN disabled.
    """

    fabric: Fabric
    times_ms: list[int]
    samples: pl.DataFrame
    missing: set[tuple[str, int]]
    rates: pl.DataFrame
    pfc_disabled: set[tuple[str, int]]
    ecn_disabled: set[tuple[str, int]]


class _Acc:
    """Per-port increments for every interval."""

    def __init__(self, k: int) -> None:
        self.k = k
        self.inc: dict[tuple[str, int | None], list[float]] = {}

    def add(self, counter: str, k: int, v: float, prio: int | None = None) -> None:
        key = (counter, prio)
        if key not in self.inc:
            self.inc[key] = [0.0] * self.k
        self.inc[key][k] += v


def _poisson(rng: random.Random, lam: float) -> int:
    if lam <= 0:
        return 0
    if lam > 50:
        return max(0, round(rng.gauss(lam, math.sqrt(lam))))
    # Knuth
    limit, n, prod = math.exp(-lam), 0, rng.random()
    while prod > limit:
        n += 1
        prod *= rng.random()
    return n


def run_model(
    fabric: Fabric,
    workload: Workload,
    faults: list[Fault],
    *,
    samples: int,
    interval: float,
    seed: int,
    t0: int,
) -> Simulation:
    """Simulate ``samples`` readings ``interval`` seconds apart.

    Args:
        fabric: The fabric.
        workload: The workload.
        faults: Faults and traps.
        samples: Number of readings (intervals = samples - 1).
        interval: Seconds between readings.
        seed: Random seed (the result is a pure function of the arguments).
        t0: Epoch seconds of the first reading.

    Returns:
        A :class:`Simulation`.
    """
    rng = random.Random(seed)
    tech = fabric.tech
    roce = tech.family == "roce"
    hosts = fabric.hosts
    nh = len(hosts)
    nk = samples - 1
    dt = interval
    end = nk * dt
    by = {f.kind: [x for x in faults if x.kind == f.kind] for f in faults}

    def fl(kind: str) -> list[Fault]:
        return by.get(kind, [])

    # Link configuration faults change the fabric itself.
    for f in fl("degraded"):
        for n in hosts[f.host].nics:
            if f.hits(f.host, n.index):
                n.width = f.params.get("width", n.width)
                if "speed" in f.params:
                    n.speed_name, n.lane_gbps = f.params["speed"]
    for f in fl("saturated_32bit"):
        for n in hosts[f.host].nics:
            if f.hits(f.host, n.index):
                n.ext_width = False
    pfc_off = {
        (hosts[f.host].name, n.index) for f in fl("no_lossless") for n in hosts[f.host].nics if f.hits(f.host, n.index)
    }
    if workload.kind == "inference":
        n_pre = max(1, round(nh * workload.prefill_share))
        for i, h in enumerate(hosts):
            h.role = "prefill" if i < n_pre else "decode"
    n_pre = sum(h.role == "prefill" for h in hosts)
    decode = [i for i, h in enumerate(hosts) if h.role == "decode"]

    accs = {(i, n.index): _Acc(nk) for i, h in enumerate(hosts) for n in h.nics}
    rate_rows: list[tuple[str, str, int, float, float, float]] = []
    gpu_rows: list[tuple[int, int, int, float, float]] = []  # host, gpu, sample, tx, rx
    pcie_rows: list[tuple[int, int, int, float, float]] = []  # host, gpu, sample, tx, rx
    state: dict[tuple[int, int], list[tuple[int, int]]] = {}  # (state_id, phys_id) per sample
    step_bytes_base = workload.gradient_bytes * 2 * (nh - 1) / max(nh, 1)

    for k in range(nk):
        a, b = k * dt, (k + 1) * dt
        nic_tx = [0.0] * nh  # bytes/s over all of a host's NICs in this interval
        nic_rx = [0.0] * nh
        nv_slow = 1.0
        for f in fl("nvlink_saturated"):
            if f.overlap(a, b, end) > 0:
                nv_slow = max(nv_slow, f.params.get("compute_factor", 1.35))
        for j in range(max(len(h.nics) for h in hosts)):
            nics: list[Nic] = [h.nics[j] for h in hosts]
            line = [n.line_rate for n in nics]
            up = [1.0] * nh
            storm = [0.0] * nh
            storm_share = [0.97] * nh  # share of the storm's time the NIC's pause counter accrues
            storm_watchdog = [True] * nh  # mlx5 stall prevention counts storm events
            loss_p = [0.0] * nh  # per-packet loss into each host
            loss_tx = [0.0] * nh  # per-packet loss of what each host sends (dropped at its leaf's ingress)
            for f in fl("link_flap"):
                for i in range(nh):
                    if f.hits(i, j):
                        down = sum(
                            max(0.0, min(b, s + f.params.get("down_s", 5.0)) - max(a, s)) for s in f.params["at"]
                        )
                        up[i] = max(0.0, 1.0 - down / dt)
            for f in fl("pfc_storm"):
                if f.hits(f.host, j) and (ov := f.overlap(a, b, end)) > 0:
                    storm[f.host] = ov / dt
                    storm_share[f.host] = f.params.get("pause_share", 0.97)
                    storm_watchdog[f.host] = f.params.get("watchdog", True)
            for f in fl("lossy_link"):
                if f.hits(f.host, j) and f.overlap(a, b, end) > 0:
                    way = f.params.get("direction", "rx")
                    if way in ("rx", "both"):
                        loss_p[f.host] = max(loss_p[f.host], f.params["p"])
                    if way in ("tx", "both"):
                        loss_tx[f.host] = max(loss_tx[f.host], f.params["p"])
            for f in fl("symbol_errors"):
                if f.hits(f.host, j) and f.overlap(a, b, end) > 0:
                    # corrupted packets are dropped by the receiver: a (tiny) loss rate
                    pk = line[f.host] * 0.5 / tech.data_frame
                    loss_p[f.host] = max(loss_p[f.host], f.params["rate_per_s"] * 0.25 / pk)
            # ---- flows: (src, dst, demand share of src line) ----
            flows: list[tuple[int, int, float]] = []
            if workload.kind in ("training", "alltoall"):
                step_bytes = step_bytes_base / len(hosts[0].nics)
                r0 = min(line) * ACHIEVABLE
                comm = step_bytes / r0
                duty = comm / (workload.compute_s * nv_slow + comm) * rng.uniform(0.97, 1.0)
                if workload.kind == "training":
                    flows = [(i, (i + 1) % nh, duty * r0 / line[i]) for i in range(nh)] if nh > 1 else []
                else:
                    size = -(-nh // max(1, workload.groups))
                    members = [list(range(g, min(g + size, nh))) for g in range(0, nh, size)]
                    flows = [
                        (i, k, duty * r0 / line[i] / (len(m) - 1)) for m in members for i in m for k in m if k != i
                    ]
            else:
                for i in range(n_pre):
                    dst = decode[i % len(decode)] if decode else i
                    for f in fl("incast"):
                        if f.overlap(a, b, end) > 0:
                            dst = f.host
                    flows.append((i, dst, workload.load * rng.uniform(0.9, 1.0) * ACHIEVABLE))
            # demand in bytes/s
            dem = [line[s] * d for s, _, d in flows]
            out_sum = [0.0] * nh
            in_sum = [0.0] * nh
            upl: dict[int, float] = {}
            dnl: dict[int, float] = {}
            for (s, d, _), x in zip(flows, dem, strict=True):
                out_sum[s] += x
                in_sum[d] += x
                if hosts[s].leaf != hosts[d].leaf:
                    upl[hosts[s].leaf] = upl.get(hosts[s].leaf, 0.0) + x
                    dnl[hosts[d].leaf] = dnl.get(hosts[d].leaf, 0.0) + x
            cap_rx = [line[i] * up[i] * (1.0 - 0.98 * storm[i]) for i in range(nh)]
            cap_tx = [line[i] * up[i] for i in range(nh)]
            s_own, s_cong, eta, ratio = [], [], [], []
            for (s, d, _), _x in zip(flows, dem, strict=True):
                c_src = min(1.0, cap_tx[s] / out_sum[s]) if out_sum[s] else 1.0
                c_dst = min(1.0, cap_rx[d] / in_sum[d]) if in_sum[d] else 1.0
                r = in_sum[d] / max(line[d] * up[d], 1.0)
                c_up = 1.0
                if hosts[s].leaf != hosts[d].leaf:
                    ucap = fabric.uplink_capacity(hosts[s].leaf) / len(hosts[0].nics)
                    dcap = fabric.uplink_capacity(hosts[d].leaf) / len(hosts[0].nics)
                    c_up = min(1.0, ucap / upl[hosts[s].leaf], dcap / dnl[hosts[d].leaf])
                    r = max(r, upl[hosts[s].leaf] / ucap, dnl[hosts[d].leaf] / dcap)
                p = max(loss_p[d], loss_tx[s])
                if roce and (hosts[d].name, j) in pfc_off:
                    # No PFC toward this host: microbursts and over-subscription overflow buffers.
                    p = max(p, 2e-4 + (0.004 * (r - 1.0) if r > 1 else 0.0))
                w = line[d] * RTT_S / tech.data_frame
                s_own.append(min(c_src, c_dst, c_up))
                s_cong.append(min(c_dst, c_up))
                eta.append(1.0 / (1.0 + p * w))
                ratio.append(r)
            if workload.kind in ("training", "alltoall") and flows:
                # a collective step ends with its slowest flow (ring or all-to-all alike)
                ring = min(so * e for so, e in zip(s_own, eta, strict=True))
                good = [x * ring for x in dem]
            else:
                good = [x * so * e for x, so, e in zip(dem, s_own, eta, strict=True)]
            tx_b = [0.0] * nh
            rx_b = [0.0] * nh
            for fi, (s, d, share) in enumerate(flows):
                wire = good[fi] / eta[fi] * dt
                wire = min(wire, line[s] * up[s] * dt)
                pkts = wire / tech.data_frame
                lost = pkts * (1.0 - 1.0 / (1.0 + (1.0 / eta[fi] - 1.0)))  # = pkts * p*W/(1+p*W) retransmitted
                p = (1.0 / eta[fi] - 1.0) / max(line[d] * RTT_S / tech.data_frame, 1e-9)
                lost_n = _poisson(rng, pkts * p) if p > 0 else 0
                del lost
                tx_b[s] += wire
                rx_b[d] += wire - lost_n * tech.data_frame
                sa, da = accs[(s, j)], accs[(d, j)]
                # RDMA write requests: one per 64 KiB message at the responder
                da.add("rx_write_requests", k, good[fi] * dt / 65536)
                if lost_n:
                    sa.add("packet_seq_errors", k, lost_n)
                    da.add("out_of_sequence_packets", k, lost_n)
                    sa.add("local_ack_timeout_errors", k, _poisson(rng, lost_n / 500))
                    da.add("duplicate_requests", k, _poisson(rng, lost_n * 0.02))
                    if loss_tx[s] > loss_p[d]:
                        pass  # corrupted on the sender's cable, dropped at the leaf: the receiver counts no error
                    elif roce:
                        if (hosts[d].name, j) in pfc_off and loss_p[d] == 0:
                            da.add("phy_rx_discards", k, _poisson(rng, lost_n * 0.1))
                        else:
                            da.add("phy_rx_crc_errors", k, lost_n)
                            da.add("phy_rx_symbol_errors", k, lost_n * 3)
                    else:
                        da.add("port_rcv_errors", k, lost_n)
                        da.add("symbol_errors", k, lost_n * 3)
                blocked = share * (1.0 - s_cong[fi])  # share of the interval the sender was held back
                if blocked > 0:
                    if not roce:
                        sa.add("port_xmit_wait_ticks", k, blocked * dt * line[s] * 8 / XMIT_WAIT_TICK_BITS)
                    elif storm[d] > 0:
                        sa.add("rx_pause_duration_us", k, blocked * dt * 1e6, ROCE_PRIORITY)
                    elif (hosts[d].name, j) not in pfc_off:
                        sa.add("rx_pause_duration_us", k, 0.1 * blocked * dt * 1e6, ROCE_PRIORITY)
                if roce and ratio[fi] > 1.0:
                    rxp = (wire / tech.data_frame) * min(0.25, 0.02 + 0.08 * (ratio[fi] - 1.0))
                    da.add("np_ecn_marked_roce_packets", k, rxp)
                    da.add("prio_rx_ecn_marked_packets", k, rxp, ROCE_PRIORITY)
                    if (hosts[d].name, j) not in pfc_off:
                        cnp = min(rxp, 16 * dt / 4e-6)
                        da.add("np_cnp_sent_packets", k, cnp)
                        da.add("_cnp_tx", k, cnp)
                        key = "rp_cnp_ignored_packets" if (hosts[s].name, j) in pfc_off else "rp_cnp_handled_packets"
                        sa.add(key, k, cnp)
                        sa.add("_cnp_rx", k, cnp)
            for i in range(nh):
                acc = accs[(i, j)]
                acc.add("_tx_wire", k, tx_b[i])
                acc.add("_rx_wire", k, rx_b[i])
                rate_rows.append((hosts[i].name, nics[i].device, k, tx_b[i] / dt, rx_b[i] / dt, float(line[i])))
                nic_tx[i] += tx_b[i] / dt
                nic_rx[i] += rx_b[i] / dt
                if roce:
                    acc.add("rx_pause_duration_us", k, 0.0, ROCE_PRIORITY)
                    if (hosts[i].name, j) not in pfc_off and up[i] > 0:
                        # microbursts at step boundaries: brief pauses from the leaf
                        burst = 0.0
                        for f in fl("bursty_pfc"):
                            if f.hits(i, j) or f.host < 0:
                                burst = max(burst, f.params.get("share", 0.03))
                        share = rng.uniform(0.0, 0.004) + (rng.uniform(0.3, 1.7) * burst if burst else 0.0)
                        acc.add("rx_pause_duration_us", k, share * dt * 1e6, ROCE_PRIORITY)
                    for f in fl("pfc_storm"):
                        spread = f.params.get("leaf_spread", 0.0)
                        if spread and i != f.host and hosts[i].leaf == hosts[f.host].leaf:
                            # the leaf's queue toward the storming port fills and the leaf pauses its
                            # other ingress ports on that priority (head-of-line blocking)
                            acc.add("rx_pause_duration_us", k, spread * f.overlap(a, b, end) * 1e6, ROCE_PRIORITY)
                        across = f.params.get("spine_spread", 0.0)
                        if across and hosts[i].leaf != hosts[f.host].leaf:
                            # the storm's leaf pauses its spine uplinks too; the spine's queue toward
                            # that leaf fills, it pauses the other leaves, and they pause their hosts
                            acc.add("rx_pause_duration_us", k, across * f.overlap(a, b, end) * 1e6, ROCE_PRIORITY)
                    for f in fl("leaf_pause"):
                        if f.hits(i, j):
                            # congestion behind the host's leaf that is no storm (an incast on another port)
                            share = f.params.get("share", 0.4)
                            acc.add("rx_pause_duration_us", k, share * f.overlap(a, b, end) * 1e6, ROCE_PRIORITY)
                    if storm[i] > 0:
                        acc.add("tx_pause_duration_us", k, storm_share[i] * storm[i] * dt * 1e6, ROCE_PRIORITY)
                        if storm_watchdog[i]:
                            acc.add("tx_pause_storm_warning_events", k, max(1, int(storm[i] * dt / 8)))
                            acc.add("tx_pause_storm_error_events", k, int(storm[i] * dt / 16))
                        acc.add(
                            "phy_rx_discards", k, _poisson(rng, 0.02 * storm[i] * dt * line[i] / tech.data_frame * 0.01)
                        )
                else:
                    # credit stalls of a healthy fabric: ~0.5-2% of the time
                    acc.add(
                        "port_xmit_wait_ticks", k, rng.uniform(0.005, 0.02) * dt * line[i] * 8 / XMIT_WAIT_TICK_BITS
                    )
                if up[i] < 1.0:
                    for f in fl("link_flap"):
                        if f.hits(i, j):
                            for s0 in f.params["at"]:
                                if a <= s0 < b:
                                    acc.add("link_downed_events", k, 1)
                                    acc.add("link_error_recovery_events", k, 0)
                                    acc.add("phy_link_down_events", k, 1)
                                    acc.add("netdev_carrier_changes", k, 2)
                for f in fl("symbol_errors"):
                    if f.hits(i, j) and (ov := f.overlap(a, b, end)) > 0:
                        n_sym = _poisson(rng, f.params["rate_per_s"] * ov)
                        acc.add("phy_rx_symbol_errors" if roce else "symbol_errors", k, n_sym)
                for f in fl("q_counter_wrap"):
                    if f.hits(i, j):
                        acc.add("out_of_sequence_packets", k, _poisson(rng, f.params.get("oos_per_s", 0.02) * dt))
        # NVLink per GPU (DCGM PROF rates are gauges: B/s averaged over the sample)
        for i, h in enumerate(hosts):
            sat = any(f.host == i and f.overlap(a, b, end) > 0 for f in fl("nvlink_saturated"))
            for g in h.gpus:
                share = rng.uniform(0.95, 0.99) if sat else workload.nvlink_share * rng.uniform(0.85, 1.1)
                tx = share * NVLINK_BYTES_PER_S
                gpu_rows.append((i, g.index, k + 1, tx, tx * rng.uniform(0.98, 1.0)))
            if workload.pcie_h2d_bytes_per_s is not None:
                ng = max(len(h.gpus), 1)
                for g in h.gpus:
                    h2d = workload.pcie_h2d_bytes_per_s * rng.uniform(0.9, 1.1)
                    pcie_rows.append((i, g.index, k + 1, nic_tx[i] / ng, nic_rx[i] / ng + h2d))
    # link state per sample
    for i, h in enumerate(hosts):
        for n in h.nics:
            st = []
            for s in range(samples):
                t = s * dt
                down = any(
                    f.hits(i, n.index) and any(x <= t < x + f.params.get("down_s", 5.0) for x in f.params["at"])
                    for f in fl("link_flap")
                )
                st.append((1, 2) if down else (4, 5))
            state[(i, n.index)] = st
    missing: set[tuple[str, int]] = set()
    for f in fl("missing_samples"):
        for s in f.params["samples"]:
            if 0 < s < samples - 1:
                missing.add((hosts[f.host].name, s))
    frame = _counters(fabric, accs, state, gpu_rows, faults, samples, dt, rng, pfc_off, roce, pcie_rows)
    ecn_off = set(pfc_off)
    rates = pl.DataFrame(
        rate_rows,
        schema={
            "host": pl.String,
            "device": pl.String,
            "k": pl.Int64,
            "tx_bps": pl.Float64,
            "rx_bps": pl.Float64,
            "line": pl.Float64,
        },
        orient="row",
    )
    times = [t0 * 1000 + round(s * dt * 1000) for s in range(samples)]
    return Simulation(fabric, times, frame, missing, rates, pfc_off, ecn_off)


def _cum(incs: list[float], offset: int) -> list[int]:
    out, v, carry = [offset], offset, 0.0
    for x in incs:
        carry += x
        whole = int(carry)
        carry -= whole
        v += whole
        out.append(v)
    return out


def _counters(
    fabric: Fabric,
    accs: dict[tuple[int, int], _Acc],
    state: dict[tuple[int, int], list[tuple[int, int]]],
    gpu_rows: list[tuple[int, int, int, float, float]],
    faults: list[Fault],
    samples: int,
    dt: float,
    rng: random.Random,
    pfc_off: set[tuple[str, int]],
    roce: bool,
    pcie_rows: list[tuple[int, int, int, float, float]],
) -> pl.DataFrame:
    tech = fabric.tech
    rows: list[tuple[int, str, str, int | None, int | None, str, int, str, bool]] = []
    resets = [f for f in faults if f.kind == "counter_reset"]
    wraps = [f for f in faults if f.kind == "q_counter_wrap"]
    nk = samples - 1
    for i, h in enumerate(fabric.hosts):
        for n in h.nics:
            acc = accs[(i, n.index)]
            z = [0.0] * nk
            tx_wire = acc.inc.get(("_tx_wire", None), z)
            rx_wire = acc.inc.get(("_rx_wire", None), z)
            cnp_tx = acc.inc.get(("_cnp_tx", None), z)
            cnp_rx = acc.inc.get(("_cnp_rx", None), z)
            # whole packets; ACKs (one per 16 data packets) flow the other way
            tx_data = _cum(tx_wire, 0)
            rx_data = _cum(rx_wire, 0)
            tx_dp = [int(v // tech.data_frame) for v in tx_data]
            rx_dp = [int(v // tech.data_frame) for v in rx_data]
            tx_ack = [v // 16 for v in rx_dp]
            rx_ack = [v // 16 for v in tx_dp]
            mc = [int(s * dt * MCAST_PER_S) for s in range(samples)]
            cnp_t = _cum(cnp_tx, 0)
            cnp_r = _cum(cnp_rx, 0)
            tx_pk = [d + a + m + c for d, a, m, c in zip(tx_dp, tx_ack, mc, cnp_t, strict=True)]
            rx_pk = [d + a + m + c for d, a, m, c in zip(rx_dp, rx_ack, mc, cnp_r, strict=True)]
            tx_by = [
                d * tech.data_frame + (a + m + c) * tech.ctrl_frame
                for d, a, m, c in zip(tx_dp, tx_ack, mc, cnp_t, strict=True)
            ]
            rx_by = [
                d * tech.data_frame + (a + m + c) * tech.ctrl_frame
                for d, a, m, c in zip(rx_dp, rx_ack, mc, cnp_r, strict=True)
            ]
            series: dict[tuple[str, int | None], list[int]] = {}
            uptime_s = rng.uniform(1.0, 2.5) * 86400  # days since the last driver load (keeps values < 2^53)
            util = rng.uniform(0.2, 0.5)

            def off(per_s: float, *, uptime_s: float = uptime_s, util: float = util) -> int:
                return int(per_s * uptime_s * util)

            fam_ib = "ib"
            pkt_off = off(tech.line_rate / tech.data_frame)
            byte_off = pkt_off * tech.data_frame
            series[("port_xmit_data_bytes", None)] = [byte_off + v for v in tx_by]
            rcv_off = byte_off + 4 * rng.randrange(10**9)
            series[("port_rcv_data_bytes", None)] = [rcv_off + v for v in rx_by]
            series[("port_xmit_packets", None)] = [pkt_off + v for v in tx_pk]
            series[("port_rcv_packets", None)] = [pkt_off + 7 + v for v in rx_pk]
            mc_off = off(MCAST_PER_S / 0.3)
            if n.ext_width:
                series[("unicast_xmit_packets", None)] = [
                    pkt_off - mc_off + v - m for v, m in zip(tx_pk, mc, strict=True)
                ]
                series[("unicast_rcv_packets", None)] = [
                    pkt_off + 7 - mc_off + v - m for v, m in zip(rx_pk, mc, strict=True)
                ]
                series[("multicast_xmit_packets", None)] = [mc_off + m for m in mc]
                series[("multicast_rcv_packets", None)] = [mc_off + m for m in mc]
            for c in PMA_ERROR_BITS:
                series[(c, None)] = _cum(acc.inc.get((c, None), z), 0)
            series[("port_xmit_wait_ticks", None)] = _cum(
                acc.inc.get(("port_xmit_wait_ticks", None), z), off(0.01 * tech.line_rate * 8 / XMIT_WAIT_TICK_BITS)
            )
            wr = _cum(acc.inc.get(("rx_write_requests", None), z), off(tech.line_rate / 65536) % (1 << 31))
            for f in wraps:
                if f.hits(i, n.index):
                    wr = [
                        v - wr[0] + U32 - int(f.params.get("headroom_s", 300) * tech.line_rate * 0.3 / 65536)
                        for v in wr
                    ]
            series[("rx_write_requests", None)] = wr
            series[("rx_read_requests", None)] = [12_004 + off(0.001)] * samples
            series[("rx_atomic_requests", None)] = [0] * samples
            series[("rx_out_of_buffer_packets", None)] = [311 + off(1e-4)] * samples
            for c in Q_COUNTERS[4:]:
                start = 0
                for f in wraps:
                    if f.hits(i, n.index) and c == "out_of_sequence_packets":
                        start = U32 - f.params.get("oos_headroom", 10)
                series[(c, None)] = _cum(acc.inc.get((c, None), z), start)
            if roce:
                for c in CONG_COUNTERS:
                    series[(c, None)] = _cum(
                        acc.inc.get((c, None), z), off(2.0) if c != "rp_cnp_ignored_packets" else 0
                    )
            # ---- netdev / ethtool (RoCE) ----
            eth: dict[tuple[str, int | None], list[int]] = {}
            if roce:
                sw_pk = [int(s * dt * 20_000) for s in range(samples)]  # TCP/IP on the netdev: ~160 Mb/s
                sw_by = [p * 1000 for p in sw_pk]
                o_sw = off(20_000)
                eth[("netdev_rx_packets", None)] = [o_sw + v for v in sw_pk]
                eth[("netdev_tx_packets", None)] = [o_sw + 5 + v for v in sw_pk]
                eth[("netdev_rx_bytes", None)] = [o_sw * 1000 + v for v in sw_by]
                eth[("netdev_tx_bytes", None)] = [o_sw * 1000 + 5000 + v for v in sw_by]
                o_r = byte_off
                eth[("vport_rdma_tx_unicast_packets", None)] = [
                    pkt_off + d + a for d, a in zip(tx_dp, tx_ack, strict=True)
                ]
                eth[("vport_rdma_rx_unicast_packets", None)] = [
                    pkt_off + d + a for d, a in zip(rx_dp, rx_ack, strict=True)
                ]
                eth[("vport_rdma_tx_unicast_bytes", None)] = [
                    o_r + d * tech.data_frame + a * tech.ctrl_frame for d, a in zip(tx_dp, tx_ack, strict=True)
                ]
                eth[("vport_rdma_rx_unicast_bytes", None)] = [
                    o_r + d * tech.data_frame + a * tech.ctrl_frame for d, a in zip(rx_dp, rx_ack, strict=True)
                ]
                for p in range(8):
                    if p == ROCE_PRIORITY:
                        tb = eth[("vport_rdma_tx_unicast_bytes", None)]
                        rb = eth[("vport_rdma_rx_unicast_bytes", None)]
                        tp = eth[("vport_rdma_tx_unicast_packets", None)]
                        rp = eth[("vport_rdma_rx_unicast_packets", None)]
                    elif p == CNP_PRIORITY:
                        tp = [off(2.0) + v for v in cnp_t]
                        rp = [off(2.0) + v for v in cnp_r]
                        tb = [v * tech.ctrl_frame for v in tp]
                        rb = [v * tech.ctrl_frame for v in rp]
                    elif p == 0:
                        tp = [eth[("netdev_tx_packets", None)][s] + mc[s] for s in range(samples)]
                        rp = [eth[("netdev_rx_packets", None)][s] + mc[s] for s in range(samples)]
                        tb = [eth[("netdev_tx_bytes", None)][s] + 64 * mc[s] for s in range(samples)]
                        rb = [eth[("netdev_rx_bytes", None)][s] + 64 * mc[s] for s in range(samples)]
                    else:
                        tp = rp = tb = rb = [0] * samples
                    eth[("prio_tx_packets", p)], eth[("prio_rx_packets", p)] = tp, rp
                    eth[("prio_tx_bytes", p)], eth[("prio_rx_bytes", p)] = tb, rb
                eth[("phy_tx_packets", None)] = [
                    sum(eth[("prio_tx_packets", p)][s] for p in range(8)) for s in range(samples)
                ]
                eth[("phy_rx_packets", None)] = [
                    sum(eth[("prio_rx_packets", p)][s] for p in range(8)) for s in range(samples)
                ]
                eth[("phy_tx_bytes", None)] = [
                    sum(eth[("prio_tx_bytes", p)][s] for p in range(8)) for s in range(samples)
                ]
                eth[("phy_rx_bytes", None)] = [
                    sum(eth[("prio_rx_bytes", p)][s] for p in range(8)) for s in range(samples)
                ]
                for c in ("phy_rx_crc_errors", "phy_rx_symbol_errors", "phy_rx_discards", "phy_link_down_events"):
                    eth[(c, None)] = _cum(acc.inc.get((c, None), z), 1 if c == "phy_link_down_events" else 0)
                eth[("phy_tx_discards", None)] = [0] * samples
                eth[("rx_out_of_buffer_packets", None)] = series[("rx_out_of_buffer_packets", None)]
                eth[("prio_rx_ecn_marked_packets", ROCE_PRIORITY)] = _cum(
                    acc.inc.get(("prio_rx_ecn_marked_packets", ROCE_PRIORITY), z), 0
                )
                if (h.name, n.index) not in pfc_off:
                    rx_us = _cum(acc.inc.get(("rx_pause_duration_us", ROCE_PRIORITY), z), off(0.002 * 1e6))
                    tx_us = _cum(acc.inc.get(("tx_pause_duration_us", ROCE_PRIORITY), z), off(0.0001 * 1e6))
                    quanta_us = PAUSE_QUANTA_BITS / (n.line_rate * 8) * 1e6
                    # a paused peer is refreshed every half quanta; each episode is one XOFF->XON transition
                    eth[("rx_pause_duration_us", ROCE_PRIORITY)] = rx_us
                    eth[("rx_pause_frames", ROCE_PRIORITY)] = [int(v / (quanta_us / 2)) for v in rx_us]
                    eth[("rx_pause_transitions", ROCE_PRIORITY)] = [int(v / 400.0) for v in rx_us]
                    eth[("tx_pause_duration_us", ROCE_PRIORITY)] = tx_us
                    eth[("tx_pause_frames", ROCE_PRIORITY)] = [int(v / (quanta_us / 2)) for v in tx_us]
                    # This NIC pauses its peer only in a storm, one unbroken episode: no new XOFF->XON
                    # transition while it lasts (drivers counting them: bnxt_en, ice's XON frames).
                    eth[("tx_pause_transitions", ROCE_PRIORITY)] = [int(tx_us[0] / 400.0)] * samples
                    for c in ("tx_pause_storm_warning_events", "tx_pause_storm_error_events"):
                        eth[(c, None)] = _cum(acc.inc.get((c, None), z), 0)
                series[("netdev_carrier_changes", None)] = _cum(acc.inc.get(("netdev_carrier_changes", None), z), 2)
            # ---- register widths ----
            for (c, p), vals in series.items():
                if c in PMA_ERROR_BITS:
                    cap = (1 << PMA_ERROR_BITS[c]) - 1
                    series[(c, p)] = [min(v, cap) for v in vals]
                elif c in Q_COUNTERS:
                    series[(c, p)] = [v & U32 for v in vals]
            if not n.ext_width:
                for c, scale in (
                    ("port_xmit_data_bytes", 4),
                    ("port_rcv_data_bytes", 4),
                    ("port_xmit_packets", 1),
                    ("port_rcv_packets", 1),
                ):
                    vals = series[(c, None)]
                    # a 32-bit register that has been counting for days: shortly before its maximum
                    base = max(U32 * scale // 2, U32 * scale - (vals[-1] - vals[0]) // 3)
                    base -= base % scale
                    series[(c, None)] = [min(base + v - vals[0], U32 * scale) for v in vals]
                series[("port_xmit_wait_ticks", None)] = [U32] * samples
            # ---- driver reload: everything restarts from zero ----
            for f in resets:
                if f.hits(i, n.index):
                    r = next((s for s in range(samples) if s * dt >= f.start), None)
                    if r is not None:
                        for dct in (series, eth):
                            for key, vals in dct.items():
                                if key[0] in ("netdev_carrier_changes",):
                                    continue
                                base = vals[r - 1]
                                # the reload happened between samples r-1 and r; count only after it
                                frac = 0.5
                                dct[key] = vals[:r] + [
                                    max(0, int(v - base - (vals[r] - base) * frac)) if v >= base else v
                                    for v in vals[r:]
                                ]
            # ---- rows ----
            for c in ("port_xmit_data_bytes", "port_rcv_data_bytes"):
                # PortXmitData/PortRcvData count 4-octet words
                series[(c, None)] = [v - v % 4 for v in series[(c, None)]]
            for (c, p), vals in series.items():
                dev = n.netdev if c == "netdev_carrier_changes" else n.device
                port = None if c == "netdev_carrier_changes" else n.port
                fam = "net" if c == "netdev_carrier_changes" else fam_ib
                for s, v in enumerate(vals):
                    rows.append((s, h.name, dev, port, p, c, int(v), fam, True))
            for (c, p), vals in eth.items():
                for s, v in enumerate(vals):
                    rows.append((s, h.name, n.netdev or n.device, None, p, c, int(v), "eth", True))
            st = state[(i, n.index)]
            for s in range(samples):
                rows.append((s, h.name, n.device, n.port, None, "link_rate_bytes_per_s", n.line_rate, "ib", False))
                rows.append((s, h.name, n.device, n.port, None, "port_state_id", st[s][0], "ib", False))
                rows.append((s, h.name, n.device, n.port, None, "port_phys_state_id", st[s][1], "ib", False))
    for hi, g, s, tx, rx in gpu_rows:
        h = fabric.hosts[hi]
        rows.append((s, h.name, f"gpu{g}", None, None, "nvlink_tx_bytes_per_s", int(tx), "gpu", False))
        rows.append((s, h.name, f"gpu{g}", None, None, "nvlink_rx_bytes_per_s", int(rx), "gpu", False))
    for hi, g, s, tx, rx in pcie_rows:
        h = fabric.hosts[hi]
        rows.append((s, h.name, f"gpu{g}", None, None, "pcie_tx_bytes_per_s", int(tx), "gpu", False))
        rows.append((s, h.name, f"gpu{g}", None, None, "pcie_rx_bytes_per_s", int(rx), "gpu", False))
    return pl.DataFrame(
        rows,
        schema={
            "k": pl.Int64,
            "host": pl.String,
            "device": pl.String,
            "port": pl.UInt16,
            "priority": pl.UInt8,
            "counter": pl.String,
            "value": pl.UInt64,
            "family": pl.String,
            "is_counter": pl.Boolean,
        },
        orient="row",
    )


def host_of(fabric: Fabric, i: int) -> Host:
    """The host at index ``i`` (clamped to the fabric)."""
    return fabric.hosts[min(i, len(fabric.hosts) - 1)]
