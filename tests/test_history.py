"""The history layout and reader API (the contract the dashboard reads), and the atomic writers."""

from __future__ import annotations

import datetime as dt
import doctest
import importlib
from pathlib import Path

import fabricscope
import polars as pl
import pytest
from fabricscope import _atomic
from fabricscope.doors.cron import CronOptions, run_cron
from fabricscope.reading.history import (
    LIFECYCLE_SCHEMA,
    RUNS_SCHEMA,
    STORED_SAMPLES_SCHEMA,
    History,
    is_history,
    partition_dir,
    to_canonical,
    to_stored,
)

from .conftest import SAMPLES


@pytest.mark.parametrize(
    "name",
    [
        "fabricscope.reading.history",
        "fabricscope._atomic",
        "fabricscope.doors.cron.textfile",
        "fabricscope.doors.cron.fault_lifecycle",
        "fabricscope.doors.cron.outputs",
        "fabricscope.doors.report.build",
        "fabricscope.doors.report.gather",
        "fabricscope.doors.report.html",
        "fabricscope.doors.report.markdown",
    ],
)
def test_docstring_examples(name: str) -> None:
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0
    assert result.failed == 0


def test_history_is_exported() -> None:
    assert fabricscope.History is History
    assert "History" in fabricscope.__all__


def test_stored_round_trip_is_exact() -> None:
    s = fabricscope.read(SAMPLES / "prometheus")
    back = to_canonical(to_stored(s))
    assert back.schema == s.schema
    assert back.equals(s)


def test_empty_history_has_contract_schemas(tmp_path: Path) -> None:
    h = History(tmp_path)
    assert not is_history(tmp_path)
    assert h.samples().collect_schema() == pl.Schema({**STORED_SAMPLES_SCHEMA, "date": pl.Date})
    assert h.lifecycle().schema == LIFECYCLE_SCHEMA
    assert h.runs().schema == RUNS_SCHEMA
    assert h.attributes() is None


def test_partition_names_are_escaped_and_read_back(tmp_path: Path) -> None:
    df = to_stored(fabricscope.read(SAMPLES / "ethtool")).with_columns(pl.lit("rack 1/gpu=7").alias("host"))
    d = partition_dir(tmp_path, "samples", dt.date(2026, 12, 2), "rack 1/gpu=7")
    assert d.name == "host=rack%201%2Fgpu%3D7"
    _atomic.write_parquet(d / "part-x.parquet", df)
    h = History(tmp_path)
    assert is_history(tmp_path)
    assert h.samples(hosts=["rack 1/gpu=7"]).collect().height == df.height
    assert h.samples(hosts=["other"]).collect().height == 0
    # The same files read by Polars' own Hive reader.
    direct = pl.scan_parquet(tmp_path / "samples" / "**" / "*.parquet", hive_partitioning=True).collect()
    assert direct["host"].unique().to_list() == ["rack 1/gpu=7"]


def test_time_and_host_filters(tmp_path: Path) -> None:
    inp = SAMPLES / "scenarios" / "pfc-storm" / "ethtool"
    run_cron(CronOptions(inputs=[str(inp)], state=tmp_path / "s", history=tmp_path / "h"))
    h = History(tmp_path / "h")
    all_ = h.samples().collect()
    t = dt.datetime(2026, 12, 4, 16, 2, tzinfo=dt.timezone.utc)
    assert h.samples(since=t).collect().height == all_.filter(pl.col("time") >= t).height
    assert h.samples(until=t).collect().height == all_.filter(pl.col("time") < t).height
    # Naive datetimes and ISO text are UTC.
    assert h.samples(since="2026-12-04 16:02:00").collect().height == h.samples(since=t).collect().height
    assert h.samples(since="2026-12-05T00:00:00Z").collect().height == 0
    f = h.findings().collect()
    assert {"run_id", "fault_id", "date"} <= set(f.columns)
    assert f["fault_id"].null_count() == 0
    assert h.findings(since="2030-01-01T00:00:00Z").collect().height == 0
    runs = h.runs()
    assert runs.row(0, named=True)["samples"] == all_.height
    assert runs.row(0, named=True)["files_read"] == 4


def test_atomic_write_leaves_old_file_when_writer_fails(tmp_path: Path) -> None:
    target = tmp_path / "x.parquet"
    _atomic.write_parquet(target, pl.DataFrame({"a": [1]}))

    def boom() -> None:
        raise RuntimeError("crash before rename")

    with pytest.raises(RuntimeError):
        _atomic.write_parquet(target, pl.DataFrame({"a": [2]}), before_rename=boom)
    assert pl.read_parquet(target)["a"].to_list() == [1]
    assert [p.name for p in tmp_path.iterdir()] == ["x.parquet"]
