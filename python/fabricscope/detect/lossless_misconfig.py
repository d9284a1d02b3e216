"""``lossless_misconfig``: RoCE losing packets with neither PFC nor ECN protecting it.

* ``lossless_misconfig.no_pfc_no_ecn``: a NIC with at least ``min_events`` RoCE loss events (the
  ``packet_loss`` counters) while no PFC pause appears on any priority and no ECN mark appears.
  "No pause" needs evidence: pause counters that stay flat, or per-priority ethtool counters with
  no pause counter at all (mlx5 emits ``rx_prio<p>_pause`` only for PFC-enabled priorities, so
  PFC is off everywhere). "No mark" needs an ECN counter that stays flat. When the device itself
  carries no such counter (RDMA device ``mlx5_0`` versus netdev ``eth2``), the other devices of
  the same host decide: no pause and no mark on any of them.
* ``lossless_misconfig.priority_not_lossless``: per-priority drops (``rx_prio<p>_discards``,
  ``_buf_discard``, ``_cong_discard``) on a priority whose PFC is not enabled (per-priority
  counters present, pause counters for it absent) or whose ECN is disabled in the sysfs
  configuration (``ecn/roce_np/enable/<p>`` or ``ecn/roce_rp/enable/<p>`` = 0).
* From the configuration itself (``mlnx_qos -i <if>``, the sysfs ECN switches), before any loss:
  ``lossless_misconfig.pfc_priority_mismatch``: the host's pause counters count pause on a priority
  PFC is not enabled on (its RoCE traffic is lossy); ``pfc_fleet_mismatch``/``trust_mismatch``: its
  PFC priorities or trust mode differ from what more than half of at least ``fleet_min_hosts``
  interfaces have; ``ecn_np_disabled``/``ecn_rp_disabled``: ECN off on the RoCE priority (the
  traffic's, else the fleet's single lossless priority). Each names the command that fixes it.
"""

from __future__ import annotations

import polars as pl

from fabricscope.detect._base import AnalysisInput, DetectorSpec
from fabricscope.detect._common import NIC, keyed
from fabricscope.detect._shared import loss_intervals
from fabricscope.fabric.relations import SAME_HOST, Chain, Relation
from fabricscope.incidents.findings import make_findings
from fabricscope.reading.vocabulary import counters_by_direction, counters_with_role
from fabricscope.sources import MLX5_PAUSE

KIND = "lossless_misconfig"

# Counters by role (the core's vocabulary): any pause, any ECN mark, per-priority traffic and drops.
PAUSE = (*counters_by_direction("pause_frames"), *counters_by_direction("pause_duration"))
ECN = (*counters_with_role("rx_ecn_marked"), *counters_with_role("rx_priority_ecn_marked"))
PRIO_TRAFFIC = (*counters_by_direction("priority_bytes"), *counters_by_direction("priority_packets"))
PRIO_DROPS = counters_with_role("rx_priority_drops")


def _device_facts(inp: AnalysisInput) -> pl.DataFrame:
    """Per device: whether pause/ECN is known, total pause and marks, and PFC-enabled priorities."""
    names = [*PAUSE, *ECN, *PRIO_TRAFFIC]
    r = keyed(inp.rates.filter(pl.col("counter").is_in(names))).with_columns(pl.col("counter").cast(pl.String))
    if r.is_empty():
        return pl.DataFrame(schema={"host": pl.String, "device": pl.String})
    return r.group_by("host", "device").agg(
        pl.col("counter").is_in(PAUSE).any().alias("has_pause"),
        pl.col("counter").is_in(PRIO_TRAFFIC).any().alias("has_prio"),
        pl.col("counter").is_in(ECN).any().alias("has_ecn"),
        pl.col("delta").filter(pl.col("counter").is_in(PAUSE)).sum().alias("pause"),
        pl.col("delta").filter(pl.col("counter").is_in(ECN)).sum().alias("marks"),
        pl.col("priority").filter(pl.col("counter").is_in(PAUSE)).drop_nulls().unique().alias("pfc_prios"),
    )


