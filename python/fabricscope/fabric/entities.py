"""One fabric, one identity: every name a source uses for a host, an HCA, a switch or a cable.

Sources name the same thing differently. Prometheus names a host by its ``instance`` label
(``gpu-g02.cluster.local``); rdma-ndd node descriptions (``%h %d``), nccl-tests rank lines and Slurm
use the short name (``gpu-g02``). A topology dump or ``perfquery`` names an HCA port by its node
GUID or LID, sysfs by ``mlx5_0`` with a ``node_guid`` file. :func:`resolve` joins them into one
**entities** table (one row per alias: which entity it names and which source said so), and
:func:`apply` rewrites findings to the best name of their entity, so

* no finding says host ``unknown`` (or names a GUID) when an input maps its GUID or LID to a host;
* the FQDN and the short name of one host are one host, named by the most qualified name any
  input gives (the Prometheus ``instance``: ``node17.ib.example``, not ``node17``); when
  unambiguous: two FQDNs with one short name are a conflict, reported and never guessed
  (``host_aliases`` settles it);
* a cable seen from both ends, or by several sources, is one finding naming both ends, the other
  observations under ``evidence.also_seen``.

Example:
    >>> import polars as pl
    >>> ent = resolve(hosts=["gpu-g02.cluster.local", "gpu-g02", "gpu-g03.cluster.local"])
    >>> ent.host("gpu-g02"), ent.host("gpu-g02.cluster.local"), ent.host("gpu-g03.cluster.local")
    ('gpu-g02.cluster.local', 'gpu-g02.cluster.local', 'gpu-g03.cluster.local')
"""

from __future__ import annotations

import hashlib
import ipaddress
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import PurePath
from typing import Any

import polars as pl

from fabricscope import _native
from fabricscope.incidents.severity import Severity
from fabricscope.redaction import printable

__all__ = [
    "CABLE_KINDS",
    "ENTITIES_SCHEMA",
    "PATH_HOST_PREFIX",
    "Conflict",
    "Entities",
    "apply",
    "conflicts_frame",
    "host_in_path",
    "hosts_named",
    "normalize_guid",
    "path_placeholder",
    "rename_hosts",
    "resolve",
    "switch_name",
]

ENTITIES_SCHEMA = pl.Schema(
    {
        # `host:<name>`, `hca:<node guid>`, `switch:<node guid>`, `cable:<guid>/<port>|<guid>/<port>`
        "entity": pl.String,
        "kind": pl.String,  # host, hca, switch, cable
        "name": pl.String,  # the best name: what findings and incidents print
        "alias": pl.String,  # one name a source uses for it
        "alias_kind": pl.String,  # fqdn, short_name, node_guid, lid, node_description, rdma_device, end, path
        "source": pl.String,  # where the alias came from
    }
)
"""Columns of the entities table (one row per alias)."""

CABLE_KINDS = ("link_degraded", "link_errors", "link_flap", "port_down")
"""Finding kinds that describe a cable, not one end of it: one finding per cable."""


def switch_name(description: str | None) -> str | None:
    """The switch's own name from its NodeDescription.

    NVIDIA/Mellanox switches set ``MF0;<hostname>:<model>/<unit>`` (``MF0;ib-leaf01:MQM9700/U1``):
    the hostname is the name LLDP and the switch's own CLI use. Other descriptions are kept whole.

    Example:
        >>> switch_name("MF0;ib-leaf01:MQM9700/U1"), switch_name("leaf7")
        ('ib-leaf01', 'leaf7')
    """
    # the spelling rule is the Rust core's (node_description.rs), beside the readers of these dumps
    return _native.switch_name(description) if description else None


PATH_HOST_PREFIX = "unknown#"
"""The host of a host-less input's rows until :func:`host_in_path` names it (``unknown#<digest>``)."""


def path_placeholder(path: str | object) -> str:
    """The host the rows of one host-less input (``lldpctl -f json``, an ethtool log) are read under.

    One per path, so two host-less files are two hosts to the detectors, never one; the pipeline
    renames it to the host its path names (:func:`host_in_path`), else ``unknown``.
    """
    return PATH_HOST_PREFIX + hashlib.sha256(str(path).encode()).hexdigest()[:12]


