"""Entity resolution: one host, HCA, switch and cable whatever name a source uses.

Through the CLI on the committed chain scenarios (Prometheus naming hosts by FQDN, ibnetdiscover and
nccl-tests by short name; a topology dump naming HCAs by GUID), and as pure functions on the
real ibnetdiscover sample (`sample_traces/ib`, written from the ibnetdiscover(8) man page layout).
"""

from __future__ import annotations

import datetime as dt
import json
import shutil
import subprocess
from pathlib import Path

import fabricscope
import polars as pl
import pytest
from fabricscope.fabric.entities import ENTITIES_SCHEMA, Conflict, apply, conflicts_frame, resolve, switch_name
from fabricscope.fabric.model import build
from fabricscope.incidents.findings import make_findings

from . import cli_runner

REPO = Path(__file__).resolve().parent.parent
COMMITTED = REPO / "sample_traces" / "scenarios"
IBNET = REPO / "sample_traces" / "ib" / "fabric-ibnetdiscover-p.txt"
T = dt.datetime(2026, 12, 4, 14, tzinfo=dt.timezone.utc)


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return cli_runner.fabricscope(*args)


def _links() -> pl.DataFrame:
    return fabricscope.load(IBNET).tables["links"]


def _f(kind: str, host: str, device: str, port: int | None = 1, **kw: object) -> dict:
    return {
        "kind": kind,
        "severity": kw.pop("severity", "critical"),
        "host": host,
        "device": device,
        "port": port,
        "start": T,
        "end": T + dt.timedelta(minutes=3),
        "metric": kw.pop("metric", "link_rate_bytes_per_s"),
        "observed": 25e9,
        "message": kw.pop("message", "link trained below expectation"),
        "evidence": kw.pop("evidence", {"rule": "link_degraded.rate_width"}),
        **kw,
    }


# ---- through the CLI -------------------------------------------------------------------------


def test_cli_fqdn_and_short_names_are_one_host_and_one_incident() -> None:
    r = _cli("analyze", str(COMMITTED / "chain-fqdn-cable"), "--json", "-")
    assert r.returncode == 2, r.stderr
    doc = json.loads(r.stdout)
    hosts = {f["host"] for f in doc["findings"]}
    # Prometheus said fqdn-gpu02.cluster.local; rank lines and node descriptions said fqdn-gpu02:
    # one host, under the most qualified name
    assert hosts == {f"fqdn-gpu0{i}.cluster.local" for i in (1, 2, 3, 4)}
    [inc] = doc["incidents"]
    assert inc["root"]["kind"] == "link_errors" and inc["root"]["host"] == "fqdn-gpu02.cluster.local"
    assert inc["entity"] == "fqdn-gpu02.cluster.local mlx5_0 port 1 <-> MF0;fqdn-leaf01:MQM9700/U1 port 2"
    by = {(c["finding"]["kind"], c["finding"]["host"]): c for c in inc["consequences"]}
    # the sender's go-back-N loss: the same 698,664 events the receiver lost
    assert by[("packet_loss", "fqdn-gpu01.cluster.local")]["relation"] == "same_count"
    assert "698,664 loss events received = 698,664 retransmission events" in " ".join(
        by[("packet_loss", "fqdn-gpu01.cluster.local")]["path"]
    )
    # the slow all_reduce: its rank lines name short hosts, the root's counters an FQDN
    assert by[("underperformance", "fqdn-gpu01.cluster.local")]["relation"] == "job"
    assert inc["title"].endswith("errors and loss reaching fqdn-gpu01.cluster.local")


def test_cli_fqdn_sharing_a_short_name_is_a_conflict_settled_by_host_alias(tmp_path: Path) -> None:
    # the same scrape file under two domains: two hosts could be fqdn-gpu02; nothing is guessed
    src = COMMITTED / "chain-fqdn-cable"
    data = tmp_path / "in"
    shutil.copytree(src, data)
    import gzip

    text = gzip.decompress((data / "prometheus" / "federate.prom.gz").read_bytes()).decode()
    other = text.replace("fqdn-gpu02.cluster.local", "fqdn-gpu02.lab.local").replace(
        "fqdn-gpu01.cluster.local", "fqdn-gpu01.lab.local"
    )
    (data / "prometheus" / "lab.prom").write_text(other.replace("cluster.local", "unused.local"))
    r = _cli("analyze", str(data), "--json", "-")
    doc = json.loads(r.stdout)
    hosts = {f["host"] for f in doc["findings"]}
    assert "fqdn-gpu02.cluster.local" in hosts and "fqdn-gpu02.lab.local" in hosts
    assert "fqdn-gpu02" not in {f["host"] for f in doc["findings"] if f["kind"] == "link_errors"}
    text = _cli("analyze", str(data)).stdout
    assert "names the inputs disagree on (settle a host's with --host-alias ALIAS=HOST):" in text
    assert (
        "short name fqdn-gpu02 is fqdn-gpu02.cluster.local (port attributes, samples); "
        "fqdn-gpu02.lab.local (port attributes, samples)"
    ) in text
    r = _cli(
        "analyze",
        str(data),
        "--json",
        "-",
        "--host-alias",
        "fqdn-gpu02.cluster.local=fqdn-gpu02",
        "--host-alias",
        "fqdn-gpu02.lab.local=lab-gpu02",
    )
    doc = json.loads(r.stdout)
    errs = sorted(f["host"] for f in doc["findings"] if f["kind"] == "link_errors")
    assert errs == ["fqdn-gpu02", "lab-gpu02"]
    bad = _cli("analyze", str(data), "--host-alias", "no-equals-sign")
    assert bad.returncode == 3 and "expected ALIAS=HOST" in bad.stderr  # a usage error: Nagios UNKNOWN


