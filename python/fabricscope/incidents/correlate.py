"""From findings to incidents: one root cause per fault, traced across layers and the topology.

A single bad cable produces findings on several hosts and layers: errors on the port, loss and
go-back-N retransmissions on the NICs whose traffic crosses it, a collective that runs slow on every
rank. :func:`correlate` groups such findings into an :class:`Incident`: one root finding (the entity
where the fault is), its consequences (the findings the root explains, each with the path from the
root to it), a window, a severity, a one-line title and the action that fixes the root.

Every grouping is the work of a declared :class:`Rule` that states its physical argument and a
public source (``docs/incidents.md`` lists them). A consequence is attached only when

* a relation the rule accepts links it to the root: the same port, the two ends of one cable, the
  same leaf switch (from the ``links`` table; without one only "same host = same leaf" is assumed,
  and the evidence says so), the leaves below a spine, a storm's pause reaching a host behind
  another leaf through a spine (timing and size checked by the relation), or the ranks of one
  collective job (``nccl_ranks``);
* it starts no earlier than the root (within one sampling interval);
* the root can explain its magnitude (a victim's loss rate no larger than the root's; a ring's bus
  bandwidth no better than the degraded link allows; CNPs handled no more than the receiver sent).

When several roots could explain a finding, the strongest relation wins (same port, then cable, then
leaf, then spine, then pause across leaves, then job), then the earlier root; the incident records
the competitors and what decided. A warning or critical fault no rule relates to another finding is
an incident of its own (one finding, no consequence), so the incident list counts the independent
things that are broken; load findings (a busy layer) and info findings no rule explains stay
standalone context.

Example:
    >>> from fabricscope.incidents.findings import make_findings
    >>> import datetime as dt
    >>> t = dt.datetime(2026, 12, 4, 14, tzinfo=dt.timezone.utc)
    >>> f = make_findings([
    ...     {"kind": "link_errors", "severity": "critical", "host": "gpu02", "device": "mlx5_0", "port": 1,
    ...      "start": t, "end": t + dt.timedelta(minutes=5), "metric": "symbol_errors", "observed": 20.0,
    ...      "message": "x", "evidence": {"rule": "link_errors.symbol_errors"}},
    ...     {"kind": "packet_loss", "severity": "warning", "host": "gpu02", "device": "mlx5_0", "port": 1,
    ...      "start": t + dt.timedelta(seconds=10), "end": t + dt.timedelta(minutes=5), "metric": "loss_rate_rx",
    ...      "observed": 1e-4, "message": "y", "evidence": {"direction": "rx"}}])
    >>> [(i.root["kind"], len(i.consequences)) for i in correlate(f)]
    [('link_errors', 1)]
"""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import itertools
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import polars as pl

from fabricscope.detect import KIND_OWNER, SPECS, DetectorSpec, root_precedence
from fabricscope.fabric.model import NO_LINKS, Fabric
from fabricscope.fabric.model import build as build_fabric
from fabricscope.fabric.relations import FAN_IN, RELATION_KINDS, Chain, Relation
from fabricscope.fabric.relations import evidence as _evidence
from fabricscope.fabric.relations import loss_rate as _loss_rate
from fabricscope.fabric.relations import port_text as _port_text
from fabricscope.incidents.findings import finding_key, rfc3339
from fabricscope.incidents.severity import Severity

__all__ = [
    "RELATIONS",
    "RULES",
    "SINGLE",
    "Incident",
    "Rule",
    "active_pages",
    "correlate",
    "fault_kinds",
    "incident_documents",
    "standalone_faults",
    "standalone_mask",
]


RELATIONS: tuple[str, ...] = tuple(k.name for k in RELATION_KINDS)
"""The relations' names, strongest first (the registry: :data:`fabricscope.fabric.relations.RELATION_KINDS`)."""

_FAN_IN_RANK = RELATIONS.index(FAN_IN.name)