# What separates the words of a file or directory name; a host name (an FQDN has dots) is one or
# several whole words: `lldpctl-node17.json`, `node17.ib.example/lldp.json`, `ethtool_node17.log`.
_WORD_SEP = re.compile(r"[-_.@+,=: ]")


def host_in_path(path: str | object, known: Iterable[str]) -> str | None:
    """The one known host a path names, in its file name or a parent directory; None if none or several.

    A known name (any alias any input gives: FQDN, short name, address) matches as one or several
    whole words of a path component. An FQDN's first label names it too when no other FQDN
    shares that label; names of one host (its FQDN and short name) are one match.

    Example:
        >>> hosts = ["node17.ib.example", "node18", "node19.a.example", "node19.b.example"]
        >>> host_in_path("dumps/lldpctl-node17.json", hosts), host_in_path("dumps/node18/lldp.json", hosts)
        ('node17.ib.example', 'node18')
        >>> host_in_path("dumps/node19/lldp.json", hosts), host_in_path("node17-node18.log", hosts)
        (None, None)
    """
    names = {n for n in known if n and n != "unknown" and not n.startswith(PATH_HOST_PREFIX) and len(n) > 1}
    # each alias -> the hosts it may name (a short name two FQDNs share names both: no match)
    hosts_of: dict[str, set[str]] = {n: {n} for n in names}
    for short, full in _fqdns_by_short_name(names).items():
        hosts_of[short] = set(full)
    found: set[str] = set()
    for part in PurePath(str(path)).parts:
        starts = [0] + [m.end() for m in _WORD_SEP.finditer(part)]
        ends = [m.start() for m in _WORD_SEP.finditer(part)] + [len(part)]
        for i, a in enumerate(starts):
            for b in ends[i:]:
                found |= hosts_of.get(part[a:b], set())
    return next(iter(found)) if len(found) == 1 else None


def hosts_named(frame: pl.DataFrame | None) -> set[str]:
    """Every host a frame names: its ``host`` column, and the hosts of a links table's end names."""
    if frame is None or frame.is_empty():
        return set()
    out: set[str] = set()
    if "host" in frame.columns:
        out |= {h for h in frame["host"].cast(pl.String).unique().to_list() if h}
    for col in ("node_name", "peer_node_name"):
        if col in frame.columns:
            # "<host> <device>": an HCA's node description (rdma-ndd %h %d), an LLDP end
            first = frame[col].cast(pl.String).str.split(" ").list.first().unique().to_list()
            out |= {h for h in first if h}
    return out


def rename_hosts(frame: pl.DataFrame, names: Mapping[str, str]) -> pl.DataFrame:
    """``frame`` with its hosts renamed (``host`` and the first word of a links table's end names)."""
    if frame.is_empty():
        return frame
    cols = []
    if "host" in frame.columns:
        dtype = frame.schema["host"]
        cols.append(pl.col("host").cast(pl.String).replace(names).cast(dtype))
    for col in ("node_name", "peer_node_name"):
        if col in frame.columns:
            parts = pl.col(col).cast(pl.String).str.splitn(" ", 2)
            host = parts.struct.field("field_0").replace(names)
            rest = parts.struct.field("field_1")
            cols.append(
                pl.when(rest.is_null()).then(host).otherwise(pl.concat_str(host, rest, separator=" ")).alias(col)
            )
    return frame.with_columns(cols) if cols else frame


def _fqdns_by_short_name(names: Iterable[str]) -> dict[str, list[str]]:
    """The FQDNs among ``names`` by their first label (``node17`` -> ``[node17.ib.example]``), sorted.

    Addresses are not FQDNs: ``10.0.0.7`` has no short name.
    """
    out: dict[str, list[str]] = {}
    for name in sorted(names):
        if "." in name and not _is_address(name):
            out.setdefault(name.split(".", 1)[0], []).append(name)
    return out


def _is_address(name: str) -> bool:
    try:
        ipaddress.ip_address(name.strip("[]"))
    except ValueError:
        return False
    return True


