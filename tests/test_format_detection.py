"""Format detection never confuses formats: the confusion matrix is the identity.

Every fixture of every format (``tests/fixtures``, which the Rust tests read too), every sample
trace and the output of every simulator writer is read through the ``fabricscope`` CLI
(``parse --json --lenient``, which reports the format the Rust core detected for each input), and
each must be detected as its own format. On failure the test prints the confusion matrix (true
format by detected format) and the inputs off its diagonal.

Each fixture's true format is declared below by path, so a new fixture that nobody classified
fails the test instead of passing unseen.
"""

from __future__ import annotations

import fnmatch
import json
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from . import cli_runner

REPO = Path(__file__).resolve().parent.parent
FIX = REPO / "tests" / "fixtures"
SAMPLES = REPO / "sample_traces"

# Files beside the fixtures that are not inputs of any format, and inputs no content can name.
NOT_DETECTABLE: list[tuple[str, str]] = [
    ("*.md", "provenance notes"),
    ("*LICENSE*", "licence texts"),
    ("*.truth.json", "expected counts of a capture"),
    ("truth.json", "a scenario's expected findings"),
    ("*/truth.json", "a scenario's expected findings"),
    ("golden/*", "expected findings"),
    ("captures/pcapng-test-generator/*.txt", "descriptions of the pcapng conformance files"),
    ("prometheus-api/read-request.bin", "a remote read request (what fabricscope sends), not an input"),
    ("prometheus-api/read-response.bin", "remote read responses have no magic number: named by --format"),
    ("generate.py", "the sample traces' generator"),
    ("prometheus/*-metric-names.txt", "metric names listed from an exporter's source, not an exposition"),
]

# The true format of each fixture under tests/fixtures, first matching pattern wins.
FIXTURE_FORMATS: list[tuple[str, str]] = [
    ("captures/*.pcapng*", "pcapng"),
    ("captures/*/*.pcapng*", "pcapng"),
    ("captures/*.pcap", "pcap"),
    ("captures/*/*.pcap", "pcap"),
    ("cxl/cxl-list-*.json", "cxl-list"),
    ("cxl/perf-stat-*", "perf-stat-cxl"),
    ("ethtool/*", "ethtool"),
    ("ib/constructed/ibdiagnet2.db_csv", "ibdiagnet-db-csv"),
    ("ib/constructed/ibdiagnet2.net_dump", "ibdiagnet-net-dump"),
    ("ib/constructed/iblinkinfo*", "iblinkinfo"),
    ("ib/constructed/ibqueryerrors*", "ibqueryerrors"),
    ("ib/constructed/ufm_metrics.csv", "ufm-csv"),
    ("ib/ibnetdiscover*/*", "ibnetdiscover"),
    ("ib/ibqueryerrors/*", "ibqueryerrors"),
    ("ib/ibswinfo/*", "ibswinfo"),
    ("ib/perfquery*/*", "perfquery"),
    ("ib/telegraf/*", "telegraf"),
    ("ib/ufm/*", "ufm-json"),
    ("ibdev2netdev/*", "ibdev2netdev"),
    ("ibstat/*", "ibstat"),
    ("ibstatus/*", "ibstatus"),
    ("ibv-devinfo/*", "ibv-devinfo"),
    ("dcgmi-dmon/*", "dcgmi-dmon"),
    ("identity/ibnetdiscover/*", "ibnetdiscover"),
    ("identity/lldpctl/*.json", "lldpctl-json"),
    ("identity/lldpctl/*/*.json", "lldpctl-json"),
    ("identity/prometheus/*", "prometheus"),
    ("identity/sysfs-grep/*", "sysfs-grep"),
    ("lldpctl/*.json", "lldpctl-json"),
    ("mlxlink/*.json", "mlxlink-json"),
    ("mlxlink/*.txt", "mlxlink"),
    ("lldpctl/*", "lldpctl-keyvalue"),
    ("nccl-tests/*.json", "nccl-tests-json"),
    ("nccl-tests/*", "nccl-tests"),
    ("nvidia-smi/*", "nvidia-smi-nvlink"),
    ("nvidia-smi-q/*.txt", "nvidia-smi-q"),
    ("perftest/*", "perftest"),
    ("prometheus-api/*.om", "openmetrics"),
    ("prometheus-api/*.json", "prometheus-api"),
    ("prometheus/*.om", "openmetrics"),
    ("prometheus/*", "prometheus"),
    ("rdma-link/*", "rdma-link"),
    ("rdma-statistic/*", "rdma-statistic"),
    ("sonic_lldp/*", "sonic-lldp-table"),
    ("mlnx_qos/*", "mlnx-qos"),
    ("sonic_pfc/*", "sonic-pfc"),
]

