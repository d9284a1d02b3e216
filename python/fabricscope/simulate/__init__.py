"""``fabricscope simulate``: realistic fabrics in real formats, with faults and ground truth.

A physical model of a leaf-spine fabric (:mod:`fabricscope.simulate.model`) produces cumulative
counters; writers (:mod:`fabricscope.simulate.writers`) emit them as Prometheus ``/federate``
text, ``ethtool -S`` logs, sysfs trees and ``grep -H`` dumps, ``perfquery -x`` logs and UFM
telemetry CSV (InfiniBand), spelled from the shared counter
vocabulary; ``truth.json`` says what a correct analysis reports. The simulator never imports
detector thresholds (``fabricscope.detect.config``) or detectors.

Example:
    >>> import tempfile
    >>> from fabricscope.simulate import simulate
    >>> with tempfile.TemporaryDirectory() as d:
    ...     res = simulate(d, "link-flap", duration=120)
    ...     res.truth["expected"][0]["kind"]
    'link_flap'
"""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from fabricscope.incidents.severity import Severity
from fabricscope.simulate.fabric import build_fabric
from fabricscope.simulate.gpus import write_gpu_files
from fabricscope.simulate.model import Fault, Simulation, Workload, run_model
from fabricscope.simulate.scenarios import SCENARIOS, Scenario
from fabricscope.simulate.sidefiles import (
    _switch_name,
    write_ibdev2netdev,
    write_ibnetdiscover,
    write_lldpctl,
    write_nccl_tests,
    write_sonic_lldp_table,
)
from fabricscope.simulate.writers import (
    write_ethtool,
    write_perfquery,
    write_prometheus,
    write_sysfs,
    write_sysfs_grep,
    write_ufm_csv,
)

__all__ = [
    "FORMATS",
    "SCENARIOS",
    "Fault",
    "Scenario",
    "SimResult",
    "Workload",
    "check_incidents",
    "check_truth",
    "simulate",
]

T0 = 1_796_400_000  # 2026-12-04T14:00:00Z
FORMATS = ("prometheus", "ethtool", "sysfs", "sysfs-grep", "perfquery", "ufm-csv")
TRUTH_SCHEMA = "fabricscope.truth/1"


@dataclass
class SimResult:
    """What :func:`simulate` wrote.

    Attributes:
        sim: The model's result, including the truth frame (``sim.samples``).
        expected: The samples a correct reader produces from the written files, per format.
        truth: The ``truth.json`` document.
        files: Written paths.
        bytes: Total bytes written.
    """

    sim: Simulation
    expected: dict[str, pl.DataFrame]
    truth: dict[str, Any]
    files: list[Path]
    bytes: int


def _iso(t_s: float) -> str:
    return dt.datetime.fromtimestamp(t_s, dt.timezone.utc).isoformat().replace("+00:00", "Z")


def _entity(sim: Simulation, host: int, nic: int | None, *, roce: bool, domain: str = "") -> dict[str, Any]:
    h = sim.fabric.hosts[host]
    name = f"{h.name}.{domain}" if domain else h.name
    if nic is None:
        return {"host": name, "device": None, "port": None}
    n = h.nics[nic]
    devices = [n.device] + ([n.netdev] if roce and n.netdev else [])
    return {"host": name, "device": devices, "port": n.port}


def _gpu_entity(sim: Simulation, e: dict[str, Any], *, roce: bool, domain: str) -> dict[str, Any]:
    """An expected finding's entity: a NIC port, a GPU link, a host, or a domain.

    ``nic`` names a NIC port, ``gpu`` and ``link`` a GPU link, ``entity`` something that is no
    host's (an NVLink domain, named as its finding names it); else the host itself.
    """
    if "entity" in e:
        return {"host": e["entity"], "device": e.get("device"), "port": None}
    if "gpu" not in e:
        return _entity(sim, e["host"], e.get("nic"), roce=roce, domain=domain)
    h = sim.fabric.hosts[e["host"]]
    return {"host": f"{h.name}.{domain}" if domain else h.name, "device": [f"gpu{e['gpu']}"], "port": e.get("link")}


