"""A damaged state or history file: an UNKNOWN naming that file and the recovery, never a traceback.

``state.json`` is JSON a person or a tool may edit: valid JSON holding the wrong types gets the
same reset hint as unparsable JSON. A Parquet file cut short (a full disk, an interrupted copy) is
named by its path, whether it lies in the state directory or in the history.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parent.parent
# Simulated ethtool -S logs of one RoCE host with a pause storm (sample_traces/README.md).
ETHTOOL = REPO / "sample_traces" / "ethtool"
RESET_HINT = "recover with `fabricscope cron ... --reset-state`"


def fabricscope(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "fabricscope", *args], capture_output=True, text=True, timeout=300, cwd=REPO
    )


@pytest.fixture
def ran(tmp_path: Path) -> Path:
    """A state and a history after one successful run (``tmp_path/state``, ``tmp_path/hist``)."""
    shutil.copytree(ETHTOOL, tmp_path / "in")
    r = cron(tmp_path)
    assert r.returncode == 2, r.stdout + r.stderr
    return tmp_path


def cron(tmp: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    state, hist = str(tmp / "state"), str(tmp / "hist")
    return fabricscope("cron", "--inputs", str(tmp / "in"), "--state", state, "--history", hist, *extra)


def cut_in_half(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _first_file(doc: dict[str, Any]) -> dict[str, Any]:
    return doc["files"][sorted(doc["files"])[0]]


# name -> (edit of the document, what the message names)
CONFUSIONS = {
    "entry-not-object": (lambda d: d["files"].update({sorted(d["files"])[0]: 5}), "expected an object, found 5"),
    "size-a-string": (lambda d: _first_file(d).update(size="big"), "`size`: expected an integer, found 'big'"),
    "offset-a-bool": (lambda d: _first_file(d).update(offset=True), "`offset`: expected an integer, found True"),
    "context-of-numbers": (lambda d: _first_file(d).update(context=[1, 2]), "`context`: expected a list of strings"),
    "run-id-a-number": (lambda d: d.update(last_run_id=7), "`last_run_id`: expected a string or null, found 7"),
    "series-outside": (
        lambda d: d.update(series_file="../elsewhere.parquet"),
        "`series_file`: expected a file name in the state directory, found '../elsewhere.parquet'",
    ),
}


@pytest.mark.parametrize("name", sorted(CONFUSIONS))
def test_a_type_confused_state_gets_the_reset_hint(ran: Path, name: str) -> None:
    edit, named = CONFUSIONS[name]
    p = ran / "state" / "state.json"
    doc = json.loads(p.read_text())
    edit(doc)
    p.write_text(json.dumps(doc))
    r = cron(ran)
    assert r.returncode == 3, r.stdout + r.stderr
    assert r.stdout.startswith("FABRICSCOPE UNKNOWN - state directory ") and len(r.stdout.splitlines()) == 1
    assert "is corrupt (state.json: " in r.stdout
    assert named in r.stdout and RESET_HINT in r.stdout
    assert "Traceback" not in r.stderr
    # The hint works: the state is rebuilt from the history.
    again = cron(ran, "--reset-state")
    assert again.returncode == 2, again.stdout + again.stderr
    assert again.stdout.startswith("FABRICSCOPE CRITICAL")


def test_a_type_confused_journal_gets_the_reset_hint(ran: Path) -> None:
    # pending.json is the journal of a run that crashed: its parts are undone by the next run.
    (ran / "state" / "pending.json").write_text(json.dumps({"run_id": "x", "parts": [1, 2], "backups": {}}))
    r = cron(ran)
    assert r.returncode == 3, r.stdout + r.stderr
    assert "is corrupt (pending.json: `parts`: expected a list of strings, found [1, 2])" in r.stdout
    assert RESET_HINT in r.stdout and "Traceback" not in r.stderr


def test_a_truncated_state_parquet_is_named(ran: Path) -> None:
    (series,) = (ran / "state").glob("series-*.parquet")
    cut_in_half(series)
    r = cron(ran)
    assert r.returncode == 3, r.stdout + r.stderr
    assert f"is corrupt ({series.name}: " in r.stdout and RESET_HINT in r.stdout
    assert "state.json" not in r.stdout


def test_a_truncated_history_parquet_is_named_by_its_path(ran: Path) -> None:
    (part,) = (ran / "hist" / "samples").rglob("*.parquet")
    size = part.stat().st_size
    cut_in_half(part)
    expected = f"{part}: not a complete Parquet file ({size // 2} bytes, no Parquet footer"
    # --reset-state reads the whole history: the run names the part, not state.json, and no traceback.
    r = cron(ran, "--reset-state")
    assert r.returncode == 3, r.stdout + r.stderr
    assert r.stdout.startswith("FABRICSCOPE UNKNOWN - ") and expected in r.stdout
    assert "state.json" not in r.stdout and "Traceback" not in r.stderr
    # The report of the history says the same.
    report = fabricscope("report", str(ran / "hist"), "-o", str(ran / "report.html"), "-q")
    assert report.returncode == 3, report.stdout + report.stderr
    assert expected in report.stderr and "Traceback" not in report.stderr
    # Moved out of the history as the message says, the next run goes on.
    part.rename(ran / "cut.parquet")
    again = cron(ran, "--reset-state")
    assert again.returncode == 2, again.stdout + again.stderr
