"""What the dashboard may read: the data directory, sources inside it, servers, and uploads.

The browser never names a file or a URL. A source is a path *relative to the data directory*
(query parameter ``?source=`` or the sidebar), resolved and checked to stay inside it; a source
containing a symlink that leads outside is refused. A server source is one of the Prometheus
servers or exporter endpoints the operator configured (``fabricscope dashboard --prometheus``,
in the private file ``FABRICSCOPE_REMOTE_FILE`` names), named by its URL without credentials; the browser picks one of
them, a time range and label matchers (validated: no PromQL of its own), so it can neither send
the configured credentials elsewhere nor query anything but the counters. Uploads are
size-limited and written with their base name only into a fresh temporary directory (and parsed
with ``strict=False``); every upload directory of the server process lives under one parent that
is removed when the process exits.
"""

from __future__ import annotations

import atexit
import datetime as dt
import hashlib
import os
import re
import shutil
import tempfile
from pathlib import Path
from typing import Any

from fabricscope.doors.dashboard import remote_from_environment
from fabricscope.reading.history import is_history
from fabricscope.reading.prometheus import RemoteOptions
from fabricscope.transport import redact

ENV_DATA = "FABRICSCOPE_DATA"


ENV_MAX_UPLOAD_MB = "FABRICSCOPE_MAX_UPLOAD_MB"


DEFAULT_MAX_UPLOAD_MB = 200


class OutsideDataDirError(ValueError):
    """A requested source is not inside the configured data directory."""


def data_root() -> Path:
    """The configured data directory, resolved (``FABRICSCOPE_DATA``, else ``sample_traces/``)."""
    configured = os.environ.get(ENV_DATA)
    if configured:
        return Path(configured).expanduser().resolve()
    return (Path(__file__).resolve().parent.parent / "sample_traces").resolve()


#: Longest time range the browser may ask a server for (fabricscope default: a week of 15 s
#: scrapes of a few thousand ports is the most one dashboard process should hold in memory).
MAX_RANGE_S = 7 * 86_400
#: Most scrapes of an exporter endpoint per load, and the longest interval between them
#: (fabricscope default: a "what is this node doing now" look stays under ten minutes).
MAX_SCRAPES, MAX_SCRAPE_INTERVAL_S = 60, 60.0

# One label matcher: name, operator, double-quoted value (Prometheus's selector syntax).
_MATCHER = re.compile(r'\s*([A-Za-z_][A-Za-z0-9_]*)\s*(=~|!~|!=|=)\s*("(?:[^"\\\n]|\\.)*")\s*')


def remote_sources() -> tuple[dict[str, str], RemoteOptions]:
    """The configured servers by the name the browser sees (the URL without credentials).

    Returns:
        (``{shown URL: configured URL}`` in configured order, the options to read them with).
    """
    urls, opts = remote_from_environment()
    named: dict[str, str] = {}
    for url in urls:
        named.setdefault(redact(url), url)
    return named, opts


def files_configured() -> bool:
    """Whether files are a source: a data directory is set, or no server is (the sample traces)."""
    return bool(os.environ.get(ENV_DATA)) or not remote_sources()[0]


def parse_matchers(text: str) -> tuple[str, ...]:
    """Label matchers typed in the browser: ``job="node", instance=~"gpu0.*"`` (braces optional).

    Raises:
        ValueError: anything but comma-separated ``name OP "value"`` matchers.

    Example:
        >>> parse_matchers('{job="node", instance=~"gpu0.*"}')
        ('job="node"', 'instance=~"gpu0.*"')
        >>> parse_matchers("")
        ()
    """
    body = text.strip()
    if body.startswith("{") and body.endswith("}"):
        body = body[1:-1]
    out: list[str] = []
    pos = 0
    while body[pos:].strip():
        m = _MATCHER.match(body, pos)
        if m is None:
            raise ValueError(f'expected name="value" (or !=, =~, !~) at {body[pos:].strip()[:40]!r}')
        out.append(f"{m.group(1)}{m.group(2)}{m.group(3)}")
        pos = m.end()
        if pos < len(body):
            if body[pos] != ",":
                raise ValueError(f"expected a comma between matchers at {body[pos:][:40]!r}")
            pos += 1
    return tuple(out)


def parse_time(text: str) -> int:
    """A time typed in the browser (ISO 8601, UTC unless it says otherwise, or epoch seconds) in ns.

    Example:
        >>> parse_time("2026-12-04T16:00:00Z"), parse_time("1796400000")
        (1796400000000000000, 1796400000000000000)
    """
    text = text.strip()
    try:
        return round(float(text) * 1e9)
    except ValueError:
        pass
    try:
        t = dt.datetime.fromisoformat(text.replace("Z", "+00:00").replace(" ", "T", 1))
    except ValueError:
        raise ValueError(f"{text!r} is not an ISO 8601 time (2026-12-04T16:00:00Z) or epoch seconds") from None
    if t.tzinfo is None:
        t = t.replace(tzinfo=dt.timezone.utc)
    return (t - dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)) // dt.timedelta(microseconds=1) * 1000