def _no_protection(inp: AnalysisInput, cfg: dict, facts: pl.DataFrame) -> list[dict]:
    loss = loss_intervals(inp)
    if loss.is_empty() or facts.is_empty():
        return []
    nic = (
        loss.filter(pl.col("events").is_not_null())
        .group_by(NIC)
        .agg(pl.col("port").first(), pl.col("events").sum(), pl.col("start").min(), pl.col("end").max())
        .filter(pl.col("events") >= cfg["min_events"])
    )
    if nic.is_empty():
        return []
    # Pause known: pause counters exist, or ethtool per-priority counters without any pause counter.
    f = facts.with_columns(
        (pl.col("has_pause") | pl.col("has_prio")).alias("pause_known"),
        pl.col("has_ecn").alias("ecn_known"),
    )
    host = f.group_by("host").agg(
        pl.col("pause_known").any().alias("h_pause_known"),
        pl.col("pause").sum().alias("h_pause"),
        pl.col("ecn_known").any().alias("h_ecn_known"),
        pl.col("marks").sum().alias("h_marks"),
    )
    j = nic.join(f, on=["host", "device"], how="left").join(host, on="host", how="left")
    j = j.with_columns(
        pl.when(pl.col("pause_known").fill_null(value=False))
        .then(pl.col("pause") == 0)
        .when(pl.col("h_pause_known").fill_null(value=False))
        .then(pl.col("h_pause") == 0)
        .alias("no_pause"),
        pl.when(pl.col("ecn_known").fill_null(value=False))
        .then(pl.col("marks") == 0)
        .when(pl.col("h_ecn_known").fill_null(value=False))
        .then(pl.col("h_marks") == 0)
        .alias("no_ecn"),
        pl.col("pause_known").fill_null(value=False).alias("pause_on_device"),
        pl.col("ecn_known").fill_null(value=False).alias("ecn_on_device"),
    )
    rows = []
    for a in j.filter(pl.col("no_pause") & pl.col("no_ecn")).iter_rows(named=True):
        rows.append(
            {
                "kind": KIND,
                "severity": "warning",
                "host": a["host"],
                "device": a["device"],
                "port": a["port"],
                "priority": None,
                "layer": "network",
                "start": a["start"],
                "end": a["end"],
                "metric": "loss_events",
                "observed": float(a["events"]),
                "expected": 0.0,
                "message": (
                    f"{a['events']:,.0f} RoCE loss events while no PFC pause and no ECN mark appeared"
                    + ("" if a["pause_on_device"] and a["ecn_on_device"] else " (judged from the host's other devices)")
                    + ": the fabric is not lossless for this NIC; enable PFC on the RoCE priority and ECN (DCQCN)"
                ),
                "evidence": {
                    "rule": "lossless_misconfig.no_pfc_no_ecn",
                    "threshold_source": cfg["source"],
                    "events": a["events"],
                    "pause_basis": "device" if a["pause_on_device"] else "host",
                    "ecn_basis": "device" if a["ecn_on_device"] else "host",
                    "min_events": cfg["min_events"],
                },
            }
        )
    return rows


def _priority_not_lossless(inp: AnalysisInput, cfg: dict, facts: pl.DataFrame) -> list[dict]:
    d = keyed(inp.rates.filter(pl.col("counter").is_in(PRIO_DROPS))).filter(
        pl.col("priority").is_not_null() & (pl.col("delta") > 0)
    )
    if d.is_empty():
        return []
    drops = (
        d.with_columns(pl.col("counter").cast(pl.String))
        .group_by("host", "device", "priority")
        .agg(
            pl.col("port").first(),
            pl.col("delta").sum().alias("drops"),
            pl.col("start").min(),
            pl.col("end").max(),
            pl.col("counter").unique().sort().alias("counters"),
        )
        .filter(pl.col("drops") >= cfg["min_events"])
    )
    attrs = inp.attributes
    ecn = (
        attrs.with_columns(pl.col("key").cast(pl.String), pl.col("host", "device").cast(pl.String))
        .filter(pl.col("key").str.contains(r"^ecn\.roce_(np|rp)\.enable\.[0-7]$"))
        .sort("time")
        .group_by("host", "device", "key")
        .agg(pl.col("value").last())
        .with_columns(
            pl.col("key").str.extract(r"roce_(np|rp)").alias("point"),
            pl.col("key").str.extract(r"(\d)$").cast(pl.Int64).alias("priority"),
        )
        .group_by("host", "device", "priority")
        .agg(
            pl.col("value").filter(pl.col("point") == "np").first().alias("np"),
            pl.col("value").filter(pl.col("point") == "rp").first().alias("rp"),
        )
        if not attrs.is_empty()
        else pl.DataFrame(
            schema={"host": pl.String, "device": pl.String, "priority": pl.Int64, "np": pl.String, "rp": pl.String}
        )
    )
    j = drops.join(facts, on=["host", "device"], how="left").join(ecn, on=["host", "device", "priority"], how="left")
    rows = []
    for a in j.iter_rows(named=True):
        why = []
        if a["has_prio"] and a["priority"] not in (a["pfc_prios"] or []):
            why.append("PFC not enabled (no pause counters on this priority)")
        off = [name for name, v in (("roce_np", a["np"]), ("roce_rp", a["rp"])) if v is not None and v.strip() == "0"]
        if off:
            prio = a["priority"]
            why.append("ECN disabled (" + ", ".join(f"ecn/{o}/enable/{prio} = 0" for o in off) + ")")
        if not why:
            continue
        rows.append(
            {
                "kind": KIND,
                "severity": "warning",
                "host": a["host"],
                "device": a["device"],
                "port": a["port"],
                "priority": a["priority"],
                "layer": "network",
                "start": a["start"],
                "end": a["end"],
                "metric": "prio_rx_discards",
                "observed": float(a["drops"]),
                "expected": 0.0,
                "message": f"{a['drops']:,.0f} packets dropped on priority {a['priority']}: " + "; ".join(why),
                "evidence": {
                    "rule": "lossless_misconfig.priority_not_lossless",
                    "threshold_source": cfg["source"],
                    "drops": a["drops"],
                    "counters": a["counters"],
                    "pfc_priorities": sorted(a["pfc_prios"] or []),
                    "ecn_np_enable": a["np"],
                    "ecn_rp_enable": a["rp"],
                },
            }
        )
    return rows


