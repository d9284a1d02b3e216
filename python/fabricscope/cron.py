"""``fabricscope cron``: incremental, crash-safe, idempotent analysis runs into a Parquet history.

One run:

1. Takes an exclusive lock (``STATE/lock``, ``fcntl.flock``); a second run exits 3 or waits
   (``--wait``).
2. Recovers from a crashed run: ``STATE/pending.json`` lists the part files the crashed run may
   have written and backups of the history's single files; they are removed/restored, so the
   history is exactly as the last committed run left it.
3. Finds new or grown inputs from the manifest (path, device/inode, size, mtime, a fingerprint of
   the consumed prefix). Appended-to text logs are read from the stored offset (whole lines only),
   with the directives that give the tail its meaning (``# host:``, ``# ethtool -S``, the last
   timestamp line, ``# TYPE``) prepended; rotated, truncated or rewritten files start over.
4. Drops readings a previous run already stored (time at or before the series' last stored
   time), reads a look-back window from the history plus the last reading of each series (kept in
   the state, so the first interval of a run is not lost), and runs every detector.
5. Writes sample and finding part files, lifecycle, runs and attributes (temp, fsync, rename,
   fsync dir), then commits the state (manifest + last readings) atomically: the commit point.
6. Applies retention and compacts small part files; prints the Nagios line; writes ``--json`` and
   ``--textfile``.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import errno
import fcntl
import hashlib
import json
import os
import re
import shutil
import sys
import time as _time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from fabricscope import _atomic
from fabricscope.exceptions import FabricscopeError
from fabricscope.findings import SEVERITIES, document, empty_findings
from fabricscope.history import (
    LIFECYCLE_SCHEMA,
    RUNS_SCHEMA,
    STORED_FINDINGS_SCHEMA,
    STORED_SAMPLES_SCHEMA,
    History,
    partition_dir,
    to_canonical,
    to_stored,
)
from fabricscope.rates import SERIES_KEYS

__all__ = ["CronOptions", "CronResult", "StateError", "add_cron_parser", "run_cron"]

STATE_VERSION = 1
EXIT_OK, EXIT_WARNING, EXIT_CRITICAL, EXIT_UNKNOWN = 0, 1, 2, 3
# Formats whose files are line-oriented and self-describing per line (plus a few directives), so
# an appended tail can be read on its own.
APPENDABLE = frozenset({"prometheus", "openmetrics", "ethtool", "sysfs-grep", "telegraf"})
# The prefix fingerprint hashes this much of the start and of the end of the consumed prefix:
# rewriting or rotating a log changes one of them, and hashing a 10 GB log every minute would not.
_FINGERPRINT_BYTES = 64 * 1024
_COMPRESSED_MAGIC = (b"\x1f\x8b", b"\x28\xb5\x2f\xfd")
_RECOVERY = (
    "recover with `fabricscope cron ... --reset-state`, which rebuilds the state from the history "
    "(no sample is stored twice), or delete the state directory and the history together"
)

_HOST_RE = re.compile(r"^\s*[#$>]*\s*(hostname|host|node)\s*[:=]\s*\S+\s*$", re.IGNORECASE)
_DEVICE_RE = re.compile(r"(^|\s|/)ethtool\s+(.*\s)?(-S|--statistics)\s+\S+")
_TIME_RE = re.compile(
    r"^\s*#?\s*((timestamp|time|date)\s*[:=]\s*)?("
    r"\d{10}(\.\d{1,9})?"
    r"|\d{4}-\d\d-\d\d[T ]\d\d:\d\d(:\d\d([.,]\d+)?)?(Z|[+-]\d\d:?\d\d| UTC)?"
    r"|[A-Z][a-z]{2} [A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d (UTC|GMT) \d{4}"
    r")\s*$",
    re.IGNORECASE,
)
_TYPE_RE = re.compile(r"^# (TYPE|UNIT) (\S+) ")


class StateError(FabricscopeError):
    """The state directory is unreadable or inconsistent; see the message for the recovery."""


class LockedError(FabricscopeError):
    """Another run holds the state lock."""


@dataclass
class CronOptions:
    """What one ``fabricscope cron`` run does (the command-line options).

    Attributes:
        inputs: Files and directories to watch.
        state: State directory (manifest, last readings, lock).
        history: History directory (see :mod:`fabricscope.history`).
        config: Thresholds TOML.
        profile: Force a technology profile.
        lookback_s: Seconds of history prepended to the new samples for the detectors.
        retain_days: Delete history partitions older than this many days (None: keep all).
        compact_min_parts: Merge a partition's part files when it has at least this many.
        strict: Fail the run on a malformed record instead of skipping and counting it.
        wait_s: Wait this long for the lock (0: fail at once).
        reset_state: Rebuild the state from the history before running.
        json_path: Write the JSON document here, atomically (``-``: the CLI prints it).
        textfile: Write the node_exporter textfile here.
        now: The run's wall-clock time (tests); default: now.
    """

    inputs: list[str]
    state: Path
    history: Path
    config: str | None = None
    profile: str | None = None
    lookback_s: float = 900.0
    retain_days: float | None = None
    compact_min_parts: int = 8
    strict: bool = False
    wait_s: float = 0.0
    reset_state: bool = False
    json_path: str | None = None
    textfile: str | None = None
    now: dt.datetime | None = None


@dataclass
class CronResult:
    """What one run did.

    Attributes:
        run_id: The run's id (derived from the state and the input ranges read).
        exit_code: Nagios exit code.
        status_line: The one-line Nagios status.
        files_read: Inputs (or tails) read.
        samples: New samples stored.
        duplicates_dropped: Readings dropped as already stored.
        active: Active faults after the run (findings schema + ``fault_id``).
        document: The JSON document.
    """

    run_id: str
    exit_code: int
    status_line: str
    files_read: int
    samples: int
    duplicates_dropped: int
    active: pl.DataFrame
    document: dict[str, Any] = field(default_factory=dict)


# ---------------------------------------------------------------------------------------- lock


@contextlib.contextmanager
def _lock(state: Path, wait_s: float) -> Iterator[None]:
    state.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd = os.open(state / "lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        deadline = _time.monotonic() + wait_s
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError as e:
                if e.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                    raise
                if _time.monotonic() >= deadline:
                    holder = os.pread(fd, 64, 0).decode("ascii", "replace").strip() or "?"
                    raise LockedError(
                        f"another fabricscope cron run (pid {holder}) holds {state / 'lock'}; "
                        "this run did nothing (use --wait SECONDS to wait for it)"
                    ) from None
                _time.sleep(0.05)
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        yield
    finally:
        os.close(fd)  # closing releases the flock


# ---------------------------------------------------------------------------------------- state


def _crash_point(name: str) -> None:
    """Crash tests: ``FABRICSCOPE_CRASH_AT=name`` kills this process with SIGKILL here."""
    if os.environ.get("FABRICSCOPE_CRASH_AT") == name:
        os.kill(os.getpid(), 9)


@dataclass
class _State:
    files: dict[str, dict[str, Any]]
    last_run_id: str | None
    series: pl.DataFrame  # last stored reading per series (stored schema)
    attributes: pl.DataFrame | None
    links: pl.DataFrame | None = None  # latest topology (ibnetdiscover/iblinkinfo), for link_flap's peers


def _empty_series() -> pl.DataFrame:
    return pl.DataFrame(schema=STORED_SAMPLES_SCHEMA)


def _load_state(state: Path) -> _State:
    p = state / "state.json"
    if not p.exists():
        return _State({}, None, _empty_series(), None)
    try:
        doc = json.loads(p.read_text("utf-8"))
        if not isinstance(doc, dict) or doc.get("version") != STATE_VERSION:
            raise ValueError(
                f"expected version {STATE_VERSION}, found {doc.get('version') if isinstance(doc, dict) else doc!r}"
            )
        files = doc["files"]
        if not isinstance(files, dict):
            raise ValueError("`files` is not an object")
        series = pl.read_parquet(state / doc["series_file"]) if doc.get("series_file") else _empty_series()
        if series.schema != STORED_SAMPLES_SCHEMA:
            raise ValueError(f"{doc['series_file']}: unexpected columns {series.columns}")
        attrs = pl.read_parquet(state / doc["attributes_file"]) if doc.get("attributes_file") else None
        links = pl.read_parquet(state / doc["links_file"]) if doc.get("links_file") else None
        return _State(files, doc.get("last_run_id"), series, attrs, links)
    except (OSError, ValueError, KeyError, TypeError, pl.exceptions.PolarsError) as e:
        raise StateError(f"state directory {state} is corrupt ({p.name}: {e}); {_RECOVERY}") from e


def _commit_state(state: Path, st: _State, run_id: str) -> None:
    series_file = f"series-{run_id}.parquet"
    _atomic.write_parquet(state / series_file, st.series, mode=0o600)
    attrs_file = None
    if st.attributes is not None:
        attrs_file = f"attributes-{run_id}.parquet"
        _atomic.write_parquet(state / attrs_file, st.attributes, mode=0o600)
    links_file = None
    if st.links is not None:
        links_file = f"links-{run_id}.parquet"
        _atomic.write_parquet(state / links_file, st.links, mode=0o600)
    _crash_point("before-commit")
    doc = {
        "version": STATE_VERSION,
        "last_run_id": run_id,
        "series_file": series_file,
        "attributes_file": attrs_file,
        "links_file": links_file,
        "files": st.files,
    }
    # The commit point: the rename of state.json.
    _atomic.write_text(state / "state.json", json.dumps(doc, sort_keys=True), mode=0o600)
    for old in [*state.glob("series-*.parquet"), *state.glob("attributes-*.parquet"), *state.glob("links-*.parquet")]:
        if old.name not in (series_file, attrs_file, links_file):
            old.unlink(missing_ok=True)


def _rebuild_state(state: Path, history: History) -> None:
    """``--reset-state``: forget the manifest; take the last reading per series from the history."""
    for p in [state / "state.json", state / "pending.json", *state.glob("series-*.parquet")]:
        p.unlink(missing_ok=True)
    for p in state.glob("attributes-*.parquet"):
        p.unlink(missing_ok=True)
    series = _last_per_series(history.samples().select(STORED_SAMPLES_SCHEMA.names()).collect())
    attrs = history.attributes()
    st = _State({}, "reset", series, None if attrs is None else _stored_attrs(attrs))
    _commit_state(state, st, f"reset-{_time.time_ns():x}")


def _last_per_series(samples: pl.DataFrame) -> pl.DataFrame:
    if samples.is_empty():
        return _empty_series()
    return (
        samples.sort("time", maintain_order=True)
        .group_by(SERIES_KEYS, maintain_order=True)
        .last()
        .select(STORED_SAMPLES_SCHEMA.names())
    )


def _stored_attrs(attrs: pl.DataFrame) -> pl.DataFrame:
    return attrs.with_columns([pl.col(c).cast(pl.String) for c in ("host", "device", "key", "source")])


# ------------------------------------------------------------------------------- crash recovery


def _recover(state: Path, history: Path, st_run: str | None) -> None:
    """Undo what a crashed run wrote to the history (see the module docstring, step 2)."""
    pending = state / "pending.json"
    shutil.rmtree(history / ".staging", ignore_errors=True)
    shutil.rmtree(state / "work", ignore_errors=True)
    if pending.exists():
        try:
            doc = json.loads(pending.read_text("utf-8"))
            run_id, parts, backups = doc["run_id"], doc["parts"], doc["backups"]
        except (OSError, ValueError, KeyError, TypeError) as e:
            raise StateError(f"state directory {state} is corrupt (pending.json: {e}); {_RECOVERY}") from e
        if run_id != st_run:
            for rel in parts:
                (history / rel).unlink(missing_ok=True)
            for name, had in backups.items():
                backup = state / "rollback" / name
                if had and backup.exists():
                    backup.replace(history / name)
                elif not had:
                    (history / name).unlink(missing_ok=True)
            for d in {(history / rel).parent for rel in parts}:
                if d.exists():
                    _atomic.fsync_dir(d)
            if history.exists():
                _atomic.fsync_dir(history)
        pending.unlink()
        _atomic.fsync_dir(state)
    compaction = state / "compact.json"
    if compaction.exists():
        with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
            doc = json.loads(compaction.read_text("utf-8"))
            # Roll forward once the merged file is in place: its rows are the old parts' rows.
            if (history / doc["merged"]).exists():
                for rel in doc["old"]:
                    (history / rel).unlink(missing_ok=True)
        compaction.unlink(missing_ok=True)


# ------------------------------------------------------------------------------------- manifest


@dataclass
class _Unit:
    """One input: a file, or a sysfs tree read as a whole."""

    path: str
    is_tree: bool


def _is_sysfs_tree(d: Path) -> bool:
    return (d / "sys" / "class").is_dir() or (d.name in ("infiniband", "net") and d.parent.name == "class")


def _units(inputs: list[str]) -> list[_Unit]:
    out: list[_Unit] = []
    for raw in inputs:
        p = Path(raw)
        if not p.exists():
            # A watched path that is gone is a configuration error, not "no new data".
            raise ValueError(f"input {raw} does not exist")
        if p.is_dir():
            if _is_sysfs_tree(p):
                out.append(_Unit(str(p), True))
                continue
            for root, dirs, files in os.walk(p, followlinks=False):
                rp = Path(root)
                keep = []
                for d in sorted(dirs):
                    if d.startswith("."):
                        continue
                    if _is_sysfs_tree(rp / d):
                        out.append(_Unit(str(rp / d), True))
                    else:
                        keep.append(d)
                dirs[:] = keep
                # Strings, not Path objects: this loop runs once per input file on every run.
                out.extend(_Unit(os.path.join(root, f), False) for f in sorted(files) if not f.startswith("."))  # noqa: PTH118
        else:
            out.append(_Unit(str(p), False))
    return out


def _tree_fingerprint(root: str) -> tuple[str, int, int]:
    h = hashlib.blake2b(digest_size=16)
    total, newest = 0, 0
    for dirpath, dirs, files in os.walk(root):
        dirs.sort()
        for f in sorted(files):
            try:
                s = os.stat(os.path.join(dirpath, f))  # noqa: PTH116, PTH118 (hot loop)
            except OSError:
                continue
            rel = os.path.relpath(os.path.join(dirpath, f), root)  # noqa: PTH118
            h.update(f"{rel}\0{s.st_size}\0{s.st_mtime_ns}\n".encode())
            total += s.st_size
            newest = max(newest, s.st_mtime_ns)
    return h.hexdigest(), total, newest


def _fingerprint(path: str, offset: int) -> str:
    h = hashlib.blake2b(digest_size=16)
    with Path(path).open("rb") as f:
        h.update(f.read(min(offset, _FINGERPRINT_BYTES)))
        if offset > _FINGERPRINT_BYTES:
            f.seek(max(offset - _FINGERPRINT_BYTES, _FINGERPRINT_BYTES))
            h.update(f.read(offset - f.tell()))
    return h.hexdigest()


@dataclass
class _Plan:
    """What to read from one unit in this run."""

    unit: _Unit
    entry: dict[str, Any]  # the manifest entry after this run
    start: int  # byte offset the read starts at (0: the whole file)
    end: int  # byte offset after the last whole line read
    reason: str  # new, appended, rotated, truncated, rewritten, changed
    read_path: str = ""  # what is handed to the reader (the file, or a temp copy of the tail)
    format: str | None = None


def _plan(units: list[_Unit], files: dict[str, dict[str, Any]]) -> tuple[list[_Plan], dict[str, dict[str, Any]]]:
    """Decide per unit whether and from where to read; returns the plans and unchanged entries."""
    plans: list[_Plan] = []
    keep: dict[str, dict[str, Any]] = {}
    for u in units:
        old = files.get(u.path)
        if u.is_tree:
            fp, size, mtime = _tree_fingerprint(u.path)
            entry = {"tree": True, "fingerprint": fp, "size": size, "mtime_ns": mtime}
            if old and old.get("fingerprint") == fp:
                keep[u.path] = old
            else:
                plans.append(_Plan(u, entry, 0, size, "new" if old is None else "changed"))
            continue
        try:
            s = os.stat(u.path)  # noqa: PTH116 (hot loop)
        except OSError:
            continue  # vanished between walk and stat: next run sees what is there
        entry = {
            "dev": s.st_dev,
            "ino": s.st_ino,
            "size": s.st_size,
            "mtime_ns": s.st_mtime_ns,
            "offset": s.st_size,
            "format": None,
        }
        if old is None:
            plans.append(_Plan(u, entry, 0, s.st_size, "new"))
            continue
        if old.get("size") == s.st_size and old.get("mtime_ns") == s.st_mtime_ns and old.get("ino") == s.st_ino:
            keep[u.path] = old
            continue
        offset = int(old.get("offset", 0))
        if (old.get("dev"), old.get("ino")) != (s.st_dev, s.st_ino):
            reason = "rotated"
        elif s.st_size < offset:
            reason = "truncated"
        elif _fingerprint(u.path, offset) != old.get("prefix_hash"):
            reason = "rewritten"
        elif old.get("appendable"):
            entry["format"] = old.get("format")
            if s.st_size == offset:
                keep[u.path] = {**old, "mtime_ns": s.st_mtime_ns, "size": s.st_size}
                continue
            plans.append(_Plan(u, entry, offset, s.st_size, "appended", format=old.get("format")))
            continue
        else:
            reason = "changed"
        plans.append(_Plan(u, entry, 0, s.st_size, reason))
    return plans, keep


def _context_lines(prefix_tail: bytes, old_context: list[str]) -> list[str]:
    """The directives an appended tail needs: host, ethtool device, TYPE/UNIT lines, last time."""
    host = device = stamp = None
    types: dict[str, str] = {}
    for line in old_context:
        host, device, stamp = _classify(line, host, device, stamp, types)
    for raw in prefix_tail.decode("utf-8", "replace").splitlines():
        if _maybe_directive(raw):
            host, device, stamp = _classify(raw, host, device, stamp, types)
    out = [x for x in (host, device) if x]
    out.extend(list(types.values())[-10_000:])
    if stamp:
        out.append(stamp)  # last, so the tail's first readings get it
    return out


_DAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")


def _maybe_directive(line: str) -> bool:
    """Cheap pre-check: data lines (``name{...} v t``, ``  counter: v``) are never directives."""
    s = line.lstrip()
    if not s:
        return False
    c = s[0]
    if c in "#$>" or c.isdigit():
        return True
    return s[:4].lower() in ("host", "node", "time", "date") or s[:3] in _DAYS


def _classify(
    line: str, host: str | None, device: str | None, stamp: str | None, types: dict[str, str]
) -> tuple[str | None, str | None, str | None]:
    if _HOST_RE.match(line):
        return line, device, stamp
    if line.lstrip().startswith(("#", "$", ">")) and _DEVICE_RE.search(line):
        return host, line, stamp
    if _TIME_RE.match(line):
        return host, device, line
    m = _TYPE_RE.match(line)
    if m:
        types[f"{m.group(1)} {m.group(2)}"] = line
    return host, device, stamp


def _prepare_reads(plans: list[_Plan], files: dict[str, dict[str, Any]], work: Path) -> list[_Plan]:
    """Point each plan at what the reader gets: the file itself, or a temp copy of its tail."""
    ready: list[_Plan] = []
    for i, p in enumerate(plans):
        if p.unit.is_tree or p.start == 0:
            p.read_path = p.unit.path
            if not p.unit.is_tree and _partial_last_line(p.unit.path, p.end):
                # A log caught mid-write: read its whole lines only (a cut line would be stored
                # with a wrong value); the rest is read next run.
                cut = _last_newline(p.unit.path, p.end)
                copy = work / str(i) / Path(p.unit.path).name
                copy.parent.mkdir(parents=True)
                with Path(p.unit.path).open("rb") as src:
                    copy.write_bytes(src.read(cut))
                st = Path(p.unit.path).stat()
                os.utime(copy, ns=(st.st_atime_ns, st.st_mtime_ns))
                p.end = cut
                p.read_path = str(copy)
            ready.append(p)
            continue
        with Path(p.unit.path).open("rb") as f:
            f.seek(p.start)
            tail = f.read(p.end - p.start)
        cut = tail.rfind(b"\n")
        if cut < 0:
            # Only a partial line was appended: wait for the writer to finish it.
            old = files[p.unit.path]
            p.entry.update(offset=p.start, prefix_hash=old.get("prefix_hash"), context=old.get("context", []))
            p.entry["appendable"] = True
            p.read_path = ""
            ready.append(p)
            continue
        tail = tail[: cut + 1]
        p.end = p.start + len(tail)
        ctx = files[p.unit.path].get("context", [])
        d = work / str(i)
        d.mkdir(parents=True)
        # Same file name: some inputs carry their timestamp in the name.
        copy = d / Path(p.unit.path).name
        copy.write_bytes(("\n".join(ctx) + "\n").encode() + tail if ctx else tail)
        st = Path(p.unit.path).stat()
        os.utime(copy, ns=(st.st_atime_ns, st.st_mtime_ns))  # the mtime fallback must match the original
        p.read_path = str(copy)
        ready.append(p)
    return ready


def _partial_last_line(path: str, size: int) -> bool:
    """True for an appendable text log whose last line is still being written."""
    if size == 0:
        return False
    with Path(path).open("rb") as f:
        head = f.read(8192)
        f.seek(size - 1)
        last = f.read(1)
    if last == b"\n" or head.startswith(_COMPRESSED_MAGIC) or b"\0" in head:
        return False
    from fabricscope.io import load

    # Rare (only files caught mid-write), so learning the format with a lenient read is affordable.
    try:
        fmt = load([path], strict=False).reports[0].format
    except FabricscopeError:
        return False
    return fmt in APPENDABLE and _last_newline(path, size) > 0


def _last_newline(path: str, size: int) -> int:
    """Offset just after the last newline before ``size`` (0 when there is none)."""
    with Path(path).open("rb") as f:
        pos = size
        while pos > 0:
            start = max(0, pos - 65536)
            f.seek(start)
            chunk = f.read(pos - start)
            cut = chunk.rfind(b"\n")
            if cut >= 0:
                return start + cut + 1
            pos = start
    return 0


def _directive_region(path: str, start: int, end: int) -> bytes:
    """The bytes of ``[start, end)`` that are scanned for directives.

    Headers (``# host:``) sit at the top of a log and the directives in force at ``end`` (last
    timestamp, ``# ethtool -S``, recent ``# TYPE``) near it, so a large new file is scanned in
    its first 64 KiB and its last 4 MiB rather than whole.
    """
    head_n, tail_n = 64 * 1024, 4 * 1024 * 1024
    with Path(path).open("rb") as f:
        if end - start <= head_n + tail_n:
            f.seek(start)
            return f.read(end - start)
        f.seek(start)
        head = f.read(head_n)
        head = head[: head.rfind(b"\n") + 1]
        f.seek(end - tail_n)
        tail = f.read(tail_n)
        return head + tail[tail.find(b"\n") + 1 :]


def _finish_entry(p: _Plan, fmt: str | None, old_context: list[str]) -> dict[str, Any]:
    e = dict(p.entry)
    if p.unit.is_tree:
        return e
    if not p.read_path:
        return e  # partial line only; entry already carries the old offset
    e["format"] = fmt or e.get("format")
    with Path(p.unit.path).open("rb") as f:
        head = f.read(4)
    appendable = e["format"] in APPENDABLE and not head.startswith(_COMPRESSED_MAGIC)
    end = p.end
    e["appendable"] = appendable
    e["offset"] = end
    e["prefix_hash"] = _fingerprint(p.unit.path, end)
    if appendable:
        e["context"] = _context_lines(_directive_region(p.unit.path, p.start, end), old_context if p.start else [])
    return e


# ------------------------------------------------------------------------------------- reading


def _read(
    plans: list[_Plan], strict: bool
) -> tuple[pl.DataFrame, pl.DataFrame, list[dict[str, Any]], dict[str, str], dict[str, pl.DataFrame]]:
    """Read every planned input; returns samples, attributes, the contract's inputs, formats, tables."""
    from fabricscope.io import load

    groups: dict[str | None, list[_Plan]] = {}
    for p in plans:
        if p.read_path:
            groups.setdefault(p.format, []).append(p)
    samples, attrs, inputs, formats = [], [], [], {}
    tables: dict[str, list[pl.DataFrame]] = {}
    for fmt, ps in groups.items():
        back = {p.read_path: p.unit.path for p in ps}
        res = load([p.read_path for p in ps], format=fmt or "auto", strict=strict)
        samples.append(res.samples)
        if not res.attributes.is_empty():
            attrs.append(res.attributes)
        for name, t in res.tables.items():
            tables.setdefault(name, []).append(t)
        for r in res.reports:
            orig = back.get(r.path, r.path)
            if r.format:
                formats[orig] = r.format
            if r.format is not None or r.failed:
                inputs.append({"path": orig, "format": r.format or "-", "records": r.rows, "rejected": r.bad_records})
    s = pl.concat([to_stored(x) for x in samples]) if samples else _empty_series()
    a = pl.concat([_stored_attrs(x) for x in attrs]) if attrs else pl.DataFrame()
    return s, a, inputs, formats, {n: pl.concat(ts, how="diagonal_relaxed") for n, ts in tables.items()}


def _drop_stored(new: pl.DataFrame, last: pl.DataFrame) -> tuple[pl.DataFrame, int]:
    """Drop readings at or before the series' last stored time (already in the history)."""
    if new.is_empty() or last.is_empty():
        return new, 0
    keyed = new.join(
        last.select(*SERIES_KEYS, pl.col("time").alias("_last")), on=SERIES_KEYS, how="left", nulls_equal=True
    )
    kept = keyed.filter(pl.col("_last").is_null() | (pl.col("time") > pl.col("_last"))).drop("_last")
    return kept, new.height - kept.height


# ------------------------------------------------------------------------------------ lifecycle

_FAULT_KEY = ["kind", "host", "device", "port", "priority", "metric"]
_SEV_RANK = {s: i for i, s in enumerate(SEVERITIES)}


def _worst(a: pl.Expr, b: pl.Expr) -> pl.Expr:
    ra = a.replace_strict(_SEV_RANK, return_dtype=pl.Int8, default=-1)
    rb = b.replace_strict(_SEV_RANK, return_dtype=pl.Int8, default=-1)
    return pl.when(ra >= rb).then(a).otherwise(b)


def _fault_ids(df: pl.DataFrame) -> pl.Series:
    # Stable across re-runs of the same input: kind, entity, metric and when the fault began.
    cols = [pl.col(c).cast(pl.String).fill_null("") for c in [*_FAULT_KEY, "first_seen"]]
    return df.select(pl.concat_str(cols, separator="\x1f").alias("k"))["k"].map_elements(
        lambda s: hashlib.blake2b(s.encode(), digest_size=8).hexdigest(), return_dtype=pl.String
    )


def _update_lifecycle(
    lifecycle: pl.DataFrame, findings: pl.DataFrame, covered: pl.DataFrame, run_time: dt.datetime
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Fold this run's findings into the lifecycle; returns the lifecycle and findings + fault_id.

    ``covered`` has (host, device, port, data_end) for every port with new data this run: an
    active fault there that this run did not report is resolved at ``data_end``.
    """
    now = pl.lit(run_time).cast(pl.Datetime("ns", "UTC"))
    cur = findings.group_by(_FAULT_KEY, maintain_order=True).agg(
        pl.col("severity")
        .sort_by(pl.col("severity").replace_strict(_SEV_RANK, return_dtype=pl.Int8))
        .last()
        .alias("severity"),
        pl.col("layer").first(),
        pl.col("start").min().alias("f_start"),
        pl.col("end").max().alias("f_end"),
        pl.col("message").first().alias("last_message"),
        pl.col("evidence").first().alias("last_evidence"),
    )
    active = lifecycle.filter(pl.col("resolved_at").is_null())
    done = lifecycle.filter(pl.col("resolved_at").is_not_null())
    joined = cur.join(active, on=_FAULT_KEY, how="full", nulls_equal=True, coalesce=True, suffix="_old")
    seen = pl.col("f_start").is_not_null() | pl.col("f_end").is_not_null() | pl.col("last_message").is_not_null()
    continued = joined.filter(seen & pl.col("fault_id").is_not_null()).select(
        "fault_id",
        *_FAULT_KEY,
        _worst(pl.col("severity"), pl.col("severity_old")).alias("severity"),
        pl.coalesce("layer", "layer_old").alias("layer"),
        "first_seen",
        pl.max_horizontal(pl.col("last_seen"), pl.coalesce("f_end", "f_start", now)).alias("last_seen"),
        pl.lit(None, pl.Datetime("ns", "UTC")).alias("resolved_at"),
        (pl.col("runs") + 1).alias("runs"),
        "last_message",
        "last_evidence",
    )
    fresh = joined.filter(seen & pl.col("fault_id").is_null()).with_columns(
        pl.coalesce("f_start", "f_end", now).alias("first_seen"),
        pl.coalesce("f_end", "f_start", now).alias("last_seen"),
        pl.lit(None, pl.Datetime("ns", "UTC")).alias("resolved_at"),
        pl.lit(1, pl.Int64).alias("runs"),
    )
    fresh = (
        fresh.with_columns(_fault_ids(fresh).alias("fault_id"))
        if fresh.height
        else fresh.with_columns(pl.lit(None, pl.String).alias("fault_id"))
    )
    # A resolved fault whose window this finding reaches back into is the same fault seen again
    # (more data moved a window's edge): reopen it instead of raising a second alert.
    fresh_rows = fresh.select(LIFECYCLE_SCHEMA.names()).with_row_index("_f")
    done_rows = done.select(LIFECYCLE_SCHEMA.names()).with_row_index("_d")
    again = (
        fresh_rows.join(done_rows, on=_FAULT_KEY, how="inner", nulls_equal=True, suffix="_done")
        .filter(pl.col("last_seen_done") >= pl.col("first_seen"))
        .sort("last_seen_done")
        .group_by("_f")
        .last()
        .unique(subset="_d", keep="first")
    )
    reopened = again.select(
        pl.col("fault_id_done").alias("fault_id"),
        *_FAULT_KEY,
        _worst(pl.col("severity"), pl.col("severity_done")).alias("severity"),
        pl.coalesce("layer", "layer_done").alias("layer"),
        pl.col("first_seen_done").alias("first_seen"),
        pl.max_horizontal("last_seen", "last_seen_done").alias("last_seen"),
        pl.lit(None, pl.Datetime("ns", "UTC")).alias("resolved_at"),
        (pl.col("runs_done") + 1).alias("runs"),
        "last_message",
        "last_evidence",
    )
    fresh = fresh_rows.filter(~pl.col("_f").is_in(again["_f"].implode())).drop("_f")
    done = done_rows.filter(~pl.col("_d").is_in(again["_d"].implode())).drop("_d")
    continued = pl.concat(
        [
            continued.select(LIFECYCLE_SCHEMA.names()).cast(LIFECYCLE_SCHEMA),
            reopened.select(LIFECYCLE_SCHEMA.names()).cast(LIFECYCLE_SCHEMA),
        ]
    )
    absent = joined.filter(~seen).select(
        "fault_id",
        *_FAULT_KEY,
        pl.col("severity_old").alias("severity"),
        pl.col("layer_old").alias("layer"),
        "first_seen",
        "last_seen",
        "resolved_at",
        "runs",
        pl.col("last_message_old").alias("last_message"),
        pl.col("last_evidence_old").alias("last_evidence"),
    )
    # Covered: the run had new data for the fault's port (or any port of its device/host when the
    # finding names none).
    cov = covered.with_columns(pl.col("port").cast(pl.Int64))
    absent = absent.with_row_index("_r")
    hits = (
        absent.join(cov, on="host", how="inner", nulls_equal=True, suffix="_c")
        .filter(
            (pl.col("device").is_null() | (pl.col("device") == pl.col("device_c")))
            & (pl.col("port").is_null() | pl.col("port").eq_missing(pl.col("port_c")))
        )
        .group_by("_r")
        .agg(pl.col("data_end").max())
    )
    absent = (
        absent.join(hits, on="_r", how="left")
        .with_columns(pl.col("data_end").alias("resolved_at"))
        .drop("_r", "data_end")
    )
    out = pl.concat(
        [
            done.select(LIFECYCLE_SCHEMA.names()).cast(LIFECYCLE_SCHEMA),
            continued.select(LIFECYCLE_SCHEMA.names()).cast(LIFECYCLE_SCHEMA),
            fresh.select(LIFECYCLE_SCHEMA.names()).cast(LIFECYCLE_SCHEMA),
            absent.select(LIFECYCLE_SCHEMA.names()).cast(LIFECYCLE_SCHEMA),
        ]
    )
    ids = pl.concat([continued.select(*_FAULT_KEY, "fault_id"), fresh.select(*_FAULT_KEY, "fault_id")])
    tagged = findings.join(ids, on=_FAULT_KEY, how="left", nulls_equal=True)
    return out, tagged


def active_findings(lifecycle: pl.DataFrame) -> pl.DataFrame:
    """Active faults as a findings frame (for the status, JSON and textfile) plus ``fault_id``.

    Example:
        >>> from fabricscope.history import LIFECYCLE_SCHEMA
        >>> active_findings(pl.DataFrame(schema=LIFECYCLE_SCHEMA)).height
        0
    """
    worst_first = -pl.col("severity").replace_strict(_SEV_RANK, return_dtype=pl.Int8)
    return (
        lifecycle.filter(pl.col("resolved_at").is_null())
        .select(
            "kind",
            "severity",
            "host",
            "device",
            "port",
            "priority",
            "layer",
            pl.col("first_seen").alias("start"),
            pl.col("last_seen").alias("end"),
            "metric",
            pl.lit(None, pl.Float64).alias("observed"),
            pl.lit(None, pl.Float64).alias("expected"),
            pl.col("last_message").alias("message"),
            pl.col("last_evidence").alias("evidence"),
            "fault_id",
        )
        .sort([worst_first, "kind", "host", "device", "port"], nulls_last=True)
    )


# -------------------------------------------------------------------------------------- outputs


def status_line(active: pl.DataFrame, extra: str = "") -> tuple[int, str]:
    """The Nagios exit code and one-line status for the active faults.

    Example:
        >>> from fabricscope.findings import make_findings
        >>> f = make_findings([{"kind": "pfc_storm", "severity": "critical", "host": "gpu01", "device": "eth0",
        ...                     "priority": 3, "metric": "rx_pause_duration_us", "message": "storm"}])
        >>> status_line(f)
        (2, 'FABRICSCOPE CRITICAL - 1 critical: pfc_storm gpu01/eth0/p3')
    """
    counts = {s: 0 for s in SEVERITIES}
    for s in active["severity"].to_list():
        counts[s] += 1
    code = EXIT_CRITICAL if counts["critical"] else EXIT_WARNING if counts["warning"] else EXIT_OK
    word = {EXIT_OK: "OK", EXIT_WARNING: "WARNING", EXIT_CRITICAL: "CRITICAL"}[code]
    if code == EXIT_OK:
        text = f"FABRICSCOPE OK - no active faults{extra}"
        return code, text
    parts = [f"{counts[s]} {s}" for s in ("critical", "warning") if counts[s]]
    names = []
    for r in active.filter(pl.col("severity") != "info").head(5).iter_rows(named=True):
        ent = "/".join(str(x) for x in (r["host"], r["device"], r["port"]) if x is not None)
        if r["priority"] is not None:
            ent += f"/p{r['priority']}"
        names.append(f"{r['kind']} {ent}".strip())
    more = counts["critical"] + counts["warning"] - len(names)
    tail = ", ".join(names) + (f", +{more} more" if more > 0 else "")
    return code, f"FABRICSCOPE {word} - {', '.join(parts)}: {tail}{extra}"


# ------------------------------------------------------------------------------------ the run


def _run_id(prev: str | None, plans: list[_Plan]) -> str:
    h = hashlib.blake2b(digest_size=8)
    h.update((prev or "").encode())
    for p in sorted(plans, key=lambda p: p.unit.path):
        h.update(json.dumps([p.unit.path, p.entry.get("ino"), p.entry.get("fingerprint"), p.start, p.end]).encode())
    return h.hexdigest()


def _partitioned(
    df: pl.DataFrame, time_col: pl.Expr, run_time: dt.datetime
) -> dict[tuple[dt.date, str | None], pl.DataFrame]:
    if df.is_empty():
        return {}
    keyed = df.with_columns(time_col.fill_null(pl.lit(run_time)).dt.date().alias("_date"))
    return {
        (k[0], k[1]): g.drop("_date")
        for k, g in keyed.partition_by(["_date", "host"], as_dict=True, maintain_order=True).items()
    }


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
    with _lock(state, opts.wait_s):
        history.mkdir(parents=True, exist_ok=True)
        if opts.reset_state:
            _recover_quiet(state, history)
            _rebuild_state(state, hist)
        st = _load_state(state)
        _recover(state, history, st.last_run_id)
        plans, keep = _plan(_units(opts.inputs), st.files)
        work = state / "work"
        work.mkdir(mode=0o700, exist_ok=True)
        try:
            return _run_locked(opts, st, plans, keep, work, state, history, hist, started_wall, t0)
        finally:
            shutil.rmtree(work, ignore_errors=True)


def _recover_quiet(state: Path, history: Path) -> None:
    with contextlib.suppress(StateError):
        _recover(state, history, None)
    (state / "pending.json").unlink(missing_ok=True)


def _run_locked(
    opts: CronOptions,
    st: _State,
    plans: list[_Plan],
    keep: dict[str, dict[str, Any]],
    work: Path,
    state: Path,
    history: Path,
    hist: History,
    started_wall: dt.datetime,
    t0: float,
) -> CronResult:
    from fabricscope.analyze import run_analysis
    from fabricscope.config import load_config

    run_id = _run_id(st.last_run_id, plans)
    plans = _prepare_reads(plans, st.files, work)
    new, new_attrs, inputs, formats, tables = _read(plans, opts.strict)
    # Topology changes rarely and is read once: the latest links table stays in the state; the
    # other tables (perftest, nccl-tests results) belong to this run's inputs only.
    links = tables.get("links", st.links)
    if links is not None:
        tables["links"] = links
    _crash_point("after-read")
    new, dropped = _drop_stored(new, st.series)
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
    covered = pl.DataFrame(
        schema={"host": pl.String, "device": pl.String, "port": pl.Int64, "data_end": pl.Datetime("ns", "UTC")}
    )
    if not new.is_empty():
        hosts = new["host"].unique().to_list()
        t_min = new["time"].min()
        since = t_min - dt.timedelta(seconds=opts.lookback_s)  # type: ignore[operator]
        back = (
            hist.samples(since=since, hosts=hosts).select(STORED_SAMPLES_SCHEMA.names()).collect()
            if opts.lookback_s > 0
            else _empty_series()
        )
        prev = st.series.filter(pl.col("host").is_in(hosts))
        window = pl.concat([back, prev, new]).unique(subset=[*SERIES_KEYS, "time"], keep="last", maintain_order=True)
        analysis = run_analysis(
            to_canonical(window.sort("time")),
            profile=opts.profile,
            config=cfg,
            tables=tables,
            attributes=None
            if attrs is None
            else attrs.with_columns([pl.col(c).cast(pl.Categorical()) for c in ("host", "device", "key", "source")]),
        )
        # Keep the findings that reach into this run's new data (per host); older windows were
        # reported by earlier runs.
        new_from = new.group_by("host").agg(pl.col("time").min().alias("_from"))
        findings = (
            analysis.findings.join(new_from, on="host", how="left")
            .filter(pl.col("end").is_null() | pl.col("_from").is_null() | (pl.col("end") >= pl.col("_from")))
            .drop("_from")
        )
        covered = (
            new.group_by("host", "device", "port")
            .agg(pl.col("time").max().alias("data_end"))
            .with_columns(pl.col("port").cast(pl.Int64))
        )

    lifecycle, tagged = _update_lifecycle(hist.lifecycle(), findings, covered, started_wall)
    tagged = tagged.with_columns(pl.lit(run_id).alias("run_id")).select(STORED_FINDINGS_SCHEMA.names())

    # Plan every part file before writing any, so the journal can name them all.
    sample_parts = _partitioned(new, pl.col("time"), started_wall)
    finding_parts = _partitioned(tagged, pl.coalesce("start", "end"), started_wall)
    writes: list[tuple[str, pl.DataFrame]] = []
    for table, parts in (("samples", sample_parts), ("findings", finding_parts)):
        for (day, host), df in parts.items():
            rel = partition_dir(Path(), table, day, host) / f"part-{run_id}.parquet"
            writes.append((rel.as_posix(), df))

    files_read = sum(1 for p in plans if p.read_path)
    code, line = status_line(active_findings(lifecycle))
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
                "status": {0: "ok", 1: "warning", 2: "critical"}[code],
                "exit_code": code,
            }
        ],
        schema=RUNS_SCHEMA,
    )
    runs = pl.concat([hist.runs().cast(RUNS_SCHEMA), run_row])

    # Journal, then the history, then the state (the commit point).
    singles = ["lifecycle.parquet", "runs.parquet", "attributes.parquet"]
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
    _crash_point("after-journal")
    staging = history / ".staging"
    for i, (rel, df) in enumerate(writes):
        _atomic.write_parquet(history / rel, df, staging=staging)
        if i == len(writes) // 2:
            _crash_point("mid-parts")
    _atomic.write_parquet(history / "lifecycle.parquet", lifecycle)
    _crash_point("after-lifecycle")
    _atomic.write_parquet(history / "runs.parquet", runs)
    if attrs is not None:
        _atomic.write_parquet(history / "attributes.parquet", attrs)
    _crash_point("after-history")

    files = dict(keep)
    for p in plans:
        files[p.unit.path] = _finish_entry(
            p, formats.get(p.unit.path), st.files.get(p.unit.path, {}).get("context", [])
        )
    series = _last_per_series(pl.concat([st.series, new])) if not new.is_empty() else st.series
    _commit_state(state, _State(files, run_id, series, attrs, links), run_id)
    (state / "pending.json").unlink(missing_ok=True)
    _crash_point("after-commit")

    if opts.retain_days is not None:
        _retain(history, hist, started_wall - dt.timedelta(days=opts.retain_days))
    _compact(state, history, opts.compact_min_parts, started_wall.date())

    active = active_findings(lifecycle)
    doc = document(active.drop("fault_id"), inputs)
    doc["run"] = run_row.with_columns(pl.col(pl.Datetime).dt.to_string("%Y-%m-%dT%H:%M:%S%.fZ")).to_dicts()[0]
    doc["run"]["duplicates_dropped"] = dropped
    doc["fault_ids"] = active["fault_id"].to_list()
    result = CronResult(run_id, code, line, files_read, new.height, dropped, active, doc)
    if opts.json_path and opts.json_path != "-":
        _atomic.write_text(opts.json_path, json.dumps(doc, indent=2) + "\n")
    if opts.textfile:
        from fabricscope.textfile import write_textfile

        write_textfile(opts.textfile, active, series, finished, duration)
    return result


# -------------------------------------------------------------------- retention and compaction


def _retain(history: Path, hist: History, cutoff: dt.datetime) -> None:
    """Delete partitions of days before ``cutoff``; drop faults resolved before it and old runs."""
    for table in ("samples", "findings"):
        for d in (history / table).glob("date=*"):
            try:
                day = dt.date.fromisoformat(d.name.removeprefix("date="))
            except ValueError:
                continue
            if day < cutoff.date():
                shutil.rmtree(d, ignore_errors=True)
        if (history / table).exists():
            _atomic.fsync_dir(history / table)
    lc = hist.lifecycle()
    if lc.height:
        _atomic.write_parquet(
            history / "lifecycle.parquet",
            lc.filter(pl.col("resolved_at").is_null() | (pl.col("resolved_at") >= cutoff)),
        )
    runs = hist.runs()
    if runs.height:
        _atomic.write_parquet(history / "runs.parquet", runs.filter(pl.col("started") >= cutoff))


def _compact(state: Path, history: Path, min_parts: int, today: dt.date) -> None:
    """Merge a partition's part files into one when it has ``min_parts`` or more.

    The merged file is written, renamed in, and then the old parts are unlinked; a crash between
    the two is rolled forward by :func:`_recover` from ``STATE/compact.json``.
    """
    if min_parts < 2:
        return
    for table in ("samples", "findings"):
        for d in sorted((history / table).glob("date=*/host=*")):
            parts = sorted(d.glob("part-*.parquet"))
            if len(parts) < min_parts:
                continue
            names = "".join(p.name for p in parts)
            merged = d / f"part-c{hashlib.blake2b(names.encode(), digest_size=8).hexdigest()}.parquet"
            df = pl.concat([pl.read_parquet(p) for p in parts], how="vertical_relaxed")
            if table == "samples":
                df = df.sort("time")
            rel = lambda p: p.relative_to(history).as_posix()  # noqa: E731
            _atomic.write_text(
                state / "compact.json", json.dumps({"merged": rel(merged), "old": [rel(p) for p in parts]}), mode=0o600
            )
            _atomic.write_parquet(merged, df, staging=history / ".staging")
            _crash_point("mid-compaction")
            for p in parts:
                p.unlink()
            _atomic.fsync_dir(d)
            (state / "compact.json").unlink()


# ---------------------------------------------------------------------------------------- CLI

_EPILOG = """\
examples:
  fabricscope cron --inputs /var/log/fabric --state /var/lib/fabricscope/state \\
      --history /var/lib/fabricscope/history --textfile /var/lib/node_exporter/textfile/fabricscope.prom
  fabricscope cron --inputs dumps/ --state st/ --history hist/ --json - --retain-days 30
  fabricscope cron ... --reset-state        rebuild a corrupt state from the history

exit status (Nagios): 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN (locked by another run, corrupt
state, unreadable input in --strict mode). See docs/cron.md for crontab and systemd units.
"""


def add_cron_parser(sub: Any) -> None:
    """Register ``fabricscope cron`` on the CLI's subparsers."""
    p = sub.add_parser(
        "cron",
        help="incremental run for cron/systemd: history, lifecycle, Nagios/JSON/textfile outputs",
        description="Read only what is new since the last run, store it in a Parquet history, run the "
        "detectors, track each fault across runs and report (Nagios exit status).",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--inputs", nargs="+", required=True, metavar="DIR", help="files or directories to watch")
    p.add_argument("--state", required=True, metavar="DIR", help="state directory (manifest, lock)")
    p.add_argument("--history", required=True, metavar="DIR", help="history directory (Hive-partitioned Parquet)")
    p.add_argument("--config", metavar="PATH", help="TOML thresholds (see docs/detectors.md)")
    p.add_argument("--profile", help="force a technology profile (ndr400, roce400, ...)")
    p.add_argument(
        "--lookback",
        type=float,
        default=900.0,
        metavar="SECONDS",
        help="history prepended for the detectors (default 900)",
    )
    p.add_argument("--retain-days", type=float, metavar="DAYS", help="delete history older than this")
    p.add_argument(
        "--compact-parts",
        type=int,
        default=8,
        metavar="N",
        help="merge a partition's files when it has N (default 8; 0 off)",
    )
    p.add_argument("--strict", action="store_true", help="fail on a malformed record (default: skip and count)")
    p.add_argument(
        "--wait",
        nargs="?",
        type=float,
        const=float("inf"),
        default=0.0,
        metavar="SECONDS",
        help="wait for a running run's lock (default: exit 3 at once)",
    )
    p.add_argument("--reset-state", action="store_true", help="rebuild the state from the history (after corruption)")
    p.add_argument("--json", metavar="PATH|-", help="write the findings document with the run record")
    p.add_argument("--textfile", metavar="PATH", help="write node_exporter textfile collector metrics (atomically)")
    p.set_defaults(func=_cmd_cron)


def _cmd_cron(args: argparse.Namespace) -> int:
    opts = CronOptions(
        inputs=args.inputs,
        state=Path(args.state),
        history=Path(args.history),
        config=args.config,
        profile=args.profile,
        lookback_s=args.lookback,
        retain_days=args.retain_days,
        compact_min_parts=args.compact_parts,
        strict=args.strict,
        wait_s=args.wait,
        reset_state=args.reset_state,
        json_path=args.json,
        textfile=args.textfile,
    )
    try:
        res = run_cron(opts)
    except (LockedError, StateError) as e:
        print(f"FABRICSCOPE UNKNOWN - {e}")
        return EXIT_UNKNOWN
    except FabricscopeError as e:
        print(f"FABRICSCOPE UNKNOWN - cannot read input: {e}")
        return EXIT_UNKNOWN
    except (OSError, ValueError) as e:
        print(f"FABRICSCOPE UNKNOWN - {e}")
        return EXIT_UNKNOWN
    except Exception as e:  # Nagios must see UNKNOWN, not a traceback's exit status 1 (WARNING)
        import traceback

        traceback.print_exc()
        print(f"FABRICSCOPE UNKNOWN - internal error: {type(e).__name__}: {e}")
        return EXIT_UNKNOWN
    if args.json == "-":
        print(json.dumps(res.document, indent=2))
    if args.json != "-":
        perf = f" | samples={res.samples} files={res.files_read} duplicates_dropped={res.duplicates_dropped}"
        print(res.status_line + perf)
    sys.stdout.flush()
    return res.exit_code