@dataclass(frozen=True, order=True)
class Conflict:
    """A name two inputs map differently, and what was decided.

    The decision depends on the claims alone, never on the order the inputs were read: a claim
    confirmed by more sources (a host's own sysfs before a node description on a tie) is kept; an
    unbroken tie is not joined, and the name is left as read.

    Attributes:
        kind: What the name is: ``short_name`` (two FQDNs share it), ``node_guid`` (two HCAs claim
            it), ``netdev`` (two RDMA ports claim one network device), ``lid``, ``switch``.
        name: The name itself (``node19``, ``0x1070fd0300cc0017``, ``node17 eth0``).
        claims: What each input says it is, with the input (sorted).
        decision: What findings use: ``kept <claim>`` or ``not joined``.
    """

    kind: str
    name: str
    claims: tuple[str, ...]
    decision: str

    def as_dict(self) -> dict[str, Any]:
        """The conflict in the findings document's ``conflicts`` list."""
        return {"kind": self.kind, "name": self.name, "claims": list(self.claims), "decision": self.decision}

    def __str__(self) -> str:
        label = _CONFLICT_LABELS.get(self.kind, self.kind)
        return f"{label} {self.name} is {'; '.join(self.claims)}: {self.decision}"


def conflicts_frame(conflicts: Iterable[Conflict]) -> pl.DataFrame:
    """One row per conflict: kind, name, claims (joined by ``; ``) and decision.

    The table the report and the dashboard show; names come from the data, so control characters
    are escaped (:func:`fabricscope.redaction.printable`).
    """
    return pl.DataFrame(
        [
            {
                "kind": c.kind,
                "name": printable(c.name),
                "claims": printable("; ".join(c.claims)),
                "decision": c.decision,
            }
            for c in conflicts
        ],
        schema={"kind": pl.String, "name": pl.String, "claims": pl.String, "decision": pl.String},
    )


_CONFLICT_LABELS = {
    "short_name": "short name",
    "node_guid": "node GUID",
    "netdev": "netdev",
    "lid": "LID",
    "switch": "switch GUID",
}


@dataclass
class Entities:
    """The resolved identities of one analysis.

    Attributes:
        table: The entities table (:data:`ENTITIES_SCHEMA`), one row per alias.
        hosts: Every host alias -> its canonical name.
        hcas: HCA node GUID -> (host, RDMA device) (from sysfs ``node_guid`` or an rdma-ndd description).
        lids: LID -> node GUID (from the links table).
        switches: Switch node GUID -> its name.
        netdevs: (host, network device) -> (RDMA device, port) from ``ibdev2netdev`` and
            ``rdma link show`` (the ``netdev`` attribute of an RDMA port): a RoCE NIC's two names.
        conflicts: Names two sources map differently (:class:`Conflict`), sorted: never decided by
            the inputs' order.
    """

    table: pl.DataFrame = field(default_factory=lambda: pl.DataFrame(schema=ENTITIES_SCHEMA))
    hosts: dict[str, str] = field(default_factory=dict)
    hcas: dict[str, tuple[str, str]] = field(default_factory=dict)
    lids: dict[int, str] = field(default_factory=dict)
    switches: dict[str, str] = field(default_factory=dict)
    netdevs: dict[tuple[str, str], tuple[str, int | None]] = field(default_factory=dict)
    conflicts: list[Conflict] = field(default_factory=list)

    def host(self, name: str | None) -> str | None:
        """The canonical name of a host alias (the name itself when no source joins it)."""
        return None if name is None else self.hosts.get(name, name)

    @cached_property
    def guid_of_device(self) -> dict[tuple[str, str], str]:
        """(host, RDMA device) -> the node GUID :attr:`hcas` gives it (the first, in GUID order)."""
        out: dict[tuple[str, str], str] = {}
        for g, hd in self.hcas.items():
            out.setdefault(hd, g)
        return out

    def end_name(self, guid: str, port: int) -> str:
        """One end of a cable by its best name: ``gpu02 mlx5_0 port 1``, ``ib-leaf01 port 2``."""
        if guid in self.hcas:
            h, d = self.hcas[guid]
            return f"{h} {d} port {port}"
        return f"{self.switches.get(guid, guid)} port {port}"


def ib_links(links: pl.DataFrame | None) -> pl.DataFrame | None:
    """The links with a GUID and a port number at both ends (InfiniBand).

    Ethernet (LLDP) rows name their ends by node and interface name and carry no GUID to resolve.
    """
    if links is None or links.is_empty() or "port_name" not in links.columns:
        return links
    return links.filter(
        pl.col("node_guid").is_not_null()
        & pl.col("peer_node_guid").is_not_null()
        & pl.col("port").is_not_null()
        & pl.col("peer_port").is_not_null()
    )


