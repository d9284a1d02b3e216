"""``phy_ber``: the physical layer's own view of a link: bit error ratios before and after FEC, and the module.

A cable or transceiver that degrades shows first in the raw (pre-FEC) bit error ratio: FEC corrects
the errors, so symbol errors and packet loss stay at zero until the raw BER nears what the code can
correct, and then the link fails quickly. Sources that print a BER (``mlxlink -c``: ``Effective
Physical BER``, ``Raw Physical BER``, per lane) are judged here, from the last reading of each port:

* effective (post-FEC) BER, or the InfiniBand symbol BER, above ``effective_ber_max`` (1e-12: the
  InfiniBand specification, ibdiagnet's ``--ber_thresh`` default) is a ``link_errors`` warning: errors
  reach the packets;
* raw BER at or above the FEC's correction limit (``fec_limits``, by the port's FEC mode: RS(544,514)
  2.4e-4, RS(528,514) 5e-5; IEEE 802.3) is a ``link_errors`` critical: FEC cannot keep up;
* raw BER within ``near_limit_factor`` (a decade) of that limit, or risen ``rising_factor`` times
  across the input to at least ``rising_floor_fraction`` of the limit, is a ``link_wearout`` warning
  saying the link is wearing out: it still works, but will not for long. (The ``link_wearout``
  detector fits trends of error *counters* of the ``link_errors`` role; raw errors are corrected by
  design and are no such counter, so the BER trend is judged here and reported under its kind.)
* a module reading (temperature, supply voltage, laser bias, receive/transmit optical power)
  outside the module's own alarm range, as ``mlxlink -m`` prints it (``54 [-5..75]``, the SFF-8636 /
  CMIS alarm thresholds the module stores), is a ``transceiver_alarm`` warning.

A port whose FEC mode is unknown and whose speed is not a PAM4 InfiniBand rate (HDR/NDR/XDR use
RS(544,514)) gets no raw-BER judgement: its limit is unknown. The healthy ``15E-255`` mlxlink prints
for "no errors" is far below every threshold.
"""

from __future__ import annotations

from typing import Any

import polars as pl

from fabricscope.detect._base import AnalysisInput, DetectorSpec
from fabricscope.detect._common import entity_strings
from fabricscope.incidents.findings import empty_findings, make_findings
from fabricscope.reading.vocabulary import counters
from fabricscope.sources import default

KIND = "phy_ber"


def _vocabulary() -> tuple[tuple[str, ...], tuple[str, ...], tuple[tuple[str, str, str], ...]]:
    """The counters judged here, read from the core's vocabulary (no copied list).

    Bit error ratios are the ``ratio`` gauges (``phy_raw_*`` before FEC, the others after it);
    module readings are the ``module_*`` gauges, each with its ``*_low_alarm_*`` / ``*_high_alarm_*``
    thresholds (the unit suffix kept last).
    """
    c = counters()
    ratios = c.filter(pl.col("unit") == "ratio")["name"].to_list()
    raw = tuple(n for n in ratios if n.startswith("phy_") and "_raw_" in n)
    effective = tuple(n for n in ratios if n.startswith("phy_") and "_raw_" not in n and "_lane_" not in n)
    names = set(c["name"].to_list())
    module = []
    for n in c.filter(pl.col("name").str.starts_with("module_") & ~pl.col("name").str.contains("_alarm_"))["name"]:
        unit = c.filter(pl.col("name") == n)["unit"].item()
        stem, suffix = n.rsplit("_", 1)
        low, high = f"{stem}_low_alarm_{suffix}", f"{stem}_high_alarm_{suffix}"
        if low in names and high in names and unit:
            module.append((n, low, high))
    return effective, raw, tuple(module)


EFFECTIVE, RAW, MODULE = _vocabulary()
COUNTERS = [*EFFECTIVE, *RAW, *(x for m in MODULE for x in m)]
# how a module reading is named in a message, by the unit of its canonical name
_UNITS = {"celsius": "°C", "millivolts": "mV", "milliamps": "mA", "dbm": "dBm"}


def _fec_limit(cfg: dict[str, Any], fec: str | None, speed: str | None) -> tuple[float | None, str]:
    """The raw BER the port's FEC corrects, and which code that is."""
    text = (fec or "").replace(" ", "")
    for code, limit in cfg["fec_limits"].items():
        if code in text:
            return float(limit), f"RS({code},514)"
    if speed and any(s in speed.upper() for s in ("HDR", "NDR", "XDR")):
        return float(cfg["fec_limits"]["544"]), "RS(544,514) (PAM4 InfiniBand speed)"
    return None, "unknown"


