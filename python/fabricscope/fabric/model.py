"""The fabric model: every host, NIC, port, switch and cable of one analysis, named once.

:func:`build` makes it right after the inputs are read and before any detector runs; it is the only
place identity and topology are worked out. Detectors ask it which node GUID a device has and
what is cabled to a port (:meth:`Fabric.node_guid`, :meth:`Fabric.peers`); the pipeline renames
findings with it (:func:`fabricscope.fabric.entities.apply`); incidents ask it the relation questions
(:class:`fabricscope.fabric.relations.Fabric`: leaf, peer, tier, spines, jobs); ``topology()``,
the report, the dashboard and cron show its links and conflicts.

What it holds:

* **names** (:class:`fabricscope.fabric.entities.Entities`): every host alias -> its canonical name (the
  most qualified: the Prometheus ``instance``), HCAs by node GUID, switches, LIDs, a RoCE NIC's
  RDMA device and netdev, and the conflicts between sources, decided by the claims alone;
* **hosts from paths**: a host-less input (``lldpctl-node17.json``) is read under a placeholder
  host that becomes the one known host its path names (:func:`fabricscope.fabric.entities.host_in_path`);
* **links**: the links tables of every input merged by the Rust core
  (:func:`fabricscope._native.merge_links`): each cable once, tiers over the whole fabric;
* **topology answers**: (node, port) -> far end, node -> tier, spine -> the leaves below it, a
  host's device -> its node and leaf, collective jobs -> their hosts.

The spelling facts (GUID normalisation, node-description parsing, tiers) come from the Rust
readers; this module only joins what they read.

Example:
    >>> fabric = build(hosts=["gpu02.cluster.local", "gpu02"])
    >>> fabric.host("gpu02"), fabric.links.height
    ('gpu02.cluster.local', 0)
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import polars as pl

from fabricscope import _native
from fabricscope.fabric.entities import (
    PATH_HOST_PREFIX,
    Conflict,
    Entities,
    host_in_path,
    hosts_named,
    path_placeholder,
    rename_hosts,
    resolve,
)
from fabricscope.fabric.entities import apply as apply_names
from fabricscope.fabric.nvlink import gpu_domains
from fabricscope.incidents.severity import Severity
from fabricscope.reading.scan import links_schema

if TYPE_CHECKING:
    from fabricscope.reading.scan import InputReport

__all__ = ["NO_PATH_HOST", "Fabric", "build", "merged_links", "node_key", "path_host_names", "port_key"]

LINKS_SCHEMA = links_schema()

NO_PATH_HOST = 'no host in the input, and its path names no known host (or several): rows use host "unknown"'
"""The problem line of a host-less input whose path names no known host."""

NO_LINKS = "no links table: leaves unknown (same host = same leaf assumed); other hosts related only through jobs"
"""What the topology of an analysis without a links table can and cannot say."""

Port = int | str
Leaf = tuple[str, str, Port | None]


def node_key(prefix: str = "") -> pl.Expr:
    """A link end's node: its GUID, else (an Ethernet end from LLDP, which has none) its name."""
    return pl.coalesce(pl.col(prefix + "node_guid"), pl.col(prefix + "node_name"))


def port_key(prefix: str = "") -> pl.Expr:
    """A link end's port within its node: the number, else (Ethernet) the interface name."""
    return pl.coalesce(pl.col(prefix + "port").cast(pl.String), pl.col(prefix + "port_name"))


