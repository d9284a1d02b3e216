"""Crash recovery: undo what a crashed run wrote, roll an interrupted compaction forward."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
from pathlib import Path

from fabricscope import _atomic
from fabricscope.doors.cron.errors import RECOVERY_HINT, StateError


def crash_point(name: str) -> None:
    """Crash tests: ``FABRICSCOPE_CRASH_AT=name`` kills this process with SIGKILL here."""
    if os.environ.get("FABRICSCOPE_CRASH_AT") == name:
        os.kill(os.getpid(), 9)


def recover(state: Path, history: Path, st_run: str | None) -> None:
    """Undo what a crashed run wrote to the history (see the module docstring, step 2)."""
    pending = state / "pending.json"
    shutil.rmtree(history / ".staging", ignore_errors=True)
    shutil.rmtree(state / "work", ignore_errors=True)
    if pending.exists():
        try:
            doc = json.loads(pending.read_text("utf-8"))
            run_id, parts, backups = doc["run_id"], doc["parts"], doc["backups"]
            # Valid JSON may still hold the wrong types: checked before any file is touched.
            if not isinstance(run_id, str):
                raise ValueError(f"`run_id`: expected a string, found {run_id!r}")
            if not isinstance(parts, list) or not all(isinstance(x, str) for x in parts):
                raise ValueError(f"`parts`: expected a list of strings, found {parts!r}")
            if not isinstance(backups, dict) or not all(isinstance(x, bool) for x in backups.values()):
                raise ValueError(f"`backups`: expected an object of true/false, found {backups!r}")
        except (OSError, ValueError, KeyError, TypeError) as e:
            raise StateError(f"state directory {state} is corrupt (pending.json: {e}); {RECOVERY_HINT}") from e
        if run_id != st_run:
            for rel in parts:
                (history / rel).unlink(missing_ok=True)
            for name, had in backups.items():
                backup = state / "rollback" / name
                if had and backup.exists():
                    backup.replace(history / name)
                elif not had:
                    (history / name).unlink(missing_ok=True)
            for d in {(history / rel).parent for rel in parts}:
                if d.exists():
                    _atomic.fsync_dir(d)
            if history.exists():
                _atomic.fsync_dir(history)
        pending.unlink()
        _atomic.fsync_dir(state)
    compaction = state / "compact.json"
    if compaction.exists():
        with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
            doc = json.loads(compaction.read_text("utf-8"))
            # Roll forward once the merged file is in place: its rows are the old parts' rows.
            if (history / doc["merged"]).exists():
                for rel in doc["old"]:
                    (history / rel).unlink(missing_ok=True)
        compaction.unlink(missing_ok=True)


def recover_quiet(state: Path, history: Path) -> None:
    """``--reset-state``: recover what can be recovered and drop the journal whatever it says."""
    with contextlib.suppress(StateError):
        recover(state, history, None)
    (state / "pending.json").unlink(missing_ok=True)
