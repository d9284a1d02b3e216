"""Topology: which cables are healthy, where the fabric's topology is known; else a port matrix."""

import aggregates
import altair as alt
import components
import polars as pl
import streamlit as st
from fabricscope.fabric.entities import conflicts_frame
from fabricscope.redaction import markdown_text

st.title("Topology")
ds = components.current()
if ds is None:
    st.stop()

HEALTH = ["ok", "info", "warning", "critical"]
SCALE = alt.Scale(domain=HEALTH, range=[aggregates.SEVERITY_COLOURS[h] for h in HEALTH])
MAX_DRAWN_ROWS = 100
"""Most rows a matrix draws. A fabric of thousands of hosts would be a chart tens of thousands of
pixels tall that no browser draws quickly: beyond this, the rows with something to see, worst first."""


def drawn_rows(cells: pl.DataFrame, row: str, what: str) -> pl.DataFrame:
    """The cells of the rows to draw: every row when few, else the worst rows (a caption says so)."""
    total = cells[row].n_unique()
    if total <= MAX_DRAWN_ROWS:
        return cells
    rank = pl.col("health").replace_strict({h: i for i, h in enumerate(HEALTH)}, return_dtype=pl.Int8)
    worst = (
        cells.group_by(row)
        .agg(rank.max().alias("_rank"), pl.col("highlight").any().alias("_highlight"))
        .filter((pl.col("_rank") > 0) | pl.col("_highlight"))
        .sort(["_rank", "_highlight", row], descending=[True, True, False])
        .head(MAX_DRAWN_ROWS)
    )
    hidden = total - worst.height
    st.caption(
        f"{worst.height} of {total:,} {what} drawn (those with a finding, a degraded or flapping link, worst first); "
        f"{hidden:,} not drawn{' (healthy)' if worst.height < MAX_DRAWN_ROWS else ''}."
    )
    return cells.filter(pl.col(row).is_in(worst[row].implode()))


links = aggregates.link_health(ds)
if links.height:
    tiers = links.group_by("tier", "peer_tier").len().sort("tier")
    st.caption(
        f"{links.height} cable(s) from {markdown_text(', '.join(sorted(set(links['source'].to_list()))))}: "
        + ", ".join(f"{r['len']} {r['tier']}→{r['peer_tier']}" for r in tiers.iter_rows(named=True))
    )
    fastest = links["data_rate_gbps"].max()
    # LLDP says nothing of link speed: Ethernet cables alone have no rate to compare
    slower = pl.col("data_rate_gbps") < fastest if fastest is not None else pl.lit(False)
    links = links.with_columns(
        (
            slower
            | (pl.col("supported_width").is_not_null() & (pl.col("supported_width") != pl.col("width")))
            | pl.col("kinds").str.contains("link_degraded")
        )
        .fill_null(False)
        .alias("degraded"),
        pl.col("kinds").str.contains("link_flap").alias("flapping"),
    )
    bad = links.filter(pl.col("health").is_in(["warning", "critical"]) | pl.col("degraded") | pl.col("flapping"))
    c1, c2, c3 = st.columns(3)
    c1.metric("Cables with findings", bad.filter(pl.col("health") != "ok").height)
    c2.metric("Degraded", links["degraded"].sum())
    c3.metric("Flapping", links["flapping"].sum())
    matrix = (
        links.group_by("lower_node", "upper_node")
        .agg(
            pl.col("health")
            .replace_strict({h: i for i, h in enumerate(HEALTH)}, return_dtype=pl.Int8)
            .max()
            .alias("_r"),
            pl.len().alias("cables"),
            pl.col("kinds").str.join(" ").alias("kinds"),
            (pl.col("degraded") | pl.col("flapping")).any().alias("highlight"),
        )
        .with_columns(pl.col("_r").replace_strict(dict(enumerate(HEALTH)), return_dtype=pl.String).alias("health"))
    )
    st.subheader("Cable matrix (lower tier → upper tier)")
    matrix = drawn_rows(matrix, "lower_node", "lower ends")
    if matrix.height:
        base = alt.Chart(matrix).encode(
            x=alt.X("upper_node:N", title="upper end (leaf / spine)"),
            y=alt.Y("lower_node:N", title="lower end (host / leaf)", axis=alt.Axis(labelOverlap=False)),
        )
        heat = base.mark_rect(stroke="black").encode(
            color=alt.Color("health:N", scale=SCALE),
            strokeWidth=alt.condition("datum.highlight", alt.value(3), alt.value(0)),
            tooltip=["lower_node", "upper_node", "cables", "health", "kinds"],
        )
        text = base.mark_text().encode(text="cables:Q")
        st.altair_chart(
            alt.layer(heat, text).properties(height=max(200, 36 * matrix["lower_node"].n_unique())), width="stretch"
        )
    st.subheader("Cables needing attention" if bad.height else "Cables")
    if not bad.height:
        st.success("Every cable is healthy: no finding on either end, none degraded or flapping.")
    st.dataframe(
        (bad if bad.height else links).select(
            "lower",
            "upper",
            "tier",
            "peer_tier",
            "width",
            "speed",
            "data_rate_gbps",
            "health",
            "degraded",
            "flapping",
            "kinds",
        ),
        hide_index=True,
        width="stretch",
    )
