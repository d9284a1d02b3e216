"""``nvlink_fabric``: GPUs whose NVLink fabric registration or health is not good, and whole domains.

Read from the GPUs' attributes: ``nvidia-smi -q``'s Fabric block (``fabric_state``,
``fabric_status``, ``fabric_health_*``) and ``nvidia-smi nvlink -s``'s ``link_state`` per link; and
from DCGM's gauges of the same facts (dcgm-exporter, :func:`dcgm_fabric_attributes`):
``DCGM_FI_DEV_FABRIC_MANAGER_STATUS`` (``dcgmFabricManagerStatus_t``: 3 Success, 4 Failure, 1 Not
Started, 2 In Progress; 0 Not Supported, 5 Unrecognized and 6 NVML Too Old say nothing of the
fabric) and ``DCGM_FI_DEV_FABRIC_HEALTH_MASK`` (NVML's ``NVML_GPU_FABRIC_HEALTH_MASK_*``: 2-bit
degraded bandwidth, route recovery, route unhealthy and access timeout recovery at bits 0, 2, 4,
6, 1 true and 2 false; 4-bit incorrect configuration at bit 8, 1 none and 2 or more incorrect).
A GB200/GB300 GPU whose status is Not Started is not judged by it: its NVSwitches are the rack's,
managed outside the node, and DCGM reports Not Started where no fabric manager runs.

* A GPU whose fabric State is known and not ``Completed`` (``Not Started``, ``In Progress``), or
  whose Status is known and not ``Success`` (``Insufficient Resources`` ...), has not joined its
  NVLink fabric: CUDA peer traffic over NVLink fails or falls back (NVML ``nvmlGpuFabricInfo``:
  the status "must be checked only if state returns complete"; Azure/azhpc-images pull request 506:
  a node with ``Status: Insufficient Resources`` passed checks and went back to production).
* A GPU whose Health Summary is ``Unhealthy``, whose Bandwidth is not ``Full`` (degraded), or that
  reports a route recovery in progress, an unhealthy route, an access timeout recovery or an
  incorrect configuration as ``True`` is degraded.
* A GPU with inactive links beside active ones lost those links (NVIDIA Health Validation: inactive
  NVLink links above 0 are critical). A GPU whose every link is inactive has no NVLink (no bridge
  or fabric): the reader reports it, it is no finding.

Findings are one per host (a compute tray) of kind ``nvlink_fabric``, naming its GPUs. When every
GPU of a domain (one ClusterUUID and clique, at least ``min_domain_gpus`` GPUs seen) is degraded,
or the same links are inactive on all of them, the fault is the domain's, not each tray's: one
``nvlink_domain`` finding roots it (host: the domain; device: the suspected NVSwitch tray when the
inactive links name one) and every tray's finding is its consequence (relation
``same_nvlink_domain``): one incident, never one page per tray. Sentinels (``N/A``, ``Not
Supported``) are unknown, never faults.
"""

from __future__ import annotations

from typing import Any

import polars as pl

from fabricscope.detect._base import AnalysisInput, DetectorSpec, no_rates
from fabricscope.fabric.nvlink import domain_label, latest_gpu_attributes
from fabricscope.fabric.relations import SAME_NVLINK_DOMAIN, Chain, Relation
from fabricscope.incidents.findings import empty_findings, make_findings
from fabricscope.sources import default

KIND = "nvlink_fabric"
DOMAIN_KIND = "nvlink_domain"

_KEYS = [
    "gpu_name",
    "gpu_chassis_serial",
    "fabric_state",
    "fabric_status",
    "fabric_cluster_uuid",
    "fabric_clique_id",
    "fabric_health_summary",
    "fabric_health_bandwidth",
    "fabric_route_recovery",
    "fabric_route_unhealthy",
    "fabric_access_timeout_recovery",
    "fabric_incorrect_configuration",
]
_TRUE_IS_BAD = {
    "fabric_route_recovery": "route recovery in progress",
    "fabric_route_unhealthy": "route unhealthy",
    "fabric_access_timeout_recovery": "access timeout recovery",
    "fabric_incorrect_configuration": "incorrect configuration",
}


