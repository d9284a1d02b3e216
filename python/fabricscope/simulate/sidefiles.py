"""Side files a cluster has next to its counters: the fabric topology and collective benchmarks.

* ``ibnetdiscover -p`` output (InfiniBand only): one line per port, HCAs named
  ``"<host> <device>"`` as rdma-ndd sets the NodeDescription, leaves and spines as
  ``MF0;<name>:MQM9700/U1`` as NVIDIA Quantum-2 switches report themselves.
* nccl-tests ``all_reduce_perf`` logs, one per run, preceded by a ``date +%s`` line: the bus
  bandwidth a ring all-reduce over the run's hosts reaches at that moment of the simulation, from the
  same physics as the counters (the slowest hop of the ring, go-back-N efficiency on a lossy hop, the
  receive capacity left by a pause storm).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from fabricscope.simulate.fabric import Fabric
from fabricscope.simulate.model import ACHIEVABLE, RTT_S, Fault

__all__ = [
    "ring_busbw_bytes_per_s",
    "write_ibnetdiscover",
    "write_lldpctl",
    "write_nccl_tests",
    "write_sonic_lldp_table",
]

_SIZES = (1 << 30, 1 << 31, 1 << 32, 1 << 33)


def _switch_name(prefix: str, kind: str, i: int) -> str:
    return f"MF0;{prefix}-{kind}{i + 1:02d}:MQM9700/U1"


def _switch_guid(fabric: Fabric, kind: str, i: int) -> str:
    return (fabric.leaf_guids if kind == "leaf" else fabric.spine_guids)[i]


def write_lldpctl(fabric: Fabric, outdir: Path, *, prefix: str) -> None:
    """``lldpctl`` on every RoCE host, one file per host: which leaf port each NIC is cabled to.

    Even hosts get ``-f keyvalue``, odd hosts ``-f json`` (lldpd's layouts, ``tests/fixtures/lldpctl``),
    each with a ``# host:`` line first. Leaves are SONiC switches (Bridge and Router capable) that
    send their port name as an ``ifname`` port ID: NIC n under a leaf is on ``Ethernet{4(n-1)}``.
    """
    outdir.mkdir(parents=True, exist_ok=True)
    pos: dict[int, int] = {}
    for i, h in enumerate(fabric.hosts):
        leaf = f"{prefix}-leaf{h.leaf + 1:02d}"
        kv = [f"# host: {h.name}"]
        interfaces: dict[str, Any] = {}
        for nic in h.nics:
            if nic.netdev is None:
                continue
            pos[h.leaf] = pos.get(h.leaf, 0) + 1
            port = f"Ethernet{4 * (pos[h.leaf] - 1)}"
            mac = f"1c:34:da:{h.leaf:02x}:00:{pos[h.leaf]:02x}"
            kv += [
                f"lldp.{nic.netdev}.via=LLDP",
                f"lldp.{nic.netdev}.chassis.mac={mac}",
                f"lldp.{nic.netdev}.chassis.name={leaf}",
                f"lldp.{nic.netdev}.chassis.Bridge.enabled=on",
                f"lldp.{nic.netdev}.chassis.Router.enabled=on",
                f"lldp.{nic.netdev}.port.ifname={port}",
                f"lldp.{nic.netdev}.port.ttl=120",
            ]
            interfaces[nic.netdev] = {
                "via": "LLDP",
                "chassis": {
                    leaf: {
                        "id": {"type": "mac", "value": mac},
                        "capability": [{"type": "Bridge", "enabled": True}, {"type": "Router", "enabled": True}],
                    }
                },
                "port": {"id": {"type": "ifname", "value": port}, "ttl": "120"},
            }
        if i % 2 == 0:
            (outdir / f"{h.name}.lldpctl.txt").write_text("\n".join(kv) + "\n")
        else:
            doc = json.dumps({"lldp": {"interface": interfaces}}, indent=2)
            (outdir / f"{h.name}.lldpctl.json").write_text(f"# host: {h.name}\n{doc}\n")


def write_sonic_lldp_table(fabric: Fabric, outdir: Path, *, prefix: str) -> None:
    """SONiC ``show lldp table`` on every RoCE leaf, one file per leaf: the same cabling as :func:`write_lldpctl`.

    Each host runs lldpd with its defaults (the NIC's MAC as port ID, the interface name as
    description) and IP forwarding on (capability ``R``); NIC n under a leaf is on ``Ethernet{4(n-1)}``.
    Spine s (SONiC too: ``BR``, its port named by ``ifname``) is on the leaf's ``Ethernet{256 + 4s}``,
    on its own ``Ethernet{4l}`` for leaf l. The layout is sonic-utilities ``lldpshow``'s
    (``tests/fixtures/sonic_lldp``), after a ``# host:`` line.
    """
    outdir.mkdir(parents=True, exist_ok=True)
    rows: dict[int, list[tuple[str, ...]]] = {}
    for h in fabric.hosts:
        for nic in h.nics:
            if nic.netdev is None:
                continue
            n = len(rows.setdefault(h.leaf, [])) + 1
            mac = f"0c:42:a1:{h.leaf:02x}:00:{n:02x}"
            rows[h.leaf].append((f"Ethernet{4 * (n - 1)}", h.name, mac, "R", nic.netdev))
    for leaf, table in rows.items():
        for si in range(fabric.spines):
            table.append((f"Ethernet{256 + 4 * si}", f"{prefix}-spine{si + 1:02d}", f"Ethernet{4 * leaf}", "BR", ""))
    header = ("LocalPort", "RemoteDevice", "RemotePortID", "Capability", "RemotePortDescr")
    for leaf, table in rows.items():
        name = f"{prefix}-leaf{leaf + 1:02d}"
        # python-tabulate's simple layout: a column as wide as its widest cell, at least its header + 2
        widths = [max([len(header[i]) + 2] + [len(r[i]) for r in table]) for i in range(len(header))]
        cells = [header, *table]
        lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in cells]
        text = [
            f"# host: {name}",
            "Capability codes: (R) Router, (B) Bridge, (O) Other",
            lines[0],
            "  ".join("-" * w for w in widths),
            *lines[1:],
            "-" * 50,
            f"Total entries displayed:  {len(table)}",
        ]
        (outdir / f"{name}.show-lldp-table.txt").write_text("\n".join(text) + "\n")


def write_ibnetdiscover(fabric: Fabric, out: Path, *, prefix: str, t_s: int, host: str = "mgmt01") -> None:
    """``ibnetdiscover -p`` of the fabric, as run on a management node (``# host:`` and ``date +%s`` first).

    Each host NIC hangs off its leaf at port (position under the leaf + 1); each leaf has one uplink
    per spine at ports 61, 62, ... (spine port = leaf index + 1).
    """
    lid = 1
    lids: dict[str, int] = {}
    for kind, n in (("spine", fabric.spines), ("leaf", fabric.leaves)):
        for i in range(n):
            lids[_switch_guid(fabric, kind, i)] = lid
            lid += 1
    lines = [f"# host: {host}", str(t_s)]

    def line(
        a_kind: str, a_lid: int, a_port: int, a_guid: str, width: str, b_kind: str, b_lid: int, b_port: int, b_guid: str
    ) -> str:
        return f"{a_kind:<3}{a_lid:>6}{a_port:>3} {a_guid} {width} - {b_kind:<3}{b_lid:>6}{b_port:>3} {b_guid}"

    pos: dict[int, int] = {}
    for h in fabric.hosts:
        lg = _switch_guid(fabric, "leaf", h.leaf)
        ln = _switch_name(prefix, "leaf", h.leaf)
        for nic in h.nics:
            pos[h.leaf] = pos.get(h.leaf, 0) + 1
            lp = pos[h.leaf]
            width = f"{nic.width}x {nic.speed_name}"
            hl = lid
            lid += 1
            name = f"{h.name} {nic.device}"
            lines.append(line("CA", hl, nic.port, nic.guid, width, "SW", lids[lg], lp, lg) + f" ( '{name}' - '{ln}' )")
            lines.append(line("SW", lids[lg], lp, lg, width, "CA", hl, nic.port, nic.guid) + f" ( '{ln}' - '{name}' )")
    width = f"{fabric.tech.lanes}x {fabric.tech.speed_name}"
    for li in range(fabric.leaves):
        lg, ln = _switch_guid(fabric, "leaf", li), _switch_name(prefix, "leaf", li)
        for si in range(fabric.spines):
            sg, sn = _switch_guid(fabric, "spine", si), _switch_name(prefix, "spine", si)
            lines.append(line("SW", lids[lg], 61 + si, lg, width, "SW", lids[sg], li + 1, sg) + f" ( '{ln}' - '{sn}' )")
            lines.append(line("SW", lids[sg], li + 1, sg, width, "SW", lids[lg], 61 + si, lg) + f" ( '{sn}' - '{ln}' )")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(lines) + "\n")


def write_ibdev2netdev(fabric: Fabric, outdir: Path, *, t_s: int) -> None:
    """``ibdev2netdev`` on each RoCE host (``# host:`` and ``date +%s`` first), one file per host.

    Lines as MLNX_OFED's script prints them, ``mlx5_0 port 1 ==> eth0 (Up)``: what joins a NIC's
    ethtool name to its sysfs hw_counters name.
    """
    outdir.mkdir(parents=True, exist_ok=True)
    for h in fabric.hosts:
        nics = [n for n in h.nics if n.netdev]
        if not nics:
            continue
        lines = [f"# host: {h.name}", str(t_s)]
        lines += [f"{n.device} port {n.port} ==> {n.netdev} (Up)" for n in nics]
        (outdir / f"{h.name}-ibdev2netdev.txt").write_text("\n".join(lines) + "\n")


def ring_busbw_bytes_per_s(fabric: Fabric, faults: list[Fault], hosts: list[int], t: float, end: float) -> float:
    """Bus bandwidth of a ring all-reduce over ``hosts`` at second ``t``: its slowest hop.

    A host's hop moves at its NICs' line rate times the achievable share, times the go-back-N
    efficiency ``1/(1 + pW)`` of loss into it, times the receive capacity a pause storm leaves.
    """
    tech = fabric.tech
    rates = []
    for i in hosts:
        total = 0.0
        for n in fabric.hosts[i].nics:
            p, storm = 0.0, 0.0
            for f in faults:
                if not f.hits(i, n.index) or f.overlap(t, t + 1.0, end) <= 0:
                    continue
                if f.kind == "lossy_link":
                    p = max(p, float(f.params["p"]))
                elif f.kind == "pfc_storm":
                    storm = 1.0
            w = n.line_rate * RTT_S / tech.data_frame
            total += n.line_rate * ACHIEVABLE / (1.0 + p * w) * (1.0 - 0.98 * storm)
        rates.append(total)
    return min(rates)


def write_nccl_tests(
    fabric: Fabric, faults: list[Fault], runs: list[dict[str, Any]], outdir: Path, *, t0: int, end: float
) -> None:
    """One ``all_reduce_perf`` log per run (``{"hosts": [index...], "at": seconds}``), 8 GPUs per host.

    A run may name its GPUs (``"gpus"`` per host, ``"gpu_name"`` as the rank lines print it):
    an NVL72 tray has 4 GB200s.
    """
    outdir.mkdir(parents=True, exist_ok=True)
    for n_run, run in enumerate(runs):
        hosts = list(run["hosts"])
        at = float(run["at"])
        busbw = ring_busbw_bytes_per_s(fabric, faults, hosts, at, end)
        gpus = int(run.get("gpus", len(fabric.hosts[hosts[0]].gpus)))
        gpu_name = str(run.get("gpu_name", "NVIDIA H100 80GB HBM3"))
        n = len(hosts) * gpus
        lines = [
            str(t0 + round(at)),
            "# nThread 1 nGpus 1 minBytes 1073741824 maxBytes 8589934592 step: 2(factor) warmup iters: 5 "
            "iters: 20 agg iters: 1 validation: 1 graph: 0",
            "#",
            "# Using devices",
        ]
        rank = 0
        for i in hosts:
            for g in range(gpus):
                lines.append(
                    f"#  Rank {rank:>2} Group  0 Pid {41000 + rank:>6} on {fabric.hosts[i].name} device {g:>2} "
                    f"[0000:{0x18 + 0x10 * g:02x}:00] {gpu_name}"
                )
                rank += 1
        lines += [
            "#",
            "#                                                              out-of-place                       "
            "in-place          ",
            "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw"
            "   busbw #wrong",
            "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)"
            "  (GB/s)       ",
        ]
        total = 0.0
        for size in _SIZES:
            # smaller messages do not fill the pipeline: a fixed latency share per size
            bw = busbw * size / (size + 64e6)
            algbw = bw * n / (2 * (n - 1))
            us = size / algbw * 1e6
            total += bw
            cols = f"{us:>9.0f} {algbw / 1e9:>7.2f} {bw / 1e9:>7.2f} {0:>6}"
            lines.append(f"{size:>12} {size // 4:>13}     float     sum      -1 {cols} {cols}")
        lines += [
            "# Out of bounds values : 0 OK",
            f"# Avg bus bandwidth    : {total / len(_SIZES) / 1e9:.3f} ",
            "#",
        ]
        (outdir / f"all_reduce_perf-run{n_run + 1}.log").write_text("\n".join(lines) + "\n")
