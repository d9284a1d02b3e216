"""Incidents: one root cause per fault, through the CLI on the chain scenarios and as a pure function."""

from __future__ import annotations

import datetime as dt
import json
import subprocess
from pathlib import Path

import polars as pl
import pytest
from fabricscope.incidents.correlate import RULES, correlate, incident_documents, standalone_mask
from fabricscope.incidents.findings import SCHEMA_ID, SCHEMA_ID_V2, document, make_findings
from fabricscope.simulate import SCENARIOS, check_incidents

from . import cli_runner
from .conftest import rendered_markdown

REPO = Path(__file__).resolve().parent.parent
COMMITTED = REPO / "sample_traces" / "scenarios"
CHAIN = [n for n, sc in SCENARIOS.items() if sc.incidents(sc.hosts, sc.duration) or sc.separate(sc.hosts, sc.duration)]


def _cli(*args: str, process: bool = True) -> subprocess.CompletedProcess[str]:
    return cli_runner.fabricscope(*args, process=process)


def test_every_incident_scenario_is_listed() -> None:
    assert set(CHAIN) == {
        "lossy-link",
        "lossy-collapse",
        "roce-no-lossless",
        "chain-bad-cable",
        "chain-pause-storm",
        "chain-degraded-ring",
        "chain-two-faults",
        "chain-fqdn-cable",
        "pfc-storm-1s",
        "trap-busy-healthy",
        "trap-coincident-leaves",
        "trap-roce-coincident-leaves",
        "chain-pause-across-leaves",
        "trap-pause-across-leaves-later",
        "fanin-loss",
        "fanin-loss-tx",
        "trap-two-lossy-jobs",
        "link-flap-windows",
        "guid-cable-end",
        "storm-one-leaf",
        "trap-two-storms-one-leaf",
        "nvl72-tray-lost",
        "nvlink-crc",
    }


@pytest.mark.parametrize("scenario", CHAIN)
def test_cli_incidents_match_truth(tmp_path: Path, scenario: str) -> None:
    out = tmp_path / "findings.json"
    # The first scenario runs the console script in a process; the others the CLI in this one.
    r = _cli("analyze", str(COMMITTED / scenario), "--json", str(out), process=scenario == CHAIN[0])
    assert r.returncode in (1, 2), r.stderr
    doc = json.loads(out.read_text())
    truth = json.loads((COMMITTED / scenario / "truth.json").read_text())
    assert doc["schema"] == SCHEMA_ID_V2
    assert check_incidents(doc["incidents"], truth) == {
        "missing": [],
        "missing_members": [],
        "stray_members": [],
        "false_merges": [],
        "extra": [],
    }
    assert len(doc["incidents"]) == len(truth["incidents"])
    # every finding an incident names is in the findings array with that incident's id and role
    for inc in doc["incidents"]:
        roles = {(f["kind"], f["host"], f["role"]) for f in doc["findings"] if f["incident"] == inc["id"]}
        assert (inc["root"]["kind"], inc["root"]["host"], "root") in roles
        for c in inc["consequences"]:
            assert (c["finding"]["kind"], c["finding"]["host"], "consequence") in roles


def test_cli_bad_cable_prints_one_incident_first_with_its_action() -> None:
    r = _cli("analyze", str(COMMITTED / "chain-bad-cable"))
    assert r.returncode == 2, r.stderr
    lines = r.stdout.splitlines()
    first = next(i for i, line in enumerate(lines) if "INCIDENT" in line)
    assert sum("INCIDENT" in line for line in lines) == 1
    assert "bad link cable-gpu02 mlx5_0 port 1 <-> MF0;cable-leaf01:MQM9700/U1 port 2" in lines[first]
    assert lines[first + 1].strip().startswith("action: replace or reseat the cable")
    assert "root:   link_errors on cable-gpu02 mlx5_0 port 1" in lines[first + 3]
    # the sender's go-back-N loss is reached through the count it shares with the receiver: every
    # packet the cable corrupted was resent once (a stronger relation than the shared job)
    assert any(
        "packet_loss on cable-gpu01 mlx5_0 port 1 [same_count: " in line
        and "698,664 loss events received = 698,664 retransmission events sent by cable-gpu01" in line
        for line in lines
    )
    # the collective is still reached through the job, via the cable and the leaf
    assert any(
        "underperformance on cable-gpu01 [job: cable-gpu02 mlx5_0 port 1 -> cable to "
        "MF0;cable-leaf01:MQM9700/U1 port 2 -> leaf MF0;cable-leaf01:MQM9700/U1 -> nccl-tests job 1" in line
        for line in lines
    )
    assert "topology: links table (ibnetdiscover)" in r.stdout


def test_cli_two_faults_two_incidents_and_the_deciding_evidence(tmp_path: Path) -> None:
    out = tmp_path / "f.json"
    _cli("analyze", str(COMMITTED / "chain-two-faults"), "--json", str(out))
    doc = json.loads(out.read_text())
    by_rule = {i["rule"]: i for i in doc["incidents"]}
    assert set(by_rule) == {"link_loss_go_back_n", "degraded_link_ring"}
    cable, ring = by_rule["link_loss_go_back_n"], by_rule["degraded_link_ring"]
    assert cable["root"]["host"] == "twofault-gpu02" and ring["root"]["host"] == "twofault-gpu04"
    assert set(cable["hosts"]) == {"twofault-gpu01", "twofault-gpu02"}
    assert set(ring["hosts"]) == {"twofault-gpu03", "twofault-gpu04"}
    # each job's all_reduce belongs to the fault inside that job: the nccl-tests rank lists decide
    assert [(c["finding"]["kind"], c["relation"]) for c in ring["consequences"]][-1] == ("underperformance", "job")
    assert ring["consequences"][-1]["finding"]["host"] == "twofault-gpu03"
    assert "nccl-tests job 2" in " ".join(ring["consequences"][-1]["path"])


