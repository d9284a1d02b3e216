"""Detectors: one module each, each declaring itself with one :class:`DetectorSpec` named ``SPEC``.

Detectors never parse files, print, or know about the CLI, so the local engine and a distributed
one call the same code. Every detector takes an :class:`AnalysisInput` and returns a frame with
:data:`fabricscope.findings.FINDINGS_SCHEMA`.

The registry is every module of this package whose name does not start with ``_``: adding a
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
    "SPECS",
    "VIEWS",
    "AnalysisInput",
    "DetectorSpec",
    "Scope",
    "View",
    "detectors_in",
    "empty_views",
]


def _discover() -> dict[str, DetectorSpec]:
    specs: dict[str, DetectorSpec] = {}
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if info.name.startswith("_"):
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

KINDS: tuple[str, ...] = tuple(dict.fromkeys(k for s in SPECS.values() for k in s.kinds))
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
