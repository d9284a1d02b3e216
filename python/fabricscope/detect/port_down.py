"""``port_down``: ports whose physical state is Polling, Disabled or Sleep (no link).

The port state rows come from ``iblinkinfo`` and ``ibdiagnet2.net_dump`` (``port_phys_state_id``,
IBA PortInfo:PortPhysicalState, with ``port_state_id`` beside it). What the last state of each port
means depends on what else the input says about it:

* **Polling** (the port is looking for a link partner and finds none) is a warning when the port
  had a link earlier in the input, when the topology (``links``) shows it cabled, or when it is an
  HCA port (the host is off the fabric): the cable is unplugged or bad. A switch port seen only
  Polling is most often simply unused, so those are one info finding per switch listing them.
* **Disabled** is an administrative state (the subnet manager or ``ibportstate ... disable``):
  info, unless the port had a link earlier in the input (then a warning: someone turned it off).
* **Sleep** is treated like Polling.
* A **host with no link on any of its HCA ports** (two or more, every port it lists Polling, Disabled or Sleep,
  whatever the reason each one has) is off the compute fabric: one warning on the host, with every
  port in its evidence, and each port's own finding kept as information, so the server pages once.

A port that comes back to LinkUp in the same input is a flap, which ``link_flap`` reports.
"""

from __future__ import annotations

from typing import Any

import polars as pl

from fabricscope.detect._base import AnalysisInput, DetectorSpec, no_rates
from fabricscope.detect._common import entity_strings
from fabricscope.incidents.findings import make_findings

KIND = "port_down"
LINK_UP = 5.0
PHYS_NAMES = {
    1.0: "Sleep",
    2.0: "Polling",
    3.0: "Disabled",
    4.0: "PortConfigurationTraining",
    5.0: "LinkUp",
    6.0: "LinkErrorRecovery",
    7.0: "PhyTest",
}
NO_LINK = (1.0, 2.0, 3.0)


def _node_facts(inp: AnalysisInput) -> dict[tuple[str, str], dict[str, str]]:
    """(host, device) -> node attributes (``node_type``, ``node_description``)."""
    attrs = inp.attributes
    if attrs.is_empty():
        return {}
    rows = (
        attrs.filter(pl.col("port").is_null() & pl.col("key").is_in(["node_type", "node_description"]))
        .with_columns(pl.col("host", "device", "key").cast(pl.String))
        .group_by(["host", "device", "key"])
        .agg(pl.col("value").last())
    )
    out: dict[tuple[str, str], dict[str, str]] = {}
    for r in rows.iter_rows(named=True):
        out.setdefault((r["host"], r["device"]), {})[r["key"]] = r["value"]
    return out


def _ranges(ports: list[int]) -> str:
    """``[5, 6, 7, 9]`` -> ``5-7, 9``."""
    out: list[str] = []
    start = prev = None
    for p in sorted(ports):
        if start is None:
            start = prev = p
        elif p == prev + 1:
            prev = p
        else:
            out.append(f"{start}" if start == prev else f"{start}-{prev}")
            start = prev = p
    if start is not None:
        out.append(f"{start}" if start == prev else f"{start}-{prev}")
    return ", ".join(out)