FM_STATUS = "gpu_fabric_manager_status"
HEALTH_MASK = "gpu_fabric_health_mask"
"""The DCGM gauges this detector reads besides the attributes (the core's vocabulary names)."""
_FM_STATUS = {
    3: ("Completed", "Success"),
    4: ("Completed", "Failure"),
    2: ("In Progress", None),
    1: ("Not Started", None),
}
# (attribute, shift, width): a boolean sub-field is 1 true, 2 false, 0 not supported
_HEALTH_BITS = (
    ("fabric_health_bandwidth", 0, 0x3),
    ("fabric_route_recovery", 2, 0x3),
    ("fabric_route_unhealthy", 4, 0x3),
    ("fabric_access_timeout_recovery", 6, 0x3),
)
_RACK_SCALE = ("GB200", "GB300")


def dcgm_fabric_attributes(inp: AnalysisInput) -> pl.DataFrame:
    """DCGM's fabric gauges as the Fabric block's attributes (``fabric_state``, ``fabric_health_*`` ...).

    One row per GPU, key and reading, in the attributes schema; none for a value that says
    nothing of the fabric (a sentinel, Not Supported, a health bit not supported).

    Example:
        >>> import datetime as dt, polars as pl
        >>> from fabricscope.detect._base import AnalysisInput
        >>> t = dt.datetime(2026, 12, 4, tzinfo=dt.timezone.utc)
        >>> g = pl.DataFrame({"time": [t, t], "host": ["h", "h"], "device": ["gpu0", "gpu0"], "port": [None, None],
        ...                   "counter": ["gpu_fabric_manager_status", "gpu_fabric_health_mask"],
        ...                   "value": [4.0, float(1 | 2 << 2 | 2 << 4 | 2 << 6 | 1 << 8)]})
        >>> a = dcgm_fabric_attributes(AnalysisInput(pl.DataFrame(), pl.DataFrame(), g, pl.DataFrame(), {}))
        >>> dict(zip(a["key"], a["value"]))["fabric_health_bandwidth"], dict(zip(a["key"], a["value"]))["fabric_status"]
        ('Degraded', 'Failure')
    """
    g = inp.gauges
    schema = {
        "time": pl.Datetime("ns", "UTC"),
        "host": pl.String,
        "device": pl.String,
        "port": pl.UInt16,
        "key": pl.String,
        "value": pl.String,
        "source": pl.String,
    }
    if g.is_empty() or "counter" not in g.columns:
        return pl.DataFrame(schema=schema)
    fabric = g.filter(
        pl.col("counter").cast(pl.String).is_in([FM_STATUS, HEALTH_MASK])
        & pl.col("value").is_finite()
        & (pl.col("value") >= 0)
        & (pl.col("value") < 2**32)
    )
    if fabric.is_empty():
        return pl.DataFrame(schema=schema)
    rack = _rack_scale_gpus(inp)
    rows = []
    for t, host, device, counter, value in fabric.select(
        "time",
        pl.col("host").cast(pl.String),
        pl.col("device").cast(pl.String),
        pl.col("counter").cast(pl.String),
        "value",
    ).iter_rows():
        code = int(value)
        at = {"time": t, "host": host, "device": device, "port": None, "source": "dcgm"}
        if counter == FM_STATUS:
            state, status = _FM_STATUS.get(code, (None, None))
            if code == 1 and (host, device) in rack:
                state = None
            if state is not None:
                rows.append({**at, "key": "fabric_state", "value": state})
            if status is not None:
                rows.append({**at, "key": "fabric_status", "value": status})
            continue
        for key, shift, width in _HEALTH_BITS:
            bit = (code >> shift) & width
            if bit in (1, 2):
                words = ("Degraded", "Full") if key == "fabric_health_bandwidth" else ("True", "False")
                rows.append({**at, "key": key, "value": words[bit - 1]})
        config = (code >> 8) & 0xF
        if config:
            rows.append({**at, "key": "fabric_incorrect_configuration", "value": "True" if config >= 2 else "False"})
    return pl.DataFrame(rows, schema=schema, orient="row") if rows else pl.DataFrame(schema=schema)