def _hca_descriptions(links: pl.DataFrame | None) -> list[tuple[str, str, str]]:
    """(node GUID, host, device) from HCA NodeDescriptions ``"<host> <device>"`` (rdma-ndd's ``%h %d``)."""
    out: list[tuple[str, str, str]] = []
    if links is None or links.is_empty():
        return out
    for pre in ("", "peer_"):
        rows = links.filter(pl.col(pre + "node_type") == "hca").select(pre + "node_guid", pre + "node_name")
        for guid, name in rows.iter_rows():
            # a description that is not "%h %d" (a SHARP aggregation node, a vendor default) names no host
            named = _native.hca_host_device(name) if name and guid else None
            if named is not None:
                out.append((guid.lower(), *named))
    return out


def resolve(
    *,
    hosts: Iterable[str | None] = (),
    attributes: pl.DataFrame | None = None,
    tables: Mapping[str, pl.DataFrame] | None = None,
    host_aliases: Mapping[str, str] | None = None,
    hosts_from: str = "findings",
    path_hosts: Mapping[str, tuple[str, str]] | None = None,
) -> Entities:
    """Join every name the inputs use into entities.

    Args:
        hosts: Host names seen anywhere (findings, samples); rank lines, attributes and the links
            table's node descriptions are added from ``tables``/``attributes``.
        attributes: Port attributes (sysfs ``node_guid``/``node_guid_hex`` map a host's device to its GUID).
        tables: Side tables: ``links`` (GUIDs, LIDs, node descriptions), ``nccl_ranks`` (hosts).
        host_aliases: Explicit ``alias -> canonical`` host names (``--host-alias``); they win over
            the short-name -> FQDN rule and settle its conflicts.
        hosts_from: Where ``hosts`` came from (the ``source`` of their rows).
        path_hosts: A host-less input's placeholder host (:func:`path_placeholder`) -> (the host
            its path names, or ``unknown``; the path): the placeholder becomes that host's alias.

    Returns:
        The :class:`Entities`.
    """
    tables = tables or {}
    links = ib_links(tables.get("links"))
    rows: list[tuple[str, str, str, str, str, str]] = []
    seen: dict[str, set[str]] = {}

    def saw(name: str | None, source: str) -> None:
        # a placeholder is a host-less input's, named by its path below (path_hosts), never a host
        if name and name != "unknown" and not name.startswith(PATH_HOST_PREFIX):
            seen.setdefault(name, set()).add(source)

    for h in hosts:
        saw(h, hosts_from)
    ranks = tables.get("nccl_ranks")
    if ranks is not None and not ranks.is_empty() and "host" in ranks.columns:
        for h in ranks["host"].cast(pl.String).unique().to_list():
            saw(h, "nccl-tests rank lines")
    if attributes is not None and not attributes.is_empty() and "host" in attributes.columns:
        for h in attributes["host"].cast(pl.String).unique().to_list():
            saw(h, "port attributes")
    described = _hca_descriptions(links)
    for _g, h, _d in described:
        saw(h, "node description (rdma-ndd %h %d)")

    ent = Entities()
    explicit = dict(host_aliases or {})
    # short name -> FQDN: the most qualified name any input gives is the host's name (the
    # Prometheus ``instance``), the short names of node descriptions, rank lines and file names its
    # aliases; two FQDNs sharing one short name leave it unjoined (a conflict) unless --host-alias
    # names it. A short name --host-alias uses (as alias or as target) is the user's: not rejoined.
    canonical: dict[str, str] = {}
    for short, fqdns in sorted(_fqdns_by_short_name(seen).items()):
        if short in explicit or short in explicit.values():
            continue
        if len(fqdns) > 1:
            if short in seen and not all(f in explicit for f in fqdns):
                ent.conflicts.append(
                    Conflict(
                        "short_name",
                        short,
                        tuple(f"{f} ({', '.join(sorted(seen[f]))})" for f in sorted(fqdns)),
                        "not joined: name the right host with --host-alias",
                    )
                )
            continue
        if short in seen:
            canonical[short] = fqdns[0]
    canonical.update(explicit)
    for name, sources in sorted(seen.items()):
        target = canonical.get(name, name)
        ent.hosts[name] = target
        kind = "fqdn" if "." in name and not _is_address(name) else "short_name"
        for src in sorted(sources):
            rows.append((f"host:{target}", "host", target, name, kind, src))
    for alias, target in explicit.items():
        ent.hosts[alias] = target
        rows.append((f"host:{target}", "host", target, alias, "alias", "--host-alias"))
    for placeholder, (named, path) in sorted((path_hosts or {}).items()):
        target = ent.hosts.get(named, named)
        ent.hosts[placeholder] = target
        if named != "unknown":
            rows.append((f"host:{target}", "host", target, named, "path", path))

    # HCAs: node GUID <-> host + RDMA device
    sources_of: dict[str, list[tuple[str, str, str]]] = {}
    if attributes is not None and not attributes.is_empty() and "key" in attributes.columns:
        a = attributes.filter(pl.col("key").cast(pl.String).is_in(["node_guid_hex", "node_guid"])).select(
            pl.col("host").cast(pl.String), pl.col("device").cast(pl.String), pl.col("value").cast(pl.String)
        )
        for h, d, v in a.unique().iter_rows():
            g = _guid(v)
            if g is not None and h and d:
                sources_of.setdefault(g, []).append((ent.host(h) or h, d, "sysfs node_guid"))
    for g, h, d in described:
        sources_of.setdefault(g, []).append((ent.host(h) or h, d, "node description (rdma-ndd %h %d)"))
    _netdev_rows(ent, attributes, rows)
    renamed: dict[str, str] = {}  # a netdev row's HCA id -> the GUID entity it joins
    for g, seen_as in sorted(sources_of.items()):
        claim = _guid_owner(g, seen_as, ent.conflicts)
        if claim is None:
            continue  # two HCAs with equal confirmation: the GUID stays as read
        h, d = claim
        ent.hcas[g] = (h, d)
        name = f"{h} {d}"
        for _h, od, osrc in sorted(set(seen_as)):
            if (_h, od) == claim:
                rows.append((f"hca:{g}", "hca", name, g, "node_guid", osrc))
                rows.append((f"hca:{g}", "hca", name, od, "rdma_device", osrc))
        # the netdev rows of this HCA join its GUID entity (renamed in one pass below)
        renamed[f"hca:{h}/{d}"] = f"hca:{g}"
    if renamed:
        rows[:] = [(renamed[r[0]], *r[1:]) if r[0] in renamed else r for r in rows]
    # switches, LIDs and cables from the links table
    if links is not None and not links.is_empty():
        lids: dict[int, set[str]] = {}
        switch_names: dict[str, set[str]] = {}
        switch_aliases: set[tuple[str, str, str, str]] = set()  # (GUID, alias, alias kind, source)
        for r in links.iter_rows(named=True):
            for pre in ("", "peer_"):
                g = str(r[pre + "node_guid"]).lower()
                if r.get(pre + "lid") is not None:
                    lids.setdefault(int(r[pre + "lid"]), set()).add(g)
                if r[pre + "node_type"] == "switch":
                    named = switch_names.setdefault(g, set())
                    switch_aliases.add((g, g, "node_guid", str(r["source"])))
                    if r[pre + "node_name"]:
                        named.add(switch_name(r[pre + "node_name"]) or g)
                        switch_aliases.add((g, r[pre + "node_name"], "node_description", str(r["source"])))
        for g, names in sorted(switch_names.items()):
            # two dumps naming one switch differently (renamed between them): its GUID, not a guess
            ent.switches[g] = next(iter(names)) if len(names) == 1 else g
            if len(names) > 1:
                ent.conflicts.append(Conflict("switch", g, tuple(sorted(names)), "not joined: named by its GUID"))
        for g, alias, kind, source in switch_aliases:
            rows.append((f"switch:{g}", "switch", ent.switches[g], alias, kind, source))
        for lid, guids in sorted(lids.items()):
            if len(guids) == 1:
                ent.lids[lid] = next(iter(guids))
            else:  # two subnets (or two sweeps) give one LID to two ports: the LID names neither
                ent.conflicts.append(Conflict("lid", str(lid), tuple(sorted(guids)), "not joined: left as read"))
        for r in links.iter_rows(named=True):
            a_end = (str(r["node_guid"]).lower(), int(r["port"]))
            b_end = (str(r["peer_node_guid"]).lower(), int(r["peer_port"]))
            cid = "cable:" + "|".join(f"{g}/{p}" for g, p in sorted([a_end, b_end]))
            cname = f"{ent.end_name(*a_end)} <-> {ent.end_name(*b_end)}"
            for g, p in (a_end, b_end):
                rows.append((cid, "cable", cname, f"{g}/{p}", "end", str(r["source"])))
        for lid, g in sorted(ent.lids.items()):
            kind, name = ("hca", " ".join(ent.hcas[g])) if g in ent.hcas else ("switch", ent.switches.get(g, g))
            rows.append((f"{kind}:{g}", kind, name, f"lid:{lid}", "lid", "links"))
    # whatever order the inputs came in, one table and one list of conflicts
    ent.table = pl.DataFrame(sorted(set(rows)), schema=ENTITIES_SCHEMA, orient="row")
    ent.conflicts.sort()
    return ent


