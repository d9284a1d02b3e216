"""Packet captures through the Python API and the CLI: exact counts against the truth files."""

from __future__ import annotations

import doctest
import json
from pathlib import Path

import fabricscope
import fabricscope.reading.packets
import polars as pl
import pytest
from fabricscope.doors.cli import main
from fabricscope.exceptions import FormatError

CAPTURES = Path(__file__).resolve().parent / "fixtures" / "captures"
TRUTH_FILES = sorted(p.name.removesuffix(".truth.json") for p in CAPTURES.glob("*.truth.json"))


def _final(samples: pl.DataFrame, counter: str) -> int:
    """Final cumulative value of a counter summed over interfaces and priorities."""
    rows = samples.filter(pl.col("counter") == counter)
    if rows.height == 0:
        return 0
    return int(rows.group_by("device", "priority").agg(pl.col("value_u64").max())["value_u64"].sum())


def test_truth_files_are_all_covered() -> None:
    assert len(TRUTH_FILES) == 8


@pytest.mark.parametrize("name", TRUTH_FILES)
def test_read_pcap_exact_counts(name: str) -> None:
    truth = json.loads((CAPTURES / f"{name}.truth.json").read_text())
    res = fabricscope.read_pcap(CAPTURES / name, host="gpu07", bin_seconds=0.0001)
    kinds = dict(res.events.group_by("kind").len().iter_rows())
    kinds = {str(k): v for k, v in kinds.items()}
    assert kinds.get("ce", 0) == truth["ce"]
    assert kinds.get("cnp", 0) == truth["cnp"]
    assert kinds.get("nak_seq", 0) == truth["nak_seq"]
    assert kinds.get("rnr_nak", 0) == truth["rnr_nak"]
    assert kinds.get("psn_gap", 0) == truth["psn_gap_events"]
    assert kinds.get("retransmitted", 0) == truth["retransmitted_packets"]
    assert kinds.get("pfc_xoff", 0) + kinds.get("pfc_xon", 0) == sum(truth["pfc_prio_enable_counts"])
    assert kinds.get("pause", 0) == truth["pause"]
    s = res.samples
    assert s.height > 0
    assert _final(s, "capture_packets") == truth["packets"]
    assert _final(s, "capture_bytes") == truth["bytes_on_wire"]
    assert _final(s, "capture_roce_packets") == truth["roce"]
    assert _final(s, "capture_cnp_packets") == truth["cnp"]
    assert _final(s, "capture_ce_marked_packets") == truth["ce"]
    assert _final(s, "capture_pfc_xoff_frames") == truth["pfc_xoff"]
    assert _final(s, "rx_pause_frames") == truth["pfc"] + truth["pause"]
    assert set(s["host"].cast(pl.String)) == {"gpu07"}
    assert s["is_counter"].all()
    assert res.events["time"].dtype == pl.Datetime("ns", "UTC")
    assert res.reports[0].format in ("pcap", "pcapng")
    assert res.reports[0].bad_records == 0
    assert int(res.flows["retransmitted_packets"].sum()) == truth["retransmitted_packets"]
    assert int(res.flows["psn_gap_events"].sum()) == truth["psn_gap_events"]


def test_cnp_frame_fields() -> None:
    res = fabricscope.read_pcap(CAPTURES / "scapy_cx4lx_cnp.pcap")
    row = res.events.row(0, named=True)
    assert (str(row["kind"]), row["opcode"], row["dest_qp"], row["ecn"], row["length"]) == ("cnp", 0x81, 0x118, 2, 74)


def test_link_speed_changes_pause_time_only() -> None:
    fast = fabricscope.read_pcap(CAPTURES / "synth_roce_pfc_le_ns.pcap", link_speed_gbps=400)
    slow = fabricscope.read_pcap(CAPTURES / "synth_roce_pfc_le_ns.pcap", link_speed_gbps=100)
    f = fast.events.filter(pl.col("kind") == "pfc_xoff")
    s = slow.events.filter(pl.col("kind") == "pfc_xoff")
    assert f.height == s.height == 4
    assert (s["pause_ns"] == f["pause_ns"] * 4).all() or (s["pause_ns"] - f["pause_ns"] * 4).abs().max() <= 3
    assert (f["pause_ns"] == f["quanta"].cast(pl.UInt64) * 512 // 400).all()


def test_invalid_arguments() -> None:
    with pytest.raises(ValueError, match="bin_seconds"):
        fabricscope.read_pcap(CAPTURES / "scapy_cx4lx_cnp.pcap", bin_seconds=0)
    with pytest.raises(ValueError, match="link_speed_gbps"):
        fabricscope.read_pcap(CAPTURES / "scapy_cx4lx_cnp.pcap", link_speed_gbps=-1)


def test_hostile_capture_strict_and_lenient(tmp_path: Path) -> None:
    raw = (CAPTURES / "synth_roce_pfc_le_ns.pcap").read_bytes()
    cut = tmp_path / "cut.pcap"
    cut.write_bytes(raw[:-30])  # last record truncated
    with pytest.raises(FormatError) as exc:
        fabricscope.read_pcap(cut)
    assert exc.value.byte_offset is not None and exc.value.byte_offset > 24
    assert "truncated" in str(exc.value)
    res = fabricscope.read_pcap(cut, strict=False)
    assert res.reports[0].bad_records == 1
    assert _final(res.samples, "capture_packets") == 400


def test_no_events_gives_typed_empty_table() -> None:
    res = fabricscope.read_pcap(CAPTURES / "wireshark" / "dhcp.pcapng")
    assert res.events.height == 0
    assert res.events.columns == list(fabricscope.reading.packets.EVENTS_SCHEMA)
    assert _final(res.samples, "capture_packets") == 4


def test_cli_parse_writes_packet_events_parquet(tmp_path: Path) -> None:
    out = tmp_path / "x.parquet"
    assert main(["parse", str(CAPTURES / "synth_roce_pfc_le.pcapng"), "-o", str(out), "-q"]) == 0
    events = pl.read_parquet(tmp_path / "x.packet_events.parquet")
    assert events.filter(pl.col("kind") == "cnp").height == 14
    samples = pl.read_parquet(out)
    assert "capture_cnp_packets" in set(samples["counter"].cast(pl.String))


def test_sample_trace_and_docstrings() -> None:
    truth = json.loads(Path("sample_traces/pcap/roce_pfc.pcap.truth.json").read_text())
    res = fabricscope.read_pcap("sample_traces/pcap/roce_pfc.pcap")
    assert res.events.filter(pl.col("kind") == "ce").height == truth["ce"]
    result = doctest.testmod(fabricscope.reading.packets, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0
    assert result.failed == 0
