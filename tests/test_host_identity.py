"""Host identity through the CLI: the canonical host name is the most qualified one any input gives.

Prometheus names a host by its ``instance`` label (``gpu017.ib.example:9100``), node descriptions,
rank lines and file names by its short name (``gpu017``): findings, incidents and every other door
use the FQDN. Names the inputs disagree on (tests/fixtures/identity: a short name two FQDNs share,
node GUIDs two sysfs files claim) are decided by the claims alone, never by the inputs' order, and
listed by every door.
"""

from __future__ import annotations

import ipaddress
import json
import random
import re
from pathlib import Path

import fabricscope
import pytest
from fabricscope.doors.cli import main

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "tests" / "fixtures"
IDENTITY = FIXTURES / "identity"
PROMETHEUS = sorted(
    p
    for d in ("prometheus", "prometheus-api")
    for p in (FIXTURES / d).iterdir()
    if p.suffix in (".prom", ".om", ".json") and p.name not in ("error.json", "scalar.json")
)
# The labels the reader takes a host from (the first present: `exported_instance`, `instance` with
# its port stripped, then `hostname` ...), as `instance="gpu017:9100"` (exposition text) and
# `"instance":"gpu01:9100"` (the HTTP API's JSON)
INSTANCE = re.compile(r'(\b(?:exported_instance|instance|hostname|Hostname|host|node)"?\s*[=:]\s*")([^"]*)"')


def _analyze(capsys: pytest.CaptureFixture[str], *args: str) -> dict:
    # --lenient: a DCGM fixture holds an exporter's `ERROR - FAILED TO CONVERT TO STRING` value
    code = main(["analyze", "--lenient", *args, "--json", "-"])
    out = capsys.readouterr().out
    assert code in (0, 1, 2), out
    return json.loads(out)


def _strip_port(instance: str) -> str:
    if instance.startswith("["):
        return instance[1:].split("]", 1)[0]
    host, _, port = instance.partition(":")
    return host if port.isdigit() else instance


