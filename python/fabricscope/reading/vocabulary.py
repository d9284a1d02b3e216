"""The counter vocabulary and the format registry, as Polars frames.

Rust owns the registry (``rust/fabricscope-core/src/vocabulary.rs``); this module only views it.
"""

from __future__ import annotations

from functools import cache

import polars as pl

from fabricscope import _native

__all__ = [
    "SCHEMA_VERSION",
    "counters",
    "counters_by_direction",
    "counters_with_role",
    "formats",
    "roles",
    "stand_ins",
    "traffic_counters",
]

SCHEMA_VERSION: int = _native.SCHEMA_VERSION


def counters() -> pl.DataFrame:
    """Every canonical counter with unit, kind, overflow, layer, description, roles and spellings.

    Returns:
        One row per canonical counter. ``spellings`` lists ``namespace:raw`` names that map to
        it, with ``(xN)`` where the value is multiplied at parse time. ``roles`` names what
        analyses read the counter for (``tx_bytes``, ``rx_loss``...), ``role_ranks`` its
        preference within each role (1 first).

    Example:
        >>> import fabricscope
        >>> c = fabricscope.counters()
        >>> c.filter(c["name"] == "port_xmit_data_bytes")["overflow"].item()
        'saturate@32|wrap@64'
    """
    return pl.DataFrame(_native.counters(), infer_schema_length=None)


@cache
def _role_table() -> dict[tuple[str, str], tuple[tuple[str, str], ...]]:
    """(role, layer) -> ((counter, kind), ...) most preferred first, from the core's vocabulary."""
    ranked: dict[tuple[str, str], list[tuple[int, str, str]]] = {}
    for c in _native.counters():
        for role, rank in zip(c["roles"], c["role_ranks"], strict=True):
            ranked.setdefault((role, c["layer"]), []).append((rank, c["name"], c["kind"]))
    return {key: tuple((name, kind) for _, name, kind in sorted(rows)) for key, rows in ranked.items()}


def roles() -> list[str]:
    """Every counter role the core declares, sorted.

    Example:
        >>> import fabricscope.reading.vocabulary as v
        >>> "tx_bytes" in v.roles()
        True
    """
    return sorted({role for role, _ in _role_table()})


def counters_with_role(role: str, layer: str = "network", kind: str | None = None) -> tuple[str, ...]:
    """The canonical counters of ``layer`` that carry ``role``, most preferred first.

    Analyses that need one counter per port take the first one the port has; analyses that need
    every signal take them all.

    Args:
        role: A role name (:func:`roles`).
        layer: ``network``, ``nvlink``, ``pcie``, ``cxl`` or ``device``.
        kind: ``counter`` or ``gauge`` to keep only that kind; ``None`` keeps both.

    Raises:
        ValueError: ``role`` is not a role the core declares.

    Example:
        >>> import fabricscope.reading.vocabulary as v
        >>> v.counters_with_role("tx_bytes")[:2]
        ('vport_rdma_tx_unicast_bytes', 'ext_port_xmit_data_bytes')
    """
    if role not in roles():
        raise ValueError(f"unknown counter role {role!r}; known: {', '.join(roles())}")
    rows = _role_table().get((role, layer), ())
    return tuple(name for name, k in rows if kind is None or k == kind)


@cache
def stand_ins() -> dict[str, str]:
    """Counters that analyses read as another counter (capture counters as NIC counters).

    Example:
        >>> import fabricscope.reading.vocabulary as v
        >>> v.stand_ins()["capture_ce_marked_packets"]
        'np_ecn_marked_roce_packets'
    """
    return {c["name"]: c["stands_for"] for c in _native.counters() if c["stands_for"] is not None}


_TRAFFIC_ROLES = frozenset(
    f"{d}_{what}"
    for d in ("rx", "tx")
    for what in ("bytes", "packets", "priority_bytes", "priority_packets", "stack_bytes", "stack_packets", "wire_bytes")
) | {"to_device_messages", "to_host_messages"}
# Counters of no role that still count volume: the names' endings, unless the name says it counts
# a loss, an error or a congestion signal (vl15_dropped_packets, tx_ecn_marked_packets ...).
_VOLUME_ENDINGS = ("_bytes", "_packets", "_bits", "_requests", "_blocks", "_symbols", "_ticks", "_bandwidth_total")
_NOT_VOLUME = (
    "drop",
    "discard",
    "error",
    "nak",
    "retrans",
    "ecn",
    "cnp",
    "pause",
    "marked",
    "psn",
    "lost",
    "stall",
    "invalid",
)


@cache
def traffic_counters() -> frozenset[str]:
    """Counters that move in healthy operation: bytes, packets, requests, corrected FEC blocks and bits.

    A fabric's quiet state is these counters moving and the others standing still: cron carries
    a port's lookback to its next run only while something else moved (docs/cron.md).

    Example:
        >>> import fabricscope.reading.vocabulary as v
        >>> "port_xmit_data_bytes" in v.traffic_counters(), "symbol_errors" in v.traffic_counters()
        (True, False)
        >>> "fec_correctable_blocks" in v.traffic_counters(), "vl15_dropped_packets" in v.traffic_counters()
        (True, False)
    """
    out = set()
    for c in _native.counters():
        roles = set(c["roles"])
        name = c["name"]
        if roles:
            volume = roles <= _TRAFFIC_ROLES
        else:
            volume = (name.endswith(_VOLUME_ENDINGS) or name.startswith("cxl_")) and not any(
                w in name for w in _NOT_VOLUME
            )
        if volume and c["kind"] == "counter":
            out.add(name)
    return frozenset(out)


def counters_by_direction(signal: str, layer: str = "network") -> dict[str, str]:
    """Counters of the roles ``rx_<signal>`` and ``tx_<signal>``, each mapped to ``rx`` or ``tx``.

    Example:
        >>> import fabricscope.reading.vocabulary as v
        >>> v.counters_by_direction("pause_duration")
        {'rx_pause_duration_us': 'rx', 'tx_pause_duration_us': 'tx'}
    """
    return {c: d for d in ("rx", "tx") for c in counters_with_role(f"{d}_{signal}", layer)}


def formats() -> pl.DataFrame:
    """The supported input formats.

    Returns:
        One row per format: ``name`` (for ``format=``), ``aliases`` (other accepted names),
        ``appendable`` (cron mode reads only an appended tail), ``emits_links`` (fills the
        ``links`` topology table), ``about_its_host`` (what one host prints about itself: a file
        naming no host is that host's, and its path may name it), ``produced_by``, ``detection``, ``timestamps``,
        ``time_resolution`` (``1 ms``, ``1 µs``, ``per capture``, ``per input``, ``none``) and
        ``time_resolution_ns`` (the fixed resolution, null when the format does not fix one; what
        each input stated is its report's ``time_resolution_ns``).

    Example:
        >>> import fabricscope
        >>> "ethtool" in fabricscope.formats()["name"].to_list()
        True
    """
    return pl.DataFrame(_native.formats())