_SYSFS = "sysfs node_guid"


def _guid_owner(guid: str, seen_as: list[tuple[str, str, str]], conflicts: list[Conflict]) -> tuple[str, str] | None:
    """The (host, device) a node GUID names, from every (host, device, source) claiming it.

    One claim: it. Several: the one more sources confirm, then the one the host's own sysfs
    makes (a node description is set at boot or by hand, and can be stale); a tie is not joined.
    Never the first one read: the inputs' order decides nothing.
    """
    by_claim: dict[tuple[str, str], set[str]] = {}
    for h, d, src in seen_as:
        by_claim.setdefault((h, d), set()).add(src)
    if len(by_claim) == 1:
        return next(iter(by_claim))

    def strength(claim: tuple[str, str]) -> tuple[int, bool]:
        return len(by_claim[claim]), _SYSFS in by_claim[claim]

    ranked = sorted(by_claim, key=lambda c: (tuple(-x for x in strength(c)), c))
    best = ranked[0] if strength(ranked[0]) > strength(ranked[1]) else None
    claims = tuple(f"{h} {d} ({', '.join(sorted(by_claim[(h, d)]))})" for h, d in sorted(by_claim))
    decision = f"kept {best[0]} {best[1]}" if best is not None else "not joined: left as read"
    conflicts.append(Conflict("node_guid", guid, claims, decision))
    return best


