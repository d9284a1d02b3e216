"""What-if: the advisor (all-reduce time per fabric, InfiniBand vs RoCEv2 break-even), interactive."""

import dataclasses
import importlib

import altair as alt
import components
import polars as pl
import streamlit as st
from fabricscope.redaction import markdown_text

st.title("What-if")
ds = components.current()

# The module, not the function `fabricscope.fabric.advise` the package exports under the same name.
advise = importlib.import_module("fabricscope.fabric.advise")

defaults = advise.load_inputs()
st.caption(
    "Change any input; every default comes with its source below. Measured bandwidths from the "
    "selected source override the profiled ones when 'use measured' is on."
)
overrides = {}
fields = [
    f for f in dataclasses.fields(defaults) if not f.name.startswith("_") and f.name not in ("sources", "overridden")
]
cols = st.columns(3)
for i, f in enumerate(fields):
    value = getattr(defaults, f.name)
    col = cols[i % 3]
    label = f.name.replace("_", " ")
    if isinstance(value, bool):
        overrides[f.name] = col.checkbox(label, value=value, key=f"whatif_{f.name}")
    elif isinstance(value, int):
        overrides[f.name] = int(col.number_input(label, value=value, step=1, key=f"whatif_{f.name}"))
    elif isinstance(value, float):
        overrides[f.name] = float(col.number_input(label, value=value, format="%g", key=f"whatif_{f.name}"))
    elif isinstance(value, (list, tuple)) and value and all(isinstance(v, (int, float)) for v in value):
        text = col.text_input(label, ", ".join(f"{v:g}" for v in value), key=f"whatif_{f.name}")
        try:
            parsed = [type(value[0])(float(x)) for x in text.split(",") if x.strip()]
        except ValueError:
            col.error(f"{label}: comma-separated numbers expected")
            parsed = list(value)
        overrides[f.name] = type(value)(parsed) if parsed else value
use_measured = st.toggle(
    "Use measured bandwidths from the selected source", value=ds is not None, key="whatif_measured"
)

changed = {k: v for k, v in overrides.items() if v != getattr(defaults, k)}
try:
    inputs = advise.load_inputs(**changed)
    result = advise.advise(inputs, analysis=ds.analysis if (use_measured and ds is not None) else None)
except (ValueError, TypeError) as e:
    st.error(f"Cannot advise with these inputs: {markdown_text(str(e))}")
    st.stop()

measured = {k: v for k, v in result.inputs.overridden.items() if k not in changed}
if measured:
    st.info(
        "Measured in the selected source: "
        + "; ".join(f"{k.replace('_', ' ')} = {getattr(result.inputs, k)} ({v})" for k, v in measured.items())
    )

st.subheader("All-reduce time")
ar = result.allreduce
needed = {"gradient_gb", "gpus", "bandwidth_gbps", "flat_ring_ms", "hierarchical_ms"}
if needed <= set(ar.columns) and ar.height:
    bws = sorted(ar["bandwidth_gbps"].unique().to_list())
    bw = (
        st.select_slider("Network bandwidth per GPU (Gb/s)", bws, value=bws[-1], key="whatif_bw")
        if len(bws) > 1
        else bws[0]
    )
    long = ar.filter(pl.col("bandwidth_gbps") == bw).unpivot(
        index=["gradient_gb", "gpus"],
        on=["flat_ring_ms", "hierarchical_ms"],
        variable_name="algorithm",
        value_name="ms",
    )
    chart = (
        alt.Chart(long)
        .mark_line(point=True)
        .encode(
            x=alt.X("gradient_gb:Q", title="gradient per step (GB)"),
            y=alt.Y("ms:Q", title="all-reduce time (ms)"),
            color=alt.Color("gpus:N", title="GPUs"),
            strokeDash=alt.StrokeDash("algorithm:N"),
            tooltip=["gpus", "gradient_gb", "algorithm", alt.Tooltip("ms:Q", format=".3~f")],
        )
        .properties(height=300)
    )
    st.altair_chart(chart, width="stretch")
st.dataframe(ar, hide_index=True, width="stretch")

st.subheader("InfiniBand vs RoCEv2 break-even")
be = result.breakeven
if {"utilisation_ratio", "penalty_ratio", "payback_years"} <= set(be.columns) and be.height:
    chart = (
        alt.Chart(be)
        .mark_line(point=True)
        .encode(
            x=alt.X("utilisation_ratio:Q", title="cluster utilisation", axis=alt.Axis(format=".0%")),
            y=alt.Y("payback_years:Q", title="years for InfiniBand's extra cost to pay back"),
            color=alt.Color("penalty_ratio:N", title="RoCEv2 penalty"),
            tooltip=list(be.columns),
        )
    )
    life = (
        alt.Chart(pl.DataFrame({"lifetime_years": [float(result.inputs.lifetime_years)]}))
        .mark_rule(strokeDash=[6, 4])
        .encode(y="lifetime_years:Q")
    )
    st.altair_chart(alt.layer(chart, life).properties(height=300), width="stretch")
    st.caption("Below the dashed lifetime line InfiniBand pays for itself; above it RoCEv2 is the cheaper fabric.")
st.dataframe(be, hide_index=True, width="stretch")

with st.expander("Sources of every number"):
    st.dataframe(
        pl.DataFrame({"input": list(result.sources), "source": [str(v) for v in result.sources.values()]}),
        hide_index=True,
        width="stretch",
    )