def merged_links(frames: Iterable[pl.DataFrame | None]) -> pl.DataFrame:
    """The links tables of several inputs as one: each cable once, tiers over the whole fabric.

    The Rust core merges them (:func:`fabricscope._native.merge_links`): a cable named by several
    inputs, from either end, is one row (the first input's facts, filled in by later ones); a
    switch is a leaf when any input cables it to an HCA; rows are sorted by their first end.

    Example:
        >>> from fabricscope.reading.load import load
        >>> links = load("sample_traces/ib").tables["links"]
        >>> merged_links([links, links]).height == links.height
        True
    """
    # a table written by hand (a test, an older export) may lack columns: they read as unknown
    tables = [
        f.select([pl.col(c).cast(t) if c in f.columns else pl.lit(None, t).alias(c) for c, t in LINKS_SCHEMA.items()])
        for f in frames
        if f is not None and f.height
    ]
    if not tables:
        return pl.DataFrame(schema=LINKS_SCHEMA)
    merged = _native.merge_links([t.to_arrow() for t in tables])
    return pl.DataFrame(merged) if merged is not None else pl.DataFrame(schema=LINKS_SCHEMA)


@dataclass
class Fabric:
    """One analysis' fabric: its names, its cables and the questions relations ask of it.

    Attributes:
        entities: Every name joined into entities (:class:`fabricscope.fabric.entities.Entities`).
        links: Every input's links, merged and tiered once (the ``links`` schema).
        path_hosts: A host-less input's placeholder host -> the host its path names (or ``unknown``).
        jobs: Collective jobs: (label, the canonical hosts among its ranks).
        source: Where the topology came from (``links table (ibnetdiscover, lldpctl)``), or what
            its absence means.
        interval_s: The sampling interval (the incidents' timing tolerance), set by
            :func:`fabricscope.incidents.correlate.correlate`.
    """

    entities: Entities = field(default_factory=Entities)
    links: pl.DataFrame = field(default_factory=lambda: pl.DataFrame(schema=LINKS_SCHEMA))
    path_hosts: dict[str, str] = field(default_factory=dict)
    jobs: list[tuple[str, frozenset[str]]] = field(default_factory=list)
    source: str = NO_LINKS
    interval_s: float = 30.0
    nvlink_domains: dict[tuple[str, str], str] = field(default_factory=dict)
    # (host, interface) -> its stated lossless configuration (``mlnx_qos``: the PFC priorities and
    # the trust mode): the fleet's, whichever partition a detector sees
    lossless_config: dict[tuple[str, str], dict[str, str]] = field(default_factory=dict)
    """(host, GPU device) -> its NVLink domain (``<ClusterUUID>/clique <id>``, :mod:`fabricscope.fabric.nvlink`)."""
    # (node, port) -> (far node, far port, far name); node -> tier; spine -> leaves; node -> name
    _peer_of: dict[tuple[str, Port], tuple[str, Port, str]] = field(default_factory=dict, repr=False)
    # each InfiniBand port -> its cable's two ends, in the links table's order (the lower tier first)
    _cable_of: dict[tuple[str, int], tuple[tuple[str, int], tuple[str, int]]] = field(default_factory=dict, repr=False)
    _tier_of: dict[str, str] = field(default_factory=dict, repr=False)
    _below: dict[str, set[str]] = field(default_factory=dict, repr=False)
    _names: dict[str, str] = field(default_factory=dict, repr=False)
    # (canonical host, device) -> node (an HCA's GUID; an LLDP end's name); node -> its first leaf
    _node_of: dict[tuple[str, str], str] = field(default_factory=dict, repr=False)
    _leaf_of_node: dict[str, Leaf] = field(default_factory=dict, repr=False)
    # node -> its cabled ends (an LLDP NIC has one: findings on it name no port)
    _ends_of: dict[str, list[tuple[str, Port]]] = field(default_factory=dict, repr=False)
    # the per-cable answers are worked out on first use: a topology-only input of a million links
    # that no finding asks about never pays for them (about 1.5 KB of Python objects a link)
    _cabled: bool = field(default=False, repr=False)
    # the devices' nodes likewise (a dict entry per LLDP end: 20 MB for 56,000 NICs that
    # `fabricscope parse` never asks about)
    _noded: bool = field(default=False, repr=False)

    def _nodes(self) -> dict[tuple[str, str], str]:
        if not self._noded:
            self._noded = True
            self._node_of = _device_nodes(self)
        return self._node_of

    def _cables(self) -> None:
        if not self._cabled:
            self._cabled = True
            _cable_answers(self)

    # -- names ---------------------------------------------------------------------------------

    def host(self, name: str | None) -> str | None:
        """The canonical name of a host alias (a path placeholder's host; the name itself when nothing joins it)."""
        return self.entities.host(name)

    @property
    def conflicts(self) -> list[Conflict]:
        """Names two inputs map differently and what was decided (:class:`fabricscope.fabric.entities.Conflict`)."""
        return self.entities.conflicts

    def hca(self, guid: str) -> tuple[str, str] | None:
        """The (host, RDMA device) an HCA's node GUID names, when an input says."""
        return self.entities.hcas.get(guid)

    def node_guid(self, host: str | None, device: str | None) -> str | None:
        """The node of a host's device.

        The device itself when it is a GUID, else what sysfs or a node description gives its
        (canonical host, device); None when no input says.

        Example:
            >>> build(hosts=["gpu01"]).node_guid("gpu01", "0x0002C9030001")
            '0x0002c9030001'
        """
        if device is None:
            return None
        if device.startswith("0x"):
            return device.lower()
        return self._nodes().get((self.host(host) or "", device))

    def devices(self) -> pl.DataFrame:
        """Every (canonical host, device) whose node the fabric knows, sorted.

        Columns ``node_guid`` (an HCA's GUID, or an Ethernet end's LLDP name: the links table's
        key of that end), ``host``, ``device``.
        """
        rows = sorted((node, h, d) for (h, d), node in self._nodes().items())
        return pl.DataFrame(rows, schema={"node_guid": pl.String, "host": pl.String, "device": pl.String}, orient="row")

    # -- cables --------------------------------------------------------------------------------

    def node_names(self) -> pl.DataFrame:
        """Every node the links name, under the name the fabric shows it by.

        Columns ``node`` (an end's key in the links table, :func:`node_key`: a GUID, or an Ethernet
        end's LLDP name) and ``name``: a switch's own name as the entities hold it (the hostname of
        an ``MF0;<hostname>:<model>/<unit>`` description, read by the Rust core's rule; its GUID
        when two inputs name it differently), else the node's description as read, else its GUID.

        Example:
            >>> from fabricscope.reading.load import load
            >>> fabric = build(tables={"links": load("sample_traces/ib").tables["links"]})
            >>> names = dict(fabric.node_names().iter_rows())
            >>> sorted(set(names.values()))[:3]
            ['gpu01 mlx5_0', 'gpu02 mlx5_0', 'gpu03 mlx5_0']
            >>> sorted(n for n in names.values() if n.startswith("ib-"))
            ['ib-leaf01', 'ib-leaf02', 'ib-spine01', 'ib-spine02']
        """
        links = self.links
        ends = pl.concat(
            [
                links.select(node_key(p).alias("node"), pl.col(p + "node_name").alias("description"))
                for p in ("", "peer_")
            ]
        )
        rows = ends.drop_nulls("node").unique("node", keep="first", maintain_order=True).sort("node")
        switches = self.entities.switches
        names = [switches.get(node.lower()) or description or node for node, description in rows.iter_rows()]
        return pl.DataFrame({"node": rows["node"], "name": names}, schema={"node": pl.String, "name": pl.String})

    def cable_findings(self, findings: pl.DataFrame) -> pl.DataFrame:
        """The worst warning or critical finding over both ends of each link, and their kinds.

        A link end matches findings on its (GUID, port), where the finding's device is the GUID
        (switch counters from perfquery/UFM), or on the host and device the model says own it; an
        Ethernet end (LLDP) matches its NIC's findings on any port. Every reader stores GUIDs in
        one spelling, so they join as they are.

        Returns:
            Columns ``_link`` (the row of :attr:`links`), ``_rank`` (the worst severity's rank,
            :meth:`fabricscope.incidents.severity.Severity.rank_expr`) and ``kinds``; links no
            finding touches are absent.
        """
        f = findings.filter(pl.col("severity") != "info").with_columns(Severity.rank_expr().alias("_rank"))
        by_guid = f.filter(pl.col("device").str.starts_with("0x")).select(
            pl.col("device").alias("node_guid"), "port", "_rank", "kind"
        )
        lk = self.links.with_row_index("_link").with_columns(
            pl.col("port").cast(pl.Int64), pl.col("peer_port").cast(pl.Int64)
        )
        # An Ethernet end (lldpctl) has no GUID and no port number: the model keys it by its node name
        # ("<host> <netdev>", as rdma-ndd names an HCA), and it matches that NIC's findings on any port.
        both = pl.concat(
            [
                lk.select("_link", node_key().alias("node_guid"), "port"),
                lk.select("_link", node_key("peer_").alias("node_guid"), pl.col("peer_port").alias("port")),
            ]
        )
        # Which host and device each link end is: the fabric model's (sysfs GUIDs, node descriptions,
        # LLDP ends), under the canonical names the findings carry.
        by_host = f.join(self.devices(), on=["host", "device"], how="inner").select(
            "node_guid", "port", "_rank", "kind"
        )
        ends = pl.concat([by_guid, by_host])
        hit = (
            pl.concat(
                [
                    both.join(ends, on=["node_guid", "port"], how="inner"),
                    both.filter(pl.col("port").is_null())
                    .drop("port")
                    .join(ends.drop("port"), on="node_guid", how="inner"),
                ],
                how="diagonal",
            )
            .group_by("_link")
            .agg(pl.col("_rank").max(), pl.col("kind").unique().sort().str.join(", ").alias("kinds"))
        )
        return hit

    def peers(self) -> pl.DataFrame:
        """Both directions of every InfiniBand cable: (``node_guid``, ``port``) -> peer GUID, port and name.

        The same pairs as :meth:`peer` (one table of cable ends: the model's), as a frame; empty
        when no topology source was read. A port named by its host's device is found through
        :meth:`node_guid`.
        """
        self._cables()
        rows = sorted(
            (node, port, far, far_port, name)
            for (node, port), (far, far_port, name) in self._peer_of.items()
            if isinstance(port, int) and isinstance(far_port, int) and (str(node).lower(), port) in self._cable_of
        )
        schema = {
            "node_guid": pl.String,
            "port": pl.Int64,
            "peer_guid": pl.String,
            "peer_port": pl.Int64,
            "peer_name": pl.String,
        }
        return pl.DataFrame(rows, schema=schema, orient="row")

    def cable_ends(self) -> dict[tuple[str, int], tuple[tuple[str, int], tuple[str, int]]]:
        """Each InfiniBand port (node GUID, port) -> its cable's two ends, the lower tier's first.

        Example:
            >>> from fabricscope.reading.load import load
            >>> fabric = build(tables={"links": load("sample_traces/ib").tables["links"]})
            >>> a, b = next(iter(fabric.cable_ends().values()))
            >>> fabric.cable_ends()[b] == (a, b)
            True
        """
        self._cables()
        return self._cable_of

    def name_findings(self, findings: pl.DataFrame) -> pl.DataFrame:
        """Findings under the fabric's names, one per cable (:func:`fabricscope.fabric.entities.apply`)."""
        return apply_names(findings, self.entities, self.cable_ends())

    # -- the questions a relation's check asks (fabricscope.fabric.relations.Fabric) -----------

    def node_of(self, f: Mapping[str, Any]) -> str | None:
        """The node (GUID, or an LLDP name) of a finding's device, when the fabric knows it."""
        dev = str(f.get("device") or "")
        return self._nodes().get((self.host(f.get("host")) or "", dev)) or (
            dev.lower() if dev.startswith("0x") else None
        )

    def peer(self, node: str, port: Port) -> tuple[str, Port, str] | None:
        """The far end of the cable on ``node``'s ``port``: (node, port, name), or None."""
        self._cables()
        return self._peer_of.get((node, port))

    def cable_end(self, f: Mapping[str, Any]) -> tuple[str, Port] | None:
        """The cable end a finding is on: (node, port) as :meth:`peer` takes it, or None when unknown.

        An InfiniBand port is its node's GUID and port number; a switch port from LLDP is the switch
        and its interface name (a SONiC finding's device, ``Ethernet0``); a NIC from LLDP is its node
        (``"<host> <netdev>"``) and its one cabled end, since findings on it name no port.
        """
        self._cables()
        node, port = self.node_of(f), f.get("port")
        if node is not None and port is not None:
            try:
                return (node, int(port)) if (node, int(port)) in self._peer_of else None
            except (TypeError, ValueError):
                return None
        host, device = self.host(f.get("host")), f.get("device")
        if host is not None and device is not None and (host, device) in self._peer_of:
            return (host, device)
        ends = self._ends_of.get(node, []) if node is not None else []
        return ends[0] if len(ends) == 1 else None

    def leaf(self, f: Mapping[str, Any]) -> Leaf | None:
        """The leaf a finding's port hangs off: (leaf node, name, leaf port), or None when unknown."""
        self._cables()
        dev = str(f.get("device") or "")
        if dev.startswith("0x") and self._tier_of.get(dev.lower()) == "leaf":
            return dev.lower(), dev.lower(), None
        g = self.node_of(f)
        if g is not None and f.get("port") is not None:
            far = self._peer_of.get((g, int(f["port"])))
            if far is not None and self._tier_of.get(far[0]) == "leaf":
                return far[0], far[2], far[1]
        return self._leaf_of_node.get(g) if g is not None else None

    def tier(self, node: str) -> str:
        """``leaf``, ``spine``, ``hca``... or "" when unknown."""
        self._cables()
        return self._tier_of.get(node, "")

    def leaves_below(self, spine: str) -> set[str]:
        """The leaves cabled to a spine (their nodes)."""
        self._cables()
        return self._below.get(spine, set())

    def spines_joining(self, leaf_a: str, leaf_b: str) -> list[str]:
        """The names of the spines cabled to both leaves, sorted; empty when none is known."""
        self._cables()
        return sorted(
            self._names.get(s, s) for s, leaves in self._below.items() if leaf_a in leaves and leaf_b in leaves
        )