def max_upload_bytes() -> int:
    """Upload limit in bytes (``FABRICSCOPE_MAX_UPLOAD_MB``, the server's ``maxUploadSize`` too)."""
    try:
        mb = int(os.environ.get(ENV_MAX_UPLOAD_MB, DEFAULT_MAX_UPLOAD_MB))
    except ValueError:
        mb = DEFAULT_MAX_UPLOAD_MB
    return max(mb, 1) * 1024 * 1024


def escaping_links(root: Path, path: Path) -> list[str]:
    """Symlinks under ``path`` whose target is outside ``root`` (relative names, sorted)."""
    out = []
    candidates = [path] if not path.is_dir() else []
    if path.is_dir():
        for dirpath, dirnames, filenames in os.walk(path, followlinks=False):
            candidates.extend(Path(dirpath) / n for n in (*dirnames, *filenames))
    for p in candidates:
        if p.is_symlink():
            target = p.resolve()
            if not target.is_relative_to(root):
                out.append(str(p.relative_to(root) if p.is_relative_to(root) else p))
    return sorted(out)


def resolve_source(rel: str, root: Path | None = None) -> Path:
    """Resolve a source named relative to the data directory, refusing anything outside it.

    Args:
        rel: A relative path such as ``scenarios/pfc-storm`` (``""`` or ``.`` is the root).
        root: The data directory (default :func:`data_root`).

    Returns:
        The resolved path, inside ``root``.

    Raises:
        OutsideDataDirError: ``rel`` is absolute, climbs out with ``..``, leads out through a
            symlink, contains a symlink leading out, or does not exist.
    """
    root = (root or data_root()).resolve()
    rel = (rel or ".").strip()
    if "\x00" in rel:
        raise OutsideDataDirError("source names may not contain NUL bytes")
    if Path(rel).is_absolute() or rel.startswith("~"):
        raise OutsideDataDirError(f"source {rel!r} is not relative to the data directory")
    path = (root / rel).resolve()
    if not path.is_relative_to(root):
        raise OutsideDataDirError(f"source {rel!r} is outside the data directory {root}")
    if not path.exists():
        raise OutsideDataDirError(f"source {rel!r} does not exist under the data directory {root}")
    bad = escaping_links(root, path)
    if bad:
        raise OutsideDataDirError(
            f"source {rel!r} contains symlinks leading outside the data directory: {', '.join(bad[:5])}"
        )
    return path


def list_sources(root: Path | None = None) -> list[str]:
    """Selectable sources: the configured servers, then the root, its sub-directories and theirs
    (two levels), sorted.

    Hidden directories and directories that are symlinks are not offered. With servers
    configured and no data directory, only the servers are offered.
    """
    servers = list(remote_sources()[0])
    if not files_configured():
        return servers
    root = (root or data_root()).resolve()
    out = [*servers, "."]
    if not root.is_dir():
        return out
    for d in sorted(p for p in root.iterdir() if p.is_dir() and not p.is_symlink() and not p.name.startswith(".")):
        out.append(d.name)
        if is_history(d):
            continue  # a history's partitions are not sources of their own
        out.extend(
            f"{d.name}/{e.name}"
            for e in sorted(d.iterdir())
            if e.is_dir() and not e.is_symlink() and not e.name.startswith(".")
        )
    return out


# The parent of this process's upload directories (created on the first upload).
_upload_root: Path | None = None


def _uploads_parent() -> Path:
    """One private directory per server process for its uploads, removed when the process exits.

    A replaced upload is removed at once (components.py); the rest (the last upload of each
    session, a session that ends with the server) would otherwise stay in /tmp for good.
    """
    global _upload_root
    if _upload_root is None or not _upload_root.is_dir():
        _upload_root = Path(tempfile.mkdtemp(prefix="fabricscope-uploads-"))
        atexit.register(shutil.rmtree, _upload_root, True)
    return _upload_root


def save_uploads(files: list[Any], limit: int | None = None) -> tuple[str, str, list[str]]:
    """Write uploaded files into a fresh temporary directory.

    Names are reduced to their base name (no directories from the browser) and files above the
    size limit are refused.

    Returns:
        (directory, content digest, refused names with the reason).
    """
    limit = limit or max_upload_bytes()
    directory = Path(tempfile.mkdtemp(prefix="fabricscope-upload-", dir=_uploads_parent()))
    digest = hashlib.sha256()
    refused = []
    for i, f in enumerate(files):
        name = Path(str(f.name).replace("\\", "/")).name or f"upload-{i}"
        size = getattr(f, "size", None)
        if size is None:
            size = len(f.getbuffer())
        if size > limit:
            refused.append(f"{name}: {size / 2**20:.1f} MiB is above the {limit / 2**20:.0f} MiB limit")
            continue
        content = bytes(f.getbuffer())
        digest.update(name.encode() + b"\0" + hashlib.sha256(content).digest())
        (directory / f"{i:03d}-{name}").write_bytes(content)
    return str(directory), digest.hexdigest(), refused
