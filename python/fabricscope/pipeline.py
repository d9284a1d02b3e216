"""The analysis pipeline: read, rate, detect, resolve entities, correlate, judge.

:func:`run_analysis` is the one pipeline every front door calls (the ``fabricscope analyze``
command, cron, the report, the dashboard, :func:`fabricscope.analyze`); :class:`Analysis` is what
it returns.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from fabricscope.detect import empty_views
from fabricscope.detect.config import load_config
from fabricscope.engines import analyze_tables, get_engine, merge_tables
from fabricscope.fabric.entities import Conflict, rename_hosts
from fabricscope.fabric.model import Fabric
from fabricscope.fabric.profiles import get_profile
from fabricscope.incidents.correlate import Incident, correlate
from fabricscope.incidents.findings import (
    FINDINGS_SCHEMA,
    STATUS_EXIT,
    analysed_anything,
    document_order,
    overall_status,
)
from fabricscope.reading.load import read_sources
from fabricscope.reading.options import FUTURE_MARGIN_S, Filters, ReadOptions
from fabricscope.reading.prometheus import RemoteOptions
from fabricscope.reading.scan import InputReport, ReadResult, TimeLike, empty_attributes, input_set_mtime
from fabricscope.reading.units import raise_if_nothing_read

__all__ = ["FRAME_INPUT", "Analysis", "Source", "analyze", "input_rows", "ordered_findings", "run_analysis"]

Source = str | os.PathLike[str] | pl.DataFrame | ReadResult
"""What :func:`run_analysis` analyses: a path, URL or ``fabricscope cron`` history (read by the engine),
a samples frame, or a :class:`fabricscope.reading.scan.ReadResult` already read (its reports become ``inputs``);
or a list of any of them, analysed as one input set."""

FRAME_INPUT = "<frame>"
"""The ``path`` under which a samples frame given to :func:`run_analysis` is listed in ``inputs``."""


@dataclass
class Analysis:
    """The result of one analysis run.

    Attributes:
        findings: Frame with :data:`fabricscope.incidents.findings.FINDINGS_SCHEMA`, worst first.
        inputs: Per input: path, format, records, rejected (the contract's ``inputs``).
        rates: The rates every detector saw.
        reports: The readers' per-input reports; a samples frame given to :func:`run_analysis` is
            one report named ``<frame>`` (:data:`FRAME_INPUT`).
        tables: Every side table read (``nccl_results``, ``perftest_results``, ``links`` ...), by name,
            and ``entities``: every name the inputs use for a host, HCA, switch or cable
            (:mod:`fabricscope.fabric.entities`).
        views: The frames detectors explain themselves with, by name, every declared one present
            (``DetectorSpec.views``): ``layers`` (utilisation per host, window and layer),
            ``go_back_n`` (loss and modelled go-back-N efficiency per NIC and interval) ...; empty
            with its schema when nothing applies or the detail was not kept.
        times: First and last sample time per reader format (after filters), for summaries.
        incidents: Findings grouped by root cause (:func:`fabricscope.incidents.correlate.correlate`), worst
            first; findings in none stay standalone.
        status: The verdict from the findings and the inputs together
            (:func:`fabricscope.incidents.findings.overall_status`): ``unknown`` when an input could not be
            read or nothing was analysed, unless a finding is critical. Every front door shows this one.
        analysed: Whether any input measured the fabric: counter samples or results, not only its
            topology (:func:`fabricscope.incidents.findings.analysed_anything`).
        gauges: The last reading of every gauge series (link rate, width, state ...), with the detail kept.
        attributes: Every port attribute read, with the detail kept.
        fabric: The fabric model every step used (:mod:`fabricscope.fabric.model`): names, HCAs,
            switches, cables (``tables["links"]`` is its merged links table), conflicts.
    """

    findings: pl.DataFrame
    inputs: list[dict[str, Any]]
    rates: pl.DataFrame
    reports: list[InputReport] = field(default_factory=list)
    tables: dict[str, pl.DataFrame] = field(default_factory=dict)
    views: dict[str, pl.DataFrame] = field(default_factory=empty_views)
    times: pl.DataFrame = field(default_factory=pl.DataFrame)
    incidents: list[Incident] = field(default_factory=list)
    conflicts: list[Conflict] = field(default_factory=list)
    """Names two inputs map differently and what was decided, sorted (:class:`fabricscope.fabric.entities.Conflict`):
    the one list every front door shows."""
    status: str = "ok"
    analysed: bool = True
    gauges: pl.DataFrame = field(default_factory=pl.DataFrame)
    attributes: pl.DataFrame = field(default_factory=empty_attributes)
    fabric: Fabric = field(default_factory=Fabric)

    @property
    def failed_inputs(self) -> list[dict[str, Any]]:
        """The inputs that could not be read (each with its ``error``)."""
        return [i for i in self.inputs if i.get("error")]

    @property
    def exit_status(self) -> int:
        """The Nagios exit status of :attr:`status` (0 ok, 1 warning, 2 critical, 3 unknown)."""
        return STATUS_EXIT[self.status]


def input_rows(reports: Sequence[InputReport]) -> list[dict[str, Any]]:
    """The findings document's ``inputs``: every input that was recognised or failed, failed ones with their error."""
    return [
        {
            "path": r.path,
            "format": r.format or "-",
            "records": r.rows + r.attribute_rows,
            "rejected": r.bad_records,
            "error": (r.errors[0] if r.errors else "could not be read") if r.failed else None,
        }
        for r in reports
        if r.format is not None or r.failed
    ]


def ordered_findings(findings: pl.DataFrame) -> pl.DataFrame:
    """Worst first, then by kind and entity, in the findings schema's columns.

    The order the JSON document lists them (:func:`fabricscope.incidents.findings.document_order`), so every
    door lists one order.
    """
    return document_order(findings).select(FINDINGS_SCHEMA.names())


def _frame_report(frame: pl.DataFrame) -> InputReport:
    """The report of a samples frame analysed among other sources: all its rows, nothing rejected."""
    return InputReport(FRAME_INPUT, "frame", 0, frame.height, 0, 0)


def _gather(
    sources: Sequence[Source], read: ReadOptions, filters: Filters
) -> tuple[list[pl.DataFrame], list[pl.DataFrame], list[dict[str, pl.DataFrame]], list[InputReport]]:
    """Read a mixed list in order: each run of paths through the unit reader, frames as they are."""
    samples: list[pl.DataFrame] = []
    attrs: list[pl.DataFrame] = []
    tables: list[dict[str, pl.DataFrame]] = []
    reports: list[InputReport] = []
    run: list[str | os.PathLike[str]] = []

    def flush() -> None:
        if run:
            got = read_sources(run, read, filters)
            samples.append(got.samples)
            attrs.append(got.attributes)
            tables.append(got.tables)
            reports.extend(got.reports)
            run.clear()

    for src in sources:
        if isinstance(src, (str, os.PathLike)):
            run.append(src)
            continue
        flush()
        if isinstance(src, ReadResult):
            samples.append(src.samples)
            attrs.append(src.attributes)
            tables.append(src.tables)
            reports.extend(src.reports)
        elif isinstance(src, pl.DataFrame):
            samples.append(src)
            reports.append(_frame_report(src))
        else:
            raise TypeError(f"cannot analyse a {type(src).__name__}: expected a path, URL, DataFrame or ReadResult")
    flush()
    return samples, attrs, tables, reports


def run_analysis(
    data: Source | Sequence[Source],
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
    keep_detail: bool | None = None,
    remote: RemoteOptions | None = None,
    host_aliases: Mapping[str, str] | None = None,
    memory: int | None = None,
    progress: bool | None = None,
    future_margin_s: float = FUTURE_MARGIN_S,
) -> Analysis:
    """Read (unless given a frame), rate, and run every detector: the one analysis pipeline.

    Every front door (the CLI, cron, the report, the dashboard, this API) calls this function, and it
    always runs the engine steps (read -> per host partition -> fabric-wide): tables in memory are the
    local engine with one partition. Benchmark logs, captures and topology dumps travel with the
    counters, so any mix of inputs gives the same findings on every path.

    Args:
        data: Paths, URLs or ``fabricscope cron`` history directories to read (one or a list), a
            samples frame, or a :class:`fabricscope.reading.scan.ReadResult` already read; or a list mixing
            them, analysed as one input set: the paths are read in this process (whatever
            ``engine``) by the reader :func:`fabricscope.load` uses, the frames' rows join theirs in
            list order, and ``inputs`` lists each frame as ``<frame>`` and each ``ReadResult``'s
            reports.
        profile: Force a technology profile (``ndr400``, ``roce400``...); default: per port.
        config: A TOML path or an already-loaded config dict.
        strict: Reader strictness (see :func:`fabricscope.load`).
        host: Host for inputs naming none.
        format: Input format (``auto`` detects).
        time: Timestamp for inputs without one (see :func:`fabricscope.load`).
        attributes: Port attributes to use with a samples frame (added to a mixed list's).
        tables: Other tables to use with a samples frame (``links`` for topology; added to a mixed
            list's).
        engine: ``"local"`` (the default, also when None) or ``"ray"``: who runs the partitions
            (:mod:`fabricscope.engines`); the findings are the same. Ignored for frames.
        address: Ray cluster address for ``engine="ray"`` (None: a local Ray instance).
        partitions: Host partitions for an engine (default: the engine's choice).
        since: Analyse only samples at or after this time (datetime, epoch seconds, ISO 8601).
        until: Analyse only samples before this time.
        hosts: Analyse only these hosts.
        limits: Raise reader resource limits (names in ``fabricscope.reading.scan.LIMITS``; docs/security.md).
        keep_detail: Keep every rate row and the detectors' views (``rates``, ``views``) in the result;
            default: when ``engine`` is None. Without it ``rates`` holds only what the fabric-wide
            detectors read, so memory stays bounded on large inputs.
        remote: How to read URL inputs (a Prometheus server or an exporter endpoint): matchers,
            step, authentication, TLS (:class:`fabricscope.reading.prometheus.RemoteOptions`); a server is
            pulled over ``since``/``until`` (default: the last hour).
        host_aliases: Explicit ``alias -> host`` names (``--host-alias``), over the FQDN/short-name
            join of :func:`fabricscope.fabric.entities.resolve`.
        memory: A memory budget in bytes: analyse with the streaming engine
            (:mod:`fabricscope.engines.streaming`), whose peak memory follows the budget, not the input.
            None: the local engine streams by itself when its estimated peak is above its budget
            (``FABRICSCOPE_MEMORY``, else half of the machine: :func:`fabricscope.engines.local.auto_budget`).
        progress: The streaming engine's progress bar on stderr (None: only on a terminal).
        future_margin_s: A sample read from a path or URL dated more than this many seconds after
            the wall clock is a bad record of its input (``math.inf``: no bound; docs/security.md).

    Returns:
        An :class:`Analysis`.

    Raises:
        EngineUnavailableError: the engine cannot run here (Ray not installed).
    """
    cfg = config if isinstance(config, dict) else load_config(config)
    prof = get_profile(profile) if profile else None
    filters = Filters.make(since, until, hosts)
    keep = engine is None if keep_detail is None else keep_detail

    def read_options(paths: Sequence[str | os.PathLike[str]]) -> ReadOptions:
        # Timeless files take one time per input set, whichever engine splits the reading.
        stamp = input_set_mtime(paths) if time is None else time
        # Without --host, a host-less input (lldpctl -f json, an ethtool log) takes the host its path names.
        return ReadOptions(
            format,
            host,
            stamp,
            strict,
            tuple((limits or {}).items()),
            remote,
            host_from_path=host is None,
            host_aliases=tuple(sorted((host_aliases or {}).items())),
            future_margin_s=future_margin_s,
        )

    if isinstance(data, ReadResult):
        # Read already (fabricscope.load): its reports are the inputs, failed ones included.
        raise_if_nothing_read(data.reports)
        ran = analyze_tables(
            data.samples,
            data.attributes if attributes is None else attributes,
            {**data.tables, **(tables or {})},
            filters=filters,
            config=cfg,
            profile=prof,
            keep_detail=keep,
            host_aliases=host_aliases,
            reports=data.reports,
        )
        ran.reports = list(data.reports)
        inputs = input_rows(ran.reports)
    elif isinstance(data, pl.DataFrame):
        # Tables already in memory: the local engine's steps on one partition.
        ran = analyze_tables(
            data,
            attributes if attributes is not None else empty_attributes(),
            dict(tables or {}),
            filters=filters,
            config=cfg,
            profile=prof,
            keep_detail=keep,
            host_aliases=host_aliases,
        )
        ran.reports = [_frame_report(data)]
        inputs = input_rows(ran.reports)
    elif not isinstance(data, (str, os.PathLike)) and any(isinstance(d, (pl.DataFrame, ReadResult)) for d in data):
        # Paths and frames together: one input set, read here and analysed in memory.
        sources = list(data)
        paths = [d for d in sources if isinstance(d, (str, os.PathLike))]
        samples, attrs, side, reports = _gather(sources, read_options(paths), filters)
        if attributes is not None:
            attrs.append(attributes)
        raise_if_nothing_read(reports)
        ran = analyze_tables(
            pl.concat(samples, how="vertical_relaxed"),
            pl.concat(attrs, how="vertical_relaxed") if attrs else empty_attributes(),
            merge_tables([*side, dict(tables or {})]),
            filters=filters,
            config=cfg,
            profile=prof,
            keep_detail=keep,
            host_aliases=host_aliases,
            reports=reports,
        )
        ran.reports = reports
        inputs = input_rows(reports)
    else:
        paths = [data] if isinstance(data, (str, os.PathLike)) else list(data)
        # A budget turns the local engine (the default) into the streaming one; Ray ignores it.
        name = "stream" if memory is not None and engine in (None, "local") else (engine or "local")
        ran = get_engine(name, address=address, partitions=partitions, memory=memory, progress=progress).run(
            paths,
            read=read_options(paths),
            filters=filters,
            config=cfg,
            profile=prof,
            keep_detail=keep,
        )
        raise_if_nothing_read(ran.reports)
        inputs = input_rows(ran.reports)
    # The fabric model was built once the inputs were read, before any detector ran: findings
    # under its best names, one per cable; every other frame with its path-named hosts.
    fabric = ran.fabric
    _name_hosts_from_paths(ran, fabric)
    findings = ordered_findings(fabric.name_findings(ran.findings))
    tables = {**ran.tables, "entities": fabric.entities.table}
    if "links" in tables:
        tables["links"] = fabric.links
    # Port and link states (attributes alone: `rdma link`, `nvidia-smi nvlink -s`) are judged too.
    analysed = analysed_anything(sum(r.rows for r in ran.reports), {**tables, "attributes": ran.attributes})
    # The correlation step, once, whichever front door and engine computed the findings.
    # The interval of every rate row, not of the rows kept: the same with or without the detail.
    interval = ran.interval_s
    incidents = correlate(
        findings, fabric=fabric, interval_s=float(interval) if isinstance(interval, (int, float)) else None
    )
    return Analysis(
        findings=findings,
        inputs=inputs,
        rates=ran.rates,
        reports=ran.reports,
        tables=tables,
        views={**empty_views(), **ran.views},
        times=ran.times,
        incidents=incidents,
        conflicts=fabric.conflicts,
        # The one verdict, from the findings and the inputs together.
        status=overall_status(findings, sum(1 for i in inputs if i.get("error")), analysed=analysed),
        analysed=analysed,
        gauges=ran.gauges,
        attributes=ran.attributes,
        fabric=fabric,
    )


def _name_hosts_from_paths(ran: Any, fabric: Fabric) -> None:
    """Rename each host-less input's placeholder host to the host its path names, in every frame.

    The names are the fabric model's (:attr:`fabricscope.fabric.model.Fabric.path_hosts`); findings are
    renamed with the rest of their names by :meth:`fabricscope.fabric.model.Fabric.name_findings`.
    """
    names = {p: fabric.host(p) or h for p, h in fabric.path_hosts.items()}
    if not names:
        return
    ran.attributes = rename_hosts(ran.attributes, names)
    ran.gauges = rename_hosts(ran.gauges, names)
    ran.rates = rename_hosts(ran.rates, names)
    ran.tables = {k: rename_hosts(v, names) for k, v in ran.tables.items()}
    ran.views = {k: rename_hosts(v, names) for k, v in ran.views.items()}


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
        One row per finding (schema: ``fabricscope.incidents.findings.FINDINGS_SCHEMA``), worst first.

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
