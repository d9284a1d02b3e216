"""Regenerate the bundled sample traces (deterministic; run from the repository root).

    python sample_traces/generate.py

A small RoCE/IB cluster slice captured three ways, with the faults described in README.md.
Values follow the counters' physics: cumulative, starting at large offsets, IB data counters in
4-octet words in sysfs and bytes in node_exporter, bytes never exceeding line rate.
"""

from __future__ import annotations

import random
from pathlib import Path

ROOT = Path(__file__).resolve().parent
T0 = 1_796_200_000  # 2026-12-02T08:26:40Z, epoch seconds
NDR_BYTES_PER_S = 50_000_000_000  # 400 Gb/s


def go_float(v: int) -> str:
    """Format like Go's strconv.FormatFloat(v, 'g', -1, 64), as Prometheus client_golang does."""
    from decimal import Decimal

    f = float(v)
    if f == 0:
        return "0"
    d = Decimal(repr(f)).normalize()
    sign, digits, exp = d.as_tuple()
    e10 = len(digits) + exp - 1
    if -4 <= e10 < 21 and e10 < 6 + 0 * len(digits):
        return str(int(f)) if f.is_integer() else repr(f)
    mant = "".join(map(str, digits))
    mant = mant[0] + ("." + mant[1:] if len(mant) > 1 else "")
    return f"{'-' if sign else ''}{mant}e{'+' if e10 >= 0 else '-'}{abs(e10):02d}"


def federate() -> None:
    """Prometheus /federate output: 4 NDR hosts x 2 HCAs, 6 scrapes 15 s apart."""
    rng = random.Random(4791)
    hosts = [f"gpu{i:02d}" for i in range(1, 5)]
    devices = ["mlx5_0", "mlx5_1"]
    state: dict[tuple[str, str, str], int] = {}
    counters = {
        "node_infiniband_port_data_transmitted_bytes_total": (
            "counter",
            "Number of data octets transmitted on all links",
        ),
        "node_infiniband_port_data_received_bytes_total": (
            "counter",
            "Number of data octets received on all links",
        ),
        "node_infiniband_port_packets_transmitted_total": (
            "counter",
            "Number of packets transmitted on all VLs from this port (including errors)",
        ),
        "node_infiniband_port_packets_received_total": (
            "counter",
            "Number of packets received on all VLs by this port (including errors)",
        ),
        "node_infiniband_symbol_error_total": (
            "counter",
            "Number of minor link errors detected on one or more physical lanes.",
        ),
        "node_infiniband_link_downed_total": (
            "counter",
            "Number of times the link failed to recover from an error state and went down",
        ),
        "node_infiniband_port_transmit_wait_total": (
            "counter",
            "Number of ticks during which the port had data to transmit but no data was sent during the entire tick",
        ),
        "node_infiniband_port_errors_received_total": (
            "counter",
            "Number of packets containing an error that were received on this port",
        ),
        "node_infiniband_rate_bytes_per_second": ("gauge", "Maximum signal transfer rate"),
        "node_infiniband_state_id": (
            "gauge",
            "State of the InfiniBand port (0: no change, 1: down, 2: init, 3: armed, 4: active, 5: act defer)",
        ),
    }
    for h in hosts:
        for d in devices:
            for name in counters:
                state[(h, d, name)] = (
                    rng.randrange(10**12, 10**14)
                    if "data" in name
                    else rng.randrange(10**9, 10**11)
                    if "packets" in name
                    else 0
                )
    out: list[str] = []
    for scrape in range(6):
        ts_ms = (T0 + 15 * scrape) * 1000 + rng.randrange(0, 50)
        for name, (typ, help_) in counters.items():
            # /federate re-exposes every family as untyped and without HELP.
            del typ, help_
            out.append(f"# TYPE {name} untyped")
            for h in hosts:
                for d in devices:
                    key = (h, d, name)
                    util = 0.82 if h != "gpu03" else 0.41  # gpu03 runs at half speed
                    degraded = (h, d) == ("gpu04", "mlx5_1")  # trained at 2X: 200 Gb/s
                    line = NDR_BYTES_PER_S // 2 if degraded else NDR_BYTES_PER_S
                    if "data" in name and scrape:
                        state[key] += int(line * 15 * util * rng.uniform(0.97, 1.0)) // 4 * 4
                    elif "packets" in name and scrape:
                        state[key] += int(line * 15 * util / 4096)
                    elif name == "node_infiniband_symbol_error_total" and h == "gpu02" and d == "mlx5_1" and scrape:
                        state[key] += rng.randrange(180, 260)  # a marginal cable
                    elif name == "node_infiniband_port_transmit_wait_total" and h == "gpu03":
                        # Congested uplink: waiting ~12% of the time. 64-bit extended counter (the
                        # 32-bit one would peg within a second at NDR rates).
                        if scrape == 0:
                            state[key] = 9_000_000_000 + rng.randrange(10**9)
                        else:
                            state[key] += int(0.12 * 15 * NDR_BYTES_PER_S * 8 / 64 * rng.uniform(0.9, 1.1))
                    if name == "node_infiniband_rate_bytes_per_second":
                        v = "2.5e+10" if degraded else "5e+10"
                    elif name == "node_infiniband_state_id":
                        v = "4"
                    else:
                        v = go_float(state[key])
                    out.append(f'{name}{{device="{d}",instance="{h}:9100",job="node",port="1"}} {v} {ts_ms}')
    (ROOT / "prometheus").mkdir(exist_ok=True)
    (ROOT / "prometheus" / "federate-rail0.prom").write_text("\n".join(out) + "\n")


