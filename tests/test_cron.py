"""fabricscope cron: incremental reads, lifecycle, outputs, lock, corrupt state, retention, compaction."""

from __future__ import annotations

import datetime as dt
import fcntl
import json
import os
import shutil
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import fabricscope
import polars as pl
import pytest
from fabricscope.doors.cron import CronOptions, run_cron
from fabricscope.reading.history import STORED_SAMPLES_SCHEMA, History, is_history, to_stored

from .conftest import SAMPLES

PFC = SAMPLES / "scenarios" / "pfc-storm"
ETH = PFC / "ethtool" / "pfcstorm-gpu03-eth0.log"
PROM = PFC / "prometheus" / "federate.prom"
COLS = STORED_SAMPLES_SCHEMA.names()


def stored_sorted(df: pl.DataFrame) -> pl.DataFrame:
    return df.select(COLS).sort(COLS, nulls_last=True)


def one_shot(*paths: Path) -> pl.DataFrame:
    return stored_sorted(to_stored(fabricscope.read([str(p) for p in paths])))


def history_samples(h: Path) -> pl.DataFrame:
    return stored_sorted(History(h).samples().collect())


def cron(tmp: Path, inputs: list[Path], **kw: object) -> object:
    opts = CronOptions(inputs=[str(p) for p in inputs], state=tmp / "state", history=tmp / "hist", **kw)  # type: ignore[arg-type]
    return run_cron(opts)


def cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "fabricscope", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **(env or {})},
    )


def test_first_run_stores_every_sample_and_reports_like_analyze(tmp_path: Path) -> None:
    inp = tmp_path / "in"
    shutil.copytree(PFC, inp)
    res = cron(tmp_path, [inp])
    assert history_samples(tmp_path / "hist").equals(one_shot(inp))
    expected = fabricscope.analyze(inp)
    key = ["kind", "severity", "host", "device", "port", "priority", "metric"]
    # One active fault per distinct finding of the one-shot analysis.
    assert (
        res.active.select(key)
        .sort(key, nulls_last=True)
        .equals(expected.select(key).unique().sort(key, nulls_last=True))
    )
    assert res.exit_code == 2
    # the line counts pages, one per incident as analyze lists them: the storm (its own pause and loss
    # held in it) and its neighbour's received pause (no links table relates the two)
    assert len(fabricscope.run_analysis(inp).incidents) == 2
    assert res.status_line.startswith(
        "FABRICSCOPE CRITICAL - 1 critical, 1 warning: pfc_storm pfcstorm-gpu03/eth0/p3, "
    )
    # Nothing new: nothing read, nothing stored twice, the same faults still alert once each.
    res2 = cron(tmp_path, [inp])
    assert (res2.files_read, res2.samples) == (0, 0)
    assert res2.exit_code == 2
    lc = History(tmp_path / "hist").lifecycle()
    assert lc.height == res.active.height
    assert lc["resolved_at"].null_count() == lc.height
    assert History(tmp_path / "hist").runs().height == 2
    assert history_samples(tmp_path / "hist").equals(one_shot(inp))


def _grow(src: Path, dst: Path, cuts: list[int], run: object) -> None:
    data = src.read_bytes()
    prev = 0
    for c in [*cuts, len(data)]:
        with dst.open("ab") as f:
            f.write(data[prev:c])
        prev = c
        run()