def detect(inp: AnalysisInput) -> pl.DataFrame:
    """Find ports without a link and say what the state most likely means."""
    cfg = inp.config[KIND]
    states = inp.gauges.filter(pl.col("counter") == "port_phys_state_id")
    if states.is_empty():
        return make_findings([])
    every_port = (
        entity_strings(states)
        .sort("time")
        .group_by(["host", "device", "port"], maintain_order=True)
        .agg(
            pl.col("value").last().alias("state"),
            pl.col("time").last().alias("last_seen"),
            pl.col("time").filter(pl.col("value") == LINK_UP).max().alias("last_up"),
            pl.col("source").last().alias("source"),
        )
    )
    per_port = every_port.filter(pl.col("state").is_in(NO_LINK))
    if per_port.is_empty():
        return make_findings([])
    # The state has held since the first reading of it after the last LinkUp.
    since = (
        entity_strings(states)
        .join(per_port.select("host", "device", "port", "last_up"), on=["host", "device", "port"])
        .filter(pl.col("last_up").is_null() | (pl.col("time") > pl.col("last_up")))
        .group_by(["host", "device", "port"])
        .agg(pl.col("time").min().alias("since"))
    )
    per_port = per_port.join(since, on=["host", "device", "port"], how="left")
    nodes = _node_facts(inp)
    off_fabric = _hosts_off_fabric(every_port, nodes)
    cabled = {(r["node_guid"], r["port"]): r for r in inp.fabric.peers().iter_rows(named=True)}
    rows: list[dict[str, Any]] = []
    unused: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for p in per_port.iter_rows(named=True):
        facts = nodes.get((p["host"], p["device"]), {})
        node_type = facts.get("node_type", "unknown")
        name = facts.get("node_description") or p["device"]
        what = {"switch": "switch", "hca": "HCA", "router": "router"}.get(node_type, "node")
        state = PHYS_NAMES.get(p["state"], f"state {p['state']:g}")
        peer = cabled.get((p["device"], p["port"]))
        was_up = p["last_up"] is not None
        evidence: dict[str, Any] = {
            "rule": f"{KIND}.phys_state",
            "threshold_source": cfg["source"],
            "phys_state": state,
            "node_type": node_type,
            "source": p["source"],
        }
        if was_up:
            evidence["last_link_up"] = p["last_up"].isoformat()
        if peer is not None:
            evidence["peer"] = {"node_guid": peer["peer_guid"], "port": peer["peer_port"], "name": peer["peer_name"]}
        subject = f"port {p['port']} of {what} {name} is {state}"
        if state == "Disabled":
            severity = "warning" if was_up else "info"
            cause = "turned off by the subnet manager or an administrator (`ibportstate <lid> <port> enable`)"
            if was_up:
                cause = "it had a link before: " + cause
        elif was_up or peer is not None or node_type == "hca":
            severity = "warning"
            reasons = []
            if was_up:
                reasons.append("it had a link earlier in this input")
            if peer is not None:
                far = peer["peer_name"] or peer["peer_guid"]
                reasons.append(f"the topology shows it cabled to {far} port {peer['peer_port']}")
            if node_type == "hca":
                reasons.append("the host is off the fabric")
            cause = "cable unplugged or bad (" + "; ".join(reasons) + ")"
        else:
            unused.setdefault((p["host"], p["device"]), []).append({**p, "name": name, "what": what, "state": state})
            continue
        if p["host"] in off_fabric and node_type == "hca":
            # the host's one warning says it; the port stays listed
            severity = "info"
            evidence["host_off_fabric"] = True
        rows.append(
            {
                "kind": KIND,
                "severity": severity,
                "host": p["host"],
                "device": p["device"],
                "port": p["port"],
                "layer": "network",
                "start": p["since"],
                "end": p["last_seen"],
                "metric": "port_phys_state_id",
                "observed": p["state"],
                "expected": LINK_UP,
                "message": f"{subject}: {cause}",
                "evidence": evidence,
            }
        )
    for (host, device), ports in unused.items():
        first = ports[0]
        numbers = [q["port"] for q in ports]
        listed = _ranges(numbers)
        rows.append(
            {
                "kind": KIND,
                "severity": "info",
                "host": host,
                "device": device,
                "port": None,
                "layer": "network",
                "start": min(q["since"] for q in ports),
                "end": max(q["last_seen"] for q in ports),
                "metric": "port_phys_state_id",
                "observed": float(len(ports)),
                "expected": 0.0,
                "message": f"{len(ports)} port(s) of {first['what']} {first['name']} have no link ({listed}): "
                "unused, or cable unplugged or bad (no earlier link or topology says which)",
                "evidence": {
                    "rule": f"{KIND}.unused_or_unplugged",
                    "threshold_source": cfg["source"],
                    "ports": numbers,
                    "states": sorted({q["state"] for q in ports}),
                    "source": first["source"],
                },
            }
        )
    off_ports: dict[str, list[dict[str, Any]]] = {}
    for p in per_port.sort("host", "device", "port").iter_rows(named=True):
        if p["host"] in off_fabric and nodes.get((p["host"], p["device"]), {}).get("node_type") == "hca":
            off_ports.setdefault(p["host"], []).append(p)
    rows += [_host_off_fabric_row(host, ports, cfg) for host, ports in sorted(off_ports.items())]
    return make_findings(rows)


def _hosts_off_fabric(every_port: pl.DataFrame, nodes: dict[tuple[str, str], dict[str, str]]) -> set[str]:
    """Hosts with two or more HCA ports whose every port's last state is without a link."""
    states: dict[str, list[float]] = {}
    for p in every_port.iter_rows(named=True):
        if p["host"] and nodes.get((p["host"], p["device"]), {}).get("node_type") == "hca":
            states.setdefault(p["host"], []).append(p["state"])
    # one port alone is its own finding (a paste of one link says nothing of the host's others)
    return {h for h, s in states.items() if len(s) >= 2 and all(v in NO_LINK for v in s)}


def _host_off_fabric_row(host: str, ports: list[dict[str, Any]], cfg: dict) -> dict[str, Any]:
    states = [f"{q['device']} port {q['port']} {PHYS_NAMES.get(q['state'], q['state'])}" for q in ports]
    devices = sorted({q["device"] for q in ports})
    return {
        "kind": KIND,
        "severity": "warning",
        "host": host,
        "device": devices[0] if len(devices) == 1 else None,
        "port": None,
        "layer": "network",
        "start": min(q["since"] for q in ports),
        "end": max(q["last_seen"] for q in ports),
        "metric": "port_phys_state_id",
        "observed": float(len(ports)),
        "expected": 0.0,
        "message": f"host {host} is off the fabric: none of its {len(ports)} HCA port(s) has a link "
        f"({', '.join(states)})",
        "evidence": {
            "rule": f"{KIND}.host_off_fabric",
            "threshold_source": cfg["source"],
            "ports": [{"device": q["device"], "port": q["port"]} for q in ports],
            "states": sorted({PHYS_NAMES.get(q["state"], str(q["state"])) for q in ports}),
            "source": ports[0]["source"],
        },
    }


SPEC = DetectorSpec(
    name=KIND,
    summary="ports Polling/Disabled/Sleep (no link): cable unplugged or bad when the port had a link, is cabled "
    "in the topology or is an HCA port",
    detect=detect,
    scope="fabric",
    rates_needed=no_rates,
    defaults={
        "source": "InfiniBand Architecture Specification Vol. 1, PortInfo attribute (PortPhysicalState: 1 Sleep, "
        "2 Polling, 3 Disabled, 5 LinkUp); iblinkinfo(8) and ibportstate(8) (rdma-core infiniband-diags); "
        "fabricscope default: a switch port seen only Polling is reported as possibly unused (info)",
    },
    actions={
        "port_down": (
            "bring {entity} back: reseat the cable, check the switch port is enabled (ibportstate) and the link "
            "trains (mlxlink); replace the cable or transceiver if it does not"
        ),
    },
)