def test_cli_schema_1_still_available(tmp_path: Path) -> None:
    r = _cli("analyze", str(COMMITTED / "chain-degraded-ring"), "--json", "-", "--schema", SCHEMA_ID)
    doc = json.loads(r.stdout)
    assert doc["schema"] == SCHEMA_ID
    assert "incidents" not in doc
    assert all("incident" not in f and "role" not in f for f in doc["findings"])


def test_trap_busy_healthy_has_bottlenecks_but_no_incident() -> None:
    r = _cli("analyze", str(COMMITTED / "trap-busy-healthy"), "--json", "-")
    doc = json.loads(r.stdout)
    assert doc["incidents"] == []
    assert sum(f["kind"] == "bottleneck" and f["severity"] == "warning" for f in doc["findings"]) == 4
    assert all(f["incident"] is None for f in doc["findings"])


# ---- the pure function -----------------------------------------------------------------------

T = dt.datetime(2026, 12, 4, 14, tzinfo=dt.timezone.utc)


def _f(kind: str, host: str, *, at: float = 0.0, sev: str = "warning", **kw: object) -> dict:
    ev = kw.pop("evidence", {})
    return {
        "kind": kind,
        "severity": sev,
        "host": host,
        "device": kw.pop("device", "mlx5_0"),
        "port": kw.pop("port", 1),
        "start": T + dt.timedelta(seconds=at),
        "end": T + dt.timedelta(seconds=at + 300),
        "metric": kw.pop("metric", "m"),
        "observed": kw.pop("observed", None),
        "expected": kw.pop("expected", None),
        "message": f"{kind} on {host}",
        "evidence": {"rule": kind, **ev},
    }


def _ranks(*hosts: str) -> pl.DataFrame:
    return pl.DataFrame(
        {"run": [0] * len(hosts), "rank": list(range(len(hosts))), "host": list(hosts)},
        schema={"run": pl.UInt32, "rank": pl.UInt32, "host": pl.String},
    )


def test_consequence_before_its_root_is_rejected_with_the_reason() -> None:
    f = make_findings(
        [
            _f("link_errors", "a", at=100, sev="critical", metric="symbol_errors"),
            _f("packet_loss", "b", at=0, metric="loss_rate_tx", observed=1e-3, evidence={"direction": "tx"}),
        ]
    )
    inc = correlate(f, tables={"nccl_ranks": _ranks("a", "b")}, interval_s=10)
    # the loss began 100 s before the errors: not their consequence, so two faults, each alone
    assert [(i.rule, i.root["kind"], i.consequences) for i in inc] == [
        ("single_fault", "link_errors", []),
        ("single_fault", "packet_loss", []),
    ]
    assert inc[1].decided[0]["rejected"][0]["why"] == "starts 100 s before the root"
    later = f.with_columns(
        pl.when(pl.col("host") == "b").then(pl.col("start") + dt.timedelta(seconds=105)).otherwise(pl.col("start"))
    )
    (ok,) = correlate(later, tables={"nccl_ranks": _ranks("a", "b")}, interval_s=10)
    assert [(c["finding"]["host"], c["relation"]) for c in ok.consequences] == [("b", "job")]
    assert ok.consequences[0]["timing"] == "starts +5 s after the root (tolerance 10 s)"


def test_competing_roots_the_ring_bound_decides() -> None:
    """Two faults in one job: the collective at 63% is too fast for a ring through a 50% link."""
    f = make_findings(
        [
            _f("link_degraded", "a", sev="critical", observed=25e9, expected=50e9),
            _f("link_errors", "b", at=5, sev="critical", metric="symbol_errors"),
            _f("underperformance", "c", at=60, device=None, port=None, evidence={"ratio": 0.63}),
        ]
    )
    incs = correlate(f, tables={"nccl_ranks": _ranks("a", "b", "c")}, interval_s=10)
    (slow,) = [i for i in incs if i.consequences]
    assert slow.root["kind"] == "link_errors"
    (why,) = slow.decided
    assert why["chosen"]["kind"] == "link_errors"
    assert why["rejected"][0]["why"] == "collective at 63% of expected > the degraded link's 50% (+15%)"
    # at 45% the degraded link explains it, and only its bound could be checked (the errors carry no rate)
    f45 = f.with_columns(pl.col("evidence").str.replace("0.63", "0.45"))
    (both,) = [i for i in correlate(f45, tables={"nccl_ranks": _ranks("a", "b", "c")}, interval_s=10) if i.consequences]
    assert both.root["kind"] == "link_degraded"
    assert both.decided[0]["competitors"][0]["kind"] == "link_errors"
    assert both.decided[0]["decided_by"] == (
        "same relation; only this root's magnitude bound could be checked, and it holds "
        "(collective at 45% of expected <= the degraded link's 50% (+15%))"
    )


