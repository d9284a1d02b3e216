"""The fabric model: one per analysis, built before detection, the only source of identity and topology."""

from __future__ import annotations

import json
import shutil
from datetime import UTC, datetime
from pathlib import Path

import fabricscope
import polars as pl
import pytest
from fabricscope.doors.cli import main
from fabricscope.fabric.model import build, merged_links
from fabricscope.reading.load import load

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"
IDENTITY = FIXTURES / "identity"
ETHTOOL_LOOP = FIXTURES / "ethtool" / "constructed" / "ens1f0np0-ethtool-loop.log"  # names no host


def _sysfs_guid(host: str, device: str, guid: str) -> pl.DataFrame:
    return pl.DataFrame(
        {
            "time": [datetime(2026, 12, 1, tzinfo=UTC)],
            "host": [host],
            "device": [device],
            "port": [1],
            "key": ["node_guid_hex"],
            "value": [guid],
            "source": ["sysfs"],
        }
    )


def _links(rows: list[tuple[str, int, str, str, str, int, str, str]]) -> pl.DataFrame:
    """Links rows (guid, port, name, type, peer guid, peer port, peer name, peer type), one input's."""
    return pl.DataFrame(
        rows,
        schema=[
            "node_guid",
            "port",
            "node_name",
            "node_type",
            "peer_node_guid",
            "peer_port",
            "peer_node_name",
            "peer_node_type",
        ],
        orient="row",
    ).with_columns(source=pl.lit("ibnetdiscover"))


HCA, LEAF, SPINE = "0x0000000000000001", "0x00000000000000aa", "0x00000000000000bb"


def test_a_device_read_under_a_short_name_has_its_fqdns_node() -> None:
    # sysfs says gpu01's mlx5_0 is GUID 1; the counters name the host gpu01.cluster.local
    fabric = build(hosts=["gpu01.cluster.local"], attributes=_sysfs_guid("gpu01", "mlx5_0", HCA))
    assert fabric.host("gpu01") == "gpu01.cluster.local"
    assert fabric.node_guid("gpu01.cluster.local", "mlx5_0") == HCA
    assert fabric.node_guid("gpu01", "mlx5_0") == HCA
    assert fabric.node_guid("gpu02.cluster.local", "mlx5_0") is None
    assert fabric.hca(HCA) == ("gpu01.cluster.local", "mlx5_0")


def test_links_from_several_inputs_are_each_cable_once_and_tiered_together() -> None:
    # one dump sees only the leaf-spine cable (both switches look like spines to it); another sees
    # the HCA-leaf cable, from the leaf's side
    spine_only = _links([(LEAF, 31, "leaf01", "switch", SPINE, 1, "spine01", "switch")])
    hca_leaf = _links([(LEAF, 1, "leaf01", "switch", HCA, 1, "gpu01 mlx5_0", "hca")])
    again = _links([(HCA, 1, "gpu01 mlx5_0", "hca", LEAF, 1, "leaf01", "switch")])
    merged = merged_links([spine_only, hca_leaf, again])
    assert merged.select("node_name", "port", "tier", "peer_node_name", "peer_port", "peer_tier").rows() == [
        ("gpu01 mlx5_0", 1, "hca", "leaf01", 1, "leaf"),
        ("leaf01", 31, "leaf", "spine01", 1, "spine"),
    ]
    fabric = build(tables={"links": pl.concat([spine_only, hca_leaf, again])})
    assert fabric.tier(LEAF) == "leaf" and fabric.tier(SPINE) == "spine"
    assert fabric.leaf({"host": "gpu01", "device": "mlx5_0", "port": 1}) == (LEAF, "leaf01", 1)
    assert fabric.leaves_below(SPINE) == {LEAF}
    assert fabric.peers().filter(pl.col("node_guid") == HCA).select("peer_guid", "peer_port").rows() == [(LEAF, 1)]


def test_the_analysis_links_table_is_the_fabric_models(tmp_path: Path) -> None:
    # the same ibnetdiscover dump twice: the links table lists each cable once
    data = tmp_path / "in"
    (data / "a").mkdir(parents=True)
    (data / "b").mkdir()
    dump = ROOT / "sample_traces" / "ib" / "fabric-ibnetdiscover-p.txt"
    shutil.copy(dump, data / "a" / "ibnetdiscover.txt")
    shutil.copy(dump, data / "b" / "ibnetdiscover.txt")
    once = fabricscope.run_analysis(str(dump))
    twice = fabricscope.run_analysis(str(data))
    assert twice.tables["links"].height == once.tables["links"].height == 8
    assert twice.tables["links"].equals(twice.fabric.links)
    assert fabricscope.topology(str(data)).equals(twice.tables["links"])


def _host_less_logs(tmp_path: Path) -> Path:
    data = tmp_path / "in"
    for rel in ("node18/ethtool.log", "ethtool-node17.log", "rack3/ethtool.log"):
        (data / rel).parent.mkdir(parents=True, exist_ok=True)
        (data / rel).write_bytes(ETHTOOL_LOOP.read_bytes())
    (data / "federate.prom").write_bytes((IDENTITY / "prometheus" / "federate.prom").read_bytes())
    return data


def test_load_names_host_less_inputs_by_their_path(tmp_path: Path) -> None:
    data = _host_less_logs(tmp_path)
    res = load(str(data))
    by_path = {r.path.removeprefix(str(data) + "/"): r for r in res.reports if r.format == "ethtool"}
    hosts = set(res.samples.filter(pl.col("source").cast(pl.String) == "ethtool")["host"].cast(pl.String).unique())
    assert hosts == {"node17.ib.example", "node18.ib.example", "unknown"}
    assert [w for w in by_path["rack3/ethtool.log"].warnings if "path names" in w] == [
        'no host in the input, and its path names no known host (or several): rows use host "unknown"'
    ]
    assert not [w for w in by_path["node18/ethtool.log"].warnings if "host" in w]
    assert all(r.names_no_host for r in by_path.values())


def test_cron_names_host_less_inputs_by_their_path(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = _host_less_logs(tmp_path)
    out = tmp_path / "cron.json"
    args = ["cron", "--inputs", str(data), "--state", str(tmp_path / "s"), "--history", str(tmp_path / "h")]
    main([*args, "--json", str(out)])
    capsys.readouterr()
    doc = json.loads(out.read_text())
    storms = sorted(f["host"] for f in doc["findings"] if f["kind"] == "pfc_storm")
    assert storms == ["node17.ib.example", "node18.ib.example", "unknown"]