def _path_hosts(reports: Sequence[InputReport], named: set[str]) -> dict[str, tuple[str, str]]:
    """Each placeholder host among ``named`` -> (the host its input's path names, else ``unknown``; the path).

    The path may name any other host of ``named``.

    A host-less input whose path names no known host gets a problem line (:data:`NO_PATH_HOST`).
    """
    placeholders = {h for h in named if h.startswith(PATH_HOST_PREFIX)}
    if not placeholders:
        return {}
    known = named - placeholders
    out: dict[str, tuple[str, str]] = {}
    for report in reports:
        placeholder = path_placeholder(report.path)
        if placeholder in placeholders and placeholder not in out:
            named = host_in_path(report.path, known) or "unknown"
            out[placeholder] = (named, str(report.path))
            if named == "unknown" and NO_PATH_HOST not in report.warnings:
                report.warnings.append(NO_PATH_HOST)
    for p in placeholders - out.keys():
        out[p] = ("unknown", "")
    return out


def path_host_names(
    reports: Sequence[InputReport], frames: Iterable[pl.DataFrame | None], known: Iterable[str] = ()
) -> dict[str, str]:
    """Each host-less input's placeholder host -> the host its path names, else ``unknown``.

    For readers of inputs outside an analysis (:func:`fabricscope.load`, cron), which rename their
    frames with it (:func:`fabricscope.fabric.entities.rename_hosts`); an analysis' fabric model holds the
    same names (:attr:`Fabric.path_hosts`). Empty, at no cost, when every input named its host.

    Args:
        reports: The inputs' reports; one whose path names no known host gets a problem line.
        frames: Everything read (samples, attributes, tables): the hosts they name are the known ones.
        known: Hosts known besides (a cron history's).
    """
    if not any(r.names_no_host for r in reports):
        return {}
    named = set(known).union(*(hosts_named(f) for f in frames))
    return {p: h for p, (h, _path) in _path_hosts(reports, named).items()}


