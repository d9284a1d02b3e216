"""A hostile file system around cron, analyze and parse: names planted where fabricscope writes,
FIFOs where it reads, directories others may write, inputs that cannot be read.

The attacker is another user who can write a directory fabricscope reads or writes (a textfile
collector directory shared with a group, a watched log directory); fabricscope may run as root.
Every run goes through the CLI. The test named ``unreadable`` needs a process that file modes
bind: as root it skips, and ``.ci/run`` runs it again without root's file capabilities.
"""

from __future__ import annotations

import json
import os
import stat
import threading
from collections.abc import Iterator
from pathlib import Path

import fabricscope
import polars as pl
import pytest

from tests.cli_runner import run_cli
from tests.hostile.test_hostile import _reads_any_file

# Healthy counters of one port, two scrapes 15 s apart: a run over them alone is OK.
_SERIES = 'node_infiniband_port_data_received_bytes_total{device="mlx5_0",instance="gpu01:9100",port="1"}'
HEALTHY = f"{_SERIES} 1000 1764686822000\n{_SERIES} 2000 1764686837000\n"
PRECIOUS = "what the attacker wants overwritten\n"


def _inputs(tmp_path: Path) -> Path:
    inp = tmp_path / "in"
    inp.mkdir()
    (inp / "ok.prom").write_text(HEALTHY)
    return inp


def _cron(tmp_path: Path, inp: Path, *extra: str, process: bool = False) -> tuple[int, str, str]:
    args = ["cron", "--inputs", str(inp), "--state", str(tmp_path / "state"), "--history", str(tmp_path / "hist")]
    return run_cli([*args, *extra], process=process, timeout=120)


def _shared_dir(path: Path) -> Path:
    """A directory a group shares (mode 0775): its other members may plant names in it."""
    path.mkdir()
    path.chmod(0o775)
    return path


# --- writes ------------------------------------------------------------------------------------


def test_symlinks_planted_at_temporary_and_final_names_are_never_followed(tmp_path: Path) -> None:
    # A writer that named its temporary file after its pid (`.NAME.PID.tmp`, `OUT.tmp`) followed a
    # link planted there and wrote the victim; the outputs' own names are links too.
    inp = _inputs(tmp_path)
    out = _shared_dir(tmp_path / "out")
    victims = []

    def plant(name: str) -> None:
        victim = tmp_path / f"victim-{len(victims)}"
        victim.write_text(PRECIOUS)
        victims.append(victim)
        (out / name).symlink_to(victim)

    pid = os.getpid()  # the CLI runs in this process
    for name in ("fabricscope.prom", "last.json", "findings.json", "samples.parquet"):
        plant(f".{name}.{pid}.tmp")
    plant("samples.parquet.tmp")
    plant("fabricscope.prom")
    plant("last.json")
    hist = tmp_path / "hist"
    hist.mkdir()
    (hist / f".runs.parquet.{pid}.tmp").symlink_to(victims[0])
    # The history's lock file is truncated and written with the holder's pid.
    (hist / ".cron.lock").symlink_to(victims[1])

    code, stdout, stderr = _cron(
        tmp_path, inp, "--textfile", str(out / "fabricscope.prom"), "--json", str(out / "last.json")
    )
    assert code == 0, stdout + stderr
    code, _, stderr = run_cli(["analyze", str(inp), "--json", str(out / "findings.json")], process=False)
    assert code == 0, stderr
    code, _, stderr = run_cli(["parse", str(inp), "-o", str(out / "samples.parquet")], process=False)
    assert code == 0, stderr

    assert [v.read_text() for v in victims] == [PRECIOUS] * len(victims)
    assert (hist / ".cron.lock").read_text() == f"{pid}\n" and not (hist / ".cron.lock").is_symlink()
    for name in ("fabricscope.prom", "last.json", "findings.json", "samples.parquet"):
        assert stat.S_ISREG((out / name).lstat().st_mode), name  # the planted link replaced, not followed
    assert "fabricscope_" in (out / "fabricscope.prom").read_text()
    assert json.loads((out / "last.json").read_text())["status"] == "ok"
    assert json.loads((out / "findings.json").read_text())["status"] == "ok"
    assert pl.read_parquet(out / "samples.parquet").height == 2
    # No temporary file of ours is left behind; the planted names are where they were.
    assert sorted(p.name for p in out.iterdir() if not p.is_symlink()) == [
        "fabricscope.prom",
        "findings.json",
        "last.json",
        "samples.entities.parquet",
        "samples.parquet",
    ]