# Copied sysfs trees: the directory is the input.
FIXTURE_TREES = ["sysfs/procfs", "sysfs/node_exporter"]

# Simulator output (and the sample traces, which the simulator wrote): the directory a writer
# writes into names the format.
WRITER_DIRS: dict[str, str] = {
    "prometheus": "prometheus",
    "ethtool": "ethtool",
    "sysfs-grep": "sysfs-grep",
    "perfquery": "perfquery",
    "ufm-csv": "ufm-csv",
    "ibnetdiscover": "ibnetdiscover",
    "ibdev2netdev": "ibdev2netdev",
    "sonic-lldp": "sonic-lldp-table",
    "nccl-tests": "nccl-tests",
    "pcap": "pcap",
    "nvidia-smi": "nvidia-smi-nvlink",
    "nvidia-smi-q": "nvidia-smi-q",
    "dcgm": "prometheus",
}

# Sample traces outside a writer's directory.
SAMPLE_FORMATS: list[tuple[str, str]] = [
    ("ib/*perfquery*", "perfquery"),
    ("ib/*ibnetdiscover*", "ibnetdiscover"),
]

# Simulator runs that between them use every writer: RoCE with lldpctl topology and nccl-tests
# runs; RoCE with ibdev2netdev; an NVL72 rack's GPU files; RoCE with SONiC LLDP tables; InfiniBand with
# perfquery, UFM and ibnetdiscover. (The sample traces hold the vendor ethtool dialects.)
SIMULATED: list[tuple[str, str, list[str]]] = [
    ("roce", "chain-pause-storm", ["--format", "prometheus,ethtool,sysfs,sysfs-grep"]),
    ("ibdev2netdev", "roce-no-lossless", ["--format", "ethtool"]),
    # the GPU side: nvidia-smi nvlink -s, nvidia-smi -q and the DCGM exporter's XID gauge
    ("nvl72", "nvl72-tray-lost", ["--format", "prometheus"]),
    ("sonic", "chain-pause-storm", ["--format", "ethtool", "--lldp", "sonic"]),
    ("ib", "chain-bad-cable", ["--format", "perfquery,ufm-csv"]),
]


def fabricscope(*args: str) -> subprocess.CompletedProcess[str]:
    return cli_runner.fabricscope(*args, cwd=REPO, timeout=600)


def _matches(rel: str, patterns: list[tuple[str, str]]) -> str | None:
    return next((value for pattern, value in patterns if fnmatch.fnmatchcase(rel, pattern)), None)


def _fixture_inputs() -> dict[Path, str]:
    """Every fixture input with its true format; fails on a fixture nobody classified."""
    inputs = {FIX / tree: "sysfs" for tree in FIXTURE_TREES}
    unclassified = []
    for path in sorted(p for p in FIX.rglob("*") if p.is_file()):
        rel = path.relative_to(FIX).as_posix()
        if any(rel.startswith(tree + "/") for tree in FIXTURE_TREES) or _matches(rel, NOT_DETECTABLE):
            continue
        if path.stat().st_size == 0:
            continue  # an empty output (a query that printed nothing) has no format to detect
        fmt = _matches(rel, FIXTURE_FORMATS)
        if fmt is None:
            unclassified.append(rel)
        else:
            inputs[path] = fmt
    assert not unclassified, f"fixtures without a declared format (add them to FIXTURE_FORMATS): {unclassified}"
    return inputs


