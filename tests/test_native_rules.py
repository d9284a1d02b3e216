"""What the Rust core owns, the Python package views: limits, input expansion, directives, GUIDs, schemas."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import fabricscope
import polars as pl
import pytest
from fabricscope import _native
from fabricscope.doors.cli import build_parser
from fabricscope.doors.cron.directives import context_lines
from fabricscope.doors.cron.manifest import units as cron_units
from fabricscope.fabric.entities import normalize_guid
from fabricscope.fabric.topology import LINKS_SCHEMA, topology
from fabricscope.reading.load import load
from fabricscope.reading.scan import (
    LIMITS,
    attributes_schema,
    empty_attributes,
    links_schema,
    samples_schema,
)
from fabricscope.reading.units import FILE, WALKED, work_units

from .conftest import FIXTURES, SAMPLES


def test_limits_and_their_defaults_come_from_the_core() -> None:
    assert LIMITS == {
        "max_line_bytes": 1 << 20,
        "max_labels": 128,
        "max_decompressed_bytes": 256 << 30,
        "max_decompression_ratio": 250,
        "max_document_bytes": 256 << 20,
    }
    assert list(LIMITS) == [name for name, _ in _native.limits()]
    parse = build_parser().parse_args(["parse", "x"])
    assert parse.max_line_bytes == LIMITS["max_line_bytes"]


def test_an_unset_limit_is_the_core_default(tmp_path: Path) -> None:
    # A line longer than the 4 MiB read chunk meets the line limit (docs/security.md).
    long = tmp_path / "long.prom"
    long.write_text("x" * (6 << 20) + " 1\n")
    # No limit passed to the binding: the core's default applies and names itself.
    with pytest.raises(fabricscope.exceptions.LimitExceededError, match="max_line_bytes"):
        _native.read([str(long)], format="prometheus")
    assert _native.read([str(long)], format="prometheus", limits={"max_line_bytes": 8 << 20})[3][0]["rows"] == 1


def test_limits_travel_as_one_dict_judged_by_the_core(tmp_path: Path) -> None:
    labels = tmp_path / "labels.prom"
    labels.write_text('x_total{a="1",b="2",instance="h"} 1\n')
    with pytest.raises(fabricscope.exceptions.LimitExceededError, match="max_labels"):
        _native.read([str(labels)], limits={"max_labels": 2})
    assert _native.read([str(labels)], limits={"max_labels": 3})[3][0]["rows"] == 1
    assert dict(_native.limits({"max_labels": 3}))["max_labels"] == 3
    # Every reader entry point judges the dict the same way, naming the limit and the accepted names.
    calls = [
        lambda limits: _native.read([str(labels)], limits=limits),
        lambda limits: _native.read_buffer(b"x 1\n", "buf", limits=limits),
        lambda limits: _native.Scanner([str(labels)], limits=limits),
        lambda limits: _native.limits(limits),
    ]
    for call in calls:
        with pytest.raises(ValueError, match=r'unknown limit "max_lines"; expected one of max_line_bytes, max_labels'):
            call({"max_lines": 5})
        with pytest.raises(ValueError, match="limit max_labels must be a positive integer, got 0"):
            call({"max_labels": 0})
        with pytest.raises(ValueError, match="limit max_labels must be a positive integer, got True"):
            call({"max_labels": True})
        with pytest.raises(ValueError, match="limit max_document_bytes must be a positive integer, got -1"):
            call({"max_document_bytes": -1})


def _tree(tmp_path: Path) -> Path:
    root = tmp_path / "dumps"
    (root / "rack1").mkdir(parents=True)
    (root / "rack1" / "b.prom").write_text("node_infiniband_port_data_received_bytes_total 1\n")
    (root / "a.log").write_text("rx_bytes: 1\n")
    (root / ".swap").write_text("")
    counters = root / "gpu07" / "sys" / "class" / "infiniband" / "mlx5_0" / "ports" / "1" / "counters"
    counters.mkdir(parents=True)
    (counters / "port_rcv_data").write_text("7\n")
    (root / "loop").symlink_to(root, target_is_directory=True)
    return root


def test_every_walker_expands_directories_as_the_core_does(tmp_path: Path) -> None:
    root = _tree(tmp_path)
    expected = [
        (str(root / "a.log"), "walked"),
        (str(root / "gpu07" / "sys"), "sysfs-tree"),
        (str(root / "rack1" / "b.prom"), "walked"),
    ]
    assert _native.expand([str(root)]) == expected
    # The engines' work units and cron's manifest see the same inputs and the same trees.
    assert work_units([root]) == [
        (str(root / "a.log"), WALKED),
        (str(root / "gpu07" / "sys"), FILE),
        (str(root / "rack1" / "b.prom"), WALKED),
    ]
    assert [(u.path, u.is_tree) for u in cron_units([str(root)])] == [
        (str(root / "a.log"), False),
        (str(root / "gpu07" / "sys"), True),
        (str(root / "rack1" / "b.prom"), False),
    ]
    # And the reader reads exactly those.
    reports = load([root], strict=False).reports
    assert [r.path for r in reports] == [p for p, _ in expected]


def test_expansion_of_real_traces_matches_the_reader() -> None:
    for source in ("sysfs", "scenarios/ib-congestion", "ethtool"):
        walked = [p for p, _ in _native.expand([str(SAMPLES / source)])]
        assert [r.path for r in load([SAMPLES / source], strict=False).reports] == walked
        assert [p for p, _ in work_units([SAMPLES / source])] == walked


def test_forced_formats_decide_what_a_tree_is(tmp_path: Path) -> None:
    root = _tree(tmp_path)
    assert _native.expand([str(root)], "sysfs") == [(str(root), "sysfs-tree")]
    forced = _native.expand([str(root)], "prometheus")
    assert all(kind == "walked" for _, kind in forced)
    assert any(p.endswith("counters/port_rcv_data") for p, _ in forced)
    with pytest.raises(ValueError, match="unknown format"):
        _native.expand([str(root)], "no-such-format")


def test_directive_grammar_is_the_readers() -> None:
    assert _native.parse_directive_line("# host: gpu017") == ("host", "gpu017")
    assert _native.parse_directive_line("$ sudo ethtool -S eth2") == ("device", "eth2")
    assert _native.parse_directive_line("1796400000") == ("time", 1_796_400_000 * 10**9)
    assert _native.parse_directive_line("Wed Dec  2 14:00:00 UTC 2026") == ("time", 1_796_220_000 * 10**9)
    assert _native.parse_directive_line("     rx_bytes: 5") is None
    # cron keeps, for an appended tail, exactly the lines the readers take as directives.
    ctx = context_lines(b"# host: gpu17\n$ sudo ethtool -S eth2\n     rx_bytes: 1\n2026-12-04T14:00:00Z\n", [])
    assert ctx == ["# host: gpu17", "$ sudo ethtool -S eth2", "2026-12-04T14:00:00Z"]


def test_one_guid_spelling_joins_topology_sysfs_and_prometheus(tmp_path: Path) -> None:
    assert normalize_guid("0a7f:bc12:45ef:d23b") == "0x0a7fbc1245efd23b"
    assert normalize_guid("0X0A7FBC1245EFD23B") == "0x0a7fbc1245efd23b"
    assert normalize_guid("0x2c903006e29b0") == "0x0002c903006e29b0"
    assert normalize_guid("1234") is None
    # sysfs: the raw attribute and the key the core derives from it.
    attrs = load([FIXTURES / "sysfs" / "procfs"]).attributes.with_columns(pl.col("key").cast(pl.String))
    raw = attrs.filter(pl.col("key") == "node_guid")["value"].to_list()
    hexed = attrs.filter(pl.col("key") == "node_guid_hex")["value"].to_list()
    assert raw and [normalize_guid(v) for v in raw] == hexed
    # Prometheus `guid` labels in the sysfs spelling become the same device GUID.
    prom = tmp_path / "guid.prom"
    prom.write_text(
        "node_infiniband_port_data_received_bytes_total"
        '{guid="0A7F:BC12:45EF:D23B",instance="gpu01:9100",port="1"} 4 1796400000000\n'
    )
    assert fabricscope.read(prom)["device"].cast(pl.String).to_list() == hexed[:1]
    # Topology stores GUIDs in the same spelling.
    links = topology([FIXTURES / "ib" / "ibnetdiscover" / "test.out"])
    guids = links["node_guid"].to_list() + links["peer_node_guid"].to_list()
    assert guids and all(normalize_guid(g) == g for g in guids)


def test_schemas_are_the_cores(tmp_path: Path) -> None:
    assert links_schema() == LINKS_SCHEMA
    assert topology([FIXTURES / "ib" / "ibnetdiscover" / "test.out"]).schema == LINKS_SCHEMA
    res = load([SAMPLES / "sysfs"])
    assert res.attributes.schema == attributes_schema()
    assert res.samples.schema == samples_schema()
    empty = empty_attributes()
    assert empty.height == 0 and empty.schema == attributes_schema()
    assert dict(attributes_schema()) == {
        "time": pl.Datetime("ns", "UTC"),
        "host": pl.Categorical(),
        "device": pl.Categorical(),
        "port": pl.UInt16,
        "key": pl.Categorical(),
        "value": pl.String,
        "source": pl.Categorical(),
    }


def test_cli_reads_a_tree_the_walk_found(tmp_path: Path) -> None:
    root = _tree(tmp_path)
    exe = Path(sys.executable).parent / "fabricscope"
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "fabricscope"]
    r = subprocess.run([*cmd, "parse", str(root), "--json", "--lenient"], capture_output=True, text=True, check=False)
    assert r.returncode == 0, r.stderr
    assert str(root / "gpu07" / "sys") in r.stdout


def test_formats_declare_their_time_resolution() -> None:
    declared = {f["name"]: (f["time_resolution"], f["time_resolution_ns"]) for f in _native.formats()}
    assert declared["prometheus"] == ("1 ms", 1_000_000)
    assert declared["prometheus-remote-read"] == ("1 ms", 1_000_000)
    assert declared["ufm-csv"] == ("1 µs", 1_000)
    assert declared["pcap"] == ("per capture", None)
    assert declared["ethtool"] == ("per input", None)
    assert declared["lldpctl-json"] == ("none", None)
    table = fabricscope.formats()
    assert table.filter(pl.col("name") == "openmetrics")["time_resolution"].item() == "per input"


def test_each_input_reports_the_resolution_its_times_were_stated_to(tmp_path: Path) -> None:
    snapshot = "NIC statistics:\n     rx_packets: {}\n"
    inputs = {
        # `date +%s` lines: whole seconds.
        "seconds.log": f"1764686822\n{snapshot.format(1)}1764686837\n{snapshot.format(2)}",
        # `date +%s.%N` lines: nanoseconds.
        "nanos.log": f"1764686822.123456789\n{snapshot.format(1)}1764686837.223456789\n{snapshot.format(2)}",
        # One coarse line makes the input as coarse as its coarsest stated time.
        "mixed.log": f"1764686822.123\n{snapshot.format(1)}1764686837\n{snapshot.format(2)}",
        # No timestamp line: the file name's stamp (whole seconds).
        "ethtool-1764686822.log": snapshot.format(1),
        # Nothing stated: the --time argument dates it, at no resolution the input knows.
        "undated.log": snapshot.format(1),
        # Prometheus text: per-sample integer milliseconds.
        "scrape.prom": 'node_network_receive_packets_total{device="eth0"} 1 1764686822000\n',
    }
    for name, text in inputs.items():
        (tmp_path / name).write_text(text)
    exe = Path(sys.executable).parent / "fabricscope"
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "fabricscope"]
    args = [*cmd, "parse", "--json", "-q", "--host", "h", "--time", "2025-12-02T14:47:02Z"]
    files = [str(tmp_path / n) for n in inputs]
    pcap = str(SAMPLES / "pcap" / "roce_pfc.pcap")
    r = subprocess.run([*args, *files, pcap], capture_output=True, text=True, check=False)
    assert r.returncode == 0, r.stderr
    stated = {Path(i["path"]).name: i["time_resolution_ns"] for i in json.loads(r.stdout)["inputs"]}
    assert stated == {
        "seconds.log": 1_000_000_000,
        "nanos.log": 1,
        "mixed.log": 1_000_000_000,
        "ethtool-1764686822.log": 1_000_000_000,
        "undated.log": None,
        "scrape.prom": 1_000_000,
        # A nanosecond pcap (magic a1b23c4d).
        "roce_pfc.pcap": 1,
    }
