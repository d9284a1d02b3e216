"""The fabricscope command line."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
from fabricscope.doors.cli import main


def test_parse_writes_parquet_and_summary(
    tmp_path: Path, samples_dir: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import fabricscope

    # The table fits the terminal; a test worker's terminal may be narrow (pytest-xdist): pin it.
    monkeypatch.setenv("COLUMNS", "160")

    out = tmp_path / "o" / "samples.parquet"
    assert main(["parse", str(samples_dir), "-o", str(out), "-q"]) == 0
    text = capsys.readouterr().out
    # One line per format, not one per file; the per-file table only with --verbose.
    assert "federate-rail0.prom" not in text and "roce01-eth2.log" not in text
    lines = text.splitlines()
    head = lines.index(next(line for line in lines if line.startswith("format ")))
    assert lines[head].split() == ["format", "files", "samples", "bad", "records", "time", "range", "(UTC)"]
    rows = {line.split()[0]: line.split() for line in lines[head + 2 :] if line and not line[0].isspace()}
    reports = [r for r in fabricscope.load(samples_dir).reports if r.format == "ethtool"]
    assert rows["ethtool"][1:3] == [f"{len(reports)}", f"{sum(r.rows for r in reports):,}"]  # files, samples
    # the latest: the half-hour NVLink background trap's last scrape
    assert rows["prometheus"][4:] == ["2026-12-02", "08:26:40", "..", "2026-12-04", "16:30:00"]
    assert len(text.splitlines()) < 30
    assert f"wrote {out}" in text
    assert main(["parse", str(samples_dir), "-q", "--verbose"]) == 0
    verbose = capsys.readouterr().out
    assert "federate-rail0.prom" in verbose and "roce01-eth2.log" in verbose and "per host and device:" in verbose
    df = pl.read_parquet(out)

    assert df.height == fabricscope.read(samples_dir).height
    assert {"time", "host", "device", "counter", "value_u64"} <= set(df.columns)
    attrs = pl.read_parquet(tmp_path / "o" / "samples.attributes.parquet")
    assert "link_layer" in attrs["key"].cast(pl.String).to_list()
    assert not (tmp_path / "o" / "samples.parquet.tmp").exists()


def test_parse_json_summary_counts_rows(tmp_path: Path, samples_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["parse", str(samples_dir / "ethtool"), "--json", "-q"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["samples"] == sum(i["rows"] for i in doc["inputs"])
    assert doc["inputs"][0]["format"] == "ethtool"
    assert doc["inputs"][0]["time_source"] == "in-file"


def test_unreadable_input_exits_3_and_leaves_no_output(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "s.parquet"
    assert main(["parse", str(tmp_path / "missing.prom"), "-o", str(out), "-q"]) == 3
    assert "cannot read input" in capsys.readouterr().err
    assert not out.exists()


def test_malformed_input_strict_exits_3_lenient_exits_0(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    p = tmp_path / "bad.prom"
    p.write_text('a{instance="h"} 1 1796200000000\na{instance="h" 2\n')
    assert main(["parse", str(p), "-q"]) == 3
    assert "line 2" in capsys.readouterr().err
    assert main(["parse", str(p), "-q", "--lenient"]) == 0
    assert "line 2" in capsys.readouterr().out


def test_formats_and_counters_commands(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["formats", "--output-format", "csv"]) == 0
    assert "sysfs-grep" in capsys.readouterr().out
    assert main(["counters", "--layer", "nvlink", "--output-format", "json"]) == 0
    names = [c["name"] for c in json.loads(capsys.readouterr().out)]
    assert "nvlink_tx_bytes_per_s" in names and "port_xmit_data_bytes" not in names


def test_counters_command_lists_a_roles_counters_most_preferred_first() -> None:
    cmd = [sys.executable, "-m", "fabricscope", "counters", "--role"]
    out = subprocess.run([*cmd, "tx_bytes", "--json"], capture_output=True, text=True, check=True).stdout
    rows = [(r["layer"], r["rank"], r["name"]) for r in json.loads(out)]
    assert rows == [
        ("network", 1, "vport_rdma_tx_unicast_bytes"),
        ("network", 2, "ext_port_xmit_data_bytes"),
        ("network", 3, "port_xmit_data_bytes"),
        ("network", 4, "phy_tx_bytes"),
        ("nvlink", 1, "nvlink_tx_bytes"),
        ("nvlink", 2, "nvlink_tx_bytes_per_s"),
        ("pcie", 1, "pcie_tx_bytes_per_s"),
    ]
    # ice counts pause as XOFF frames: its counter carries both roles.
    table = subprocess.run([*cmd, "rx_pause_frames"], capture_output=True, text=True, check=True).stdout
    named = [w for w in table.split() if w.endswith("_frames") and not w.startswith("tx_")]
    assert list(dict.fromkeys(named)) == ["rx_pause_frames", "rx_xoff_frames", "rx_pfc_frames"]
    assert "3 counter(s)" in table
    bad = subprocess.run([*cmd, "tx_byte"], capture_output=True, text=True)
    assert bad.returncode == 3
    assert "no counter role 'tx_byte'; known: link_errors" in bad.stderr


NET_DUMP = Path(__file__).parent / "fixtures" / "ib" / "constructed" / "ibdiagnet2.net_dump"


def test_formats_command_declares_each_format_fact_once() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "fabricscope", "formats", "--json"], capture_output=True, text=True, check=True
    ).stdout
    rows = {r["name"]: r for r in json.loads(out)}
    # Cron mode reads only the appended tail of these; the rest are read whole when they change.
    assert {n for n, r in rows.items() if r["appendable"]} == {
        "prometheus",
        "openmetrics",
        "ethtool",
        "sysfs-grep",
        "telegraf",
    }
    # The topology readers, ibdiagnet's net_dump included (the dashboard's topology page uses this).
    assert {n for n, r in rows.items() if r["emits_links"]} == {
        "iblinkinfo",
        "ibnetdiscover",
        "ibdiagnet-db-csv",
        "ibdiagnet-net-dump",
        "lldpctl-keyvalue",
        "lldpctl-json",
        "sonic-lldp-table",
    }
    assert rows["ibdiagnet-net-dump"]["aliases"] == ["net_dump", "net-dump", "ibdiagnet-net_dump"]
    assert rows["perfquery"]["aliases"] == []
    # An alias is accepted wherever a format name is.
    parsed = subprocess.run(
        [sys.executable, "-m", "fabricscope", "parse", str(NET_DUMP), "--format", "net-dump", "-q", "--json"],
        capture_output=True,
        text=True,
    )
    assert parsed.returncode == 0, parsed.stderr
    assert json.loads(parsed.stdout)["inputs"][0]["format"] == "ibdiagnet-net-dump"


SONIC_CUT = Path(__file__).parent / "fixtures" / "sonic_lldp" / "sonic-buildimage-issue11645-vlab-02-no-footer.txt"


def test_a_cut_sonic_lldp_table_names_file_line_and_offset_and_lenient_keeps_its_rows() -> None:
    # A `show lldp table` posted without its footer: the table may be cut, so strict reading stops
    # with the position where the footer should be; --lenient keeps the six links read.
    fabricscope = [sys.executable, "-m", "fabricscope"]
    strict = subprocess.run([*fabricscope, "topology", str(SONIC_CUT)], capture_output=True, text=True)
    assert strict.returncode == 3
    size = SONIC_CUT.stat().st_size
    assert f"{SONIC_CUT}: line 13 (byte {size}): expected the `Total entries displayed:` footer" in strict.stderr
    assert 'found "the end of the input"' in strict.stderr
    lenient = subprocess.run(
        [*fabricscope, "topology", str(SONIC_CUT), "--lenient", "--json"], capture_output=True, text=True, check=True
    )
    links = json.loads(lenient.stdout)
    assert sorted((x["peer_node_name"], x["peer_port_name"], x["node_name"], x["port_name"]) for x in links) == [
        ("vlab-02", "Ethernet0", "ARISTA01T1", "fortyGigE0/0"),
        ("vlab-02", "Ethernet1", "ARISTA01T1", "fortyGigE0/4"),
        ("vlab-02", "Ethernet16", "ARISTA03T1", "fortyGigE0/0"),
        ("vlab-02", "Ethernet17", "ARISTA03T1", "fortyGigE0/4"),
        ("vlab-02", "Ethernet20", "ARISTA04T1", "fortyGigE0/0"),
        ("vlab-02", "Ethernet21", "ARISTA04T1", "fortyGigE0/4"),
    ]
    assert {x["source"] for x in links} == {"sonic-lldp-table"}


@pytest.mark.parametrize("command", [["formats"], ["counters", "--layer", "network"], ["topology", "sample_traces/ib"]])
def test_tables_for_people_and_machines(command: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(command) == 0
    text = capsys.readouterr().out
    # An aligned plain-text table: no Polars repr (shape line, dtype row), no box-drawing characters.
    assert "shape:" not in text and "str" not in text.splitlines()[1]
    assert not set(text) & set("┌┐└┘│─╞╡═┆╭╮╰╯")
    lines = text.splitlines()
    assert set(lines[1]) == {"-", " "}  # the rule under the header
    # One run of dashes per header cell (cells two spaces apart), each as wide as its widest cell.
    header = re.split(r"\s{2,}", lines[0].strip())
    runs = [m.span() for m in re.finditer(r"-+", lines[1])]
    assert len(runs) == len(header)
    assert all(len(line) <= len(lines[1]) for line in lines[: len(lines) - (command[0] == "counters")])
    assert main([*command, "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert isinstance(rows, list) and rows and isinstance(rows[0], dict)
    assert main([*command, "--csv"]) == 0
    csv = pl.read_csv(capsys.readouterr().out.encode())
    assert csv.height == len(rows) and csv.columns == list(rows[0])
    with pytest.raises(SystemExit):
        main([*command, "--json", "--csv"])  # one machine format at a time


def test_console_script_help_and_progress(tmp_path: Path, samples_dir: Path) -> None:
    exe = Path(sys.executable).parent / "fabricscope"
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "fabricscope"]
    h = subprocess.run([*cmd, "parse", "--help"], capture_output=True, text=True, check=True)
    assert "examples:" in h.stdout
    r = subprocess.run(
        [*cmd, "parse", str(samples_dir), "--progress", "-o", str(tmp_path / "s.parquet")],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stderr
    assert "MB/s" in r.stderr and "rows" in r.stderr


def test_topology_command(samples_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["topology", str(samples_dir / "ib" / "fabric-ibnetdiscover-p.txt")]) == 0
    out = capsys.readouterr().out
    assert "gpu01 mlx5_0" in out and "spine" in out
    assert main(["topology", str(samples_dir / "ib" / "fabric-ibnetdiscover-p.txt"), "--json"]) == 0
    links = json.loads(capsys.readouterr().out)
    assert {(link["tier"], link["peer_tier"]) for link in links} >= {("hca", "leaf"), ("leaf", "spine")}


@pytest.mark.parametrize("command", ["parse", "analyze"])
def test_binary_input_message_escapes_one_way_and_names_the_option(tmp_path: Path, command: str) -> None:
    # Invalid UTF-8 (0xcb), a C1 control that is valid UTF-8 (C2 92) and a C0 control (0x12): all
    # shown as \xNN, the way Python shows bytes, never Rust's \u{..}; the fix names --format.
    blob = tmp_path / "blob.bin"
    blob.write_bytes(b"\xcb\xc1\xc2\x92\x12A=>\x00" * 8)
    r = subprocess.run(
        [sys.executable, "-m", "fabricscope", command, str(blob)], capture_output=True, text=True, timeout=120
    )
    assert r.returncode == 3, r.stdout + r.stderr
    assert '(first bytes "\\xcb\\xc1\\x92\\x12A=>\\x00\\xcb' in r.stderr
    assert "\\u{" not in r.stderr and "format=" in r.stderr
    assert "name it with --format (format= in Python; see `fabricscope formats`)" in r.stderr
