"""What a detector declares about incidents: the causal chains it roots and its place in others.

A detector module names, on its :class:`~fabricscope.detect.DetectorSpec`, the :class:`Chain` s whose
root it is (the physical argument, the public source, the action and the title), and one
:class:`Relation` per chain in which its findings may be a root or a consequence (with the relations
a consequence is accepted through). :mod:`fabricscope.incidents.correlate` collects these declarations from the
registry and keeps only the algorithm, so adding a detector never touches it.

The relations themselves (same port, the two ends of a cable, the same leaf...) are one registry,
:data:`RELATION_KINDS`: each :class:`RelationKind` is one named entry with its physical argument and
its check, a question put to the fabric (:class:`Fabric`). Detectors accept relations by reference
(``via=(SAME_PORT, CABLE)``), never by a string, so a misspelt relation is an import error, and adding
a relation is one entry here plus the declarations that use it.
"""

from __future__ import annotations

import bisect
import datetime as dt
import itertools
import json
import math
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

__all__ = [
    "BELOW_SPINE",
    "CABLE",
    "FAN_IN",
    "JOB",
    "PAUSE_ACROSS_LEAVES",
    "RELATION_KINDS",
    "SAME_COUNT",
    "SAME_HOST",
    "SAME_LEAF",
    "SAME_NVLINK_DOMAIN",
    "SAME_PORT",
    "Chain",
    "Fabric",
    "Relation",
    "RelationKind",
    "evidence",
    "fan_root",
    "loss_rate",
    "port_text",
    "ratio",
]

Port = int | str
"""A port: its number, or (an Ethernet end from LLDP) its interface name."""

Leaf = tuple[str, str, Port | None]
"""A leaf a port hangs off: (its node: GUID or LLDP name, its name, the leaf's port or None)."""


class Fabric(Protocol):
    """What a relation's check asks of the fabric (the topology every finding was placed in).

    Findings are dicts of a findings frame's row (``host``, ``device``, ``port``...), with ``_dir``:
    the finding's direction (``rx``/``tx``/None) as its detector reads it.
    """

    jobs: Sequence[tuple[str, frozenset[str]]]
    """Collective jobs: (label, the hosts among its ranks)."""

    def node_of(self, f: dict[str, Any]) -> str | None:
        """The node (GUID, or an LLDP name) of a finding's device, when the fabric knows it."""
        ...

    def peer(self, node: str, port: Port) -> tuple[str, Port, str] | None:
        """The far end of the cable on ``node``'s ``port``: (node, port, name), or None."""
        ...

    def leaf(self, f: dict[str, Any]) -> Leaf | None:
        """The leaf switch a finding's port is cabled to, or None when unknown."""
        ...

    def tier(self, node: str) -> str:
        """``leaf``, ``spine``, ``hca``... or "" when unknown."""
        ...

    def leaves_below(self, spine: str) -> set[str]:
        """The leaves cabled to a spine (their nodes)."""
        ...

    def spines_joining(self, leaf_a: str, leaf_b: str) -> list[str]:
        """The names of the spines cabled to both leaves (given as their nodes), sorted; empty when none is known."""
        ...

    interval_s: float
    """The sampling interval: how far apart two readings of one counter are (the timing tolerance)."""


Index = Callable[[dict[str, Any]], Iterable[dict[str, Any]]]
"""For a finding, the candidate roots a relation's check may relate it to."""


