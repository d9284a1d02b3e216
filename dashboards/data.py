"""The dashboard's data layer: loading and caching what the pages show.

Everything the pages show comes through here, from fabricscope's public API only. Three modes:

* **analysis**: files under the configured data directory (``FABRICSCOPE_DATA``, default the
  repository's ``sample_traces/``) are read leniently and analysed (``fabricscope.run_analysis``);
* **server**: a configured Prometheus server pulled over a time range (or an exporter endpoint
  scraped), read and analysed by the same ``run_analysis``;
* **history**: when the chosen directory is a ``fabricscope cron`` history
  (``fabricscope.reading.history.is_history``), its stored samples and findings are shown.

What may be read is decided in :mod:`allowed_sources`; the sidebar widgets are in :mod:`components`; the
plot-ready aggregates in :mod:`aggregates`.

Caching: the expensive analysis is a ``st.cache_resource`` keyed by the resolved path and a
fingerprint of its files (latest mtime, total size, file count), so an appended or rotated file
invalidates it. A server pull is keyed by the URL as shown (never its credentials: those stay in
the server-side configuration, looked up inside the loader), the range, the matchers and a
refresh count (the sidebar's refresh button).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import fabricscope
import polars as pl
import streamlit as st
from allowed_sources import remote_sources
from fabricscope.detect import empty_views
from fabricscope.doors.dashboard import analysis_from_environment
from fabricscope.fabric.model import Fabric
from fabricscope.incidents.findings import overall_status
from fabricscope.pipeline import ordered_findings
from fabricscope.reading.history import History, is_history
from fabricscope.reading.prometheus import RemoteOptions, probe


def fingerprint(path: Path) -> tuple[int, int, int]:
    """(latest mtime in ns, total bytes, files) of a file or tree: the cache key beside the path."""
    latest = total = n = 0
    files = [path] if path.is_file() else [Path(d) / f for d, _, fs in os.walk(path) for f in fs]
    for f in files:
        try:
            st_ = f.stat()
        except OSError:
            continue
        latest, total, n = max(latest, st_.st_mtime_ns), total + st_.st_size, n + 1
    return latest, total, n


@dataclass
class Dataset:
    """What every page reads (one analysed source).

    Attributes:
        label: What was loaded (relative source name, ``history: ...``, the uploaded names, or a
            server URL without credentials with its range).
        mode: ``analysis``, ``server``, ``history`` or ``upload``.
        findings: Findings frame (:data:`fabricscope.incidents.findings.FINDINGS_SCHEMA`), worst first.
        rates: The rated counter intervals.
        gauges: Latest value of every gauge series (link rate, width, state, ...).
        attributes: Port attributes (link layer, GUIDs, ...).
        tables: Side tables by name (``links``, ``nccl_results``, ``perftest_results``, ...).
        views: The detectors' views by name (:attr:`fabricscope.Analysis.views`: ``layers``, ``go_back_n`` ...).
        inputs: Per input: path, format, records, rejected, and the error of one that could not be read.
        lifecycle: History mode: one row per fault (first/last seen, resolved); else None.
        runs: History mode: the cron runs; else None.
        analysis: The :class:`fabricscope.Analysis` (for the advisor), when there is one.
    """

    label: str
    mode: str
    findings: pl.DataFrame
    rates: pl.DataFrame
    gauges: pl.DataFrame
    attributes: pl.DataFrame
    tables: dict[str, pl.DataFrame] = field(default_factory=dict)
    views: dict[str, pl.DataFrame] = field(default_factory=empty_views)
    inputs: list[dict[str, Any]] = field(default_factory=list)
    lifecycle: pl.DataFrame | None = None
    runs: pl.DataFrame | None = None
    analysis: Any = None
    status: str = "ok"
    """``ok``, ``warning``, ``critical`` or ``unknown``: :attr:`fabricscope.Analysis.status`, as ``analyze`` says."""
    derived: dict[str, pl.DataFrame] = field(default_factory=dict, repr=False)
    """Frames computed from the dataset once and kept with it (it is shared and never modified)."""

    @cached_property
    def by_port(self) -> dict[tuple[Any, ...], pl.DataFrame]:
        """Rates split per (host, device, port) once, so a page reads one port without scanning all.

        Computed on first use and kept with the cached dataset (every session shares it).
        """
        r = self.rates.with_columns(
            pl.col("host").cast(pl.String),
            pl.col("device").cast(pl.String),
            pl.col("counter").cast(pl.String),
            pl.col("end").alias("time"),
        )
        return r.partition_by(["host", "device", "port"], as_dict=True, maintain_order=True)

    @cached_property
    def network_ports(self) -> pl.DataFrame:
        """host, device, port of every port with a rated network-layer counter."""
        net = pl.DataFrame(fabricscope.counters()).filter(pl.col("layer") == "network")["name"]
        return (
            self.rates.group_by("host", "device", "port")
            .agg(pl.col("counter").cast(pl.String).is_in(net.implode()).any().alias("_net"))
            .filter("_net")
            .select(pl.col("host").cast(pl.String), pl.col("device").cast(pl.String), pl.col("port").cast(pl.Int64))
        )

    @property
    def fabric(self) -> Fabric:
        """The analysis' fabric model (:attr:`fabricscope.Analysis.fabric`): names, HCAs, cables."""
        return getattr(self.analysis, "fabric", None) or Fabric()

    @property
    def conflicts(self) -> list[Any]:
        """Names the inputs disagree on and what was decided (:attr:`fabricscope.Analysis.conflicts`)."""
        return list(self.analysis.conflicts) if self.analysis is not None else []

    @property
    def last_data(self) -> Any:
        """Time of the newest reading (None when there is none)."""
        return self.rates["end"].max() if self.rates.height else None


