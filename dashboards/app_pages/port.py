"""Port: one port's counters over time against its line rate, with finding windows shaded."""

import aggregates
import altair as alt
import components
import polars as pl
import streamlit as st
from fabricscope.redaction import markdown_text

st.title("Port")
ds = components.current()
if ds is None:
    st.stop()

ports = aggregates.ports(ds)
if not ports.height:
    st.info("No network port with rated counters in this source.")
    st.stop()

ids = ports["port_id"].to_list()
wanted = st.session_state.get("port") or st.query_params.get("port")
choice = st.selectbox(
    "Port (worst first)",
    ids,
    index=ids.index(wanted) if wanted in ids else 0,
    help="host/device:port; ports with the most severe findings come first",
)
st.session_state["port"] = choice
row = ports.row(ids.index(choice), named=True)
host, device, port = row["host"], row["device"], row["port"]

findings = aggregates.port_findings(ds, host, device, port)
windows = findings.filter(pl.col("start").is_not_null() & (pl.col("severity") != "info")).select(
    "start", "end", "kind", "severity"
)
if findings.height:
    # Port names and messages come from the data: escaped, so none is read as Markdown or HTML.
    st.markdown(f"**{findings.height} finding(s)** on {markdown_text(choice)}:")
    for f in findings.iter_rows(named=True):
        st.markdown(
            f"- :{'red' if f['severity'] == 'critical' else 'orange' if f['severity'] == 'warning' else 'gray'}"
            f"[{f['severity']}] **{markdown_text(f['kind'])}** — {markdown_text(f['message'])}"
        )
else:
    st.success(f"No findings on {markdown_text(choice)}.")


def shaded(chart: alt.Chart, y_title: str) -> alt.LayerChart | alt.Chart:
    """The chart with every finding window of the port drawn behind it."""
    if not windows.height:
        return chart.properties(height=220)
    band = (
        alt.Chart(windows)
        .mark_rect(opacity=0.15)
        .encode(
            x="start:T",
            x2="end:T",
            color=alt.Color(
                "severity:N",
                scale=alt.Scale(
                    domain=["critical", "warning"],
                    range=[aggregates.SEVERITY_COLOURS["critical"], aggregates.SEVERITY_COLOURS["warning"]],
                ),
                legend=alt.Legend(title="finding window"),
            ),
            tooltip=["kind", "severity", "start:T", "end:T"],
        )
    )
    return alt.layer(band, chart).resolve_scale(color="independent").properties(height=220)


def line(df: pl.DataFrame, y: str, series: str, title: str, fmt: str = "~s") -> alt.Chart:
    return (
        alt.Chart(df)
        .mark_line(point=df.height < 200)
        .encode(
            x=alt.X("time:T", title="time (UTC)"),
            y=alt.Y(f"{y}:Q", title=title, axis=alt.Axis(format=fmt)),
            color=alt.Color(f"{series}:N", title=None),
            tooltip=["time:T", f"{series}:N", alt.Tooltip(f"{y}:Q", format=".4~g")],
        )
    )


st.subheader("Throughput against line rate")
tp = aggregates.throughput(ds, host, device, port)
rate = aggregates.line_rate(ds, host, device, port)
if tp.height:
    chart = line(tp, "bytes_per_s", "direction", "bytes/s")
    if rate:
        rule = (
            alt.Chart(pl.DataFrame({"line_rate_bytes_per_s": [rate]}))
            .mark_rule(strokeDash=[6, 4])
            .encode(y="line_rate_bytes_per_s:Q")
        )
        chart = alt.layer(chart, rule)
        st.caption(
            f"Line rate {rate / 1e9:.4g} GB/s per direction (dashed); peak {tp['bytes_per_s'].max() / rate:.0%} of it."
        )
    else:
        st.caption("Line rate unknown (no link rate gauge for this port).")
    st.altair_chart(shaded(chart, "bytes/s"), width="stretch")
else:
    st.caption("No byte counters for this port.")

st.subheader("Pause ratio per priority")
pr = aggregates.pause_ratio(ds, host, device, port)
if pr.height:
    st.altair_chart(shaded(line(pr, "pause_ratio", "series", "share of time paused", ".0%"), ""), width="stretch")
else:
    st.caption("No PFC pause-duration counters for this port.")

st.subheader("ECN share and CNP rate")
ec = aggregates.ecn(ds, host, device, port)
if ec.height:
    share = ec.filter(pl.col("metric") == "ecn_marked_ratio")
    cnp = ec.filter(pl.col("metric") != "ecn_marked_ratio")
    cols = st.columns(2)
    if share.height:
        cols[0].altair_chart(
            shaded(line(share, "value", "metric", "ECN-marked share of rx packets", ".1%"), ""), width="stretch"
        )
    if cnp.height:
        cols[1].altair_chart(shaded(line(cnp, "value", "metric", "CNP/s"), ""), width="stretch")
else:
    st.caption("No ECN/CNP counters for this port.")

st.subheader("Error rates")
er = aggregates.error_rates(ds, host, device, port)
if er.height:
    st.altair_chart(shaded(line(er, "per_s", "counter", "events/s"), ""), width="stretch")
else:
    st.caption("No error or discard counter moved on this port.")

st.subheader("Estimated loss and modelled go-back-N efficiency")
ls = aggregates.loss(ds, host, device, port)
if ls.height:
    cols = st.columns(2)
    cols[0].altair_chart(shaded(line(ls, "loss_ratio", "direction", "loss p", ".2~%"), ""), width="stretch")
    cols[1].altair_chart(
        shaded(line(ls, "gbn_efficiency", "direction", "go-back-N efficiency", ".0%"), ""), width="stretch"
    )
    st.caption(
        f"p = largest loss counter / packets per interval; efficiency 1/(1 + p·W), "
        f"W = line rate × RTT / MTU = {ls['bdp_packets'].max():,.0f} packets with the analysis' "
        "[lossy_collapse] thresholds (the lossy_collapse model, docs/detectors.md)."
    )
else:
    st.caption("No RDMA loss counters (InfiniBand or RoCE transport) for this port.")