@dataclass(frozen=True)
class Rule:
    """One causal chain as the algorithm uses it.

    A detector's :class:`~fabricscope.fabric.relations.Chain` (name, argument, source, action,
    titles and magnitude bound: see there) with the roles every detector declares in it
    (:class:`~fabricscope.fabric.relations.Relation`).

    Attributes:
        root: ``kind`` or ``kind:direction`` (the ``direction`` of the finding's evidence) a root may have.
        consequences: Consequence ``kind`` (or ``kind:direction``) -> the relations accepted for it.
        info: Consequence specs whose info findings count too (a sender's DCQCN loop numbers are
            info findings, yet they are the incast's footprint); otherwise info findings are context.
        fault: The chain's word for its root's fault (the title's ``{fault}``).
        fault_words: Root spec -> the word its detector declares for it (a flap, a loss, bit errors).
        root_when: When a finding of a root kind may root the chain (the chain's
            :attr:`~fabricscope.fabric.relations.Chain.root_when`); None: always.
        onset_unknown: Consequences may start before the root (the chain's
            :attr:`~fabricscope.fabric.relations.Chain.onset_unknown`).
    """

    name: str
    root: tuple[str, ...]
    consequences: Mapping[str, tuple[str, ...]]
    argument: str
    source: str
    action: str
    title: str
    title_local: str = "{entity}: {n} consequence(s) on its own host"
    info: tuple[str, ...] = ()
    magnitude: Callable[[dict[str, Any], dict[str, Any]], tuple[bool | None, str]] | None = None
    fault: str = ""
    fault_words: Mapping[str, str] = field(default_factory=dict)
    root_when: Callable[[dict[str, Any]], bool] | None = None
    onset_unknown: bool = False

    def fault_of(self, root: dict[str, Any]) -> str:
        """What this root's fault is called in the title: its relation's words, else the chain's."""
        return next((w for spec, w in self.fault_words.items() if _matches(spec, root)), self.fault)


def _direction(f: dict[str, Any]) -> str | None:
    """``rx``/``tx``: the detector's own reading, else the evidence, else the metric's name (``tx_pause_...``)."""
    spec = _SPEC_OF.get(f["kind"])
    if spec is not None and spec.direction is not None:
        return spec.direction(f)
    d = _evidence(f).get("direction")
    if isinstance(d, str):
        return d
    head = (f.get("metric") or "").split("_", 1)[0]
    return head if head in ("rx", "tx") else None


def _matches(spec: str, f: dict[str, Any]) -> bool:
    kind, _, direction = spec.partition(":")
    return f["kind"] == kind and (not direction or _direction(f) == direction)


_SPEC_OF: dict[str, DetectorSpec] = KIND_OWNER
# ``kind@layer`` actions: a kind several detectors emit on different layers (``link_errors`` on a
# network port and on an NVLink link) is fixed differently on each; the detector of that layer says how.
_LAYER_ACTIONS: dict[tuple[str, str], str] = {
    (k.partition("@")[0], k.partition("@")[2]): a
    for spec in SPECS.values()
    for k, a in spec.actions.items()
    if "@" in k
}


def _rules(specs: Mapping[str, DetectorSpec]) -> tuple[Rule, ...]:
    """The chains the detectors declare, each with the roots and consequences every detector places in it."""
    chains: dict[str, Chain] = {c.name: c for spec in specs.values() for c in spec.chains}
    relations: list[Relation] = [r for spec in specs.values() for r in spec.relations]
    kinds = {k for spec in specs.values() for k in spec.kinds}
    for r in relations:
        if r.chain not in chains:
            raise ValueError(f"a detector declares a relation in chain {r.chain!r}, which no detector defines")
        if r.spec.partition(":")[0] not in kinds:
            raise ValueError(f"chain {r.chain!r} names finding kind {r.spec!r}, which no detector emits")
    out = []
    for name, c in chains.items():
        mine = [r for r in relations if r.chain == name]
        out.append(
            Rule(
                name=name,
                root=tuple(r.spec for r in mine if r.role == "root"),
                consequences={r.spec: tuple(k.name for k in r.via) for r in mine if r.role == "consequence"},
                argument=c.argument,
                source=c.source,
                action=c.action,
                title=c.title,
                title_local=c.title_local,
                info=tuple(r.spec for r in mine if r.role == "consequence" and r.info),
                magnitude=c.magnitude,
                fault=c.fault,
                fault_words={r.spec: r.words for r in mine if r.role == "root" and r.words},
                root_when=c.root_when,
                onset_unknown=c.onset_unknown,
            )
        )
    return tuple(out)


RULES: tuple[Rule, ...] = _rules(SPECS)
"""Every causal chain, collected from the detector registry (each detector declares its own part)."""


@dataclass
class Incident:
    """One fault: its root finding and the findings it explains.

    Attributes:
        id: Stable identifier (hash of the root's kind, entity and start).
        rule: The :class:`Rule` name that made the chain.
        root: The root finding (a findings-frame row as a dict).
        entity: Where the fault is, as text (the port, and its cable's far end when the topology says).
        consequences: One dict per explained finding: ``finding`` (row dict), ``relation``, ``path``
            (hops from the root), ``timing`` and ``magnitude`` (checks as text).
        start: Earliest start among members.
        end: Latest end among members.
        severity: The worst severity among the root and its consequences.
        title: One line.
        action: What fixes the root.
        decided: Competing roots: for each finding more than one root could explain, which root won
            and the evidence that decided.
        topology: Where leaf relations came from (the links table, or the stated fallback).
    """

    id: str
    rule: str
    root: dict[str, Any]
    entity: str
    consequences: list[dict[str, Any]]
    start: dt.datetime | None
    end: dt.datetime | None
    severity: str
    title: str
    action: str
    decided: list[dict[str, Any]] = field(default_factory=list)
    topology: str = NO_LINKS

    @property
    def hosts(self) -> list[str]:
        """Hosts of the root and every consequence, root first (see :func:`_hosts`)."""
        return _hosts(self.root, [c["finding"] for c in self.consequences])


