"""fabricscope.load reads what the analysis pipeline reads, and run_analysis takes paths and frames together."""

from __future__ import annotations

import gzip
import shutil
import subprocess
import sys
from pathlib import Path

import fabricscope
import polars as pl
import pytest
from fabricscope.exceptions import DecompressionError, UnknownFormatError
from fabricscope.reading.history import History

SAMPLES = Path(__file__).resolve().parent.parent / "sample_traces"


def _report_rows(reports: list[fabricscope.InputReport]) -> list[tuple[object, ...]]:
    return [(r.path, r.format, r.rows, r.attribute_rows, r.bad_records, r.failed, r.errors[:1]) for r in reports]


@pytest.fixture
def ib_with_corrupt_gz(tmp_path: Path) -> Path:
    """sample_traces/ib plus a gzip file cut short: one input that cannot be read."""
    d = tmp_path / "ib"
    shutil.copytree(SAMPLES / "ib", d)
    whole = gzip.compress((SAMPLES / "prometheus" / "federate-rail0.prom").read_bytes())
    (d / "zz-cut.prom.gz").write_bytes(whole[:300])
    return d


def test_load_reads_the_rows_and_reports_the_pipeline_reads(ib_with_corrupt_gz: Path) -> None:
    got = fabricscope.load(ib_with_corrupt_gz, strict=False)
    ran = fabricscope.run_analysis(ib_with_corrupt_gz, strict=False)
    assert _report_rows(got.reports) == _report_rows(ran.reports)
    assert [(r.path.rsplit("/", 1)[-1], r.format, r.rows, r.failed) for r in got.reports] == [
        ("0x98039b0300bb0001-perfquery-x.log", "perfquery", 176, False),
        ("fabric-ibnetdiscover-p.txt", "ibnetdiscover", 32, False),
        ("zz-cut.prom.gz", None, 0, True),
    ]
    assert got.samples.height == 208
    assert got.attributes.height == 24
    assert got.tables["links"].height == 8
    # Analysing what load returned gives the findings and status of analysing the paths.
    from_frames = fabricscope.run_analysis(got)
    assert from_frames.findings.equals(ran.findings)
    assert from_frames.status == ran.status == "unknown"


def test_strict_load_raises_the_failed_inputs_error(ib_with_corrupt_gz: Path) -> None:
    with pytest.raises(DecompressionError, match=r"zz-cut\.prom\.gz: gzip stream is corrupt or truncated"):
        fabricscope.load(ib_with_corrupt_gz)
    with pytest.raises(UnknownFormatError, match=r"README\.md: cannot detect the format"):
        fabricscope.load([SAMPLES / "ethtool", SAMPLES / "README.md"])


def test_load_keeps_input_order_row_for_row() -> None:
    paths = [SAMPLES / "prometheus", SAMPLES / "ethtool", SAMPLES / "ib", SAMPLES / "sysfs"]
    together = fabricscope.load(paths)
    one_by_one = [fabricscope.load(p) for p in paths]
    assert together.samples.equals(pl.concat([r.samples for r in one_by_one]))
    assert together.attributes.equals(pl.concat([r.attributes for r in one_by_one]))
    assert _report_rows(together.reports) == [row for r in one_by_one for row in _report_rows(r.reports)]
    assert fabricscope.load(paths).samples.equals(together.samples)


def _scrape(hosts: list[str], ts_ms: int, queue_type: str = "counter") -> str:
    """One node_exporter scrape of `hosts` (two HCAs each, an extra label, an info series)."""
    lines = ["# TYPE node_infiniband_port_data_received_bytes_total counter", f"# TYPE my_queue_depth {queue_type}"]
    for name in ("node_infiniband_port_data_received_bytes_total", "my_queue_depth"):
        for h in hosts:
            for d in ("mlx5_0", "mlx5_1"):
                lines.append(f'{name}{{device="{d}",instance="{h}:9100",job="node",port="1"}} {len(h) * 7} {ts_ms}')
    for h in hosts:
        lines.append(f'node_network_info{{device="eth0",instance="{h}:9100",operstate="up"}} 1 {ts_ms}')
        lines.append(f'node_ethtool_rx_bytes{{device="eth0",instance="{h}:9100",mode="a"}} 9 {ts_ms}')
    return "\n".join(lines) + "\n"