def test_victim_losing_more_than_the_link_is_not_its_consequence() -> None:
    f = make_findings(
        [
            _f("packet_loss", "a", sev="warning", metric="loss_rate_rx", observed=1e-4, evidence={"direction": "rx"}),
            _f("packet_loss", "b", at=5, metric="loss_rate_tx", observed=5e-3, evidence={"direction": "tx"}),
        ]
    )
    alone = correlate(f, tables={"nccl_ranks": _ranks("a", "b")}, interval_s=10)
    assert sorted((i.rule, i.root["host"], len(i.consequences)) for i in alone) == [
        ("single_fault", "a", 0),
        ("single_fault", "b", 0),
    ]
    f2 = f.with_columns(pl.when(pl.col("host") == "b").then(1.5e-4).otherwise(pl.col("observed")).alias("observed"))
    (inc,) = correlate(f2, tables={"nccl_ranks": _ranks("a", "b")}, interval_s=10)
    assert inc.consequences[0]["magnitude"] == "victim loss p = 1.50e-04 <= 2 x root p = 1.00e-04"


def test_without_topology_or_job_hosts_are_never_merged_and_the_fallback_is_stated() -> None:
    f = make_findings(
        [
            _f("pfc_storm", "a", sev="critical", metric="tx_pause_storm_warning_events"),
            _f("pfc_congestion", "b", at=10, metric="rx_pause_ratio", evidence={"direction": "rx"}),
            _f("packet_loss", "a", at=10, metric="loss_rate_rx", observed=1e-3, evidence={"direction": "rx"}),
        ]
    )
    inc, alone = correlate(f, interval_s=10)
    assert inc.rule == "pause_storm_head_of_line"
    assert [(c["finding"]["host"], c["relation"]) for c in inc.consequences] == [("a", "same_port")]
    assert "same host = same leaf" in inc.topology
    assert standalone_mask(f, [inc]).to_list() == [False, True, False]
    # the other host's pause is not merged into the storm: it is an incident of its own
    assert (alone.rule, alone.root["host"], alone.consequences) == ("single_fault", "b", [])
    assert standalone_mask(f, [inc, alone]).to_list() == [False, False, False]


def test_spine_credit_starvation_reaches_the_leaves_below_only() -> None:
    links = pl.DataFrame(
        {
            "node_guid": ["0xh1", "0xh2", "0xl1", "0xl2"],
            "port": [1, 1, 61, 61],
            "node_name": ["h1 mlx5_0", "h2 mlx5_0", "leaf1", "leaf2"],
            "node_type": ["hca", "hca", "switch", "switch"],
            "tier": ["hca", "hca", "leaf", "leaf"],
            "peer_node_guid": ["0xl1", "0xl2", "0xs1", "0xs2"],
            "peer_port": [1, 1, 1, 1],
            "peer_node_name": ["leaf1", "leaf2", "spine1", "spine2"],
            "peer_node_type": ["switch"] * 4,
            "peer_tier": ["leaf", "leaf", "spine", "spine"],
            "source": ["ibnetdiscover"] * 4,
        }
    )
    f = make_findings(
        [
            _f("ib_congestion", "mgmt", device="0xs1", port=1, sev="warning"),
            _f("ib_congestion", "h1", at=10),
            _f("ib_congestion", "h2", at=10),
        ]
    )
    incs = correlate(f, tables={"links": links}, interval_s=10)
    spine = [i for i in incs if i.root["device"] == "0xs1"]
    assert len(spine) == 1
    assert [(c["finding"]["host"], c["relation"]) for c in spine[0].consequences] == [("h1", "below_spine")]
    assert spine[0].consequences[0]["path"][1] == "leaf leaf1 below it"


def _two_leaves_one_spine(*, spine: bool = True) -> pl.DataFrame:
    """h1 on leaf1, h2 on leaf2 and (``spine``) both leaves cabled to spine1, as a switch's LLDP table shows."""
    n = 4 if spine else 2
    return pl.DataFrame(
        {
            "node_guid": ["0xh1", "0xh2", "0xl1", "0xl2"][:n],
            "port": [1, 1, 61, 61][:n],
            "node_name": ["h1 mlx5_0", "h2 mlx5_0", "leaf1", "leaf2"][:n],
            "node_type": ["hca", "hca", "switch", "switch"][:n],
            "tier": ["hca", "hca", "leaf", "leaf"][:n],
            "peer_node_guid": ["0xl1", "0xl2", "0xs1", "0xs1"][:n],
            "peer_port": [1, 1, 1, 2][:n],
            "peer_node_name": ["leaf1", "leaf2", "spine1", "spine1"][:n],
            "peer_node_type": ["switch"] * n,
            "peer_tier": ["leaf", "leaf", "spine", "spine"][:n],
            "source": ["sonic-lldp-table"] * n,
        }
    )


def _storm_and_other_leaf_pause(*, at: float = 10.0, share: float = 0.4, priority: int = 3) -> pl.DataFrame:
    """A NIC watchdog storm on h1 (sent pause peaking at 97% on priority 3, 300 s) and received pause on h2."""
    storm = _f(
        "pfc_storm",
        "h1",
        sev="critical",
        metric="tx_pause_storm_warning_events",
        observed=8.0,
        evidence={"pause_ratio_peaks": {"tx priority 3": 0.97, "rx priority 3": 0.004}},
    )
    paused = _f("pfc_congestion", "h2", at=at, metric="rx_pause_ratio", observed=share, evidence={"direction": "rx"})
    return make_findings([{**storm, "priority": 3}, {**paused, "priority": priority}])


def _joined(f: pl.DataFrame, links: pl.DataFrame) -> list[tuple]:
    return [
        (i.rule, i.root["host"], [(c["finding"]["host"], c["relation"]) for c in i.consequences])
        for i in correlate(f, tables={"links": links}, interval_s=10)
    ]