# Pause counters whose priority says which priority a host's RoCE traffic is lossless on.
TRAFFIC_PAUSE = tuple(PAUSE)


def _qos_config(inp: AnalysisInput) -> pl.DataFrame:
    """Per (host, interface): the configuration ``mlnx_qos`` and the sysfs ECN switches stated (last value)."""
    a = inp.attributes
    if a.is_empty():
        return pl.DataFrame(schema={"host": pl.String, "device": pl.String, "key": pl.String, "value": pl.String})
    return (
        a.with_columns(pl.col("key").cast(pl.String), pl.col("host", "device").cast(pl.String))
        .filter(pl.col("key").str.contains(r"^(qos\.(trust|pfc\.priorities)|ecn\.roce_(np|rp)\.enable\.[0-7])$"))
        .sort("time")
        .group_by("host", "device", "key")
        .agg(pl.col("value").last().cast(pl.String))
    )


def _traffic_priority(inp: AnalysisInput) -> dict[str, int]:
    """Per host: the priority its pause counters counted the most pause on (its lossless RoCE priority).

    Read from the readings (a lone ``ethtool -S`` snapshot counts since boot; several, what rose
    between them), so a single capture of the counters is enough.
    """
    s = inp.samples
    if s.is_empty():
        return {}
    p = s.filter(pl.col("counter").cast(pl.String).is_in(list(TRAFFIC_PAUSE)) & pl.col("priority").is_not_null())
    if p.is_empty():
        return {}
    v = (
        p.with_columns(
            pl.col("host").cast(pl.String),
            pl.coalesce(pl.col("value_u64").cast(pl.Float64), pl.col("value_f64")).alias("_v"),
        )
        .sort("time")
        .group_by("host", "device", "priority", pl.col("counter").cast(pl.String))
        .agg(pl.col("_v").first().alias("a"), pl.col("_v").last().alias("b"), pl.len().alias("n"))
        .with_columns(pl.when(pl.col("n") > 1).then(pl.col("b") - pl.col("a")).otherwise(pl.col("b")).alias("pause"))
        .group_by("host", "priority")
        .agg(pl.col("pause").sum())
        .filter(pl.col("pause") > 0)
        .sort(["host", "pause", "priority"], descending=[False, True, False])
    )
    out: dict[str, int] = {}
    for host, prio, _ in v.iter_rows():
        out.setdefault(host, int(prio))
    return out


def _pfc_vector(prios: list[int]) -> str:
    return ",".join("1" if p in prios else "0" for p in range(8))


def _majority(values: list[str]) -> str | None:
    """The value more than half of the fleet has, else None."""
    if not values:
        return None
    best = max(set(values), key=lambda v: (values.count(v), v))
    return best if values.count(best) * 2 > len(values) else None


