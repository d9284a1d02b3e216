"""What a run reports: the Nagios exit code and one-line status."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import polars as pl

from fabricscope.incidents.findings import exit_status
from fabricscope.incidents.severity import PAGING, SEVERITIES, Status
from fabricscope.redaction import printable


def status_line(
    active: pl.DataFrame,
    extra: str = "",
    *,
    failed_inputs: int = 0,
    analysed: bool = True,
    pages: Sequence[Mapping[str, Any]] | None = None,
) -> tuple[int, str]:
    """The Nagios exit code and one-line status for the active faults.

    The code is :func:`fabricscope.incidents.findings.exit_status` of the active faults, the same verdict
    every other door gives: an input that could not be read, or nothing analysed, is UNKNOWN
    unless a fault is critical. The line counts and names the pages: one per fault of the
    fabric (:func:`fabricscope.incidents.correlate.active_pages`, each incident by its root), never one per
    symptom; without ``pages`` each active warning or critical finding is one.

    Example:
        >>> from fabricscope.incidents.findings import make_findings
        >>> f = make_findings([{"kind": "pfc_storm", "severity": "critical", "host": "gpu01", "device": "eth0",
        ...                     "priority": 3, "metric": "rx_pause_duration_us", "message": "storm"}])
        >>> status_line(f)
        (2, 'FABRICSCOPE CRITICAL - 1 critical: pfc_storm gpu01/eth0/p3')
        >>> status_line(f.clear(), failed_inputs=1)
        (3, 'FABRICSCOPE UNKNOWN - 1 input(s) could not be read; no active faults')
    """
    if pages is None:
        pages = [dict(r, root_kind=r["kind"]) for r in active.iter_rows(named=True)]
    counts = {s: 0 for s in SEVERITIES}
    for page in pages:
        counts[page["severity"]] += 1
    code = exit_status(active, failed_inputs, analysed=analysed)
    why = []
    if code == 3:
        if failed_inputs:
            why.append(f"{failed_inputs} input(s) could not be read")
        if not analysed:
            why.append("no input held telemetry")
    head = f"FABRICSCOPE {Status.from_exit(code).value.upper()} - " + "".join(w + "; " for w in why)
    if not counts["critical"] and not counts["warning"]:
        return code, f"{head}no active faults{extra}"
    parts = [f"{counts[s]} {s}" for s in reversed(PAGING) if counts[s]]
    names = []
    for r in [page for page in pages if page["severity"] != "info"][:5]:
        ent = "/".join(printable(str(x)) for x in (r["host"], r["device"], r["port"]) if x is not None)
        if r.get("priority") is not None:
            ent += f"/p{r['priority']}"
        names.append(f"{printable(str(r['root_kind']))} {ent}".strip())
    more = counts["critical"] + counts["warning"] - len(names)
    tail = ", ".join(names) + (f", +{more} more" if more > 0 else "")
    return code, f"{head}{', '.join(parts)}: {tail}{extra}"