def _is_address(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


def _instance_hosts(text: str) -> set[str]:
    return {_strip_port(m.group(2)) for m in INSTANCE.finditer(text)}


def _qualified(text: str) -> str:
    """Every instance that is a host name, not an address, under the domain ``ib.example``."""

    def one(m: re.Match[str]) -> str:
        host = _strip_port(m.group(2))
        if _is_address(host):
            return m.group(0)
        return f'{m.group(1)}{host}.ib.example{m.group(2)[len(host) :]}"'

    return INSTANCE.sub(one, text)


def _ibnetdiscover(short_hosts: list[str]) -> str:
    """An ``ibnetdiscover -p`` dump naming each host by its short name (rdma-ndd's ``%h %d``)."""
    lines = ["# host: mgmt01", "1796200000"]
    for i, h in enumerate(short_hosts, start=1):
        lines.append(
            f"CA    {10 + i}  1 0x1070fd0300cc{i:04x} 4x NDR - SW     3  {i} 0x98039b0300bb0001 "
            f"( '{h} mlx5_0' - 'MF0;ib-leaf01:MQM9700/U1' )"
        )
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("fixture", PROMETHEUS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_finding_on_a_prometheus_fixture_names_the_instance_host(
    fixture: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = fixture.read_text()
    # as committed: the instance is the host (a series with no host label: the reader's `unknown`)
    expected = _instance_hosts(text) | {"unknown"}
    doc = _analyze(capsys, str(fixture))
    assert {f["host"] for f in doc["findings"]} <= expected
    # the instances under a domain, beside a topology dump that names the same hosts short: the
    # findings keep the FQDN Prometheus gives, the node descriptions' short names join it
    data = tmp_path / "in"
    data.mkdir()
    qualified = _qualified(text)
    (data / fixture.name).write_text(qualified)
    shorts = sorted({h.split(".", 1)[0] for h in _instance_hosts(qualified) if h.endswith(".ib.example")})
    (data / "fabric-ibnetdiscover-p.txt").write_text(_ibnetdiscover(shorts))
    expected = _instance_hosts(qualified) | {"unknown", "mgmt01", "ib-leaf01"}
    doc = _analyze(capsys, str(data))
    hosts = {f["host"] for f in doc["findings"]}
    assert hosts <= expected
    assert not hosts & set(shorts)
    # an incident's hosts are the findings' hosts
    for inc in doc["incidents"]:
        assert inc["root"]["host"] in expected


def test_prometheus_fixtures_include_qualified_and_address_instances() -> None:
    # the parametrisation above covers a host name, an IPv4 and an IPv6 instance
    every = set().union(*(_instance_hosts(p.read_text()) for p in PROMETHEUS))
    assert {"gpu017", "gpu01", "10.1.7.17", "fd00::19"} <= every
    assert len(PROMETHEUS) >= 12


# ---- names the inputs disagree on ------------------------------------------------------------

CONFLICTS = [
    {
        "kind": "node_guid",
        "name": "0x1070fd0300cc0017",
        "claims": [
            "node17.ib.example mlx5_0 (node description (rdma-ndd %h %d), sysfs node_guid)",
            "node20 mlx5_0 (sysfs node_guid)",
        ],
        # node17's own sysfs and the topology dump's node description against node20's sysfs alone
        "decision": "kept node17.ib.example mlx5_0",
    },
    {
        "kind": "node_guid",
        "name": "0x1070fd0300cc0021",
        "claims": ["node21 mlx5_0 (sysfs node_guid)", "node22 mlx5_0 (sysfs node_guid)"],
        "decision": "not joined: left as read",
    },
    {
        "kind": "short_name",
        "name": "node19",
        "claims": ["node19.ib.example (port attributes, samples)", "node19.lab.example (port attributes, samples)"],
        "decision": "not joined: name the right host with --host-alias",
    },
]


def _identity_files() -> list[str]:
    return sorted(str(p) for p in IDENTITY.rglob("*") if p.is_file() and p.suffix != ".md")


def test_the_same_inputs_in_any_order_give_the_same_json(capsys: pytest.CaptureFixture[str]) -> None:
    files = _identity_files()
    assert len(files) == 8
    texts = set()
    for seed in range(10):
        order = list(files)
        random.Random(seed).shuffle(order)
        assert main(["analyze", *order, "--json", "-"]) == 1  # WARNING: node17's symbol errors
        texts.add(capsys.readouterr().out)
    [text] = texts
    doc = json.loads(text)
    assert doc["conflicts"] == CONFLICTS
    assert [i["path"] for i in doc["inputs"]] == files
    # the short names of node descriptions and sysfs joined the Prometheus FQDNs
    assert [(f["kind"], f["host"], f["device"]) for f in doc["findings"] if f["severity"] != "info"] == [
        ("link_errors", "node17.ib.example", "mlx5_0")
    ]
    [inc] = doc["incidents"]
    assert inc["entity"] == "node17.ib.example mlx5_0 port 1 <-> MF0;ib-leaf01:MQM9700/U1 port 1"


def test_conflicts_are_listed_in_the_text_summary(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["analyze", str(IDENTITY)]) == 1
    out = capsys.readouterr().out
    assert "names the inputs disagree on (settle a host's with --host-alias ALIAS=HOST):" in out
    assert (
        "  node GUID 0x1070fd0300cc0021 is node21 mlx5_0 (sysfs node_guid); node22 mlx5_0 (sysfs node_guid): "
        "not joined: left as read"
    ) in out
    assert (
        "  short name node19 is node19.ib.example (port attributes, samples); "
        "node19.lab.example (port attributes, samples)"
    ) in out


def test_conflicts_are_listed_in_the_report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for name in ("r.html", "r.md"):
        # No plots: the conflicts section is what is read.
        assert main(["report", str(IDENTITY), "-o", str(tmp_path / name), "--max-ports", "0"]) == 1
    capsys.readouterr()
    html = (tmp_path / "r.html").read_text()
    assert "<h2 id='conflicts'>Names the inputs disagree on (3)</h2>" in html
    assert "<td>0x1070fd0300cc0017</td>" in html and "<td>kept node17.ib.example mlx5_0</td>" in html
    md = (tmp_path / "r.md").read_text()
    assert "## Names the inputs disagree on (3)" in md
    assert (
        "| short_name | node19 | node19.ib.example (port attributes, samples); "
        "node19.lab.example (port attributes, samples) |" in md
    )


def test_conflicts_are_listed_in_crons_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "cron.json"
    args = ["cron", "--inputs", str(IDENTITY), "--state", str(tmp_path / "s"), "--history", str(tmp_path / "h")]
    assert main([*args, "--json", str(out)]) == 1
    capsys.readouterr()
    doc = json.loads(out.read_text())
    assert doc["conflicts"] == CONFLICTS
    assert {f["host"] for f in doc["findings"] if f["kind"] == "link_errors"} == {"node17.ib.example"}


def test_host_alias_settles_a_shared_short_name(capsys: pytest.CaptureFixture[str]) -> None:
    doc = _analyze(capsys, str(IDENTITY), "--host-alias", "node19=node19.lab.example")
    assert [c["kind"] for c in doc["conflicts"]] == ["node_guid", "node_guid"]


def test_one_alias_given_two_hosts_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["analyze", str(IDENTITY), "--host-alias", "node19=node19.ib.example"]
    with pytest.raises(SystemExit) as raised:
        main([*args, "--host-alias", "node19=node19.lab.example"])
    assert raised.value.code == 3  # a usage error: Nagios UNKNOWN
    err = capsys.readouterr().err
    assert "--host-alias node19: given two hosts, node19=node19.ib.example and node19=node19.lab.example" in err
    # the same pair twice is no contradiction
    assert main([*args, "--host-alias", "node19=node19.ib.example"]) == 1


# ---- the host of a host-less input, from its path --------------------------------------------

ETHTOOL_LOOP = FIXTURES / "ethtool" / "constructed" / "ens1f0np0-ethtool-loop.log"  # names no host


def test_host_less_inputs_take_the_one_host_their_path_names(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "in"
    for rel in ("node18/ethtool.log", "ethtool-node17.log", "rack3/ethtool.log", "node17-node18/ethtool.log"):
        (data / rel).parent.mkdir(parents=True, exist_ok=True)
        (data / rel).write_bytes(ETHTOOL_LOOP.read_bytes())
    # the hosts the Prometheus instances name; `node18` is a word of the directory, `node17` of
    # the file name; `rack3` names no host, `node17-node18` two
    (data / "federate.prom").write_bytes((IDENTITY / "prometheus" / "federate.prom").read_bytes())
    doc = _analyze(capsys, str(data))
    storms = sorted(f["host"] for f in doc["findings"] if f["kind"] == "pfc_storm")
    assert storms == ["node17.ib.example", "node18.ib.example", "unknown", "unknown"]
    assert main(["analyze", str(data)]) == 2
    out = capsys.readouterr().out
    no_host = 'no host in the input, and its path names no known host (or several): rows use host "unknown"'
    assert f"rack3/ethtool.log: {no_host}" in out
    assert f"node17-node18/ethtool.log: {no_host}" in out
    assert out.count(no_host) == 2


def test_lldp_files_named_by_host_name_their_local_end(capsys: pytest.CaptureFixture[str]) -> None:
    links = fabricscope.run_analysis(IDENTITY).tables["links"]
    lldp = links.filter(links["source"] == "lldpctl-json").select("peer_node_name", "node_name").sort("peer_node_name")
    # lldpctl-node18.json and node17/lldp.json: `lldpctl -f json` names the neighbour, not the host
    assert lldp.rows() == [
        ("node17.ib.example eth0", "ns-2.example.com"),
        ("node18.ib.example eth0", "ns-2.example.com"),
    ]
    assert main(["analyze", str(IDENTITY), "--verbose"]) == 1
    assert "no host in the input" not in capsys.readouterr().out
