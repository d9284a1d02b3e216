"""Engines: the partitioned local engine and the Ray engine give exactly the in-memory findings."""

from __future__ import annotations

import datetime as dt
import json
import shutil
from pathlib import Path

import fabricscope
import polars as pl
import pytest
from fabricscope.detect import DETECTORS, SPECS
from fabricscope.detect.config import load_config
from fabricscope.doors.cli import main
from fabricscope.engines import FABRIC_WIDE, PER_PARTITION
from fabricscope.engines.local import LocalEngine
from fabricscope.engines.ray import RayEngine, work_units
from fabricscope.exceptions import FormatError
from fabricscope.pipeline import run_analysis
from fabricscope.reading.options import Filters, ReadOptions, partition_of, split_by_partition

ROOT = Path(__file__).resolve().parent.parent
TRACES = ROOT / "sample_traces"
SYMERR = TRACES / "scenarios" / "ib-symbol-errors"

try:
    import ray

    HAVE_RAY = True
except ImportError:  # pragma: no cover - depends on the install
    HAVE_RAY = False

needs_ray = pytest.mark.skipif(not HAVE_RAY, reason="ray is not installed (pip install 'fabricscope[ray]')")


def _stable(f: pl.DataFrame) -> pl.DataFrame:
    return f.sort(f.columns, nulls_last=True, maintain_order=True)


@pytest.fixture(scope="module")
def whole() -> fabricscope.Analysis:
    """The reference: one in-memory table, every detector over all of it.

    Built from the files read one by one in walk order: reading a directory interleaves the
    batches of files parsed in parallel, and counter_anomaly names the first source it meets, so
    a directory read is not reproducible row for row (see the lead's notes).
    """
    loads = [fabricscope.load(p, strict=False) for p, _ in work_units([str(TRACES)])]
    tables: dict[str, list[pl.DataFrame]] = {}
    for res in loads:
        for k, t in res.tables.items():
            tables.setdefault(k, []).append(t)
    return run_analysis(
        pl.concat([r.samples for r in loads], how="vertical_relaxed"),
        attributes=pl.concat([r.attributes for r in loads if r.attributes.height], how="vertical_relaxed"),
        tables={k: pl.concat(v, how="vertical_relaxed") for k, v in tables.items()},
    )


@pytest.fixture(scope="module")
def whole_inputs() -> list[dict[str, object]]:
    return run_analysis([str(TRACES)], strict=False).inputs


def test_routing_is_derived_from_the_specs() -> None:
    # Every detector runs in exactly one step, and every fabric-wide detector declares the rate rows it
    # reads (one that declares none would be correct, with the full rates, but not scalable).
    assert set(DETECTORS()) == PER_PARTITION | set(FABRIC_WIDE)
    assert not PER_PARTITION & set(FABRIC_WIDE)
    assert {s.name for s in SPECS.values() if s.scope == "partition"} == PER_PARTITION
    assert all(fn is not None for fn in FABRIC_WIDE.values())


@pytest.mark.parametrize("partitions", [None, 1, 3, 16])
def test_local_engine_gives_the_in_memory_findings(
    whole: fabricscope.Analysis, whole_inputs: list[dict[str, object]], partitions: int | None
) -> None:
    part = run_analysis([str(TRACES)], strict=False, engine="local", partitions=partitions)
    assert whole.findings.height > 50
    assert _stable(part.findings).equals(_stable(whole.findings))
    assert part.inputs == whole_inputs
    # Fabric-wide detectors saw only the rate rows they read, not the whole rates table.
    assert 0 < part.rates.height < whole.rates.height


@pytest.mark.parametrize("workers", [1, 2])
def test_adaptive_partitions_on_threads_give_the_in_memory_findings(whole: fabricscope.Analysis, workers: int) -> None:
    # Small partitions (a few hosts each) analysed two at a time on threads: every host's rows
    # gathered from the batches that hold them, every attribute reaching some partition.
    engine = LocalEngine(target_rows=5_000, workers=workers)
    res = engine.run(
        [str(TRACES)], read=ReadOptions(strict=False), filters=Filters(), config=load_config(None), profile=None
    )
    assert res.partitions >= 4
    assert res.partitions % workers == 0
    one = LocalEngine().run(
        [str(TRACES)], read=ReadOptions(strict=False), filters=Filters(), config=load_config(None), profile=None
    )
    assert one.partitions == 1
    assert res.rows == one.rows  # every sample row in exactly one partition
    # the in-memory analysis is these findings under their entities' names, one per cable
    named = res.fabric.name_findings(res.findings)
    assert _stable(named).equals(_stable(whole.findings.select(res.findings.columns)))


