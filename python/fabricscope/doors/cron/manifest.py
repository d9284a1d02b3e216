"""The manifest: which inputs are new, grown, rotated or rewritten, and what of each to read."""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fabricscope import _native
from fabricscope.doors.cron.directives import context_lines, directive_region
from fabricscope.exceptions import FabricscopeError, InputError
from fabricscope.reading._regular import not_regular, open_regular

# Formats whose files are line-oriented and self-describing per line (plus a few directives), so
# an appended tail can be read on its own: the core declares it per format.
APPENDABLE = frozenset(f["name"] for f in _native.formats() if f["appendable"])
# How much of a file the core's format detection looks at (``formats::detect``'s head).
_DETECT_BYTES = 64 << 10


# The prefix fingerprint hashes this much of the start and of the end of the consumed prefix:
# rewriting or rotating a log changes one of them, and hashing a 10 GB log every minute would not.
_FINGERPRINT_BYTES = 64 * 1024


@dataclass
class Unit:
    """One input: a file, or a sysfs tree read as a whole."""

    path: str
    is_tree: bool


def units(inputs: list[str]) -> list[Unit]:
    """The files and sysfs trees under ``inputs``, as the Rust reader expands them (``_native.expand``)."""
    for raw in inputs:
        if not Path(raw).exists():
            # A watched path that is gone is a configuration error, not "no new data".
            raise ValueError(f"input {raw} does not exist")
    out: list[Unit] = []
    for path, kind in _native.expand(inputs):
        if kind == "failed" and os.path.isdir(path):  # noqa: PTH112 (hot loop)
            continue  # an unreadable directory: nothing to read in it this run
        out.append(Unit(path, kind == "sysfs-tree"))
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
    with open_regular(path) as f:
        h.update(f.read(min(offset, _FINGERPRINT_BYTES)))
        if offset > _FINGERPRINT_BYTES:
            f.seek(max(offset - _FINGERPRINT_BYTES, _FINGERPRINT_BYTES))
            h.update(f.read(offset - f.tell()))
    return h.hexdigest()


def _fingerprint_or_failure(path: str, offset: int) -> str | Exception:
    """:func:`_fingerprint`, or what reading the prefix raised (one failed input)."""
    try:
        return _fingerprint(path, offset)
    except _UNREADABLE as e:
        return e


@dataclass
class Plan:
    """What to read from one unit in this run."""

    unit: Unit
    entry: dict[str, Any]  # the manifest entry after this run
    start: int  # byte offset the read starts at (0: the whole file)
    end: int  # byte offset after the last whole line read
    reason: str  # new, appended, rotated, truncated, rewritten, changed; skipped, failed (not read)
    read_path: str = ""  # what is handed to the reader (the file, or a temp copy of the tail)
    format: str | None = None
    error: str | None = None  # why a skipped or failed unit was not read


#: Plans whose unit is not read this run: not a regular file (``skipped``), or a file that could
#: not be opened or read (``failed``, listed in the run's inputs with its error and read again next
#: run, its manifest entry unchanged).
NOT_READ = frozenset({"skipped", "failed"})

# What opening or reading an input may raise: one failed input, never the run's end.
_UNREADABLE = (OSError, InputError)


def _failure(path: str, e: BaseException) -> str:
    """The error of an input that could not be read, naming it once."""
    text = str(e) if isinstance(e, InputError) else f"{path}: cannot read: {getattr(e, 'strerror', None) or e}"
    return text if text.startswith(f"{path}:") else f"{path}: {text}"


def plan(units: list[Unit], files: dict[str, dict[str, Any]]) -> tuple[list[Plan], dict[str, dict[str, Any]]]:
    """Decide per unit whether and from where to read; returns the plans and unchanged entries."""
    plans: list[Plan] = []
    keep: dict[str, dict[str, Any]] = {}
    for u in units:
        old = files.get(u.path)
        if u.is_tree:
            fp, size, mtime = _tree_fingerprint(u.path)
            entry = {"tree": True, "fingerprint": fp, "size": size, "mtime_ns": mtime}
            if old and old.get("fingerprint") == fp:
                keep[u.path] = old
            else:
                plans.append(Plan(u, entry, 0, size, "new" if old is None else "changed"))
            continue
        try:
            s = os.stat(u.path)  # noqa: PTH116 (hot loop)
        except FileNotFoundError:
            continue  # vanished between walk and stat: next run sees what is there
        except OSError as e:
            plans.append(Plan(u, {}, 0, 0, "failed", error=_failure(u.path, e)))
            if old is not None:
                keep[u.path] = old
            continue
        what = not_regular(s.st_mode)
        if what is not None:
            # A FIFO, a socket or a device among the watched files: never opened (a FIFO's open
            # would wait for a writer, for ever, holding the lock).
            plans.append(Plan(u, {}, 0, 0, "skipped", error=f"{u.path}: not a regular file ({what}): not read"))
            continue
        entry = {
            "dev": s.st_dev,
            "ino": s.st_ino,
            "size": s.st_size,
            "mtime_ns": s.st_mtime_ns,
            "offset": s.st_size,
            "format": None,
        }
        if old is None:
            plans.append(Plan(u, entry, 0, s.st_size, "new"))
            continue
        if old.get("size") == s.st_size and old.get("mtime_ns") == s.st_mtime_ns and old.get("ino") == s.st_ino:
            keep[u.path] = old
            continue
        offset = int(old.get("offset", 0))
        if (old.get("dev"), old.get("ino")) != (s.st_dev, s.st_ino):
            reason = "rotated"
        elif s.st_size < offset:
            reason = "truncated"
        elif isinstance(fingerprint := _fingerprint_or_failure(u.path, offset), Exception):
            plans.append(Plan(u, {}, 0, 0, "failed", error=_failure(u.path, fingerprint)))
            keep[u.path] = old
            continue
        elif fingerprint != old.get("prefix_hash"):
            reason = "rewritten"
        elif old.get("appendable"):
            entry["format"] = old.get("format")
            if s.st_size == offset:
                keep[u.path] = {**old, "mtime_ns": s.st_mtime_ns, "size": s.st_size}
                continue
            plans.append(Plan(u, entry, offset, s.st_size, "appended", format=old.get("format")))
            continue
        else:
            reason = "changed"
        plans.append(Plan(u, entry, 0, s.st_size, reason))
    return plans, keep


