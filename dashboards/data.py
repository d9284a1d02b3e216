"""The dashboard's data layer: what may be read, cached loaders, and plot-ready aggregates.

Everything the pages show comes through here, from fabricscope's public API only. Two modes:

* **analysis**: files under the configured data directory (``FABRICSCOPE_DATA``, default the
  repository's ``sample_traces/``) are read leniently and analysed (``fabricscope.run_analysis``);
* **history**: when the chosen directory is a ``fabricscope cron`` history
  (``fabricscope.history.is_history``), its stored samples and findings are shown.

Security: the browser never names a file. A source is a path *relative to the data directory*
(query parameter ``?source=`` or the sidebar), resolved and checked to stay inside it; a source
containing a symlink that leads outside is refused. Uploads are size-limited, written with their
base name only into a fresh temporary directory, and parsed with ``strict=False``.

Caching: the expensive analysis is a ``st.cache_resource`` keyed by the resolved path and a
fingerprint of its files (latest mtime, total size, file count), so an appended or rotated file
invalidates it; frames derived from it for plotting are ``st.cache_data`` keyed the same way plus
the selection. Aggregation happens in Polars before plotting (:func:`downsample`), so a series
never sends more than :data:`MAX_POINTS` points to the browser whatever the number of samples.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import fabricscope
import polars as pl
import streamlit as st
from fabricscope.config import DEFAULTS
from fabricscope.detect.bottleneck import empty_layers
from fabricscope.detect.ecn_congestion import LOOP as ECN_LOOP
from fabricscope.detect.packet_loss import BYTES, LOSS_COUNTERS, PACKETS
from fabricscope.detect.pfc_congestion import PAUSE
from fabricscope.findings import FINDINGS_SCHEMA, SEVERITIES, document, overall_status
from fabricscope.history import History, is_history
from fabricscope.profiles import profile_for_port
from fabricscope.rates import latest_gauges

ENV_DATA = "FABRICSCOPE_DATA"
ENV_MAX_UPLOAD_MB = "FABRICSCOPE_MAX_UPLOAD_MB"
DEFAULT_MAX_UPLOAD_MB = 200
MAX_POINTS = 2000
"""Most points per plotted series; longer series are averaged into time buckets."""

SEVERITY_RANK = {s: i for i, s in enumerate(SEVERITIES)}  # info 0, warning 1, critical 2
SEVERITY_COLOURS = {"critical": "#d62728", "warning": "#ff7f0e", "info": "#7f7f7f", "ok": "#2ca02c"}
UPLOAD = "(uploaded files)"
TOPOLOGY_FORMATS = {"ibnetdiscover", "iblinkinfo", "ibdiagnet-db-csv"}


class OutsideDataDirError(ValueError):
    """A requested source is not inside the configured data directory."""


# --------------------------------------------------------------------------------------------
# What may be read


def data_root() -> Path:
    """The configured data directory, resolved (``FABRICSCOPE_DATA``, else ``sample_traces/``)."""
    configured = os.environ.get(ENV_DATA)
    if configured:
        return Path(configured).expanduser().resolve()
    return (Path(__file__).resolve().parent.parent / "sample_traces").resolve()


def max_upload_bytes() -> int:
    """Upload limit in bytes (``FABRICSCOPE_MAX_UPLOAD_MB``, the server's ``maxUploadSize`` too)."""
    try:
        mb = int(os.environ.get(ENV_MAX_UPLOAD_MB, DEFAULT_MAX_UPLOAD_MB))
    except ValueError:
        mb = DEFAULT_MAX_UPLOAD_MB
    return max(mb, 1) * 1024 * 1024


def escaping_links(root: Path, path: Path) -> list[str]:
    """Symlinks under ``path`` whose target is outside ``root`` (relative names, sorted)."""
    out = []
    candidates = [path] if not path.is_dir() else []
    if path.is_dir():
        for dirpath, dirnames, filenames in os.walk(path, followlinks=False):
            candidates.extend(Path(dirpath) / n for n in (*dirnames, *filenames))
    for p in candidates:
        if p.is_symlink():
            target = p.resolve()
            if not target.is_relative_to(root):
                out.append(str(p.relative_to(root) if p.is_relative_to(root) else p))
    return sorted(out)


def resolve_source(rel: str, root: Path | None = None) -> Path:
    """Resolve a source named relative to the data directory, refusing anything outside it.

    Args:
        rel: A relative path such as ``scenarios/pfc-storm`` (``""`` or ``.`` is the root).
        root: The data directory (default :func:`data_root`).

    Returns:
        The resolved path, inside ``root``.

    Raises:
        OutsideDataDirError: ``rel`` is absolute, climbs out with ``..``, leads out through a
            symlink, contains a symlink leading out, or does not exist.
    """
    root = (root or data_root()).resolve()
    rel = (rel or ".").strip()
    if "\x00" in rel:
        raise OutsideDataDirError("source names may not contain NUL bytes")
    if Path(rel).is_absolute() or rel.startswith("~"):
        raise OutsideDataDirError(f"source {rel!r} is not relative to the data directory")
    path = (root / rel).resolve()
    if not path.is_relative_to(root):
        raise OutsideDataDirError(f"source {rel!r} is outside the data directory {root}")
    if not path.exists():
        raise OutsideDataDirError(f"source {rel!r} does not exist under the data directory {root}")
    bad = escaping_links(root, path)
    if bad:
        raise OutsideDataDirError(
            f"source {rel!r} contains symlinks leading outside the data directory: {', '.join(bad[:5])}"
        )
    return path


def list_sources(root: Path | None = None) -> list[str]:
    """Selectable sources: the root, its sub-directories and theirs (two levels), sorted.

    Hidden directories and directories that are symlinks are not offered.
    """
    root = (root or data_root()).resolve()
    out = ["."]
    if not root.is_dir():
        return out
    for d in sorted(p for p in root.iterdir() if p.is_dir() and not p.is_symlink() and not p.name.startswith(".")):
        out.append(d.name)
        if is_history(d):
            continue  # a history's partitions are not sources of their own
        out.extend(
            f"{d.name}/{e.name}"
            for e in sorted(d.iterdir())
            if e.is_dir() and not e.is_symlink() and not e.name.startswith(".")
        )
    return out


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


# --------------------------------------------------------------------------------------------
# Loading


@dataclass
class Dataset:
    """What every page reads (one analysed source).

    Attributes:
        label: What was loaded (relative source name, ``history: ...`` or the uploaded names).
        mode: ``analysis``, ``history`` or ``upload``.
        findings: Findings frame (:data:`fabricscope.findings.FINDINGS_SCHEMA`), worst first.
        rates: The rated counter intervals.
        gauges: Latest value of every gauge series (link rate, width, state, ...).
        attributes: Port attributes (link layer, GUIDs, ...).
        tables: Side tables by name (``links``, ``nccl_results``, ``perftest_results``, ...).
        layers: Layer utilisation (host, window, layer, utilisation_ratio, ...).
        inputs: Per input: path, format, records, rejected.
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
    layers: pl.DataFrame = field(default_factory=empty_layers)
    inputs: list[dict[str, Any]] = field(default_factory=list)
    lifecycle: pl.DataFrame | None = None
    runs: pl.DataFrame | None = None
    analysis: Any = None
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
    def status(self) -> str:
        """``ok``, ``warning`` or ``critical``."""
        return overall_status(self.findings)

    @property
    def last_data(self) -> Any:
        """Time of the newest reading (None when there is none)."""
        return self.rates["end"].max() if self.rates.height else None


def _analyse(paths: list[str], label: str, mode: str) -> Dataset:
    res = fabricscope.load(paths, strict=False)
    analysis = fabricscope.run_analysis(res.samples, attributes=res.attributes, tables=res.tables)
    inputs = [
        {"path": r.path, "format": r.format or "-", "records": r.rows + r.attribute_rows, "rejected": r.bad_records}
        for r in res.reports
        if r.format is not None or r.failed
    ]
    tables = dict(analysis.tables)
    links_from = [r.path for r in res.reports if r.format in TOPOLOGY_FORMATS]
    if links_from:
        # topology() recomputes tiers over all topology inputs together and keeps each cable once.
        tables["links"] = fabricscope.topology(links_from, strict=False)
    return Dataset(
        label=label,
        mode=mode,
        findings=analysis.findings,
        rates=analysis.rates,
        gauges=latest_gauges(res.samples),
        attributes=res.attributes,
        tables=tables,
        layers=analysis.layers,
        inputs=inputs,
        analysis=analysis,
    )


def _from_history(path: Path, label: str) -> Dataset:
    hist = History(path)
    # One analysis over everything stored gives the rates and layers behind the Port and Layers
    # pages; the findings shown are the ones cron raised, once per fault (its latest report).
    analysis = fabricscope.run_analysis(path)
    stored = hist.findings().collect()
    if "fault_id" in stored.columns and stored.height:
        stored = stored.sort("end", nulls_last=False).unique("fault_id", keep="last")
    rank = pl.col("severity").replace_strict({"critical": 0, "warning": 1, "info": 2}, default=3, return_dtype=pl.Int8)
    findings = stored.sort([rank, "kind", "host", "device", "port"], nulls_last=True).select(FINDINGS_SCHEMA.names())
    attributes = hist.attributes()
    runs = hist.runs()
    return Dataset(
        label=f"history: {label}",
        mode="history",
        findings=findings,
        rates=analysis.rates,
        gauges=latest_gauges(hist.samples().filter(~pl.col("is_counter"))),
        attributes=attributes if attributes is not None else pl.DataFrame(),
        tables=dict(analysis.tables),
        layers=analysis.layers,
        inputs=[{"path": str(path), "format": "history", "records": analysis.rates.height, "rejected": 0}],
        lifecycle=hist.lifecycle(),
        runs=runs,
        analysis=analysis,
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


def save_uploads(files: list[Any], limit: int | None = None) -> tuple[str, str, list[str]]:
    """Write uploaded files into a fresh temporary directory.

    Names are reduced to their base name (no directories from the browser) and files above the
    size limit are refused.

    Returns:
        (directory, content digest, refused names with the reason).
    """
    limit = limit or max_upload_bytes()
    directory = Path(tempfile.mkdtemp(prefix="fabricscope-upload-"))
    digest = hashlib.sha256()
    refused = []
    for i, f in enumerate(files):
        name = Path(str(f.name).replace("\\", "/")).name or f"upload-{i}"
        size = getattr(f, "size", None)
        if size is None:
            size = len(f.getbuffer())
        if size > limit:
            refused.append(f"{name}: {size / 2**20:.1f} MiB is above the {limit / 2**20:.0f} MiB limit")
            continue
        content = bytes(f.getbuffer())
        digest.update(name.encode() + b"\0" + hashlib.sha256(content).digest())
        (directory / f"{i:03d}-{name}").write_bytes(content)
    return str(directory), digest.hexdigest(), refused


def _select_source(root: Path) -> str:
    """The sidebar source picker; the choice persists across pages and can come from ``?source=``."""
    options = list_sources(root)
    wanted = st.session_state.get("source")
    if wanted is None:
        wanted = st.query_params.get("source", ".")
    if st.session_state.get("upload") is not None:
        options.append(UPLOAD)  # kept until another upload replaces it, across pages
    elif wanted == UPLOAD:
        wanted = "."
    if wanted not in options:
        options.append(wanted)  # validated by resolve_source below, like anything typed
    choice = st.sidebar.selectbox(
        "Data source",
        options,
        index=options.index(wanted),
        help=f"Directories under the data directory {root}",
    )
    st.session_state["source"] = choice
    return choice


def _upload_widget() -> None:
    limit = max_upload_bytes()
    files = st.sidebar.file_uploader(
        f"Or upload counter files (≤ {limit / 2**20:.0f} MiB each; parsed leniently)",
        accept_multiple_files=True,
        key="uploader",
    )
    if not files:
        return
    # Every rerun sees the same files again: write and analyse them only when they changed.
    key = tuple((getattr(f, "file_id", ""), f.name, f.size) for f in files)
    if st.session_state.get("upload_key") == key:
        return
    directory, digest, refused = save_uploads(files, limit)
    st.session_state["upload_key"] = key
    st.session_state["upload_refused"] = refused
    previous = st.session_state.get("upload")
    if previous:
        shutil.rmtree(previous[0], ignore_errors=True)
    st.session_state["upload"] = (directory, digest, ", ".join(Path(f.name).name for f in files))
    st.session_state["source"] = UPLOAD


def current() -> Dataset | None:
    """Render the source picker and return the chosen dataset (None with an error shown)."""
    root = data_root()
    st.sidebar.caption(f"fabricscope {fabricscope.__version__} · data directory `{root}`")
    _upload_widget()
    for msg in st.session_state.get("upload_refused", []):
        st.sidebar.error(msg)
    choice = _select_source(root)
    if choice == UPLOAD and st.session_state.get("upload"):
        directory, digest, names = st.session_state["upload"]
        return load_upload(directory, digest, f"upload: {names}")
    try:
        path = resolve_source(choice, root)
    except OutsideDataDirError as e:
        st.error(f"Refused: {e}")
        st.session_state["source"] = "."
        return None
    try:
        return load_source(str(path), fingerprint(path), choice)
    except fabricscope.exceptions.FabricscopeError as e:
        st.error(f"Cannot read {choice}: {e}")
        return None


# --------------------------------------------------------------------------------------------
# Aggregates for the pages (pure functions of a Dataset; cheap, so uncached)


def severity_counts(ds: Dataset) -> dict[str, int]:
    """Findings per severity, every severity present (0 when none)."""
    counts = dict.fromkeys(SEVERITIES, 0)
    if ds.findings.height:
        for sev, n in ds.findings.group_by("severity").len().iter_rows():
            counts[sev] = n
    return counts


def findings_by_kind(ds: Dataset) -> pl.DataFrame:
    """Columns kind, severity, findings: one row per kind and severity."""
    if not ds.findings.height:
        return pl.DataFrame(schema={"kind": pl.String, "severity": pl.String, "findings": pl.UInt32})
    return ds.findings.group_by("kind", "severity").agg(pl.len().alias("findings")).sort("kind", "severity")


def worst_ports(ds: Dataset, limit: int = 10) -> pl.DataFrame:
    """Ports ranked by worst severity, then number of findings (info findings ignored).

    Columns: port_id (``host/device:port``), host, device, port, worst, findings, kinds.
    """
    f = ds.findings.filter(pl.col("severity") != "info")
    if not f.height:
        return pl.DataFrame(
            schema={
                "port_id": pl.String,
                "host": pl.String,
                "device": pl.String,
                "port": pl.Int64,
                "worst": pl.String,
                "findings": pl.UInt32,
                "kinds": pl.String,
            }
        )
    rank = pl.col("severity").replace_strict(SEVERITY_RANK, return_dtype=pl.Int8)
    return (
        f.with_columns(rank.alias("_rank"))
        .group_by("host", "device", "port")
        .agg(
            pl.col("_rank").max().alias("_worst"),
            pl.len().alias("findings"),
            pl.col("kind").unique().sort().str.join(", ").alias("kinds"),
        )
        .with_columns(
            port_id(),
            pl.col("_worst").replace_strict(dict(enumerate(SEVERITIES)), return_dtype=pl.String).alias("worst"),
        )
        .sort(["_worst", "findings", "host", "device"], descending=[True, True, False, False], nulls_last=True)
        .select("port_id", "host", "device", "port", "worst", "findings", "kinds")
        .head(limit)
    )


def port_id() -> pl.Expr:
    """``host/device:port`` (``host/device`` for netdevs, ``host`` for host-level rows)."""
    dev = pl.col("device").cast(pl.String)
    name = pl.when(dev.is_null() | (dev == "")).then(pl.lit("")).otherwise(pl.lit("/") + dev)
    port = pl.when(pl.col("port").is_null()).then(pl.lit("")).otherwise(pl.lit(":") + pl.col("port").cast(pl.String))
    return (pl.col("host").cast(pl.String).fill_null("-") + name + port).alias("port_id")


def ports(ds: Dataset) -> pl.DataFrame:
    """Every network port with rated counters: host, device, port, port_id, worst severity first."""
    p = ds.network_ports.with_columns(port_id())  # NVLink/PCIe/GPU devices are not ports
    w = worst_ports(ds, limit=1_000_000).select("host", "device", "port", "worst", "findings")
    p = p.join(w, on=["host", "device", "port"], how="left", nulls_equal=True)
    rank = pl.col("worst").replace_strict(SEVERITY_RANK, default=-1, return_dtype=pl.Int8)
    return p.with_columns(pl.col("findings").fill_null(0)).sort(
        [rank, "findings", "port_id"], descending=[True, True, False]
    )


def downsample(df: pl.DataFrame, by: list[str], values: list[str], max_points: int = MAX_POINTS) -> pl.DataFrame:
    """Average ``values`` into time buckets so each ``by`` series has at most ``max_points`` points.

    Args:
        df: Rows with a ``time`` column (Datetime) and the ``by`` and ``values`` columns.
        by: Series keys.
        values: Columns to average per bucket (a bucket's time is its start).
        max_points: Bucket count bound per series.

    Returns:
        The same columns; unchanged when already small enough.
    """
    if df.height == 0:
        return df
    longest = df.group_by(by).len()["len"].max() if by else df.height
    if longest <= max_points:
        return df.sort([*by, "time"])
    span_ns = (df["time"].max() - df["time"].min()).total_seconds() * 1e9  # type: ignore[union-attr]
    # Buckets align to multiples of `every`, so a span covers up to span/every + 2 of them.
    every_ns = max(int(span_ns / max(max_points - 2, 1)) + 1, 1)
    return (
        df.sort([*by, "time"])
        .group_by_dynamic("time", every=f"{every_ns}ns", group_by=by)
        .agg([pl.col(v).mean() for v in values])
        .sort([*by, "time"])
    )


def _port_rates(ds: Dataset, host: str, device: str, port: int | None) -> pl.DataFrame:
    """The port's rates (counter as text, ``time`` = interval end); empty when it has none."""
    hit = ds.by_port.get((host, device, port))
    if hit is None:
        return next(iter(ds.by_port.values())).clear() if ds.by_port else pl.DataFrame()
    return hit


def _first_present(r: pl.DataFrame, counters: list[str]) -> pl.DataFrame:
    """Rows of the first counter of ``counters`` that has rates (the detectors' preference order)."""
    for c in counters:
        hit = r.filter((pl.col("counter") == c) & pl.col("rate_per_s").is_not_null())
        if hit.height:
            return hit
    return r.clear()


def line_rate(ds: Dataset, host: str, device: str, port: int | None) -> float | None:
    """The port's link rate in bytes/s from its latest gauge, else None."""
    g = ds.gauges.filter(
        (pl.col("host").cast(pl.String) == host)
        & (pl.col("device").cast(pl.String) == device)
        & (pl.col("counter").cast(pl.String) == "link_rate_bytes_per_s")
    )
    g = g.filter(pl.col("port").is_null() if port is None else pl.col("port") == port)
    return float(g["value"][-1]) if g.height else None


def throughput(ds: Dataset, host: str, device: str, port: int | None) -> pl.DataFrame:
    """time, direction (tx/rx), bytes_per_s, downsampled."""
    r = _port_rates(ds, host, device, port)
    parts = [
        _first_present(r, BYTES[d]).select(
            "time", pl.lit(d).alias("direction"), pl.col("rate_per_s").alias("bytes_per_s")
        )
        for d in ("tx", "rx")
    ]
    return downsample(pl.concat(parts), ["direction"], ["bytes_per_s"])


def pause_ratio(ds: Dataset, host: str, device: str, port: int | None) -> pl.DataFrame:
    """time, series (``rx p3`` ...), pause_ratio (share of time paused per priority and direction)."""
    r = _port_rates(ds, host, device, port).filter(pl.col("counter").is_in(list(PAUSE)))
    out = r.select(
        "time",
        (
            pl.col("counter").replace_strict(PAUSE, return_dtype=pl.String)
            + pl.when(pl.col("priority").is_null())
            .then(pl.lit(" global"))
            .otherwise(pl.lit(" p") + pl.col("priority").cast(pl.String))
        ).alias("series"),
        (pl.col("rate_per_s") / 1e6).alias("pause_ratio"),
    ).drop_nulls("pause_ratio")
    return downsample(out, ["series"], ["pause_ratio"])


def ecn(ds: Dataset, host: str, device: str, port: int | None) -> pl.DataFrame:
    """time, metric, value: ECN-marked share of received packets and CNP rates per second."""
    r = _port_rates(ds, host, device, port)
    loop = r.filter(pl.col("counter").is_in(list(ECN_LOOP)) & pl.col("rate_per_s").is_not_null())
    rx = _first_present(r, PACKETS["rx"]).select("time", pl.col("rate_per_s").alias("_rx"))
    marked = (
        loop.filter(pl.col("counter") == "np_ecn_marked_roce_packets")
        .join(rx, on="time", how="inner")
        .select(
            "time", pl.lit("ecn_marked_ratio").alias("metric"), (pl.col("rate_per_s") / pl.col("_rx")).alias("value")
        )
        .filter(pl.col("value").is_finite())
    )
    cnp = loop.filter(pl.col("counter").str.contains("cnp")).select(
        "time", (pl.col("counter") + "_per_s").alias("metric"), pl.col("rate_per_s").alias("value")
    )
    return downsample(pl.concat([marked, cnp]), ["metric"], ["value"])


def error_rates(ds: Dataset, host: str, device: str, port: int | None) -> pl.DataFrame:
    """time, counter, per_s for every error/discard counter of the port that ever moved."""
    vocab = pl.DataFrame(fabricscope.counters())
    names = vocab.filter(
        (pl.col("layer") == "network")
        & pl.col("name").str.contains(r"(errors|discards)$")
        & (pl.col("kind") == "counter")
    )["name"].to_list()
    r = _port_rates(ds, host, device, port).filter(pl.col("counter").is_in(names) & pl.col("rate_per_s").is_not_null())
    moving = r.group_by("counter").agg((pl.col("delta") > 0).any().alias("_m")).filter("_m")["counter"]
    out = r.filter(pl.col("counter").is_in(moving.implode())).select(
        "time", "counter", pl.col("rate_per_s").alias("per_s")
    )
    return downsample(out, ["counter"], ["per_s"])


def loss(ds: Dataset, host: str, device: str, port: int | None) -> pl.DataFrame:
    """time, direction, loss_ratio (estimated p) and gbn_efficiency (modelled go-back-N).

    p per interval is the largest loss counter over the packets of the same direction, as
    ``packet_loss`` estimates it; efficiency is ``1 / (1 + p W)`` with ``W`` the bandwidth-delay
    product in packets (``lossy_collapse``'s model and defaults; line rate from the port's gauge,
    else 400 Gb/s).
    """
    cfg = DEFAULTS["lossy_collapse"]
    r = _port_rates(ds, host, device, port)
    rate = line_rate(ds, host, device, port) or fabricscope.get_profile("roce400").line_rate_bytes_per_s
    w_packets = rate * cfg["rtt_us"] * 1e-6 / cfg["mtu_bytes"]
    parts = []
    for d in ("rx", "tx"):
        ev = (
            r.filter(pl.col("counter").is_in(LOSS_COUNTERS[d]) & pl.col("delta").is_not_null())
            .group_by("time")
            .agg(pl.col("delta").max().alias("_events"))
        )
        pk = _first_present(r, PACKETS[d])
        if pk.height:
            pk = pk.select("time", pl.col("delta").alias("_packets"))
        else:  # estimate packets from bytes at the MTU, as packet_loss does
            pk = _first_present(r, BYTES[d]).select("time", (pl.col("delta") / cfg["mtu_bytes"]).alias("_packets"))
        j = ev.join(pk, on="time", how="inner").filter(pl.col("_packets") > 0)
        parts.append(
            j.select(
                "time",
                pl.lit(d).alias("direction"),
                (pl.col("_events") / pl.col("_packets")).alias("loss_ratio"),
            ).with_columns((1.0 / (1.0 + pl.col("loss_ratio") * w_packets)).alias("gbn_efficiency"))
        )
    return downsample(pl.concat(parts), ["direction"], ["loss_ratio", "gbn_efficiency"])


def port_throughput_summary(ds: Dataset) -> pl.DataFrame:
    """Per port: peak and median throughput of its busier direction against line rate and profile.

    Columns: port_id, profile, direction, link_rate_bytes_per_s, peak_bytes_per_s, median_bytes_per_s,
    peak_of_line_ratio, achievable_low_ratio, verdict. Ports without a link rate are left out.
    """
    if "throughput_summary" not in ds.derived:
        ds.derived["throughput_summary"] = _throughput_summary(ds)
    return ds.derived["throughput_summary"]


def _throughput_summary(ds: Dataset) -> pl.DataFrame:
    direction = {c: d for d, cs in BYTES.items() for c in cs}
    rank = {c: i for cs in BYTES.values() for i, c in enumerate(cs)}
    keys = ["host", "device", "port", "direction"]
    r = (
        ds.rates.filter(pl.col("counter").cast(pl.String).is_in(list(direction)) & pl.col("rate_per_s").is_not_null())
        .with_columns(
            pl.col("host").cast(pl.String),
            pl.col("device").cast(pl.String),
            pl.col("counter").cast(pl.String).replace_strict(direction, return_dtype=pl.String).alias("direction"),
            pl.col("counter").cast(pl.String).replace_strict(rank, return_dtype=pl.Int8).alias("_rank"),
        )
        .filter(pl.col("_rank") == pl.col("_rank").min().over(keys))
    )
    per_dir = r.group_by(keys).agg(
        pl.col("rate_per_s").max().alias("peak_bytes_per_s"), pl.col("rate_per_s").median().alias("median_bytes_per_s")
    )
    busier = per_dir.sort("peak_bytes_per_s", descending=True).unique(["host", "device", "port"], keep="first")
    g = ds.gauges.with_columns(
        pl.col("host").cast(pl.String), pl.col("device").cast(pl.String), pl.col("counter").cast(pl.String)
    )
    facts = (
        g.filter(pl.col("counter").is_in(["link_rate_bytes_per_s", "link_width_lanes"])).pivot(
            on="counter", index=["host", "device", "port"], values="value", aggregate_function="last"
        )
        if g.height
        else pl.DataFrame(schema={"host": pl.String, "device": pl.String, "port": pl.UInt16})
    )
    if "link_rate_bytes_per_s" not in facts.columns:
        return pl.DataFrame()
    if "link_width_lanes" not in facts.columns:
        facts = facts.with_columns(pl.lit(None, pl.Float64).alias("link_width_lanes"))
    out = busier.join(facts, on=["host", "device", "port"], how="inner", nulls_equal=True).filter(
        pl.col("link_rate_bytes_per_s") > 0
    )
    a = ds.attributes
    if a.height and "key" in a.columns:
        ll = (
            a.filter(pl.col("key").cast(pl.String) == "link_layer")
            .select(pl.col("host").cast(pl.String), pl.col("device").cast(pl.String), "port", "value")
            .unique(["host", "device", "port"], keep="last")
            .rename({"value": "link_layer"})
        )
        out = out.join(ll, on=["host", "device", "port"], how="left", nulls_equal=True)
    else:
        out = out.with_columns(pl.lit(None, pl.String).alias("link_layer"))
    # One profile lookup per port (a handful of rows), not per sample.
    profs = [
        profile_for_port(
            row["link_layer"],
            row["link_rate_bytes_per_s"],
            int(row["link_width_lanes"]) if row["link_width_lanes"] else None,
        )
        for row in out.select("link_layer", "link_rate_bytes_per_s", "link_width_lanes").iter_rows(named=True)
    ]
    out = out.with_columns(
        pl.Series("profile", [p.name if p else None for p in profs], dtype=pl.String),
        pl.Series("achievable_low_ratio", [p.achievable_low_ratio if p else None for p in profs], dtype=pl.Float64),
        (pl.col("peak_bytes_per_s") / pl.col("link_rate_bytes_per_s")).alias("peak_of_line_ratio"),
    )
    return (
        out.with_columns(
            port_id(),
            pl.when(pl.col("achievable_low_ratio").is_null())
            .then(pl.lit("no profile"))
            .when(pl.col("peak_of_line_ratio") >= pl.col("achievable_low_ratio"))
            .then(pl.lit("reaches achievable"))
            .otherwise(pl.lit("below achievable (may be idle, not slow)"))
            .alias("verdict"),
        )
        .sort("peak_of_line_ratio")
        .select(
            "port_id",
            "profile",
            "direction",
            "link_rate_bytes_per_s",
            "peak_bytes_per_s",
            "median_bytes_per_s",
            "peak_of_line_ratio",
            "achievable_low_ratio",
            "verdict",
        )
    )


def port_findings(ds: Dataset, host: str, device: str, port: int | None) -> pl.DataFrame:
    """Findings of one port (and its host-level findings), for shading."""
    f = ds.findings.filter((pl.col("host") == host) & ((pl.col("device") == device) | pl.col("device").is_null()))
    return f.filter(pl.col("port").is_null() | (pl.col("port") == port)) if port is not None else f


def guid_hosts(ds: Dataset) -> pl.DataFrame:
    """node_guid -> host, device (from the sysfs ``node_guid_hex`` attribute)."""
    a = ds.attributes
    if a.is_empty() or "key" not in a.columns:
        return pl.DataFrame(schema={"node_guid": pl.String, "host": pl.String, "device": pl.String})
    return (
        a.filter(pl.col("key").cast(pl.String) == "node_guid_hex")
        .select(
            pl.col("value").str.to_lowercase().alias("node_guid"),
            pl.col("host").cast(pl.String),
            pl.col("device").cast(pl.String),
        )
        .unique("node_guid")
    )


def link_health(ds: Dataset) -> pl.DataFrame:
    """The links table with each cable's worst finding over both ends.

    A link end matches findings on its (GUID, port), where the finding's device is the GUID
    (switch counters from perfquery/UFM), or on the host/device that owns the GUID. Adds
    ``lower``/``upper`` (end names), ``health`` (ok/info/warning/critical), ``kinds``.
    """
    links = ds.tables.get("links")
    if links is None or links.is_empty():
        return pl.DataFrame()
    f = ds.findings.filter(pl.col("severity") != "info").with_columns(
        pl.col("severity").replace_strict(SEVERITY_RANK, return_dtype=pl.Int8).alias("_rank")
    )
    g = guid_hosts(ds)
    by_guid = f.filter(pl.col("device").str.starts_with("0x")).select(
        pl.col("device").str.to_lowercase().alias("node_guid"), "port", "_rank", "kind"
    )
    lk = links.with_row_index("_link").with_columns(pl.col("port").cast(pl.Int64), pl.col("peer_port").cast(pl.Int64))
    both = pl.concat(
        [
            lk.select("_link", pl.col("node_guid").str.to_lowercase().alias("node_guid"), "port"),
            lk.select(
                "_link",
                pl.col("peer_node_guid").str.to_lowercase().alias("node_guid"),
                pl.col("peer_port").alias("port"),
            ),
        ]
    )
    # HCA node descriptions are "<hostname> <device>" (ibnetdiscover/iblinkinfo print what the
    # driver sets: node_desc = hostname + device), which names the host when no sysfs GUID does.
    by_desc = pl.concat(
        [
            lk.select(
                pl.col(f"{p}node_guid").alias("node_guid"),
                pl.col(f"{p}node_name").alias("_n"),
                pl.col(f"{p}node_type").alias("_t"),
            )
            for p in ("", "peer_")
        ]
    ).filter((pl.col("_t") == "hca") & (pl.col("_n").str.count_matches(" ") == 1))
    by_desc = by_desc.select(
        pl.col("node_guid").str.to_lowercase(),
        pl.col("_n").str.split(" ").list.get(0).alias("host"),
        pl.col("_n").str.split(" ").list.get(1).alias("device"),
    )
    owners = pl.concat([g, by_desc]).unique(["host", "device", "node_guid"])
    by_host = f.join(owners, on=["host", "device"], how="inner").select("node_guid", "port", "_rank", "kind")
    ends = pl.concat([by_guid, by_host])
    hit = (
        both.join(ends, on=["node_guid", "port"], how="inner")
        .group_by("_link")
        .agg(pl.col("_rank").max(), pl.col("kind").unique().sort().str.join(", ").alias("kinds"))
    )

    def name(prefix: str) -> pl.Expr:
        n = pl.col(f"{prefix}node_name").fill_null(pl.col(f"{prefix}node_guid"))
        return pl.concat_str(
            [n.str.replace(r"^MF0;", "").str.replace(r":.*$", ""), pl.lit(":"), pl.col(f"{prefix}port").cast(pl.String)]
        )

    return (
        lk.join(hit, on="_link", how="left")
        .with_columns(
            name("").alias("lower"),
            name("peer_").alias("upper"),
            pl.col("node_name")
            .fill_null(pl.col("node_guid"))
            .str.replace(r"^MF0;", "")
            .str.replace(r":.*$", "")
            .alias("lower_node"),
            pl.col("peer_node_name")
            .fill_null(pl.col("peer_node_guid"))
            .str.replace(r"^MF0;", "")
            .str.replace(r":.*$", "")
            .alias("upper_node"),
            pl.col("_rank")
            .replace_strict(dict(enumerate(SEVERITIES)), default="ok", return_dtype=pl.String)
            .alias("health"),
            pl.col("kinds").fill_null(""),
        )
        .drop("_link", "_rank")
    )


def port_health(ds: Dataset) -> pl.DataFrame:
    """Every network port with its worst finding (for the matrix when topology is unknown).

    Columns: host, port_name (``device:port``), health, kinds, flapping, degraded.
    """
    p = ports(ds)
    f = ds.findings.filter(pl.col("severity") != "info")
    kinds = f.group_by("host", "device", "port").agg(pl.col("kind").unique().sort().str.join(", ").alias("kinds"))
    p = p.join(kinds, on=["host", "device", "port"], how="left", nulls_equal=True)
    return p.select(
        "host",
        pl.concat_str([pl.col("device"), pl.col("port").cast(pl.String)], separator=":", ignore_nulls=True).alias(
            "port_name"
        ),
        pl.col("worst").fill_null("ok").alias("health"),
        pl.col("kinds").fill_null(""),
        pl.col("kinds").fill_null("").str.contains("link_flap").alias("flapping"),
        pl.col("kinds").fill_null("").str.contains("link_degraded").alias("degraded"),
    )


def findings_document(ds: Dataset) -> dict[str, Any]:
    """The ``fabricscope.findings/1`` JSON document of the dataset (download button)."""
    return document(ds.findings, ds.inputs)