def test_scans_that_share_readers_read_each_file_as_alone(tmp_path: Path) -> None:
    """The scans of one run share a pool of readers, so a fabric's label sets are resolved once.

    A reader that finished one scrape reads the next with the label sets it resolved: each file
    still reads exactly as it does alone (hosts that come and go, a `# TYPE` line that changes a
    name's type, a file that names no host), and the pool keeps the reader for the next scan.
    """
    scrapes = [
        _scrape(["gpu01", "gpu02", "gpu03"], 1_764_686_822_000),
        _scrape(["gpu03", "gpu04", "gpu01"], 1_764_686_882_000, queue_type="gauge"),
        'node_infiniband_port_data_received_bytes_total{device="mlx5_0",port="1"} 5 1764686942000\n',
        _scrape(["gpu02", "gpu01"], 1_764_686_962_000),
    ]
    files = []
    for i, text in enumerate(scrapes):
        files.append(tmp_path / f"scrape{i}.prom")
        files[-1].write_text(text)
    readers = fabricscope.ReaderPool()
    shared = [list(fabricscope.scan([f], readers=readers, include_attributes=True)) for f in files]
    assert repr(readers) == "ReaderPool { readers: 1 }"
    alone = [list(fabricscope.scan([f], include_attributes=True)) for f in files]
    assert [[k for k, _ in s] for s in shared] == [[k for k, _ in a] for a in alone]
    for s, a in zip(shared, alone, strict=True):
        for (_, frame_shared), (_, frame_alone) in zip(s, a, strict=True):
            assert frame_shared.equals(frame_alone)
    gauges = pl.concat(f for s in shared for k, f in s if k == "samples").filter(pl.col("counter") == "my_queue_depth")
    assert gauges.group_by("is_counter").len().sort("is_counter")["len"].to_list() == [6, 10]
    hosts = {h for s in shared for k, f in s if k == "samples" for h in f["host"].cast(pl.String).to_list()}
    assert hosts == {"gpu01", "gpu02", "gpu03", "gpu04", "unknown"}


def test_load_reads_a_cron_history(tmp_path: Path) -> None:
    inputs = SAMPLES / "scenarios" / "pfc-storm" / "ethtool"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "fabricscope",
            "cron",
            "--inputs",
            str(inputs),
            "--state",
            str(tmp_path / "state"),
            "--history",
            str(tmp_path / "history"),
        ],
        capture_output=True,
        check=False,
    )
    stored = History(tmp_path / "history").samples().collect()
    assert stored.height > 0
    got = fabricscope.load(tmp_path / "history")
    assert got.samples.height == stored.height
    assert {r.format for r in got.reports} == {"parquet"}
    assert sum(r.rows for r in got.reports) == stored.height
    cols = ["time", "host", "device", "port", "counter", "value_u64"]
    key = [pl.col(c).cast(pl.String) if c in ("host", "device", "counter") else pl.col(c) for c in cols]
    assert got.samples.select(key).sort(cols).equals(stored.select(key).sort(cols))
    # The history's rows are the input's rows.
    assert got.samples.height == fabricscope.load(inputs).samples.height
    assert fabricscope.run_analysis(tmp_path / "history").findings.equals(fabricscope.run_analysis(inputs).findings)


def test_run_analysis_mixes_paths_frames_and_read_results() -> None:
    frame = fabricscope.read(SAMPLES / "prometheus")
    read_already = fabricscope.load(SAMPLES / "ib")
    mixed = fabricscope.run_analysis([SAMPLES / "ethtool", frame, read_already])
    paths = fabricscope.run_analysis([SAMPLES / "ethtool", SAMPLES / "prometheus", SAMPLES / "ib"])
    assert mixed.findings.height > 0
    assert mixed.findings.equals(paths.findings)
    assert mixed.status == paths.status == "critical"
    assert [(i["path"].rsplit("/", 1)[-1], i["format"], i["records"], i["error"]) for i in mixed.inputs] == [
        ("roce01-eth2.log", "ethtool", 128, None),
        ("<frame>", "frame", frame.height, None),
        ("0x98039b0300bb0001-perfquery-x.log", "perfquery", 192, None),
        ("fabric-ibnetdiscover-p.txt", "ibnetdiscover", 40, None),
    ]
    assert frame.height == 480
    # The frame's rows joined the paths' rows: a detector finding on the frame's hosts is there.
    assert "gpu02" in mixed.findings["host"].to_list()


def test_run_analysis_lists_a_failed_path_beside_a_frame(ib_with_corrupt_gz: Path) -> None:
    frame = fabricscope.read(SAMPLES / "prometheus")
    mixed = fabricscope.run_analysis([frame, ib_with_corrupt_gz])
    # A critical finding outranks the unread input (findings.overall_status).
    assert mixed.status == "critical"
    assert [i["path"].rsplit("/", 1)[-1] for i in mixed.failed_inputs] == ["zz-cut.prom.gz"]
    assert "gzip stream is corrupt or truncated" in mixed.failed_inputs[0]["error"]
    assert mixed.inputs[0]["path"] == "<frame>"
    only = fabricscope.run_analysis(frame)
    assert only.inputs == [{"path": "<frame>", "format": "frame", "records": 480, "rejected": 0, "error": None}]
    assert [(r.path, r.rows) for r in only.reports] == [("<frame>", 480)]
    assert only.findings.filter(pl.col("host") == "gpu02").height > 0
    assert set(only.findings["kind"].to_list()) <= set(mixed.findings["kind"].to_list())


def test_run_analysis_refuses_what_is_not_a_source() -> None:
    with pytest.raises(TypeError, match="cannot analyse a int"):
        fabricscope.run_analysis([pl.DataFrame(), 3])  # type: ignore[list-item]