@pytest.mark.parametrize("source", [ETH, PROM], ids=["ethtool", "prometheus"])
def test_appended_log_resumes_without_loss_or_duplicates(tmp_path: Path, source: Path) -> None:
    inp = tmp_path / "in"
    inp.mkdir()
    log = inp / source.name
    n = source.stat().st_size
    # Cuts inside lines, inside a snapshot, right after a timestamp line, and at line ends.
    cuts = [n // 7, n // 7 + 3, n // 3, n // 2 + 11, (3 * n) // 4]
    reads: list[int] = []
    _grow(source, log, cuts, lambda: reads.append(cron(tmp_path, [inp]).files_read))
    # Appends that complete no line are left for the next run.
    assert reads[0] == 1 and reads[-1] == 1 and sum(reads) >= 5
    assert history_samples(tmp_path / "hist").equals(one_shot(source))
    st = json.loads((tmp_path / "state" / "state.json").read_text())
    entry = st["files"][str(log)]
    assert entry["appendable"] and entry["offset"] == n


def test_partial_last_line_is_read_next_run(tmp_path: Path) -> None:
    inp = tmp_path / "in"
    inp.mkdir()
    text = ETH.read_text()
    cut = text.index("rx_bytes_phy:", 2000) + len("rx_bytes_phy: 12")
    (inp / ETH.name).write_text(text[:cut])
    cron(tmp_path, [inp])
    h = History(tmp_path / "hist").samples().collect()
    full = one_shot(ETH)
    # The cut reading (a truncated number) was not stored.
    assert h.join(full, on=COLS, how="anti", nulls_equal=True).height == 0
    (inp / ETH.name).write_text(text)
    cron(tmp_path, [inp])
    assert history_samples(tmp_path / "hist").equals(full)


def test_rotated_and_truncated_logs_start_over(tmp_path: Path) -> None:
    inp = tmp_path / "in"
    inp.mkdir()
    lines = ETH.read_text().splitlines(keepends=True)
    half = next(
        i for i in range(len(lines) // 2, len(lines)) if lines[i].startswith("# host:") or lines[i][:4] == "1796"
    )
    head = "# host: pfcstorm-gpu03\n"
    first, second = "".join(lines[:half]), head + "".join(lines[half:])
    log = inp / "eth0.log"
    log.write_text(first)
    cron(tmp_path, [inp])
    # logrotate `create`: the old file moves away, a new one (new inode) takes the name.
    log.rename(inp / "eth0.log.1")
    log.write_text(second)
    res = cron(tmp_path, [inp])
    assert res.files_read == 2  # the new eth0.log and the renamed eth0.log.1 (already stored: dropped)
    assert res.duplicates_dropped > 0
    assert history_samples(tmp_path / "hist").equals(one_shot(ETH))
    # copytruncate: same inode, shorter content, then more lines.
    (inp / "eth0.log.1").unlink()
    cron(tmp_path, [inp])
    with log.open("r+") as f:
        f.truncate(0)
    log.write_text(second)  # rewritten in place: same prefix length class, content differs from offset
    res = cron(tmp_path, [inp])
    assert history_samples(tmp_path / "hist").equals(one_shot(ETH))


def _snapshot_cuts(text: str, times: list[int]) -> list[int]:
    return [text.index(f"\n{t}\n") + 1 for t in times]


def test_lifecycle_one_alert_per_fault_then_resolved(tmp_path: Path) -> None:
    # The storm on gpu03 lasts 16:01:10-16:02:50 (truth.json); runs at 16:02:00, 16:03:20, 16:04.
    inp = tmp_path / "in"
    inp.mkdir()
    text = ETH.read_text()
    cuts = _snapshot_cuts(text, [1796400120, 1796400200])
    log = inp / ETH.name
    codes = []
    _grow(ETH, log, cuts, lambda: codes.append(cron(tmp_path, [inp], lookback_s=900.0).exit_code))
    assert codes[0] == 2 and codes[-1] == 0
    lc = History(tmp_path / "hist").lifecycle()
    storm = lc.filter(pl.col("kind") == "pfc_storm")
    assert storm.height == 1  # one alert, not one per run
    row = storm.row(0, named=True)
    assert row["runs"] == 2
    assert row["resolved_at"] is not None and row["resolved_at"] > row["last_seen"]
    f = History(tmp_path / "hist").findings().collect()
    assert f.filter(pl.col("kind") == "pfc_storm")["fault_id"].unique().to_list() == [row["fault_id"]]


def test_incident_lifecycle_first_seen_last_seen_resolved(tmp_path: Path) -> None:
    # Same runs as above: the storm (root) with its own pause ratio and drops is one incident that
    # two runs see and the third, with new data after the storm, resolves with its root.
    from fabricscope.doors.cron.incident_lifecycle import read_incidents

    inp = tmp_path / "in"
    inp.mkdir()
    cuts = _snapshot_cuts(ETH.read_text(), [1796400120, 1796400200])
    docs = []
    _grow(ETH, inp / ETH.name, cuts, lambda: docs.append(cron(tmp_path, [inp], lookback_s=900.0).document))
    first = docs[0]["incident_lifecycle"]
    assert [(i["root_kind"], i["host"], i["rule"]) for i in first] == [
        ("pfc_storm", "pfcstorm-gpu03", "pause_storm_head_of_line")
    ]
    assert {m["kind"] for m in first[0]["members"]} >= {"pfc_congestion"}
    assert docs[-1]["incident_lifecycle"] == []
    lc = read_incidents(tmp_path / "hist")
    assert lc.height == 1  # one incident across runs, not one per run
    row = lc.row(0, named=True)
    assert row["incident_id"] == first[0]["incident_id"]
    assert row["runs"] == 2
    faults = History(tmp_path / "hist").lifecycle().filter(pl.col("kind") == "pfc_storm").row(0, named=True)
    assert row["resolved_at"] == faults["resolved_at"] and row["resolved_at"] > row["last_seen"]


def test_textfile_parses_as_prometheus_exposition(tmp_path: Path) -> None:
    parser = pytest.importorskip("prometheus_client.parser")
    inp = tmp_path / "in"
    shutil.copytree(PFC / "ethtool", inp)
    tf = tmp_path / "textfile" / "fabricscope.prom"
    cron(tmp_path, [inp], textfile=str(tf))
    fams = {f.name: f for f in parser.text_string_to_metric_families(tf.read_text())}
    assert set(fams) >= {
        "fabricscope_findings",
        "fabricscope_port_health",
        "fabricscope_last_run_timestamp_seconds",
        "fabricscope_last_run_duration_seconds",
    }
    findings = {(s.labels["kind"], s.labels["severity"]): s.value for s in fams["fabricscope_findings"].samples}
    assert findings[("pfc_storm", "critical")] == 1
    assert findings[("link_flap", "critical")] == 0
    health = {s.labels["host"]: s.value for s in fams["fabricscope_port_health"].samples}
    assert health == {"pfcstorm-gpu01": 0, "pfcstorm-gpu02": 1, "pfcstorm-gpu03": 2, "pfcstorm-gpu04": 0}
    assert not list(tf.parent.glob(".*tmp"))
    # fabricscope's own Prometheus reader takes it too (strict: no malformed line).
    own = fabricscope.read(tf, format="prometheus", host="cron")
    assert own.height == sum(len(f.samples) for f in fams.values())


def test_cli_nagios_line_json_and_exit_code(tmp_path: Path) -> None:
    inp = tmp_path / "in"
    shutil.copytree(PFC / "ethtool", inp)
    expected = fabricscope.analyze(inp).filter(pl.col("severity") != "info")
    # the line counts pages: analyze's incidents (each finding of a fault is in exactly one)
    incidents = fabricscope.run_analysis(inp).incidents
    n_crit = sum(i.severity == "critical" for i in incidents)
    n_warn = len(incidents) - n_crit
    assert 0 < len(incidents) < expected.height
    r = cli(
        "cron",
        "--inputs",
        str(inp),
        "--state",
        str(tmp_path / "s"),
        "--history",
        str(tmp_path / "h"),
        "--json",
        str(tmp_path / "f.json"),
    )
    assert r.returncode == 2, r.stderr
    assert r.stdout.count("\n") == 1
    assert r.stdout.startswith(f"FABRICSCOPE CRITICAL - {n_crit} critical, {n_warn} warning: ")
    first = incidents[0].root
    assert f"{first['kind']} {first['host']}/{first['device']}" in r.stdout
    doc = json.loads((tmp_path / "f.json").read_text())
    assert doc["schema"] == "fabricscope.findings/1" and doc["status"] == "critical"
    assert doc["run"]["exit_code"] == 2 and doc["run"]["samples"] > 0
    assert len(doc["fault_ids"]) == len(doc["findings"])


def test_lock_second_run_exits_3_or_waits(tmp_path: Path) -> None:
    inp = tmp_path / "in"
    shutil.copytree(PFC / "ethtool", inp)
    state = tmp_path / "s"
    state.mkdir()
    fd = os.open(state / "lock", os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)
    args = ["cron", "--inputs", str(inp), "--state", str(state), "--history", str(tmp_path / "h")]
    try:
        r = cli(*args)
        assert r.returncode == 3
        assert "another fabricscope cron run" in r.stdout and "--wait" in r.stdout
        assert not (tmp_path / "h" / "runs.parquet").exists()
        threading.Timer(1.0, lambda: os.close(fd)).start()
        r = cli(*args, "--wait", "60")
        assert r.returncode == 2, r.stdout + r.stderr
    finally:
        time.sleep(1.1)


def test_concurrent_runs_store_each_sample_once(tmp_path: Path) -> None:
    inp = tmp_path / "in"
    shutil.copytree(PFC / "ethtool", inp)
    args = ["cron", "--inputs", str(inp), "--state", str(tmp_path / "s"), "--history", str(tmp_path / "h"), "--wait"]
    procs = [subprocess.Popen([sys.executable, "-m", "fabricscope", *args], stdout=subprocess.PIPE) for _ in range(3)]
    codes = [p.wait(120) for p in procs]
    for p in procs:
        assert p.stdout is not None
        p.stdout.close()
    assert codes == [2, 2, 2]
    assert history_samples(tmp_path / "h").equals(one_shot(inp))
    assert sorted(History(tmp_path / "h").runs()["samples"].to_list())[:2] == [0, 0]


def test_corrupt_state_clear_error_and_reset(tmp_path: Path) -> None:
    inp = tmp_path / "in"
    shutil.copytree(PFC / "ethtool", inp)
    args = ["cron", "--inputs", str(inp), "--state", str(tmp_path / "s"), "--history", str(tmp_path / "h")]
    assert cli(*args).returncode == 2
    (tmp_path / "s" / "state.json").write_bytes(b'{"version": 1, "files": [tru')
    r = cli(*args)
    assert r.returncode == 3
    assert "corrupt" in r.stdout and "state.json" in r.stdout and "--reset-state" in r.stdout
    r = cli(*args, "--reset-state")
    assert r.returncode == 2, r.stdout + r.stderr
    assert "samples=0 " in r.stdout  # everything re-read, nothing stored twice
    assert history_samples(tmp_path / "h").equals(one_shot(inp))


def test_state_files_are_private(tmp_path: Path) -> None:
    inp = tmp_path / "in"
    shutil.copytree(PFC / "ethtool", inp)
    cron(tmp_path, [inp])
    st = tmp_path / "state"
    assert stat.S_IMODE(st.stat().st_mode) == 0o700
    for name in ("state.json", "lock"):
        assert stat.S_IMODE((st / name).stat().st_mode) == 0o600
    assert all(stat.S_IMODE(p.stat().st_mode) == 0o600 for p in st.glob("series-*.parquet"))


def test_strict_bad_input_does_not_advance_state_lenient_counts(tmp_path: Path) -> None:
    inp = tmp_path / "in"
    inp.mkdir()
    good = ETH.read_text()
    (inp / "eth0.log").write_text(
        good.replace("     rx_bytes_phy:", "     rx_bytes_phy 12 garbage ::\n     rx_bytes_phy:", 1)
    )
    with pytest.raises(fabricscope.exceptions.FabricscopeError):
        cron(tmp_path, [inp], strict=True)
    assert not (tmp_path / "state" / "state.json").exists()
    res = cron(tmp_path, [inp])
    assert res.document["inputs"][0]["rejected"] == 1
    assert history_samples(tmp_path / "hist").height == one_shot(ETH).height


def test_compaction_and_retention(tmp_path: Path) -> None:
    inp = tmp_path / "in"
    inp.mkdir()
    log = inp / ETH.name
    n = ETH.stat().st_size
    _grow(ETH, log, [n // 4, n // 2, (3 * n) // 4], lambda: cron(tmp_path, [inp], compact_min_parts=0))
    # one part per run and day, whatever the hosts (the ethtool log's one host here)
    part_dir = next((tmp_path / "hist" / "samples").glob("date=*"))
    assert len(list(part_dir.glob("*.parquet"))) == 4
    # a run merges min_parts parts at most, once per table: its cost is bounded, not the day's
    counts = []
    for _ in range(3):
        log.write_text(log.read_text())  # touch: same content
        cron(tmp_path, [inp], compact_min_parts=2)
        counts.append(len(list(part_dir.glob("*.parquet"))))
    assert counts == [3, 2, 1]
    assert [p.name[:6] for p in part_dir.glob("*.parquet")] == ["part-c"]
    assert history_samples(tmp_path / "hist").equals(one_shot(ETH))
    # Retention counts back from the data's time, not the clock's: a run 31 days later that brings
    # nothing newer keeps the data of 2026-12-04 (a replay of old files stays judged) ...
    later = dt.datetime(2027, 1, 5, tzinfo=dt.timezone.utc)
    cron(tmp_path, [inp], retain_days=30, now=later)
    assert History(tmp_path / "hist").samples().collect().height == one_shot(ETH).height
    # ... and a sample 31 days newer than it makes it older than the 30 days kept.
    (inp / "later.prom").write_text(
        "# TYPE node_infiniband_symbol_error_total counter\n"
        'node_infiniband_symbol_error_total{instance="gpu99:9100",device="mlx5_0",port="1"} 0 1799107200000\n'
    )
    cron(tmp_path, [inp], retain_days=30, now=later)
    assert [d.name for d in (tmp_path / "hist" / "samples").glob("date=*")] == ["date=2027-01-05"]
    assert History(tmp_path / "hist").samples().collect()["host"].unique().to_list() == ["gpu99"]


def test_history_is_readable_by_polars_and_duckdb(tmp_path: Path) -> None:
    inp = tmp_path / "in"
    shutil.copytree(PFC / "ethtool", inp)
    cron(tmp_path, [inp])
    h = tmp_path / "hist"
    assert is_history(h) and not is_history(inp)
    direct = pl.scan_parquet(h / "samples" / "**" / "*.parquet", hive_partitioning=True).collect()
    assert direct.height == one_shot(inp).height
    assert set(direct["date"].cast(pl.String).unique()) == {"2026-12-04"}
    hist = History(h)
    only = hist.samples(since="2026-12-04T16:02:00Z", hosts=["pfcstorm-gpu03"]).collect()
    assert only["host"].unique().to_list() == ["pfcstorm-gpu03"]
    assert only["time"].min() >= dt.datetime(2026, 12, 4, 16, 2, tzinfo=dt.timezone.utc)
    a = fabricscope.run_analysis(h)  # a history directory is an input like any other
    assert "pfc_storm" in a.findings["kind"].to_list()
    duckdb = pytest.importorskip("duckdb")
    n = duckdb.sql(
        f"SELECT count(*) FROM read_parquet('{h}/samples/**/*.parquet', hive_partitioning = true)"
    ).fetchall()
    assert n[0][0] == direct.height
    kinds = duckdb.sql(
        f"SELECT DISTINCT kind FROM read_parquet('{h}/findings/**/*.parquet', hive_partitioning = true)"
    ).fetchall()
    assert ("pfc_storm",) in kinds


def test_sysfs_trees_are_units(tmp_path: Path) -> None:
    inp = tmp_path / "in"
    shutil.copytree(SAMPLES / "scenarios" / "link-flap" / "sysfs", inp)
    res = cron(tmp_path, [inp])
    trees = [p for p in inp.glob("*/*") if (p / "sys").is_dir()]
    assert res.files_read == len(trees)
    assert history_samples(tmp_path / "hist").equals(one_shot(inp))
    assert cron(tmp_path, [inp]).files_read == 0


def test_missing_input_is_unknown(tmp_path: Path) -> None:
    r = cli(
        "cron", "--inputs", str(tmp_path / "nope"), "--state", str(tmp_path / "s"), "--history", str(tmp_path / "h")
    )
    assert r.returncode == 3
    assert r.stdout.startswith("FABRICSCOPE UNKNOWN - input ") and "does not exist" in r.stdout


@pytest.mark.parametrize("damage", ["series", "pending", "version"])
def test_damaged_state_files_name_the_file(tmp_path: Path, damage: str) -> None:
    inp = tmp_path / "in"
    shutil.copytree(PFC / "ethtool", inp)
    cron(tmp_path, [inp])
    st = tmp_path / "state"
    if damage == "series":
        series = next(st.glob("series-*.parquet"))
        series.unlink()
        name = series.name  # the missing file itself, not the state.json that names it
    elif damage == "pending":
        (st / "pending.json").write_text("{not json")
        name = "pending.json"
    else:
        doc = json.loads((st / "state.json").read_text())
        doc["version"] = 99
        (st / "state.json").write_text(json.dumps(doc))
        name = "state.json"
    with pytest.raises(fabricscope.exceptions.FabricscopeError, match=name) as e:
        cron(tmp_path, [inp])
    assert "--reset-state" in str(e.value)
    res = cron(tmp_path, [inp], reset_state=True)
    assert res.samples == 0 and res.duplicates_dropped > 0
    assert history_samples(tmp_path / "hist").equals(one_shot(inp))


def test_topology_is_kept_in_the_state(tmp_path: Path) -> None:
    inp = tmp_path / "in"
    shutil.copytree(SAMPLES / "ib", inp)
    res = cron(tmp_path, [inp])
    links = pl.read_parquet(next((tmp_path / "state").glob("links-*.parquet")))
    assert links.height == fabricscope.load(inp).tables["links"].height == 8
    expected = fabricscope.analyze(inp)
    assert sorted(res.active["kind"].to_list()) == sorted(expected["kind"].to_list())
    # A later run that reads no topology file still has it.
    (inp / "fabric-ibnetdiscover-p.txt").unlink()
    cron(tmp_path, [inp])
    assert len(list((tmp_path / "state").glob("links-*.parquet"))) == 1


def test_context_lines_keep_the_directives_a_tail_needs() -> None:
    from fabricscope.doors.cron.directives import context_lines

    text = (
        "# host: gpu17\n"
        "# TYPE node_infiniband_port_data_received_bytes_total counter\n"
        'node_infiniband_port_data_received_bytes_total{device="mlx5_0"} 1 1796200000000\n'
        "Wed Dec  2 14:00:00 UTC 2026\n"
        "$ ethtool -S eth2\n"
        "NIC statistics:\n"
        "     rx_bytes: 5\n"
        "2026-12-02T14:00:10+00:00\n"
        "     rx_bytes: 6\n"
    )
    ctx = context_lines(text.encode(), [])
    assert ctx == [
        "# host: gpu17",
        "$ ethtool -S eth2",
        "# TYPE node_infiniband_port_data_received_bytes_total counter",
        "2026-12-02T14:00:10+00:00",
    ]
    # The next tail only adds a newer timestamp: the rest carries over.
    assert context_lines(b"1796200020\n     rx_bytes: 7\n", ctx)[-1] == "1796200020"
    assert context_lines(b"1796200020\n", ctx)[0] == "# host: gpu17"


def _scrape(k: int, errors_on: str = "gpu1") -> str:
    """Scrape k of three hosts, 60 s apart: traffic everywhere, symbol errors rising on one port."""
    ts = 1_796_200_000_000 + k * 60_000
    lines = []
    for name, per_step in (
        ("node_infiniband_port_data_transmitted_bytes_total", 2.5e9),
        ("node_infiniband_symbol_error_total", 0),
    ):
        lines.append(f"# TYPE {name} counter")
        for h in ("gpu0", errors_on, "gpu2"):
            v = per_step * k + (50 * k if h == errors_on and "symbol" in name else 0)
            lines.append(f'{name}{{device="mlx5_0",instance="{h}:9100",port="1"}} {v:.14g} {ts}')
    return "\n".join(lines) + "\n"


def test_the_lookback_carried_is_the_moving_ports_and_the_history_is_not_reread(tmp_path: Path) -> None:
    inp = tmp_path / "in"
    inp.mkdir()
    for k in range(4):
        (inp / f"scrape-{k}.prom").write_text(_scrape(k))
        res = cron(tmp_path, [inp])
    state = json.loads((tmp_path / "state" / "state.json").read_text())
    window = pl.read_parquet(tmp_path / "state" / state["window_file"])
    # only the erroring port's readings are carried (both of its series, for its ratios), the
    # quiet ports' last readings are the state's series
    assert sorted(set(window["host"].to_list())) == ["gpu1"]
    assert window.height == 2 * 4
    assert res.document["status"] == "warning"
    assert [f["host"] for f in res.document["faults"] if f["kind"] == "link_errors"] == ["gpu1"]
    # the history is written, never read for the lookback: a run over a history whose parts are
    # gone (moved away for an offline copy) judges its new scrape the same
    shutil.rmtree(tmp_path / "hist" / "samples")
    (inp / "scrape-4.prom").write_text(_scrape(4))
    res = cron(tmp_path, [inp])
    assert [f["host"] for f in res.document["faults"] if f["kind"] == "link_errors"] == ["gpu1"]
    # one part per table and day, whatever the hosts
    assert [p.name for p in (tmp_path / "hist" / "samples").rglob("*.parquet")] == [f"part-{res.run_id}.parquet"]
