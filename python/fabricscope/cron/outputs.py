"""What a run reports: the Nagios exit code and one-line status."""

from __future__ import annotations

import polars as pl

from fabricscope.cron.options import EXIT_CRITICAL, EXIT_OK, EXIT_WARNING
from fabricscope.findings import SEVERITIES


def status_line(active: pl.DataFrame, extra: str = "") -> tuple[int, str]:
    """The Nagios exit code and one-line status for the active faults.

    Example:
        >>> from fabricscope.findings import make_findings
        >>> f = make_findings([{"kind": "pfc_storm", "severity": "critical", "host": "gpu01", "device": "eth0",
        ...                     "priority": 3, "metric": "rx_pause_duration_us", "message": "storm"}])
        >>> status_line(f)
        (2, 'FABRICSCOPE CRITICAL - 1 critical: pfc_storm gpu01/eth0/p3')
    """
    counts = {s: 0 for s in SEVERITIES}
    for s in active["severity"].to_list():
        counts[s] += 1
    code = EXIT_CRITICAL if counts["critical"] else EXIT_WARNING if counts["warning"] else EXIT_OK
    word = {EXIT_OK: "OK", EXIT_WARNING: "WARNING", EXIT_CRITICAL: "CRITICAL"}[code]
    if code == EXIT_OK:
        text = f"FABRICSCOPE OK - no active faults{extra}"
        return code, text
    parts = [f"{counts[s]} {s}" for s in ("critical", "warning") if counts[s]]
    names = []
    for r in active.filter(pl.col("severity") != "info").head(5).iter_rows(named=True):
        ent = "/".join(str(x) for x in (r["host"], r["device"], r["port"]) if x is not None)
        if r["priority"] is not None:
            ent += f"/p{r['priority']}"
        names.append(f"{r['kind']} {ent}".strip())
    more = counts["critical"] + counts["warning"] - len(names)
    tail = ", ".join(names) + (f", +{more} more" if more > 0 else "")
    return code, f"FABRICSCOPE {word} - {', '.join(parts)}: {tail}{extra}"
