"""One ``fabricscope cron`` run, from the lock to the commit point and the outputs."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import shutil
import stat
import time as _time
from pathlib import Path
from typing import Any

import polars as pl

from fabricscope import _atomic
from fabricscope.detect.config import load_config
from fabricscope.detect.link_wearout import forecast, hourly_counts, merge_hourly, trend_counters
from fabricscope.detect.rates import SERIES_KEYS
from fabricscope.doors.cron.alertmanager import deliver
from fabricscope.doors.cron.errors import StateError
from fabricscope.doors.cron.fault_lifecycle import active_findings, update_lifecycle
from fabricscope.doors.cron.incident_lifecycle import active_incidents, read_incidents, update_incidents
from fabricscope.doors.cron.lock import history_lock, state_lock
from fabricscope.doors.cron.manifest import NOT_READ, Plan, finish_entry, plan, prepare_reads, units
from fabricscope.doors.cron.options import CronOptions, CronResult
from fabricscope.doors.cron.outputs import status_line
from fabricscope.doors.cron.reading import drop_stored, pull_servers, read_plans
from fabricscope.doors.cron.recovery import crash_point, recover, recover_quiet
from fabricscope.doors.cron.retention import compact, retain
from fabricscope.doors.cron.state import (
    State,
    carried_lookback,
    commit_state,
    last_per_series,
    load_state,
    rebuild_state,
)
from fabricscope.doors.cron.textfile import write_textfile
from fabricscope.exceptions import FabricscopeError
from fabricscope.fabric.entities import Conflict, hosts_named
from fabricscope.incidents.correlate import Incident, active_pages, correlate
from fabricscope.incidents.findings import (
    analysed_anything,
    document,
    document_order,
    empty_findings,
    json_text,
    overall_status,
)
from fabricscope.incidents.severity import Status
from fabricscope.pipeline import run_analysis
from fabricscope.reading.history import (
    ROLLUP_FILE,
    ROW_GROUP_ROWS,
    RUNS_SCHEMA,
    STORED_FINDINGS_SCHEMA,
    History,
    partition_dir,
    read_rollup,
    sorted_for_history,
    to_canonical,
)
from fabricscope.reading.vocabulary import traffic_counters


def _run_id(prev: str | None, plans: list[Plan]) -> str:
    h = hashlib.blake2b(digest_size=8)
    h.update((prev or "").encode())
    for p in sorted(plans, key=lambda p: p.unit.path):
        h.update(json.dumps([p.unit.path, p.entry.get("ino"), p.entry.get("fingerprint"), p.start, p.end]).encode())
    return h.hexdigest()


def _partitioned(df: pl.DataFrame, time_col: pl.Expr, run_time: dt.datetime) -> dict[dt.date, pl.DataFrame]:
    """``df`` split by the day of ``time_col``, each day in the order of a history part."""
    if df.is_empty():
        return {}
    keyed = df.with_columns(time_col.fill_null(pl.lit(run_time)).dt.date().alias("_date"))
    return {
        k[0]: sorted_for_history(g.drop("_date"))
        for k, g in keyed.partition_by("_date", as_dict=True, maintain_order=True).items()
    }


def data_time(*frames: pl.DataFrame) -> dt.datetime | None:
    """The newest sample time of ``frames`` (their ``time`` columns), None when they hold none.

    Example:
        >>> import datetime as dt, polars as pl
        >>> t = dt.datetime(2025, 1, 2, tzinfo=dt.timezone.utc)
        >>> none = pl.DataFrame(schema={"time": pl.Datetime("ns", "UTC")})
        >>> data_time(pl.DataFrame({"time": [t]}), none).isoformat()
        '2025-01-02T00:00:00+00:00'
    """
    newest = [f["time"].max() for f in frames if "time" in f.columns and f.height]
    got = [x for x in newest if isinstance(x, dt.datetime)]
    return max(got) if got else None


def run_cron(opts: CronOptions) -> CronResult:
    """Run once (see the module docstring); raises :class:`StateError` or ``LockedError``.

    Args:
        opts: The options.

    Returns:
        A :class:`CronResult`.
    """
    started_wall = opts.now or dt.datetime.now(dt.timezone.utc)
    t0 = _time.monotonic()
    hist = History(opts.history)
    state, history = Path(opts.state), Path(opts.history)
    _check_directories(opts, state, history)
    # State first, then history, in every run: two runs never wait for each other in a cycle.
    with state_lock(state, opts.wait_s), history_lock(history, opts.wait_s):
        if opts.reset_state:
            recover_quiet(state, history)
            rebuild_state(state, hist)
        st = load_state(state)
        recover(state, history, st.last_run_id)
        plans, keep = plan(units(opts.inputs), st.files)
        work = state / "work"
        work.mkdir(mode=0o700, exist_ok=True)
        try:
            return _run_locked(opts, st, plans, keep, work, state, history, hist, started_wall, t0)
        finally:
            shutil.rmtree(work, ignore_errors=True)


def _check_directories(opts: CronOptions, state: Path, history: Path) -> None:
    """Refuse, before anything is read, the directories this run could not write safely.

    The state directory is cron's alone: another user who can write it could forge the manifest
    or the journal (a planted ``pending.json`` names files the recovery deletes). The history and
    the outputs' directories are refused when every user may write them without the sticky bit
    (:func:`fabricscope._atomic.check_directory`), which every write would refuse anyway, after
    the inputs were read.
    """
    try:
        mode = state.stat().st_mode
    except FileNotFoundError:
        mode = None  # created below, mode 0700
    except OSError as e:
        raise StateError(f"cannot use the state directory {state}: {e.strerror or e}") from None
    if mode is not None and mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise StateError(
            f"the state directory {state} is writable by other users (mode {stat.S_IMODE(mode):04o}): "
            f"they could forge its manifest and journal; refused (chmod 700 {state})"
        )
    outputs = [history] + [Path(p).parent for p in (opts.textfile, opts.json_path) if p and p != "-"]
    for d in outputs:
        if d.exists():
            _atomic.check_directory(d)


def _run_locked(
    opts: CronOptions,
    st: State,
    plans: list[Plan],
    keep: dict[str, dict[str, Any]],
    work: Path,
    state: Path,
    history: Path,
    hist: History,
    started_wall: dt.datetime,
    t0: float,
) -> CronResult:
    run_id = _run_id(st.last_run_id, plans)
    plans = prepare_reads(plans, st.files, work)
    read = opts.read_options(started_wall)
    horizon = read.horizon_ns()
    if horizon is not None:
        # A reading a run stored before the horizon was checked is no watermark: the series' next
        # real readings would all look stored already.
        st.series = st.series.filter(pl.col("time").dt.epoch("ns") <= horizon)
    new, new_attrs, inputs, formats, tables = read_plans(
        plans, opts.strict, [str(p) for p in opts.inputs], known_hosts=hosts_named(st.series), read=read
    )
    new, new_attrs, marks = pull_servers(opts, st.files, started_wall, new, new_attrs, inputs)
    # Topology changes rarely and is read once: the latest links table stays in the state; the
    # other tables (perftest, nccl-tests results) belong to this run's inputs only.
    links = tables.get("links", st.links)
    if links is not None:
        tables["links"] = links
    crash_point("after-read")
    new, dropped = drop_stored(new, st.series)
    # Time is the data's: the newest sample the history holds is "now" for the wear-out roll-up,
    # the retention and the compaction (a replay of last year's files is judged as `analyze`
    # judges it); the wall clock only dates the run itself.
    data_now = data_time(st.series, new) or started_wall
    # Attributes: the latest value per key wins.
    attrs = st.attributes
    if not new_attrs.is_empty():
        allattrs = new_attrs if attrs is None else pl.concat([attrs, new_attrs], how="vertical_relaxed")
        attrs = (
            allattrs.sort("time")
            .group_by(["host", "device", "port", "key"], maintain_order=True)
            .last()
            .select(new_attrs.columns)
        )
    cfg = load_config(opts.config)

    findings = empty_findings()
    carry_next = st.window
    run_incidents: list[Incident] = []
    conflicts: list[Conflict] = []
    rollup = read_rollup(history)
    covered = pl.DataFrame(
        schema={"host": pl.String, "device": pl.String, "port": pl.Int64, "data_end": pl.Datetime("ns", "UTC")}
    )
    # Benchmark logs and captures' packet tables are judged even when a run brings no counters.
    judged_tables = any(name != "links" and t.height for name, t in tables.items())
    # So are inputs of states or configuration alone (ibstat, nvidia-smi -q, mlnx_qos), as analyze judges them.
    if not new.is_empty() or judged_tables or not new_attrs.is_empty():
        hosts = new["host"].unique().to_list()
        # The lookback comes from the state, not the history: the last reading of every series and
        # the carried readings of the ports where something moved (state.carried_lookback). A run
        # reads its new samples and a bounded state, however long the history grew.
        prev = st.series.filter(pl.col("host").is_in(hosts))
        carried = st.window.filter(pl.col("host").is_in(hosts))
        # The carried readings and the last readings overlap each other and the new samples: one
        # reading per series and time from them, none where the new samples have one. Readings
        # within the new samples stay as read (two inputs may hold the same reading), as
        # `analyze` keeps them.
        key = [*SERIES_KEYS, "time"]
        old = pl.concat([carried, prev]).unique(subset=key, keep="last", maintain_order=True)
        old = old.join(new.select(key), on=key, how="anti", nulls_equal=True)
        window = pl.concat([old, new])
        analysis = run_analysis(
            to_canonical(window.sort("time")),
            profile=opts.profile,
            config=cfg,
            tables=tables,
            attributes=None
            if attrs is None
            else attrs.with_columns([pl.col(c).cast(pl.Categorical()) for c in ("host", "device", "key", "source")]),
        )
        conflicts = analysis.conflicts
        # Keep the findings that reach into this run's new data (per host); older windows were
        # reported by earlier runs.
        # Findings carry microsecond windows (built from Python datetimes): compare at that precision.
        new_from = new.group_by("host").agg(pl.col("time").min().dt.truncate("1us").alias("_from"))
        findings = (
            analysis.findings.join(new_from, on="host", how="left")
            .filter(pl.col("end").is_null() | pl.col("_from").is_null() | (pl.col("end") >= pl.col("_from")))
            .drop("_from")
        )
        # Incidents whose root reaches into this run's new data (older ones were folded earlier).
        kept = {tuple(r) for r in findings.select("kind", "host", "device", "port", "metric", "start").iter_rows()}
        run_incidents = [
            i
            for i in analysis.incidents
            if tuple(i.root.get(k) for k in ("kind", "host", "device", "port", "metric", "start")) in kept
        ]
        # Wear-out is judged over weeks: the hourly error counts of this run's new intervals join the
        # roll-up the history keeps, and the trend is fitted to the roll-up (never to weeks of samples).
        fresh = analysis.rates.join(
            new_from.with_columns(pl.col("host").cast(pl.String)),
            left_on=pl.col("host").cast(pl.String),
            right_on="host",
            how="inner",
        ).filter(pl.col("end").dt.truncate("1us") >= pl.col("_from"))
        rollup = merge_hourly(
            rollup,
            hourly_counts(fresh, list(trend_counters(cfg))),
            data_now - dt.timedelta(days=cfg["link_wearout"]["rollup_days"]),
        )
        worn = forecast(rollup.filter(pl.col("host").is_in([str(h) for h in hosts])), cfg)
        # only the trend detector's forecasts are replaced: another detector's wear-out finding (the
        # physical layer's raw BER near its FEC limit) is judged on the run's own readings
        trend = (pl.col("kind") == "link_wearout") & pl.col("evidence").str.contains('"rule": ?"link_wearout\\.')
        findings = pl.concat([findings.filter(~trend), worn], how="vertical_relaxed")
        # a forecast relates to nothing the short window found: each is an incident of its own
        run_incidents += correlate(worn, fabric=analysis.fabric)
        covered = (
            new.group_by("host", "device", "port")
            .agg(pl.col("time").max().alias("data_end"))
            .with_columns(pl.col("port").cast(pl.Int64))
        )
        since = data_now - dt.timedelta(seconds=opts.lookback_s)
        carry = carried_lookback(window, analysis.rates, analysis.findings, since, traffic_counters())
        # hosts this run brought nothing for keep their carried readings, within the lookback
        carry_next = pl.concat([st.window.filter(~pl.col("host").is_in(hosts) & (pl.col("time") >= since)), carry])

    lifecycle, tagged = update_lifecycle(hist.lifecycle(), findings, covered, started_wall)
    incident_lifecycle = update_incidents(read_incidents(history), run_incidents, lifecycle, started_wall)
    tagged = tagged.with_columns(pl.lit(run_id).alias("run_id")).select(STORED_FINDINGS_SCHEMA.names())

    # Plan every part file before writing any, so the journal can name them all.
    sample_parts = _partitioned(new, pl.col("time"), started_wall)
    finding_parts = _partitioned(tagged, pl.coalesce("start", "end"), started_wall)
    writes: list[tuple[str, pl.DataFrame]] = []
    for table, parts in (("samples", sample_parts), ("findings", finding_parts)):
        for day, df in parts.items():
            rel = partition_dir(Path(), table, day) / f"part-{run_id}.parquet"
            writes.append((rel.as_posix(), df))

    files_read = sum(1 for p in plans if p.read_path)
    failed = sum(1 for i in inputs if i.get("error"))
    # A history that has never held a counter (its inputs only describe the fabric) has no verdict,
    # as analyze says of the same inputs; a run that brings nothing new keeps the history's verdict.
    analysed = analysed_anything(
        st.series.height + new.height, {**tables, **({"attributes": attrs} if attrs is not None else {})}
    )
    # the pages: one per fault of the fabric (its incident, or a fault no incident holds)
    pages = active_pages(incident_lifecycle, lifecycle)
    code, line = status_line(active_findings(lifecycle), failed_inputs=failed, analysed=analysed, pages=pages)
    finished = dt.datetime.now(dt.timezone.utc) if opts.now is None else started_wall
    duration = _time.monotonic() - t0
    run_row = pl.DataFrame(
        [
            {
                "run_id": run_id,
                "started": started_wall,
                "finished": finished,
                "duration_s": duration,
                "files_read": files_read,
                "samples": new.height,
                "status": Status.from_exit(code).value,
                "exit_code": code,
            }
        ],
        schema=RUNS_SCHEMA,
    )
    runs = pl.concat([hist.runs().cast(RUNS_SCHEMA), run_row])

    # Journal, then the history, then the state (the commit point).
    singles = ["lifecycle.parquet", "incidents.parquet", "runs.parquet", "attributes.parquet", ROLLUP_FILE]
    rollback = state / "rollback"
    rollback.mkdir(mode=0o700, exist_ok=True)
    backups = {}
    for name in singles:
        src = history / name
        backups[name] = src.exists()
        if src.exists():
            _atomic.write_bytes(rollback / name, src.read_bytes(), mode=0o600)
    _atomic.write_text(
        state / "pending.json",
        json.dumps({"run_id": run_id, "parts": [w[0] for w in writes], "backups": backups}),
        mode=0o600,
    )
    crash_point("after-journal")
    staging = history / ".staging"
    for i, (rel, df) in enumerate(writes):
        _atomic.write_parquet(history / rel, df, staging=staging, row_group_size=ROW_GROUP_ROWS)
        if i == len(writes) // 2:
            crash_point("mid-parts")
    _atomic.write_parquet(history / "lifecycle.parquet", lifecycle)
    _atomic.write_parquet(history / "incidents.parquet", incident_lifecycle)
    crash_point("after-lifecycle")
    _atomic.write_parquet(history / "runs.parquet", runs)
    _atomic.write_parquet(history / ROLLUP_FILE, rollup)
    if attrs is not None:
        _atomic.write_parquet(history / "attributes.parquet", attrs)
    crash_point("after-history")

    files = dict(keep)
    # Server watermarks advance here, with the rest of the state: after the history is durable.
    files.update(marks)
    for p in plans:
        old_entry = st.files.get(p.unit.path)
        if p.reason in NOT_READ:
            # Not read this run: a failed input is tried again next run from where it was.
            if p.reason == "failed" and old_entry is not None:
                files[p.unit.path] = old_entry
            continue
        try:
            files[p.unit.path] = finish_entry(p, formats.get(p.unit.path), (old_entry or {}).get("context", []))
        except (OSError, FabricscopeError):
            # It became unreadable after it was read (or the reader could not read it, EIO):
            # its entry stays as it was, so the next run reads it again (what it stored now is
            # dropped then as already stored).
            if old_entry is not None:
                files[p.unit.path] = old_entry
    series = st.series
    if not new.is_empty():
        # every new reading is newer than its series' stored one (drop_stored): the new samples'
        # last readings replace theirs, the other series keep what they had
        latest = last_per_series(new)
        series = pl.concat([series.join(latest, on=SERIES_KEYS, how="anti", nulls_equal=True), latest])
    commit_state(state, State(files, run_id, series, attrs, links, carry_next), run_id)
    (state / "pending.json").unlink(missing_ok=True)
    crash_point("after-commit")

    if opts.retain_days is not None:
        retain(
            history,
            hist,
            started_wall - dt.timedelta(days=opts.retain_days),
            data_cutoff=data_now - dt.timedelta(days=opts.retain_days),
        )
    compact(state, history, opts.compact_min_parts, data_now.date())

    active = active_findings(lifecycle)
    # ``findings`` are what this run's analysis found (the same findings, windows included, as
    # `fabricscope analyze` gives on the same data); ``faults`` are the faults still active across runs.
    raised = document_order(tagged)
    doc = document(raised.drop("fault_id", "run_id", strict=False), inputs)
    doc["status"] = overall_status(active, failed, analysed=analysed)  # the run's verdict, as its exit status
    doc["run"] = run_row.with_columns(pl.col(pl.Datetime).dt.to_string("%Y-%m-%dT%H:%M:%S%.fZ")).to_dicts()[0]
    doc["run"]["duplicates_dropped"] = dropped
    # FIFOs, sockets and devices among the watched files: never opened, listed every run
    doc["run"]["skipped"] = [{"path": p.unit.path, "reason": p.error} for p in plans if p.reason == "skipped"]
    doc["fault_ids"] = raised["fault_id"].to_list()
    doc["faults"] = (
        active.select("fault_id", "kind", "severity", "host", "device", "port", "priority", "start", "end")
        .rename({"start": "first_seen", "end": "last_seen"})
        .with_columns(pl.col(pl.Datetime).dt.to_string("%Y-%m-%dT%H:%M:%S%.fZ"))
        .to_dicts()
    )
    # the incidents' lifecycle beside the faults' (docs/cron.md)
    doc["incident_lifecycle"] = active_incidents(incident_lifecycle)
    # names two inputs map differently, as `analyze --json` lists them
    doc["conflicts"] = [c.as_dict() for c in conflicts]
    deliveries = []
    if opts.alertmanager is not None and opts.alertmanager.urls:
        # After the commit point: a receiver that is down costs this run nothing but the attempt.
        deliveries = deliver(opts.alertmanager, incident_lifecycle, state, finished, lifecycle)
        doc["alertmanager"] = [d.as_dict() for d in deliveries]
    result = CronResult(run_id, code, line, files_read, new.height, dropped, active, doc, deliveries)
    if opts.json_path and opts.json_path != "-":
        _atomic.write_text(opts.json_path, json_text(doc, indent=2) + "\n")
    if opts.textfile:
        write_textfile(opts.textfile, active, series, finished, duration, failed_inputs=failed, pages=pages)
    return result