def ethtool_log() -> None:
    """`date +%s; ethtool -S eth2` appended every 10 s on a RoCE host with PFC on priority 3."""
    rng = random.Random(3)
    c = {
        "rx_packets": 8_113_227_004,
        "tx_packets": 8_020_771_101,
        "rx_bytes": 9_412_111_928_118,
        "tx_bytes": 9_331_245_112_870,
        "rx_packets_phy": 8_512_110_002,
        "tx_packets_phy": 8_490_112_355,
        "rx_bytes_phy": 9_801_225_341_202,
        "tx_bytes_phy": 9_790_114_002_996,
        "rx_crc_errors_phy": 0,
        "rx_symbol_err_phy": 0,
        "rx_discards_phy": 12_004,
        "tx_discards_phy": 0,
        "rx_out_of_buffer": 311,
        "rx_vport_rdma_unicast_packets": 7_901_200_881,
        "rx_vport_rdma_unicast_bytes": 9_120_005_110_224,
        "tx_vport_rdma_unicast_packets": 7_880_101_443,
        "tx_vport_rdma_unicast_bytes": 9_101_112_554_830,
        "rx_prio3_bytes": 9_120_005_110_224,
        "rx_prio3_packets": 7_901_200_881,
        "tx_prio3_bytes": 9_101_112_554_830,
        "tx_prio3_packets": 7_880_101_443,
        "rx_prio3_pause": 1_204_455,
        "rx_prio3_pause_duration": 88_120_554,
        "rx_prio3_pause_transition": 600_112,
        "tx_prio3_pause": 2_001,
        "tx_prio3_pause_duration": 100_220,
        "tx_pause_storm_warning_events": 0,
        "tx_pause_storm_error_events": 0,
        "link_down_events_phy": 1,
        "rx_prio0_bytes": 292_111_002_118,
        "rx_prio0_packets": 210_112_004,
        "outbound_pci_stalled_rd": 0,
    }
    lines = ["# host: roce01"]
    # Share of each 10 s interval during which received PFC pause on priority 3 held our transmit:
    # a storm builds until the peer pauses us without a break (no Xoff->Xon transitions).
    shares = [0.0, 0.02, 0.6, 0.995]
    transitions = [0, 150, 80, 0]
    for snap in range(4):
        if snap:
            share = shares[snap]
            for k in list(c):
                is_bytes = k.endswith("bytes") or k.endswith("bytes_phy")
                is_packets = "packets" in k
                if not (is_bytes or is_packets):
                    continue
                step = rng.uniform(3.0e10, 3.2e10) if is_bytes else rng.uniform(7.3e6, 7.8e6)
                # Paused on priority 3 means our RoCE transmit stops for that share of the time.
                if k.startswith("tx_") and (
                    "prio3" in k or "rdma" in k or "phy" in k or k in ("tx_packets", "tx_bytes")
                ):
                    step *= 1.0 - share
                c[k] += int(step)
            c["rx_prio3_pause_duration"] += int(10_000_000 * share)
            c["rx_prio3_pause"] += int(10_000_000 * share / 33)  # one refresh per ~33 us quanta
            c["rx_prio3_pause_transition"] += transitions[snap]
        lines.append(str(T0 + 10 * snap))
        lines.append("# ethtool -S eth2")
        lines.append("NIC statistics:")
        lines.extend(f"     {k}: {v}" for k, v in c.items())
    (ROOT / "ethtool").mkdir(exist_ok=True)
    (ROOT / "ethtool" / "roce01-eth2.log").write_text("\n".join(lines) + "\n")


