"""Every front door runs the same analysis: the CLI, the Python API, the Ray engine and a one-shot cron
give identical findings (kind, severity, entity, window) on every fixture directory, sample trace and
scenario, and on benchmark-only, capture-only and mixed inputs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import fabricscope
import polars as pl
import pytest

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "tests" / "fixtures"
TRACES = REPO / "sample_traces"
CLI = str(Path(sys.executable).with_name("fabricscope"))

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

KEY = ["kind", "severity", "host", "device", "port", "priority", "start", "end"]


def _key(findings: pl.DataFrame) -> list[tuple[object, ...]]:
    return sorted(
        findings.select(KEY).with_columns(pl.col("start", "end").dt.epoch("us")).rows(),
        key=lambda r: tuple("" if v is None else str(v) for v in r),
    )


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


def _cli(paths: Sequence[Path], out: Path) -> pl.DataFrame:
    doc = out / "analyze.json"
    run = subprocess.run(
        [CLI, "analyze", *map(str, paths), "--lenient", "--json", str(doc)], capture_output=True, text=True, cwd=REPO
    )
    # An input set without telemetry (fixtures/golden) analyses nothing: UNKNOWN, no findings.
    nothing = run.returncode == 3 and "nothing was analysed" in run.stdout
    assert run.returncode in (0, 1, 2) or nothing, run.stdout + run.stderr
    return _from_document(doc)


def _cron(paths: Sequence[Path], out: Path) -> pl.DataFrame:
    doc = out / "cron.json"
    run = subprocess.run(
        [
            CLI,
            "cron",
            "--inputs",
            *map(str, paths),
            "--state",
            str(out / "state"),
            "--history",
            str(out / "history"),
            "--json",
            str(doc),
        ],
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    assert run.returncode in (0, 1, 2), run.stderr
    return _from_document(doc)


@pytest.fixture(scope="module")
def doors(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, list[tuple[object, ...]]]]:
    """Findings per input and door; the subprocess doors run two at a time."""
    ray = pytest.importorskip("ray")
    out: dict[str, dict[str, list[tuple[object, ...]]]] = {name: {} for name in INPUTS}
    jobs = []
    for name, paths in INPUTS.items():
        d = tmp_path_factory.mktemp(name.replace("/", "-"))
        jobs += [(name, "cli", _cli, paths, d), (name, "cron", _cron, paths, d)]
    with ThreadPoolExecutor(2) as pool:
        futures = {(n, door): pool.submit(fn, p, d) for n, door, fn, p, d in jobs}
        for name, paths in INPUTS.items():
            out[name]["api"] = _key(fabricscope.run_analysis(list(map(str, paths)), strict=False).findings)
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
        try:
            for name, paths in INPUTS.items():
                out[name]["ray"] = _key(
                    fabricscope.run_analysis(list(map(str, paths)), strict=False, engine="ray").findings
                )
        finally:
            ray.shutdown()
        for (name, door), fut in futures.items():
            out[name][door] = _key(fut.result())
    return out


@pytest.mark.parametrize("name", list(INPUTS))
@pytest.mark.parametrize("door", ["cli", "ray", "cron"])
def test_every_door_gives_the_api_findings(
    doors: dict[str, dict[str, list[tuple[object, ...]]]], name: str, door: str
) -> None:
    assert doors[name][door] == doors[name]["api"]


Doors = dict[str, dict[str, list[tuple[object, ...]]]]


def test_benchmark_and_capture_inputs_alone_have_findings(doors: Doors) -> None:
    # The regression this test exists for: a benchmark log alone gave no findings on the command line.
    perftest = doors["benchmark-only/perftest"]["cli"]
    assert [(k, s, d) for k, s, _h, d, *_ in perftest] == [("underperformance", "warning", "rxe0")]
    assert doors["capture-only"]["cli"] != []
    assert set(perftest) <= set(doors["mixed"]["cli"])


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
    import shutil

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
