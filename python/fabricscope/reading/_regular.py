"""Opening an input for reading without ever blocking on it: regular files only.

A FIFO's open waits for a writer (for ever, when none comes) and opening a device can have
effects; a file found in a watched directory may have been replaced by either since it was listed.
:func:`open_regular` checks the type before the open and again on the open file, whose open never
waits (``O_NONBLOCK``, which changes nothing for a regular file). The Rust core reads the same way
(``regular_files_only``).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import BinaryIO

from fabricscope.exceptions import InputError

__all__ = ["input_error", "not_regular", "open_regular"]


def not_regular(mode: int) -> str | None:
    """What a file of ``mode`` is, in the Rust reader's words, when it is not a regular file.

    Example:
        >>> import stat
        >>> not_regular(stat.S_IFIFO | 0o644), not_regular(stat.S_IFREG | 0o644)
        ('a FIFO', None)
    """
    if stat.S_ISREG(mode):
        return None
    for test, what in (
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISDIR, "a directory"),
    ):
        if test(mode):
            return what
    return "not a regular file"


def input_error(path: str, message: str) -> InputError:
    """An :class:`~fabricscope.exceptions.InputError` naming ``path`` (once) and what went wrong.

    Example:
        >>> str(input_error("x.prom", "cannot open: Permission denied"))
        'x.prom: cannot open: Permission denied'
    """
    if message.startswith(f"{path}: "):
        message = message[len(path) + 2 :]
    e = InputError(f"{path}: {message}")
    e.path, e.line, e.byte_offset, e.expected, e.found = path, None, None, "a readable regular file", message
    return e


def open_regular(path: str | os.PathLike[str]) -> BinaryIO:
    """Open ``path`` for binary reading if it is a regular file.

    Raises:
        InputError: It cannot be opened, or it is a FIFO, a socket, a device or a directory
            (named in the message, which names the file).

    Example:
        >>> with open_regular("sample_traces/ethtool/roce01-eth2.log") as f:
        ...     f.read(2)
        b'# '
    """
    name = os.fspath(path)
    try:
        what = not_regular(Path(name).stat().st_mode)
        if what is None:
            fd = os.open(name, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY)
    except OSError as e:
        raise input_error(name, f"cannot open: {e.strerror or e}") from None
    if what is None:
        what = not_regular(os.fstat(fd).st_mode)
        if what is None:
            return os.fdopen(fd, "rb")
        os.close(fd)
    raise input_error(name, f"not a regular file ({what}): not read")