def build(
    *,
    hosts: Iterable[str | None] = (),
    attributes: pl.DataFrame | None = None,
    tables: Mapping[str, pl.DataFrame] | None = None,
    host_aliases: Mapping[str, str] | None = None,
    reports: Sequence[InputReport] = (),
) -> Fabric:
    """The fabric model of what was read: made once per analysis, before any detector runs.

    Args:
        hosts: Hosts the samples name (the engines count rows per host while reading).
        attributes: Port attributes (sysfs ``node_guid``, ``netdev``...).
        tables: Side tables: ``links`` (every input's, merged here), ``nccl_ranks`` (jobs, hosts).
        host_aliases: ``--host-alias`` (``alias -> canonical``).
        reports: The inputs' reports: a host-less input's path may name its host, and one that
            names none gets a problem line.

    Returns:
        The :class:`Fabric`.
    """
    tables = tables or {}
    named = {h for h in hosts if h} | hosts_named(attributes) | set().union(*(hosts_named(t) for t in tables.values()))
    path_hosts = _path_hosts(reports, named)
    links = merged_links([tables.get("links")])
    if path_hosts:
        # an LLDP end of a host-less lldpctl file is "<placeholder> <netdev>": named by its host from here on
        links = rename_hosts(links, {p: h for p, (h, _) in path_hosts.items()})
    ent = resolve(
        hosts=named,
        attributes=attributes,
        tables={**tables, "links": links},
        host_aliases=host_aliases,
        hosts_from="samples",
        path_hosts=path_hosts,
    )
    fabric = Fabric(entities=ent, links=links, path_hosts={p: h for p, (h, _) in path_hosts.items()})
    fabric.nvlink_domains = {
        (ent.host(r["host"]) or r["host"], r["device"]): r["nvlink_domain"]
        for r in gpu_domains(attributes).iter_rows(named=True)
        if r["nvlink_domain"] is not None
    }
    fabric.lossless_config = _lossless_config(attributes, ent)
    _topology(fabric, tables.get("nccl_ranks"))
    return fabric


