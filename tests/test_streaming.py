"""The streaming engine (``analyze --memory``): the in-memory path's findings in a bounded memory.

Every test goes through the ``fabricscope`` CLI: the findings documents are compared byte for byte.
The comparison on every sample trace runs most traces' CLI in this process (``cli_runner``) and
three in processes. Peak memory is measured by ``bench/bench_stream.py``, not here.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from .cli_runner import CLI, run_cli

REPO = Path(__file__).resolve().parent.parent
SAMPLES = REPO / "sample_traces"
TRACE_DIRS = sorted(
    [p for p in SAMPLES.iterdir() if p.is_dir() and p.name != "scenarios"]
    + [p for p in (SAMPLES / "scenarios").iterdir() if p.is_dir()]
)


def _json(*args: str, process: bool = True) -> str:
    code, out, err = run_cli(["analyze", *args, "--json", "-"], process=process)
    assert code in (0, 1, 2), err
    return out


def test_every_sample_trace_is_covered() -> None:
    assert len(TRACE_DIRS) == 48
    assert {
        "prometheus",
        "sysfs",
        "chain-bad-cable",
        "pfc-storm",
        "trap-roce-coincident-leaves",
        "chain-pause-across-leaves",
    } <= {p.name for p in TRACE_DIRS}


# Traces whose two runs go through the console script; the others run the CLI in this process.
IN_A_PROCESS = {"prometheus", "pfc-storm", "trap-roce-coincident-leaves"}


@pytest.mark.parametrize("trace", TRACE_DIRS, ids=lambda p: p.name)
def test_streaming_findings_equal_the_in_memory_findings(trace: Path) -> None:
    # A 1 KiB budget puts every host bucket in a partition of its own: the finest split there is.
    process = trace.name in IN_A_PROCESS
    in_memory = _json(str(trace), process=process)
    streamed = _json(str(trace), "--memory", "1K", process=process)
    assert json.loads(in_memory)["findings"], f"{trace.name} has findings to compare"
    assert streamed == in_memory


# One Prometheus text file per 100 hosts: 8 HCAs x 4 data counters, 20 scrapes 15 s apart.
GENERATE = textwrap.dedent(
    """
    import os, sys
    root, hosts = sys.argv[1], int(sys.argv[2])
    os.makedirs(root)
    names = ["node_infiniband_port_data_received_bytes_total", "node_infiniband_port_data_transmitted_bytes_total",
             "node_infiniband_port_packets_received_total", "node_infiniband_port_packets_transmitted_total"]
    for first in range(0, hosts, 100):
        with open(os.path.join(root, f"hosts-{first:05d}.prom"), "w") as f:
            for s in range(20):
                ts = 1_764_686_822_000 + s * 15_000
                f.writelines(
                    f'{n}{{device="mlx5_{d}",instance="gpu{h:05d}:9100",port="1"}} '
                    f'{(s + 1) * (1000 + h + d + i) * 4096} {ts}\\n'
                    for h in range(first, min(hosts, first + 100)) for d in range(8) for i, n in enumerate(names)
                )
    """
)


def test_streaming_findings_equal_the_in_memory_findings_on_many_hosts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # That the streaming engine's peak memory stays flat as the input grows is a measurement, with
    # its noise: bench/bench_stream.py (BENCHMARKS.md, "Bounded memory"). Checked here: on 250
    # hosts in three files, a budget of a few host buckets per partition gives the in-memory
    # findings, with --memory and with a budget from the environment that the input exceeds.
    data = tmp_path / "data"
    subprocess.run([sys.executable, "-c", GENERATE, str(data), "250"], check=True, timeout=300)
    in_memory = json.loads(_json(str(data), process=False))
    streamed = json.loads(_json(str(data), "--memory", "4M", process=False))
    monkeypatch.setenv("FABRICSCOPE_MEMORY", "4M")
    code, auto, err = run_cli(["analyze", str(data), "--json", "-", "--progress"], process=False)
    assert code in (0, 1, 2), err
    assert "analysing" in err  # the streaming engine's progress: the budget handed the run to it
    assert sum(i["records"] for i in in_memory["inputs"]) == 160_000
    assert in_memory["findings"]
    assert streamed == in_memory
    assert json.loads(auto) == in_memory


def test_a_bad_memory_size_is_a_usage_error_naming_it() -> None:
    out = subprocess.run(
        [CLI, "analyze", str(SAMPLES / "prometheus"), "--memory", "lots"], capture_output=True, text=True
    )
    assert out.returncode == 3  # the CLI's usage errors are UNKNOWN, as for every other argument
    assert "argument --memory: not a memory size: 'lots' (expected e.g. 512M, 2G)" in out.stderr


def test_the_stream_engine_without_a_budget_takes_a_quarter_of_the_machine() -> None:
    from fabricscope.engines.streaming import StreamingEngine

    pages = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    assert 0 < StreamingEngine().memory <= pages // 4
    assert _json(str(SAMPLES / "prometheus"), "--engine", "stream") == _json(str(SAMPLES / "prometheus"))


def test_the_local_engine_streams_an_input_larger_than_its_budget() -> None:
    inputs = [str(SAMPLES / "prometheus"), str(SAMPLES / "scenarios" / "chain-two-faults"), "--progress"]

    def run(budget: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [CLI, "analyze", *inputs, "--json", "-"],
            capture_output=True,
            text=True,
            timeout=300,
            env={**os.environ, "FABRICSCOPE_MEMORY": budget},
        )

    # 1 KiB: far below this input's estimated peak, so the streaming engine runs (its progress
    # bar is the sign); "off": never, whatever the input; 1G: this input fits.
    small, off, fits = run("1K"), run("off"), run("1G")
    for out in (small, off, fits):
        assert out.returncode == 2, out.stderr
    assert "analysing" in small.stderr
    assert "analysing" not in off.stderr and "analysing" not in fits.stderr
    assert len(json.loads(off.stdout)["findings"]) > 10
    assert small.stdout == off.stdout == fits.stdout


def test_a_bad_memory_budget_in_the_environment_is_unknown_naming_it() -> None:
    out = subprocess.run(
        [CLI, "analyze", str(SAMPLES / "prometheus")],
        capture_output=True,
        text=True,
        env={**os.environ, "FABRICSCOPE_MEMORY": "lots"},
    )
    assert out.returncode == 3
    assert "FABRICSCOPE_MEMORY: not a memory size: 'lots' (expected e.g. 512M, 2G)" in out.stderr


def test_the_progress_bar_shows_reading_then_analysing_to_the_end() -> None:
    out = subprocess.run(
        [CLI, "analyze", str(SAMPLES / "prometheus"), "--memory", "1K", "--progress"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode in (0, 1, 2), out.stderr
    lines = [seg for seg in out.stderr.replace("\n", "\r").split("\r") if seg.startswith(("reading", "analysing"))]
    assert lines[0].startswith("reading ") and lines[-1].startswith("analysing ")
    assert "100.0%" in lines[-1] and "s left" not in lines[-1]
    # Reading reaches 100% before the analysis starts.
    assert any(seg.startswith("reading") and "100.0%" in seg for seg in lines)


def test_ray_workers_in_a_budget_give_the_local_findings() -> None:
    # A 1 KiB budget shared by the workers puts every host bucket of every partition in a
    # sub-partition of its own, each analysed by its worker after the others were spilled.
    pytest.importorskip("ray", reason="the ray engine needs Ray: pip install 'fabricscope[ray]'")
    inputs = [str(SAMPLES / "prometheus"), str(SAMPLES / "scenarios" / "chain-two-faults")]
    local = json.loads(_json(*inputs))
    ray = json.loads(_json(*inputs, "--engine", "ray", "--memory", "1K"))
    assert len(local["findings"]) > 10
    assert ray["findings"] == local["findings"]
    assert ray["incidents"] == local["incidents"]
    assert [i["records"] for i in ray["inputs"]] == [i["records"] for i in local["inputs"]]
