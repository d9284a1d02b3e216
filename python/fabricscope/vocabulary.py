"""The counter vocabulary and the format registry, as Polars frames.

Rust owns the registry (``rust/fabricscope-core/src/vocabulary.rs``); this module only views it.
"""

from __future__ import annotations

import polars as pl

from fabricscope import _native

__all__ = ["SCHEMA_VERSION", "counters", "formats"]

SCHEMA_VERSION: int = _native.SCHEMA_VERSION


def counters() -> pl.DataFrame:
    """Every canonical counter with unit, kind, overflow, layer, description and spellings.

    Returns:
        One row per canonical counter. ``spellings`` lists ``namespace:raw`` names that map to
        it, with ``(xN)`` where the value is multiplied at parse time.

    Example:
        >>> import fabricscope
        >>> c = fabricscope.counters()
        >>> c.filter(c["name"] == "port_xmit_data_bytes")["overflow"].item()
        'saturate@32|wrap@64'
    """
    return pl.DataFrame(_native.counters())


def formats() -> pl.DataFrame:
    """The supported input formats.

    Returns:
        One row per format: ``name`` (for ``format=``), ``aliases`` (other accepted names),
        ``appendable`` (cron mode reads only an appended tail), ``emits_links`` (fills the
        ``links`` topology table), ``produced_by``, ``detection``, ``timestamps``,
        ``time_resolution`` (``1 ms``, ``1 µs``, ``per capture``, ``per input``, ``none``) and
        ``time_resolution_ns`` (the fixed resolution, null when the format does not fix one; what
        each input stated is its report's ``time_resolution_ns``).

    Example:
        >>> import fabricscope
        >>> "ethtool" in fabricscope.formats()["name"].to_list()
        True
    """
    return pl.DataFrame(_native.formats())