def _config_audit(inp: AnalysisInput, cfg: dict) -> list[dict]:
    """A host whose stated lossless configuration differs from its traffic's priority or from the fleet's."""
    conf = _qos_config(inp)
    if conf.is_empty():
        return []
    by: dict[tuple[str, str], dict[str, str]] = {}
    for host, device, key, value in conf.iter_rows():
        by.setdefault((host, device), {})[key] = value or ""
    traffic = _traffic_priority(inp)
    fleet_min = cfg["fleet_min_hosts"]
    # the fleet is every interface the fabric model holds, not only this partition's hosts
    fleet = inp.fabric.lossless_config if inp.fabric is not None and inp.fabric.lossless_config else by
    pfc_sets = [c["qos.pfc.priorities"] for c in fleet.values() if "qos.pfc.priorities" in c]
    trusts = [c["qos.trust"] for c in fleet.values() if "qos.trust" in c]
    fleet_pfc = _majority(pfc_sets) if len(pfc_sets) >= fleet_min else None
    fleet_trust = _majority(trusts) if len(trusts) >= fleet_min else None
    t0 = inp.samples["time"].min() if inp.samples.height else None
    times = (
        inp.attributes.with_columns(pl.col("host", "device").cast(pl.String))
        .group_by("host", "device")
        .agg(pl.col("time").min().alias("start"), pl.col("time").max().alias("end"))
    )
    when = {(h, d): (a, b) for h, d, a, b in times.iter_rows()}
    rows = []

    def finding(host: str, device: str, prio: int | None, metric: str, what: str, fix: str, ev: dict) -> None:
        start, end = when.get((host, device), (t0, t0))
        rows.append(
            {
                "kind": KIND,
                "severity": "warning",
                "host": host,
                "device": device,
                "port": None,
                "priority": prio,
                "layer": "network",
                "start": start,
                "end": end,
                "metric": metric,
                "observed": None,
                "expected": None,
                "message": f"{what}; fix: {fix}",
                "evidence": {"threshold_source": cfg["config_source"], "fix": fix, **ev},
            }
        )

    for (host, device), c in sorted(by.items()):
        used = traffic.get(host)
        if "qos.pfc.priorities" in c:
            enabled = [int(p) for p in c["qos.pfc.priorities"].split(",") if p.strip().isdigit()]
            if used is not None and used not in enabled:
                want = sorted({*enabled, used}) if cfg["keep_other_pfc"] else [used]
                finding(
                    host,
                    device,
                    used,
                    "pfc_priority_mismatch",
                    f"RoCE traffic pauses on priority {used} but PFC is enabled on "
                    + (f"priority {', '.join(map(str, enabled))}" if enabled else "no priority")
                    + f" of {device}: priority {used} is lossy on this NIC",
                    f"mlnx_qos -i {device} --pfc {_pfc_vector(want)}",
                    {
                        "rule": "lossless_misconfig.pfc_priority_mismatch",
                        "pfc_priorities": enabled,
                        "traffic_priority": used,
                    },
                )
            elif fleet_pfc is not None and c["qos.pfc.priorities"] != fleet_pfc:
                want = [int(p) for p in fleet_pfc.split(",") if p.strip().isdigit()]
                finding(
                    host,
                    device,
                    want[0] if len(want) == 1 else None,
                    "pfc_fleet_mismatch",
                    f"PFC is enabled on priority {c['qos.pfc.priorities'] or 'none'} of {device}, on "
                    f"{fleet_pfc or 'none'} on {pfc_sets.count(fleet_pfc)} of {len(pfc_sets)} interfaces of the fleet",
                    f"mlnx_qos -i {device} --pfc {_pfc_vector(want)}",
                    {
                        "rule": "lossless_misconfig.pfc_fleet_mismatch",
                        "pfc_priorities": enabled,
                        "fleet_pfc_priorities": want,
                    },
                )
        if "qos.trust" in c:
            trust = c["qos.trust"]
            want = fleet_trust if fleet_trust is not None else None
            if want is not None and trust != want:
                finding(
                    host,
                    device,
                    None,
                    "trust_mismatch",
                    f"{device} trusts {trust} while {trusts.count(want)} of {len(trusts)} interfaces of the fleet "
                    f"trust {want}: its RoCE packets (DSCP {cfg['roce_dscp']}) "
                    + ("are classified by their VLAN priority, untagged ones to priority 0" if trust == "pcp" else "")
                    + ("are classified by DSCP, the fleet by VLAN priority" if trust == "dscp" else ""),
                    f"mlnx_qos -i {device} --trust {want}",
                    {"rule": "lossless_misconfig.trust_mismatch", "trust": trust, "fleet_trust": want},
                )
        # ECN (DCQCN) on the RoCE priority: the traffic's, else the fleet's one lossless priority
        prio = used
        if prio is None and fleet_pfc and fleet_pfc.isdigit():
            prio = int(fleet_pfc)
        if prio is None:
            continue
        for point in ("np", "rp"):
            key = f"ecn.roce_{point}.enable.{prio}"
            if c.get(key, "").strip() == "0":
                finding(
                    host,
                    device,
                    prio,
                    f"ecn_{point}_disabled",
                    f"ECN is off on priority {prio} of {device} (ecn/roce_{point}/enable/{prio} = 0): "
                    + ("it marks no congestion notification for" if point == "np" else "it never slows down for")
                    + f" its RoCE traffic on priority {prio}",
                    f"echo 1 > /sys/class/net/{device}/ecn/roce_{point}/enable/{prio}",
                    {"rule": f"lossless_misconfig.ecn_{point}_disabled", "traffic_priority": used},
                )
    return rows


