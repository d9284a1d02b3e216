"""`fabricscope analyze`: the findings document, the summary, and Nagios exit codes."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from fabricscope.detect import KINDS
from fabricscope.doors.cli import main
from fabricscope.incidents.findings import SCHEMA_ID_V2


def _doc(capsys: pytest.CaptureFixture[str], argv: list[str]) -> tuple[int, dict]:
    code = main(argv)
    return code, json.loads(capsys.readouterr().out)


def test_analyze_sample_traces_is_critical_with_contract_document(
    samples_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, doc = _doc(capsys, ["analyze", str(samples_dir), "--json", "-"])
    assert code == 2
    assert doc["schema"] == SCHEMA_ID_V2
    assert isinstance(doc["incidents"], list)
    assert doc["status"] == "critical"
    assert {i["format"] for i in doc["inputs"]} >= {"prometheus", "ethtool", "sysfs", "sysfs-grep"}
    assert all(set(i) == {"path", "format", "records", "rejected"} for i in doc["inputs"])
    keys = {
        "kind",
        "severity",
        "host",
        "device",
        "port",
        "priority",
        "layer",
        "start",
        "end",
        "metric",
        "observed",
        "expected",
        "message",
        "evidence",
        "incident",
        "role",
    }
    for f in doc["findings"]:
        assert set(f) == keys
        assert f["kind"] in KINDS
        assert f["severity"] in {"info", "warning", "critical"}
        assert isinstance(f["evidence"], dict) and "rule" in f["evidence"]
        assert f["start"] is None or f["start"].endswith("Z")
    sev = [f["severity"] for f in doc["findings"]]
    assert sev == sorted(sev, key=["critical", "warning", "info"].index)  # worst first


def test_analyze_summary_and_json_file(tmp_path: Path, samples_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "f" / "findings.json"
    code = main(["analyze", str(samples_dir / "prometheus"), "--json", str(out)])
    text = capsys.readouterr().out
    assert code == 2
    assert text.startswith("fabricscope 0.1.0: CRITICAL")
    assert "gpu02" in text and "symbol errors" in text
    assert json.loads(out.read_text())["status"] == "critical"


def test_ok_warning_and_unknown_exit_codes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ok = tmp_path / "ok.prom"
    ok.write_text(
        "".join(
            f'node_infiniband_port_errors_received_total{{device="mlx5_0",instance="h:9100",port="1"}} 5 {t}\n'
            for t in (1796200000000, 1796200015000, 1796200030000)
        )
    )
    assert main(["analyze", str(ok)]) == 0
    assert capsys.readouterr().out.startswith("fabricscope 0.1.0: OK")
    warn = tmp_path / "warn.prom"
    warn.write_text(
        "".join(
            f'node_infiniband_port_errors_received_total{{device="mlx5_0",instance="h:9100",port="1"}} {v} {t}\n'
            for v, t in ((5, 1796200000000), (6, 1796200015000), (9, 1796200030000))
        )
    )
    assert main(["analyze", str(warn)]) == 1
    assert "WARNING" in capsys.readouterr().out
    assert main(["analyze", str(tmp_path / "missing")]) == 3
    assert capsys.readouterr().err.startswith("UNKNOWN")
    assert main(["analyze", str(ok), "--profile", "nonsense"]) == 3
    assert "unknown profile" in capsys.readouterr().err


@pytest.mark.parametrize("engine", [[], ["--engine", "local"]])
def test_analyze_applies_resource_limits(
    samples_dir: Path, capsys: pytest.CaptureFixture[str], engine: list[str]
) -> None:
    prom = str(samples_dir / "prometheus")
    assert main(["analyze", prom, *engine, "--limit", "max_labels=2"]) == 3
    err = capsys.readouterr().err
    assert "federate-rail0.prom: line 2" in err
    assert "raise it with max_labels" in err
    # raised far enough, the same input analyses (critical: the sample has a symbol-error port)
    assert main(["analyze", prom, *engine, "--limit", "max_labels=64"]) == 2


def test_analyze_summarises_inputs_per_format(samples_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["analyze", str(samples_dir / "scenarios" / "pfc-storm")]) == 2
    text = capsys.readouterr().out
    inputs = text[text.index("\ninputs:\n") :].splitlines()
    assert inputs[2].split() == ["format", "files", "samples", "bad", "records", "time", "range", "(UTC)"]
    # pfc-storm: 4 ethtool logs and 2 sysfs trees (sample_traces/scenarios/pfc-storm)
    rows = {line.split()[0]: line.split() for line in inputs[4:] if line and not line[0].isspace()}
    assert rows["ethtool"][1] == "4" and rows["ethtool"][4].startswith("2026-12-04")
    assert "pfcstorm-gpu01-eth0.log" not in text  # no per-file table without --verbose
    assert main(["analyze", str(samples_dir / "scenarios" / "pfc-storm"), "--verbose"]) == 2
    assert "pfcstorm-gpu01-eth0.log" in capsys.readouterr().out


@pytest.mark.parametrize("content", ["", "# HELP x only comments\n# TYPE x counter\n"], ids=["empty", "comments"])
def test_nothing_analysed_is_unknown_not_ok(tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str) -> None:
    f = tmp_path / "counters.prom"
    f.write_text(content)
    code = main(["analyze", str(f)])
    out = capsys.readouterr().out
    assert code == 3
    assert "UNKNOWN - " in out.splitlines()[0]
    assert "nothing was analysed: no input held counters or results (status UNKNOWN)" in out
    code, doc = _doc(capsys, ["analyze", str(f), "--json", "-"])
    assert code == 3 and doc["status"] == "unknown"


def test_a_query_api_time_beyond_i64_nanoseconds_is_a_bad_record(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # 10^10 s is 10^19 ns, past i64: a bad record naming the timestamp, never a wrapped time.
    doc = {
        "status": "success",
        "data": {
            "resultType": "matrix",
            "result": [
                {
                    "metric": {"__name__": "node_infiniband_port_data_received_bytes_total", "device": "mlx5_0"},
                    "values": [[1796400000, "10"], [1e10, "20"], [1796400030, "30"]],
                }
            ],
        },
    }
    f = tmp_path / "range.json"
    f.write_text(json.dumps(doc))
    _, out = _doc(capsys, ["analyze", str(f), "--format", "prometheus-api", "--lenient", "--json", "-"])
    assert out["inputs"] == [{"path": str(f), "format": "prometheus-api", "records": 2, "rejected": 1}]
    code = main(["analyze", str(f), "--format", "prometheus-api"])
    err = capsys.readouterr()
    assert code == 3
    assert "a timestamp in seconds since the epoch" in err.out + err.err


def test_json_into_a_pipe_writes_through_it_and_leaves_it_a_pipe(tmp_path: Path) -> None:
    # `--json /dev/null` or a FIFO: a rename onto the path (the crash-safe write of a regular file)
    # would replace the device or the pipe with a regular file.
    fifo = tmp_path / "findings.fifo"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()))
    reader.start()
    out = subprocess.run(
        [sys.executable, "-m", "fabricscope", "analyze", "sample_traces/ethtool", "--json", str(fifo)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    reader.join(timeout=60)
    assert out.returncode in (0, 1, 2), out.stderr
    assert stat.S_ISFIFO(fifo.stat().st_mode)
    assert json.loads(got[0])["findings"]
    assert [p.name for p in tmp_path.iterdir()] == ["findings.fifo"]
