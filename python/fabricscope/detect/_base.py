"""What every detector module declares and receives: :class:`DetectorSpec` and :class:`AnalysisInput`.

A detector module exports exactly one ``SPEC``; the registry (:mod:`fabricscope.detect`), the config
defaults (:data:`fabricscope.detect.config.DEFAULTS`), the finding kinds, the engines' routing and the detector
tables in the README and ``docs/detectors.md`` are all derived from these specs.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

import polars as pl

from fabricscope.fabric.model import Fabric
from fabricscope.fabric.profiles import Profile
from fabricscope.fabric.relations import Chain, Relation

__all__ = ["AnalysisInput", "DetectorSpec", "Scope", "View"]

T = TypeVar("T")

Scope = Literal["partition", "fabric"]
"""``partition``: a port's findings depend only on its own host's data (runs inside host partitions);
``fabric``: compares ports across hosts or judges whole-fabric tables (runs once on reduced inputs)."""


@dataclass
class AnalysisInput:
    """What detectors read.

    Attributes:
        samples: The canonical samples table.
        rates: Output of :func:`fabricscope.detect.rates.rates`.
        gauges: Gauge samples over time (``is_counter`` false), with a float ``value``.
        attributes: The port-attributes table.
        config: Thresholds (:func:`fabricscope.detect.config.load_config`).
        profile: A profile forced by the user (``--profile``), else None (detect per port).
        tables: Other tables (``links`` ...), by name.
        fabric: The analysis' fabric model (:class:`fabricscope.fabric.model.Fabric`): which node GUID a
            device has, what is cabled to a port, every host's canonical name.
        computed: The shared computations of this input (:meth:`once`), by name. Not an argument:
            every input starts with its own, so each partition of an engine has its own, and an
            input copied with :func:`dataclasses.replace` (other frames) starts empty.
    """

    samples: pl.DataFrame
    rates: pl.DataFrame
    gauges: pl.DataFrame
    attributes: pl.DataFrame
    config: dict[str, Any]
    profile: Profile | None = None
    tables: dict[str, pl.DataFrame] = field(default_factory=dict)
    fabric: Fabric = field(default_factory=Fabric)
    computed: dict[str, Any] = field(default_factory=dict, init=False, repr=False, compare=False)

    def once(self, name: str, make: Callable[[], T]) -> T:
        """The value of the computation ``name`` on this input: made on first use, then kept.

        Several detectors (and their views) of one run read the same derived frames (loss
        intervals, pause intervals, per-port utilisation); each is computed once per input. The
        name must say everything the value depends on besides this input (a window length ...).
        Frames are immutable, so every reader can share one.
        """
        if name not in self.computed:
            self.computed[name] = make()
        return self.computed[name]


@dataclass(frozen=True)
class View:
    """A frame a detector explains itself with, beside its findings (``Analysis.views[name]``).

    Attributes:
        compute: The frame from the same :class:`AnalysisInput` the detector read.
        schema: Its columns; a run that computes no view (nothing read, detail not kept) shows an
            empty frame with them.
    """

    compute: Callable[[AnalysisInput], pl.DataFrame]
    schema: pl.Schema

    def empty(self) -> pl.DataFrame:
        """The view with no rows."""
        return pl.DataFrame(schema=self.schema)


def no_rates(rates: pl.DataFrame) -> pl.DataFrame:
    """A fabric-wide detector's projection when it reads no rate rows (gauges, attributes, tables only)."""
    return rates.clear()


@dataclass(frozen=True)
class DetectorSpec:
    """One detector, as its module declares it.

    Attributes:
        name: The detector's name; also its config section and (usually) its finding kind.
        summary: One line for the detector tables: what it finds.
        detect: The function from :class:`AnalysisInput` to a findings frame.
        scope: ``partition`` or ``fabric`` (:data:`Scope`).
        kinds: The finding kinds it may emit (default: its name).
        rates_needed: For ``fabric`` scope: the rate rows it reads, selected from one partition's rates
            so that partitions ship only those (None: it reads every rate row and every sample, which is
            correct but does not scale).
        defaults: Its config defaults (thresholds, each table with a ``source`` naming a public document
            or "fabricscope default: why").
        views: Frames the detector can explain itself with, by name (e.g. the bottleneck detector's
            per-layer ``layers``), each with its schema (:class:`View`): computed on the same input
            as the detector when an analysis keeps its detail, and collected into
            ``Analysis.views``. View names are unique across detectors.
        fault: Whether a warning or critical finding of it says something is broken. Each such
            finding belongs to exactly one incident (alone when nothing explains it); findings of a
            detector that measures load (a layer busy near its capacity is working, not broken) join
            an incident only when a rule explains them, and otherwise stay context.
        chains: The causal chains this detector is the primary root of (their argument, source,
            action, title and magnitude bound).
        relations: Every chain in which its findings may be a root or a consequence.
        direction: ``rx``/``tx`` of one of its findings when the evidence and metric name do not
            say it (None: read ``direction`` from the evidence, else the metric's prefix).
        actions: What fixes a fault this detector finds, by finding spec (``kind``, or
            ``kind:direction`` where the fix depends on the side), each a template with ``{entity}``.
            An incident uses its chain's action; a fault alone uses this one. A fault detector
            declares one for each of its kinds.
    """

    name: str
    summary: str
    detect: Callable[[AnalysisInput], pl.DataFrame]
    scope: Scope
    kinds: tuple[str, ...] = ()
    rates_needed: Callable[[pl.DataFrame], pl.DataFrame] | None = None
    defaults: Mapping[str, Any] = field(default_factory=dict)
    views: Mapping[str, View] = field(default_factory=dict)
    fault: bool = True
    chains: tuple[Chain, ...] = ()
    relations: tuple[Relation, ...] = ()
    direction: Callable[[dict[str, Any]], str | None] | None = None
    actions: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.scope not in ("partition", "fabric"):
            raise ValueError(f"detector {self.name}: scope must be 'partition' or 'fabric', not {self.scope!r}")
        if not self.kinds:
            object.__setattr__(self, "kinds", (self.name,))
        if self.scope == "partition" and self.rates_needed is not None:
            raise ValueError(f"detector {self.name}: rates_needed applies to fabric-wide detectors only")
        if self.fault:
            missing = [k for k in self.kinds if k not in self.actions]
            if missing:
                raise ValueError(f"detector {self.name}: a fault detector declares the action that fixes {missing}")
        for spec in self.actions:
            # ``kind``, ``kind:direction`` or ``kind@layer`` (the fix of the kind on one layer)
            if spec.partition(":")[0].partition("@")[0] not in self.kinds:
                raise ValueError(f"detector {self.name}: an action for {spec!r}, which it does not emit")