def test_a_storms_pause_reaching_another_leaf_through_the_spine_joins_its_incident() -> None:
    (inc,) = correlate(_storm_and_other_leaf_pause(), tables={"links": _two_leaves_one_spine()}, interval_s=10)
    assert (inc.rule, inc.root["host"]) == ("pause_storm_head_of_line", "h1")
    (c,) = inc.consequences
    assert (c["finding"]["host"], c["relation"]) == ("h2", "pause_across_leaves")
    assert c["path"] == [
        "h1 mlx5_0 port 1",
        "cable to leaf1 port 1",
        "leaf leaf1",
        "spine spine1",
        "leaf leaf2",
        "host h2 behind it",
        "received pause 40% of its window: no more than the 97% the storm sent, at least 25% of it",
    ]
    assert c["timing"] == "starts +10 s after the root (tolerance 10 s)"
    # the leaves alone (host files: no leaf <-> spine) relate nothing across them
    assert _joined(_storm_and_other_leaf_pause(), _two_leaves_one_spine(spine=False)) == [
        ("single_fault", "h1", []),
        ("single_fault", "h2", []),
    ]


@pytest.mark.parametrize(
    ("at", "share", "priority", "joined"),
    [
        # timing: from the storm's start to one interval (10 s) after its end (300 s)
        (0.0, 0.4, 3, True),
        (310.0, 0.4, 3, True),
        (-5.0, 0.4, 3, False),  # paused before the storm began
        (311.0, 0.4, 3, False),  # paused after the storm ended
        # magnitude: no more than the storm's 97%, at least a quarter of it (24.25%)
        (10.0, 0.97, 3, True),
        (10.0, 0.25, 3, True),
        (10.0, 0.98, 3, False),  # paused more than the storm sent
        (10.0, 0.07, 3, False),  # a sliver of the storm's time: the microburst background
        (10.0, 0.24, 3, False),
        # PFC is per priority: pause on another priority is not the storm's
        (10.0, 0.4, 4, False),
    ],
)
def test_pause_across_leaves_needs_timing_size_and_priority_to_agree(
    at: float, share: float, priority: int, joined: bool
) -> None:
    one = [("pause_storm_head_of_line", "h1", [("h2", "pause_across_leaves")])]
    alone = [("single_fault", "h1", []), ("single_fault", "h2", [])]  # the critical storm first
    got = _joined(_storm_and_other_leaf_pause(at=at, share=share, priority=priority), _two_leaves_one_spine())
    assert got == (one if joined else alone)


def test_document_v2_marks_roles_and_v1_is_unchanged() -> None:
    f = make_findings(
        [
            _f("link_errors", "a", sev="critical", metric="symbol_errors"),
            _f("packet_loss", "a", at=10, metric="loss_rate_rx", observed=1e-3, evidence={"direction": "rx"}),
            _f("link_flap", "z", sev="critical"),
        ]
    )
    incs = correlate(f, interval_s=10)
    v2 = document(f, [], incident_documents(incs))
    assert v2["schema"] == SCHEMA_ID_V2 and sorted(i["rule"] for i in v2["incidents"]) == [
        "link_loss_go_back_n",
        "single_fault",
    ]
    roles = {(x["kind"], x["host"]): (x["incident"] is not None, x["role"]) for x in v2["findings"]}
    assert roles == {
        ("link_errors", "a"): (True, "root"),
        ("packet_loss", "a"): (True, "consequence"),
        ("link_flap", "z"): (True, "root"),
    }
    assert document(f, []) == document(f, [], incident_documents(incs), schema=SCHEMA_ID)
    with pytest.raises(ValueError, match="unknown findings schema"):
        document(f, [], schema="fabricscope.findings/9")


def test_every_rule_states_its_physics_and_a_public_source() -> None:
    docs = (REPO / "docs" / "incidents.md").read_text()
    for rule in RULES:
        assert len(rule.argument) > 200 and rule.source and rule.action
        assert f"`{rule.name}`" in docs
        for banned in ("interconnect-stack", "prior-art", "shared/reference", "issue "):
            assert banned not in rule.source and banned not in rule.argument


def test_report_first_screen_is_the_incident_and_its_action(tmp_path: Path) -> None:
    out = tmp_path / "r.html"
    r = _cli("report", str(COMMITTED / "chain-bad-cable"), "-o", str(out), "--max-ports", "1", "-q")
    assert r.returncode == 2, r.stderr  # Nagios CRITICAL, the verdict
    doc = out.read_text()
    # after the one-line verdict and before the findings, plots and inputs: one incident, its title
    # and its action
    first = doc[: doc.index("<h2 id='findings'>")]
    assert "class='verdict critical'" in first
    assert "<h2>Incidents (1)</h2>" in first
    assert first.count("class='incident ") == 1
    assert "bad link cable-gpu02 mlx5_0 port 1 &lt;-&gt; MF0;cable-leaf01:MQM9700/U1 port 2" in first
    assert "Action: replace or reseat the cable/transceiver of cable-gpu02 mlx5_0 port 1" in first
    md = tmp_path / "r.md"
    assert _cli("report", str(COMMITTED / "chain-bad-cable"), "-o", str(md), "--max-ports", "1", "-q").returncode == 2
    text = md.read_text()
    assert text.index("## Status: CRITICAL") < text.index("## Incidents (1)") < text.index("## Findings")
    assert "**Action:** replace or reseat the cable" in text


