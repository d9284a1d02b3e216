"""``fabricscope cron --prometheus``: late samples, bad-record counts and the history lock.

The server is :class:`tests.hostile_http.QueryApi`, a real local HTTP server whose samples the
test changes between runs (a sample added after a run reached the server late).
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path

from tests.hostile_http import QueryApi
from tests.prometheus_server import Endpoint

FABRICSCOPE = Path(sys.executable).with_name("fabricscope")
METRIC = "node_infiniband_port_data_received_bytes_total"
LABELS = {"device": "mlx5_0", "port": "1", "instance": "gpu1:9100"}


def cron(url: str, state: Path, history: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(FABRICSCOPE), "cron", "--prometheus", url, "--state", str(state), "--history", str(history), *extra],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _document(run: subprocess.CompletedProcess[str]) -> dict[str, object]:
    assert run.returncode in (0, 1, 2), run.stdout + run.stderr
    return dict(json.loads(run.stdout))


def test_a_sample_that_reaches_the_server_late_is_pulled(tmp_path: Path) -> None:
    api = QueryApi(METRIC, LABELS)
    now_ms = int(time.time() * 1000)
    api.samples = [(now_ms - 60_000, "1000"), (now_ms - 30_000, "2000")]
    state, history = tmp_path / "state", tmp_path / "history"
    with Endpoint(api) as ep:
        first = _document(cron(ep.url, state, history, "--json", "-"))
        assert first["run"]["samples"] == 2  # type: ignore[index]
        # Stamped before the first run's watermark, stored by the server only after that run.
        api.samples.append((now_ms - 1_000, "3000"))
        second = _document(cron(ep.url, state, history, "--json", "-"))
    run = second["run"]
    # The lookback re-pulls the two stored samples (dropped as duplicates) and the late one.
    assert run["samples"] == 1, run  # type: ignore[index]
    assert run["duplicates_dropped"] == 2, run  # type: ignore[index]
    # Without the lookback the late sample is never pulled.
    api2 = QueryApi(METRIC, LABELS)
    api2.samples = [(now_ms - 60_000, "1000"), (now_ms - 30_000, "2000")]
    with Endpoint(api2) as ep:
        _document(cron(ep.url, tmp_path / "s2", tmp_path / "h2", "--json", "-", "--server-lookback", "0"))
        api2.samples.append((now_ms - 1_000, "3000"))
        lost = _document(cron(ep.url, tmp_path / "s2", tmp_path / "h2", "--json", "-", "--server-lookback", "0"))
    assert lost["run"]["samples"] == 0  # type: ignore[index]


def test_a_pull_reports_its_real_bad_record_count(tmp_path: Path) -> None:
    api = QueryApi(METRIC, LABELS)
    now_ms = int(time.time() * 1000)
    api.samples = [(now_ms - 60_000, "1000"), (now_ms - 40_000, "not-a-number"), (now_ms - 20_000, "3000")]
    with Endpoint(api) as ep:
        doc = _document(cron(ep.url, tmp_path / "state", tmp_path / "history", "--json", "-"))
    (server,) = [i for i in doc["inputs"] if i["path"] == ep.url]  # type: ignore[attr-defined]
    assert server["records"] == 2 and server["rejected"] == 1, server


def test_two_runs_sharing_a_history_are_kept_apart(tmp_path: Path) -> None:
    api = QueryApi(METRIC, LABELS)
    now_ms = int(time.time() * 1000)
    api.samples = [(now_ms - 60_000, "1000"), (now_ms - 30_000, "2000")]
    api.gate = threading.Event()
    history = tmp_path / "history"
    with Endpoint(api) as ep:
        results: list[subprocess.CompletedProcess[str]] = []
        first = threading.Thread(target=lambda: results.append(cron(ep.url, tmp_path / "a", history)))
        first.start()
        try:
            # The first run holds its locks while the server holds its query.
            assert api.arrived.wait(60)
            second = cron(ep.url, tmp_path / "b", history)
        finally:
            api.gate.set()
            first.join(120)
    assert second.returncode == 3, second.stdout + second.stderr
    assert second.stdout.startswith("FABRICSCOPE UNKNOWN - another fabricscope cron run"), second.stdout
    assert str(history) in second.stdout
    assert results and results[0].returncode in (0, 1, 2), results