def _hosts(root: dict[str, Any], others: Sequence[dict[str, Any]]) -> list[str]:
    """Hosts an incident touches, root first.

    A finding on a port named by GUID came from a management node's topology dump: its ``host`` is
    where the dump ran, not a host of the fabric, so it names no host here.
    """
    out: list[str] = []
    for f in [root, *others]:
        h = f.get("host")
        if h and h not in out and not str(f.get("device") or "").startswith("0x"):
            out.append(h)
    return out


def _entity(topo: Fabric, f: dict[str, Any]) -> str:
    """The root's place: its port and, when the topology says, the far end of its cable."""
    leaf = topo.leaf(f)
    if leaf is None:
        return _port_text(f)
    return f"{_port_text(f)} <-> {leaf[1]} port {leaf[2]}" if leaf[2] is not None else _port_text(f)


def _relations(topo: Fabric, root: dict[str, Any], c: dict[str, Any]) -> list[tuple[str, list[str]]]:
    """Every registered relation between two findings' entities, strongest first, with its path."""
    return [(k.name, path) for k in RELATION_KINDS if (path := k.check(topo, root, c)) is not None]


def _interval_s(interval_s: float | None) -> float:
    if interval_s:
        return float(interval_s)
    return 30.0  # fabricscope default: three 10 s scrapes when the caller does not know its sampling interval


def _fid(f: dict[str, Any]) -> str:
    s = f.get("start")
    key = "|".join(str(x) for x in (f["kind"], f.get("host"), f.get("device"), f.get("port"), f.get("priority"), s))
    return "inc-" + hashlib.sha1(key.encode()).hexdigest()[:10]


def _root_rules(f: dict[str, Any]) -> list[Rule]:
    return [r for r in RULES if any(_matches(s, f) for s in r.root) and (r.root_when is None or r.root_when(f))]


def _accepts(rule: Rule, c: dict[str, Any]) -> tuple[str, ...]:
    for spec, rels in rule.consequences.items():
        if _matches(spec, c):
            return rels
    return ()


def _order(f: dict[str, Any]) -> tuple[int, int, dt.datetime, int]:
    never = dt.datetime.max.replace(tzinfo=dt.timezone.utc)
    # Of two findings of one kind: a spine port is upstream of everything below it (0); a port named
    # by its host's device (1) reads better than the same port named by a GUID from a management
    # node's topology dump (2).
    order = root_precedence(f["kind"])
    return (order, f.get("_vantage", 1), f.get("start") or never, -Severity(f["severity"]).rank)


