"""The CLI's fabric summary: a large healthy fabric prints one line per kind, not one per host."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

HOSTS = 800


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "fabricscope", *args], capture_output=True, text=True, timeout=600)


def test_healthy_large_fabric_prints_a_summary_and_keeps_every_finding_in_json(tmp_path: Path) -> None:
    # 800 hosts x 8 HCAs, 4 counters, 3 scrapes: every host gets its bottleneck verdict (info).
    made = _cli("simulate", str(tmp_path / "in"), "--scale", f"{HOSTS * 8}x4x3", "--files", "2")
    assert made.returncode == 0, made.stderr
    out = tmp_path / "findings.json"
    res = _cli("analyze", str(tmp_path / "in"), "--json", str(out))
    assert res.returncode == 0, res.stdout + res.stderr
    lines = res.stdout.splitlines()
    assert len(lines) < 20, res.stdout
    assert f"{HOSTS} info finding(s) not listed; each one with --verbose or --json:" in lines
    summary = [line for line in lines if line.startswith("  info  bottleneck: ")]
    assert len(summary) == 1
    assert summary[0].startswith(f"  info  bottleneck: {HOSTS} finding(s) on {HOSTS} host(s); worst: scale-gpu")
    assert summary[0].count("scale-gpu") == 3  # the three busiest hosts
    findings = json.loads(out.read_text())["findings"]
    assert len(findings) == HOSTS
    assert {f["kind"] for f in findings} == {"bottleneck"}
    # The worst places named are the largest observed utilisation among all findings.
    top = sorted(findings, key=lambda f: -f["observed"])[0]
    assert f"{top['host']} ({top['observed']:.0%})" in summary[0]

    verbose = _cli("analyze", str(tmp_path / "in"), "--verbose")
    assert verbose.returncode == 0
    assert sum(" bottleneck " in line for line in verbose.stdout.splitlines()) == HOSTS
