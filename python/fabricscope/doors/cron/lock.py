"""Exclusive locks: one run at a time per state directory and per history directory."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import stat
import time as _time
from collections.abc import Iterator
from pathlib import Path

from fabricscope.doors.cron.errors import LockedError

#: The history directory's lock file: two runs with different ``--state`` but the same
#: ``--history`` would otherwise write the same partitions and runs table at once.
HISTORY_LOCK = ".cron.lock"


def history_lock(history: Path, wait_s: float) -> contextlib.AbstractContextManager[None]:
    """Hold ``HISTORY/.cron.lock`` for the block (see :func:`state_lock`)."""
    return state_lock(history, wait_s, name=HISTORY_LOCK)


def _open_lock_file(path: Path) -> int:
    """Open (or create) the lock file, never through a symlink and never a FIFO or a device.

    The lock file is truncated and written (the holder's pid): opened through a link another user
    planted (the history directory may be shared), that would truncate the file the link names. A
    link or anything but a regular file at the name is removed and the file created anew; no run
    holds a lock through it, since no run ever opened it.
    """
    flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY
    for _ in range(2):
        try:
            fd = os.open(path, flags, 0o600)
        except OSError as e:
            if e.errno != errno.ELOOP:
                raise
        else:
            if stat.S_ISREG(os.fstat(fd).st_mode):
                return fd
            os.close(fd)
        try:
            path.unlink()
        except OSError as e:
            raise LockedError(f"{path} is not a regular file and cannot be removed ({e.strerror or e})") from None
    raise LockedError(f"{path} keeps being replaced by something other than a regular file")


@contextlib.contextmanager
def state_lock(state: Path, wait_s: float, *, name: str = "lock") -> Iterator[None]:
    """Hold ``STATE/lock`` (``fcntl.flock``) for the block; wait up to ``wait_s`` or raise ``LockedError``."""
    state.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd = _open_lock_file(state / name)
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
                        f"another fabricscope cron run (pid {holder}) holds {state / name}; "
                        "this run did nothing (use --wait SECONDS to wait for it)"
                    ) from None
                _time.sleep(0.05)
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        yield
    finally:
        os.close(fd)  # closing releases the flock