LOSSLESS_CONFIG_KEYS = ("qos.pfc.priorities", "qos.trust")
"""The attributes of an interface's lossless configuration that the fleet is compared on."""


def _lossless_config(attributes: pl.DataFrame | None, ent: Entities) -> dict[tuple[str, str], dict[str, str]]:
    if attributes is None or attributes.is_empty() or "key" not in attributes.columns:
        return {}
    rows = (
        attributes.with_columns(pl.col("key").cast(pl.String), pl.col("host", "device").cast(pl.String))
        .filter(pl.col("key").is_in(LOSSLESS_CONFIG_KEYS))
        .sort("time")
        .group_by("host", "device", "key")
        .agg(pl.col("value").last().cast(pl.String))
        .sort("host", "device", "key")
    )
    out: dict[tuple[str, str], dict[str, str]] = {}
    for host, device, key, value in rows.iter_rows():
        out.setdefault((ent.host(host) or host, device), {})[key] = value or ""
    return out


def _device_nodes(fabric: Fabric) -> dict[tuple[str, str], str]:
    """(canonical host, device) -> its node: an HCA's GUID, an LLDP end's name."""
    links, ent = fabric.links, fabric.entities
    node_of = dict(ent.guid_of_device)
    if links.height:
        # An Ethernet NIC from LLDP has no GUID: its end is named "<host> <netdev>" (rdma-ndd's
        # shape) and that name is its node.
        for pre in ("", "peer_"):
            ends = links.filter((pl.col(pre + "node_type") == "hca") & pl.col(pre + "node_guid").is_null())
            for name in ends[pre + "node_name"].unique().drop_nulls().to_list():
                parts = name.split(" ", 1)
                if len(parts) == 2:
                    node_of.setdefault((fabric.host(parts[0]) or parts[0], parts[1]), name)
        # a RoCE NIC's LLDP end is named by its netdev; its RDMA device (the name findings carry
        # once ibdev2netdev or `rdma link` joins them) is the same node
        for (h, netdev), (rdma, _port) in sorted(ent.netdevs.items()):
            if (h, netdev) in node_of:
                node_of.setdefault((h, rdma), node_of[(h, netdev)])
    return node_of


