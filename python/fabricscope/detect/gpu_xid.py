"""``gpu_xid``: the XID errors a GPU's driver reported, classified from NVIDIA's XID catalogue.

Read from ``gpu_last_xid``: the DCGM exporter's ``DCGM_FI_DEV_XID_ERRORS`` (field 230; ``dcgmi dmon``
column ``XIDER``), a gauge holding the *last* XID the driver logged, 0 before any. It is not reset
when the condition clears (a known dcgm-exporter behaviour: it holds until the exporter restarts),
so the event is a change of value:

* a series that changes to a nonzero code names the time it happened (the first reading of it);
* a series already nonzero at its first reading says an XID happened, not when: it is reported
  with ``evidence.since_first_reading`` and at most a warning, so a week-old XID kept by the gauge
  does not page as new.

The catalogue (``docs.nvidia.com/deploy/xid-errors``, "Analyzing Xid Errors with the Xid Catalog")
decides what a code means. The fabric's own (:data:`FABRIC_XIDS`) are findings on the GPU, with
the layer they happened on: 74 ``NVLINK_ERROR`` (a link to a GPU or NVSwitch failed; a GPU reset
or node reboot clears it), 136 ``ALI_TRAINING_FAIL`` (an NVLink did not train), 144-150 the NVLink5
units' errors of Blackwell (``NVLINK_SAW_ERROR`` ... ``NVLINK_MSE_ERROR``; whether a reset is
needed depends on a sub-code the gauge does not carry, so a warning) and 79
``GPU_HAS_FALLEN_OFF_THE_BUS`` (PCIe). Every other code is information: application events (13,
31, 43, 45, 137), memory (48, 63, 64, 92, 94, 95, 140), firmware (119, 120), corrected C2C errors
(121), intentional link-down (155), a recovery-action summary (154) and codes outside the table.

A GPU of a known NVLink domain carries it in ``evidence.nvlink_domain``: an NVLink XID on every
tray of a rack whose switch tray failed joins that domain's incident, and one on a GPU whose link
also counts CRC errors joins that link's.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import polars as pl

from fabricscope.detect._base import AnalysisInput, DetectorSpec, no_rates
from fabricscope.detect._common import entity_strings
from fabricscope.fabric.relations import SAME_NVLINK_DOMAIN, SAME_PORT, Relation
from fabricscope.incidents.findings import make_findings

KIND = "gpu_xid"
COUNTER = "gpu_last_xid"
MAX_XID = 65_535
"""The largest value read as an XID code (the catalogue's codes are below 200)."""
CATALOGUE_SOURCE = (
    "NVIDIA, 'Analyzing Xid Errors with the Xid Catalog' (https://docs.nvidia.com/deploy/xid-errors/"
    "analyzing-xid-catalog.html): mnemonic, description and resolution bucket of each Xid"
)


class Xid(NamedTuple):
    """One catalogue entry: what the code is called, and what it means for the fabric."""

    mnemonic: str
    description: str
    layer: str | None
    """The fabric layer a fabric XID happened on; None for the GPU's own events (information)."""
    severity: str
    immediate_action: str
    """The catalogue's resolution bucket (immediate action)."""


_NVLINK5 = "NVLink5 unit error of Blackwell; whether a GPU reset is needed depends on its sub-code"
XIDS: dict[int, Xid] = {
    13: Xid(
        "ROBUST_CHANNEL_GR_EXCEPTION", "Graphics Engine Exception (an application fault)", None, "info", "RESTART_APP"
    ),
    31: Xid(
        "ROBUST_CHANNEL_FIFO_ERROR_MMU_ERR_FLT",
        "GPU memory page fault (an application fault)",
        None,
        "info",
        "RESTART_APP",
    ),
    43: Xid(
        "ROBUST_CHANNEL_RESETCHANNEL_VERIF_ERROR",
        "GPU stopped processing (an application fault)",
        None,
        "info",
        "RESTART_APP",
    ),
    45: Xid("ROBUST_CHANNEL_PREEMPTIVE_REMOVAL", "Preemptive cleanup, due to previous errors", None, "info", "IGNORE"),
    48: Xid("DBE_ERROR", "Double Bit ECC Error", None, "info", "RESET_GPU"),
    63: Xid(
        "ROBUST_CHANNEL_ECC_PAGE_RETIREMENT",
        "ECC page retirement or row remapping recording event",
        None,
        "info",
        "IGNORE",
    ),
    64: Xid(
        "ROBUST_CHANNEL_ECC_PAGE_RETIREMENT_FAILURE",
        "ECC page retirement or row remapper recording failure",
        None,
        "info",
        "RESET_GPU",
    ),
    74: Xid(
        "NVLINK_ERROR",
        "NVLINK Error: a connection from the GPU to another GPU or NVSwitch failed",
        "nvlink",
        "critical",
        "WORKFLOW_NVLINK_ERR",
    ),
    79: Xid(
        "ROBUST_CHANNEL_GPU_HAS_FALLEN_OFF_THE_BUS",
        "GPU has fallen off the bus: its PCI Express link is down",
        "pcie",
        "critical",
        "RESTART_BM",
    ),
    92: Xid("EXCESSIVE_SBE_INTERRUPTS", "High single-bit ECC error rate", None, "info", "IGNORE"),
    94: Xid("ROBUST_CHANNEL_CONTAINED_ERROR", "Contained memory error", None, "info", "RESTART_APP"),
    95: Xid("ROBUST_CHANNEL_UNCONTAINED_ERROR", "Uncontained memory error", None, "info", "RESET_GPU"),
    119: Xid("GSP_RPC_TIMEOUT", "GSP RPC Timeout", None, "info", "RESET_GPU"),
    120: Xid("GSP_ERROR", "GSP Error", None, "info", "RESET_GPU"),
    121: Xid(
        "C2C_ERROR",
        "C2C Error: corrected errors on the C2C NVLink to the Grace CPU, no operational impact",
        None,
        "info",
        "IGNORE",
    ),
    136: Xid("ALI_TRAINING_FAIL", "Link Training Failed: an NVLink did not train", "nvlink", "critical", "RESET_GPU"),
    137: Xid(
        "NVLINK_PRIV_ERR",
        "NVLink Privilege Error: an illegal peer-to-peer access (typically the application)",
        None,
        "info",
        "IGNORE",
    ),
    140: Xid("UNRECOVERABLE_ECC_ERROR_ESCAPE", "ECC Unrecovered Error", None, "info", "RESET_GPU"),
    144: Xid("NVLINK_SAW_ERROR", f"NVLINK: SAW Error ({_NVLINK5})", "nvlink", "warning", "WORKFLOW_NVLINK5_ERR"),
    145: Xid("NVLINK_RLW_ERROR", f"NVLINK: RLW Error ({_NVLINK5})", "nvlink", "warning", "WORKFLOW_NVLINK5_ERR"),
    146: Xid("NVLINK_TLW_ERROR", f"NVLINK: TLW Error ({_NVLINK5})", "nvlink", "warning", "WORKFLOW_NVLINK5_ERR"),
    147: Xid("NVLINK_TREX_ERROR", f"NVLINK: TREX Error ({_NVLINK5})", "nvlink", "warning", "WORKFLOW_NVLINK5_ERR"),
    148: Xid(
        "NVLINK_NVLPW_CTRL_ERROR", f"NVLINK: NVLPW_CTRL Error ({_NVLINK5})", "nvlink", "warning", "WORKFLOW_NVLINK5_ERR"
    ),
    149: Xid("NVLINK_NETIR_ERROR", f"NVLINK: NETIR Error ({_NVLINK5})", "nvlink", "warning", "WORKFLOW_NVLINK5_ERR"),
    150: Xid("NVLINK_MSE_ERROR", f"NVLINK: MSE Error ({_NVLINK5})", "nvlink", "warning", "WORKFLOW_NVLINK5_ERR"),
    154: Xid(
        "GPU_RECOVERY_ACTION_CHANGED",
        "GPU Recovery Action Changed (summarises another Xid's action)",
        None,
        "info",
        "XID_154",
    ),
    155: Xid(
        "NVLINK_SW_DEFINED_ERROR", "NVLINK: SW Defined Error (a link taken down on purpose)", None, "info", "RESET_GPU"
    ),
}
"""The catalogue entries fabricscope knows, by code (mnemonics and buckets as NVIDIA lists them)."""

FABRIC_XIDS: frozenset[int] = frozenset(code for code, x in XIDS.items() if x.layer is not None)
"""The codes that are faults of the fabric (NVLink, PCIe): findings; every other code is information."""


def classify(code: int) -> Xid:
    """The catalogue entry of an XID code (an unlisted code is information).

    Example:
        >>> from fabricscope.detect.gpu_xid import classify
        >>> classify(74).mnemonic, classify(74).layer, classify(74).severity
        ('NVLINK_ERROR', 'nvlink', 'critical')
        >>> classify(13).layer, classify(13).severity
        (None, 'info')
        >>> classify(999).mnemonic
        'XID 999'
    """
    return XIDS.get(code) or Xid(f"XID {code}", "not in fabricscope's table of the catalogue", None, "info", "")


def detect(inp: AnalysisInput) -> pl.DataFrame:
    """Find the XIDs each GPU's driver reported and say which are faults of the fabric."""
    cfg = inp.config[KIND]
    # an XID is a small code: DCGM's blank sentinels (values near 2**63), negatives and non-finite
    # readings are unknown, never an event
    g = inp.gauges.filter(
        (pl.col("counter") == COUNTER) & pl.col("value").is_finite() & pl.col("value").is_between(0, MAX_XID)
    )
    if g.is_empty():
        return make_findings([])
    keys = ["host", "device"]
    series = (
        entity_strings(g)
        .with_columns(pl.col("value").round(0).cast(pl.Int64).alias("code"))
        .sort([*keys, "time"])
        .with_columns(
            pl.col("code").shift(1).over(keys).alias("_prev"),
            pl.col("time").min().over(keys).alias("_first"),
            pl.col("time").max().over(keys).alias("_last"),
        )
    )
    # each change to a nonzero code is an event; the first reading is one when already nonzero
    events = series.filter((pl.col("code") != 0) & (pl.col("_prev").is_null() | (pl.col("code") != pl.col("_prev"))))
    if events.is_empty():
        return make_findings([])
    # an event lasts while the gauge holds its code (until the next change or the last reading)
    held = series.with_columns((pl.col("code") != pl.col("_prev")).fill_null(True).cum_sum().over(keys).alias("_run"))
    spans = held.group_by([*keys, "_run"]).agg(pl.col("time").min().alias("start"), pl.col("time").max().alias("end"))
    events = (
        events.join(held.select([*keys, "time", "_run"]), on=[*keys, "time"], how="left")
        .join(spans, on=[*keys, "_run"], how="left")
        .sort([*keys, "time"])
    )
    domains = inp.fabric.nvlink_domains
    rows: list[dict[str, Any]] = []
    for e in events.iter_rows(named=True):
        x = classify(e["code"])
        at_first = e["_prev"] is None
        severity = x.severity
        if at_first and severity == "critical":
            severity = "warning"  # the gauge may hold it from long before the data
        when = (
            f"already the last XID at the first reading ({e['start']:%Y-%m-%d %H:%M:%S} UTC): the gauge keeps it "
            "until the exporter restarts, so when it happened is not in the data"
            if at_first
            else f"reported at {e['start']:%Y-%m-%d %H:%M:%S} UTC (the previous reading held XID {e['_prev']})"
        )
        what = f"fabric fault ({x.layer})" if x.layer else "not a fabric fault"
        evidence: dict[str, Any] = {
            "rule": f"{KIND}.{'fabric' if x.layer else 'information'}",
            "threshold_source": cfg["source"],
            "xid": e["code"],
            "mnemonic": x.mnemonic,
            "immediate_action": x.immediate_action,
            "since_first_reading": at_first,
            "source": e["source"],
        }
        domain = domains.get((e["host"], e["device"]))
        if domain is not None:
            evidence["nvlink_domain"] = domain
        rows.append(
            {
                "kind": KIND,
                "severity": severity,
                "host": e["host"],
                "device": e["device"],
                "port": None,
                "priority": None,
                "layer": x.layer,
                "start": e["start"],
                "end": e["end"],
                "metric": COUNTER,
                "observed": float(e["code"]),
                "expected": 0.0,
                "message": f"{e['device']}: XID {e['code']} {x.mnemonic} ({x.description}); {what}; {when}",
                "evidence": evidence,
            }
        )
    return make_findings(rows)


RELATIONS = (
    # the root and its chain are the NVLink error detector's (nvlink_errors.NVLINK_LINK_XID)
    Relation("nvlink_link_xid", "consequence", KIND, (SAME_PORT,)),
    Relation("nvlink_domain_down", "consequence", KIND, (SAME_NVLINK_DOMAIN,)),
)

SPEC = DetectorSpec(
    name=KIND,
    summary="XID errors from the GPU driver (DCGM_FI_DEV_XID_ERRORS), classified by NVIDIA's XID catalogue: "
    "NVLink and PCIe faults are findings, application and memory events information",
    detect=detect,
    scope="fabric",
    kinds=(KIND,),
    rates_needed=no_rates,
    relations=RELATIONS,
    defaults={
        "source": CATALOGUE_SOURCE
        + "; https://github.com/NVIDIA/dcgm-exporter/issues/500 (the XID gauge is not reset when the "
        "error clears: a change of value is the event)",
    },
    actions={
        f"{KIND}@nvlink": "reset the GPU of {entity} (nvidia-smi -r, or reboot the node) and check its links with "
        "`nvidia-smi nvlink -s` and `-e`; if the XID returns, replace the GPU or its NVLink path (NVIDIA Xid "
        "Catalog: Xid 74, NVLink5 workflow for 144-150)",
        f"{KIND}@pcie": "drain the node of {entity} and reboot it; reseat the GPU and check its PCIe slot, riser "
        "and the kernel's PCIe AER log (NVIDIA Xid Catalog: Xid 79, RESTART_BM)",
        KIND: "look up the XID of {entity} in NVIDIA's Xid catalogue: restart the application or reset the GPU "
        "as its resolution bucket says",
    },
)