def test_incast_senders_cnps_bounded_by_what_the_receiver_sent() -> None:
    rx = {"rule": "ecn_congestion.marked_ratio", "cnp_sent_per_s": 1000.0}
    f = make_findings(
        [
            _f("ecn_congestion", "dst", metric="ecn_marked_ratio", evidence=rx),
            # senders: DCQCN loop numbers are info findings, yet they are the incast's footprint
            _f(
                "ecn_congestion",
                "s1",
                at=5,
                sev="info",
                evidence={"rule": "ecn_congestion.dcqcn_active", "cnp_sent_per_s": 0.0, "cnp_handled_per_s": 400.0},
            ),
            _f(
                "ecn_congestion",
                "s2",
                at=5,
                sev="info",
                evidence={"rule": "ecn_congestion.dcqcn_active", "cnp_sent_per_s": 0.0, "cnp_handled_per_s": 5000.0},
            ),
            _f("bottleneck", "other", at=5, sev="info"),
        ]
    )
    (inc,) = correlate(f, tables={"nccl_ranks": _ranks("dst", "s1", "s2", "other")}, interval_s=10)
    assert inc.rule == "incast_ecn"
    assert [(c["finding"]["host"], c["magnitude"]) for c in inc.consequences] == [
        ("s1", "sender handled 400 CNP/s <= receiver sent 1,000/s (+20%)")
    ]
    assert inc.decided[-1]["rejected"][0]["why"] == "sender handled 5,000 CNP/s > receiver sent 1,000/s (+20%)"


def _pause_storm_inputs(tmp_path: Path, parts: tuple[str, ...]) -> Path:
    """The committed chain-pause-storm inputs, only the given subdirectories."""
    import shutil

    d = tmp_path / "in"
    for p in parts:
        shutil.copytree(COMMITTED / "chain-pause-storm" / p, d / p)
    return d


def test_cli_lldp_attaches_the_leaf_mate_and_not_the_other_leaf(tmp_path: Path) -> None:
    # Without the nccl-tests job only the topology can relate hosts. The storming NIC
    # spread-gpu03 and spread-gpu04 hang off spread-leaf02 (lldpctl); spread-gpu02, on
    # spread-leaf01, is paused 7% in the same minutes: coincident, unrelated, never merged.
    def incidents(parts: tuple[str, ...]) -> tuple[dict, list]:
        out = tmp_path / f"{len(parts)}.json"
        r = _cli("analyze", str(_pause_storm_inputs(tmp_path / str(len(parts)), parts)), "--json", str(out))
        assert r.returncode == 2, r.stderr
        doc = json.loads(out.read_text())
        return doc, doc["incidents"]

    doc, incs = incidents(("ethtool", "lldpctl"))
    assert [(i["rule"], i["root"]["host"]) for i in incs] == [
        ("pause_storm_head_of_line", "spread-gpu03"),
        ("single_fault", "spread-gpu02"),
    ]
    inc = incs[0]
    assert inc["rule"] == "pause_storm_head_of_line"
    assert inc["root"]["host"] == "spread-gpu03"
    members = {(c["finding"]["kind"], c["finding"]["host"], c["relation"]) for c in inc["consequences"]}
    assert members == {
        ("packet_loss", "spread-gpu03", "same_port"),
        ("pfc_congestion", "spread-gpu03", "same_port"),
        ("pfc_congestion", "spread-gpu04", "same_leaf"),
    }
    leaf = next(c for c in inc["consequences"] if c["relation"] == "same_leaf")
    assert leaf["path"] == [
        "spread-gpu03 eth0",
        "cable to spread-leaf02 port Ethernet0",
        "leaf spread-leaf02",
        "host spread-gpu04 behind it",
    ]
    assert inc["topology"] == "links table (lldpctl-json, lldpctl-keyvalue)"
    other_leaf = [f for f in doc["findings"] if f["host"] == "spread-gpu02" and f["kind"] == "pfc_congestion"]
    # the other leaf's pause is a fault of its own: its own incident, never merged into the storm
    assert [f["incident"] for f in other_leaf] == [incs[1]["id"]]
    # without lldpctl the leaf-mate is not attached: the LLDP files are what relates it
    _, incs = incidents(("ethtool",))
    assert {c["finding"]["host"] for c in incs[0]["consequences"]} == {"spread-gpu03"}
    assert sorted((i["rule"], i["root"]["host"]) for i in incs[1:]) == [
        ("single_fault", "spread-gpu02"),
        ("single_fault", "spread-gpu04"),
    ]


def _analyze(d: Path, out: Path) -> dict:
    """``fabricscope analyze <d> --json <out>`` (a critical finding: exit 2), the document."""
    r = _cli("analyze", str(d), "--json", str(out))
    assert r.returncode == 2, r.stderr
    return json.loads(out.read_text())


def _shape(inc: dict) -> tuple:
    """An incident as (rule, root kind, root host, its consequences as (kind, host, relation))."""
    members = sorted((c["finding"]["kind"], c["finding"]["host"], c["relation"]) for c in inc["consequences"])
    return (inc["rule"], inc["root"]["kind"], inc["root"]["host"], members)