def _writer_inputs(root: Path) -> dict[Path, str]:
    """Simulator output under ``root``: each file by the writer directory it is in; sysfs trees as
    directories; lldpctl by extension."""
    inputs: dict[Path, str] = {}
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        rel = path.relative_to(root)
        if _matches(rel.as_posix(), NOT_DETECTABLE) or _matches(path.name, NOT_DETECTABLE):
            continue
        parts = rel.parts
        named = _matches(rel.as_posix(), SAMPLE_FORMATS)
        if named is not None:
            inputs[path] = named
            continue
        if "sysfs" in parts[:-1]:
            tree = root.joinpath(*parts[: parts.index("sysfs") + 1])
            inputs[tree] = "sysfs"
            continue
        if "lldpctl" in parts[:-1]:
            inputs[path] = "lldpctl-json" if path.suffix == ".json" else "lldpctl-keyvalue"
            continue
        writer = next((WRITER_DIRS[p] for p in reversed(parts[:-1]) if p in WRITER_DIRS), None)
        assert writer is not None, f"{path}: written by no known writer"
        inputs[path] = writer
    return inputs


def _detected(inputs: dict[Path, str]) -> dict[Path, str]:
    """The format the CLI detected for each input (`-` when none)."""
    r = fabricscope("parse", *map(str, inputs), "--json", "--lenient", "-q", "--host", "h", "--time", "1764686822")
    assert r.returncode in (0, 3), r.stdout[-2000:] + r.stderr[-2000:]
    got: dict[Path, str] = {}
    for report in json.loads(r.stdout)["inputs"]:
        path = Path(report["path"])
        path = path if path.is_absolute() else REPO / path
        # A sysfs tree is reported at its root, which may lie below the directory named.
        key = next((p for p in inputs if path == p or p in path.parents), path)
        fmt = report["format"] or ("-" if report["failed"] else "(empty)")
        if report["failed"] and report["format"] is None and not any("cannot detect" in e for e in report["errors"]):
            fmt = "(failed: " + "; ".join(report["errors"])[:120] + ")"
        got.setdefault(key, fmt)
    return got


def _confusion(expected: dict[Path, str], got: dict[Path, str]) -> str:
    pairs = Counter((expected[p], got.get(p, "(not reported)")) for p in expected)
    truths = sorted({t for t, _ in pairs})
    detected = sorted({d for _, d in pairs})
    width = max(len(t) for t in truths)
    lines = ["confusion matrix (rows: true format, columns: detected):"]
    lines.append(" " * width + "  " + "  ".join(detected))
    for t in truths:
        cells = "  ".join(f"{pairs.get((t, d), 0) or '.':>{len(d)}}" for d in detected)
        lines.append(f"{t:<{width}}  {cells}")
    wrong = [
        f"  {p.relative_to(REPO)}: {expected[p]} detected as {got.get(p)}"
        for p in expected
        if got.get(p) != expected[p]
    ]
    return "\n".join([*lines, "off the diagonal:", *wrong])


def _assert_identity(expected: dict[Path, str]) -> None:
    got = _detected(expected)
    assert all(got.get(p) == fmt for p, fmt in expected.items()), _confusion(expected, got)


def test_every_fixture_is_detected_as_its_own_format() -> None:
    expected = _fixture_inputs()
    # every format that content can name has fixtures or sample traces: the matrices cover them all
    r = fabricscope("formats", "--json")
    assert r.returncode == 0, r.stderr
    detectable = {f["name"] for f in json.loads(r.stdout) if not f["detection"].startswith("none")}
    assert detectable - set(expected.values()) - set(_writer_inputs(SAMPLES).values()) == set()
    _assert_identity(expected)


def test_every_sample_trace_is_detected_as_its_own_format() -> None:
    expected = {p: f for p, f in _writer_inputs(SAMPLES).items()}
    assert len(expected) > 100, len(expected)
    _assert_identity(expected)


@pytest.fixture(scope="module")
def simulated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("simulated")
    for name, scenario, extra in SIMULATED:
        r = fabricscope("simulate", str(root / name), "--scenario", scenario, "--hosts", "4",
                        "--duration", "60", "--interval", "30", *extra)  # fmt: skip
        assert r.returncode == 0, r.stdout + r.stderr
    return root


def test_every_simulator_writer_is_detected_as_its_own_format(simulated: Path) -> None:
    expected = _writer_inputs(simulated)
    # every writer ran
    assert set(expected.values()) >= {*WRITER_DIRS.values(), "sysfs", "lldpctl-keyvalue"} - {"pcap"}, sorted(
        set(expected.values())
    )
    _assert_identity(expected)