else:
    st.info(
        "Topology unknown for this source (no ibnetdiscover -p, iblinkinfo, ibdiagnet2.db_csv, lldpctl or SONiC "
        "show lldp table input): ports by host."
    )
    ph = aggregates.port_health(ds)
    if not ph.height:
        st.info("No network port with rated counters in this source.")
        st.stop()
    c1, c2, c3 = st.columns(3)
    c1.metric("Ports with findings", ph.filter(pl.col("health").is_in(["warning", "critical"])).height)
    c2.metric("Degraded", ph["degraded"].sum())
    c3.metric("Flapping", ph["flapping"].sum())
    drawn = drawn_rows(ph.with_columns((pl.col("degraded") | pl.col("flapping")).alias("highlight")), "host", "hosts")
    if drawn.height:
        base = alt.Chart(drawn).encode(
            x=alt.X("port_name:N", title="device:port"),
            y=alt.Y("host:N", title=None, axis=alt.Axis(labelOverlap=False)),
        )
        heat = base.mark_rect(stroke="black").encode(
            color=alt.Color("health:N", scale=SCALE),
            strokeWidth=alt.condition("datum.highlight", alt.value(3), alt.value(0)),
            tooltip=["host", "port_name", "health", "kinds"],
        )
        label = base.transform_filter("datum.highlight").mark_text(fontWeight="bold").encode(text=alt.Text("kinds:N"))
        height = max(200, 30 * drawn["host"].n_unique())
        st.altair_chart(alt.layer(heat, label).properties(height=height), width="stretch")
    flagged = ph.filter(pl.col("health") != "ok")
    st.subheader("Ports needing attention")
    if flagged.height:
        st.dataframe(flagged, hide_index=True, width="stretch")
    else:
        st.success("No warning or critical finding on any port.")


# Every name the inputs use for one host, HCA or switch (fabricscope.fabric.entities): what joined them.
entities = ds.tables.get("entities")
if entities is not None and entities.height:
    named = (
        entities.filter(pl.col("kind").is_in(["host", "hca", "switch"]))
        .group_by("entity", "kind", "name")
        .agg(
            pl.col("alias").unique().sort().str.join(", ").alias("aliases"),
            pl.col("source").unique().sort().str.join(", ").alias("sources"),
            pl.col("alias").n_unique().alias("names"),
        )
        .filter(pl.col("names") > 1)
        .sort("kind", "name")
    )
    if named.height:
        st.subheader("Identities (one entity, several names)")
        st.caption("FQDN and short host names, node GUIDs and LIDs, switch descriptions: joined across inputs.")
        st.dataframe(named.select("kind", "name", "aliases", "sources"), hide_index=True, width="stretch")

# Names two inputs map differently (fabricscope.fabric.entities.Conflict): what was decided, as analyze,
# the report and cron list them.
if ds.conflicts:
    st.subheader("Names the inputs disagree on")
    st.caption(
        "Decided by the claims alone, never by the inputs' order; a tie is not joined. "
        "Settle a host's name with --host-alias ALIAS=HOST."
    )
    st.dataframe(conflicts_frame(ds.conflicts), hide_index=True, width="stretch")