def _analyse(paths: list[str], label: str, mode: str, remote: RemoteOptions | None = None) -> Dataset:
    # The one pipeline, with the options `fabricscope dashboard` was given (those of `analyze`):
    # inputs that cannot be read are listed with their error and make the status unknown.
    analysis = fabricscope.run_analysis(
        paths, **{"strict": False, **analysis_from_environment()}, remote=remote, keep_detail=True
    )
    return Dataset(
        label=label,
        mode=mode,
        findings=analysis.findings,
        rates=analysis.rates,
        gauges=analysis.gauges,
        attributes=analysis.attributes,
        # `links` is the fabric model's: every input's cables merged once, tiered over the whole fabric.
        tables=dict(analysis.tables),
        views=analysis.views,
        inputs=analysis.inputs,
        analysis=analysis,
        status=analysis.status,
    )


def _from_history(path: Path, label: str) -> Dataset:
    hist = History(path)
    # One analysis over everything stored gives the rates and layers behind the Port and Layers
    # pages; the findings shown are the ones cron raised, once per fault (its latest report).
    analysis = fabricscope.run_analysis(path, **analysis_from_environment(), keep_detail=True)
    stored = hist.findings().collect()
    if "fault_id" in stored.columns and stored.height:
        stored = stored.sort("end", nulls_last=False).unique("fault_id", keep="last")
    findings = ordered_findings(stored)
    return Dataset(
        label=f"history: {label}",
        mode="history",
        findings=findings,
        rates=analysis.rates,
        gauges=analysis.gauges,
        attributes=analysis.attributes,
        tables=dict(analysis.tables),
        views=analysis.views,
        inputs=analysis.inputs,
        lifecycle=hist.lifecycle(),
        runs=hist.runs(),
        analysis=analysis,
        # cron's findings, judged with the inputs by the same rule as every other front door
        status=overall_status(findings, len(analysis.failed_inputs), analysed=analysis.analysed),
    )


@st.cache_resource(max_entries=4, show_spinner="Reading and analysing ...")
def load_source(path: str, stamp: tuple[int, int, int], label: str) -> Dataset:
    """Analyse (or open as a history) a resolved source; cached per path and file fingerprint.

    A shared resource, not a per-session copy: frames are immutable and pages never modify them,
    and copying ten million rates per rerun is what would make the app slow.
    """
    del stamp  # part of the cache key only
    if is_history(path):
        return _from_history(Path(path), label)
    return _analyse([path], label, "analysis")


@st.cache_resource(max_entries=4, show_spinner="Parsing uploaded files ...")
def load_upload(directory: str, digest: str, label: str) -> Dataset:
    """Analyse uploaded files (lenient); cached per content digest."""
    del digest
    return _analyse([directory], label, "upload")


@st.cache_resource(max_entries=8, show_spinner="Pulling from the server and analysing ...")
def load_remote(
    shown: str,
    since_ns: int | None,
    until_ns: int | None,
    match: tuple[str, ...],
    scrapes: int,
    interval_s: float,
    refresh: int,
    label: str,
) -> Dataset:
    """Pull a configured server over ``[since, until)`` (or scrape an exporter) and analyse it.

    Args:
        shown: The source as the browser names it (the URL without credentials); the URL and
            its credentials are looked up here, so they never enter the cache key.
        since_ns: Start of the range (ns since the epoch); None for an exporter endpoint.
        until_ns: End of the range, exclusive (ns); None for an exporter endpoint.
        match: Label matchers from the page, ANDed with the configured ones.
        scrapes: Exporter endpoints: scrapes to take.
        interval_s: Exporter endpoints: seconds between scrapes.
        refresh: Part of the cache key only: the refresh button bumps it.
        label: What the pages call this dataset.

    Raises:
        KeyError: ``shown`` is not a configured source.
        fabricscope.exceptions.RemoteError: the server cannot be read (names the URL and status).
    """
    del refresh
    urls, base = remote_sources()
    opts = RemoteOptions(
        since=since_ns,
        until=until_ns,
        match=(*base.match, *match),
        step_s=base.step_s,
        api=base.api,
        chunk_s=base.chunk_s,
        repeat=scrapes,
        interval_s=interval_s,
        connection=base.connection,
    )
    return _analyse([urls[shown]], label, "server", remote=opts)


@st.cache_data(ttl=300, show_spinner="Asking the server what it is ...")
def source_kind(shown: str) -> str:
    """``prometheus`` or ``exporter`` for a configured source (cached five minutes).

    Raises:
        fabricscope.exceptions.RemoteError: the URL does not answer at all.
    """
    urls, base = remote_sources()
    return probe(urls[shown], base.connection)