def _last(inp: AnalysisInput) -> pl.DataFrame:
    """The last reading of every counter judged here, per port (lanes joined to their port)."""
    g = inp.gauges.filter(pl.col("counter").is_in(COUNTERS))
    if g.is_empty():
        return g
    g = entity_strings(g)
    lane = pl.col("device").str.extract(r"/lane(\d+)$", 1).cast(pl.Int64)
    return (
        g.with_columns(lane.alias("lane"), pl.col("device").str.replace(r"/lane\d+$", "").alias("port_device"))
        .sort("time")
        .group_by("host", "port_device", "port", "lane", "counter")
        .agg(
            pl.col("value").last().alias("last"),
            pl.col("value").first().alias("first"),
            pl.col("time").min().alias("start"),
            pl.col("time").max().alias("end"),
        )
        .rename({"port_device": "device"})
    )


def _port_attrs(inp: AnalysisInput, key: str) -> dict[tuple[str, str, int | None], str]:
    a = inp.attributes
    if a.is_empty() or "key" not in a.columns:
        return {}
    a = entity_strings(a.filter(pl.col("key").cast(pl.String) == key)).with_columns(pl.col("value").cast(pl.String))
    return {(r["host"], r["device"], r["port"]): r["value"] for r in a.iter_rows(named=True)}


def _finding(
    kind: str,
    severity: str,
    r: dict[str, Any],
    metric: str,
    observed: float,
    expected: float,
    message: str,
    evidence: dict[str, Any],
) -> dict[str, Any]:
    if r["lane"] is not None:
        evidence = {**evidence, "lane": r["lane"]}
    return {
        "kind": kind,
        "severity": severity,
        "host": r["host"],
        "device": r["device"],
        "port": r["port"],
        "priority": None,
        "layer": "network",
        "start": r["start"],
        "end": r["end"],
        "metric": metric,
        "observed": observed,
        "expected": expected,
        "message": message,
        "evidence": evidence,
    }


def detect(inp: AnalysisInput) -> pl.DataFrame:
    """Judge each port's last BER and module readings against the published and the module's own limits."""
    cfg = inp.config["phy_ber"]
    last = _last(inp)
    if last.is_empty():
        return empty_findings()
    fec = _port_attrs(inp, "fec_mode")
    speed = _port_attrs(inp, "link_speed")
    rows: list[dict[str, Any]] = []
    seen: set[tuple[str, str, Any, str]] = set()
    by_counter = {c: last.filter(pl.col("counter") == c) for c in COUNTERS}
    for counter in EFFECTIVE:
        for r in by_counter[counter].iter_rows(named=True):
            if r["last"] is None or r["last"] <= cfg["effective_ber_max"]:
                continue
            rows.append(
                _finding(
                    "link_errors",
                    "warning",
                    r,
                    counter,
                    r["last"],
                    cfg["effective_ber_max"],
                    f"{'symbol' if 'symbol' in counter else 'effective (post-FEC)'} BER {r['last']:.2g} above "
                    f"{cfg['effective_ber_max']:.0e}: bit errors reach the packets",
                    {"rule": f"phy_ber.{counter}", "threshold_source": cfg["effective_source"], "ber": r["last"]},
                )
            )
    # worst reading first (port or lane), so one port gets its gravest finding
    raw = pl.concat([by_counter[c] for c in RAW]).sort("last", descending=True, nulls_last=True)
    for r in raw.iter_rows(named=True):
        counter = r["counter"]
        key = (r["host"], r["device"], r["port"], "raw")
        if r["last"] is None or key in seen:
            continue
        limit, code = _fec_limit(cfg, fec.get(key[:3]), speed.get(key[:3]))
        if limit is None:
            continue
        ev = {
            "rule": f"phy_ber.{counter}",
            "fec": code,
            "fec_limit": limit,
            "threshold_source": cfg["fec_source"],
            "raw_ber": r["last"],
            "first_raw_ber": r["first"],
        }
        where = f"lane {r['lane']} " if r["lane"] is not None else ""
        if r["last"] >= limit:
            seen.add(key)
            rows.append(
                _finding(
                    "link_errors",
                    "critical",
                    r,
                    counter,
                    r["last"],
                    limit,
                    f"{where}raw (pre-FEC) BER {r['last']:.2g} at or above the {code} correction limit "
                    f"{limit:.2g}: FEC cannot correct every error",
                    ev,
                )
            )
        elif r["last"] >= limit / cfg["near_limit_factor"]:
            seen.add(key)
            rows.append(
                _finding(
                    "link_wearout",
                    "warning",
                    r,
                    counter,
                    r["last"],
                    limit / cfg["near_limit_factor"],
                    f"{where}raw (pre-FEC) BER {r['last']:.2g} within a factor {cfg['near_limit_factor']:g} of "
                    f"the {code} limit {limit:.2g}: the link is wearing out (no error reaches the packets yet)",
                    {**ev, "near_limit_source": cfg["near_limit_source"]},
                )
            )
        elif (
            r["first"]
            and r["first"] > 0
            and r["last"] / r["first"] >= cfg["rising_factor"]
            and r["last"] >= limit * cfg["rising_floor_fraction"]
        ):
            seen.add(key)
            rows.append(
                _finding(
                    "link_wearout",
                    "warning",
                    r,
                    counter,
                    r["last"],
                    r["first"],
                    f"{where}raw (pre-FEC) BER rose {r['last'] / r['first']:.3g}x to {r['last']:.2g} "
                    f"({code} limit {limit:.2g}): the link is wearing out",
                    {**ev, "rising_source": cfg["rising_source"]},
                )
            )
    for reading, low, high in MODULE:
        what = reading.removeprefix("module_").rsplit("_", 1)[0].replace("_", " ")
        unit = _UNITS.get(reading.rsplit("_", 1)[1], "")
        bounds = {}
        for b, name in ((low, "low"), (high, "high")):
            for r in by_counter[b].iter_rows(named=True):
                bounds.setdefault((r["host"], r["device"], r["port"]), {})[name] = r["last"]
        for r in by_counter[reading].iter_rows(named=True):
            lim = bounds.get((r["host"], r["device"], r["port"]), {})
            v = r["last"]
            if v is None:
                continue
            side = "high" if lim.get("high") is not None and v > lim["high"] else None
            side = side or ("low" if lim.get("low") is not None and v < lim["low"] else None)
            if side is None:
                continue
            where = f"lane {r['lane']} " if r["lane"] is not None else ""
            rows.append(
                _finding(
                    "transceiver_alarm",
                    "warning",
                    r,
                    reading,
                    v,
                    lim[side],
                    f"module {where}{what} {v:g} {unit} {'above' if side == 'high' else 'below'} its own "
                    f"{side} alarm threshold {lim[side]:g} {unit}",
                    {
                        "rule": f"phy_ber.{reading}",
                        "alarm": side,
                        "low_alarm": lim.get("low"),
                        "high_alarm": lim.get("high"),
                        "threshold_source": cfg["module_source"],
                    },
                )
            )
    return make_findings(rows)