def test_cli_degraded_cable_is_one_finding_naming_both_ends() -> None:
    r = _cli("analyze", str(COMMITTED / "chain-degraded-ring"), "--json", "-")
    doc = json.loads(r.stdout)
    degraded = [f for f in doc["findings"] if f["kind"] == "link_degraded"]
    # sysfs on ring-gpu02, the HCA's GUID and the leaf port's GUID in ibnetdiscover: one cable
    assert len(degraded) == 1
    [f] = degraded
    assert (f["host"], f["device"], f["port"]) == ("ring-gpu02", "mlx5_0", 1)
    assert f["evidence"]["cable"] == ["ring-gpu02 mlx5_0 port 1", "ring-leaf01 port 2"]
    # the other observations, as ibnetdiscover on the management node named them
    seen = [(x["host"], x["device"], x["port"]) for x in f["evidence"]["also_seen"]]
    assert seen == [("mgmt01", "0xa088c203787e1579", 1), ("mgmt01", "0xb8cef603ba844483", 2)]
    assert not any(g["device"].startswith("0x") for g in doc["findings"] if g["device"])


# ---- resolve ---------------------------------------------------------------------------------


def test_short_name_joins_its_fqdn_under_the_fqdn() -> None:
    ent = resolve(hosts=["gpu-g02.cluster.local", "gpu-g02", "gpu-g03.cluster.local", "10.0.0.7", "unknown"])
    assert ent.host("gpu-g02.cluster.local") == "gpu-g02.cluster.local"
    assert ent.host("gpu-g02") == "gpu-g02.cluster.local"
    assert ent.host("gpu-g03.cluster.local") == "gpu-g03.cluster.local"  # no source says gpu-g03
    assert ent.host("10.0.0.7") == "10.0.0.7"  # an address is not an FQDN
    assert ent.host("unknown") == "unknown"
    assert ent.conflicts == []
    rows = (
        ent.table.filter(pl.col("entity") == "host:gpu-g02.cluster.local")
        .select("alias", "alias_kind")
        .sort("alias")
        .rows()
    )
    assert rows == [("gpu-g02", "short_name"), ("gpu-g02.cluster.local", "fqdn")]
    assert ent.table.schema == ENTITIES_SCHEMA


def test_two_fqdns_with_one_short_name_are_reported_not_guessed() -> None:
    ent = resolve(hosts=["gpu01.a.example", "gpu01.b.example", "gpu01"])
    assert ent.host("gpu01.a.example") == "gpu01.a.example"
    assert ent.host("gpu01.b.example") == "gpu01.b.example"
    [conflict] = ent.conflicts
    assert conflict.as_dict() == {
        "kind": "short_name",
        "name": "gpu01",
        "claims": ["gpu01.a.example (findings)", "gpu01.b.example (findings)"],
        "decision": "not joined: name the right host with --host-alias",
    }
    assert ent.host("gpu01") == "gpu01"
    settled = resolve(
        hosts=["gpu01.a.example", "gpu01.b.example", "gpu01"],
        host_aliases={"gpu01.a.example": "gpu01", "gpu01.b.example": "gpu01-b"},
    )
    assert settled.conflicts == []
    assert (settled.host("gpu01.a.example"), settled.host("gpu01.b.example")) == ("gpu01", "gpu01-b")


