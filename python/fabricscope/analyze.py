"""Run every detector over inputs or an already-read samples frame."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from fabricscope.captures import with_capture_counters
from fabricscope.config import load_config
from fabricscope.detect import DETECTORS, AnalysisInput
from fabricscope.detect.bottleneck import empty_layers, layer_utilisation
from fabricscope.engines import Filters, ReadOptions, get_engine
from fabricscope.findings import FINDINGS_SCHEMA, empty_findings
from fabricscope.incidents import Incident, correlate
from fabricscope.io import InputReport, TimeLike, load
from fabricscope.profiles import get_profile
from fabricscope.rates import rates, value_as_float

__all__ = ["Analysis", "analyze", "run_analysis"]


@dataclass
class Analysis:
    """The result of one analysis run.

    Attributes:
        findings: Frame with :data:`fabricscope.findings.FINDINGS_SCHEMA`, worst first.
        inputs: Per input: path, format, records, rejected (the contract's ``inputs``).
        rates: The rates every detector saw.
        reports: The readers' per-input reports (empty when a frame was analysed).
        tables: Every side table read (``nccl_results``, ``perftest_results``, ``links`` ...), by name.
        layers: Layer utilisation per host and window
            (:func:`fabricscope.detect.bottleneck.layer_utilisation`; empty with its schema when
            nothing applies).
        incidents: Findings grouped by root cause (:func:`fabricscope.incidents.correlate`), worst
            first; findings in none stay standalone.
    """

    findings: pl.DataFrame
    inputs: list[dict[str, Any]]
    rates: pl.DataFrame
    reports: list[InputReport] = field(default_factory=list)
    tables: dict[str, pl.DataFrame] = field(default_factory=dict)
    layers: pl.DataFrame = field(default_factory=empty_layers)
    incidents: list[Incident] = field(default_factory=list)


def _gauges(samples: pl.DataFrame) -> pl.DataFrame:
    return samples.filter(~pl.col("is_counter")).with_columns(value_as_float().alias("value"))


def _empty_attributes() -> pl.DataFrame:
    return pl.DataFrame(
        schema={
            "time": pl.Datetime("ns", "UTC"),
            "host": pl.Categorical(),
            "device": pl.Categorical(),
            "port": pl.UInt16,
            "key": pl.Categorical(),
            "value": pl.String,
            "source": pl.Categorical(),
        }
    )


def _inputs(reports: Sequence[InputReport]) -> list[dict[str, Any]]:
    """The findings document's ``inputs``: every input that was recognised or failed."""
    return [
        {"path": r.path, "format": r.format or "-", "records": r.rows + r.attribute_rows, "rejected": r.bad_records}
        for r in reports
        if r.format is not None or r.failed
    ]


def _ordered(findings: pl.DataFrame) -> pl.DataFrame:
    """Worst first, then by kind and entity (the contract's order)."""
    order = pl.col("severity").replace_strict({"critical": 0, "warning": 1, "info": 2}, return_dtype=pl.Int8)
    return findings.sort([order, "kind", "host", "device", "port"], nulls_last=True).select(FINDINGS_SCHEMA.names())


def _incidents(
    findings: pl.DataFrame, tables: dict[str, pl.DataFrame], attributes: pl.DataFrame | None, r: pl.DataFrame
) -> list[Incident]:
    """The correlation step, once per analysis whichever way the findings were computed."""
    interval = r["interval_s"].median() if "interval_s" in r.columns and r.height else None
    return correlate(
        findings, tables=tables, attributes=attributes, interval_s=float(interval) if interval is not None else None
    )


def run_analysis(
    data: str | os.PathLike[str] | Sequence[str | os.PathLike[str]] | pl.DataFrame,
    *,
    profile: str | None = None,
    config: str | os.PathLike[str] | dict[str, Any] | None = None,
    strict: bool = True,
    host: str | None = None,
    format: str = "auto",
    time: TimeLike = None,
    attributes: pl.DataFrame | None = None,
    tables: dict[str, pl.DataFrame] | None = None,
    engine: str | None = None,
    address: str | None = None,
    partitions: int | None = None,
    since: TimeLike = None,
    until: TimeLike = None,
    hosts: Sequence[str] | None = None,
    limits: Mapping[str, int] | None = None,
) -> Analysis:
    """Read (unless given a frame), rate, and run every detector.

    Args:
        data: Paths to read, or a samples frame.
        profile: Force a technology profile (``ndr400``, ``roce400``...); default: per port.
        config: A TOML path or an already-loaded config dict.
        strict: Reader strictness (see :func:`fabricscope.load`).
        host: Host for inputs naming none.
        format: Input format (``auto`` detects).
        time: Timestamp for inputs without one (see :func:`fabricscope.load`).
        attributes: Port attributes to use with a samples frame.
        tables: Other tables to use with a samples frame (``links`` for topology).
        engine: None analyses one in-memory table (``rates`` holds every rate); ``"local"`` or
            ``"ray"`` partition the work by host (:mod:`fabricscope.engines`, same findings) and
            ``rates`` then holds only the rates the fabric-wide detectors read and ``layers`` is
            empty. Ignored for frames.
        address: Ray cluster address for ``engine="ray"`` (None: a local Ray instance).
        partitions: Host partitions for an engine (default: the engine's choice).
        since: Analyse only samples at or after this time (datetime, epoch seconds, ISO 8601).
        until: Analyse only samples before this time.
        hosts: Analyse only these hosts.
        limits: Raise reader resource limits (names in ``fabricscope.io.LIMITS``; docs/security.md).

    Returns:
        An :class:`Analysis`.
    """
    cfg = config if isinstance(config, dict) else load_config(config)
    prof = get_profile(profile) if profile else None
    tables = dict(tables or {})
    reports: list[InputReport] = []
    filters = Filters.make(since, until, hosts)
    if engine is not None and not isinstance(data, pl.DataFrame):
        ran = get_engine(engine, address=address, partitions=partitions).run(
            [data] if isinstance(data, (str, os.PathLike)) else list(data),
            read=ReadOptions(format=format, host=host, time=time, strict=strict, limits=tuple((limits or {}).items())),
            filters=filters,
            config=cfg,
            profile=prof,
        )
        # Partitioned runs keep no whole-fabric rates: ``rates`` holds what fabric-wide detectors read
        # and ``layers`` stays empty (use engine=None for them).
        ordered = _ordered(ran.findings)
        return Analysis(
            findings=ordered,
            inputs=_inputs(ran.reports),
            rates=ran.rates,
            reports=ran.reports,
            tables=ran.tables,
            incidents=_incidents(ordered, ran.tables, None, ran.rates),
        )
    if isinstance(data, pl.DataFrame):
        samples = data
        attrs = attributes if attributes is not None else _empty_attributes()
        inputs = [{"path": "<frame>", "format": "frame", "records": samples.height, "rejected": 0}]
    else:
        res = load(data, format=format, host=host, time=time, strict=strict, limits=limits)
        samples, attrs, tables, reports = res.samples, res.attributes, res.tables, res.reports
        inputs = _inputs(res.reports)
    # Filters right after reading, before rates (the engines apply them to every parsed batch).
    samples, attrs = filters.apply(samples), filters.apply(attrs, timed=False)
    # Captures are judged like counters: their binned counters stand in for the NIC counters.
    samples = with_capture_counters(samples)
    rcfg = cfg["rates"]
    r = rates(samples, gap_factor=rcfg["gap_factor"], min_gap_s=rcfg["min_gap_s"])
    inp = AnalysisInput(
        samples=samples, rates=r, gauges=_gauges(samples), attributes=attrs, config=cfg, profile=prof, tables=tables
    )
    frames = [fn(inp) for fn in DETECTORS().values()]
    findings = (
        pl.concat([f for f in frames if not f.is_empty()], how="vertical")
        if any(not f.is_empty() for f in frames)
        else empty_findings()
    )
    findings = _ordered(findings)
    return Analysis(
        findings=findings,
        inputs=inputs,
        rates=r,
        reports=reports,
        tables=tables,
        layers=layer_utilisation(inp),
        incidents=_incidents(findings, tables, attrs, r),
    )


def analyze(
    data: str | os.PathLike[str] | Sequence[str | os.PathLike[str]] | pl.DataFrame,
    *,
    profile: str | None = None,
    config: str | os.PathLike[str] | dict[str, Any] | None = None,
    strict: bool = True,
    engine: str | None = None,
    address: str | None = None,
    since: TimeLike = None,
    until: TimeLike = None,
    hosts: Sequence[str] | None = None,
    limits: Mapping[str, int] | None = None,
) -> pl.DataFrame:
    """Analyse counters and return the findings frame.

    Args:
        data: Paths (files or directories) or a samples frame from :func:`fabricscope.read`.
        profile: Force a technology profile; default: detect per port from link layer and rate.
        config: Thresholds TOML (see ``docs/detectors.md``) or a config dict.
        strict: Raise on malformed records (default) or skip and count them.
        engine: ``"local"`` or ``"ray"`` to partition the work by host (see :func:`run_analysis`).
        address: Ray cluster address for ``engine="ray"``.
        since: Analyse only samples at or after this time.
        until: Analyse only samples before this time.
        hosts: Analyse only these hosts.
        limits: Raise reader resource limits (see :func:`run_analysis`).

    Returns:
        One row per finding (schema: ``fabricscope.findings.FINDINGS_SCHEMA``), worst first.

    Example:
        >>> import fabricscope
        >>> f = fabricscope.analyze("sample_traces/prometheus")
        >>> f.filter(f["kind"] == "link_errors").select("host", "device", "metric").row(0)
        ('gpu02', 'mlx5_1', 'symbol_errors')
    """
    return run_analysis(
        data,
        profile=profile,
        config=config,
        strict=strict,
        engine=engine,
        address=address,
        since=since,
        until=until,
        hosts=hosts,
        limits=limits,
    ).findings
