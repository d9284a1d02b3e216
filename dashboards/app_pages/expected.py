"""Expected vs achieved: perftest and nccl-tests results, and port throughput, against the profiles."""

import aggregates
import altair as alt
import components
import fabricscope
import polars as pl
import streamlit as st
from fabricscope.detect.underperformance import expected_busbw
from fabricscope.fabric.profiles import get_profile
from fabricscope.redaction import markdown_text

st.title("Expected vs achieved")
ds = components.current()
if ds is None:
    st.stop()

profiles = fabricscope.profiles()
names = profiles["name"].to_list()

under = ds.findings.filter(pl.col("kind") == "underperformance")
st.subheader("Underperformance findings")
if under.height:
    st.dataframe(
        under.select("severity", "host", "device", "metric", "observed", "expected", "message"),
        hide_index=True,
        width="stretch",
    )
else:
    st.caption("No underperformance finding.")


def profile_pick(label: str, default: str, key: str, family: tuple[str, ...] = ("infiniband", "roce", "uec")) -> dict:
    """A profile chosen in a select box (network technologies only), as a row dict."""
    choices = profiles.filter(pl.col("family").is_in(list(family)))["name"].to_list()
    name = st.selectbox(label, choices, index=choices.index(default) if default in choices else 0, key=key)
    return profiles.row(names.index(name), named=True)


perf = ds.tables.get("perftest_results")
st.subheader("perftest")
if perf is not None and perf.height:
    bw = perf.filter(pl.col("kind") == "bw")
    link = (bw["link_type"].drop_nulls().first() if "link_type" in bw.columns else None) or "IB"
    prof = profile_pick("Profile for perftest", "roce400" if link == "Ethernet" else "ndr400", "perf_profile")
    line_gbit = prof["line_rate_bytes_per_s"] * 8 / 1e9
    table = bw.select(
        "host",
        "test",
        "size_bytes",
        "bw_average_gbit_per_s",
        (pl.col("bw_average_gbit_per_s") / line_gbit).alias("of_line_rate_ratio"),
    ).with_columns(
        pl.when(pl.col("of_line_rate_ratio") < prof["achievable_low_ratio"])
        .then(pl.lit("below achievable"))
        .otherwise(pl.lit("ok"))
        .alias("verdict")
    )
    chart = (
        alt.Chart(table)
        .mark_line(point=True)
        .encode(
            x=alt.X("size_bytes:Q", scale=alt.Scale(type="log", base=2), title="message size (bytes)"),
            y=alt.Y("bw_average_gbit_per_s:Q", title="average Gb/s"),
            color="test:N",
            tooltip=["host", "test", "size_bytes", "bw_average_gbit_per_s"],
        )
    )
    rules = (
        alt.Chart(
            pl.DataFrame(
                {
                    "what": ["line rate", "achievable low"],
                    "gbit_per_s": [line_gbit, line_gbit * prof["achievable_low_ratio"]],
                }
            )
        )
        .mark_rule(strokeDash=[6, 4])
        .encode(y="gbit_per_s:Q", tooltip=["what", "gbit_per_s"])
    )
    st.altair_chart(alt.layer(chart, rules).properties(height=260), width="stretch")
    st.dataframe(table, hide_index=True, width="stretch")
    st.caption(markdown_text(f"{prof['name']}: {prof['source']}"))
else:
    st.caption("No perftest (ib_write_bw ...) results in this source.")

nccl = ds.tables.get("nccl_results")
st.subheader("nccl-tests")
if nccl is not None and nccl.height:
    net = profile_pick(
        "NIC profile for multi-node runs", "ndr400", "nccl_profile", family=("infiniband", "roce", "uec")
    )
    ranks = ds.tables.get("nccl_ranks")
    gpu_names = (
        ranks.group_by("run").agg(pl.col("gpu_name").drop_nulls().first())
        if ranks is not None and ranks.height
        else pl.DataFrame(schema={"run": pl.UInt32, "gpu_name": pl.String})
    )
    runs = (
        nccl.group_by("host", "run", "collective")
        .agg(
            pl.col("busbw_gb_per_s").max().alias("peak_busbw_gb_per_s"),
            pl.col("size_bytes").max(),
            pl.col("n_nodes").max(),
            pl.col("gpus_per_node").max(),
        )
        .join(gpu_names, on="run", how="left")
        .sort("host", "run", "collective")
    )
    # One expectation per run (a handful of rows), from the same rule the underperformance detector uses.
    expected = [
        expected_busbw(
            r["gpu_name"], int(r["n_nodes"] or 1), int(r["gpus_per_node"] or 1), network=get_profile(net["name"])
        )
        for r in runs.iter_rows(named=True)
    ]
    runs = runs.with_columns(
        pl.Series("expected_busbw_gb_per_s", [e[0] / 1e9 for e in expected], dtype=pl.Float64),
        pl.Series("limited_by", [e[1] for e in expected], dtype=pl.String),
        pl.Series("basis", [e[2] for e in expected], dtype=pl.String),
    ).with_columns((pl.col("peak_busbw_gb_per_s") / pl.col("expected_busbw_gb_per_s")).alias("of_expected_ratio"))
    chart = (
        alt.Chart(nccl)
        .mark_line(point=True)
        .encode(
            x=alt.X("size_bytes:Q", scale=alt.Scale(type="log", base=2), title="size (bytes)"),
            y=alt.Y("busbw_gb_per_s:Q", title="bus bandwidth GB/s"),
            color="collective:N",
            detail="run:N",
            tooltip=["host", "run", "collective", "size_bytes", "busbw_gb_per_s"],
        )
    )
    rule = (
        alt.Chart(runs.select("run", "collective", "expected_busbw_gb_per_s"))
        .mark_rule(strokeDash=[6, 4])
        .encode(y="expected_busbw_gb_per_s:Q", tooltip=["run", "collective", "expected_busbw_gb_per_s"])
    )
    st.altair_chart(alt.layer(chart, rule).properties(height=260), width="stretch")
    st.dataframe(runs, hide_index=True, width="stretch")
    st.caption("Dashed: the bus bandwidth the run's topology should reach (the underperformance detector's rule).")
else:
    st.caption("No nccl-tests results in this source.")

st.subheader("Port throughput against line rate")
tp = aggregates.port_throughput_summary(ds)
if tp.height:
    st.dataframe(tp, hide_index=True, width="stretch")
    st.caption(
        "Peak and median of each port's busier direction over its link rate gauge; "
        "achievable ratios from the port's detected profile (fabricscope.fabric.profiles)."
    )
else:
    st.caption("No port with both byte counters and a link rate.")