def prepare_reads(plans: list[Plan], files: dict[str, dict[str, Any]], work: Path) -> list[Plan]:
    """Point each plan at what the reader gets: the file itself, or a temp copy of its tail."""
    ready: list[Plan] = []
    for i, p in enumerate(plans):
        if p.reason in NOT_READ:
            ready.append(p)
            continue
        try:
            ready.append(_prepare_read(i, p, files, work))
        except _UNREADABLE as e:
            # One unreadable input is one failed input: the others are read, stored and judged.
            ready.append(Plan(p.unit, {}, 0, 0, "failed", error=_failure(p.unit.path, e)))
    return ready


def _prepare_read(i: int, p: Plan, files: dict[str, dict[str, Any]], work: Path) -> Plan:
    """Point ``p`` at what the reader gets (raises what opening or reading the input raises)."""
    if p.unit.is_tree or p.start == 0:
        p.read_path = p.unit.path
        if not p.unit.is_tree and _partial_last_line(p.unit.path, p.end):
            # A log caught mid-write: read its whole lines only (a cut line would be stored
            # with a wrong value); the rest is read next run.
            cut = _last_newline(p.unit.path, p.end)
            copy = work / str(i) / Path(p.unit.path).name
            copy.parent.mkdir(parents=True)
            with open_regular(p.unit.path) as src:
                copy.write_bytes(src.read(cut))
            st = Path(p.unit.path).stat()
            os.utime(copy, ns=(st.st_atime_ns, st.st_mtime_ns))
            p.end = cut
            p.read_path = str(copy)
        return p
    with open_regular(p.unit.path) as f:
        f.seek(p.start)
        tail = f.read(p.end - p.start)
    cut = tail.rfind(b"\n")
    if cut < 0:
        # Only a partial line was appended: wait for the writer to finish it.
        old = files[p.unit.path]
        p.entry.update(offset=p.start, prefix_hash=old.get("prefix_hash"), context=old.get("context", []))
        p.entry["appendable"] = True
        p.read_path = ""
        return p
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
    return p


def _partial_last_line(path: str, size: int) -> bool:
    """True for an appendable text log whose last line is still being written."""
    if size == 0:
        return False
    with open_regular(path) as f:
        head = f.read(8192)
        f.seek(size - 1)
        last = f.read(1)
    if last == b"\n" or _native.compression(head) is not None or b"\0" in head:
        return False
    # The core detects a format from the first 64 KiB and the file name: reading that much of the
    # file (leniently, the last line of the window may be cut) names the format a full read would.
    with open_regular(path) as f:
        window = f.read(_DETECT_BYTES)
    try:
        reports = _native.read_buffer(window, path, strict=False)[3]
    except FabricscopeError:
        return False
    fmt = reports[0]["format"] if reports else None
    return fmt in APPENDABLE and _last_newline(path, size) > 0


def _last_newline(path: str, size: int) -> int:
    """Offset just after the last newline before ``size`` (0 when there is none)."""
    with open_regular(path) as f:
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


def finish_entry(p: Plan, fmt: str | None, old_context: list[str]) -> dict[str, Any]:
    """The manifest entry of ``p`` after it was read: offset, prefix fingerprint and directives for the next tail."""
    e = dict(p.entry)
    if p.unit.is_tree:
        return e
    if not p.read_path:
        return e  # partial line only; entry already carries the old offset
    e["format"] = fmt or e.get("format")
    with open_regular(p.unit.path) as f:
        head = f.read(4)
    appendable = e["format"] in APPENDABLE and _native.compression(head) is None
    end = p.end
    e["appendable"] = appendable
    e["offset"] = end
    e["prefix_hash"] = _fingerprint(p.unit.path, end)
    if appendable:
        e["context"] = context_lines(directive_region(p.unit.path, p.start, end), old_context if p.start else [])
    return e
