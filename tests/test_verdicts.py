"""Verdicts on real outputs: saturated error counters, hardware-fitting expectations, multi-node
collectives, sub-second PFC storms in captures.

Every case runs through the installed ``fabricscope analyze`` console script (exit code and the
JSON findings document) on a fixture from tests/fixtures (provenance in its SOURCES.md), or on a
capture this module writes (see :func:`write_storm_capture`).
"""

from __future__ import annotations

import json
import struct
import subprocess
import sys
from pathlib import Path
from typing import Any

import fabricscope
import pytest
from fabricscope.detect.pfc_storm import paused_spans, storm_windows
from fabricscope.detect.underperformance import expected_busbw

REPO = Path(__file__).resolve().parent.parent
FIX = REPO / "tests" / "fixtures"


def analyze_cli(*args: str | Path) -> tuple[int, list[dict[str, Any]], dict[str, Any]]:
    """Run ``fabricscope analyze ARGS --json -``; return the exit code, findings and document."""
    exe = Path(sys.executable).parent / "fabricscope"
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "fabricscope"]
    r = subprocess.run([*cmd, "analyze", *map(str, args), "--json", "-"], capture_output=True, text=True)
    assert r.returncode in (0, 1, 2), r.stderr
    doc = json.loads(r.stdout)
    return r.returncode, doc["findings"], doc


# --- saturated error counters ------------------------------------------------------------------

SWITCH = FIX / "ib" / "ibqueryerrors" / "linux-rdma-2021-03-sx6036.txt"


def test_saturated_symbol_errors_on_a_real_switch_are_a_warning_with_the_lower_bound() -> None:
    code, findings, doc = analyze_cli(SWITCH)
    assert doc["status"] != "ok" and code >= 1
    pegged = [
        f
        for f in findings
        if f["evidence"].get("rule") == "counter_anomaly.saturated_errors" and f["metric"] == "symbol_errors"
    ]
    assert sorted(f["port"] for f in pegged) == [5, 7]
    for f in pegged:
        assert f["severity"] == "warning"
        assert f["observed"] == 65_535.0
        assert f["evidence"]["events_at_least"] == 65_535
        assert "at least 65,535 symbol errors since the last counter clear" in f["message"]
        assert "clear the counters and re-measure, or read the extended counters" in f["message"]
    # pegged 32-bit PortXmitWait is congestion time, not an error count: it stays info
    waits = [f for f in findings if f["metric"] == "port_xmit_wait_ticks"]
    assert waits and {f["severity"] for f in waits} == {"info"}


def test_saturated_link_downed_is_a_warning_single_snapshot_and_info_when_pegged_from_the_start() -> None:
    from .test_detectors import findings, series

    one = findings(series("link_downed_events", [255]))
    row = one.filter(one["kind"] == "counter_anomaly").row(0, named=True)
    assert row["severity"] == "warning"
    assert "at least 255 link downed events since the last counter clear" in row["message"]
    # pegged during the window: the register filled up while we watched
    rising = findings(series("symbol_errors", [65_000, 65_535, 65_535]))
    sat = rising.filter(rising["kind"] == "counter_anomaly").row(0, named=True)
    assert sat["severity"] == "warning" and "filled up during this window" in sat["message"]
    # already pegged at the first reading of a time series: nothing is known about the window
    flat = findings(series("link_downed_events", [255, 255, 255]))
    assert flat["severity"].to_list() == ["info"]
    assert "already pegged at the first reading" in flat["message"][0]


# --- expectations that fit the hardware ---------------------------------------------------------

CX3 = FIX / "perftest" / "write_bw_mlx4_connectx3.txt"


def test_connectx3_perftest_is_judged_against_fdr_not_an_assumed_ndr_port(tmp_path: Path) -> None:
    code, findings, _ = analyze_cli(CX3)
    bw = [f for f in findings if f["evidence"].get("rule") == "underperformance.perftest_bw"]
    assert len(bw) == 1
    f = bw[0]
    # 4508.79 MB/s (MiB) = 37.8 Gb/s against FDR 56 Gb/s: 68%, a warning (the rate is assumed)
    assert f["observed"] == pytest.approx(4508.79 * 2**20 * 8 / 1e9, rel=1e-6)
    assert f["expected"] == pytest.approx(56.0)
    assert f["severity"] == "warning" and code == 1
    assert f["evidence"]["expected_assumed"] is True
    assert "assumed port rate" in f["message"] and "mlx4" in f["message"]
    assert "400" not in f["message"]
    assert f["evidence"]["mtu_bytes"] == 2048 and f["evidence"]["link_type"] == "IB"