def test_a_textfile_linked_to_a_fifo_never_blocks_cron(tmp_path: Path) -> None:
    # In its own process: a run blocked on the FIFO for ever fails by the timeout.
    inp = _inputs(tmp_path)
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    # A directory a group shares: the link another member planted is replaced, never opened.
    shared = _shared_dir(tmp_path / "shared")
    (shared / "fabricscope.prom").symlink_to(fifo)
    code, stdout, stderr = _cron(tmp_path, inp, "--textfile", str(shared / "fabricscope.prom"), process=True)
    assert code == 0, stdout + stderr
    assert stat.S_ISREG((shared / "fabricscope.prom").lstat().st_mode)
    assert "fabricscope_" in (shared / "fabricscope.prom").read_text()
    assert stat.S_ISFIFO(fifo.stat().st_mode)
    # A directory only root writes: the link is root's own choice and is written in place, but a
    # FIFO no process reads is an error at once, not a wait.
    private = tmp_path / "private"
    private.mkdir(mode=0o755)
    (private / "fabricscope.prom").symlink_to(fifo)
    code, stdout, stderr = _cron(tmp_path, inp, "--textfile", str(private / "fabricscope.prom"), process=True)
    assert code == 3, stdout + stderr
    assert stdout.startswith(
        f"FABRICSCOPE UNKNOWN - cannot write: {private / 'fabricscope.prom'}: a FIFO that no process reads"
    )
    assert (private / "fabricscope.prom").is_symlink()


def test_a_world_writable_directory_without_the_sticky_bit_is_refused(tmp_path: Path) -> None:
    inp = _inputs(tmp_path)
    open_dir = tmp_path / "open"
    open_dir.mkdir()
    open_dir.chmod(0o777)
    refusal = (
        f"{open_dir}: the directory is writable by every user (mode 0777) without the sticky bit: any user "
        "could replace or redirect what fabricscope writes there; refused"
    )
    code, stdout, _ = _cron(tmp_path, inp, "--textfile", str(open_dir / "fabricscope.prom"))
    assert code == 3
    assert stdout.startswith(f"FABRICSCOPE UNKNOWN - cannot write: {refusal}")
    assert not (tmp_path / "state").exists()  # refused before anything was read or stored
    code, stdout, stderr = run_cli(["analyze", str(inp), "--json", str(open_dir / "f.json")], process=False)
    assert code == 3
    assert f"UNKNOWN - fabricscope cannot write --json: {refusal}" in stderr
    code, _, stderr = run_cli(["parse", str(inp), "-o", str(open_dir / "s.parquet")], process=False)
    assert code == 3
    assert f"fabricscope: cannot write output: {refusal}" in stderr
    assert list(open_dir.iterdir()) == []
    # With the sticky bit (as /tmp has) nobody can rename or remove another user's file: written.
    open_dir.chmod(0o1777)
    code, stdout, stderr = _cron(tmp_path, inp, "--textfile", str(open_dir / "fabricscope.prom"))
    assert code == 0, stdout + stderr
    assert "fabricscope_" in (open_dir / "fabricscope.prom").read_text()


@pytest.mark.parametrize("mode", [0o777, 0o770, 0o1777])
def test_a_state_directory_other_users_can_write_is_refused(tmp_path: Path, mode: int) -> None:
    inp = _inputs(tmp_path)
    state = tmp_path / "state"
    state.mkdir()
    state.chmod(mode)
    code, stdout, _ = _cron(tmp_path, inp)
    assert code == 3
    assert stdout.startswith(
        f"FABRICSCOPE UNKNOWN - the state directory {state} is writable by other users (mode {mode:04o}): "
        f"they could forge its manifest and journal; refused (chmod 700 {state})"
    )
    assert list(state.iterdir()) == [] and not (tmp_path / "hist").exists()
    state.chmod(0o700)
    code, stdout, _ = _cron(tmp_path, inp)
    assert code == 0 and "samples=2 files=1" in stdout


# --- reads -------------------------------------------------------------------------------------


@pytest.fixture
def fifo_opened(tmp_path: Path) -> Iterator[tuple[Path, threading.Event]]:
    """A FIFO, and an event set when any process opens it for reading.

    A reader's open waits for a writer: the watcher opens the FIFO for writing (non-blocking,
    which succeeds only once a reader has it open or waits for it), records that, and closes
    it, so the waiting reader sees an empty input instead of hanging the test.
    """
    fifo = tmp_path / "in" / "pipe.prom"
    fifo.parent.mkdir(exist_ok=True)
    os.mkfifo(fifo)
    opened, stop = threading.Event(), threading.Event()

    def watch() -> None:
        while not stop.wait(0.01):
            try:
                fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
            except OSError:
                continue  # ENXIO: nobody reads it
            opened.set()
            os.close(fd)

    t = threading.Thread(target=watch, daemon=True)
    t.start()
    yield fifo, opened
    stop.set()
    t.join()