def _netdev_rows(ent: Entities, attributes: pl.DataFrame | None, rows: list[tuple[str, ...]]) -> None:
    """RDMA device <-> network device of one host (``ibdev2netdev``, ``rdma link show``).

    A RoCE NIC is ``eth0`` to ethtool and node_exporter and ``mlx5_0`` to sysfs hw_counters and
    ``rdma statistic``: one entity named by its RDMA device (the name GUID-keyed sources resolve
    to as well), its netdev an alias. A netdev two RDMA ports claim (or the reverse) is a conflict,
    left as read.
    """
    if attributes is None or attributes.is_empty() or "key" not in attributes.columns:
        return
    cols = [pl.col(c).cast(pl.String) for c in ("host", "device", "value")]
    src = pl.col("source").cast(pl.String) if "source" in attributes.columns else pl.lit("port attributes")
    port = pl.col("port").cast(pl.Int64) if "port" in attributes.columns else pl.lit(None, pl.Int64)
    a = attributes.filter(pl.col("key").cast(pl.String) == "netdev").select(
        *cols, port.alias("port"), src.alias("source")
    )
    claims: dict[tuple[str, str], set[tuple[str, int | None]]] = {}
    sources: dict[tuple[str, str], set[str]] = {}
    for h, d, nd, p, source in a.unique().iter_rows():
        if not (h and d and nd) or nd == d:
            continue
        key = (ent.host(h) or h, nd)
        claims.setdefault(key, set()).add((d, p))
        sources.setdefault(key, set()).add(source or "port attributes")
    by_rdma: dict[tuple[str, str, int | None], set[str]] = {}
    for (h, nd), devs in claims.items():
        for d, p in devs:
            by_rdma.setdefault((h, d, p), set()).add(nd)
    for (h, nd), devs in sorted(claims.items(), key=lambda kv: (kv[0][0], kv[0][1])):
        (d, p), *others = sorted(devs, key=lambda dp: (dp[0], dp[1] or 0))
        if others or len(by_rdma[(h, d, p)]) > 1:
            named = tuple(f"{od} port {op}" for od, op in sorted(devs, key=lambda dp: (dp[0], dp[1] or 0)))
            ent.conflicts.append(Conflict("netdev", f"{h} {nd}", named, "not joined: left as read"))
            continue
        ent.netdevs[(h, nd)] = (d, p)
        name = f"{h} {d}"
        for source in sorted(sources[(h, nd)]):
            rows.append((f"hca:{h}/{d}", "hca", name, nd, "netdev", source))
            rows.append((f"hca:{h}/{d}", "hca", name, d, "rdma_device", source))


