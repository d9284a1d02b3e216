"""Detector thresholds: defaults with their sources, overridable from a TOML file.

Every threshold a detector uses lives here; ``docs/detectors.md`` explains each with its source,
and every finding's evidence names the rule and the source of the threshold that fired.

TOML layout mirrors :data:`DEFAULTS`, e.g.::

    [link_errors.symbol_errors]
    warning_per_s = 0.01

    [ib_congestion]
    warning_wait_ratio = 0.2
"""

from __future__ import annotations

import copy
import os
import sys
from pathlib import Path
from typing import Any

__all__ = ["DEFAULTS", "load_config"]

NVSENTINEL = "NVIDIA/NVSentinel docs/configuration/nic-health-monitor.md"
IBQUERYERRORS = "rdma-core infiniband-diags ibqueryerrors (any error counter > 0)"
UFM_CBW = "UFM 'Congested Bandwidth %' event default 10% (UFM Enterprise telemetry docs)"
XMITWAIT_64 = "ibdiagnet congestion assessment: lost Gb/s = PortXmitWait x 64 / (t x 1e9) (formats.md 4.2)"

DEFAULTS: dict[str, Any] = {
    "rates": {"gap_factor": 3.0, "min_gap_s": 0.0},
    "merge": {"max_gap_factor": 2.0},
    "link_errors": {
        # warning_per_s: rate for a warning, averaged over the finding's window but at least over
        # window_s (or the whole observation when shorter); critical_per_s: peak rate of one
        # sampling interval for a critical; min_count: smallest increase that may raise anything.
        "symbol_errors": {
            "warning_per_s": 120 / 3600,
            "window_s": 3600.0,
            "critical_per_s": 10.0,
            "min_count": 1,
            "source": f"{NVSENTINEL}: symbol_error > 120/hour (IBTA BER 1e-12) drains; > 10/s degradation",
        },
        "port_rcv_errors": {
            "warning_per_s": 0.0,
            "window_s": 0.0,
            "critical_per_s": 10.0,
            "min_count": 1,
            "source": f"{IBQUERYERRORS}; {NVSENTINEL}: port_rcv_errors > 10/s",
        },
        "port_rcv_remote_physical_errors": {
            "warning_per_s": 0.0,
            "window_s": 0.0,
            "critical_per_s": 10.0,
            "min_count": 1,
            "source": f"{IBQUERYERRORS}; critical by analogy with port_rcv_errors",
        },
        "port_xmit_discards": {
            "warning_per_s": 0.0,
            "window_s": 0.0,
            "critical_per_s": 100.0,
            "min_count": 1,
            "source": f"{IBQUERYERRORS}; {NVSENTINEL}: port_xmit_discards > 100/s",
        },
        "local_link_integrity_errors": {
            "warning_per_s": 0.0,
            "window_s": 0.0,
            "critical_per_s": 0.0,
            "min_count": 1,
            "source": f"{NVSENTINEL}: any increase of local_link_integrity_errors is fatal",
        },
        "excessive_buffer_overrun_errors": {
            "warning_per_s": 0.0,
            "window_s": 0.0,
            "critical_per_s": 0.0,
            "min_count": 1,
            "source": f"{NVSENTINEL}: any increase of excessive_buffer_overrun_errors is fatal",
        },
        "link_error_recovery_events": {
            "warning_per_s": 0.0,
            "window_s": 0.0,
            "critical_per_s": 5 / 60,
            "min_count": 1,
            "source": f"{IBQUERYERRORS}; {NVSENTINEL}: link_error_recovery > 5/min",
        },
    },
    "link_flap": {
        "source_downed": f"{NVSENTINEL}: any link_downed increase is fatal; PDR plugin rule 1 (both ends)",
        "source_state": "Health Validation infiniband check: RDMA link outage is CRITICAL",
        "min_state_transitions": 2,
    },
    "link_degraded": {
        "majority_min_ports": 3,
        "critical_ratio": 0.5,
        "source": "rdma-core ibdiag 'Could be' rule; ibdiagnet Fabric Links Validation (expected speed/width)",
    },
    "ib_congestion": {
        "bits_per_tick": 64,
        "warning_wait_ratio": 0.10,
        "critical_wait_ratio": 0.50,
        "source": f"{UFM_CBW}; tick conversion: {XMITWAIT_64}; critical 50% is a fabricscope default",
    },
    "counter_anomaly": {"source": "fabricscope rate engine flags (resets, saturation, wraps, gaps)"},
}


def _merge(base: dict[str, Any], over: dict[str, Any], path: str) -> None:
    for k, v in over.items():
        if k not in base:
            raise ValueError(f"config: unknown key {path}{k}")
        if isinstance(base[k], dict):
            if not isinstance(v, dict):
                raise ValueError(f"config: {path}{k} must be a table")
            _merge(base[k], v, f"{path}{k}.")
        else:
            if isinstance(base[k], (int, float)) and not isinstance(v, (int, float)):
                raise ValueError(f"config: {path}{k} must be a number")
            base[k] = v


def load_config(path: str | os.PathLike[str] | None = None) -> dict[str, Any]:
    """Defaults, overridden by a TOML file when given.

    Raises:
        ValueError: unknown keys or wrong types (the message names the key).
        OSError: the file cannot be read.

    Example:
        >>> from fabricscope.config import load_config
        >>> load_config()["ib_congestion"]["warning_wait_ratio"]
        0.1
    """
    cfg = copy.deepcopy(DEFAULTS)
    if path is None:
        return cfg
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10
        import tomli as tomllib
    with Path(path).open("rb") as f:
        try:
            data = tomllib.load(f)
        except tomllib.TOMLDecodeError as e:
            raise ValueError(f"config {os.fspath(path)}: {e}") from e
    _merge(cfg, data, "")
    return cfg