SPEC = DetectorSpec(
    name=KIND,
    summary="effective BER above 1e-12, raw (pre-FEC) BER at, near or rising toward the FEC limit, "
    "module temperature/voltage/optical power outside the module's own alarm range",
    detect=detect,
    scope="partition",
    kinds=("link_errors", "link_wearout", "transceiver_alarm"),
    defaults={
        "effective_ber_max": 1e-12,
        "effective_source": "InfiniBand Architecture Specification (less than one bit error per 10^12 bits), as "
        "NVIDIA's DGX SuperPOD cabling design guide 'Mixing Widths and Rates' states it; ibdiagnet --ber_thresh "
        "default 10^-12 (https://docs.nvidia.com/networking/display/ibdiagnetUserManualv211/Bit+Error+Rate+(BER))",
        # FEC code (the `(n,k)` mlxlink prints in `FEC`) -> the raw BER it is specified to correct
        "fec_limits": {"544": 2.4e-4, "528": 5e-5},
        "fec_source": "IEEE 802.3bs/802.3cd: PAM4 PMDs are specified to a BER of 2.4e-4 before RS(544,514) "
        "(KP4) FEC; IEEE 802.3bm clause 95 (100GBASE-SR4): 5e-5 before RS(528,514) (KR4) FEC",
        "near_limit_factor": 10.0,
        "near_limit_source": default("a decade below the FEC limit: the margin left before errors pass FEC"),
        "rising_factor": 100.0,
        "rising_floor_fraction": 1e-4,
        "rising_source": default(
            "raw BER up two decades across the input to at least 1e-4 of the FEC limit: a trend, not noise"
        ),
        "module_source": "the module's own alarm thresholds (SFF-8636 / CMIS module memory), as mlxlink -m prints "
        "them in `[low..high]` (mstflint mlxlink_commander.cpp prepareDDMSection)",
    },
    actions={
        "link_errors": "replace or reseat the cable/transceiver of {entity} (mlxlink -d <dev> -c -m on both ends)",
        "link_wearout": "schedule replacement of the cable/transceiver of {entity} before it fails "
        "(its raw BER nears what FEC corrects)",
        "transceiver_alarm": "check the module of {entity}: airflow and temperature, fibre and connector "
        "cleanliness, or replace it",
    },
)