@dataclass(frozen=True)
class RelationKind:
    """One way two findings' entities are physically related: a named entry of :data:`RELATION_KINDS`.

    Attributes:
        name: Stable identifier (in incident evidence, ``docs/incidents.md``).
        meaning: What the relation is, one line (the docs table).
        source: Where the fabric learns it (the ``links`` table, the findings, ``nccl_ranks``).
        check: ``(fabric, root, consequence) -> path`` (the hops from the root to the consequence, as
            text) when the two are related so, else None.
        prepare: For a relation of a group, not of a pair (one root's count is the sum of many
            consequences'): ``(fabric, findings) -> None``, run once over every finding of a
            correlation before any check, recording in the findings what the check reads.
        candidates: ``(fabric, roots) -> (finding -> roots)``: an index over the candidate roots
            returning, for a finding, every root ``check`` could relate it to (a superset), so
            correlation asks each finding about the roots near it instead of every root; None:
            every root is a candidate.
    """

    name: str
    meaning: str
    source: str
    check: Callable[[Fabric, dict[str, Any], dict[str, Any]], list[str] | None]
    prepare: Callable[[Fabric, Sequence[dict[str, Any]]], None] | None = None
    candidates: (
        Callable[[Fabric, Sequence[dict[str, Any]]], Callable[[dict[str, Any]], Iterable[dict[str, Any]]]] | None
    ) = None

    def __repr__(self) -> str:
        return self.name


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
        root_when: Optional ``(finding) -> bool``: a finding of a root kind roots this chain only when
            it holds (a sender roots the fan-in chain only when its count is its partners' sum:
            :func:`fan_root`); otherwise every finding of a root kind may.
        onset_unknown: The root is a state read at one moment (a fabric's health in ``nvidia-smi -q``):
            its finding starts when it was read, not when the fault began, so a consequence may start
            before it.
    """

    name: str
    argument: str
    source: str
    action: str
    title: str
    title_local: str = "{entity}: {n} consequence(s) on its own host"
    magnitude: Callable[[dict[str, Any], dict[str, Any]], tuple[bool | None, str]] | None = None
    fault: str = ""
    root_when: Callable[[dict[str, Any]], bool] | None = None
    onset_unknown: bool = False


@dataclass(frozen=True)
class Relation:
    """A detector's findings in one chain: as its root, or as a consequence reached through ``via``.

    Attributes:
        chain: The :attr:`Chain.name`.
        role: ``root`` or ``consequence``.
        spec: The finding kind, or ``kind:direction`` (the ``direction`` of the finding's evidence).
        via: For a consequence: the relations it is accepted through, entries of
            :data:`RELATION_KINDS` (``SAME_PORT``, ``CABLE``...), by reference.
        info: For a consequence: its info findings count too (otherwise info findings are context).
        words: For a root: what its fault is called in the chain's title (``{fault}``), in words
            that fit what it measured (a flapping port is no bit error).
    """

    chain: str
    role: Literal["root", "consequence"]
    spec: str
    via: tuple[RelationKind, ...] = ()
    info: bool = False
    words: str = ""

    def __post_init__(self) -> None:
        where = f"{self.spec} in chain {self.chain!r}"
        if self.role not in ("root", "consequence"):
            raise ValueError(f"{where}: role must be 'root' or 'consequence', not {self.role!r}")
        for v in self.via:
            if not isinstance(v, RelationKind) or v not in RELATION_KINDS:
                raise TypeError(
                    f"{where}: {v!r} is not a registered relation; accept one of RELATION_KINDS by reference "
                    f"({', '.join(k.name for k in RELATION_KINDS)})"
                )
        if self.role == "consequence" and not self.via:
            raise ValueError(f"{where}: a consequence is accepted through at least one relation")
        if self.role == "root" and (self.via or self.info):
            raise ValueError(f"{where}: a root is accepted through no relation (via and info are for consequences)")


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


def port_text(f: dict[str, Any]) -> str:
    """A finding's port as text: ``host device port N`` (what is known of it)."""
    bits = [str(x) for x in (f.get("host"), f.get("device")) if x]
    if f.get("port") is not None:
        bits.append(f"port {f['port']}")
    return " ".join(bits) or "(fabric)"


def _way_in(fabric: Fabric, root: dict[str, Any]) -> list[str]:
    """Port -> cable -> leaf: the root's way into the fabric, when the topology knows it."""
    rl = fabric.leaf(root)
    return [port_text(root)] + ([f"cable to {rl[1]} port {rl[2]}", f"leaf {rl[1]}"] if rl and rl[2] is not None else [])


def _same_port(fabric: Fabric, root: dict[str, Any], c: dict[str, Any]) -> list[str] | None:
    rh, ch = root.get("host"), c.get("host")
    if rh == ch and rh is not None:
        # a host-wide finding (no device: an nccl-tests run, a layer verdict) shares the host, not the port
        same_dev = c.get("device") is not None and c["device"] == root.get("device")
        same_port = c.get("port") is None or root.get("port") is None or c["port"] == root["port"]
        return [port_text(root)] if same_dev and same_port else None
    rg, cg = fabric.node_of(root), fabric.node_of(c)
    if rg and cg and rg == cg and root.get("port") == c.get("port"):
        return [port_text(root), f"the same port seen from {ch} ({c.get('device')})"]
    return None


def _same_host(fabric: Fabric, root: dict[str, Any], c: dict[str, Any]) -> list[str] | None:
    rh = root.get("host")
    return [port_text(root), f"host {rh}"] if rh is not None and rh == c.get("host") else None


def _cable(fabric: Fabric, root: dict[str, Any], c: dict[str, Any]) -> list[str] | None:
    # the ends as the fabric model knows them: an InfiniBand port, or an LLDP switch port and NIC
    end, far_end = fabric.cable_end(root), fabric.cable_end(c)
    if end is None or far_end is None:
        return None
    peer = fabric.peer(*end)
    if peer and (peer[0], peer[1]) == far_end:
        return [port_text(root), f"cable to {peer[2]} port {peer[1]}", port_text(c)]
    return None


def _events(f: dict[str, Any]) -> float | None:
    e = evidence(f).get("events")
    return float(e) if isinstance(e, (int, float)) and e > 0 else None


# Four significant digits agreeing within 1% is a one-in-tens coincidence for two independent
# counts spread over a decade; below 1,000 events two unrelated links match too easily.
SAME_COUNT_MIN = 1000.0


def _same_count(fabric: Fabric, root: dict[str, Any], c: dict[str, Any]) -> list[str] | None:
    """A receiver's loss events and another host's send-side retransmission events are one number.

    Every packet the receiver drops (out-of-sequence, ICRC/FCS discard) is NAKed or times out at its
    sender, which counts it once in ``packet_seq_err``/``local_ack_timeout_err`` and resends it:
    over overlapping windows the two counts agree to within a few events (the windows' edges).
    Two independent faults agree to 1% only by chance, and chance is real for small counts (two
    links with 42 loss events each): below :data:`SAME_COUNT_MIN` events a count proves nothing.
    """
    if root.get("host") == c.get("host") or root.get("_dir") != "rx" or c.get("_dir") != "tx":
        return None
    a, b = _events(root), _events(c)
    if a is not None and b is not None and min(a, b) < SAME_COUNT_MIN and c.get("_sole_pair") == root.get("_i"):
        counted = (
            f"{a:,.0f} loss events received, {b:,.0f} retransmission events sent by {c.get('host')}: the only "
            "receiver losing packets while it resent, the only sender resending while it lost"
        )
        return [port_text(root), counted, port_text(c)]
    if a is None or b is None or min(a, b) < SAME_COUNT_MIN:
        return None
    rs, re_, cs, ce = root.get("start"), root.get("end"), c.get("start"), c.get("end")
    if None not in (rs, re_, cs, ce) and (cs > re_ or rs > ce):
        return None
    if abs(a - b) > max(0.01 * max(a, b), 1.0):
        return None
    counted = f"{a:,.0f} loss events received = {b:,.0f} retransmission events sent by {c.get('host')} (within 1%)"
    return [port_text(root), counted, port_text(c)]


# Counts of one set of events read on several hosts disagree by what the windows' edges hold: a
# reading's jitter against its neighbours' (a few percent of one interval's events over a window of
# ten or more intervals), and Poisson noise where a side's window misses a quiet interval.
FAN_IN_TOLERANCE = 0.03


class _Overlaps:
    """Loss windows of one direction, answering "which overlap [a, b]" without a scan of them all.

    A window overlaps [a, b] unless it ends before a or starts after b (never both), so the count
    and the events of the overlapping windows are the totals less two prefix sums: a fabric with
    thousands of lossy ports pays a logarithm per question, and lists only what it needs.
    """

    def __init__(self, items: list[tuple[tuple[Any, ...], dict[str, Any]]]) -> None:
        self.items = items
        ev = [_events(r) or 0.0 for _, r in items]
        self._by_start = sorted(range(len(items)), key=lambda i: items[i][1]["start"])
        self._starts = [items[i][1]["start"] for i in self._by_start]
        by_end = sorted(range(len(items)), key=lambda i: items[i][1]["end"])
        self._ends = [items[i][1]["end"] for i in by_end]
        self._start_sums = [0.0, *itertools.accumulate(ev[i] for i in self._by_start)]
        self._end_sums = [0.0, *itertools.accumulate(ev[i] for i in by_end)]
        self._by_host: dict[Any, list[dict[str, Any]]] = defaultdict(list)
        for k, r in items:
            self._by_host[k[0]].append(r)

    def count_sum(self, a: Any, b: Any, exclude_host: Any = None) -> tuple[int, float]:
        """How many windows overlap [a, b], and their events (less those of ``exclude_host``)."""
        ended = bisect.bisect_left(self._ends, a)  # windows ending before a
        started = bisect.bisect_right(self._starts, b)  # windows starting at or before b
        n = started - ended
        total = self._start_sums[started] - self._end_sums[ended]
        for r in self._by_host.get(exclude_host, ()) if exclude_host is not None else ():
            if r["start"] <= b and a <= r["end"]:
                n -= 1
                total -= _events(r) or 0.0
        return n, total

    def overlapping(self, a: Any, b: Any) -> list[tuple[tuple[Any, ...], dict[str, Any]]]:
        """The windows overlapping [a, b], in start order."""
        started = bisect.bisect_right(self._starts, b)
        return [self.items[i] for i in self._by_start[:started] if self.items[i][1]["end"] >= a]

    def starting(self, a: Any, b: Any) -> list[tuple[tuple[Any, ...], dict[str, Any]]]:
        """The windows starting in [a, b], in start order."""
        lo, hi = bisect.bisect_left(self._starts, a), bisect.bisect_right(self._starts, b)
        return [self.items[i] for i in self._by_start[lo:hi]]


def _loss_sides(
    rows: Sequence[dict[str, Any]],
) -> tuple[dict[tuple[Any, ...], list[dict[str, Any]]], dict[tuple[Any, ...], dict[str, Any]], dict[str, _Overlaps]]:
    """The loss findings by port and direction, each port's one with the most events, and those by direction."""
    ports = _loss_ports(rows)
    rep = {k: max(v, key=lambda r: _events(r) or 0.0) for k, v in ports.items()}
    return ports, rep, {d: _Overlaps([(k, r) for k, r in rep.items() if k[3] == d]) for d in ("rx", "tx")}


def _loss_ports(rows: Sequence[dict[str, Any]]) -> dict[tuple[Any, ...], list[dict[str, Any]]]:
    """Loss findings (a loss rate and its event count) by port and direction, each port's findings together."""
    out: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for r in rows:
        timed = r.get("start") is not None and r.get("end") is not None
        if timed and r.get("_dir") in ("rx", "tx") and _events(r) is not None and loss_rate(r) is not None:
            out.setdefault((r.get("host"), r.get("device"), r.get("port"), r["_dir"]), []).append(r)
    return out


Ported = list[tuple[tuple[Any, ...], dict[str, Any]]]
"""Loss findings with their port and direction key (host, device, port, direction)."""


def _partners(group: Ported, host: Any, total: float) -> Ported:
    """Of ``group``, the windows on other hosts than ``host``, each with fewer events than ``total``."""
    return [(pk, p) for pk, p in group if pk[0] != host and (_events(p) or 0.0) < total]


def _fan_in_prepare(fabric: Fabric, rows: Sequence[dict[str, Any]]) -> None:
    """Mark each port whose loss count is the sum of its exchange partners' counterpart counts.

    A requester counts a NAK sequence error (``packet_seq_err``) or an ACK timeout for every packet of
    its own that a responder found missing, and the responder counts it as an out-of-sequence arrival:
    over one window, the out-of-sequence arrivals of every host a sender talks to add up to the
    sender's sequence errors, and the sequence errors of every sender into a receiver add up to the
    receiver's out-of-sequence arrivals. When the port's count of one direction equals the sum of
    the other direction's counts on at least two other hosts (within :data:`FAN_IN_TOLERANCE`, at
    least :data:`SAME_COUNT_MIN` events), each smaller than it, the one port common to every flow is
    where the packets were lost, and every partner's loss is a share of it. The partners are the
    findings overlapping the port's window; when their sum is too large (another fault's partners
    overlap it), those whose windows start and end with the port's (within one interval), then each
    set of those sharing one window exactly: a fault's partners see its loss begin and end together,
    an unrelated fault's begin at their own time. When no set adds up the port roots nothing here
    (its partners stay faults of their own: a missed grouping, never a false one).
    """
    ports, rep, by_dir = _loss_sides(rows)
    tol_t = fabric.interval_s
    for k, root in rep.items():
        total = _events(root) or 0.0
        if total < SAME_COUNT_MIN:
            continue
        other = by_dir["tx" if k[3] == "rx" else "rx"]
        rs, re_ = root["start"], root["end"]
        tolerance = max(FAN_IN_TOLERANCE * total, 3.0 * math.sqrt(total))

        # every overlapping window at once, counted without listing them (a fabric of many losses)
        n, summed = other.count_sum(rs, re_, exclude_host=k[0])
        groups = []
        if n >= 2 and abs(summed - total) <= tolerance:
            groups.append(_partners(other.overlapping(rs, re_), k[0], total))
        edge = dt.timedelta(seconds=tol_t)
        aligned = [
            (pk, p)
            for pk, p in _partners(other.starting(rs - edge, rs + edge), k[0], total)
            if abs((p["end"] - re_).total_seconds()) <= tol_t
        ]
        # partners whose windows are one window (the same readings bound them): one cohort each
        cohorts: dict[tuple[Any, Any], list[tuple[tuple[Any, ...], dict[str, Any]]]] = {}
        for pk, p in aligned:
            cohorts.setdefault((p["start"], p["end"]), []).append((pk, p))
        for group in (*groups, aligned, *cohorts.values()):
            summed = sum(_events(p) or 0.0 for _, p in group)
            if len(group) >= 2 and abs(summed - total) <= tolerance:
                break
        else:
            continue
        side = "loss events received" if k[3] == "rx" else "retransmission events sent"
        theirs = "retransmission events" if k[3] == "rx" else "loss events"
        text = (
            f"{total:,.0f} {side} = the {theirs} of its {len(group)} exchange partners "
            f"({summed:,.0f}, within {FAN_IN_TOLERANCE:.0%})"
        )
        for r in ports[k]:
            r["_fan_root"] = True
        for pk, _ in group:
            for member in ports[pk]:
                member.setdefault("_fan_in", {})[root["_i"]] = text


def fan_root(f: dict[str, Any]) -> bool:
    """Whether a finding's port counts the sum of its partners' loss (:data:`FAN_IN` marked it)."""
    return bool(f.get("_fan_root"))


def _fan_in(fabric: Fabric, root: dict[str, Any], c: dict[str, Any]) -> list[str] | None:
    """The consequence's loss is a share of the root port's, whose count is the sum of its partners'."""
    text = (c.get("_fan_in") or {}).get(root.get("_i"))
    return None if text is None else [port_text(root), text, port_text(c)]


def _sole_pair_prepare(fabric: Fabric, rows: Sequence[dict[str, Any]]) -> None:
    """Pair a receiver's loss with a sender's retransmissions when each is the only one of its side.

    Below :data:`SAME_COUNT_MIN` events a matching count proves nothing among many links; but every
    retransmission answers a packet lost somewhere, so when one receiver is the only port of the
    inputs losing packets while one sender is the only port resending (overlapping windows, no other
    loss finding on either side overlapping theirs) and the counts agree within Poisson noise
    (3 sigma), the sender resent what that receiver lost.
    """
    ports, _, side = _loss_sides(rows)
    for rk, r in side["rx"].items:
        if side["tx"].count_sum(r["start"], r["end"], exclude_host=rk[0])[0] != 1:
            continue
        tk, t = next((tk, t) for tk, t in side["tx"].overlapping(r["start"], r["end"]) if tk[0] != rk[0])
        if side["rx"].count_sum(t["start"], t["end"])[0] != 1:
            continue
        a, b = _events(r) or 0.0, _events(t) or 0.0
        if abs(a - b) <= max(1.0, 3.0 * math.sqrt(max(a, b))):
            for member in ports[tk]:
                member["_sole_pair"] = r["_i"]


def _same_leaf(fabric: Fabric, root: dict[str, Any], c: dict[str, Any]) -> list[str] | None:
    rl, cl = fabric.leaf(root), fabric.leaf(c)
    if rl and cl and rl[0] == cl[0] and root.get("host") != c.get("host"):
        return [*_way_in(fabric, root), f"host {c.get('host')} behind it"]
    return None


def _below_spine(fabric: Fabric, root: dict[str, Any], c: dict[str, Any]) -> list[str] | None:
    rg = fabric.node_of(root)
    if not rg or fabric.tier(rg) != "spine":
        return None
    leaves = fabric.leaves_below(rg)
    cl = fabric.leaf(c)
    if cl and cl[0] in leaves:
        return [port_text(root), f"leaf {cl[1]} below it", f"host {c.get('host')} behind {cl[1]}"]
    cg = fabric.node_of(c)
    return [port_text(root), f"leaf {cg} below it"] if cg in leaves else None


def prio_name(priority: int | None) -> str:
    """``priority 3`` or ``802.3x global pause``: how findings and the watchdog name a priority."""
    return "802.3x global pause" if priority is None else f"priority {priority}"


def _pause_share(f: dict[str, Any], direction: str) -> float | None:
    """The share of time a finding's port was paused in ``direction`` (``tx``: pause it sent, ``rx``: received).

    Its ``<direction>_pause_ratio`` (a time-weighted mean over its window), else the highest ratio the
    NIC watchdog rule saw in that direction on the finding's priority (``pause_ratio_peaks``), capped at 1.
    """
    if f.get("metric") == f"{direction}_pause_ratio" and isinstance(f.get("observed"), (int, float)):
        return min(float(f["observed"]), 1.0)
    peaks = evidence(f).get("pause_ratio_peaks")
    if not isinstance(peaks, dict):
        return None
    prio = f.get("priority")
    # the watchdog keys its peaks by direction and priority name ("tx priority 3")
    own = [
        float(v)
        for k, v in peaks.items()
        if isinstance(v, (int, float)) and k.split(" ", 1)[0] == direction
        if prio is None or k == f"{direction} {prio_name(prio)}"
    ]
    return min(max(own), 1.0) if own else None


# A storm's pause crossing a spine: each hop's queue toward the stormed port stays full while the
# hold lasts, so a host held behind it is paused for a large part of the storm's time; a few
# percent is the microburst background of any busy RoCE host (pfc_congestion's warning floor is 5%).
PAUSE_ACROSS_MIN_SHARE = 0.25


def _pause_across_leaves(fabric: Fabric, root: dict[str, Any], c: dict[str, Any]) -> list[str] | None:
    """A storm's pause reaching a host behind another leaf through a spine both leaves are cabled to.

    A NIC storming pause (the root sends it, ``tx``) holds its leaf's egress queue toward it; the leaf
    pauses every ingress port feeding that queue, the spine uplinks among them; the spine's queue toward
    that leaf fills and it pauses its other leaves' uplinks; those leaves pause their hosts (``rx``).
    PFC is per priority, so the pause stays on the storm's priority. Every hop pauses its upstream only
    while its own queue toward the held port is full, so a host reached this way is paused no longer
    than the storm lasted and no more of the time than the storm sent pause: received share <= sent
    share. And the hold keeps the queues full for as long as it lasts, so the received share is a large
    part of the sent one: at least :data:`PAUSE_ACROSS_MIN_SHARE`. The path through a spine alone relates
    every host of a two-tier fabric, so timing and size carry the argument and both must be known:
    the paused host's window starts at or after the storm's start and no later than one sampling
    interval after its end (pause cannot arrive before the storm, nor outlive it).
    """
    if root.get("_dir") != "tx" or c.get("_dir") != "rx" or root.get("host") == c.get("host"):
        return None
    rl, cl = fabric.leaf(root), fabric.leaf(c)
    if not (rl and cl) or rl[0] == cl[0]:
        return None
    spines = fabric.spines_joining(rl[0], cl[0])
    if not spines:
        return None
    rp, cp = root.get("priority"), c.get("priority")
    if rp is not None and cp is not None and rp != cp:
        return None
    rs, re_, cs = root.get("start"), root.get("end"), c.get("start")
    if rs is None or re_ is None or cs is None or cs < rs:
        return None
    if (cs - re_).total_seconds() > fabric.interval_s:
        return None
    sent, got = _pause_share(root, "tx"), _pause_share(c, "rx")
    if sent is None or got is None or math.isnan(sent) or math.isnan(got):
        return None
    if got > sent or got < PAUSE_ACROSS_MIN_SHARE * sent:
        return None
    spine = f"spine {spines[0]}" if len(spines) == 1 else f"spines {', '.join(spines)} (either, by ECMP)"
    sized = (
        f"received pause {got:.0%} of its window: no more than the {sent:.0%} the storm sent, "
        f"at least {PAUSE_ACROSS_MIN_SHARE:.0%} of it"
    )
    return [*_way_in(fabric, root), spine, f"leaf {cl[1]}", f"host {c.get('host')} behind it", sized]


def _job(fabric: Fabric, root: dict[str, Any], c: dict[str, Any]) -> list[str] | None:
    rh, ch = root.get("host"), c.get("host")
    for label, hosts in fabric.jobs:
        if rh in hosts and ch in hosts and rh != ch:
            return [*_way_in(fabric, root), label, f"rank host {ch}"]
    return None


def _by(
    roots: Sequence[dict[str, Any]], key: Callable[[dict[str, Any]], Iterable[Any]]
) -> dict[Any, list[dict[str, Any]]]:
    out: dict[Any, list[dict[str, Any]]] = defaultdict(list)
    for r in roots:
        for k in key(r):
            if k is not None:
                out[k].append(r)
    return out


def _host_index(fabric: Fabric, roots: Sequence[dict[str, Any]]) -> Index:
    by_host = _by(roots, lambda r: [r.get("host")])
    by_node = _by(roots, lambda r: [fabric.node_of(r)])
    return lambda c: [*by_host.get(c.get("host"), ()), *by_node.get(fabric.node_of(c), ())]


def _cable_index(fabric: Fabric, roots: Sequence[dict[str, Any]]) -> Index:
    def far(r: dict[str, Any]) -> list[Any]:
        end = fabric.cable_end(r)
        peer = fabric.peer(*end) if end is not None else None
        return [(peer[0], peer[1])] if peer else []

    by_far = _by(roots, far)
    return lambda c: by_far.get(fabric.cable_end(c), ())


def _count_index(fabric: Fabric, roots: Sequence[dict[str, Any]]) -> Index:
    # only a receiver's loss roots the relation, and only a sender's retransmissions are reached
    counted = sorted(
        ((e, r["_i"]) for r in roots if r.get("_dir") == "rx" and (e := _events(r)) is not None), key=lambda x: x[0]
    )
    keys = [e for e, _ in counted]
    by_i = {r["_i"]: r for r in roots}

    def near(c: dict[str, Any]) -> list[dict[str, Any]]:
        if c.get("_dir") != "tx":
            return []
        out = [by_i[c["_sole_pair"]]] if c.get("_sole_pair") in by_i else []
        b = _events(c)
        if b is not None:
            lo, hi = bisect.bisect_left(keys, b / 1.0101 - 1.0), bisect.bisect_right(keys, b * 1.0101 + 1.0)
            out += [by_i[i] for _, i in counted[lo:hi]]
        return out

    return near


def _fan_in_index(fabric: Fabric, roots: Sequence[dict[str, Any]]) -> Index:
    by_i = {r["_i"]: r for r in roots}
    return lambda c: [by_i[i] for i in (c.get("_fan_in") or {}) if i in by_i]


def _leaf_index(fabric: Fabric, roots: Sequence[dict[str, Any]]) -> Index:
    def leaf_of(r: dict[str, Any]) -> list[Any]:
        leaf = fabric.leaf(r)
        return [leaf[0]] if leaf else []

    by_leaf = _by(roots, leaf_of)
    return lambda c: by_leaf.get(leaf[0], ()) if (leaf := fabric.leaf(c)) else ()


def _spine_index(fabric: Fabric, roots: Sequence[dict[str, Any]]) -> Index:
    spines = [r for r in roots if (n := fabric.node_of(r)) and fabric.tier(n) == "spine"]
    return lambda c: spines


def _storm_index(fabric: Fabric, roots: Sequence[dict[str, Any]]) -> Index:
    senders = [r for r in roots if r.get("_dir") == "tx" and fabric.leaf(r)]
    return lambda c: senders if c.get("_dir") == "rx" else ()


def _job_index(fabric: Fabric, roots: Sequence[dict[str, Any]]) -> Index:
    by_host = _by(roots, lambda r: [r.get("host")])
    jobs_of: dict[str, list[frozenset[str]]] = defaultdict(list)
    for _, hosts in fabric.jobs:
        for h in hosts:
            jobs_of[h].append(hosts)

    def mates(c: dict[str, Any]) -> list[dict[str, Any]]:
        hosts = {h for job in jobs_of.get(c.get("host"), ()) for h in job}
        return [r for h in hosts for r in by_host.get(h, ())]

    return mates


def _nvlink_domain(f: dict[str, Any]) -> str | None:
    d = evidence(f).get("nvlink_domain")
    return d if isinstance(d, str) and d else None


def _same_nvlink_domain(fabric: Fabric, root: dict[str, Any], c: dict[str, Any]) -> list[str] | None:
    del fabric
    d = _nvlink_domain(root)
    if d is None or d != _nvlink_domain(c):
        return None
    return [f"NVLink domain {d}", f"host {c.get('host')} ({c.get('device') or 'its GPUs'})"]


def _domain_index(
    fabric: Fabric, roots: Sequence[dict[str, Any]]
) -> Callable[[dict[str, Any]], Iterable[dict[str, Any]]]:
    del fabric
    by_domain: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in roots:
        d = _nvlink_domain(r)
        if d is not None:
            by_domain[d].append(r)
    return lambda c: by_domain.get(_nvlink_domain(c) or "", ())


SAME_PORT = RelationKind(
    "same_port",
    "the same host, device and port (or the same node GUID and port seen from a topology dump)",
    "the findings",
    _same_port,
    candidates=_host_index,
)
SAME_HOST = RelationKind(
    "same_host", "the same host, another device", "the findings", _same_host, candidates=_host_index
)
CABLE = RelationKind(
    "cable",
    "the two ends of one cable",
    "`links` (ibnetdiscover, iblinkinfo, ibdiagnet, LLDP)",
    _cable,
    candidates=_cable_index,
)
SAME_COUNT = RelationKind(
    "same_count",
    "a receiver's loss events and another host's send-side retransmission events are the same number "
    "(within 1%, at least 1,000 events; or within Poisson noise when each is the only loss of its side in "
    "the inputs) in overlapping windows: every packet one dropped the other resent",
    "the findings' `evidence.events`",
    _same_count,
    prepare=_sole_pair_prepare,
    candidates=_count_index,
)
FAN_IN = RelationKind(
    "fan_in",
    "one port's loss count is the sum of the counterpart counts of at least two other hosts it exchanges "
    f"with (sequence errors and NAKs received against out-of-sequence arrivals, within {FAN_IN_TOLERANCE:.0%}, "
    "at least 1,000 events) in overlapping windows: every partner's loss is a share of that port's",
    "the findings' `evidence.events`",
    _fan_in,
    prepare=_fan_in_prepare,
    candidates=_fan_in_index,
)
SAME_LEAF = RelationKind(
    "same_leaf",
    "two hosts whose ports are cabled to the same leaf switch",
    "`links`",
    _same_leaf,
    candidates=_leaf_index,
)
BELOW_SPINE = RelationKind(
    "below_spine",
    "a leaf cabled to the spine, or a host behind such a leaf",
    "`links`",
    _below_spine,
    candidates=_spine_index,
)
PAUSE_ACROSS_LEAVES = RelationKind(
    "pause_across_leaves",
    "a host behind another leaf, both leaves cabled to one spine, receiving pause that starts within the "
    "storm's window (plus one interval) on the storm's priority, no more than the storm sent and at least "
    f"{PAUSE_ACROSS_MIN_SHARE:.0%} of it: each hop pauses its upstream only while its queue toward the held "
    "port is full",
    "`links` with leaf <-> spine (a switch's LLDP table, ibnetdiscover) and the findings' pause ratios",
    _pause_across_leaves,
    candidates=_storm_index,
)
JOB = RelationKind(
    "job",
    "two hosts among the ranks of one collective",
    "`nccl_ranks` (nccl-tests rank lines; each rank list restarts at rank 0)",
    _job,
    candidates=_job_index,
)

SAME_NVLINK_DOMAIN = RelationKind(
    "same_nvlink_domain",
    "GPUs of one NVLink domain (one ClusterUUID and clique: the GPUs of one NVL72 rack, joined by its NVSwitch trays)",
    "`nvidia-smi -q` Fabric blocks (ClusterUUID, CliqueId), in the findings' `evidence.nvlink_domain`",
    _same_nvlink_domain,
    candidates=_domain_index,
)

RELATION_KINDS: tuple[RelationKind, ...] = (
    SAME_PORT,
    SAME_HOST,
    SAME_NVLINK_DOMAIN,
    CABLE,
    SAME_COUNT,
    FAN_IN,
    SAME_LEAF,
    BELOW_SPINE,
    PAUSE_ACROSS_LEAVES,
    JOB,
)
"""Every relation, strongest first: a finding on the root's own port is explained before one that
merely shares a leaf. ``same_count`` ranks above the leaf: a number matched to 1% over 1,000 events
names the sender, where a leaf only narrows it to its hosts; ``fan_in`` (a port's count the sum of its
partners') ranks beside it for the same reason. ``pause_across_leaves`` ranks below the
leaf and the spine (two switch hops, where they have one or none) and above a job, which is a shared
collective with no path, timing or size checked."""