def test_cli_sonic_lldp_tables_instead_of_lldpctl_give_the_same_pause_spread_incident(tmp_path: Path) -> None:
    # The same fabric's cabling seen from the two leaves (SONiC `show lldp table`, one file per
    # leaf) instead of from the four hosts (lldpctl): the same incidents, member for member.
    import shutil

    sim = tmp_path / "sim"
    r = _cli("simulate", str(sim), "--scenario", "chain-pause-storm", "--lldp", "sonic")
    assert r.returncode == 0, r.stderr
    assert sorted(p.name for p in (sim / "sonic-lldp").iterdir()) == [
        "spread-leaf01.show-lldp-table.txt",
        "spread-leaf02.show-lldp-table.txt",
    ]
    assert not (sim / "lldpctl").exists()

    def incidents(topology: Path) -> tuple[list, list]:
        d = tmp_path / topology.name
        shutil.copytree(COMMITTED / "chain-pause-storm" / "ethtool", d / "ethtool")
        shutil.copytree(topology, d / topology.name)
        incs = _analyze(d, tmp_path / f"{topology.name}.json")["incidents"]
        return [_shape(i) for i in incs], [i["topology"] for i in incs]

    from_hosts, topo_hosts = incidents(COMMITTED / "chain-pause-storm" / "lldpctl")
    from_leaves, topo_leaves = incidents(sim / "sonic-lldp")
    # the leaves' tables also show both leaves on the spines, yet spread-gpu02 (leaf01), paused 7%
    # against the storm's 97%, stays apart: too small a share for pause_across_leaves
    assert from_leaves == from_hosts
    assert from_leaves == [
        (
            "pause_storm_head_of_line",
            "pfc_storm",
            "spread-gpu03",
            [
                ("packet_loss", "spread-gpu03", "same_port"),
                ("pfc_congestion", "spread-gpu03", "same_port"),
                ("pfc_congestion", "spread-gpu04", "same_leaf"),
            ],
        ),
        ("single_fault", "pfc_congestion", "spread-gpu02", []),
    ]
    assert set(topo_leaves) == {"links table (sonic-lldp-table)"}
    assert set(topo_hosts) == {"links table (lldpctl-json, lldpctl-keyvalue)"}


def test_cli_roce_coincident_faults_behind_two_leaves_are_two_incidents(tmp_path: Path) -> None:
    # A pause storm on leaf01 and a lossy cable on leaf02 in the same minutes, no shared job: the
    # leaves' LLDP tables relate each fault to its own leaf-mate and never the two faults.
    doc = _analyze(COMMITTED / "trap-roce-coincident-leaves", tmp_path / "f.json")
    got = [(*_shape(i), sorted(i["hosts"])) for i in doc["incidents"]]
    assert got == [
        (
            "pause_storm_head_of_line",
            "pfc_storm",
            "rocecoin-gpu02",
            [
                ("packet_loss", "rocecoin-gpu02", "same_port"),
                ("pfc_congestion", "rocecoin-gpu01", "same_leaf"),
                ("pfc_congestion", "rocecoin-gpu02", "same_port"),
            ],
            ["rocecoin-gpu01", "rocecoin-gpu02"],
        ),
        (
            "link_loss_go_back_n",
            "packet_loss",
            "rocecoin-gpu04",
            [("packet_loss", "rocecoin-gpu03", "same_count")],
            ["rocecoin-gpu03", "rocecoin-gpu04"],
        ),
    ]
    assert {i["topology"] for i in doc["incidents"]} == {"links table (sonic-lldp-table)"}
    # every warning/critical finding is in exactly one of the two
    assert {f["incident"] for f in doc["findings"] if f["severity"] != "info"} == {i["id"] for i in doc["incidents"]}


def test_cli_a_storms_pause_reaching_the_other_leaf_through_the_spine_is_one_incident(tmp_path: Path) -> None:
    # acrossleaf-gpu01 storms on leaf01; leaf02's hosts are paused 36% and 41% in the storm's minutes.
    # No job: only the leaves' SONiC tables (host <-> leaf, leaf <-> spine) relate them.
    import shutil

    doc = _analyze(COMMITTED / "chain-pause-across-leaves", tmp_path / "f.json")
    (inc,) = doc["incidents"]
    assert _shape(inc) == (
        "pause_storm_head_of_line",
        "pfc_storm",
        "acrossleaf-gpu01",
        [
            ("packet_loss", "acrossleaf-gpu01", "same_port"),
            ("pfc_congestion", "acrossleaf-gpu01", "same_port"),
            ("pfc_congestion", "acrossleaf-gpu02", "same_leaf"),
            ("pfc_congestion", "acrossleaf-gpu03", "pause_across_leaves"),
            ("pfc_congestion", "acrossleaf-gpu04", "pause_across_leaves"),
        ],
    )
    assert inc["hosts"] == ["acrossleaf-gpu01", "acrossleaf-gpu02", "acrossleaf-gpu03", "acrossleaf-gpu04"]
    assert inc["title"] == (
        "PFC pause storm from acrossleaf-gpu01 eth0 <-> acrossleaf-leaf01 port Ethernet0: pause spread to "
        "acrossleaf-gpu02, acrossleaf-gpu03, acrossleaf-gpu04"
    )
    across = {c["finding"]["host"]: c for c in inc["consequences"] if c["relation"] == "pause_across_leaves"}
    assert across["acrossleaf-gpu03"]["path"] == [
        "acrossleaf-gpu01 eth0",
        "cable to acrossleaf-leaf01 port Ethernet0",
        "leaf acrossleaf-leaf01",
        "spine acrossleaf-spine01",
        "leaf acrossleaf-leaf02",
        "host acrossleaf-gpu03 behind it",
        "received pause 36% of its window: no more than the 97% the storm sent, at least 25% of it",
    ]
    assert across["acrossleaf-gpu04"]["path"][-1] == (
        "received pause 41% of its window: no more than the 97% the storm sent, at least 25% of it"
    )
    assert across["acrossleaf-gpu03"]["timing"] == "starts +0 s after the root (tolerance 10 s)"
    assert inc["topology"] == "links table (sonic-lldp-table)"
    # the leaves' tables without their spine rows: the storm reaches its leaf-mate only
    d = tmp_path / "no-spine"
    shutil.copytree(COMMITTED / "chain-pause-across-leaves", d)
    for table in (d / "sonic-lldp").iterdir():
        rows = [x for x in table.read_text().splitlines() if "spine" not in x]
        rows[-1] = "Total entries displayed:  2"  # the table counts its rows
        table.write_text("\n".join(rows) + "\n")
    incs = _analyze(d, tmp_path / "no-spine.json")["incidents"]
    assert {i["topology"] for i in incs} == {"links table (sonic-lldp-table)"}
    assert [(i["rule"], i["root"]["host"]) for i in incs] == [
        ("pause_storm_head_of_line", "acrossleaf-gpu01"),
        ("single_fault", "acrossleaf-gpu03"),
        ("single_fault", "acrossleaf-gpu04"),
    ]