def normalize_guid(text: str) -> str | None:
    """A node GUID as every reader stores it, ``0x`` + 16 lowercase hex digits; None if ``text`` is none.

    The readers of topology (ibnetdiscover, iblinkinfo, ibdiagnet) and of counters (sysfs,
    Prometheus ``guid`` labels, perfquery, UFM) all store GUIDs this way, so they join.

    Example:
        >>> normalize_guid("7cfe:9003:003b:4b96"), normalize_guid("0x2C9030001"), normalize_guid("mlx5_0")
        ('0x7cfe9003003b4b96', '0x00000002c9030001', None)
    """
    return _native.normalize_guid(text)


def _guid(text: str | None) -> str | None:
    """A node GUID as the readers store it (``0x`` + 16 lowercase hex digits), or None.

    The Rust core's normaliser, the one every reader uses, so a GUID read here (sysfs
    ``1070:fd03:00cc:0001``, a finding's device ``0x2c9030001``) joins the readers' GUIDs.
    """
    return normalize_guid(text) if text else None


def _evidence(ev: Any) -> dict[str, Any]:
    if isinstance(ev, dict):
        return dict(ev)
    try:
        out = json.loads(ev) if ev else {}
    except ValueError:
        return {}
    return out if isinstance(out, dict) else {}


def _port_guid(ent: Entities, device: str | None) -> str | None:
    """The node GUID a finding's device names (a GUID, or ``lid:N`` through the links table)."""
    d = (device or "").strip().lower()
    if d.startswith("0x"):
        return _guid(d)
    if d.startswith("lid:") and d[4:].isdigit():
        return ent.lids.get(int(d[4:]))
    return None


def apply(
    findings: pl.DataFrame,
    ent: Entities,
    cables: Mapping[tuple[str, int], tuple[tuple[str, int], tuple[str, int]]] | None = None,
) -> pl.DataFrame:
    """Findings under their entities' best names, one finding per cable.

    * hosts become canonical (short name -> FQDN when joined, ``--host-alias``);
    * a finding on an HCA named by GUID or LID becomes the HCA's host and device (the name it was
      read under goes to ``evidence.seen_as``); one on a switch port read with no host names the switch;
    * a finding on a RoCE NIC's netdev (``eth0``: ethtool, node_exporter) names its RDMA device and
      port (``mlx5_0`` port 1) when ``ibdev2netdev`` or ``rdma link show`` maps them (the netdev
      goes to ``evidence.seen_as``); findings of one kind on that NIC read under both names, whose
      windows overlap, become one (the others under ``evidence.also_seen``);
    * findings of a cable kind (:data:`CABLE_KINDS`) on the two ends of one cable, or on one port
      from several sources, whose windows overlap, become one: the worst (a host's end on ties) is
      kept, the union window, the others under ``evidence.also_seen``, and ``evidence.cable`` names
      both ends.

    Args:
        findings: A findings frame.
        ent: From :func:`resolve`.
        cables: Each InfiniBand port (node GUID, port) -> its cable's two ends, as the fabric model
            pairs them (:meth:`fabricscope.fabric.model.Fabric.cable_ends`); None: no topology.

    Returns:
        A findings frame with the same schema.
    """
    if findings.is_empty():
        return findings
    cable_of = cables or {}
    rows = []
    # RDMA ports that also have a netdev name: their findings from both names are one NIC's
    nic_ports = {(h, d, p) for (h, _nd), (d, p) in ent.netdevs.items()}
    for i, r in enumerate(findings.iter_rows(named=True)):
        r = dict(r, _i=i)
        host, dev = r.get("host"), r.get("device")
        r["_read_as"] = (host, dev, r.get("port"))
        r["host"] = ent.host(host)
        rdma = ent.netdevs.get((r["host"], dev)) if r["host"] and dev else None
        if rdma is not None:
            ev = _evidence(r.get("evidence"))
            ev["seen_as"] = {"host": host, "device": dev}
            r["device"] = rdma[0]
            r["port"] = r.get("port") if r.get("port") is not None else rdma[1]
            r["evidence"] = json.dumps(ev, sort_keys=True, default=str)
        nic = (r["host"], r["device"], r.get("port"))
        r["_nic"] = ("nic", *nic) if nic in nic_ports else None
        g = _port_guid(ent, dev)
        if g is not None and g in ent.hcas:
            ev = _evidence(r.get("evidence"))
            ev["seen_as"] = {"host": host, "device": dev}
            r["host"], r["device"] = ent.hcas[g]
            r["evidence"] = json.dumps(ev, sort_keys=True, default=str)
        elif g is not None and g in ent.switches and (host in (None, "unknown")):
            r["host"] = ent.switches[g]
        r["_guid"] = g if g is not None else ent.guid_of_device.get((r["host"], r["device"]))
        rows.append(r)
    return pl.DataFrame(_one_per_cable(rows, ent, cable_of), schema=findings.schema, orient="row").select(
        findings.columns
    )


