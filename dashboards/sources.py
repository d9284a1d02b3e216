"""What the dashboard may read: the data directory, sources inside it, and uploads.

The browser never names a file. A source is a path *relative to the data directory* (query
parameter ``?source=`` or the sidebar), resolved and checked to stay inside it; a source
containing a symlink that leads outside is refused. Uploads are size-limited and written with
their base name only into a fresh temporary directory (and parsed with ``strict=False``).
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path
from typing import Any

from fabricscope.history import is_history

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
    """Selectable sources: the root, its sub-directories and theirs (two levels), sorted.

    Hidden directories and directories that are symlinks are not offered.
    """
    root = (root or data_root()).resolve()
    out = ["."]
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


def save_uploads(files: list[Any], limit: int | None = None) -> tuple[str, str, list[str]]:
    """Write uploaded files into a fresh temporary directory.

    Names are reduced to their base name (no directories from the browser) and files above the
    size limit are refused.

    Returns:
        (directory, content digest, refused names with the reason).
    """
    limit = limit or max_upload_bytes()
    directory = Path(tempfile.mkdtemp(prefix="fabricscope-upload-"))
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
