"""Shared helpers for the dashboard tests: the app, its data layer, and page runs."""

from __future__ import annotations

import importlib.util
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import pytest

# A failure, never a skip: without the dashboard extra these tests must not pass unseen.
if importlib.util.find_spec("streamlit") is None:
    pytest.fail("the dashboard tests need the dashboard extra: pip install '.[dashboard]'", pytrace=False)

ROOT = Path(__file__).resolve().parents[2]
APP = ROOT / "dashboards" / "app.py"
SAMPLES = ROOT / "sample_traces"

# The pages import the data layer as `data` (Streamlit puts the app's folder on sys.path); the
# tests import the same module so both share one set of caches.
if str(APP.parent) not in sys.path:
    sys.path.insert(0, str(APP.parent))


@pytest.fixture(autouse=True)
def _data_dir(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FABRICSCOPE_DATA", str(SAMPLES))
    monkeypatch.delenv("FABRICSCOPE_REMOTE_FILE", raising=False)


#: Scenarios the test Prometheus holds: two, so that label matchers have something to pick out.
SERVER_SCENARIOS = ("pfc-storm", "link-flap")


@pytest.fixture(scope="session")
def prometheus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real Prometheus (Debian's) serving the scenarios above; yields its base URL.

    Fails, never skips, without the binaries (CI installs the ``prometheus`` package).
    """
    from tests.prometheus_server import serve_files

    files = [f for s in SERVER_SCENARIOS for f in sorted((SAMPLES / "scenarios" / s / "prometheus").glob("*.prom"))]
    with serve_files(files, tmp_path_factory.mktemp("prometheus")) as url:
        yield url


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _hangup_by_default() -> None:
    # A run started under nohup (or by a service that ignores SIGHUP) passes that on to every
    # descendant: the server then outlives a hangup, as nohup asks. The tests run it as a terminal does.
    signal.signal(signal.SIGHUP, signal.SIG_DFL)


@contextmanager
def running_dashboard(
    log: Path, *extra: str, command: Sequence[str] | None = None, data: Sequence[str] | None = None
) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """`fabricscope dashboard --data sample_traces/` on a free port; yields (url, process) once healthy.

    ``data`` replaces ``--data sample_traces/`` (``["--prometheus", URL]`` for a server only).

    The server runs in its own session so that the test can signal it alone; it is killed (with
    its whole process group) when the block ends, whatever happened.
    """
    port = free_port()
    cmd = [
        *(command or [sys.executable, "-m", "fabricscope"]),
        "dashboard",
        *(["--data", str(SAMPLES)] if data is None else data),
        "--port",
        str(port),
        *extra,
    ]
    url = f"http://127.0.0.1:{port}"
    with log.open("wb") as log_fh:
        proc = subprocess.Popen(
            cmd, stdout=log_fh, stderr=subprocess.STDOUT, start_new_session=True, preexec_fn=_hangup_by_default
        )
        try:
            deadline = time.monotonic() + 90
            while True:
                try:
                    with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as r:
                        if r.read() == b"ok":
                            break
                except OSError:
                    pass
                if proc.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"dashboard did not start (exit {proc.poll()}):\n{log.read_text(errors='replace')}")
                time.sleep(0.3)
            yield url, proc
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()