def _truth(
    sc: Scenario, sim: Simulation, hosts: int, duration: float, interval: float, seed: int, domain: str = ""
) -> dict[str, Any]:
    """The scenario's truth.

    ``domain``: the hosts' DNS domain when an input names them by FQDN (the Prometheus
    ``instance``): findings use the most qualified name, and so does the truth.
    """
    roce = sim.fabric.tech.family == "roce"
    t_end = T0 + duration
    exp = []
    for e in sc.expected(hosts, duration):
        start = e.get("start")
        end = e.get("end")
        exp.append(
            {
                "kind": e["kind"],
                "severity": e["severity"],
                **_gpu_entity(sim, e, roce=roce, domain=domain),
                "priority": e.get("priority"),
                "layer": e.get("layer", "network"),
                "start": _iso(T0 + (start if start is not None else 0)),
                "end": _iso(min(t_end, T0 + end) if end is not None else t_end),
                "note": e.get("note", ""),
            }
        )
    allowed = [
        # "topology": a finding read from the management node's topology dump (ports named by GUID)
        {"kind": a["kind"], "host": "mgmt01", "device": None, "port": None}
        if a["host"] == "topology"
        else {"kind": a["kind"], **_entity(sim, a["host"], a.get("nic"), roce=roce, domain=domain)}
        for a in sc.allowed(hosts, duration)
    ]
    must_not = [
        {**_entity(sim, h, n, roce=roce, domain=domain), "reason": r} for h, n, r in sc.must_not(hosts, duration)
    ]
    suffix = f".{domain}" if domain else ""
    names = {i: h.name + suffix for i, h in enumerate(sim.fabric.hosts)} | {"topology": "mgmt01"}
    incidents = []
    for inc in sc.incidents(hosts, duration):
        r = inc["root"]
        # named as an expected finding is: a NIC port, a GPU link, a host or a domain
        root = {"kind": r["kind"], **_gpu_entity(sim, r, roce=roce, domain=domain)}
        if r.get("peer"):
            tier, index, port = r["peer"]
            root["peer"] = {"node": _switch_name(sc.prefix or sc.name, tier, index), "port": port}
        incidents.append(
            {
                "rule": inc["rule"],
                "root": root,
                "members": [{"kind": m["kind"], "host": names[m["host"]]} for m in inc["members"]],
                "optional": [{"kind": m["kind"], "host": names[m["host"]]} for m in inc.get("optional", [])],
            }
        )
    separate = [[names[i] for i in group] for group in sc.separate(hosts, duration)]
    return {
        "schema": TRUTH_SCHEMA,
        "scenario": sc.name,
        "summary": sc.summary,
        "technology": sim.fabric.tech.name,
        "seed": seed,
        "hosts": [h.name + suffix for h in sim.fabric.hosts],
        "start": _iso(T0),
        "end": _iso(t_end),
        "interval_s": interval,
        "expected": exp,
        "allowed": allowed,
        "must_not_report": must_not,
        "incidents": incidents,
        "separate": separate,
        "no_incidents": bool(sc.extra.get("no_incidents", False)),
        "rules": (
            "Every expected finding must be reported (same kind, severity >= floor, same host, device in the "
            "list, same port/priority/layer when given, window overlapping the expected window widened by two "
            "intervals). No warning or critical finding may appear beyond expected and allowed ones; none at all "
            "on must_not_report entities. Every expected incident must be found (same root kind, host, device and "
            "cable far end) holding every member and nothing beyond members and optional ones; no incident may hold "
            "findings of two `separate` host groups; no incident beyond the expected ones when some are expected or "
            "`no_incidents` is true."
        ),
    }