def _rack_scale_gpus(inp: AnalysisInput) -> set[tuple[str, str]]:
    """GPUs whose model (DCGM's ``modelName``, ``nvidia-smi -q``'s Product Name) is a rack-scale one."""
    a = inp.attributes
    if a.is_empty() or "key" not in a.columns:
        return set()
    named = a.filter(pl.col("key").cast(pl.String).is_in(["modelName", "gpu_name"]))
    return {
        (str(h), str(d))
        for h, d, v in named.select("host", "device", "value").iter_rows()
        if v is not None and any(m in str(v) for m in _RACK_SCALE)
    }


def _inactive_links(inp: AnalysisInput) -> dict[tuple[str, str], tuple[list[int], int]]:
    """Per GPU: its links last seen inactive, and how many links it reported (``nvidia-smi nvlink -s``)."""
    a = inp.attributes
    if a.is_empty() or "key" not in a.columns:
        return {}
    s = a.filter((pl.col("key").cast(pl.String) == "link_state") & pl.col("port").is_not_null()).with_columns(
        pl.col("host").cast(pl.String), pl.col("device").cast(pl.String), pl.col("value").cast(pl.String)
    )
    s = s.filter(pl.col("device").str.contains(r"^gpu\d+$"))
    if s.is_empty():
        return {}
    last = s.sort("time").group_by("host", "device", "port").agg(pl.col("value").last())
    out: dict[tuple[str, str], tuple[list[int], int]] = {}
    for (host, device), g in last.group_by("host", "device"):
        inactive = sorted(int(p) for p, v in zip(g["port"], g["value"], strict=True) if v == "inactive")
        out[(str(host), str(device))] = (inactive, g.height)
    return out


def _gpu_problems(r: dict[str, Any], inactive: list[int], links: int) -> tuple[str | None, list[str]]:
    """A GPU's severity (None: healthy or unknown) and what is wrong with it."""
    problems, severity = [], None
    state, status = r["fabric_state"], r["fabric_status"]
    if state is not None and state != "Completed":
        problems.append(f"fabric state {state}")
        severity = "critical"
    if status is not None and status != "Success":
        problems.append(f"fabric status {status}")
        severity = "critical"
    summary, bandwidth = r["fabric_health_summary"], r["fabric_health_bandwidth"]
    if summary is not None and summary.lower() == "unhealthy":
        problems.append("health summary Unhealthy")
        severity = severity or "warning"
    if bandwidth is not None and bandwidth.lower() != "full":
        problems.append(f"bandwidth {bandwidth}")
        severity = severity or "warning"
    for key, words in _TRUE_IS_BAD.items():
        v = r[key]
        if v is not None and v.lower().startswith("true"):
            problems.append(words)
            severity = severity or "warning"
    if inactive and len(inactive) < links:
        problems.append(f"{len(inactive)} of {links} links inactive ({', '.join(map(str, inactive))})")
        severity = "critical"
    return severity, problems


def _degraded(r: dict[str, Any]) -> bool:
    b, s = r["fabric_health_bandwidth"], r["fabric_health_summary"]
    return (b is not None and b.lower() != "full") or (s is not None and s.lower() == "unhealthy")


