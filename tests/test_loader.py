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
from fabricscope.history import History

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