def correlate(
    findings: pl.DataFrame,
    *,
    tables: Mapping[str, pl.DataFrame] | None = None,
    attributes: pl.DataFrame | None = None,
    interval_s: float | None = None,
    fabric: Fabric | None = None,
) -> list[Incident]:
    """Group findings into incidents (a pure function of its arguments).

    Args:
        findings: A findings frame (:data:`fabricscope.incidents.findings.FINDINGS_SCHEMA`).
        tables: Side tables: ``links`` (topology), ``nccl_ranks`` (which hosts run one collective),
            for a fabric model made here when ``fabric`` is not given.
        attributes: Port attributes (sysfs GUIDs map a host's device to its node in ``links``),
            likewise.
        interval_s: The sampling interval: a consequence may start this much before its root (both
            windows are quantised to readings). Default 30 s.
        fabric: The analysis' fabric model (:func:`fabricscope.fabric.model.build`): leaves, spines,
            cables, jobs and every host's canonical name. Default: one built from ``tables`` and
            ``attributes``.

    Returns:
        Incidents, worst first. Every warning or critical finding of a fault kind
        (:attr:`fabricscope.detect.DetectorSpec.fault`) belongs to exactly one: as root, as
        consequence, or alone (rule :data:`SINGLE`, no consequence).
    """
    if findings.is_empty():
        # Nothing to group. The topology below holds Python objects for every link end (about
        # 1.5 KB a link): a topology-only input of a million links must not pay for it.
        return []
    if fabric is None:
        fabric = build_fabric(
            hosts=findings["host"].unique().to_list(), attributes=attributes, tables=dict(tables or {})
        )
    topo = replace(fabric, interval_s=_interval_s(interval_s))
    tol = dt.timedelta(seconds=topo.interval_s)
    # Info findings are context (a layer's utilisation, a counter reset), not faults: they never root
    # an incident and join one only where a rule names them (``Rule.info``).
    info_specs = [spec for rule in RULES for spec in rule.info]
    rows = [
        dict(r, _i=i)
        for i, r in enumerate(findings.iter_rows(named=True))
        if r["severity"] != "info" or any(_matches(spec, r) for spec in info_specs)
    ]
    by_i = {r["_i"]: r for r in rows}
    # The loss rate of a root's link: its own, else what the receiving end of the same port measured
    # (an error counter counts symbols, not packets; the receiver's loss finding on that port has the rate).
    received: dict[tuple[Any, ...], float] = {}
    for x in rows:
        if _direction(x) == "rx" and (p := _loss_rate(x)) is not None:
            where = (x["host"], x["device"], x["port"])
            received[where] = max(received.get(where, p), p)
    for r in rows:
        own = _loss_rate(r) if _direction(r) in ("rx", None) else None
        r["_link_p"] = own if own is not None else received.get((r["host"], r["device"], r["port"]))
        r["_dir"] = _direction(r)
        dev = str(r.get("device") or "")
        r["_vantage"] = (0 if topo.tier(dev.lower()) == "spine" else 2) if dev.startswith("0x") else 1
    # relations of a group (one port's count the sum of its partners') read every finding first
    for kind in RELATION_KINDS:
        if kind.prepare is not None:
            kind.prepare(topo, rows)
    rules_of = {r["_i"]: _root_rules(r) for r in rows if r["severity"] != "info"}
    roots = sorted((r for r in rows if rules_of.get(r["_i"])), key=_order)
    rank_of = {r["_i"]: n for n, r in enumerate(roots)}
    # each relation's index over the roots: a finding is asked only about the roots near it
    indexes = [k.candidates(topo, roots) if k.candidates is not None else None for k in RELATION_KINDS]
    unindexed = any(ix is None for ix in indexes)

    def near(c: dict[str, Any]) -> list[dict[str, Any]]:
        if unindexed:
            return roots
        found = {r["_i"]: r for ix in indexes if ix is not None for r in ix(c)}
        return sorted(found.values(), key=lambda r: rank_of[r["_i"]])

    # For each finding: its candidate explanations (root, rule, relation, path, checks) that pass.
    chosen: dict[int, dict[str, Any]] = {}
    decided: dict[int, dict[str, Any]] = {}
    for c in rows:
        cands = []
        rejected = []
        for root in near(c):
            if root["_i"] == c["_i"]:
                continue
            # a root only explains findings below it in precedence (no cycles), but for a port whose
            # count is the sum of its partners': the sum says which is the root, whatever their kinds
            fanned = root["_i"] in (c.get("_fan_in") or {})
            if c["_i"] in rank_of and rank_of[c["_i"]] < rank_of[root["_i"]] and not fanned:
                continue
            for rule in rules_of[root["_i"]]:
                rels = _accepts(rule, c)
                if not rels or (c["severity"] == "info" and not any(_matches(x, c) for x in rule.info)):
                    continue
                found = [(rel, path) for rel, path in _relations(topo, root, c) if rel in rels]
                if c.get("_fan_root"):
                    # a port whose partners' loss is its own is explained only by what is on its own
                    # port or cable, never through a weaker relation by one of those partners
                    found = [(rel, path) for rel, path in found if RELATIONS.index(rel) <= _FAN_IN_RANK]
                if not found:
                    continue
                rel, path = min(found, key=lambda x: RELATIONS.index(x[0]))
                rs, cs = root.get("start"), c.get("start")
                # a windowed finding (utilisation per window) starts at its window's edge
                win = _evidence(c).get("window_s")
                ctol = max(tol, dt.timedelta(seconds=float(win))) if isinstance(win, (int, float)) else tol
                if rs is not None and cs is not None and cs + ctol < rs and not rule.onset_unknown:
                    rejected.append(
                        {"root": _ref(root), "why": f"starts {(rs - cs).total_seconds():.0f} s before the root"}
                    )
                    continue
                timing = (
                    "not timed (a root or consequence without a window)"
                    if rs is None or cs is None
                    else "not timed (the root is a state read once: when it began is not in the data)"
                    if rule.onset_unknown and cs + ctol < rs
                    else f"starts {(cs - rs).total_seconds():+.0f} s after the root "
                    f"(tolerance {ctol.total_seconds():.0f} s)"
                )
                ok, mag = rule.magnitude(root, c) if rule.magnitude else (None, "no magnitude bound for this rule")
                if ok is False:
                    rejected.append({"root": _ref(root), "why": mag})
                    continue
                cands.append(
                    {
                        "root": root,
                        "rule": rule,
                        "relation": rel,
                        "path": path,
                        "timing": timing,
                        "magnitude": mag,
                        "checked": ok is True,
                    }
                )
                break
        if not cands:
            if rejected:
                decided[c["_i"]] = {"finding": _ref(c), "chosen": None, "rejected": rejected}
            continue
        # strongest relation first; then a root whose magnitude bound was checked and holds; then precedence
        cands.sort(key=lambda x: (RELATIONS.index(x["relation"]), not x["checked"], _order(x["root"])))
        best = cands[0]
        chosen[c["_i"]] = best
        if len(cands) > 1 or rejected:
            runner = cands[1] if len(cands) > 1 else None
            why = _why(best, runner)
            decided[c["_i"]] = {
                "finding": _ref(c),
                "chosen": _ref(best["root"]),
                "competitors": [_ref(x["root"]) for x in cands[1:]],
                "rejected": rejected,
                "decided_by": why,
            }

    def ultimate(i: int) -> int:
        seen = {i}
        while i in chosen and chosen[i]["root"]["_i"] not in seen:
            i = chosen[i]["root"]["_i"]
            seen.add(i)
        return i

    # the roots each unexplained finding was a candidate of but failed a check on
    rejected_by: dict[int, list[int]] = {}
    root_of_ref = {_freeze(_ref(r)): r["_i"] for r in roots}
    for i, d in decided.items():
        if d["chosen"] is None:
            for x in d["rejected"]:
                if (ri := root_of_ref.get(_freeze(x["root"]))) is not None:
                    rejected_by.setdefault(ri, []).append(i)
    by_root: dict[int, list[int]] = {}
    for i in chosen:
        by_root.setdefault(ultimate(i), []).append(i)
    out = []
    for ri, members in by_root.items():
        root = by_i[ri]
        cons = []
        for i in sorted(members, key=lambda i: _order(by_i[i])):
            ch = chosen[i]
            via = ch["root"]
            path = list(ch["path"])
            if via["_i"] != ri:
                path = [_port_text(root), f"explains {via['kind']} on {_port_text(via)}", *path[1:]]
            cons.append(
                {
                    "finding": _clean(by_i[i]),
                    "rule": ch["rule"].name,
                    "relation": ch["relation"],
                    "via": None if via["_i"] == ri else _ref(via),
                    "path": path,
                    "timing": ch["timing"],
                    "magnitude": ch["magnitude"],
                }
            )
        rule = chosen[members[0]]["rule"] if chosen[members[0]]["root"]["_i"] == ri else _root_rules(root)[0]
        entity = _entity(topo, root)
        hosts = _hosts(root, [c["finding"] for c in cons])
        starts = [x for x in [root.get("start"), *(c["finding"]["start"] for c in cons)] if x is not None]
        ends = [x for x in [root.get("end"), *(c["finding"]["end"] for c in cons)] if x is not None]
        sev = str(Severity.worst([root["severity"], *(c["finding"]["severity"] for c in cons)]))
        out.append(
            Incident(
                id=_fid(root),
                rule=rule.name,
                root=_clean(root),
                entity=entity,
                consequences=cons,
                start=min(starts) if starts else None,
                end=max(ends) if ends else None,
                severity=sev,
                title=_chain_title(rule, entity, root, hosts, len(cons)),
                action=rule.action.format(entity=entity),
                # its members' decisions, and the findings it was a candidate for but failed a check on
                decided=[
                    d
                    for i, d in sorted(
                        {i: decided[i] for i in (*members, ri, *rejected_by.get(ri, ())) if i in decided}.items()
                    )
                ],
                topology=topo.source,
            )
        )
    # The list answers "how many independent things are broken": a fault no rule relates to another
    # finding is an incident of its own (one finding, no consequence).
    held = set(by_root) | set(chosen)
    faults = fault_kinds()
    alone: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    episodes_of: dict[tuple[Any, ...], list[tuple[Any, ...]]] = {}
    for r in sorted(rows, key=_order):
        if r["_i"] in held or r["severity"] == "info" or r["kind"] not in faults:
            continue
        # windows of one fault (its kind on one entity: cron's fault identity) in one episode are one incident
        key = tuple(r.get(k) for k in ("kind", "host", "device", "port", "priority", "metric"))
        episodes = episodes_of.setdefault(key, [])
        if episodes and not _apart(alone[episodes[-1]][-1], r):
            alone[episodes[-1]].append(r)
        else:
            episodes.append((*key, len(episodes)))
            alone[episodes[-1]] = [r]
    for first, *again in alone.values():
        entity = _entity(topo, first)
        cons = [
            {
                "finding": _clean(r),
                "rule": SINGLE,
                "relation": "same_port",
                "via": None,
                "path": [_port_text(first), "the same fault again, in a later window"],
                "timing": "not timed (the same fault)",
                "magnitude": "no magnitude bound for the same fault",
            }
            for r in again
        ]
        members = [first, *(c["finding"] for c in cons)]
        starts = [x for x in (m.get("start") for m in members) if x is not None]
        ends = [x for x in (m.get("end") for m in members) if x is not None]
        out.append(
            Incident(
                id=_fid(first),
                rule=SINGLE,
                root=_clean(first),
                entity=entity,
                consequences=cons,
                start=min(starts) if starts else None,
                end=max(ends) if ends else None,
                severity=str(Severity.worst(m["severity"] for m in members)),
                title=f"{first['kind']} on {entity}: {first.get('message') or first.get('metric') or ''}".rstrip(": "),
                action=_action(first).format(entity=entity),
                decided=[decided[i] for i in sorted({m["_i"] for m in (first, *again)}) if i in decided],
                topology=topo.source,
            )
        )
    out = _one_per_root(out, topo, {r["_i"]: r for r in rows})
    never = dt.datetime.max.replace(tzinfo=dt.timezone.utc)
    out.sort(key=lambda x: (-Severity(x.severity).rank, x.start or never, x.id))
    return out