def test_local_engine_plan_keeps_hosts_whole_and_batches_shared() -> None:
    engine = LocalEngine(target_rows=10, workers=2)
    # Three batches: host a alone, then a and b, then c; plus attributes of a host without samples.
    batches = [{"a": 6}, {"a": 2, "b": 5}, {"c": 7}]
    attrs = pl.DataFrame({"host": pl.Series(["a", "z"], dtype=pl.Categorical)})
    plan = engine._plan(batches, attrs)
    hosts = [h for part, _ in plan for h in part]
    assert sorted(hosts) == ["a", "b", "c", "z"]  # each host in exactly one partition
    assert len(plan) == 2  # ceil(20 / 10) = 2 partitions, a multiple of the two workers
    # Hosts in the order first read, cut where the rows reach half: a (8 rows) and b (5) first.
    assert plan[0] == (["a", "b"], [0, 1])
    assert plan[1] == (["c", "z"], [2])  # z (attributes only) joins the last partition
    fixed = LocalEngine(partitions=3)._plan(batches, attrs)
    assert all(partition_of(h, 3) == partition_of(part[0], 3) for part, _ in fixed for h in part)


def test_local_engine_partitions_keep_the_rows_in_flight_a_share_of_the_samples() -> None:
    attrs = pl.DataFrame({"host": pl.Series([], dtype=pl.Categorical)})
    engine = LocalEngine(workers=2)
    # 10^7 rows of 40 hosts: four partitions of 4 M rows would put half the rows in flight on two
    # workers, adding 1.8x the samples' size (3.6x their own); sixteen add 0.45x.
    tens = [{f"h{i:02d}": 250_000} for i in range(40)]
    plan = engine._plan(tens, attrs)
    assert len(plan) == 16
    assert sorted(h for hosts, _ in plan for h in hosts) == sorted(h for b in tens for h in b)
    # 2 M rows: no partition below 500,000 rows, so four rather than sixteen.
    assert len(engine._plan([{f"h{i:02d}": 100_000} for i in range(20)], attrs)) == 4
    # 10^8 rows: the 4 M rows cap makes more partitions than the memory share needs (25, rounded up to 26).
    assert len(engine._plan([{f"h{i:03d}": 250_000} for i in range(400)], attrs)) == 26
    # One worker: eight partitions of 10^7 rows, not sixteen.
    assert len(LocalEngine(workers=1)._plan(tens, attrs)) == 8


def test_fabric_wide_findings_need_the_reduction(whole: fabricscope.Analysis) -> None:
    # The cross-host rules really fire on the sample traces, so the equality above covers them.
    kinds = set(whole.findings["kind"])
    assert {"link_degraded", "link_flap", "pfc_congestion", "lossy_collapse"} <= kinds
    together = whole.findings.filter(
        (pl.col("kind") == "pfc_congestion") & pl.col("message").str.contains("pausing together")
    )
    assert together.height > 0


def test_split_keeps_hosts_whole() -> None:
    df = fabricscope.read(str(TRACES / "scenarios" / "pfc-storm"))
    parts = split_by_partition(df, 5)
    assert sum(p.height for p in parts.values()) == df.height
    for i, p in parts.items():
        for h in p["host"].cast(pl.String).unique():
            assert partition_of(h, 5) == i
    assert len(parts) > 1


def test_partition_of_is_stable_across_processes() -> None:
    # crc32, not Python's salted hash(): Ray workers in other processes must agree.
    assert partition_of("gpu01", 1000) == 918
    assert partition_of(None, 7) == partition_of("", 7) == 0


def test_filters_bounds() -> None:
    t0 = dt.datetime(2026, 12, 4, 16, 0, tzinfo=dt.timezone.utc)
    df = pl.DataFrame(
        {
            "time": [t0 + dt.timedelta(seconds=s) for s in (0, 10, 20)],
            "host": pl.Series(["a", "b", "a"], dtype=pl.Categorical),
        }
    ).with_columns(pl.col("time").dt.cast_time_unit("ns"))
    f = Filters.make(since=t0 + dt.timedelta(seconds=10), until="2026-12-04T16:00:20Z")
    assert f.apply(df)["time"].to_list() == [t0 + dt.timedelta(seconds=10)]  # since inclusive, until exclusive
    assert Filters.make(hosts=["a"]).apply(df).height == 2
    assert Filters.make(hosts=["a"]).apply(df, timed=False).height == 2
    assert f.apply(df, timed=False).height == 3
    assert not Filters().active and Filters.make(hosts=[]).active