def test_connectx3_perftest_with_the_hosts_sysfs_rate_passes(tmp_path: Path) -> None:
    # the same page's ibstat says "Rate: 40 (FDR10)": the sysfs file the kernel writes for it
    port = tmp_path / "sys" / "class" / "infiniband" / "mlx4_0" / "ports" / "1"
    port.mkdir(parents=True)
    (port / "rate").write_text("40 Gb/sec (4X FDR10)\n")
    (port / "state").write_text("4: ACTIVE\n")
    (port / "phys_state").write_text("5: LinkUp\n")
    (port / "link_layer").write_text("InfiniBand\n")
    perf = tmp_path / "write_bw_mlx4.txt"
    perf.write_bytes(CX3.read_bytes())
    code, findings, _ = analyze_cli(tmp_path, "--host", "node01")
    bw = [f for f in findings if f["evidence"].get("rule") == "underperformance.perftest_bw"]
    # 37.8 Gb/s of a measured 40 Gb/s port is 95%: passes the 90% criterion
    assert bw == [] and code == 0, findings


# --- multi-node collectives ---------------------------------------------------------------------

ALLTOALL = FIX / "nccl-tests" / "constructed-alltoall-10x8-h100.txt"


def test_expected_busbw_follows_the_traffic_pattern() -> None:
    h100 = "NVIDIA H100 80GB HBM3"
    ring, layer, _, _ = expected_busbw(h100, 10, 8, collective="all_reduce")
    assert layer == "nvlink" and ring / 1e9 == pytest.approx(371.25)
    a2a, layer, basis, _ = expected_busbw(h100, 10, 8, collective="alltoall")
    # 47 GB/s per GPU x 10/9 x 79/80
    assert layer == "network" and a2a / 1e9 == pytest.approx(47.0 * 10 / 9 * 79 / 80)
    assert "N/(N-1)" in basis
    two, _, _, _ = expected_busbw(h100, 2, 8, collective="alltoall")
    assert two / 1e9 == pytest.approx(47.0 * 2 * 15 / 16)
    p2p, layer, _, _ = expected_busbw(h100, 2, 8, collective="sendrecv")
    assert layer == "network" and p2p / 1e9 == pytest.approx(47.0)
    assert expected_busbw(h100, 2, 8, collective="hypercube") is None


def test_multinode_alltoall_near_the_nic_share_is_ok() -> None:
    code, findings, doc = analyze_cli(ALLTOALL)
    assert [f for f in findings if f["kind"] == "underperformance"] == []
    assert code == 0 and doc["status"] == "ok"


def test_multinode_alltoall_at_a_fraction_of_the_nic_share(tmp_path: Path) -> None:
    slow = tmp_path / "alltoall_slow.txt"
    # the largest size at 20 GB/s busbw in both placements
    text = ALLTOALL.read_text().replace("51.24   50.60", "20.26   20.01").replace("51.22   50.58", "20.25   20.00")
    slow.write_text(text)
    # the log names no NIC: the NDR400 bound is assumed, so a warning that says so
    code, findings, _ = analyze_cli(slow)
    (f,) = [f for f in findings if f["kind"] == "underperformance"]
    assert code == 1 and f["severity"] == "warning" and f["layer"] == "network"
    assert f["expected"] == pytest.approx(47.0 * 10 / 9 * 79 / 80)
    assert "39% of the 52 GB/s the network should give (assumed ndr400 NICs, one per GPU" in f["message"]
    # the user states the NICs: critical
    code, findings, _ = analyze_cli(slow, "--profile", "ndr400")
    (f,) = [f for f in findings if f["kind"] == "underperformance"]
    assert code == 2 and f["severity"] == "critical"
    assert f["message"].endswith("39% of the 52 GB/s the network should give")


# --- sub-second PFC storms in captures ----------------------------------------------------------

T0_NS = 1_700_000_000_000_000_000
STORM_START_NS = T0_NS + 812_000_000
STORM_NS = 410_000_000
REFRESH_NS = 40_000


def _roce_frame(psn: int) -> bytes:
    """An RDMA WRITE (BTH opcode 0x0A) in IPv4/UDP 4791 with VLAN PCP 3, 256 B payload."""
    payload = 256
    bth = struct.pack("!BBHII", 0x0A, 0, 0xFFFF, 0x000123, psn & 0xFFFFFF)
    udp_len = 8 + len(bth) + payload + 4
    udp = struct.pack("!HHHH", 0xC000, 4791, udp_len, 0)
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0x02, 20 + udp_len, 0, 0x4000, 64, 17, 0, b"\x0a\0\0\x01", b"\x0a\0\0\x02")
    eth = bytes.fromhex("020000000002020000000001") + struct.pack("!HHH", 0x8100, (3 << 13) | 10, 0x0800)
    return eth + ip + udp + bth + bytes(payload) + b"\0\0\0\0"


def _pfc_frame(quanta: int) -> bytes:
    """An 802.1Qbb PFC frame with only priority 3 enabled."""
    q = [0] * 8
    q[3] = quanta
    return bytes.fromhex("0180c2000001020000000002") + struct.pack("!HHH8H", 0x8808, 0x0101, 1 << 3, *q) + bytes(26)


