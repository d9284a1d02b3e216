"""Consistent stories: no finding's message claims something its own numbers contradict.

Every finding of every committed simulator scenario (sample_traces/scenarios, one per
``fabricscope simulate`` scenario) and of the real fixtures used for verdicts is scanned for the
contradictions that can be checked mechanically:

* a share of time or of a window above 100% ("paused 103% of ...");
* a "N% of the X GB/s" claim that does not match ``observed / expected``;
* an underperformance finding whose measurement is not below its expectation;
* a modelled go-back-N collapse beside a wire rate that held, without saying why they differ;
* credit-wait "lost" bandwidth plus what the port sent exceeding the line rate;
* a bottleneck verdict ("saturates first", "no layer saturated", "communication-bound") that its
  own percentage contradicts.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import fabricscope
import pytest
from fabricscope.detect.config import DEFAULTS
from fabricscope.simulate import SCENARIOS

REPO = Path(__file__).resolve().parent.parent
COMMITTED = REPO / "sample_traces" / "scenarios"
FIX = REPO / "tests" / "fixtures"
REAL = [
    FIX / "ib" / "ibqueryerrors" / "linux-rdma-2021-03-sx6036.txt",
    FIX / "perftest" / "write_bw_mlx4_connectx3.txt",
    FIX / "nccl-tests" / "constructed-alltoall-10x8-h100.txt",
    FIX / "nccl-tests" / "ztan-all_reduce-16xH100.txt",
]

SHARE = re.compile(r"(?:paused|covered|held|waited for credits|busy) (\d+(?:\.\d+)?)% of")
PCT_OF_RATE = re.compile(r"(\d+)% of the (\d+(?:\.\d+)?) (GB/s|Gb/s)")


def contradictions(f: dict[str, Any]) -> list[str]:
    """What in one finding (a row of ``fabricscope.analyze``) its own numbers contradict."""
    msg, ev = f["message"], f["evidence"]
    if isinstance(ev, str):
        ev = json.loads(ev)
    out = []
    for m in SHARE.finditer(msg):
        if float(m.group(1)) > 100.0:
            out.append(f"share above 100%: {m.group(0)!r}")
    obs, exp = f["observed"], f["expected"]
    if f["kind"] == "underperformance" and ev.get("rule") in (
        "underperformance.perftest_bw",
        "underperformance.nccl_busbw",
    ):
        if not obs < exp:
            out.append(f"underperformance with observed {obs} not below expected {exp}")
        for m in PCT_OF_RATE.finditer(msg):
            if abs(int(m.group(1)) - round(100 * obs / exp)) > 1:
                out.append(f"{m.group(0)!r} but observed/expected = {obs / exp:.1%}")
            if abs(float(m.group(2)) - exp) > max(1.0, 0.01 * exp):
                out.append(f"{m.group(0)!r} but expected = {exp}")
    if f["kind"] == "lossy_collapse":
        cfg = DEFAULTS["lossy_collapse"]
        drop = ev.get("observed_drop_ratio")
        held = drop is not None and drop < cfg["max_drop_ratio"]
        if ev["gbn_efficiency"] < cfg["min_efficiency"] and held and "retransmissions" not in msg:
            out.append("modelled collapse beside a wire rate that held, unexplained")
    sent = ev.get("sent_bytes_per_s") if f["kind"] == "ib_congestion" else None
    if sent is not None and sent + ev["lost_bytes_per_s"] > 1.01 * ev["link_rate_bytes_per_s"]:
        out.append("sent + lost bandwidth above the line rate")
    if f["kind"] == "bottleneck":
        sat = 100 * DEFAULTS["bottleneck"]["saturated_ratio"]
        bound = 100 * DEFAULTS["bottleneck"]["comm_bound_ratio"]
        m = re.search(r"saturates first: (\d+)%", msg)
        if m and int(m.group(1)) < sat - 0.5:
            out.append(f"'saturates first' at {m.group(1)}% < {sat:.0f}%")
        m = re.search(r"no layer saturated; busiest \w+ at (\d+)% on average", msg)
        if m:
            avg = int(m.group(1))
            if avg >= sat + 0.5:
                out.append(f"'no layer saturated' at {avg}%")
            if msg.endswith("not communication-bound") and avg > bound + 0.5:
                out.append(f"'not communication-bound' at {avg}%")
            if (
                not msg.endswith("not communication-bound")
                and msg.endswith("communication-bound")
                and avg < bound - 0.5
            ):
                out.append(f"'communication-bound' at {avg}%")
    return out


def _check(findings: Any) -> list[str]:
    return [
        f"{r['kind']} {r['host']} {r['device']}: {c} -- {r['message']}"
        for r in findings.iter_rows(named=True)
        for c in contradictions(r)
    ]


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_no_scenario_finding_contradicts_itself(scenario: str) -> None:
    findings = fabricscope.analyze(COMMITTED / scenario)
    assert findings.height > 0
    assert _check(findings) == []


@pytest.mark.parametrize("path", REAL, ids=lambda p: p.name)
def test_no_real_fixture_finding_contradicts_itself(path: Path) -> None:
    assert _check(fabricscope.analyze(path)) == []


def test_the_checker_catches_the_contradictions_it_names() -> None:
    base = {"host": "h", "device": "d", "observed": 4.47e9, "expected": 4.44e9}
    collapse = {
        **base,
        "kind": "lossy_collapse",
        "message": "modelled go-back-N efficiency 36%; throughput 4.47 GB/s, expected 4.44 GB/s",
        "evidence": {"gbn_efficiency": 0.36, "observed_drop_ratio": -0.005},
    }
    assert contradictions(collapse) == ["modelled collapse beside a wire rate that held, unexplained"]
    under = {
        "kind": "underperformance",
        "observed": 50.6,
        "expected": 371.25,
        "message": "alltoall bus bandwidth 50.6 GB/s is 24% of the 371 GB/s the nvlink should give",
        "evidence": {"rule": "underperformance.nccl_busbw"},
    }
    assert contradictions(under) == ["'24% of the 371 GB/s' but observed/expected = 13.6%"]
    wait = {
        "kind": "ib_congestion",
        "observed": 0.34,
        "expected": 0.1,
        "message": "port waited for credits 34% of the time",
        "evidence": {"sent_bytes_per_s": 42e9, "lost_bytes_per_s": 17e9, "link_rate_bytes_per_s": 50e9},
    }
    assert contradictions(wait) == ["sent + lost bandwidth above the line rate"]
    storm = {
        "kind": "pfc_storm",
        "observed": 1.0,
        "expected": 0.99,
        "message": "paused 100.4% of 410 ms",
        "evidence": {},
    }
    assert contradictions(storm) == ["share above 100%: 'paused 100.4% of'"]