@pytest.mark.parametrize("engine", [None, "local"])
def test_hosts_filter_pushdown(engine: str | None) -> None:
    bad = run_analysis([str(SYMERR)], engine=engine, hosts=["symerr-gpu02"])
    assert set(bad.findings["host"]) == {"symerr-gpu02"}
    assert "link_errors" in set(bad.findings["kind"])
    good = run_analysis([str(SYMERR)], engine=engine, hosts=["symerr-gpu03", "symerr-gpu04"])
    assert "link_errors" not in set(good.findings["kind"])


@pytest.mark.parametrize("engine", [None, "local"])
def test_time_filter_pushdown(engine: str | None) -> None:
    # The symbol errors start at 16:00:48 (truth.json); before that the port is clean.
    before = run_analysis([str(SYMERR)], engine=engine, until="2026-12-04T16:00:40Z")
    assert "link_errors" not in set(before.findings["kind"])
    after = run_analysis([str(SYMERR)], engine=engine, since="2026-12-04T16:02:00Z")
    errs = after.findings.filter(pl.col("kind") == "link_errors")
    assert errs.height > 0
    assert errs["start"].min() >= dt.datetime(2026, 12, 4, 16, 2, tzinfo=dt.timezone.utc)


def test_filtered_engine_matches_filtered_whole() -> None:
    kw = {"strict": False, "since": "2026-12-04T16:01:00Z", "hosts": ["pfcstorm-gpu01", "pfcstorm-gpu02"]}
    a = run_analysis([str(TRACES / "scenarios")], **kw)
    b = run_analysis([str(TRACES / "scenarios")], engine="local", partitions=4, **kw)
    assert a.findings.height > 0
    assert _stable(a.findings).equals(_stable(b.findings))


def test_work_units_follow_the_rust_walk() -> None:
    units = work_units([str(TRACES)])
    # sysfs trees stay whole; hidden entries are skipped; order is the reader's.
    assert (str(TRACES / "sysfs" / "gpu02" / "sys"), "file") in units
    assert not any("/sys/class/" in p for p, _ in units)
    read_order = [r.path for r in fabricscope.load(str(TRACES), strict=False).reports]
    assert [p for p, _ in units] == read_order


