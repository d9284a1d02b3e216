"""Layers: NVLink, PCIe, network and CXL utilisation per host, and the bottleneck verdicts."""

import aggregates
import altair as alt
import components
import polars as pl
import streamlit as st

st.title("Layers")
ds = components.current()
if ds is None:
    st.stop()

verdicts = ds.findings.filter(pl.col("kind") == "bottleneck")
st.subheader("Bottleneck verdicts")
if verdicts.height:
    st.dataframe(
        verdicts.select("severity", "host", "message", "layer", "observed", "start", "end"),
        hide_index=True,
        width="stretch",
        column_config=components.FINDING_COLUMNS,
    )
else:
    st.info("No bottleneck verdict for this source (no layer utilisation could be measured).")

lay = ds.views["layers"]
st.subheader("Utilisation per layer")
if not lay.height:
    st.info(
        "No layer utilisation: the source has no NVLink/PCIe (DCGM, nvidia-smi), network byte or CXL PMU "
        "counters with a known capacity."
    )
    st.stop()

summary = (
    lay.group_by("host", "layer")
    .agg(
        pl.col("utilisation_ratio").mean().alias("mean_utilisation_ratio"),
        pl.col("utilisation_ratio").max().alias("peak_utilisation_ratio"),
        pl.col("throughput_bytes_per_s").mean().alias("mean_throughput_bytes_per_s"),
        pl.col("capacity_bytes_per_s").first().alias("capacity_bytes_per_s"),
    )
    .sort("host", "mean_utilisation_ratio", descending=[False, True])
)
busiest = (
    summary.group_by("host", maintain_order=True)
    .first()
    .select("host", pl.col("layer").alias("busiest_layer"), "mean_utilisation_ratio")
)
st.dataframe(busiest, hide_index=True, width="stretch")

hosts = sorted(lay["host"].unique().to_list())
chosen = st.multiselect("Hosts", hosts, default=hosts[: min(len(hosts), 8)], key="layers_hosts")
shown = lay.filter(pl.col("host").is_in(chosen)).rename({"window_start": "time"})
shown = aggregates.downsample(shown, ["host", "layer"], ["utilisation_ratio", "throughput_bytes_per_s"])
chart = (
    alt.Chart(shown)
    .mark_line(point=shown.height < 300)
    .encode(
        x=alt.X("time:T", title="window start (UTC)"),
        y=alt.Y("utilisation_ratio:Q", title="utilisation", axis=alt.Axis(format=".0%")),
        color=alt.Color("layer:N"),
        strokeDash=alt.StrokeDash("host:N"),
        tooltip=["host", "layer", "time:T", alt.Tooltip("utilisation_ratio:Q", format=".1%")],
    )
    .properties(height=300)
)
st.altair_chart(chart, width="stretch")
st.dataframe(summary, hide_index=True, width="stretch")
