"""An input that only describes the fabric judges nothing: UNKNOWN (3), never OK.

``ibdev2netdev``, ``rdma link show``, ``lldpctl`` and SONiC's ``show lldp table`` name ports,
netdevs and cables; no counter and no result is in them, so no verdict about the fabric exists.
The status comes from the one shared function (``fabricscope.incidents.findings.overall_status`` with
``analysed_anything``), so ``analyze`` and ``report`` agree; with counters beside them the same
files only add names.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "tests" / "fixtures"
TOPOLOGY_ONLY = {
    "ibdev2netdev": FIXTURES / "ibdev2netdev" / "column-t-cluster-health.txt",
    "sonic-lldp-table": FIXTURES / "sonic_lldp" / "constructed-leaf01.show-lldp-table.txt",
}
MESSAGE = "nothing was analysed: no input held counters or results (status UNKNOWN)"


def fabricscope(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "fabricscope", *args], capture_output=True, text=True, timeout=300, cwd=REPO
    )


@pytest.mark.parametrize("fmt", sorted(TOPOLOGY_ONLY))
def test_topology_alone_is_unknown_at_every_door(tmp_path: Path, fmt: str) -> None:
    path = str(TOPOLOGY_ONLY[fmt])
    r = fabricscope("analyze", path, "--host", "gpu01", "--json", "-")
    assert r.returncode == 3, r.stdout + r.stderr
    doc = json.loads(r.stdout)
    assert doc["status"] == "unknown"
    assert [(i["format"], "error" in i) for i in doc["inputs"]] == [(fmt, False)]
    assert doc["findings"] == []
    text = fabricscope("analyze", path, "--host", "gpu01")
    assert text.returncode == 3
    assert MESSAGE in text.stdout
    report = fabricscope("report", path, "--host", "gpu01", "-o", str(tmp_path / "r.html"), "-q")
    assert report.returncode == 3, report.stdout + report.stderr
    assert report.stdout.startswith(f"wrote {tmp_path / 'r.html'}: UNKNOWN, 0 incident(s), 0 finding(s)")


def test_topology_beside_counters_takes_the_counters_verdict(tmp_path: Path) -> None:
    # The near miss: the same ibdev2netdev file with a healthy host's counters is judged (OK).
    healthy = sorted((REPO / "sample_traces" / "scenarios" / "balanced" / "prometheus").glob("*.prom"))
    assert healthy
    r = fabricscope("analyze", str(TOPOLOGY_ONLY["ibdev2netdev"]), *map(str, healthy), "--host", "gpu01", "--json", "-")
    assert r.returncode == 0, r.stdout + r.stderr
    doc = json.loads(r.stdout)
    assert doc["status"] == "ok"
    assert {i["format"] for i in doc["inputs"]} == {"ibdev2netdev", "prometheus"}


def test_cron_over_topology_alone_is_unknown_until_a_counter_arrives(tmp_path: Path) -> None:
    inputs = tmp_path / "in"
    inputs.mkdir()
    src = TOPOLOGY_ONLY["sonic-lldp-table"]
    (inputs / src.name).write_bytes(src.read_bytes())
    cron = ("cron", "--inputs", str(inputs), "--state", str(tmp_path / "st"), "--history", str(tmp_path / "hi"))
    first = fabricscope(*cron, "--json", str(tmp_path / "run.json"))
    assert first.returncode == 3, first.stdout + first.stderr
    assert first.stdout.startswith("FABRICSCOPE UNKNOWN - no input held telemetry; no active faults")
    assert json.loads((tmp_path / "run.json").read_text())["status"] == "unknown"
    # the near miss: healthy counters arrive, and from then on the history has a verdict
    for p in sorted((REPO / "sample_traces" / "scenarios" / "balanced" / "prometheus").glob("*.prom")):
        (inputs / p.name).write_bytes(p.read_bytes())
    second = fabricscope(*cron)
    assert second.returncode == 0, second.stdout + second.stderr
    assert second.stdout.startswith("FABRICSCOPE OK - no active faults")
    # a run with nothing new keeps the verdict of what the history holds
    third = fabricscope(*cron)
    assert third.returncode == 0, third.stdout + third.stderr