def test_cli_engine_and_filters(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "f.json"
    rc = main(["analyze", str(SYMERR), "--engine", "local", "--hosts", "symerr-gpu02", "--json", str(out)])
    assert rc == 2  # CRITICAL: the symbol errors
    doc = json.loads(out.read_text())
    assert {f["host"] for f in doc["findings"]} == {"symerr-gpu02"}
    rc = main(["analyze", str(SYMERR), "--until", "2026-12-04T16:00:40Z", "--hosts", "symerr-gpu02"])
    assert rc == 0
    assert "OK" in capsys.readouterr().out
    with pytest.raises(SystemExit) as usage:  # a usage error: UNKNOWN, naming the option
        main(["analyze", str(SYMERR), "--since", "yesterday"])
    assert usage.value.code == 3
    assert "argument --since: expected epoch seconds or ISO 8601" in capsys.readouterr().err


@pytest.fixture(scope="module")
def ray_local():
    if not HAVE_RAY:
        pytest.skip("ray is not installed (pip install 'fabricscope[ray]')")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    yield
    ray.shutdown()


@needs_ray
@pytest.mark.parametrize("partitions", [None, 3])
def test_ray_engine_gives_the_local_findings(
    whole: fabricscope.Analysis, whole_inputs: list[dict[str, object]], ray_local: None, partitions: int | None
) -> None:
    res = run_analysis([str(TRACES)], strict=False, engine="ray", partitions=partitions)
    assert _stable(res.findings).equals(_stable(whole.findings))
    assert res.inputs == whole_inputs
    local = run_analysis([str(TRACES)], strict=False, engine="local", partitions=partitions)
    assert _stable(res.findings).equals(_stable(local.findings))


@needs_ray
def test_ray_workers_in_a_budget_split_their_partitions_and_find_the_same(ray_local: None) -> None:
    # 1 KiB shared by the workers: each worker analyses every host bucket of its partition apart.
    inputs = [str(TRACES / "prometheus"), str(TRACES / "scenarios" / "chain-two-faults")]
    kw = {"read": ReadOptions(strict=False), "filters": Filters(), "config": load_config(None), "profile": None}
    plain = RayEngine(partitions=4).run(inputs, **kw)
    budget = RayEngine(partitions=4, memory=1024).run(inputs, **kw)
    assert plain.partitions == 4
    assert budget.partitions > plain.partitions
    assert budget.rows == plain.rows == 3172
    assert _stable(budget.findings).equals(_stable(plain.findings))
    assert budget.findings.height == 24


@needs_ray
def test_ray_engine_filters(ray_local: None) -> None:
    kw = {"since": "2026-12-04T16:02:00Z", "hosts": ["symerr-gpu02"]}
    a = run_analysis([str(SYMERR)], engine="ray", **kw)
    b = run_analysis([str(SYMERR)], **kw)
    assert a.findings.height > 0
    assert _stable(a.findings).equals(_stable(b.findings))


@needs_ray
def test_ray_worker_errors_name_the_file(tmp_path: Path, ray_local: None) -> None:
    shutil.copy(TRACES / "prometheus" / "federate-rail0.prom", tmp_path / "ok.prom")
    bad = tmp_path / "bad.prom"
    bad.write_text('node_infiniband_port_data_received_bytes_total{device="mlx5_0",port="1"} 12 x\n')
    # one unreadable input among readable ones is listed with its error, naming the file
    strict = run_analysis([str(tmp_path)], engine="ray")
    errors = {Path(i["path"]).name: i.get("error") for i in strict.inputs}
    assert errors["ok.prom"] is None and "bad.prom: line 1" in errors["bad.prom"]
    # alone, it is the analysis's error
    with pytest.raises(FormatError) as e:
        run_analysis([str(bad)], engine="ray")
    assert e.value.path is not None and e.value.path.endswith("bad.prom")
    lenient = run_analysis([str(tmp_path)], engine="ray", strict=False)
    rejected = {Path(i["path"]).name: i["rejected"] for i in lenient.inputs}
    assert rejected == {"bad.prom": 1, "ok.prom": 0}


@pytest.mark.parametrize(
    "name",
    ["fabricscope.engines", "fabricscope.engines.local", "fabricscope.reading.units", "fabricscope.simulate.scale"],
)
def test_docstring_examples(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    import doctest
    import importlib

    monkeypatch.chdir(ROOT)  # examples name sample_traces/ relative to the checkout
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0
    assert result.failed == 0


def _history(root: Path, src: Path) -> Path:
    """A cron history (Hive layout, stored schema) holding what ``src`` reads."""
    from fabricscope.reading.history import partition_dir, sorted_for_history, to_stored

    res = fabricscope.load(str(src))
    stored = to_stored(res.samples).with_columns(pl.col("time").dt.date().alias("_d"))
    for (day,), part in stored.partition_by(["_d"], as_dict=True).items():
        out = partition_dir(root, "samples", day)
        out.mkdir(parents=True)
        sorted_for_history(part.drop("_d")).write_parquet(out / "part-r1.parquet")
    res.attributes.with_columns(pl.col("host", "device", "key", "source").cast(pl.String)).write_parquet(
        root / "attributes.parquet"
    )
    return root


def test_history_directory_is_read_by_the_engines(tmp_path: Path) -> None:
    root = _history(tmp_path / "history", SYMERR)
    direct = run_analysis([str(SYMERR)], engine="local")
    hist = run_analysis([str(root)], engine="local")
    assert "link_errors" in set(hist.findings["kind"])
    assert _stable(hist.findings).equals(_stable(direct.findings))
    assert {i["format"] for i in hist.inputs} == {"parquet"}
    # Time filters prune the days' directories before any file is opened; hosts are rows inside
    # a day's part (its row groups' statistics).
    f = Filters.make(hosts=["symerr-gpu02"])
    units = work_units([str(root)], filters=f)
    assert [Path(p).parent.name for p, k in units if k == "history"] == ["date=2026-12-04"]
    assert run_analysis([str(root)], engine="local", hosts=["nobody"]).findings.is_empty()
    assert not work_units([str(root)], filters=Filters.make(since="2026-12-05T00:00:00Z"))[:-1]
    kw = {"hosts": ["symerr-gpu02"], "since": "2026-12-04T16:02:00Z"}
    a = run_analysis([str(root)], engine="local", **kw)
    b = run_analysis([str(SYMERR)], **kw)
    assert a.findings.height > 0
    assert _stable(a.findings).equals(_stable(b.findings))


@needs_ray
def test_ray_engine_reads_a_history_in_parallel(tmp_path: Path, ray_local: None) -> None:
    root = _history(tmp_path / "history", SYMERR)
    a = run_analysis([str(root)], engine="ray", partitions=3)
    b = run_analysis([str(root)], engine="local")
    assert a.findings.height > 0
    assert _stable(a.findings).equals(_stable(b.findings))
    assert a.inputs == b.inputs
