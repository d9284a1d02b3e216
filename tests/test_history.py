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
    sorted_for_history,
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


def test_a_day_partition_holds_every_host_and_is_read_back(tmp_path: Path) -> None:
    one = to_stored(fabricscope.read(SAMPLES / "ethtool"))
    df = pl.concat([one.with_columns(pl.lit(h).alias("host")) for h in ("rack 1/gpu=7", "gpu2")])
    d = partition_dir(tmp_path, "samples", dt.date(2026, 12, 2))
    assert d.relative_to(tmp_path).as_posix() == "samples/date=2026-12-02"
    _atomic.write_parquet(d / "part-x.parquet", sorted_for_history(df))
    h = History(tmp_path)
    assert is_history(tmp_path)
    assert h.samples(hosts=["rack 1/gpu=7"]).collect().height == one.height
    assert h.samples(hosts=["other"]).collect().height == 0
    # The same files read by Polars' own Hive reader.
    direct = pl.scan_parquet(tmp_path / "samples" / "**" / "*.parquet", hive_partitioning=True).collect()
    assert sorted(direct["host"].unique().to_list()) == ["gpu2", "rack 1/gpu=7"]
    assert direct["date"].unique().to_list() == [dt.date(2026, 12, 2)]


def test_histories_of_the_host_directory_layout_are_read(tmp_path: Path) -> None:
    # the earlier layout: samples/date=D/host=H/part-*.parquet
    df = to_stored(fabricscope.read(SAMPLES / "ethtool"))
    _atomic.write_parquet(tmp_path / "samples" / "date=2026-12-02" / "host=gpu1" / "part-x.parquet", df)
    assert History(tmp_path).samples(hosts=[df["host"][0]]).collect().height == df.height


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