def test_a_fifo_in_a_watched_directory_is_skipped_never_opened(
    tmp_path: Path, fifo_opened: tuple[Path, threading.Event]
) -> None:
    fifo, opened = fifo_opened
    inp = fifo.parent
    (inp / "ok.prom").write_text(HEALTHY)
    problem = f"{fifo}: not a regular file (a FIFO): not read"
    for run in (1, 2):  # the lock was released: a second run runs
        code, stdout, stderr = _cron(tmp_path, inp, "--json", str(tmp_path / "last.json"))
        assert code == 0, stdout + stderr
        doc = json.loads((tmp_path / "last.json").read_text())
        assert doc["run"]["skipped"] == [{"path": str(fifo), "reason": problem}]  # listed in every run
        assert doc["run"]["samples"] == (2 if run == 1 else 0)
        assert [i["path"] for i in doc["inputs"]] == ([str(inp / "ok.prom")] if run == 1 else [])
    code, stdout, stderr = run_cli(["analyze", str(inp), "--verbose"], process=False)
    assert code == 0, stderr
    assert problem in stdout
    code, stdout, stderr = run_cli(["parse", str(inp), "-o", str(tmp_path / "s.parquet")], process=False)
    assert code == 0, stderr
    assert problem in stdout
    assert pl.read_parquet(tmp_path / "s.parquet").height == 2
    assert not opened.is_set()


def test_a_fifo_named_with_regular_files_only_is_a_warning_not_a_wait(
    fifo_opened: tuple[Path, threading.Event],
) -> None:
    # What cron's reader does with a watched file replaced by a FIFO after it was listed.
    fifo, opened = fifo_opened
    it = fabricscope.scan([fifo], regular_files_only=True)
    assert list(it) == []
    [report] = it.reports or []
    assert report.path == str(fifo) and report.warnings == ["not a regular file (a FIFO): not read"]
    assert not report.failed and not opened.is_set()


def _healthy_run_with_one_bad_input(tmp_path: Path, bad: Path, error: str, files: int) -> None:
    """Two cron runs over a healthy input and ``bad``; ``files``: the inputs handed to the reader
    (one the reader itself fails on counts, one that cannot even be opened does not)."""
    inp = bad.parent
    (inp / "ok.prom").write_text(HEALTHY)
    out = tmp_path / "out"
    outputs = ("--json", str(out / "last.json"), "--textfile", str(out / "fabricscope.prom"))
    code, stdout, stderr = _cron(tmp_path, inp, *outputs)
    # The readable input is stored and judged (healthy); the unreadable one makes the run UNKNOWN.
    assert code == 3, stdout + stderr
    assert stdout == (
        "FABRICSCOPE UNKNOWN - 1 input(s) could not be read; no active faults"
        f" | samples=2 files={files} duplicates_dropped=0\n"
    )
    doc = json.loads((out / "last.json").read_text())
    assert doc["status"] == "unknown" and doc["run"]["samples"] == 2
    by_path = {i["path"]: i for i in doc["inputs"]}
    assert by_path[str(inp / "ok.prom")]["records"] == 2
    assert error in by_path[str(bad)]["error"]
    assert "fabricscope_" in (out / "fabricscope.prom").read_text()
    assert not (tmp_path / "state" / "pending.json").exists()
    # Its manifest entry did not move: the next run tries it again (and fails again).
    code, stdout, _ = _cron(tmp_path, inp, *outputs)
    assert code == 3
    assert stdout == (
        "FABRICSCOPE UNKNOWN - 1 input(s) could not be read; no active faults"
        f" | samples=0 files={files - 1} duplicates_dropped=0\n"
    )


# .ci/run runs this without the capabilities that let root read any file (see test_hostile.py).
@pytest.mark.skipif(_reads_any_file(), reason="this process reads files whatever their mode (root)")
def test_an_unreadable_input_is_one_failed_input_of_a_cron_run(tmp_path: Path) -> None:
    inp = tmp_path / "in"
    inp.mkdir()
    secret = inp / "secret.prom"
    secret.write_text(HEALTHY.replace("gpu01", "gpu02"))
    secret.chmod(0)
    try:
        _healthy_run_with_one_bad_input(tmp_path, secret, f"{secret}: cannot open: Permission denied", files=1)
    finally:
        secret.chmod(0o600)
    # Readable again: read from its start, as the new file it still is to the manifest.
    code, stdout, _ = _cron(tmp_path, inp)
    assert code == 0 and "samples=2 files=1" in stdout


def test_an_input_failing_with_eio_is_one_failed_input_of_a_cron_run(tmp_path: Path) -> None:
    # /proc/self/mem is a regular file whose read at offset 0 fails with EIO, for root too.
    inp = tmp_path / "in"
    inp.mkdir()
    link = inp / "mem.prom"
    link.symlink_to("/proc/self/mem")
    _healthy_run_with_one_bad_input(tmp_path, link, "Input/output error", files=2)