def detect(inp: AnalysisInput) -> pl.DataFrame:
    """Find RoCE loss without PFC or ECN, drops on lossy priorities, and a lossless configuration that is off."""
    cfg = inp.config[KIND]
    facts = _device_facts(inp)
    rows = _no_protection(inp, cfg, facts)
    if not facts.is_empty():
        rows += _priority_not_lossless(inp, cfg, facts)
    rows += _config_audit(inp, cfg)
    return make_findings(rows)


# RoCE without PFC and ECN drops; the same misconfiguration on the NIC's RDMA device joins it
RELATIONS = (
    Relation("lossless_off_drops", "root", "lossless_misconfig"),
    Relation("lossless_off_drops", "consequence", "lossless_misconfig", (SAME_HOST,)),
)

LOSSLESS_OFF_DROPS = Chain(
    name="lossless_off_drops",
    argument=(
        "RoCEv2 assumes a lossless fabric: with neither PFC on the RoCE priority nor ECN marking (DCQCN), "
        "a receiver whose buffers fill drops packets instead of pausing or slowing its senders. The drops "
        "are the receiver's own loss (out-of-sequence, buffer discards); each dropped packet is NAKed and "
        "resent by its sender (go-back-N), so the sender's retransmissions with the same count join "
        "through the receiver's loss. The cable is healthy: the fix is the QoS configuration."
    ),
    source=(
        "NVIDIA 'RoCE Configuration for NVIDIA Spectrum Ethernet' (lossless RoCE needs PFC and ECN); "
        "IEEE 802.1Qbb-2011 Priority-based Flow Control; Zhu et al., 'Congestion Control for Large-Scale "
        "RDMA Deployments' (DCQCN), SIGCOMM 2015"
    ),
    action="enable PFC on the RoCE priority and ECN (DCQCN) for {entity}, on the NIC and its switch port",
    title="lossless RoCE off on {entity}: drops and retransmissions reaching {hosts}",
    title_local="lossless RoCE off on {entity}: drops on its own host",
)


SPEC = DetectorSpec(
    name=KIND,
    summary="RoCE drops with no PFC and no ECN anywhere, or on priorities without them",
    detect=detect,
    scope="partition",
    relations=RELATIONS,
    chains=(LOSSLESS_OFF_DROPS,),
    defaults={
        "min_events": 10,
        # configuration audit: the fleet's majority counts from this many interfaces on (fewer
        # cannot outvote one odd host); a fix adds the traffic's priority to the enabled ones
        # (true) or enables it alone (false, NVIDIA's one lossless priority)
        "fleet_min_hosts": 3,
        "keep_other_pfc": False,
        "roce_dscp": 26,
        "config_source": "NVIDIA 'RoCE Configuration for NVIDIA Spectrum Ethernet' and MLNX_OFED 'Quality of Service "
        "(QoS)': RoCE traffic on priority 3 (DSCP 26) lossless with PFC, trust dscp, ECN (DCQCN) on; "
        "mlnx-tools mlnx_qos --pfc/--trust; kernel mlx5 sysfs ecn/roce_np|roce_rp/enable/<prio>",
        "source": "NVIDIA 'RoCE Configuration for NVIDIA Spectrum Ethernet' (lossless RoCE needs PFC and ECN); "
        f"NetQ 'netq check roce'; {MLX5_PAUSE}; rx_prio<p>_pause counts only on PFC-enabled priorities",
    },
    actions={
        "lossless_misconfig": LOSSLESS_OFF_DROPS.action,
    },
)