def test_cli_the_other_leafs_pause_after_the_storm_or_a_sliver_of_it_stays_apart(tmp_path: Path) -> None:
    # The same fabric: leaf02's hosts paused 35% after the storm ended (timing disagrees), and
    # laterleaf-gpu04, the ring's sender into the storm, 7% during it (a sliver of the storm's 97%:
    # magnitude disagrees). Three incidents, leaf02's hosts each alone.
    doc = _analyze(COMMITTED / "trap-pause-across-leaves-later", tmp_path / "f.json")
    got = [(*_shape(i), i["start"]) for i in doc["incidents"]]
    assert got == [
        (
            "pause_storm_head_of_line",
            "pfc_storm",
            "laterleaf-gpu01",
            [
                ("packet_loss", "laterleaf-gpu01", "same_port"),
                ("pfc_congestion", "laterleaf-gpu01", "same_port"),
                ("pfc_congestion", "laterleaf-gpu02", "same_leaf"),
            ],
            "2026-12-04T16:00:50Z",
        ),
        # the 7% window during the storm, and the same fault again at 35% after it
        (
            "single_fault",
            "pfc_congestion",
            "laterleaf-gpu04",
            [("pfc_congestion", "laterleaf-gpu04", "same_port")],
            "2026-12-04T16:01:00Z",
        ),
        ("single_fault", "pfc_congestion", "laterleaf-gpu03", [], "2026-12-04T16:02:10Z"),
    ]
    storm = doc["incidents"][0]
    assert storm["end"] == "2026-12-04T16:01:50Z"
    paused = [f for f in doc["findings"] if f["kind"] == "pfc_congestion" and f["host"] == "laterleaf-gpu04"]
    assert [(f["start"], round(f["observed"], 3)) for f in paused] == [
        ("2026-12-04T16:01:00Z", 0.072),
        ("2026-12-04T16:02:10Z", 0.351),
    ]


def test_cli_pfc_storm_without_lldp_keeps_the_paused_host_apart_and_joins_it_with_the_leaf_table(
    tmp_path: Path,
) -> None:
    # pfc-storm: pfcstorm-gpu03 storms; pfcstorm-gpu02 (same leaf in the simulated fabric, not in
    # the inputs) is paused 7% in the same minutes. With no topology and no job nothing physical
    # relates the two hosts, and co-timing alone is no relation: two incidents.
    import shutil

    def incidents(d: Path) -> list[tuple]:
        return [(*_shape(i), i["topology"]) for i in _analyze(d, tmp_path / f"{d.name}.json")["incidents"]]

    no_topology = (
        "no links table: leaves unknown (same host = same leaf assumed); other hosts related only through jobs"
    )
    own = [("packet_loss", "pfcstorm-gpu03", "same_port"), ("pfc_congestion", "pfcstorm-gpu03", "same_port")]
    assert incidents(COMMITTED / "pfc-storm") == [
        ("pause_storm_head_of_line", "pfc_storm", "pfcstorm-gpu03", own, no_topology),
        ("single_fault", "pfc_congestion", "pfcstorm-gpu02", [], no_topology),
    ]
    # the leaf's `show lldp table` (named by its file) is the evidence: the same timing and
    # magnitude checks then attach the paused leaf-mate to the storm
    d = tmp_path / "with-lldp"
    shutil.copytree(COMMITTED / "pfc-storm", d)
    ports = [f"Ethernet{4 * i}" for i in range(4)]
    rows = [f"{p:<11}  pfcstorm-gpu0{i + 1}  0c:42:a1:00:00:0{i + 1}  R             eth0" for i, p in enumerate(ports)]
    (d / "pfcstorm-leaf01.show-lldp-table.txt").write_text(
        "\n".join(
            [
                "LocalPort    RemoteDevice    RemotePortID       Capability    RemotePortDescr",
                "-----------  --------------  -----------------  ------------  -----------------",
                *rows,
                "-" * 50,
                "Total entries displayed:  4",
            ]
        )
        + "\n"
    )
    assert incidents(d) == [
        (
            "pause_storm_head_of_line",
            "pfc_storm",
            "pfcstorm-gpu03",
            sorted([*own, ("pfc_congestion", "pfcstorm-gpu02", "same_leaf")]),
            "links table (sonic-lldp-table)",
        )
    ]


