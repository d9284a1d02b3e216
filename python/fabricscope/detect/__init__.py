"""Detectors: one module each, each declaring itself with one :class:`DetectorSpec` named ``SPEC``.

Detectors never parse files, print, or know about the CLI, so the local engine and a distributed
one call the same code. Every detector takes an :class:`AnalysisInput` and returns a frame with
:data:`fabricscope.incidents.findings.FINDINGS_SCHEMA`.

The registry is every module of this package whose name does not start with ``_``, but the stage's
own :data:`STAGE_MODULES` (the rates and the thresholds' defaults): adding a
detector is adding its module (and its tests). The config defaults, the finding kinds, the engines'
routing and the detector tables in the docs are derived from the specs.

A detector never imports another: what several of them read (loss and pause intervals, per-port
utilisation ...) lives in ``_shared``, kept per input by :meth:`AnalysisInput.once`. The views a
spec declares (:class:`View`) are collected in :data:`VIEWS` and shown as ``Analysis.views``.

Example:
    >>> from fabricscope.detect import SPECS
    >>> SPECS["link_flap"].scope, SPECS["link_errors"].scope
    ('fabric', 'partition')
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable

import polars as pl

from fabricscope.detect._base import AnalysisInput, DetectorSpec, Scope, View

__all__ = [
    "DETECTORS",
    "KINDS",
    "KIND_OWNER",
    "ROOT_PRECEDENCE",
    "SPECS",
    "VIEWS",
    "AnalysisInput",
    "DetectorSpec",
    "Scope",
    "View",
    "detectors_in",
    "empty_views",
    "root_precedence",
]


# The detection stage's modules that are not detectors: the rates every detector reads and the
# thresholds' defaults (which are derived from the detectors' specs, so they import this package).
STAGE_MODULES = frozenset({"config", "rates"})


def _discover() -> dict[str, DetectorSpec]:
    specs: dict[str, DetectorSpec] = {}
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if info.name.startswith("_") or info.name in STAGE_MODULES:
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        spec = getattr(module, "SPEC", None)
        if not isinstance(spec, DetectorSpec):
            raise TypeError(f"detector module {module.__name__} must define SPEC = DetectorSpec(...)")
        if spec.name in specs:
            raise ValueError(f"two detectors are called {spec.name!r}")
        specs[spec.name] = spec
    return specs


SPECS: dict[str, DetectorSpec] = _discover()
"""Every detector's spec, by name, in name order."""

ROOT_PRECEDENCE: tuple[str, ...] = (
    # the physical layer first: a link that goes down, corrupts bits or trains below its rate
    # explains everything downstream of it
    "link_flap",
    "link_errors",
    # an NVLink's errors explain the XID its GPU's driver logs for it
    "nvlink_errors",
    "link_degraded",
    # an NVLink domain's fault (a switch tray) explains what every tray of it sees
    "nvlink_fabric",
    # then what a lossless fabric does with it: a pause storm, lossless protection missing
    "pfc_storm",
    "lossless_misconfig",
    # then loss and what loss does to throughput
    "lossy_collapse",
    "packet_loss",
    # congestion last: it is the consequence of the above far more often than their cause
    "ecn_congestion",
    "ib_congestion",
)
"""Incident precedence, the one table of it: of two roots on one fault, the detector listed first
is the more fundamental (:func:`root_precedence`). Every detector that roots a chain is listed."""


def root_precedence(kind: str) -> int:
    """The place of a finding kind's detector in :data:`ROOT_PRECEDENCE` (unlisted: after all).

    Example:
        >>> from fabricscope.detect import root_precedence
        >>> root_precedence("link_errors") < root_precedence("packet_loss") < root_precedence("bottleneck")
        True
    """
    return _PRECEDENCE_OF_KIND.get(kind, len(ROOT_PRECEDENCE))


def _check_precedence() -> None:
    unknown = [n for n in ROOT_PRECEDENCE if n not in SPECS]
    if unknown:
        raise ValueError(f"ROOT_PRECEDENCE names no detector: {unknown}")
    unlisted = [n for n, s in SPECS.items() if s.chains and n not in ROOT_PRECEDENCE]
    if unlisted:
        raise ValueError(f"detectors that root a chain need a place in ROOT_PRECEDENCE: {unlisted}")


_check_precedence()
_PRECEDENCE_OF_KIND = {k: ROOT_PRECEDENCE.index(n) for n, s in SPECS.items() if n in ROOT_PRECEDENCE for k in s.kinds}

KINDS: tuple[str, ...] = tuple(dict.fromkeys(k for s in SPECS.values() for k in s.kinds))


def _kind_owners() -> dict[str, DetectorSpec]:
    owners: dict[str, DetectorSpec] = {}
    for spec in SPECS.values():
        for kind in spec.kinds:
            owners.setdefault(kind, spec)
    # a kind several detectors emit (``link_errors`` from the error counters and from the BER) is
    # its namesake's: its chains, relations and actions are the ones an incident uses
    owners.update({spec.name: spec for spec in SPECS.values() if spec.name in spec.kinds})
    return owners


KIND_OWNER: dict[str, DetectorSpec] = _kind_owners()
"""The detector whose spec speaks for each finding kind (its namesake when one emits it)."""
"""Every finding kind a detector may emit."""


def _views() -> dict[str, View]:
    views: dict[str, View] = {}
    for spec in SPECS.values():
        for name, view in spec.views.items():
            if name in views:
                raise ValueError(f"two detectors declare the view {name!r}")
            views[name] = view
    return views


VIEWS: dict[str, View] = _views()
"""Every view a detector declares (``Analysis.views``), by name."""


def empty_views() -> dict[str, pl.DataFrame]:
    """Every declared view with no rows: what an analysis shows when none was computed."""
    return {name: v.empty() for name, v in VIEWS.items()}


def detectors_in(scope: Scope) -> list[DetectorSpec]:
    """The specs of one scope (``partition`` or ``fabric``), in name order."""
    return [s for s in SPECS.values() if s.scope == scope]


def DETECTORS() -> dict[str, Callable[[AnalysisInput], pl.DataFrame]]:  # noqa: N802 - kept for existing callers
    """Every detector's function, by name."""
    return {name: s.detect for name, s in SPECS.items()}
