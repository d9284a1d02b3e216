"""The directives an appended tail needs to be read on its own (host, device, TYPE/UNIT, last time)."""

from __future__ import annotations

import re

from fabricscope import _native
from fabricscope.reading._regular import open_regular

# Prometheus metadata a tail's samples need; the host/device/time directives are the core's grammar.
_TYPE_RE = re.compile(r"^# (TYPE|UNIT) (\S+) ")


def context_lines(prefix_tail: bytes, old_context: list[str]) -> list[str]:
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
    """Cheap pre-check: data lines (``name{...} v t``, ``  counter: v``) are never directives.

    A superset of what the readers take for a directive (host and time keys, a comment or prompt,
    a timestamp, an ``ethtool -S`` command); the core's parser decides.
    """
    s = line.lstrip()
    if not s:
        return False
    c = s[0]
    if c in "#$>" or c.isdigit():
        return True
    return s[:4].lower() in ("host", "node", "time", "date") or s[:3] in _DAYS or "ethtool" in s


def _classify(
    line: str, host: str | None, device: str | None, stamp: str | None, types: dict[str, str]
) -> tuple[str | None, str | None, str | None]:
    # The readers' own directive grammar (``_native.parse_directive_line``) decides what a line is.
    directive = _native.parse_directive_line(line)
    if directive is not None:
        kind = directive[0]
        if kind == "host":
            return line, device, stamp
        if kind == "device":
            return host, line, stamp
        return host, device, line
    m = _TYPE_RE.match(line)
    if m:
        types[f"{m.group(1)} {m.group(2)}"] = line
    return host, device, stamp


def directive_region(path: str, start: int, end: int) -> bytes:
    """The bytes of ``[start, end)`` that are scanned for directives.

    Headers (``# host:``) sit at the top of a log and the directives in force at ``end`` (last
    timestamp, ``# ethtool -S``, recent ``# TYPE``) near it, so a large new file is scanned in
    its first 64 KiB and its last 4 MiB rather than whole.
    """
    head_n, tail_n = 64 * 1024, 4 * 1024 * 1024
    with open_regular(path) as f:
        if end - start <= head_n + tail_n:
            f.seek(start)
            return f.read(end - start)
        f.seek(start)
        head = f.read(head_n)
        head = head[: head.rfind(b"\n") + 1]
        f.seek(end - tail_n)
        tail = f.read(tail_n)
        return head + tail[tail.find(b"\n") + 1 :]