EPISODE_GAP = dt.timedelta(hours=24)
"""Two incidents on one physical root (a port, or the two ends of one cable) are one episode of one
fault when their windows overlap or the later starts within this time of the earlier's end: a port
that flaps at 02:00 and again at 09:00 has one failing cable, and one page fixes it."""


def _apart(earlier: Mapping[str, Any], later: Mapping[str, Any]) -> bool:
    """Whether ``later`` starts more than :data:`EPISODE_GAP` after ``earlier`` ends: two episodes."""
    end, start = earlier.get("end"), later.get("start")
    return end is not None and start is not None and start > end + EPISODE_GAP


def _physical_keys(topo: Fabric, f: dict[str, Any]) -> set[tuple[Any, ...]]:
    """What physical thing a finding is on: its port by name, by node and port, and its cable (both ends)."""
    keys: set[tuple[Any, ...]] = set()
    host, dev, port = f.get("host"), f.get("device"), f.get("port")
    if host is not None and dev is not None and not str(dev).startswith("0x"):
        keys.add(("port", host, dev, port))
    node = topo.node_of(f)
    if node is not None and port is not None:
        end = (node, port)
        keys.add(("node", *end))
        try:
            far = topo.peer(node, int(port))
        except (TypeError, ValueError):
            far = topo.peer(node, port)
        if far is not None:
            keys.add(("cable", *sorted([end, (far[0], far[1])], key=str)))
    return keys


