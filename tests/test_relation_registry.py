"""Relations, actions and the status verdict: declared once, checked at import, the same through every door."""

from __future__ import annotations

import gzip
import json
import subprocess
from pathlib import Path

import polars as pl
import pytest
from fabricscope.detect import SPECS
from fabricscope.detect._base import DetectorSpec
from fabricscope.doors.cron.outputs import status_line
from fabricscope.fabric.relations import CABLE, RELATION_KINDS, SAME_PORT, Relation, RelationKind
from fabricscope.incidents.correlate import RELATIONS, RULES, _rules, correlate
from fabricscope.incidents.findings import exit_status, make_findings

from . import cli_runner

REPO = Path(__file__).resolve().parent.parent


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return cli_runner.fabricscope(*args)


def test_a_misspelt_relation_fails_where_it_is_declared() -> None:
    registered = r"'same_prot' is not a registered relation.*same_port, same_host, same_nvlink_domain, cable"
    with pytest.raises(TypeError, match=registered):
        Relation("link_loss_go_back_n", "consequence", "packet_loss", ("same_prot",))  # type: ignore[arg-type]
    # a string spelt right is refused too: relations are accepted by reference only
    with pytest.raises(TypeError, match="by reference"):
        Relation("link_loss_go_back_n", "consequence", "packet_loss", ("same_port",))  # type: ignore[arg-type]
    # an entry that looks like a registered one but is not in the registry
    lookalike = RelationKind("same_port", SAME_PORT.meaning, SAME_PORT.source, lambda f, r, c: None)
    with pytest.raises(TypeError, match="not a registered relation"):
        Relation("link_loss_go_back_n", "consequence", "packet_loss", (lookalike,))
    with pytest.raises(ValueError, match="at least one relation"):
        Relation("link_loss_go_back_n", "consequence", "packet_loss")
    with pytest.raises(ValueError, match="a root is accepted through no relation"):
        Relation("link_loss_go_back_n", "root", "packet_loss", (CABLE,))
    assert Relation("link_loss_go_back_n", "consequence", "packet_loss", (SAME_PORT, CABLE)).via == (SAME_PORT, CABLE)


def test_a_misspelt_chain_or_finding_kind_fails_the_registry() -> None:
    spec = SPECS["link_errors"]
    bad_chain = DetectorSpec(
        name="x",
        summary="x",
        detect=spec.detect,
        scope="partition",
        kinds=("link_errors",),
        relations=(Relation("link_loss_go_back_nn", "consequence", "link_errors", (SAME_PORT,)),),
        actions={"link_errors": "fix {entity}"},
    )
    with pytest.raises(ValueError, match="chain 'link_loss_go_back_nn', which no detector defines"):
        _rules({**SPECS, "x": bad_chain})
    bad_kind = DetectorSpec(
        name="y",
        summary="y",
        detect=spec.detect,
        scope="partition",
        kinds=("link_errors",),
        relations=(Relation("link_loss_go_back_n", "consequence", "link_eror", (SAME_PORT,)),),
        actions={"link_errors": "fix {entity}"},
    )
    with pytest.raises(ValueError, match="names finding kind 'link_eror', which no detector emits"):
        _rules({**SPECS, "y": bad_kind})


def test_every_relation_an_accepted_consequence_names_is_registered_and_documented() -> None:
    assert RELATIONS == (
        "same_port",
        "same_host",
        "same_nvlink_domain",
        "cable",
        "same_count",
        "fan_in",
        "same_leaf",
        "below_spine",
        "pause_across_leaves",
        "job",
    )
    used = {rel for rule in RULES for rels in rule.consequences.values() for rel in rels}
    assert used <= set(RELATIONS)
    # every registered relation is accepted somewhere (a dead entry is a mistake)
    assert used == set(RELATIONS)
    docs = (REPO / "docs" / "incidents.md").read_text()
    for k in RELATION_KINDS:
        assert f"| `{k.name}` | {k.meaning} | {k.source} |" in docs


def test_a_fault_detector_must_declare_its_action() -> None:
    spec = SPECS["port_down"]
    with pytest.raises(ValueError, match=r"declares the action that fixes \['port_down'\]"):
        DetectorSpec(name="port_down", summary="s", detect=spec.detect, scope="partition")
    with pytest.raises(ValueError, match="an action for 'link_errors', which it does not emit"):
        DetectorSpec(
            name="port_down",
            summary="s",
            detect=spec.detect,
            scope="partition",
            actions={"port_down": "a", "link_errors": "b"},
        )
    for s in SPECS.values():
        if s.fault:
            assert all(k in s.actions and "{entity}" in s.actions[k] for k in s.kinds), s.name