def test_short_names_in_rank_lines_and_node_descriptions_join_prometheus_fqdns() -> None:
    links = _links()
    ranks = pl.DataFrame({"rank": [0, 1], "host": ["gpu03", "gpu04"]})
    ent = resolve(hosts=["gpu01.cluster.local", "gpu03.cluster.local"], tables={"links": links, "nccl_ranks": ranks})
    assert ent.host("gpu01") == "gpu01.cluster.local"  # the node description "gpu01 mlx5_0"
    assert ent.host("gpu03") == "gpu03.cluster.local"  # a rank line
    assert ent.host("gpu01.cluster.local") == "gpu01.cluster.local"
    assert ent.hcas["0x1070fd0300cc0001"] == ("gpu01.cluster.local", "mlx5_0")
    assert ent.hcas["0x1070fd0300cc0002"] == ("gpu02", "mlx5_0")
    assert ent.switches["0x98039b0300bb0001"] == "ib-leaf01"
    assert ent.lids[12] == "0x1070fd0300cc0002"
    cable = ent.table.filter((pl.col("kind") == "cable") & (pl.col("alias") == "0x1070fd0300cc0002/1"))
    assert cable["name"].to_list() == ["gpu02 mlx5_0 port 1 <-> ib-leaf01 port 2"]


def test_a_guid_two_inputs_place_on_different_hosts_is_a_conflict() -> None:
    attrs = pl.DataFrame(
        {
            "host": ["gpu09"],
            "device": ["mlx5_0"],
            "key": ["node_guid_hex"],
            "value": ["0x1070fd0300cc0002"],
        }
    )
    ent = resolve(attributes=attrs, tables={"links": _links()})
    assert ent.hcas["0x1070fd0300cc0002"] == ("gpu09", "mlx5_0")  # sysfs on the host itself wins
    [conflict] = ent.conflicts
    assert (conflict.kind, conflict.name, conflict.decision) == ("node_guid", "0x1070fd0300cc0002", "kept gpu09 mlx5_0")
    assert conflict.claims == ("gpu02 mlx5_0 (node description (rdma-ndd %h %d))", "gpu09 mlx5_0 (sysfs node_guid)")


def test_a_guid_two_sysfs_files_claim_is_not_joined_whatever_their_order() -> None:
    rows = {"host": ["gpu21", "gpu22"], "device": ["mlx5_0", "mlx5_0"], "key": ["node_guid_hex"] * 2}
    guid = ["0x1070fd0300cc0021"] * 2
    for attrs in (pl.DataFrame({**rows, "value": guid}), pl.DataFrame({**rows, "value": guid}).reverse()):
        ent = resolve(attributes=attrs)
        assert ent.hcas == {}
        assert [str(c) for c in ent.conflicts] == [
            "node GUID 0x1070fd0300cc0021 is gpu21 mlx5_0 (sysfs node_guid); gpu22 mlx5_0 (sysfs node_guid): "
            "not joined: left as read"
        ]


@pytest.mark.parametrize(
    ("description", "name"),
    [
        ("MF0;ib-leaf01:MQM9700/U1", "ib-leaf01"),
        ("MF0;sw-a:MSB7800/U1", "sw-a"),
        ("Quantum Mellanox Technologies", "Quantum Mellanox Technologies"),
        ("", None),
        (None, None),
        ("MF0;:MQM9700/U1", "MF0;:MQM9700/U1"),
    ],
)
def test_switch_name(description: str | None, name: str | None) -> None:
    assert switch_name(description) == name


# ---- apply -----------------------------------------------------------------------------------


def test_guid_and_lid_findings_take_the_hosts_name_and_merge_per_cable() -> None:
    links = _links()
    ent = resolve(hosts=["gpu02", "unknown"], tables={"links": links})
    f = make_findings(
        [
            _f("link_degraded", "gpu02", "mlx5_0"),
            _f("link_degraded", "mgmt01", "0x1070fd0300cc0002"),  # the HCA end, by GUID
            _f("link_degraded", "unknown", "0x98039b0300bb0001", 2),  # the leaf end, by GUID, no host
            _f("link_errors", "unknown", "lid:12", metric="symbol_errors", message="symbol errors"),
            _f("link_errors", "unknown", "0x98039b0300bb0002", 1, metric="symbol_errors", message="x"),
        ]
    )
    out = apply(f, ent, build(tables={"links": links}).cable_ends())
    rows = out.select("kind", "host", "device", "port").rows()
    assert rows == [
        ("link_degraded", "gpu02", "mlx5_0", 1),
        ("link_errors", "gpu02", "mlx5_0", 1),
        ("link_errors", "ib-leaf02", "0x98039b0300bb0002", 1),  # a switch port: no host, named by its switch
    ]
    ev = json.loads(out["evidence"][0])
    assert ev["cable"] == ["gpu02 mlx5_0 port 1", "ib-leaf01 port 2"]
    assert [(x["host"], x["device"]) for x in ev["also_seen"]] == [
        ("mgmt01", "0x1070fd0300cc0002"),
        ("unknown", "0x98039b0300bb0001"),
    ]
    assert json.loads(out["evidence"][1])["seen_as"] == {"host": "unknown", "device": "lid:12"}
    assert out.schema == f.schema