def sysfs_tree() -> None:
    """A copied /sys/class/infiniband tree from an NDR host (one snapshot)."""
    base = ROOT / "sysfs" / "gpu02" / "sys" / "class" / "infiniband"
    (ROOT / "sysfs" / "gpu02" / "timestamp").parent.mkdir(parents=True, exist_ok=True)
    (ROOT / "sysfs" / "gpu02" / "sys" / "timestamp").parent.mkdir(parents=True, exist_ok=True)
    (ROOT / "sysfs" / "gpu02" / "sys" / "timestamp").write_text(f"{T0 + 90}\n")
    for i, dev in enumerate(["mlx5_0", "mlx5_1"]):
        d = base / dev
        (d / "ports" / "1" / "counters").mkdir(parents=True, exist_ok=True)
        (d / "ports" / "1" / "hw_counters").mkdir(parents=True, exist_ok=True)
        (d / "node_guid").write_text(f"a088:c203:00{i:02x}:5e1{i}\n")
        (d / "fw_ver").write_text("28.39.1002\n")
        (d / "board_id").write_text("MT_0000000838\n")
        (d / "hca_type").write_text("MT4129\n")
        p = d / "ports" / "1"
        (p / "rate").write_text("400 Gb/sec (4X NDR)\n")
        (p / "state").write_text("4: ACTIVE\n")
        (p / "phys_state").write_text("5: LinkUp\n")
        (p / "link_layer").write_text("InfiniBand\n")
        counters = {
            "port_xmit_data": 61_220_114_550_112 + i * 7,
            "port_rcv_data": 60_998_001_220_448 + i * 11,
            "port_xmit_packets": 14_004_112_905 + i,
            "port_rcv_packets": 13_998_441_020 + i,
            "unicast_xmit_packets": 14_004_000_001 + i,
            "unicast_rcv_packets": 13_998_300_112 + i,
            "multicast_xmit_packets": 112_904,
            "multicast_rcv_packets": 140_908,
            "symbol_error": 1_311 if dev == "mlx5_1" else 0,
            "link_error_recovery": 2 if dev == "mlx5_1" else 0,
            "link_downed": 0,
            "port_rcv_errors": 17 if dev == "mlx5_1" else 0,
            "port_rcv_remote_physical_errors": 0,
            "port_rcv_switch_relay_errors": 0,
            "port_xmit_discards": 0,
            "port_xmit_constraint_errors": 0,
            "port_rcv_constraint_errors": 0,
            "local_link_integrity_errors": 0,
            "excessive_buffer_overrun_errors": 0,
            "VL15_dropped": 0,
            "port_xmit_wait": 4_294_967_295 if dev == "mlx5_0" else 118_220_401,  # saturated 32-bit
        }
        for k, v in counters.items():
            (p / "counters" / k).write_text(f"{v}\n")
        hw = {
            "lifespan": 10,
            "out_of_buffer": 0,
            "out_of_sequence": 0,
            "duplicate_request": 0,
            "rnr_nak_retry_err": 0,
            "packet_seq_err": 0,
            "implied_nak_seq_err": 0,
            "local_ack_timeout_err": 3 if dev == "mlx5_1" else 0,
            "rx_write_requests": 8_812_004_112,
            "rx_read_requests": 12_004,
            "rx_atomic_requests": 0,
        }
        for k, v in hw.items():
            (p / "hw_counters" / k).write_text(f"{v}\n")


def sysfs_grep() -> None:
    """`date -Is; grep -H . /sys/class/infiniband/*/ports/*/{counters,hw_counters}/*`, twice."""
    lines = ["# host: roce02"]
    xmit, rcv = 88_100_220_004_112, 87_990_114_003_020
    oos, pse, cnp_sent, cnp_handled, ecn = 1_104, 1_101, 44_120, 43_990, 45_002
    import datetime as dt

    for snap in range(2):
        iso = dt.datetime.fromtimestamp(T0 + 30 * snap, dt.timezone.utc).isoformat()  # `date -Is`
        if snap:
            xmit += 30 * 48_000_000_000 // 4
            rcv += 30 * 47_500_000_000 // 4
            oos += 2_210  # lossy: go-back-N retransmissions on a RoCE port
            pse += 2_204
            cnp_sent += 18_004
            cnp_handled += 17_950
            ecn += 19_100
        lines.append(iso)
        pfx = "/sys/class/infiniband/mlx5_0/ports/1"
        lines += [
            f"{pfx}/counters/port_xmit_data:{xmit}",
            f"{pfx}/counters/port_rcv_data:{rcv}",
            f"{pfx}/counters/symbol_error:0",
            f"{pfx}/counters/link_downed:0",
            f"{pfx}/counters/port_rcv_errors:0",
            f"{pfx}/hw_counters/out_of_sequence:{oos}",
            f"{pfx}/hw_counters/packet_seq_err:{pse}",
            f"{pfx}/hw_counters/np_cnp_sent:{cnp_sent}",
            f"{pfx}/hw_counters/rp_cnp_handled:{cnp_handled}",
            f"{pfx}/hw_counters/np_ecn_marked_roce_packets:{ecn}",
            f"{pfx}/hw_counters/rp_cnp_ignored:0",
            f"{pfx}/link_layer:Ethernet",
            f"{pfx}/rate:400 Gb/sec (4X NDR)",
            f"{pfx}/state:4: ACTIVE",
        ]
    (ROOT / "sysfs-grep").mkdir(exist_ok=True)
    (ROOT / "sysfs-grep" / "roce02-counters.txt").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    federate()
    ethtool_log()
    sysfs_tree()
    sysfs_grep()