def test_cli_every_fault_alone_carries_its_detectors_fix(tmp_path: Path) -> None:
    out = tmp_path / "f.json"
    r = _cli("analyze", str(REPO / "sample_traces"), "--json", str(out))
    assert r.returncode == 2, r.stderr
    doc = json.loads(out.read_text())
    alone = [i for i in doc["incidents"] if i["rule"] == "single_fault"]
    # one per fault: the storm's own received loss on its NIC is no page of its own (it is inside the
    # storm's incident, the same physical root), nor the capture's ECN marks beside its loss; the
    # GUID-only scenario's flap is one more (its UFM view held in the host's finding); the NVLink CRC
    # scenario's link is no single fault: its GPU's XID joins it (rule nvlink_link_xid); the two-rack
    # scenario's slow job inside one NVLink domain is one more
    assert len(alone) == 19
    assert not [i["action"] for i in doc["incidents"] if i["action"].startswith("investigate")]
    by_kind = {i["root"]["kind"]: i for i in alone}
    flap = by_kind["link_flap"]
    assert flap["action"] == SPECS["link_flap"].actions["link_flap"].format(entity=flap["entity"])
    assert flap["action"].startswith("reseat or replace the cable/transceiver of flap-gpu03 mlx5_0 port 1")
    # a sender's retransmissions: the fix is on its path, not its own cable (the direction decides)
    tx_loss = next(i for i in alone if i["root"]["kind"] == "packet_loss" and i["root"]["metric"] == "loss_rate_tx")
    assert tx_loss["action"].startswith("symerr-gpu01 mlx5_0 port 1 retransmits: find the lossy link on its path")
    storm = next(i for i in doc["incidents"] if i["root"]["host"] == "storm1s-gpu02")
    assert storm["rule"] == "pause_storm_head_of_line"
    assert ("packet_loss", "the same port: packet_loss on storm1s-gpu02 eth0") in {
        (c["finding"]["kind"], c["path"][-1]) for c in storm["consequences"]
    }
    # a receiver's loss alone: the fix is its own receive path
    rx_alone = correlate(
        make_findings(
            [
                {
                    "kind": "packet_loss",
                    "severity": "warning",
                    "host": "h1",
                    "device": "mlx5_0",
                    "port": 1,
                    "metric": "loss_rate_rx",
                    "observed": 1e-4,
                    "message": "m",
                    "evidence": {"direction": "rx"},
                }
            ]
        )
    )
    assert rx_alone[0].action.startswith("find why h1 mlx5_0 port 1 drops what it receives")
    # and the text output prints the same action under the incident
    assert f"action: {flap['action']}" in r.stdout


@pytest.mark.parametrize("failed", [0, 2])
@pytest.mark.parametrize("analysed", [True, False])
@pytest.mark.parametrize("severities", [[], ["info"], ["warning"], ["warning", "critical"]])
def test_cron_status_is_the_shared_verdict(severities: list[str], failed: int, analysed: bool) -> None:
    f = make_findings(
        [
            {"kind": "link_errors", "severity": s, "host": f"h{n}", "device": "mlx5_0", "port": 1, "metric": "m"}
            for n, s in enumerate(severities)
        ]
    )
    code, line = status_line(f, failed_inputs=failed, analysed=analysed)
    assert code == exit_status(f, failed, analysed=analysed)
    word = {0: "OK", 1: "WARNING", 2: "CRITICAL", 3: "UNKNOWN"}[code]
    assert line.startswith(f"FABRICSCOPE {word} - ")
    assert "\n" not in line
    if code == 3:
        assert ("could not be read" in line) == bool(failed) and ("no input held telemetry" in line) == (not analysed)


def test_cli_cron_with_an_unreadable_input_is_unknown_as_analyze_says(tmp_path: Path) -> None:
    exports = tmp_path / "exports"
    exports.mkdir()
    # two quiet node_exporter scrapes (no fault) and one file that is not what its name says
    name = "node_infiniband_port_data_received_bytes_total"
    for n in range(2):
        (exports / f"scrape{n}.prom").write_text(
            f"# TYPE {name} counter\n"
            f'{name}{{instance="gpu01.example:9100",device="mlx5_0",port="1"}} {1_000_000 + n * 5_000_000} '
            f"{1_764_900_000_000 + n * 10_000}\n"
        )
    # a gzip stream cut short: unreadable whatever the leniency
    (exports / "cut.prom.gz").write_bytes(gzip.compress((exports / "scrape0.prom").read_bytes())[:30])
    ok = _cli("analyze", str(exports / "scrape0.prom"), str(exports / "scrape1.prom"))
    assert ok.returncode == 0, ok.stdout + ok.stderr
    state = tmp_path / "state"
    r = _cli("cron", "--inputs", str(exports), "--state", str(state), "--history", str(tmp_path / "history"))
    a = _cli("analyze", str(exports), "--lenient")
    assert a.returncode == 3, a.stdout + a.stderr
    assert r.returncode == a.returncode, r.stdout + r.stderr
    line = [x for x in r.stdout.splitlines() if x.startswith("FABRICSCOPE ")]
    assert len(line) == 1 and line[0].startswith("FABRICSCOPE UNKNOWN - 1 input(s) could not be read; ")
    assert pl.read_parquet(tmp_path / "history" / "runs.parquet")["status"].to_list() == ["unknown"]
