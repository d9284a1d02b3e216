"""Crash-safe file publication: write to a temporary file, fsync, rename, fsync the directory.

A reader (or a process restarted after a crash) sees either the old file or the complete new
one, never a torn write. ``rename`` is atomic within one filesystem; the directory fsync makes the
rename itself durable, without which a power loss may bring back the old name.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Callable, Iterator
from pathlib import Path

import polars as pl

__all__ = ["atomic_path", "fsync_dir", "write_bytes", "write_parquet", "write_text"]


def fsync_dir(path: str | os.PathLike[str]) -> None:
    """Make renames and unlinks inside ``path`` durable.

    Example:
        >>> import tempfile
        >>> fsync_dir(tempfile.gettempdir())
    """
    fd = os.open(os.fspath(path), os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_file(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@contextlib.contextmanager
def atomic_path(
    target: str | os.PathLike[str], *, mode: int | None = None, staging: Path | None = None
) -> Iterator[Path]:
    """Yield a temporary path; on success fsync it and rename it onto ``target``.

    Args:
        target: The final path.
        mode: File mode for the result (e.g. ``0o600`` for state files).
        staging: Directory for the temporary file (same filesystem as ``target``); default: next
            to ``target`` with a hidden name, so directory globs like ``*.parquet`` never match it.

    Yields:
        The temporary path to write.

    Example:
        >>> import tempfile, pathlib
        >>> d = pathlib.Path(tempfile.mkdtemp())
        >>> with atomic_path(d / "x.txt") as tmp:
        ...     _ = tmp.write_text("hello")
        >>> (d / "x.txt").read_text()
        'hello'
    """
    final = Path(target)
    try:
        kind = final.stat().st_mode
    except OSError:
        kind = None
    if kind is not None and not stat.S_ISREG(kind) and not stat.S_ISDIR(kind):
        # A device or a pipe (`--json /dev/null`, /dev/stdout, a FIFO) is written in place: there is
        # nothing to tear, and a rename would replace the device node with a regular file.
        yield final
        return
    final.parent.mkdir(parents=True, exist_ok=True)
    where = staging if staging is not None else final.parent
    where.mkdir(parents=True, exist_ok=True)
    tmp = where / f".{final.name}.{os.getpid()}.tmp"
    try:
        yield tmp
        if mode is not None:
            tmp.chmod(mode)
        _fsync_file(tmp)
        tmp.replace(final)
        fsync_dir(final.parent)
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()


def write_bytes(target: str | os.PathLike[str], data: bytes, *, mode: int | None = None) -> None:
    """Atomically replace ``target`` with ``data``.

    Example:
        >>> import tempfile, pathlib
        >>> p = pathlib.Path(tempfile.mkdtemp()) / "b"
        >>> write_bytes(p, b"1")
        >>> p.read_bytes()
        b'1'
    """
    with atomic_path(target, mode=mode) as tmp:
        tmp.write_bytes(data)


def write_text(target: str | os.PathLike[str], text: str, *, mode: int | None = None) -> None:
    r"""Atomically replace ``target`` with ``text`` (UTF-8).

    Example:
        >>> import tempfile, pathlib
        >>> p = pathlib.Path(tempfile.mkdtemp()) / "t"
        >>> write_text(p, "ok\\n")
        >>> p.read_text()
        'ok\\n'
    """
    write_bytes(target, text.encode("utf-8"), mode=mode)


def write_parquet(
    target: str | os.PathLike[str],
    df: pl.DataFrame,
    *,
    mode: int | None = None,
    staging: Path | None = None,
    before_rename: Callable[[], None] | None = None,
) -> None:
    """Atomically replace ``target`` with ``df`` as zstd Parquet.

    Args:
        target: The final path.
        df: The frame.
        mode: File mode for the result.
        staging: Directory for the temporary file (see :func:`atomic_path`).
        before_rename: Called after the data is written and before the rename (crash tests).

    Example:
        >>> import tempfile, pathlib, polars as pl
        >>> p = pathlib.Path(tempfile.mkdtemp()) / "f.parquet"
        >>> write_parquet(p, pl.DataFrame({"a": [1]}))
        >>> pl.read_parquet(p)["a"].to_list()
        [1]
    """
    with atomic_path(target, mode=mode, staging=staging) as tmp:
        df.write_parquet(tmp, compression="zstd")
        if before_rename is not None:
            before_rename()
