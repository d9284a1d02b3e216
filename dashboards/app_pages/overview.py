"""Overview: is the fabric healthy, and if not, where and why."""

import json

import aggregates
import altair as alt
import components
import polars as pl
import streamlit as st
from fabricscope.incidents.severity import PAGING, SEVERITIES
from fabricscope.redaction import markdown_text

st.title("Fabric health")
ds = components.current()
if ds is None:
    st.stop()

counts = aggregates.severity_counts(ds)
status = ds.status
last = ds.last_data
# The label names a history or an upload itself; only a directory analysed now needs saying so.
st.markdown(
    f"**Status: :{'red' if status == 'critical' else 'orange' if status == 'warning' else 'green'}"
    f"[{status.upper()}]** — {markdown_text(ds.label)}"
    + {"analysis": " (analysed now)", "server": " (pulled now)"}.get(ds.mode, "")
)
c1, c2, c3 = st.columns(3)
c1.metric("Critical", counts["critical"])
c2.metric("Warning", counts["warning"])
c3.metric("Info", counts["info"], help="data quality (counter_anomaly) and per-host bottleneck verdicts")
# Its own row: a timestamp in a quarter of an 800 px window was cut to "2026-12-…".
st.metric("Last data (UTC)", str(last)[:19] if last is not None else "none")

# Incidents first: one root cause per fault, with the action that fixes it (docs/incidents.md).
incidents = aggregates.incidents(ds)
st.subheader(f"Incidents ({len(incidents)})")
if incidents:
    for inc in incidents:
        colour = "red" if inc.severity == "critical" else "orange"
        with st.container(border=True):
            # Titles and actions name hosts from the data: escaped, so none is read as Markdown or HTML.
            st.markdown(f"**:{colour}[{inc.severity.upper()}]** {markdown_text(inc.title)}")
            st.markdown(f"**Action:** {markdown_text(inc.action)}")
            st.caption(
                markdown_text(
                    f"root: {inc.root['kind']} on {inc.entity}; {str(inc.start)[:19]} .. {str(inc.end)[11:19]} UTC; "
                    f"rule {inc.rule}; {inc.topology}"
                )
            )
            with st.expander(f"{len(inc.consequences)} consequence(s) and the path from the root"):
                st.dataframe(
                    aggregates.incident_consequences(inc),
                    hide_index=True,
                    width="stretch",
                    column_config=components.FINDING_COLUMNS,
                )
else:
    st.caption("No incident: no finding explains another (the findings below stand alone).")

# Links wearing out: their error rate is forecast to cross its warning rate (link_wearout).
replace = aggregates.links_to_replace(ds)
if replace.height:
    st.subheader(f"Links to replace ({replace.height})")
    st.dataframe(replace, hide_index=True, width="stretch")
    curves = aggregates.wearout_curves(ds)
    if curves.height:
        line = (
            alt.Chart(curves)
            .mark_line()
            .encode(
                x=alt.X("time:T", title="time (UTC)"),
                y=alt.Y("rate_per_h:Q", title="fitted errors per hour", scale=alt.Scale(type="log")),
                color=alt.Color("link:N", title="link"),
            )
        )
        limit = (
            alt.Chart(curves.select(pl.col("threshold_per_h").max()))
            .mark_rule(strokeDash=[4, 4])
            .encode(y="threshold_per_h:Q")
        )
        st.altair_chart(line + limit, width="stretch")
    st.caption("Replace them in a maintenance window, soonest first: the dashed line is the warning rate.")

worst = aggregates.worst_ports(ds)
st.subheader("Worst ports")
if worst.height:
    st.dataframe(
        worst.drop("host", "device", "port").rename({"port_id": "port"}, strict=False),
        hide_index=True,
        width="stretch",
    )
    st.caption("Open one on the Port page to see its counters with the finding windows shaded.")
else:
    st.success("No warning or critical finding on any port.")

st.subheader("Findings by severity and kind")
by_kind = aggregates.findings_by_kind(ds)
if by_kind.height:
    chart = (
        alt.Chart(by_kind)
        .mark_bar()
        .encode(
            x=alt.X("findings:Q", title="findings", axis=alt.Axis(tickMinStep=1, format="d")),
            y=alt.Y("kind:N", sort="-x", title=None),
            color=alt.Color(
                "severity:N",
                scale=alt.Scale(
                    domain=list(reversed(SEVERITIES)),
                    range=[aggregates.SEVERITY_COLOURS[s] for s in reversed(SEVERITIES)],
                ),
            ),
            tooltip=["kind", "severity", "findings"],
        )
    )
    st.altair_chart(chart, width="stretch")

st.subheader("Findings")
if ds.findings.height:
    severities = st.multiselect(
        "Severity", list(reversed(SEVERITIES)), default=list(reversed(PAGING)), key="overview_severity"
    )
    shown = ds.findings.filter(pl.col("severity").is_in(severities))
    # The message first after what and where: it is what a person reads; the grid cuts long cells.
    st.dataframe(
        shown.select("severity", "kind", "message", "host", "device", "port", "priority", "start", "end"),
        hide_index=True,
        width="stretch",
        column_config=components.FINDING_COLUMNS,
    )
    with st.expander("Evidence of a finding"):
        if shown.height:
            i = st.number_input("Row", 0, shown.height - 1, 0, key="overview_evidence_row")
            row = shown.row(int(i), named=True)
            where = markdown_text(f"{row['host']} {row['device'] or ''} {row['port'] or ''}: {row['message']}")
            st.write(f"**{markdown_text(row['kind'])}** on {where}")
            st.json(json.loads(row["evidence"] or "{}"))
    st.download_button(
        "Findings JSON (fabricscope.findings/2)",
        json.dumps(aggregates.findings_document(ds), indent=2),
        file_name="findings.json",
        mime="application/json",
    )
else:
    st.success("No findings.")

if ds.lifecycle is not None and ds.lifecycle.height:
    st.subheader("Fault lifecycle (cron history)")
    active = (
        ds.lifecycle.filter(pl.col("resolved_at").is_null()) if "resolved_at" in ds.lifecycle.columns else ds.lifecycle
    )
    st.caption(f"{active.height} active fault(s), {ds.lifecycle.height - active.height} resolved")
    st.dataframe(ds.lifecycle, hide_index=True, width="stretch")
if ds.runs is not None and ds.runs.height:
    st.subheader("Cron runs")
    st.dataframe(ds.runs, hide_index=True, width="stretch")

with st.expander(f"Inputs ({len(ds.inputs)})"):
    st.dataframe(pl.DataFrame(ds.inputs) if ds.inputs else pl.DataFrame(), hide_index=True, width="stretch")
