"""Detectors: one module each, each a function from analysis frames to a findings frame.

Detectors never parse files, print, or know about the CLI, so the local engine and a distributed
one call the same code. Every detector takes an :class:`AnalysisInput` and returns a frame with
:data:`fabricscope.findings.FINDINGS_SCHEMA`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from fabricscope.profiles import Profile

__all__ = ["DETECTORS", "AnalysisInput"]


@dataclass
class AnalysisInput:
    """What detectors read.

    Attributes:
        samples: The canonical samples table.
        rates: Output of :func:`fabricscope.rates.rates`.
        gauges: Gauge samples over time (``is_counter`` false), with a float ``value``.
        attributes: The port-attributes table.
        config: Thresholds (:func:`fabricscope.config.load_config`).
        profile: A profile forced by the user (``--profile``), else None (detect per port).
        tables: Other tables (``links`` ...), by name.
    """

    samples: pl.DataFrame
    rates: pl.DataFrame
    gauges: pl.DataFrame
    attributes: pl.DataFrame
    config: dict[str, Any]
    profile: Profile | None = None
    tables: dict[str, pl.DataFrame] = field(default_factory=dict)


def _registry() -> dict[str, Callable[[AnalysisInput], pl.DataFrame]]:
    from fabricscope.detect import (
        bottleneck,
        counter_anomaly,
        ecn_congestion,
        ib_congestion,
        link_degraded,
        link_errors,
        link_flap,
        lossless_misconfig,
        lossy_collapse,
        packet_loss,
        pfc_congestion,
        pfc_storm,
        underperformance,
    )

    return {
        "link_errors": link_errors.detect,
        "link_flap": link_flap.detect,
        "link_degraded": link_degraded.detect,
        "ib_congestion": ib_congestion.detect,
        "pfc_storm": pfc_storm.detect,
        "pfc_congestion": pfc_congestion.detect,
        "ecn_congestion": ecn_congestion.detect,
        "packet_loss": packet_loss.detect,
        "lossy_collapse": lossy_collapse.detect,
        "lossless_misconfig": lossless_misconfig.detect,
        "underperformance": underperformance.detect,
        "bottleneck": bottleneck.detect,
        "counter_anomaly": counter_anomaly.detect,
    }


DETECTORS = _registry
