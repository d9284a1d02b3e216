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
6. Applies retention and compacts small part files; returns the Nagios line; writes ``--json`` and
   ``--textfile``.

One module per concern: :mod:`.lock`, :mod:`.recovery`, :mod:`.state`, :mod:`.manifest` (what to
read), :mod:`.directives` (what an appended tail needs), :mod:`.reading`, :mod:`.lifecycle`,
:mod:`.outputs`, :mod:`.retention` and :mod:`.run` (the run itself). The command line is
:mod:`fabricscope.doors.cli.cron`.
"""

from fabricscope.doors.cron.errors import LockedError, StateError
from fabricscope.doors.cron.fault_lifecycle import active_findings
from fabricscope.doors.cron.options import EXIT_CRITICAL, EXIT_OK, EXIT_UNKNOWN, EXIT_WARNING, CronOptions, CronResult
from fabricscope.doors.cron.outputs import status_line
from fabricscope.doors.cron.run import run_cron

__all__ = [
    "EXIT_CRITICAL",
    "EXIT_OK",
    "EXIT_UNKNOWN",
    "EXIT_WARNING",
    "CronOptions",
    "CronResult",
    "LockedError",
    "StateError",
    "active_findings",
    "run_cron",
    "status_line",
]
