"""What a detector declares about incidents: the causal chains it roots and its place in others.

A detector module names, on its :class:`~fabricscope.detect.DetectorSpec`, the :class:`Chain` s whose
root it is (the physical argument, the public source, the action and the title), and one
:class:`Relation` per chain in which its findings may be a root or a consequence (with the relations
a consequence is accepted through). :mod:`fabricscope.incidents` collects these declarations from the
registry and keeps only the algorithm, so adding a detector never touches it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["Chain", "Relation", "evidence", "loss_rate", "ratio"]


@dataclass(frozen=True)
class Chain:
    """One causal chain's words and bound, declared by the module of its primary root.

    Attributes:
        name: Stable identifier (in the incident evidence and ``docs/incidents.md``).
        argument: The physical argument, one paragraph.
        source: Public documents a user can open.
        action: What fixes the root (``{entity}`` is replaced by the root's entity).
        title: One-line title template (``{entity}``, ``{hosts}``, ``{n}`` consequences, ``{fault}``:
            what the root's fault is called, its :attr:`Relation.words`, else :attr:`fault`).
        title_local: The title when every consequence is on the root's own host (a root is never
            named as its own victim).
        fault: What a root's fault is called in the title when its relation does not say.
        magnitude: Optional check ``(root, consequence) -> (ok, text)``: can the root explain the size?
            ``ok`` is None when no bound applies or a number is missing (the consequence is kept).
    """

    name: str
    argument: str
    source: str
    action: str
    title: str
    title_local: str = "{entity}: {n} consequence(s) on its own host"
    magnitude: Callable[[dict[str, Any], dict[str, Any]], tuple[bool | None, str]] | None = None
    fault: str = ""


@dataclass(frozen=True)
class Relation:
    """A detector's findings in one chain: as its root, or as a consequence reached through ``via``.

    Attributes:
        chain: The :attr:`Chain.name`.
        role: ``root`` or ``consequence``.
        spec: The finding kind, or ``kind:direction`` (the ``direction`` of the finding's evidence).
        via: For a consequence: the relations it is accepted through (``same_port``, ``same_host``,
            ``cable``, ``same_count``, ``same_leaf``, ``below_spine``, ``job``).
        info: For a consequence: its info findings count too (otherwise info findings are context).
        words: For a root: what its fault is called in the chain's title (``{fault}``), in words
            that fit what it measured (a flapping port is no bit error).
    """

    chain: str
    role: Literal["root", "consequence"]
    spec: str
    via: tuple[str, ...] = ()
    info: bool = False
    words: str = ""


def evidence(f: dict[str, Any]) -> dict[str, Any]:
    """A finding's evidence as a dict (it is JSON text in a findings frame)."""
    ev = f.get("evidence")
    if isinstance(ev, dict):
        return ev
    try:
        out = json.loads(ev) if ev else {}
    except ValueError:
        return {}
    return out if isinstance(out, dict) else {}


def loss_rate(f: dict[str, Any]) -> float | None:
    """Loss probability a finding measured: its ``loss_rate*`` metric, else ``p`` in its evidence."""
    if f.get("observed") is not None and (f.get("metric") or "").startswith("loss_rate"):
        return float(f["observed"])
    p = evidence(f).get("p")
    return float(p) if isinstance(p, (int, float)) else None


def ratio(f: dict[str, Any]) -> float | None:
    """Observed over expected rate: ``ratio`` in the evidence, else observed / expected."""
    r = evidence(f).get("ratio")
    if isinstance(r, (int, float)):
        return float(r)
    if f.get("observed") is not None and f.get("expected"):
        return float(f["observed"]) / float(f["expected"])
    return None