def detect(inp: AnalysisInput) -> pl.DataFrame:
    """Judge every GPU's fabric registration, health and links; a fault of a whole domain roots one finding."""
    cfg = inp.config[KIND]
    dcgm = dcgm_fabric_attributes(inp)
    attributes = inp.attributes
    if dcgm.height:
        attributes = (
            pl.concat(
                [attributes.with_columns(pl.col(pl.Categorical).cast(pl.String)), dcgm.select(attributes.columns)],
                how="vertical_relaxed",
            )
            if not attributes.is_empty()
            else dcgm
        )
    gpus = latest_gpu_attributes(attributes, _KEYS)
    links = _inactive_links(inp)
    known = {(r["host"], r["device"]) for r in gpus.iter_rows(named=True)}
    extra = [{"host": h, "device": d} for (h, d) in links if (h, d) not in known]
    rows_in = gpus.to_dicts() + [{**dict.fromkeys(gpus.columns), **e} for e in extra]
    if not rows_in:
        return empty_findings()
    t_end = attributes["time"].max() if not attributes.is_empty() else None
    judged = []
    for r in rows_in:
        inactive, n = links.get((r["host"], r["device"]), ([], 0))
        severity, problems = _gpu_problems(r, inactive, n)
        judged.append(
            {
                **r,
                "severity": severity,
                "problems": problems,
                "inactive": inactive,
                "links": n,
                "domain": domain_label(r["fabric_cluster_uuid"], r["fabric_clique_id"]),
            }
        )
    # whole-domain faults: every GPU degraded, or the same links inactive on every GPU
    domains: dict[str, list[dict[str, Any]]] = {}
    for j in judged:
        if j["domain"] is not None:
            domains.setdefault(j["domain"], []).append(j)
    rows: list[dict[str, Any]] = []
    domain_of_host: dict[str, str] = {}
    for d, members in sorted(domains.items()):
        if len(members) < cfg["min_domain_gpus"]:
            continue
        common = set(members[0]["inactive"])
        for m in members[1:]:
            common &= set(m["inactive"])
        all_degraded = all(_degraded(m) for m in members)
        if not common and not all_degraded:
            continue
        hosts = sorted({m["host"] for m in members})
        tray = None
        why = []
        if common:
            links_text = ", ".join(map(str, sorted(common)))
            why.append(f"links {links_text} inactive on all {len(members)} GPUs")
            per = cfg["links_per_switch_tray"]
            trays = sorted({link // per for link in common})
            if len(trays) == 1:
                tray = f"nvswitch tray {trays[0]}"
        if all_degraded:
            why.append(f"fabric bandwidth degraded on all {len(members)} GPUs")
        for h in hosts:
            domain_of_host[h] = d
        cluster, _, clique = d.partition("/clique ")
        rows.append(
            {
                "kind": DOMAIN_KIND,
                "severity": "critical",
                "host": f"nvlink domain {d}",
                "device": tray,
                "port": None,
                "priority": None,
                "layer": "nvlink",
                "start": min(m["time"] for m in members if m["time"] is not None) if members else t_end,
                "end": t_end,
                "metric": "fabric_health_bandwidth" if all_degraded else "link_state",
                "observed": float(len(members)),
                "expected": 0.0,
                "message": (
                    f"NVLink domain {d}: {'; '.join(why)} across {len(hosts)} trays"
                    + (f"; suspected {tray} (links {', '.join(map(str, sorted(common)))})" if tray else "")
                ),
                "evidence": {
                    "rule": f"{KIND}.domain",
                    "threshold_source": cfg["source"],
                    "nvlink_domain": d,
                    "cluster_uuid": cluster,
                    "clique_id": clique,
                    "gpus": len(members),
                    "trays": hosts,
                    "common_inactive_links": sorted(common),
                    "suspected_switch_tray": tray,
                    "tray_mapping": cfg["tray_mapping_source"] if tray else None,
                },
            }
        )
    by_host: dict[str, list[dict[str, Any]]] = {}
    for j in judged:
        if j["severity"] is not None:
            by_host.setdefault(j["host"], []).append(j)
    for host, bad in sorted(by_host.items()):
        worst = "critical" if any(b["severity"] == "critical" for b in bad) else "warning"
        bad.sort(key=lambda b: b["device"])
        d = bad[0]["domain"]
        summary = "; ".join(f"{b['device']}: {', '.join(b['problems'])}" for b in bad)
        rows.append(
            {
                "kind": KIND,
                "severity": worst,
                "host": host,
                "device": bad[0]["device"] if len(bad) == 1 else None,
                "port": None,
                "priority": None,
                "layer": "nvlink",
                "start": min((b["time"] for b in bad if b["time"] is not None), default=t_end),
                "end": t_end,
                "metric": "fabric_state",
                "observed": float(len(bad)),
                "expected": 0.0,
                "message": f"NVLink fabric of {host}: {summary}",
                "evidence": {
                    "rule": f"{KIND}.gpu",
                    "threshold_source": cfg["source"],
                    "gpus": [
                        {
                            "device": b["device"],
                            "problems": b["problems"],
                            "state": b["fabric_state"],
                            "status": b["fabric_status"],
                            "inactive_links": b["inactive"],
                        }
                        for b in bad
                    ],
                    # the domain the tray's fault belongs to, when the whole domain is down
                    "nvlink_domain": domain_of_host.get(host) or d,
                },
            }
        )
    return make_findings(rows)


NVLINK_DOMAIN_DOWN = Chain(
    name="nvlink_domain_down",
    argument=(
        "Every GPU of an NVL72 rack reaches every other through the rack's NVSwitch trays: each GPU has one "
        "NVLink to each NVSwitch chip, two chips to a tray. When one tray fails, the same links go inactive on "
        "every GPU at once and the fabric manager reports every GPU's bandwidth degraded: one fault of the "
        "domain, seen by every tray of it."
    ),
    source=(
        "NVIDIA GB200 NVL72 (9 NVSwitch trays, 18 NVSwitch chips, 18 NVLinks per GPU); NVML nvmlGpuFabricInfo_v3 "
        "(ClusterUUID, CliqueId, health mask: degraded bandwidth, route recovery); NVIDIA Fabric Manager User Guide"
    ),
    action="check the NVSwitch trays of {entity} (nvidia-smi -q Fabric health, the fabric manager's log); "
    "replace or reseat the suspected switch tray",
    title="NVLink domain {entity} degraded: {hosts}",
    title_local="NVLink domain {entity} degraded",
    fault="fabric degradation",
    # the rack's health is read from a snapshot: the XIDs its GPUs logged when the tray failed come first
    onset_unknown=True,
)

RELATIONS = (
    Relation("nvlink_domain_down", "root", DOMAIN_KIND, words="a switch-tray fault"),
    Relation("nvlink_domain_down", "consequence", KIND, (SAME_NVLINK_DOMAIN,)),
)

SPEC = DetectorSpec(
    name=KIND,
    summary="GPUs not registered with their NVLink fabric (state, status: nvidia-smi -q or DCGM's fabric manager "
    "status), degraded fabric health (the Fabric block or DCGM's health mask), inactive "
    "links; a fault of a whole NVLink domain as one finding",
    detect=detect,
    scope="fabric",
    kinds=(KIND, DOMAIN_KIND),
    rates_needed=no_rates,
    relations=RELATIONS,
    chains=(NVLINK_DOMAIN_DOWN,),
    defaults={
        "min_domain_gpus": 2,
        "links_per_switch_tray": 2,
        "tray_mapping_source": default(
            "link n of a GPU leads to NVSwitch chip n and chips 2k, 2k+1 sit in tray k (18 links, 18 chips, 9 "
            "trays on GB200 NVL72); the rack's own cabling map is authoritative, so the tray is 'suspected'"
        ),
        "source": "NVML nvmlGpuFabricInfo (state Completed, status Success, health summary and mask; the mask's "
        "sub-fields NVML_GPU_FABRIC_HEALTH_MASK_*, docs.nvidia.com/deploy/nvml-api/group__nvmlFabricDefs.html); "
        "DCGM dcgmFabricManagerStatus_t (dcgm_structs.h, fields 170 and 174 in dcgm_fields.h); "
        "Azure/azhpc-images pull request 506 (State Completed with Status 'Insufficient Resources' must fail); "
        "NVIDIA Health Validation NVLink checks (inactive links > 0: critical, "
        "https://docs.nvidia.com/health-validation/reference/checks/nvlink)",
    },
    actions={
        KIND: "reset the GPUs of {entity} or restart nvidia-fabricmanager / nvidia-imex; check `nvidia-smi -q` "
        "Fabric and `nvidia-smi nvlink -s`",
        DOMAIN_KIND: NVLINK_DOMAIN_DOWN.action,
    },
)
