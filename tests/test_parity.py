"""Every front door runs the same analysis: the CLI, the Python API, the Ray engine, a one-shot cron,
the report and the dashboard's data layer give identical findings (kind, severity, entity, window),
incidents, status and inputs (errors included) on every fixture directory, sample trace and scenario,
on benchmark-only, capture-only and mixed inputs, and on a directory with one unreadable file."""

from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import fabricscope
import polars as pl
import pytest
from fabricscope.doors.report.build import gather
from fabricscope.incidents.correlate import incident_documents
from fabricscope.incidents.findings import STATUS_EXIT

from .cli_runner import CLI, run_cli

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "tests" / "fixtures"
TRACES = REPO / "sample_traces"

INPUTS: dict[str, list[Path]] = {
    **{f"fixtures/{d.name}": [d] for d in sorted(FIXTURES.iterdir()) if d.is_dir()},
    **{f"traces/{d.name}": [d] for d in sorted(TRACES.iterdir()) if d.is_dir() and d.name != "scenarios"},
    **{f"scenario/{d.name}": [d] for d in sorted((TRACES / "scenarios").iterdir()) if d.is_dir()},
    "benchmark-only/perftest": [FIXTURES / "perftest" / "read_lat_rxe_fused.txt"],
    "benchmark-only/nccl": [FIXTURES / "nccl-tests" / "ztan-all_reduce-16xH100.txt"],
    "capture-only": [FIXTURES / "captures" / "synth_roce_pfc_le.pcapng"],
    # real outputs whose verdicts depend on the hardware and the traffic pattern
    "verdict/saturated-switch": [FIXTURES / "ib" / "ibqueryerrors" / "linux-rdma-2021-03-sx6036.txt"],
    "verdict/connectx3-perftest": [FIXTURES / "perftest" / "write_bw_mlx4_connectx3.txt"],
    "verdict/alltoall-10x8": [FIXTURES / "nccl-tests" / "constructed-alltoall-10x8-h100.txt"],
    # real-world input variants: topology file, tagged 2-node logs, transcripts, headerless ethtool,
    # a pulled cable
    "input/ibnetdiscover-topology": [FIXTURES / "ib" / "ibnetdiscover-topology"],
    "input/nccl-tag-output": [FIXTURES / "nccl-tests" / "eks-efa-2node-tag-output-interleaved.log"],
    "input/nccl-srun-label": [FIXTURES / "nccl-tests" / "eks-efa-2node-srun-label.log"],
    "input/perftest-transcript": [FIXTURES / "perftest" / "transcript-server-client-history.txt"],
    "input/ethtool-headerless": [FIXTURES / "ethtool" / "headerless"],
    "input/port-down": [FIXTURES / "ib" / "constructed" / "iblinkinfo-port17-lost.txt"],
    "mixed": [
        FIXTURES / "perftest" / "read_lat_rxe_fused.txt",
        TRACES / "prometheus",
        FIXTURES / "captures" / "synth_roce_pfc_le.pcapng",
    ],
}

# A directory with one unreadable input beside readable ones: every door lists it with its error and
# says UNKNOWN (nothing critical is found in sample_traces/ib).
CORRUPT = "corrupt/ib-plus-truncated-gz"
# A gzip stream cut in the middle of its deflate data.
TRUNCATED_GZ = gzip.compress(b"# HELP node_infiniband_port_data_transmitted_bytes_total\n" * 50, mtime=0)[:40]

KEY = ["kind", "severity", "host", "device", "port", "priority", "start", "end"]

View = dict[str, Any]
"""What one door says about one input set: findings, incidents, status and inputs (errors included)."""


def _corrupt_dir(root: Path) -> Path:
    d = root / "ib-plus-truncated-gz"
    shutil.copytree(TRACES / "ib", d)
    (d / "counters.prom.gz").write_bytes(TRUNCATED_GZ)
    return d


def _key(findings: pl.DataFrame) -> list[tuple[object, ...]]:
    return sorted(
        findings.select(KEY).with_columns(pl.col("start", "end").dt.epoch("us")).rows(),
        key=lambda r: tuple("" if v is None else str(v) for v in r),
    )


def _inputs(rows: Sequence[dict[str, Any]]) -> list[tuple[object, ...]]:
    # by path, as the findings document lists them (Analysis.inputs keeps the reading order)
    return sorted((str(i["path"]), i["format"], i["records"], i["rejected"], i.get("error")) for i in rows)


