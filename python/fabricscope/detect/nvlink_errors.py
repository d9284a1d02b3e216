"""``nvlink_errors``: NVLink CRC, replay and recovery counters per GPU and link, judged as rates.

The counters are the NVLink ones of the ``link_errors`` role (the core's vocabulary, layer
``nvlink``): DCGM's ``DCGM_FI_DEV_NVLINK_{CRC_FLIT,CRC_DATA,REPLAY,RECOVERY}_ERROR_COUNT_TOTAL`` (per
GPU) and ``nvidia-smi nvlink -e`` (per link). Each counter has a warning rate, a critical rate and
a minimum count (config ``[nvlink_errors.<counter>]``):

* CRC errors (flit, data, and nvidia-smi's ``CRC Errors``) are critical at **100/s**, the rate at
  which DCGM's health watch fails a GPU (``DCGM_LIMIT_MAX_NVLINK_CRC_ERROR``, "RM has informed us
  that CRC errors only matter at rates of 100+ per second"). Below it, a background of a few
  errors an hour is healthy: a warning needs more than 60 an hour, averaged over an hour (or the
  whole observation when shorter).
* Replays retransmit the flits a CRC check failed: judged like the CRC errors they follow.
* A recovery retrains the link (traffic stops while it does): any increase is critical, as DCGM
  fails a GPU on one (``DCGM_LIMIT_MAX_NVLINK_ERROR`` = 1, ``DCGM_FR_NVLINK_ERROR_CRITICAL``).

One finding per GPU link (per GPU where the source counts per GPU): the counter that judged worst
names it, the others are in its evidence. Counter resets (a driver reload) carry no delta in the
rates and never count (``counter_anomaly`` reports them as info). Findings are ``link_errors`` with
layer ``nvlink``.
"""

from __future__ import annotations

from typing import Any

import polars as pl

from fabricscope.detect._base import AnalysisInput, DetectorSpec
from fabricscope.detect._common import entity_strings, typical_interval
from fabricscope.fabric.relations import Chain, Relation
from fabricscope.incidents.findings import empty_findings, make_findings, merge_windows
from fabricscope.reading.vocabulary import counters_with_role
from fabricscope.sources import DCGM_HEALTH, default

KIND = "link_errors"
NAME = "nvlink_errors"
COUNTERS: tuple[str, ...] = counters_with_role("link_errors", "nvlink", kind="counter")
"""The NVLink error counters judged here, from the core's vocabulary."""

_SEVERITY = {"warning": 1, "critical": 2}


def _judge(c: dict[str, Any], count: float, mean_rate: float, peak: float) -> str | None:
    if count < c["min_count"] or mean_rate <= c["warning_per_s"]:
        return None
    return "critical" if peak >= c["critical_per_s"] else "warning"


def detect(inp: AnalysisInput) -> pl.DataFrame:
    """Find GPU links whose NVLink error counters rise above their thresholds."""
    cfg = inp.config[NAME]
    factor = inp.config["merge"]["max_gap_factor"]
    judged = [c for c in COUNTERS if c in cfg]
    rates = inp.rates.filter(pl.col("counter").is_in(judged))
    r = rates.filter(pl.col("delta") > 0)
    if r.is_empty():
        return empty_findings()
    spans = entity_strings(
        rates.group_by(["host", "device", "port", "counter"]).agg(
            ((pl.col("end").max() - pl.col("start").min()).dt.total_nanoseconds() * 1e-9).alias("span_s")
        )
    )
    r = entity_strings(r.with_columns((typical_interval(rates) * factor).alias("_gap")))
    r = r.with_columns((pl.col("delta") / pl.col("interval_s")).alias("_rate"))
    windows = merge_windows(
        r,
        keys=["host", "device", "port", "counter"],
        max_gap_s=pl.col("_gap"),
        aggs=[
            pl.col("delta").sum().alias("count"),
            pl.col("_rate").max().alias("peak_rate_per_s"),
            pl.col("interval_s").sum().alias("covered_s"),
            pl.col("source").first(),
        ],
    ).join(spans, on=["host", "device", "port", "counter"], how="left")
    by_link: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for w in windows.iter_rows(named=True):
        c = cfg[w["counter"]]
        duration = max(w["covered_s"], 1e-9)
        # the warning rate is an hourly one: judged over at least window_s, or the whole
        # observation when it is shorter (as link_errors judges symbol errors)
        basis_s = max(duration, min(c["window_s"], w["span_s"] or duration))
        mean_rate = w["count"] / basis_s
        severity = _judge(c, w["count"], mean_rate, w["peak_rate_per_s"])
        if severity is None:
            continue
        by_link.setdefault((w["host"], w["device"], w["port"]), []).append(
            {**w, "severity": severity, "mean_rate": mean_rate, "basis_s": basis_s, "duration": duration}
        )
    rows = []
    for (host, device, port), ws in by_link.items():
        ws.sort(key=lambda w: (-_SEVERITY[w["severity"]], -w["peak_rate_per_s"], w["counter"]))
        top = ws[0]
        c = cfg[top["counter"]]
        where = f"{device} link {port}" if port is not None else f"{device} (all links)"
        evidence = {
            "rule": f"{NAME}.{top['counter']}",
            "threshold_source": c["source"],
            "warning_per_s": c["warning_per_s"],
            "critical_per_s": c["critical_per_s"],
            "count": top["count"],
            "intervals": top["intervals"],
            "peak_rate_per_s": top["peak_rate_per_s"],
            "rate_basis_s": top["basis_s"],
            "source": top["source"],
            "link": port,
            "counters": {
                w["counter"]: {"count": w["count"], "peak_rate_per_s": w["peak_rate_per_s"], "severity": w["severity"]}
                for w in ws
            },
        }
        rows.append(
            {
                "kind": KIND,
                "severity": top["severity"],
                "host": host,
                "device": device,
                "port": port,
                "priority": None,
                "layer": "nvlink",
                "start": min(w["start"] for w in ws),
                "end": max(w["end"] for w in ws),
                "metric": top["counter"],
                "observed": top["mean_rate"],
                "expected": c["warning_per_s"],
                "message": (
                    f"NVLink {where}: {top['count']:,.0f} {top['counter'].removeprefix('nvlink_').replace('_', ' ')} "
                    f"in {top['duration']:,.0f} s ({top['mean_rate']:.3g}/s, peak {top['peak_rate_per_s']:.3g}/s)"
                    + (f"; also {', '.join(w['counter'] for w in ws[1:])}" if len(ws) > 1 else "")
                ),
                "evidence": evidence,
            }
        )
    return make_findings(rows)


