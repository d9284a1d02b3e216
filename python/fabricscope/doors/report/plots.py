"""The report's evidence plots: which ports, and five panels per port drawn by matplotlib (SVG or PNG).

matplotlib is the ``report`` extra: it is imported only when a port is drawn, and a report without
it says so in place of its plots (:data:`NO_MATPLOTLIB`).
"""

from __future__ import annotations

import base64
import io
from collections.abc import Sequence
from typing import Literal

import polars as pl

from fabricscope.doors.report.gather import ReportData
from fabricscope.incidents.severity import Severity
from fabricscope.reading.vocabulary import counters_by_direction, counters_with_role
from fabricscope.redaction import printable

__all__ = ["NO_MATPLOTLIB"]


# Which counters feed each panel, by role (the core's vocabulary), most preferred first. The first
# present counter is used, so one port never shows the same traffic twice from two sources; the
# kernel stack's counters (no RDMA) only for a port without any other.
_TX_BYTES = (*counters_with_role("tx_bytes"), *counters_with_role("tx_stack_bytes"))
_RX_BYTES = (*counters_with_role("rx_bytes"), *counters_with_role("rx_stack_bytes"))
_RX_PACKETS = (*counters_with_role("rx_packets"), *counters_with_role("rx_stack_packets"))
_ECN = (*counters_with_role("rx_priority_ecn_marked"), *counters_with_role("rx_ecn_marked"))
_CNP = (*counters_with_role("tx_cnp"), *counters_with_role("rx_cnp_handled"), *counters_with_role("rx_cnp_ignored"))
_PAUSE = tuple(counters_by_direction("pause_duration"))
_ERRORS = counters_with_role("link_errors")
# Loss on the traffic this port receives, over the same direction's packets (as packet_loss).
_LOSS = counters_with_role("rx_loss")
_SEV_COLOUR = {"critical": "#d62728", "warning": "#ff7f0e", "info": "#7f7f7f"}


#: What a report without matplotlib says where its plots would be.
NO_MATPLOTLIB = "Plots omitted: matplotlib is not installed (pip install 'fabricscope[report]' adds them)."


def _series(rates: pl.DataFrame, names: Sequence[str]) -> pl.DataFrame:
    """Per time: the summed rate of the first counter of ``names`` present in ``rates``."""
    present = set(rates["counter"].cast(pl.String).unique().to_list()) if rates.height else set()
    for n in names:
        if n in present:
            return (
                rates.filter(pl.col("counter").cast(pl.String) == n)
                .group_by("end")
                .agg(pl.col("rate_per_s").sum())
                .sort("end")
            )
    return pl.DataFrame(schema={"end": pl.Datetime("ns", "UTC"), "rate_per_s": pl.Float64})


def _port_frames(
    data: ReportData, max_ports: int
) -> list[tuple[tuple[str, str, int | None], pl.DataFrame, pl.DataFrame]]:
    """The ports to plot (those with findings first), each with its rates and findings."""
    r = data.rates.with_columns(
        pl.col("host").cast(pl.String), pl.col("device").cast(pl.String), pl.col("port").cast(pl.Int64)
    )
    ports = r.select("host", "device", "port").unique()
    f = data.findings
    flagged = (
        f.filter(pl.col("severity") != "info").select("host", "device", "port").unique()
        if f.height
        else f.select("host", "device", "port")
    )
    # A finding naming a device but no port flags every port of the device.
    hit = ports.join(flagged, on=["host", "device"], how="inner", suffix="_f").filter(
        pl.col("port_f").is_null() | pl.col("port").eq_missing(pl.col("port_f"))
    )
    ordered = pl.concat(
        [hit.select("host", "device", "port").unique(maintain_order=True), ports], how="vertical"
    ).unique(maintain_order=True)
    # Ports with the worst findings first (the order of the findings section), then the rest by name.
    rank = (
        hit.join(
            f.select(
                "host",
                "device",
                pl.col("port").alias("port_f"),
                (-Severity.rank_expr()).alias("rank"),
            ),
            on=["host", "device"],
        )
        .filter(pl.col("port_f").is_null() | pl.col("port").eq_missing(pl.col("port_f")))
        .group_by("host", "device", "port")
        .agg(pl.col("rank").min())
    )
    ordered = (
        ordered.join(rank, on=["host", "device", "port"], how="left", nulls_equal=True)
        .sort(pl.col("rank").fill_null(3), "host", "device", "port", nulls_last=True)
        .drop("rank")
        .head(max_ports)
    )
    out = []
    for host, device, port in ordered.iter_rows():
        pr = r.filter((pl.col("host") == host) & (pl.col("device") == device) & pl.col("port").eq_missing(port))
        pf = f.filter(
            pl.col("host").eq_missing(host)
            & (pl.col("device").is_null() | (pl.col("device") == device))
            & (pl.col("port").is_null() | pl.col("port").eq_missing(port))
        )
        out.append(((host, device, port), pr, pf))
    return out