def write_storm_capture(path: Path) -> dict[str, int]:
    """A deterministic 2 s mirror-port capture: RoCE writes every 100 us, one 1 ms XOFF/XON pause
    at 0.3 s, and a 410 ms priority-3 storm from 0.812 s: XOFF 0xFFFF refreshed every 40 us, no
    XON. Classic pcap, nanosecond magic, LINKTYPE_ETHERNET. Returns the frame counts.
    """
    frames: list[tuple[int, bytes]] = []
    for i in range(20_000):
        frames.append((T0_NS + i * 100_000, _roce_frame(i)))
    frames.append((T0_NS + 300_000_000, _pfc_frame(0xFFFF)))
    frames.append((T0_NS + 301_000_000, _pfc_frame(0)))
    storm = list(range(STORM_START_NS, STORM_START_NS + STORM_NS, REFRESH_NS))
    frames += [(t, _pfc_frame(0xFFFF)) for t in storm]
    frames.sort(key=lambda x: x[0])
    out = bytearray(struct.pack("<IHHiIII", 0xA1B23C4D, 2, 4, 0, 0, 262144, 1))
    for t, frame in frames:
        out += struct.pack("<IIII", t // 1_000_000_000, t % 1_000_000_000, len(frame), len(frame)) + frame
    path.write_bytes(bytes(out))
    return {"roce": 20_000, "xoff": 1 + len(storm), "xon": 1}


def test_storm_capture_bytes_read_back_exactly(tmp_path: Path) -> None:
    cap = tmp_path / "mirror.pcap"
    truth = write_storm_capture(cap)
    ev = fabricscope.read_pcap(cap, host="leaf1").events
    kinds = ev["kind"].cast(str).value_counts().to_dicts()
    counts = {d["kind"]: d["count"] for d in kinds}
    assert counts.get("pfc_xoff") == truth["xoff"] and counts.get("pfc_xon") == truth["xon"]
    assert ev.filter(ev["kind"] == "pfc_xoff")["priority"].unique().to_list() == [3]


def test_sub_second_pfc_storm_in_a_capture_is_critical_with_a_millisecond_window(tmp_path: Path) -> None:
    cap = tmp_path / "mirror.pcap"
    write_storm_capture(cap)
    code, findings, _ = analyze_cli(cap, "--host", "leaf1")
    storms = [f for f in findings if f["kind"] == "pfc_storm"]
    assert len(storms) == 1, findings
    f = storms[0]
    assert code == 2 and f["severity"] == "critical" and f["priority"] == 3
    ev = f["evidence"]
    rule = ev["rule"] if ev["rule"] == "pfc_storm.capture" else ev["also_fired"][0]["rule"]
    assert rule == "pfc_storm.capture"
    # 410 ms of XOFFs; the last one pauses 83.9 us more (0xFFFF quanta at 400 Gb/s)
    assert ev["storm_ms"] == pytest.approx(410.0 - 0.04 + 65535 * 512 / 400e9 * 1e3, abs=0.01)
    assert ev["xoff_frames"] == STORM_NS // REFRESH_NS and ev["xon_frames"] == 0
    assert ev["median_refresh_us"] == pytest.approx(40.0)
    assert f["start"] == "2023-11-14T22:13:20.812000Z"
    assert "no XON" in f["message"] and "refreshed every 40 us" in f["message"]
    assert "22:13:20.812-22:13:21.222 UTC" in f["message"]
    # the 1 ms pause at 0.3 s is no storm
    assert not any(f["start"].startswith("2023-11-14T22:13:20.3") for f in storms)


def test_storm_window_math_near_misses() -> None:
    # 99% of a 200 ms window is 198 ms: a 199 ms pause is a storm only in a window it fills
    assert storm_windows([(0, 199)], 200, 0.99) == [(0, 199)]
    assert storm_windows([(0, 197)], 200, 0.99) == []
    # two pauses with a 3 ms XON gap inside 200 ms: 98.5% -> no storm
    assert storm_windows([(0, 100), (103, 200)], 200, 0.99) == []
    # refreshes before the deadline extend; an XON cuts
    assert paused_spans([0, 40, 80], [84, 84, 84]) == [(0, 164)]
    assert paused_spans([0, 100], [84, 84]) == [(0, 84), (100, 184)]
    assert paused_spans([0, 20, 60], [84, 0, 84]) == [(0, 20), (60, 144)]


def test_capture_storm_is_reported_once_when_the_analysis_is_partitioned(tmp_path: Path) -> None:
    # the packet_events table travels whole to every partition: only the capture's host judges it
    write_storm_capture(tmp_path / "mirror.pcap")
    prom = REPO / "sample_traces" / "scenarios" / "ib-symbol-errors" / "prometheus"
    for p in prom.iterdir():
        (tmp_path / p.name).write_bytes(p.read_bytes())
    a = fabricscope.run_analysis(tmp_path, host="leaf1", partitions=8)
    storms = a.findings.filter(a.findings["kind"] == "pfc_storm")
    assert storms.height == 1 and storms["host"].to_list() == ["leaf1"]