def _one_per_cable(
    rows: list[dict[str, Any]],
    ent: Entities,
    cable_of: Mapping[tuple[str, int], tuple[tuple[str, int], tuple[str, int]]],
) -> list[dict[str, Any]]:
    def cable(r: dict[str, Any]) -> tuple[tuple[str, int], ...] | None:
        g, p = r.get("_guid"), r.get("port")
        if g is None or p is None:
            return None
        return cable_of.get((g, int(p)), ((g, int(p)),))

    def rank(r: dict[str, Any]) -> tuple[Any, ...]:
        # the worst first; of equals, a port read under its host's own name before one a topology
        # dump named by GUID or LID, one read under its RDMA device's name before one read under
        # its netdev (the RDMA counters carry what relations match: out-of-sequence and
        # retransmission counts), then a fixed order (the engines' row order is not fixed)
        read_host, read_dev, read_port = r["_read_as"]
        by_guid = str(read_dev or "").lower().startswith(("0x", "lid:"))
        by_netdev = read_dev != r["device"] and not by_guid
        return (
            -Severity(r["severity"]).rank,
            by_guid,
            by_netdev,
            str(read_host),
            str(read_dev),
            read_port or 0,
            str(r["metric"]),
        )

    kept: list[dict[str, Any]] = []
    groups: dict[tuple[str, tuple[Any, ...]], list[dict[str, Any]]] = {}
    for r in sorted(rows, key=rank):
        c = cable(r) if r["kind"] in CABLE_KINDS else None
        if c is None and r.get("_nic") is not None:
            c = (r["_nic"],)  # one NIC under two names: one finding per kind
        if c is None:
            kept.append(r)
            continue
        group = groups.setdefault((r["kind"], c), [])
        for k in group:
            if k["_read_as"] == r["_read_as"]:
                continue  # one port read under one name: the detector's own findings (another metric) stay
            ks, ke, rs, re_ = k.get("start"), k.get("end"), r.get("start"), r.get("end")
            if None in (ks, ke, rs, re_) or (rs <= ke and ks <= re_):
                ev = _evidence(k.get("evidence"))
                read_host, read_dev, read_port = r["_read_as"]
                ev.setdefault("also_seen", []).append(
                    {
                        # as the input named it (a topology dump: its GUID, the host it ran on)
                        "host": read_host,
                        "device": read_dev,
                        "port": read_port,
                        "observed": r.get("observed"),
                        "metric": r.get("metric"),
                        "message": r.get("message"),
                    }
                )
                k["evidence"] = json.dumps(ev, sort_keys=True, default=str)
                if None not in (ks, ke, rs, re_):
                    k["start"], k["end"] = min(ks, rs), max(ke, re_)
                break
        else:
            ev = _evidence(r.get("evidence"))
            if len(c) == 2:
                ev["cable"] = [ent.end_name(g, p) for g, p in c]
                r["evidence"] = json.dumps(ev, sort_keys=True, default=str)
            group.append(r)
            kept.append(r)
    kept.sort(key=lambda r: r["_i"])  # the input's order
    for r in kept:
        for k in ("_guid", "_read_as", "_i", "_nic"):
            r.pop(k, None)
    return kept
