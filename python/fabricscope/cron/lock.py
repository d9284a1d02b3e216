"""Exclusive locks: one run at a time per state directory and per history directory."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import time as _time
from collections.abc import Iterator
from pathlib import Path

from fabricscope.cron.errors import LockedError

#: The history directory's lock file: two runs with different ``--state`` but the same
#: ``--history`` would otherwise write the same partitions and runs table at once.
HISTORY_LOCK = ".cron.lock"


def history_lock(history: Path, wait_s: float) -> contextlib.AbstractContextManager[None]:
    """Hold ``HISTORY/.cron.lock`` for the block (see :func:`state_lock`)."""
    return state_lock(history, wait_s, name=HISTORY_LOCK)


@contextlib.contextmanager
def state_lock(state: Path, wait_s: float, *, name: str = "lock") -> Iterator[None]:
    """Hold ``STATE/lock`` (``fcntl.flock``) for the block; wait up to ``wait_s`` or raise ``LockedError``."""
    state.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd = os.open(state / name, os.O_RDWR | os.O_CREAT, 0o600)
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