def _incidents(docs: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    # Through JSON, as the document carries them.
    return json.loads(json.dumps(list(docs)))


def _view(analysis: fabricscope.Analysis) -> View:
    return {
        "findings": _key(analysis.findings),
        "incidents": _incidents(incident_documents(analysis.incidents)),
        "status": analysis.status,
        "inputs": _inputs(analysis.inputs),
    }


def _from_document(path: Path) -> pl.DataFrame:
    doc = json.loads(path.read_text())
    rows = doc["findings"]
    frame = pl.DataFrame(
        [{k: r.get(k) for k in KEY} for r in rows],
        schema={
            "kind": pl.String,
            "severity": pl.String,
            "host": pl.String,
            "device": pl.String,
            "port": pl.Int64,
            "priority": pl.Int64,
            "start": pl.String,
            "end": pl.String,
        },
    )
    return frame.with_columns(pl.col("start", "end").str.to_datetime(time_zone="UTC", time_unit="ns"))


# The input sets whose CLI doors also run as a process (the console script, its exit status and
# its output files); every other set runs the same `fabricscope.doors.cli.main` in this process, which
# spares a Python start-up per run (about 1.5 s, three runs per set) and changes nothing else: the
# arguments, the documents written and the exit status are the command line's.
IN_A_PROCESS = {"mixed", "scenario/pfc-storm", "verdict/alltoall-10x8"}


def _run_cli(args: Sequence[str], *, process: bool) -> tuple[int, str]:
    """``fabricscope ARGS``: its exit status and what it printed."""
    code, out, err = run_cli(args, process=process, cwd=REPO)
    return code, out + err


def _cli(paths: Sequence[Path], out: Path) -> pl.DataFrame:
    return _cli_view(paths, out)[0]


def _cli_view(paths: Sequence[Path], out: Path, *, process: bool = True) -> tuple[pl.DataFrame, View]:
    doc = out / "analyze.json"
    code, printed = _run_cli(["analyze", *map(str, paths), "--lenient", "--json", str(doc)], process=process)
    assert doc.is_file(), printed
    found = json.loads(doc.read_text())
    # The exit status is the document's status (Nagios), whatever it is.
    assert code == STATUS_EXIT[found["status"]], printed
    findings = _from_document(doc)
    view = {
        "findings": _key(findings),
        "incidents": found["incidents"],
        "status": found["status"],
        "inputs": _inputs(found["inputs"]),
    }
    return findings, view


def _cron(paths: Sequence[Path], out: Path) -> pl.DataFrame:
    return _cron_view(paths, out)[0]


def _cron_view(paths: Sequence[Path], out: Path, *, process: bool = True) -> tuple[pl.DataFrame, View]:
    doc = out / "cron.json"
    args = ["cron", "--inputs", *map(str, paths), "--state", str(out / "state"), "--history", str(out / "history")]
    code, printed = _run_cli([*args, "--json", str(doc)], process=process)
    assert doc.is_file(), printed
    found = json.loads(doc.read_text())
    assert code == STATUS_EXIT[found["status"]], printed
    findings = _from_document(doc)
    # cron's document tracks incidents across runs (incident_lifecycle): no per-run incidents to compare.
    return findings, {"findings": _key(findings), "status": found["status"], "inputs": _inputs(found["inputs"])}


def _report_exit(paths: Sequence[Path], out: Path, *, process: bool = True) -> int:
    # No plots: the exit status and the verdict line are what is compared.
    args = ["report", *map(str, paths), "--lenient", "--max-ports", "0", "-q", "-o", str(out / "report.md")]
    code, printed = _run_cli(args, process=process)
    assert (out / "report.md").is_file(), printed
    return code


@pytest.fixture(scope="module")
def doors(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, View]]:
    """Every door's view per input set; the subprocess doors run two at a time."""
    ray = pytest.importorskip("ray")
    pytest.importorskip("streamlit")
    if str(REPO / "dashboards") not in sys.path:
        sys.path.insert(0, str(REPO / "dashboards"))
    import data as dashboard_data  # the dashboard's data layer, as its pages import it

    inputs = {**INPUTS, CORRUPT: [_corrupt_dir(tmp_path_factory.mktemp("corrupt"))]}
    out: dict[str, dict[str, View]] = {name: {} for name in inputs}
    cli_doors = {"cli": _cli_view, "cron": _cron_view, "report-exit": _report_exit}
    processes = {*IN_A_PROCESS, CORRUPT}
    with ThreadPoolExecutor(2) as pool:
        futures = {}
        for name, paths in inputs.items():
            d = tmp_path_factory.mktemp(name.replace("/", "-"))
            for door, fn in cli_doors.items():
                if name in processes:
                    futures[name, door] = pool.submit(fn, paths, d)
                else:
                    got = fn(paths, d, process=False)
                    out[name][door] = got if door == "report-exit" else got[1]
        for name, paths in inputs.items():
            strs = list(map(str, paths))
            out[name]["api"] = _view(fabricscope.run_analysis(strs, strict=False))
            rep = gather(strs, strict=False)
            out[name]["report"] = {
                "findings": _key(rep.findings),
                "incidents": _incidents(incident_documents(rep.incidents)),
                "status": rep.status,
                "inputs": _inputs(rep.inputs),
            }
            ds = dashboard_data._analyse(strs, name, "analysis")
            out[name]["dashboard"] = {
                "findings": _key(ds.findings),
                "incidents": _incidents(incident_documents(ds.analysis.incidents)),
                "status": ds.status,
                "inputs": _inputs(ds.inputs),
            }
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
        try:
            for name, paths in inputs.items():
                out[name]["ray"] = _view(fabricscope.run_analysis(list(map(str, paths)), strict=False, engine="ray"))
        finally:
            ray.shutdown()
        for (name, door), fut in futures.items():
            got = fut.result()
            out[name][door] = got if door == "report-exit" else got[1]
    return out


