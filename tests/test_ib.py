"""InfiniBand diagnostic sources through the Python API: readers, the links table, topology()."""

from __future__ import annotations

from pathlib import Path

import fabricscope
import polars as pl
import pytest
from fabricscope.exceptions import FabricscopeError
from fabricscope.fabric.topology import LINKS_SCHEMA, format_topology, topology

IB = Path(__file__).resolve().parent / "fixtures" / "ib"


def test_topology_is_exported() -> None:
    assert {"topology", "format_topology"} <= set(fabricscope.__all__)


def test_perfquery_fixture_values() -> None:
    df = fabricscope.read(IB / "perfquery" / "0x7cfe9003009ce5b0.out", host="mgmt01", time=1_764_686_822)
    assert df.height == 44
    x = df.filter((pl.col("counter") == "port_xmit_data_bytes") & (pl.col("port") == 1)).row(0, named=True)
    assert (x["device"], x["value_u64"], x["scale"], x["source"]) == (
        "0x7cfe9003009ce5b0",
        36_298_026_860_928 * 4,
        4,
        "perfquery",
    )


def test_links_table_reaches_python() -> None:
    res = fabricscope.load(IB / "ibnetdiscover" / "test.out", host="mgmt01", time=1_764_686_822)
    links = res.tables["links"]
    assert links.height == 4
    assert links.schema == LINKS_SCHEMA
    assert links["tier"].to_list() == ["hca", "hca", "hca", "leaf"]
    assert links["peer_tier"].to_list() == ["leaf", "leaf", "leaf", "spine"]


def test_topology_merges_inputs_and_recomputes_tiers() -> None:
    # the same fabric twice: links are kept once
    df = topology([IB / "ibnetdiscover" / "test.out", IB / "ibnetdiscover" / "test.out"])
    assert df.height == 4
    assert df.select("node_guid", "port", "peer_node_guid", "peer_port").rows() == [
        ("0x506b4b0300cc02a6", 1, "0x506b4b03005c2740", 35),
        ("0x7cfe9003003b4b96", 1, "0x7cfe9003009ce5b0", 11),
        ("0x7cfe9003003b4bde", 1, "0x7cfe9003009ce5b0", 10),
        ("0x7cfe9003009ce5b0", 1, "0x7cfe900300b07320", 1),
    ]
    assert df["data_rate_gbps"].to_list() == [100.0] * 4


def test_topology_of_sample_leaf_spine() -> None:
    df = topology(Path(__file__).resolve().parent.parent / "sample_traces" / "ib")
    assert df.height == 8
    assert df.group_by("tier", "peer_tier").len().sort("tier").rows() == [("hca", "leaf", 4), ("leaf", "spine", 4)]
    assert set(df["speed"].to_list()) == {"NDR"}


def test_topology_without_links_is_empty_with_schema() -> None:
    df = topology(IB / "perfquery" / "0x7cfe9003009ce5b0.out")
    assert df.height == 0 and df.schema == LINKS_SCHEMA
    assert format_topology(df) == "(no links)"


def test_format_topology_marks_downgrades() -> None:
    text = format_topology(topology(IB / "constructed" / "iblinkinfo.txt"))
    lines = text.splitlines()
    assert lines[0].split()[:3] == ["tier", "node", "port"]
    assert set(lines[1]) == {"-", " "}  # the rule under the header
    assert len(lines) == 4
    assert any("4x QDR" in line and "could be EDR" in line for line in lines)


def test_ufm_json_and_csv() -> None:
    df = fabricscope.read(IB / "ufm" / "small_telemetry.json", host="ufm01")
    assert df.height == 150
    r = df.filter(
        (pl.col("device") == "0x248a070300ef19a0") & (pl.col("port") == 23) & (pl.col("counter") == "port_xmit_packets")
    )
    assert r["value_u64"].to_list() == [244_479]
    csv = fabricscope.read(IB / "constructed" / "ufm_metrics.csv", host="ufm01")
    assert csv.filter(pl.col("counter") == "port_xmit_data_bytes")["value_u64"].to_list() == [4_086_720, 70_409_952]


def test_hostile_db_csv_strict_and_lenient(tmp_path: Path) -> None:
    p = tmp_path / "ibdiagnet2.db_csv"
    p.write_text("START_PM_INFO\nNodeGUID,PortNumber,PortXmitDiscards\n0x1,1,0\n0x1,2\n")
    with pytest.raises(FabricscopeError, match=r"line 4"):
        fabricscope.read(p, host="h", time=1_764_686_822)
    res = fabricscope.load(p, host="h", time=1_764_686_822, strict=False)
    assert res.samples.height == 1
    assert res.reports[0].bad_records == 2  # the short row, then the unterminated section