_CRC = {
    "warning_per_s": 60 / 3600,
    "window_s": 3600.0,
    "critical_per_s": 100.0,
    "min_count": 1,
    "source": f"{DCGM_HEALTH}: CRC errors fail a GPU at 100/s (DCGM_LIMIT_MAX_NVLINK_CRC_ERROR); warning above "
    + default("60/hour averaged over an hour: a few CRC errors an hour are a healthy background, DCGM only warns"),
}
_REPLAY = {
    **_CRC,
    "source": f"{DCGM_HEALTH}: replays fail a GPU at any increase; "
    + default(
        "judged like the CRC errors a replay retransmits (critical at 100/s, warning above 60/hour), so the "
        "healthy CRC background does not page through its replays"
    ),
}
_RECOVERY = {
    "warning_per_s": 0.0,
    "window_s": 0.0,
    "critical_per_s": 0.0,
    "min_count": 1,
    "source": f"{DCGM_HEALTH}: any recovery error fails a GPU (DCGM_LIMIT_MAX_NVLINK_ERROR = 1, "
    "DCGM_FR_NVLINK_ERROR_CRITICAL)",
}


def _defaults() -> dict[str, dict[str, Any]]:
    out = {}
    for name in COUNTERS:
        if "recovery" in name:
            out[name] = dict(_RECOVERY)
        elif "replay" in name:
            out[name] = dict(_REPLAY)
        else:
            out[name] = dict(_CRC)
    return out


NVLINK_LINK_XID = Chain(
    name="nvlink_link_xid",
    argument=(
        "A GPU's driver logs XID 74 (or an NVLink5 unit's XID 144-150) when an NVLink of that GPU fails: the "
        "link's CRC, replay and recovery counters rise first, then the driver gives up on the link and reports "
        "it. The XID on the GPU whose link counts the errors is that link's fault as the driver saw it, not a "
        "second fault of the GPU."
    ),
    source=(
        "NVIDIA Xid Catalog (Xid 74 NVLINK_ERROR: 'a problem with a connection from the GPU to another GPU or "
        "NVSwitch over NVLink'; 'nvidia-smi nvlink can provide additional details on NVLink errors'); NVIDIA DCGM "
        "health checks (NVLink CRC and recovery limits)"
    ),
    action="drain the GPU of {entity} and reseat or replace it (its NVLink connector or baseboard); run "
    "`dcgmi diag -r 2` and check `nvidia-smi nvlink -e` after a GPU reset",
    title="NVLink fault on {entity}: errors and driver XID",
    title_local="NVLink fault on {entity}",
    fault="NVLink link errors",
    root_when=lambda f: f.get("layer") == "nvlink",
)

SPEC = DetectorSpec(
    name=NAME,
    summary="NVLink CRC (flit, data), replay and recovery errors per GPU link above DCGM's health limits",
    detect=detect,
    scope="partition",
    kinds=(KIND,),
    # warning_per_s: mean rate for a warning over at least window_s (or the whole observation when
    # shorter); critical_per_s: peak rate of one sampling interval for a critical; min_count: the
    # smallest increase that may raise anything.
    defaults=_defaults(),
    relations=(Relation("nvlink_link_xid", "root", KIND, words="NVLink link errors"),),
    chains=(NVLINK_LINK_XID,),
    actions={
        f"{KIND}@nvlink": "drain the GPU of {entity} and reseat or replace it (its NVLink connector or baseboard); "
        "run `dcgmi diag -r 2` and check `nvidia-smi nvlink -e` after a driver reload",
        KIND: "check the NVLink link of {entity} with `nvidia-smi nvlink -e` and `dcgmi health -c`",
    },
)