def test_one_port_two_metrics_stay_two_findings_and_disjoint_windows_stay_apart() -> None:
    ent = resolve(hosts=["gpu02"], tables={"links": _links()})
    later = {"start": T + dt.timedelta(hours=1), "end": T + dt.timedelta(hours=2)}
    f = make_findings(
        [
            _f("link_errors", "gpu02", "mlx5_0", metric="symbol_errors"),
            _f("link_errors", "gpu02", "mlx5_0", metric="port_rcv_errors", severity="warning"),
            _f("link_degraded", "gpu02", "mlx5_0"),
            _f("link_degraded", "mgmt01", "0x98039b0300bb0001", 2, **later),
        ]
    )
    out = apply(f, ent, build(tables={"links": _links()}).cable_ends())
    assert out.height == 4


def test_apply_on_nothing_and_on_garbage_names() -> None:
    ent = resolve(hosts=[], tables={"links": _links()})
    empty = make_findings([])
    assert apply(empty, ent, None).height == 0
    f = make_findings(
        [
            _f("link_errors", "h", "0xnothex", metric="m"),
            _f("link_errors", "h", "lid:", metric="m"),
            _f("link_errors", "h", "lid:99999999999", metric="m"),
            _f("packet_loss", "h", None, None, metric="m"),
        ]
    )
    out = apply(f, ent, None)
    assert out.select("host", "device").rows() == [
        ("h", "0xnothex"),
        ("h", "lid:"),
        ("h", "lid:99999999999"),
        ("h", None),
    ]


def test_no_finding_on_sample_traces_says_unknown_where_an_input_maps_it() -> None:
    a = fabricscope.run_analysis(REPO / "sample_traces")
    f = a.findings
    # a packet capture names no host and no GUID: those stay unknown, nothing else does
    unknown = f.filter(pl.col("host") == "unknown")
    assert set(unknown["device"].to_list()) <= {"capture0", None}
    assert f.filter(pl.col("device").str.starts_with("0x")).height == 0
    assert "entities" in a.tables and a.tables["entities"].height > 0


def test_cli_parse_writes_the_entities_table_beside_links(tmp_path: Path) -> None:
    out = tmp_path / "s.parquet"
    r = _cli("parse", str(COMMITTED / "chain-fqdn-cable"), "-o", str(out))
    assert r.returncode == 0, r.stderr
    assert "s.entities.parquet" in r.stdout
    ent = pl.read_parquet(tmp_path / "s.entities.parquet")
    assert ent.schema == ENTITIES_SCHEMA
    host = ent.filter(pl.col("entity") == "host:fqdn-gpu02.cluster.local")
    assert set(host["alias"].to_list()) == {"fqdn-gpu02", "fqdn-gpu02.cluster.local"}
    assert "samples" in host["source"].to_list()
    cable = ent.filter((pl.col("kind") == "cable") & pl.col("name").str.starts_with("fqdn-gpu02.cluster.local mlx5_0"))
    assert cable["name"].unique().to_list() == ["fqdn-gpu02.cluster.local mlx5_0 port 1 <-> fqdn-leaf01 port 2"]


def test_guids_are_normalised_as_the_readers_do() -> None:
    # a GUID without its leading zeros (`0x2c9030001`) is 0x00000002c9030001 to every reader
    attrs = pl.DataFrame({"host": ["gpu05"], "device": ["mlx5_0"], "key": ["node_guid_hex"], "value": ["0x2c9030001"]})
    ent = resolve(hosts=["gpu05"], attributes=attrs)
    assert ent.hcas == {"0x00000002c9030001": ("gpu05", "mlx5_0")}
    f = make_findings([_f("link_errors", "unknown", "0x2C9030001", metric="symbol_errors")])
    out = apply(f, ent)
    assert out.select("host", "device", "port").rows() == [("gpu05", "mlx5_0", 1)]
    assert json.loads(out["evidence"][0])["seen_as"] == {"host": "unknown", "device": "0x2C9030001"}


def test_the_conflicts_table_shows_names_from_the_data_escaped() -> None:
    # The report and the dashboard show this table: a host name may hold control characters.
    rows = conflicts_frame(
        [Conflict("short_name", "node1\x1b[2J", ("node1.a\nFORGED (findings)",), "not joined")]
    ).rows()
    assert rows == [("short_name", "node1\\x1b[2J", "node1.a\\x0aFORGED (findings)", "not joined")]
