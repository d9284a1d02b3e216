"""Every file fabricscope writes: crash-safe, and safe in a directory other users can write.

A file is written to a new temporary file next to it (a random name created with
``O_CREAT|O_EXCL|O_NOFOLLOW``, :func:`tempfile.mkstemp`: a name planted in advance, a symlink
included, is never opened), fsynced, renamed onto its name and the directory fsynced. A reader (or
a process restarted after a crash) sees either the old file or the complete new one, never a torn
write; the rename replaces whatever is at the name (a symlink is replaced, never followed).

A destination that is a FIFO, a device or a symlink to one (``--json /dev/null``, ``/dev/stdout``)
is written in place instead, but only when nobody else could have put it there: the directory
holding it is written by its owner alone, and that owner is this user or root. Elsewhere the name
is replaced like a regular file. The in-place open never waits for a FIFO's reader: a FIFO that
nobody reads is an :class:`~fabricscope.exceptions.OutputError`.

A directory every user may write without the sticky bit (``chmod 777``) is refused with an
:class:`~fabricscope.exceptions.OutputError`: anyone could rename the file away or replace it.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import stat
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import BinaryIO

import polars as pl

from fabricscope.exceptions import OutputError

__all__ = [
    "atomic_file",
    "check_directory",
    "fsync_dir",
    "write_bytes",
    "write_parquet",
    "write_text",
]


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


def check_directory(path: str | os.PathLike[str]) -> os.stat_result:
    """Refuse a directory that every user may write and whose sticky bit is not set.

    Returns:
        The directory's ``stat`` (its symlinks followed).

    Raises:
        OutputError: ``path`` is not a directory, or is world-writable without the sticky bit.

    Example:
        >>> import tempfile
        >>> d = tempfile.mkdtemp()
        >>> _ = check_directory(d)
    """
    try:
        st = Path(path).stat()
    except OSError as e:
        raise OutputError(os.fspath(path), f"cannot use the directory: {e.strerror or e}") from None
    if not stat.S_ISDIR(st.st_mode):
        raise OutputError(os.fspath(path), "not a directory")
    if st.st_mode & stat.S_IWOTH and not st.st_mode & stat.S_ISVTX:
        raise OutputError(
            os.fspath(path),
            f"the directory is writable by every user (mode {stat.S_IMODE(st.st_mode):04o}) without the sticky "
            "bit: any user could replace or redirect what fabricscope writes there; refused "
            "(chmod o-w, or chmod +t as /tmp has)",
        )
    return st


def _private(dir_st: os.stat_result) -> bool:
    """Whether only this user (or root) can create, rename or remove names in the directory."""
    return dir_st.st_uid in (0, os.geteuid()) and not dir_st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


def _written_in_place(final: Path, dir_st: os.stat_result) -> bool:
    """Whether ``final`` is a FIFO or a device (or a symlink to one) that this write may open.

    Only in a directory nobody else can change: a symlink or a FIFO another user planted at the
    name is replaced by the rename like any file, never opened.
    """
    try:
        link = final.lstat()
    except FileNotFoundError:
        return False
    if stat.S_ISREG(link.st_mode) or stat.S_ISDIR(link.st_mode) or not _private(dir_st):
        return False
    try:
        kind = final.stat().st_mode  # a symlink's target, in a directory only this user writes
    except OSError:
        return False  # a dangling link: replaced
    return not stat.S_ISREG(kind) and not stat.S_ISDIR(kind)


def _open_in_place(final: Path) -> BinaryIO:
    # O_NONBLOCK: a FIFO without a reader fails at once (ENXIO) instead of waiting for one; once
    # open, writes block again, as a reader expects.
    try:
        fd = os.open(final, os.O_WRONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError as e:
        if e.errno == errno.ENXIO:
            raise OutputError(str(final), "a FIFO that no process reads: nothing written") from None
        raise OutputError(str(final), f"cannot open for writing: {e.strerror or e}") from None
    flags = fcntl.fcntl(fd, fcntl.F_GETFL)
    fcntl.fcntl(fd, fcntl.F_SETFL, flags & ~os.O_NONBLOCK)
    return os.fdopen(fd, "wb")


def _default_mode() -> int:
    """0o666 less the process umask: what ``open(..., "w")`` would have created."""
    try:
        with Path("/proc/self/status").open() as f:
            for line in f:
                if line.startswith("Umask:"):
                    return 0o666 & ~int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return 0o666 & ~mask


@contextlib.contextmanager
def atomic_file(
    target: str | os.PathLike[str], *, mode: int | None = None, staging: Path | None = None
) -> Iterator[BinaryIO]:
    """Yield a binary file to write; on success it is fsynced and renamed onto ``target``.

    Args:
        target: The final path.
        mode: File mode for the result (e.g. ``0o600`` for state files); default ``0o666`` less
            the umask, as a plain ``open`` gives.
        staging: Directory for the temporary file (same filesystem as ``target``); default: next
            to ``target`` with a hidden name, so directory globs like ``*.parquet`` never match it.

    Yields:
        The open temporary file (or the FIFO or device itself, see the module docstring).

    Raises:
        OutputError: The directory is refused (:func:`check_directory`), a FIFO has no reader, or
            the file cannot be created, written or renamed; names the path.

    Example:
        >>> import tempfile, pathlib
        >>> d = pathlib.Path(tempfile.mkdtemp())
        >>> with atomic_file(d / "x.txt") as f:
        ...     _ = f.write(b"hello")
        >>> (d / "x.txt").read_text()
        'hello'
    """
    final = Path(target)
    try:
        final.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise OutputError(str(final.parent), f"cannot create the directory: {e.strerror or e}") from None
    dir_st = check_directory(final.parent)
    if _written_in_place(final, dir_st):
        # Nothing to tear in a pipe or a device, and a rename would replace the node itself.
        with _open_in_place(final) as out:
            yield out
        return
    where = staging if staging is not None else final.parent
    if staging is not None:
        try:
            staging.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise OutputError(str(staging), f"cannot create the directory: {e.strerror or e}") from None
        check_directory(staging)
    try:
        fd, name = tempfile.mkstemp(prefix=f".{final.name}.", suffix=".tmp", dir=where)
    except OSError as e:
        raise OutputError(str(final), f"cannot create a temporary file in {where}: {e.strerror or e}") from None
    tmp = Path(name)
    try:
        with os.fdopen(fd, "wb") as out:
            os.fchmod(out.fileno(), _default_mode() if mode is None else mode)
            yield out
            out.flush()
            os.fsync(out.fileno())
        try:
            tmp.replace(final)
            fsync_dir(final.parent)
        except OSError as e:
            raise OutputError(str(final), f"cannot replace: {e.strerror or e}") from None
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()


def write_bytes(target: str | os.PathLike[str], data: bytes, *, mode: int | None = None) -> None:
    """Atomically replace ``target`` with ``data`` (see :func:`atomic_file`).

    Example:
        >>> import tempfile, pathlib
        >>> p = pathlib.Path(tempfile.mkdtemp()) / "b"
        >>> write_bytes(p, b"1")
        >>> p.read_bytes()
        b'1'
    """
    with atomic_file(target, mode=mode) as out:
        try:
            out.write(data)
        except OSError as e:
            raise OutputError(os.fspath(target), f"cannot write: {e.strerror or e}") from None


def write_text(target: str | os.PathLike[str], text: str, *, mode: int | None = None) -> None:
    r"""Atomically replace ``target`` with ``text`` (UTF-8; see :func:`atomic_file`).

    Example:
        >>> import tempfile, pathlib
        >>> p = pathlib.Path(tempfile.mkdtemp()) / "t"
        >>> write_text(p, "ok\\n")
        >>> p.read_text()
        'ok\\n'
    """
    write_bytes(target, text.encode("utf-8"), mode=mode)


def sink_parquet(
    target: str | os.PathLike[str],
    lf: pl.LazyFrame,
    *,
    staging: Path | None = None,
    row_group_size: int | None = None,
) -> None:
    """Atomically replace ``target`` with ``lf`` as zstd Parquet, streamed (see :func:`atomic_file`).

    Example:
        >>> import tempfile, pathlib, polars as pl
        >>> p = pathlib.Path(tempfile.mkdtemp()) / "f.parquet"
        >>> sink_parquet(p, pl.LazyFrame({"a": [1, 2]}))
        >>> pl.read_parquet(p)["a"].to_list()
        [1, 2]
    """
    with atomic_file(target, staging=staging) as out:
        try:
            lf.sink_parquet(out, compression="zstd", row_group_size=row_group_size)
        except (OSError, pl.exceptions.PolarsError) as e:
            raise OutputError(os.fspath(target), f"cannot write: {e}") from None


def write_parquet(
    target: str | os.PathLike[str],
    df: pl.DataFrame,
    *,
    mode: int | None = None,
    staging: Path | None = None,
    before_rename: Callable[[], None] | None = None,
    row_group_size: int | None = None,
) -> None:
    """Atomically replace ``target`` with ``df`` as zstd Parquet (see :func:`atomic_file`).

    Args:
        target: The final path.
        df: The frame.
        mode: File mode for the result.
        staging: Directory for the temporary file (see :func:`atomic_file`).
        before_rename: Called after the data is written and before the rename (crash tests).
        row_group_size: Rows per row group (None: Polars' default).

    Example:
        >>> import tempfile, pathlib, polars as pl
        >>> p = pathlib.Path(tempfile.mkdtemp()) / "f.parquet"
        >>> write_parquet(p, pl.DataFrame({"a": [1]}))
        >>> pl.read_parquet(p)["a"].to_list()
        [1]
    """
    with atomic_file(target, mode=mode, staging=staging) as out:
        try:
            df.write_parquet(out, compression="zstd", row_group_size=row_group_size)
        except OSError as e:
            raise OutputError(os.fspath(target), f"cannot write: {e.strerror or e}") from None
        if before_rename is not None:
            before_rename()