@pytest.mark.parametrize(
    ("scenario", "titles", "foreign"),
    [
        (
            # InfiniBand: a marginal cable (bit errors) and a flapping port; no PFC on IB, no RoCE
            "trap-coincident-leaves",
            [
                "bad link coincident-gpu02 mlx5_0 port 1 <-> MF0;coincident-leaf01:MQM9700/U1 port 2: "
                "errors and loss reaching coincident-gpu01",
                "bad link coincident-gpu04 mlx5_0 port 1 <-> MF0;coincident-leaf02:MQM9700/U1 port 2: "
                "link flaps reaching coincident-gpu03",
            ],
            ("RoCE", "PFC", "pause", "Pause"),
        ),
        (
            # RoCE: a pause storm and a lossy cable that counted no bit error; no credits on Ethernet
            "trap-roce-coincident-leaves",
            [
                "PFC pause storm from rocecoin-gpu02 eth0 <-> rocecoin-leaf01 port Ethernet4: pause spread to "
                "rocecoin-gpu01",
                "bad link rocecoin-gpu04 mlx5_0 port 1: packet loss reaching rocecoin-gpu03",
            ],
            ("InfiniBand", "credit", "symbol error"),
        ),
    ],
)
def test_cli_titles_use_the_words_of_the_hardware_and_never_name_the_root_as_its_victim(
    tmp_path: Path, scenario: str, titles: list[str], foreign: tuple[str, ...]
) -> None:
    doc = _analyze(COMMITTED / scenario, tmp_path / "f.json")
    assert [i["title"] for i in doc["incidents"]] == titles
    # no finding or incident of this fabric speaks of the other technology, evidence included
    text = json.dumps({"findings": doc["findings"], "incidents": doc["incidents"]})
    assert [w for w in foreign if w in text] == []
    for inc in doc["incidents"]:
        victims = inc["title"].rsplit(" reaching ", 1)[-1].rsplit(" spread to ", 1)[-1]
        assert inc["root"]["host"] not in victims.split(", ")


def test_cli_topology_draws_roce_leaves_from_lldpctl() -> None:
    r = _cli("topology", str(COMMITTED / "chain-pause-storm" / "lldpctl"), "--json")
    assert r.returncode == 0, r.stderr
    rows = json.loads(r.stdout)
    cols = ("node_name", "port_name", "tier", "peer_node_name", "peer_port_name", "peer_tier", "node_guid", "port")
    assert [tuple(x[c] for c in cols) for x in rows] == [
        ("spread-gpu01 eth0", "eth0", "hca", "spread-leaf01", "Ethernet0", "leaf", None, None),
        ("spread-gpu02 eth0", "eth0", "hca", "spread-leaf01", "Ethernet4", "leaf", None, None),
        ("spread-gpu03 eth0", "eth0", "hca", "spread-leaf02", "Ethernet0", "leaf", None, None),
        ("spread-gpu04 eth0", "eth0", "hca", "spread-leaf02", "Ethernet4", "leaf", None, None),
    ]
    assert {x["source"] for x in rows} == {"lldpctl-keyvalue", "lldpctl-json"}


@pytest.mark.parametrize("scenario", ["trap-coincident-leaves", "trap-roce-coincident-leaves", "link-flap"])
def test_analyze_report_cron_and_alerts_show_the_same_incidents(tmp_path: Path, scenario: str) -> None:
    """One incident per independent fault, the same through every front door.

    trap-coincident-leaves (InfiniBand) and trap-roce-coincident-leaves (RoCE, topology from SONiC LLDP
    tables): two unrelated faults on two leaves, two incidents; link-flap: flaps and
    credit waits nothing relates (no topology, no job): each port's fault one incident, its two windows
    in it (the fault identity cron tracks).
    """
    from fabricscope.doors.cron.alertmanager import AlertmanagerOptions, incident_alerts
    from fabricscope.doors.cron.incident_lifecycle import read_incidents

    src = COMMITTED / scenario
    out = tmp_path / "a.json"
    assert _cli("analyze", str(src), "--json", str(out)).returncode == 2
    doc = json.loads(out.read_text())
    expected = {"trap-coincident-leaves": 2, "trap-roce-coincident-leaves": 2, "link-flap": 2}[scenario]
    assert len(doc["incidents"]) == expected
    # every warning/critical finding belongs to exactly one incident
    held = [f["incident"] for f in doc["findings"] if f["severity"] != "info"]
    assert None not in held and set(held) == {i["id"] for i in doc["incidents"]}
    titles = sorted(i["title"] for i in doc["incidents"])

    text = _cli("analyze", str(src)).stdout
    assert sum("INCIDENT" in line for line in text.splitlines()) == expected
    assert "standalone findings:" not in text

    md = tmp_path / "r.md"
    # No plots: the incidents section is what is read.
    assert _cli("report", str(src), "-o", str(md), "--max-ports", "0", "-q").returncode in (0, 1, 2)
    report = md.read_text()
    assert f"## Incidents ({expected})" in report
    assert (
        sorted(
            t
            for line in rendered_markdown(report).splitlines()
            if line.startswith("### ") and ": " in line
            for t in [line.split(": ", 1)[1]]
            if t in titles
        )
        == titles
    )

    cron_json = tmp_path / "c.json"
    args = ["cron", "--inputs", str(src), "--state", str(tmp_path / "s"), "--history", str(tmp_path / "h")]
    assert _cli(*args, "--json", str(cron_json)).returncode == 2
    lifecycle = json.loads(cron_json.read_text())["incident_lifecycle"]
    assert sorted(i["title"] for i in lifecycle) == titles
    assert sorted((i["root_kind"], i["host"]) for i in lifecycle) == sorted(
        (i["root"]["kind"], i["root"]["host"]) for i in doc["incidents"]
    )
    # Alertmanager gets one alert per incident, and no fault alone beside them
    faults = pl.read_parquet(tmp_path / "h" / "lifecycle.parquet")
    alerts, _, _ = incident_alerts(
        read_incidents(tmp_path / "h"), {}, dt.datetime.now(dt.timezone.utc), AlertmanagerOptions(()), faults
    )
    assert sorted(a["annotations"]["title"] for a in alerts) == titles
    assert all("incident_id" in a["labels"] for a in alerts)
