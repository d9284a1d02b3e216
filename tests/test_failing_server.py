"""A Prometheus server that fails is one failed source, in ``cron`` and ``analyze``: never a lost run.

Every server is a real socket on 127.0.0.1 (:mod:`tests.hostile_http`). A server answering an
error status, one that outlives ``--deadline`` and one reporting an error inside a 200 each leave
cron's files stored and judged, the textfile and ``--json`` written, and the status UNKNOWN
(CRITICAL when a file holds a critical fault), as an unreadable file does; ``analyze`` judges the
files beside it by the same rule.
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import fabricscope
import pytest

from tests.cli_runner import run_cli
from tests.conftest import SAMPLES
from tests.hostile_http import QueryApi, failing_query_api, slow_headers
from tests.prometheus_server import Endpoint

METRIC = "node_infiniband_port_data_received_bytes_total"
# A fabric without faults (OK on its own) and one with a PFC storm (CRITICAL on its own).
BALANCED = SAMPLES / "scenarios" / "balanced" / "prometheus"
PFC = SAMPLES / "scenarios" / "pfc-storm" / "ethtool"

FAILURES = {
    "503": (
        failing_query_api(METRIC, 503, {"status": "error", "errorType": "unavailable", "error": "overloaded"}),
        (),
        "HTTP 503: unavailable: overloaded",
    ),
    "422": (
        failing_query_api(METRIC, 422, {"status": "error", "errorType": "execution", "error": "query timed out"}),
        (),
        "HTTP 422: execution: query timed out",
    ),
    "error inside a 200": (
        failing_query_api(METRIC, 200, {"status": "error", "errorType": "bad_data", "error": "proxy failure"}),
        (),
        'HTTP 200: the answer reports a failure (status "error"): bad_data: proxy failure',
    ),
    "deadline": (slow_headers(0.05, 30.0), ("--deadline", "1"), "the deadline of 1 s passed (--deadline)"),
}


def cron(tmp: Path, inputs: Path, url: str, *extra: str) -> tuple[int, str, str]:
    return run_cli(
        [
            "cron",
            "--inputs",
            str(inputs),
            "--prometheus",
            url,
            "--state",
            str(tmp / "state"),
            "--history",
            str(tmp / "history"),
            "--json",
            str(tmp / "run.json"),
            "--textfile",
            str(tmp / "fabricscope.prom"),
            "--retries",
            "0",
            *extra,
        ],
        process=False,
    )


@pytest.mark.parametrize("failure", list(FAILURES))
def test_a_failing_server_is_one_failed_source(tmp_path: Path, failure: str) -> None:
    handler, extra, expected = FAILURES[failure]
    inputs = tmp_path / "in"
    shutil.copytree(BALANCED, inputs)
    with Endpoint(handler) as ep:
        code, out, err = cron(tmp_path, inputs, ep.url, *extra)
    assert code == 3, out + err
    assert out.startswith("FABRICSCOPE UNKNOWN - 1 input(s) could not be read; no active faults"), out
    # Which source failed and why, on stderr (the Nagios line only counts them).
    assert f"fabricscope cron: {ep.url}/" in err and expected in err, err
    doc = json.loads((tmp_path / "run.json").read_text())
    assert doc["status"] == "unknown" and doc["run"]["exit_code"] == 3
    (server,) = [i for i in doc["inputs"] if i["path"] == ep.url]
    assert expected in server["error"] and server["records"] == 0 and server["rejected"] == 0, server
    # The file was stored and judged: its samples are in the run and the history.
    (stored,) = [i for i in doc["inputs"] if i["path"] != ep.url]
    assert stored.get("error") is None and stored["records"] > 0
    assert doc["run"]["samples"] == fabricscope.read(str(BALANCED)).height
    assert list((tmp_path / "history" / "samples").rglob("*.parquet"))
    textfile = (tmp_path / "fabricscope.prom").read_text()
    assert "fabricscope_last_run_failed_inputs 1\n" in textfile


def test_a_critical_fault_stays_critical_beside_a_failing_server(tmp_path: Path) -> None:
    handler, extra, expected = FAILURES["503"]
    inputs = tmp_path / "in"
    shutil.copytree(PFC, inputs)
    with Endpoint(handler) as ep:
        code, out, err = cron(tmp_path, inputs, ep.url, *extra)
    # The rule every door uses: an unreadable input makes the verdict UNKNOWN unless a fault is critical.
    assert code == 2, out + err
    assert out.startswith("FABRICSCOPE CRITICAL - "), out
    doc = json.loads((tmp_path / "run.json").read_text())
    assert doc["status"] == "critical"
    (server,) = [i for i in doc["inputs"] if i["path"] == ep.url]
    assert expected in server["error"]


def test_the_range_a_failed_pull_missed_is_pulled_next_run(tmp_path: Path) -> None:
    failing, _, _ = FAILURES["503"]
    api = QueryApi(METRIC, {"device": "mlx5_0", "port": "1", "instance": "gpu1:9100"})
    now_ms = int(time.time() * 1000)
    # Stamped half an hour before the failed run, the server's answer after it comes back.
    api.samples = [(now_ms - 1_800_000, "1000"), (now_ms - 1_790_000, "2000")]
    serving = {"handler": failing}
    inputs = tmp_path / "in"
    shutil.copytree(BALANCED, inputs)
    # One URL (the state's key for the server) that fails, then answers.
    with Endpoint(lambda h: serving["handler"](h)) as ep:
        code, _, _ = cron(tmp_path, inputs, ep.url)
        assert code == 3
        serving["handler"] = api
        code, out, err = cron(tmp_path, inputs, ep.url)
    assert code in (0, 1, 2), out + err
    doc = json.loads((tmp_path / "run.json").read_text())
    (server,) = [i for i in doc["inputs"] if i["path"] == ep.url]
    # Its watermark did not advance past the failed run: the pull starts an hour back, not at the
    # failed run's end less the server lookback (which would miss both samples).
    assert server["records"] == 2 and server.get("error") is None, server
    assert doc["run"]["samples"] == 2


def test_strict_fails_the_run_on_a_failing_server_as_on_an_unreadable_file(tmp_path: Path) -> None:
    handler, _, expected = FAILURES["503"]
    inputs = tmp_path / "in"
    shutil.copytree(BALANCED, inputs)
    with Endpoint(handler) as ep:
        code, out, _ = cron(tmp_path, inputs, ep.url, "--strict")
    assert code == 3
    assert out.startswith("FABRICSCOPE UNKNOWN - cannot read input: ") and expected in out, out
    # Nothing was stored: the next run reads the same inputs again.
    assert not list((tmp_path / "history").rglob("*.parquet"))


def test_analyze_judges_the_files_beside_a_failing_server(tmp_path: Path) -> None:
    handler, _, expected = FAILURES["error inside a 200"]
    with Endpoint(handler) as ep:
        code, out, err = run_cli(
            ["analyze", str(BALANCED), ep.url, "--retries", "0", "--json", str(tmp_path / "f.json")], process=False
        )
    assert code == 3, out + err
    doc = json.loads((tmp_path / "f.json").read_text())
    assert doc["status"] == "unknown"
    (server,) = [i for i in doc["inputs"] if i["path"] == ep.url]
    assert expected in server["error"]
    (stored,) = [i for i in doc["inputs"] if i["path"] != ep.url]
    assert stored["records"] > 0 and stored.get("error") is None