def _topology(fabric: Fabric, ranks: pl.DataFrame | None) -> None:
    """Fill the fabric's source and jobs; the devices' nodes and the per-cable answers wait for a question."""
    links = fabric.links
    if links.height:
        fabric.source = "links table (" + ", ".join(sorted(set(links["source"].cast(pl.String).to_list()))) + ")"
    if ranks is not None and not ranks.is_empty():
        # Runs are numbered per log, so two logs both have a run 0: a rank list restarts at rank 0,
        # and each rank list (in read order) is one job.
        members: list[set[str]] = []
        for rank, host in ranks.select("rank", pl.col("host").cast(pl.String)).iter_rows():
            if rank == 0 or not members:
                members.append(set())
            members[-1].add(fabric.host(host) or host)
        # Numbered by their hosts, not by the order the logs were read in: the same logs give the
        # same job numbers whatever order they are named in.
        for n, job_hosts in enumerate(sorted(members, key=sorted)):
            if len(job_hosts) > 1:
                first = sorted(job_hosts)[0]
                fabric.jobs.append(
                    (f"nccl-tests job {n + 1} ({len(job_hosts)} hosts from {first})", frozenset(job_hosts))
                )


def _cable_answers(fabric: Fabric) -> None:
    """Fill the per-cable answers: far ends, tiers, the leaves below each spine, a node's first leaf."""
    links = fabric.links
    if not links.height:
        return
    for r in links.with_columns(_a=node_key(), _b=node_key("peer_")).iter_rows(named=True):
        # a port is its number, or (an Ethernet end from LLDP) its interface name
        pa = int(r["port"]) if r["port"] is not None else r.get("port_name")
        pb = int(r["peer_port"]) if r["peer_port"] is not None else r.get("peer_port_name")
        if r["_a"] is None or r["_b"] is None or pa is None or pb is None:
            continue
        a, b = (r["_a"], pa), (r["_b"], pb)
        fabric._peer_of[a] = (b[0], b[1], r["peer_node_name"] or r["_b"])
        fabric._peer_of[b] = (a[0], a[1], r["node_name"] or r["_a"])
        for end in (a, b):
            if end not in fabric._ends_of.setdefault(end[0], []):
                fabric._ends_of[end[0]].append(end)
        if (
            r["node_guid"] is not None
            and r["peer_node_guid"] is not None
            and isinstance(pa, int)
            and isinstance(pb, int)
        ):
            ib_a, ib_b = (str(r["node_guid"]).lower(), pa), (str(r["peer_node_guid"]).lower(), pb)
            fabric._cable_of[ib_a] = fabric._cable_of[ib_b] = (ib_a, ib_b)
        fabric._tier_of[r["_a"]] = r.get("tier") or ""
        fabric._tier_of[r["_b"]] = r.get("peer_tier") or ""
        if r.get("tier") == "leaf" and r.get("peer_tier") == "spine":
            fabric._below.setdefault(r["_b"], set()).add(r["_a"])
            fabric._names.setdefault(r["_b"], r["peer_node_name"] or r["_b"])
    # a node's first port cabled to a leaf (findings naming no port use it)
    for (g, _port), (pg, pp, pname) in sorted(fabric._peer_of.items(), key=lambda kv: (kv[0][0], str(kv[0][1]))):
        if fabric._tier_of.get(pg) == "leaf":
            fabric._leaf_of_node.setdefault(g, (pg, pname, pp))