NAMES = [*INPUTS, CORRUPT]


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("door", ["cli", "ray", "report", "dashboard"])
def test_every_door_says_what_the_api_says(doors: dict[str, dict[str, View]], name: str, door: str) -> None:
    assert doors[name][door] == doors[name]["api"]


@pytest.mark.parametrize("name", NAMES)
def test_report_exits_with_the_analysis_status(doors: dict[str, dict[str, View]], name: str) -> None:
    assert doors[name]["report-exit"] == STATUS_EXIT[doors[name]["api"]["status"]]


@pytest.mark.parametrize("name", NAMES)
def test_cron_finds_and_reads_what_the_api_does(doors: dict[str, dict[str, View]], name: str) -> None:
    cron, api = doors[name]["cron"], doors[name]["api"]
    assert cron["findings"] == api["findings"]
    assert cron["inputs"] == api["inputs"]
    # The same status, including UNKNOWN for inputs that measured nothing (topology only): a
    # history that never held a counter has no verdict, as a one-shot analysis of it has none.
    assert cron["status"] == api["status"]


def test_one_unreadable_input_makes_every_door_unknown(doors: dict[str, dict[str, View]]) -> None:
    views = doors[CORRUPT]
    for door in ("api", "cli", "ray", "cron", "report", "dashboard"):
        assert views[door]["status"] == "unknown", door
        (failed,) = [i for i in views[door]["inputs"] if i[4]]
        assert failed[0].endswith("counters.prom.gz") and failed[3] == 0, door
        assert "gzip" in str(failed[4]), door
    assert views["report-exit"] == 3


Doors = dict[str, dict[str, View]]


def test_benchmark_and_capture_inputs_alone_have_findings(doors: Doors) -> None:
    # The regression this test exists for: a benchmark log alone gave no findings on the command line.
    perftest = doors["benchmark-only/perftest"]["cli"]["findings"]
    assert [(k, s, d) for k, s, _h, d, *_ in perftest] == [("underperformance", "warning", "rxe0")]
    assert doors["capture-only"]["cli"]["findings"] != []
    assert set(perftest) <= set(doors["mixed"]["cli"]["findings"])


def test_ray_engine_without_ray_is_unknown(tmp_path: Path) -> None:
    # A Python whose import of ray fails, running the real CLI: exit 3 and one line, no traceback.
    block = tmp_path / "ray.py"
    block.write_text("raise ImportError('ray is not installed here')\n")
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    run = subprocess.run(
        [CLI, "analyze", str(TRACES / "prometheus"), "--engine", "ray"], capture_output=True, text=True, env=env
    )
    assert run.returncode == 3
    assert "Traceback" not in run.stderr
    assert "pip install 'fabricscope[ray]'" in run.stderr
    assert len(run.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("order", ["forward", "reverse"])
def test_timeless_files_take_one_time_per_input_set(tmp_path: Path, order: str) -> None:
    # A fresh clone writes files ~1 ms apart in git's order: the same logs, dated by mtime, must
    # give the same findings through every door whatever that order (the nccl-tests logs here
    # share a host across files, and cron reads them in other groups than the API).
    src = tmp_path / "nccl-tests"
    shutil.copytree(FIXTURES / "nccl-tests", src)
    files = sorted(p for p in src.iterdir() if p.is_file())
    base = 1_796_400_000_000_000_000
    for i, f in enumerate(files if order == "forward" else files[::-1]):
        os.utime(f, ns=(base + i * 1_000_000, base + i * 1_000_000))
    newest = base + (len(files) - 1) * 1_000_000
    (tmp_path / "cli").mkdir()
    (tmp_path / "cron").mkdir()
    cli, cron = _cli([src], tmp_path / "cli"), _cron([src], tmp_path / "cron")
    assert cli.height > 0
    assert _key(cli) == _key(cron)
    # Every finding of a timeless log is dated by the set's newest mtime, whichever file made it.
    assert set(cli["start"].dt.epoch("ns").to_list()) == {newest}