def _plot_port(
    key: tuple[str, str, int | None],
    pr: pl.DataFrame,
    pf: pl.DataFrame,
    gauges: pl.DataFrame,
    image_format: Literal["svg", "png"] = "svg",
) -> str | bytes:
    """Five panels for one port, fault windows shaded: SVG text or PNG bytes.

    One format per plot: drawing each figure in both took a third more time, for an image the
    report does not show.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    host, device, port = key
    fig, axes = plt.subplots(5, 1, figsize=(10, 11), sharex=True)
    # 1. throughput vs line rate
    ax = axes[0]
    for label, names in (("tx", _TX_BYTES), ("rx", _RX_BYTES)):
        s = _series(pr, names)
        if s.height:
            ax.plot(s["end"].to_list(), (s["rate_per_s"] * 8 / 1e9).to_list(), label=f"{label} Gb/s")
    g = gauges.filter(
        (pl.col("host") == host) & (pl.col("device") == device) & pl.col("port").cast(pl.Int64).eq_missing(port)
    )
    if g.height and g["link_rate_bytes_per_s"][0] is not None:
        ax.axhline(g["link_rate_bytes_per_s"][0] * 8 / 1e9, color="k", linestyle="--", label="line rate")
    ax.set_ylabel("throughput Gb/s")
    # 2. pause ratio per priority
    ax = axes[1]
    pause = pr.filter(pl.col("counter").cast(pl.String).is_in(_PAUSE))
    for (counter, prio), grp in pause.group_by("counter", "priority", maintain_order=True):
        grp = grp.sort("end")
        ax.plot(
            grp["end"].to_list(),
            (grp["rate_per_s"] / 1e6).to_list(),
            label=f"{str(counter)[:2]} p{prio if prio is not None else '-'}",
        )
    ax.set_ylabel("pause ratio")
    # 3. ECN share and CNP rate
    ax = axes[2]
    ecn, pk = _series(pr, _ECN), _series(pr, _RX_PACKETS)
    if ecn.height and pk.height:
        share = ecn.join(pk, on="end", suffix="_pk").with_columns(
            (pl.col("rate_per_s") / pl.col("rate_per_s_pk")).alias("share")
        )
        ax.plot(share["end"].to_list(), share["share"].to_list(), label="ECN-marked share")
    ax.set_ylabel("ECN share")
    cnp = _series(pr, _CNP)
    if cnp.height:
        ax2 = ax.twinx()
        ax2.plot(cnp["end"].to_list(), cnp["rate_per_s"].to_list(), color="tab:purple", label="CNP /s")
        ax2.set_ylabel("CNP /s")
    # 4. error rates
    ax = axes[3]
    for name in _ERRORS:
        s = _series(pr, [name])
        if s.height and (s["rate_per_s"].fill_null(0) > 0).any():
            ax.plot(s["end"].to_list(), s["rate_per_s"].to_list(), label=name)
    ax.set_ylabel("errors /s")
    # 5. estimated loss
    ax = axes[4]
    # One lost packet shows in several loss counters: the largest per interval, never a double count.
    loss = pr.filter(pl.col("counter").cast(pl.String).is_in(_LOSS)).group_by("end").agg(pl.col("rate_per_s").max())
    if loss.height and pk.height:
        p = loss.join(pk, on="end", suffix="_pk").sort("end")
        ax.plot(p["end"].to_list(), (p["rate_per_s"] / p["rate_per_s_pk"]).to_list(), label="loss p")
    ax.set_ylabel("est. loss ratio")
    for r in pf.iter_rows(named=True):
        # Info findings (data quality, bottleneck verdicts) often span the whole run: shading them
        # would hide the fault windows.
        if r["start"] is None or r["end"] is None or r["severity"] == "info":
            continue
        for a in axes:
            a.axvspan(r["start"], r["end"], color=_SEV_COLOUR[r["severity"]], alpha=0.15)
    for a in axes:
        if a.get_legend_handles_labels()[0]:
            a.legend(loc="upper left", fontsize=7)
        a.grid(alpha=0.3)
    # The title is also written into the SVG (as a comment beside its glyphs).
    fig.suptitle(printable(f"{host} {device}" + (f" port {port}" if port is not None else "")))
    fig.tight_layout()
    if image_format == "png":
        png = io.BytesIO()
        fig.savefig(png, format="png", dpi=70)
        plt.close(fig)
        return png.getvalue()
    svg = io.StringIO()
    fig.savefig(svg, format="svg")
    plt.close(fig)
    text = svg.getvalue()
    return text[text.find("<svg") :]


def _data_uri(image: str | bytes) -> str:
    """A plot as a data URI: PNG bytes or SVG text."""
    if isinstance(image, bytes):
        return f"data:image/png;base64,{base64.b64encode(image).decode()}"
    return f"data:image/svg+xml;base64,{base64.b64encode(image.encode()).decode()}"