def _one_per_root(incidents: list[Incident], topo: Fabric, rows: Mapping[int, dict[str, Any]]) -> list[Incident]:
    """Incidents on one physical root in one episode (:data:`EPISODE_GAP`) are one incident: a page is a fault.

    Two detectors reading one bad port (its flaps and its errors), one detector in two windows, and the
    two ends of one cable seen by two sources each root an incident of their own above; here they
    become one, whose root is the chain that reaches furthest (a rule's chain before a fault alone),
    then the most fundamental finding (:func:`_order`). The others' roots and consequences become its
    consequences, each saying which observation of the same root it was.
    """
    if len(incidents) < 2:
        return incidents
    by_key = {finding_key(r): r for r in rows.values()}
    row_of = {inc.id: by_key.get(finding_key(inc.root), inc.root) for inc in incidents}
    order = {inc.id: _order(row_of[inc.id]) for inc in incidents}
    parent = list(range(len(incidents)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    on_key: dict[tuple[Any, ...], list[int]] = {}
    for n, inc in enumerate(incidents):
        for key in _physical_keys(topo, row_of[inc.id]):
            on_key.setdefault(key, []).append(n)
    never = dt.datetime.max.replace(tzinfo=dt.timezone.utc)
    for members in on_key.values():
        chain = sorted(members, key=lambda n: incidents[n].start or never)
        for a, b in itertools.pairwise(chain):
            if not _apart({"end": incidents[a].end}, {"start": incidents[b].start}):
                parent[find(b)] = find(a)
    groups: dict[int, list[int]] = {}
    for n in range(len(incidents)):
        groups.setdefault(find(n), []).append(n)
    out = []
    for members in groups.values():
        if len(members) == 1:
            out.append(incidents[members[0]])
            continue
        group = sorted((incidents[n] for n in members), key=lambda i: (i.rule == SINGLE, order[i.id], i.id))
        out.append(_merged(group[0], group[1:], topo))
    return out


def _merged(primary: Incident, others: Sequence[Incident], topo: Fabric) -> Incident:
    """One incident of ``primary`` and the incidents on the same physical root."""
    cons = list(primary.consequences)
    here = _port_text(primary.root)
    for other in others:
        seen = (
            "the same port"
            if ("port", *(other.root.get(k) for k in ("host", "device", "port"))) in _physical_keys(topo, primary.root)
            else "the other end of the same cable"
        )
        cons.append(
            {
                "finding": other.root,
                "rule": other.rule,
                "relation": "same_port" if seen == "the same port" else "cable",
                "via": None,
                "path": [here, f"{seen}: {other.root['kind']} on {_port_text(other.root)}"],
                "timing": "not timed (the same physical root)",
                "magnitude": "no magnitude bound for the same physical root",
            }
        )
        for c in other.consequences:
            cons.append(dict(c, via=c.get("via") or _ref(other.root), path=[here, *c["path"]]))
    members = [primary.root, *(c["finding"] for c in cons)]
    starts = [m["start"] for m in members if m.get("start") is not None]
    ends = [m["end"] for m in members if m.get("end") is not None]
    sev = str(Severity.worst(m["severity"] for m in members))
    hosts = _hosts(primary.root, [c["finding"] for c in cons])
    rule = next((r for r in RULES if r.name == primary.rule), None)
    if rule is not None:
        title = _chain_title(rule, primary.entity, primary.root, hosts, len(cons))
    else:
        kinds = sorted({m["kind"] for m in members} - {primary.root["kind"]})
        title = primary.title + (f" (also {', '.join(kinds)} on the same root)" if kinds else "")
    decided = list(primary.decided)
    for other in others:
        decided += [d for d in other.decided if d not in decided]
    return replace(
        primary,
        consequences=cons,
        start=min(starts) if starts else None,
        end=max(ends) if ends else None,
        severity=sev,
        title=title,
        decided=decided,
    )


def _chain_title(rule: Rule, entity: str, root: Mapping[str, Any], hosts: Sequence[str], n: int) -> str:
    """A chain's one-line title: the hosts the fault reached beyond its own (a root is never its own victim)."""
    reached = [h for h in hosts if h != root.get("host")]
    host_text = ", ".join(reached[:4]) + (f" and {len(reached) - 4} more" if len(reached) > 4 else "")
    template = rule.title if reached else rule.title_local
    return template.format(entity=entity, hosts=host_text, n=n, fault=rule.fault_of(dict(root)))


def _action(f: dict[str, Any]) -> str:
    """What fixes a fault alone: its detector's declared action (``DetectorSpec.actions``).

    The detector knows its fault best (a flap, a receiver's buffer drops, a sender's retransmissions);
    an action for the finding's direction is preferred to the kind's.
    """
    layered = _LAYER_ACTIONS.get((f["kind"], f.get("layer")))
    if layered is not None:
        return layered
    spec = _SPEC_OF[f["kind"]]
    directed = [a for s, a in spec.actions.items() if ":" in s and _matches(s, f)]
    return directed[0] if directed else spec.actions[f["kind"]]


SINGLE = "single_fault"
"""The rule name of an incident that is one fault alone: no rule related it to another finding (its
consequences, if any, are the same fault found again in later windows)."""


def fault_kinds() -> set[str]:
    """Finding kinds that say something is broken (each detector declares it: ``DetectorSpec.fault``)."""
    return {k for spec in SPECS.values() if spec.fault for k in spec.kinds}


def _where(d: dict[str, Any]) -> tuple[Any, ...]:
    return tuple(d.get(k) for k in ("kind", "host", "device", "port"))


def standalone_faults(incidents: pl.DataFrame, faults: pl.DataFrame | None) -> list[dict[str, Any]]:
    """Warning and critical faults no active incident holds, as incident-shaped rows keyed by fault id.

    Cron's pages are its active incidents and these (:func:`active_pages`); Alertmanager gets one
    alert for each.

    Args:
        incidents: Cron's incident lifecycle (``fabricscope.doors.cron.incident_lifecycle.INCIDENTS_SCHEMA``).
        faults: Cron's fault lifecycle (``fabricscope.reading.history.LIFECYCLE_SCHEMA``), or None.
    """
    if faults is None or faults.is_empty():
        return []
    held: set[tuple[Any, ...]] = set()
    for r in incidents.filter(pl.col("resolved_at").is_null()).iter_rows(named=True):
        held.add((r["root_kind"], r["host"], r["device"], r["port"]))
        with contextlib.suppress(ValueError, TypeError):  # members are written by cron; a damaged one holds none
            held.update(_where(m) for m in json.loads(r["members"] or "[]"))
    rows = []
    # load findings (a busy layer) are context, not faults: they are alerted only inside an incident
    kinds = list(fault_kinds())
    for f in faults.filter((pl.col("severity") != "info") & pl.col("kind").is_in(kinds)).iter_rows(named=True):
        if f["resolved_at"] is None and _where(f) in held:
            continue
        rows.append(
            {
                "fault_id": f["fault_id"],
                "incident_id": f["fault_id"],
                "rule": None,
                "root_kind": f["kind"],
                "host": f["host"],
                "device": f["device"],
                "port": f["port"],
                "priority": f["priority"],
                "severity": f["severity"],
                "title": f["last_message"],
                "action": None,
                "first_seen": f["first_seen"],
                "resolved_at": f["resolved_at"],
                "runs": f["runs"],
                "members": "[]",
            }
        )
    return rows


def active_pages(incidents: pl.DataFrame, faults: pl.DataFrame | None) -> list[dict[str, Any]]:
    """Cron's pages: every active incident and every warning or critical fault no active incident holds.

    One row per fault of the fabric, worst first, in the incident lifecycle's shape (``root_kind``,
    ``host``, ``device``, ``port``, ``priority``, ``severity``, ``title``, ``members``). The Nagios
    line, the textfile and Alertmanager count these, so every door numbers the same faults.

    Example:
        >>> import polars as pl
        >>> from fabricscope.doors.cron.incident_lifecycle import INCIDENTS_SCHEMA
        >>> active_pages(pl.DataFrame(schema=INCIDENTS_SCHEMA), None)
        []
    """
    rows = [r for r in incidents.iter_rows(named=True) if r["resolved_at"] is None and r["severity"] != "info"]
    rows += [r for r in standalone_faults(incidents, faults) if r["resolved_at"] is None]
    never = dt.datetime.max.replace(tzinfo=dt.timezone.utc)
    rows.sort(key=lambda r: (-Severity(r["severity"]).rank, r["first_seen"] or never, r["incident_id"]))
    return rows


def _why(best: dict[str, Any], runner: dict[str, Any] | None) -> str:
    """The evidence that decided between the chosen root and the runner-up."""
    if runner is None:
        return "only candidate left after the timing and magnitude checks"
    if best["relation"] != runner["relation"]:
        return f"relation {best['relation']} is stronger than {runner['relation']}"
    if best["checked"] and not runner["checked"]:
        return f"same relation; only this root's magnitude bound could be checked, and it holds ({best['magnitude']})"
    return (
        f"same relation: the more fundamental, earlier root wins ({best['root']['kind']} on "
        f"{_port_text(best['root'])} before {runner['root']['kind']} on {_port_text(runner['root'])})"
    )


def _clean(f: dict[str, Any]) -> dict[str, Any]:
    return {
        k: v
        for k, v in f.items()
        if k not in ("_i", "_link_p", "_vantage", "_dir", "_fan_in", "_fan_root", "_sole_pair")
    }


def _freeze(ref: Mapping[str, Any]) -> tuple[Any, ...]:
    """A finding reference as a hashable key."""
    return tuple(sorted(ref.items()))


def _ref(f: dict[str, Any]) -> dict[str, Any]:
    s = f.get("start")
    return {
        "kind": f["kind"],
        "host": f.get("host"),
        "device": f.get("device"),
        "port": f.get("port"),
        "priority": f.get("priority"),
        "metric": f.get("metric"),
        "start": rfc3339(s),
    }


def standalone_mask(findings: pl.DataFrame, incidents: Sequence[Incident]) -> pl.Series:
    """True for each finding that belongs to no incident (neither root nor consequence)."""
    members = {finding_key(i.root) for i in incidents} | {
        finding_key(c["finding"]) for i in incidents for c in i.consequences
    }
    return pl.Series("standalone", [finding_key(r) not in members for r in findings.iter_rows(named=True)], pl.Boolean)


def incident_documents(incidents: Sequence[Incident]) -> list[dict[str, Any]]:
    """The findings document's ``incidents`` array (``fabricscope.findings/2``, ``docs/schema.md``)."""
    return [
        {
            "id": i.id,
            "severity": i.severity,
            "title": i.title,
            "action": i.action,
            "rule": i.rule,
            "entity": i.entity,
            "start": rfc3339(i.start),
            "end": rfc3339(i.end),
            "hosts": i.hosts,
            "root": _ref(i.root),
            "consequences": [
                {
                    "finding": _ref(c["finding"]),
                    "severity": c["finding"]["severity"],
                    "relation": c["relation"],
                    "via": c["via"],
                    "path": c["path"],
                    "timing": c["timing"],
                    "magnitude": c["magnitude"],
                }
                for c in i.consequences
            ],
            "decided": i.decided,
            "topology": i.topology,
        }
        for i in incidents
    ]