def simulate(
    outdir: str | os.PathLike[str],
    scenario: str,
    *,
    hosts: int | None = None,
    duration: float | None = None,
    interval: float | None = None,
    seed: int = 1,
    formats: list[str] | None = None,
    sysfs_snapshots: str = "last",
    lldp: str | None = None,
    nics: int | None = None,
) -> SimResult:
    """Simulate one scenario and write its files and ``truth.json`` under ``outdir``.

    Args:
        outdir: Output directory (created).
        scenario: A name from :data:`SCENARIOS`.
        hosts: Hosts (default: the scenario's).
        duration: Seconds (default: the scenario's).
        interval: Seconds between readings (default: the scenario's).
        seed: Random seed; output is a pure function of the arguments.
        formats: Subset of :data:`FORMATS` (default: the scenario's).
        sysfs_snapshots: ``last`` (one tree per host) or ``all`` (one tree per reading).
        lldp: A RoCE fabric's topology as ``lldpctl`` files (one per host) or SONiC ``show lldp
            table`` files (``sonic``, one per leaf); default: the scenario's (``lldpctl`` unless it says).
        nics: NICs per host (default: the scenario's).

    Returns:
        A :class:`SimResult`.

    Raises:
        ValueError: unknown scenario or format, or too few hosts.
    """
    if scenario not in SCENARIOS:
        raise ValueError(f"unknown scenario {scenario!r}; known: {', '.join(SCENARIOS)}")
    sc = SCENARIOS[scenario]
    h = hosts or sc.hosts
    if h < 2:
        raise ValueError("a fabric needs at least 2 hosts")
    if nics is not None and not 1 <= nics <= 16:
        raise ValueError(f"NICs per host must be 1 to 16, not {nics}")
    d = float(duration or sc.duration)
    iv = float(interval or sc.interval)
    lldp = lldp or sc.extra.get("lldp", "lldpctl")
    if lldp not in ("lldpctl", "sonic"):
        raise ValueError(f"unknown LLDP source {lldp!r}; known: lldpctl, sonic")
    fmts = list(formats or sc.formats)
    for f in fmts:
        if f not in FORMATS:
            raise ValueError(f"unknown format {f!r}; known: {', '.join(FORMATS)}")
    fabric = build_fabric(
        sc.tech,
        h,
        prefix=sc.prefix or sc.name,
        nics_per_host=nics or sc.nics,
        hosts_per_leaf=sc.hosts_per_leaf,
        spines=sc.spines,
        oversubscription=sc.oversubscription,
        seed=seed,
    )
    samples = round(d / iv) + 1
    sim = run_model(fabric, sc.workload, sc.faults(h, d), samples=samples, interval=iv, seed=seed, t0=T0)
    out = Path(outdir)
    out.mkdir(parents=True, exist_ok=True)
    expected: dict[str, pl.DataFrame] = {}
    for f in fmts:
        # a previous run's files would mix into this one's series
        shutil.rmtree(out / f, ignore_errors=True)
        if f == "prometheus":
            expected[f] = write_prometheus(
                sim, out / "prometheus" / "federate.prom", seed=seed, domain=sc.extra.get("domain", "")
            )
        elif f == "ethtool":
            expected[f] = write_ethtool(
                sim, out / "ethtool", driver=sc.nic_driver, whole_seconds=sc.extra.get("whole_seconds", False)
            )
        elif f == "sysfs":
            expected[f] = write_sysfs(sim, out / "sysfs", snapshots=sysfs_snapshots)
        elif f == "sysfs-grep":
            expected[f] = write_sysfs_grep(sim, out / "sysfs-grep")
        elif f == "perfquery":
            expected[f] = write_perfquery(sim, out / "perfquery")
        else:
            expected[f] = write_ufm_csv(sim, out / "ufm-csv" / "metrics.csv")
    if sc.topology and sim.fabric.tech.family == "infiniband":
        shutil.rmtree(out / "ibnetdiscover", ignore_errors=True)
        write_ibnetdiscover(
            sim.fabric, out / "ibnetdiscover" / "fabric-ibnetdiscover-p.txt", prefix=sc.prefix or sc.name, t_s=T0
        )
    if sc.extra.get("ibdev2netdev") and sim.fabric.tech.family != "infiniband":
        shutil.rmtree(out / "ibdev2netdev", ignore_errors=True)
        write_ibdev2netdev(sim.fabric, out / "ibdev2netdev", t_s=T0)
    if sc.topology and sim.fabric.tech.family == "roce":
        shutil.rmtree(out / "lldpctl", ignore_errors=True)
        shutil.rmtree(out / "sonic-lldp", ignore_errors=True)
        if lldp == "sonic":
            write_sonic_lldp_table(sim.fabric, out / "sonic-lldp", prefix=sc.prefix or sc.name)
        else:
            write_lldpctl(sim.fabric, out / "lldpctl", prefix=sc.prefix or sc.name)
    runs = sc.jobs(h, d)
    if runs:
        shutil.rmtree(out / "nccl-tests", ignore_errors=True)
        write_nccl_tests(sim.fabric, sc.faults(h, d), runs, out / "nccl-tests", t0=T0, end=d)
    if sc.extra.get("gpu"):
        shutil.rmtree(out / "nvidia-smi", ignore_errors=True)
        shutil.rmtree(out / "nvidia-smi-q", ignore_errors=True)
        shutil.rmtree(out / "dcgm", ignore_errors=True)
        write_gpu_files(
            [h.name for h in sim.fabric.hosts], out, sc.extra["gpu"], t0=T0, samples=samples, interval=iv, seed=seed
        )
    domain = sc.extra.get("domain", "") if "prometheus" in fmts else ""
    truth = _truth(sc, sim, h, d, iv, seed, domain)
    (out / "truth.json").write_text(json.dumps(truth, indent=2) + "\n")
    files = sorted(p for p in out.rglob("*") if p.is_file())
    return SimResult(sim, expected, truth, files, sum(p.stat().st_size for p in files))


def _dev_ok(want: list[str] | None, got: str | None) -> bool:
    return want is None or got in want


