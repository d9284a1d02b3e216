"""One read path: ``parse``, ``analyze`` and a parse output read back give the same rows and findings.

``fabricscope parse`` reads through the same unit reader as ``analyze`` (the same units, reports,
bad records and host names), and ``analyze`` of what ``parse -o`` wrote finds what ``analyze``
finds on the inputs themselves.
"""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from . import cli_runner

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "tests" / "fixtures"
IDENTITY = FIXTURES / "identity"
ETHTOOL_LOOP = FIXTURES / "ethtool" / "constructed" / "ens1f0np0-ethtool-loop.log"  # names no host


def run(*args: str) -> tuple[int, str, str]:
    return cli_runner.run_cli(args, process=False)


def _host_less_inputs(data: Path) -> Path:
    """Host-less ethtool logs whose paths name a host the Prometheus instances name, or none."""
    for rel in ("node18/ethtool.log", "ethtool-node17.log", "rack3/ethtool.log"):
        (data / rel).parent.mkdir(parents=True, exist_ok=True)
        (data / rel).write_bytes(ETHTOOL_LOOP.read_bytes())
    (data / "federate.prom").write_bytes((IDENTITY / "prometheus" / "federate.prom").read_bytes())
    return data


def _findings(doc: dict) -> list[str]:
    return sorted(json.dumps(f, sort_keys=True) for f in doc["findings"])


def test_parse_names_host_less_inputs_from_their_path_as_analyze_does(tmp_path: Path) -> None:
    data = _host_less_inputs(tmp_path / "in")
    out = tmp_path / "s.parquet"
    code, _, err = run("parse", str(data), "-o", str(out), "-q")
    assert code == 0, err
    hosts = sorted(pl.read_parquet(out).filter(pl.col("source") == "ethtool")["host"].cast(pl.String).unique())
    # node17 from the file name, node18 from its directory, rack3 names no known host
    assert hosts == ["node17.ib.example", "node18.ib.example", "unknown"]
    code, _, _ = run("analyze", str(data), "--json", str(tmp_path / "a.json"))
    storms = sorted(
        f["host"] for f in json.loads((tmp_path / "a.json").read_text())["findings"] if f["kind"] == "pfc_storm"
    )
    assert storms == ["node17.ib.example", "node18.ib.example", "unknown"]


@pytest.mark.parametrize(
    "inputs",
    [
        pytest.param("sample_traces", id="sample_traces"),
        pytest.param("sample_traces/scenarios/chain-bad-cable", id="ib-cable"),
        pytest.param("host-less", id="host-less-ethtool"),
    ],
)
def test_analyze_of_a_parse_output_finds_what_analyze_finds(inputs: str, tmp_path: Path) -> None:
    data = _host_less_inputs(tmp_path / "in") if inputs == "host-less" else REPO / inputs
    out = tmp_path / "parsed" / "s.parquet"
    out.parent.mkdir()
    code, _, err = run("parse", str(data), "-o", str(out), "-q")
    assert code == 0, err
    direct, parsed = tmp_path / "direct.json", tmp_path / "parsed.json"
    code_direct, _, _ = run("analyze", str(data), "--json", str(direct))
    # the parse output named as a file, and found by walking its directory
    code_file, _, _ = run("analyze", str(out), "--json", str(parsed))
    code_dir, _, _ = run("analyze", str(out.parent), "--json", str(tmp_path / "dir.json"))
    a, b = json.loads(direct.read_text()), json.loads(parsed.read_text())
    assert len(a["findings"]) > 0
    assert _findings(b) == _findings(a)
    assert len(b["incidents"]) == len(a["incidents"])
    assert b["status"] == a["status"] and code_file == code_direct == code_dir
    assert _findings(json.loads((tmp_path / "dir.json").read_text())) == _findings(a)
    # one input: the parse output, its side tables read with it
    assert [(i["path"], i["format"]) for i in b["inputs"]] == [(str(out), "parquet")]


def test_parse_makes_samples_dated_past_the_horizon_bad_records(tmp_path: Path) -> None:
    prom = tmp_path / "gpu01.prom"
    prom.write_text(
        "# TYPE node_infiniband_symbol_error_total counter\n"
        'node_infiniband_symbol_error_total{instance="gpu01:9100",device="mlx5_0",port="1"} 1 1764686822000\n'
        'node_infiniband_symbol_error_total{instance="gpu01:9100",device="mlx5_0",port="1"} 5 4102444800000\n'
    )
    code, out, _ = run("parse", str(prom), "--json", "--lenient", "-q")
    report = json.loads(out)["inputs"][0]
    assert (report["rows"], report["bad_records"]) == (1, 1)
    assert "dated 2100-01-01T00:00:00Z" in report["errors"][0]
    assert code == 0
    # the same as analyze reads it
    code, out, _ = run("analyze", str(prom), "--json", "-", "--lenient")
    assert json.loads(out)["inputs"][0]["rejected"] == 1
    # strict: the input fails, naming the sample
    code, out, err = run("parse", str(prom), "-q")
    assert code == 3
    assert "dated 2100-01-01T00:00:00Z" in out + err