def check_truth(findings: pl.DataFrame, truth: dict[str, Any]) -> dict[str, list[Any]]:
    """Compare findings with a ``truth.json`` document.

    Args:
        findings: A findings frame (``fabricscope.analyze``).
        truth: The truth document.

    Returns:
        ``missing`` (expected findings not reported), ``unexpected`` (warning/critical findings
        neither expected nor allowed) and ``forbidden`` (warning/critical findings on a
        must-not-report entity); all empty when the analysis is correct.
    """
    pad = dt.timedelta(seconds=2 * float(truth.get("interval_s", 10)))
    rows = findings.to_dicts()

    def matches(e: dict[str, Any], r: dict[str, Any], *, window: bool) -> bool:
        if r["kind"] != e["kind"] or r["host"] != e["host"] or not _dev_ok(e.get("device"), r["device"]):
            return False
        if e.get("port") is not None and r["port"] is not None and r["port"] != e["port"]:
            return False
        if e.get("priority") is not None and r["priority"] != e["priority"]:
            return False
        if e.get("layer") is not None and r["layer"] is not None and r["layer"] != e["layer"]:
            return False
        if window and r["start"] is not None and r["end"] is not None:
            s = dt.datetime.fromisoformat(e["start"].replace("Z", "+00:00")) - pad
            t = dt.datetime.fromisoformat(e["end"].replace("Z", "+00:00")) + pad
            if r["end"] < s or r["start"] > t:
                return False
        return True

    missing = [
        e
        for e in truth["expected"]
        if not any(matches(e, r, window=True) and Severity(r["severity"]) >= Severity(e["severity"]) for r in rows)
    ]
    loud = [r for r in rows if r["severity"] != "info"]
    ok_list = truth["expected"] + truth.get("allowed", [])
    unexpected = [r for r in loud if not any(matches(e, r, window=False) for e in ok_list)]
    forbidden = [
        r
        for r in loud
        for m in truth.get("must_not_report", [])
        if r["host"] == m["host"] and _dev_ok(m.get("device"), r["device"])
    ]
    return {"missing": missing, "unexpected": unexpected, "forbidden": forbidden}


def check_incidents(incidents: list[dict[str, Any]], truth: dict[str, Any]) -> dict[str, list[Any]]:
    """Compare incidents (the findings document's ``incidents`` array) with a ``truth.json`` document.

    Args:
        incidents: Incident documents (:func:`fabricscope.incidents.correlate.incident_documents`).
        truth: The truth document.

    Returns:
        ``missing`` (expected incidents not found), ``missing_members`` (an expected incident found
        without a member), ``stray_members`` (a found incident holding a finding neither member nor
        optional), ``false_merges`` (an incident spanning two ``separate`` host groups) and ``extra``
        (incidents beyond the expected ones, when some are expected or ``no_incidents`` is set); all
        empty when the correlation is correct.
    """
    out: dict[str, list[Any]] = {
        "missing": [],
        "missing_members": [],
        "stray_members": [],
        "false_merges": [],
        "extra": [],
    }
    matched: set[str] = set()
    for exp in truth.get("incidents", []):
        r = exp["root"]
        found = None
        for inc in incidents:
            got = inc["root"]
            if got["kind"] != r["kind"] or got["host"] != r["host"] or not _dev_ok(r.get("device"), got["device"]):
                continue
            peer = r.get("peer")
            if peer and f"{peer['node']} port {peer['port']}" not in inc["entity"]:
                continue
            found = inc
            break
        if found is None:
            out["missing"].append(exp)
            continue
        matched.add(found["id"])
        held = {(c["finding"]["kind"], c["finding"]["host"]) for c in found["consequences"]}
        for m in exp["members"]:
            if (m["kind"], m["host"]) not in held:
                out["missing_members"].append({"incident": found["id"], **m})
        ok = {(m["kind"], m["host"]) for m in exp["members"] + exp.get("optional", [])}
        ok.add((r["kind"], r["host"]))
        for k in sorted(held - ok, key=str):
            out["stray_members"].append({"incident": found["id"], "kind": k[0], "host": k[1]})
    groups = [set(g) for g in truth.get("separate", [])]
    for inc in incidents:
        hosts = set(inc["hosts"])
        touched = [i for i, g in enumerate(groups) if hosts & g]
        if len(touched) > 1:
            out["false_merges"].append({"incident": inc["id"], "hosts": sorted(hosts), "groups": touched})
    if truth.get("incidents") or truth.get("no_incidents"):
        out["extra"] = [{"incident": i["id"], "title": i["title"]} for i in incidents if i["id"] not in matched]
    return out
