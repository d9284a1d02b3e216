"""AppTest for every page on the committed sample traces, with the real data layer."""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import aggregates
import allowed_sources
import components
import data
import polars as pl
import pyarrow as pa
import pytest
from streamlit.testing.v1 import AppTest

from tests.conftest import rendered_markdown as rendered
from tests.dashboard.conftest import APP, SAMPLES

PAGES = ["overview", "port", "topology", "layers", "expected", "whatif"]


def run(page: str, source: str = ".", **state: object) -> AppTest:
    at = AppTest.from_file(str(APP), default_timeout=180)
    at.query_params["source"] = source
    for k, v in state.items():
        at.session_state[k] = v
    at.switch_page(f"app_pages/{page}.py").run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def metrics(at: AppTest) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


def charts(at: AppTest) -> list[dict]:
    return [json.loads(c.proto.spec) for c in at.get("vega_lite_chart")]


def frame(at: AppTest, having: str) -> pl.DataFrame:
    for d in at.dataframe:
        if having in d.value.columns:
            return pl.from_pandas(d.value)
    raise AssertionError(f"no table with column {having!r}")


@pytest.mark.parametrize("page", PAGES)
def test_every_page_renders_the_whole_sample_tree(page: str) -> None:
    at = run(page)
    assert at.title[0].value
    assert at.sidebar.selectbox[0].value == "."
    assert not at.error


# --- Overview -------------------------------------------------------------------------------


def test_overview_pfc_storm_shows_critical_count_and_worst_port() -> None:
    at = run("overview", "scenarios/pfc-storm")
    m = metrics(at)
    # truth.json: a critical pfc_storm on pfcstorm-gpu03; the same fault as pfc_congestion (critical),
    # its storm-induced drops (packet_loss) and the neighbour's received pause (warning).
    assert m["Critical"] == "2"
    assert m["Warning"] == "2"
    assert m["Last data (UTC)"] == "2026-12-04 16:04:00"
    assert "CRITICAL" in at.markdown[0].value
    worst = frame(at, "worst")
    assert worst["port"][0] == "pfcstorm-gpu03/eth0"
    assert worst["worst"][0] == "critical"
    assert "pfc_storm" in worst["kinds"][0]
    shown = frame(at, "message")
    assert set(shown["severity"]) == {"critical", "warning"}
    assert {"pfc_storm", "pfc_congestion", "packet_loss"} <= set(shown["kind"])
    by_kind = [c for c in charts(at) if c["encoding"].get("y", {}).get("field") == "kind"]
    assert len(by_kind) == 1


def test_overview_leads_with_the_incident_and_its_action() -> None:
    at = run("overview", "scenarios/chain-bad-cable")
    assert at.subheader[0].value == "Incidents (1)"
    texts = [rendered(m.value) for m in at.markdown]
    title = next(t for t in texts if "bad link" in t)
    assert title.startswith("**:red[CRITICAL]** bad link cable-gpu02 mlx5_0 port 1 <-> MF0;cable-leaf01")
    assert any(t.startswith("**Action:** replace or reseat the cable") for t in texts)
    cons = frame(at, "relation")
    assert set(zip(cons["kind"], cons["host"], strict=True)) >= {
        ("packet_loss", "cable-gpu01"),
        ("underperformance", "cable-gpu01"),
    }


def test_overview_trap_is_healthy() -> None:
    at = run("overview", "scenarios/trap-counter-reset")
    m = metrics(at)
    assert (m["Critical"], m["Warning"]) == ("0", "0")
    assert int(m["Info"]) == 4 + 10  # one bottleneck verdict per host + the resets as counter_anomaly
    assert "OK" in at.markdown[0].value
    assert any("No warning or critical finding" in s.value for s in at.success)


def test_overview_lists_link_flap_in_the_whole_tree() -> None:
    at = run("overview")
    shown = frame(at, "message")
    flaps = shown.filter(pl.col("kind") == "link_flap")
    assert set(flaps["host"]) == {
        "flap-gpu03",
        "coincident-gpu04",
        "flapwin-gpu03",
        "guidend-gpu02",
    }  # link-flap, trap-coincident-leaves, link-flap-windows, guid-cable-end
    assert int(metrics(at)["Critical"]) >= 10


# --- Port -----------------------------------------------------------------------------------


def test_port_pfc_storm_defaults_to_the_worst_port_with_shaded_windows() -> None:
    at = run("port", "scenarios/pfc-storm")
    assert at.selectbox[0].value == "pfcstorm-gpu03/eth0"
    text = " ".join(m.value for m in at.markdown)
    assert "pfc_storm" in text and "pfc_congestion" in text
    subheaders = [s.value for s in at.subheader]
    assert subheaders == [
        "Throughput against line rate",
        "Pause ratio per priority",
        "ECN share and CNP rate",
        "Error rates",
        "Estimated loss and modelled go-back-N efficiency",
    ]
    specs = charts(at)
    # throughput, pause, errors, loss p, go-back-N efficiency; each layered over the finding windows
    assert len(specs) == 5
    assert all(s.get("layer", [{}])[0].get("mark", {}).get("type") == "rect" for s in specs)


def test_port_pause_ratio_and_loss_values() -> None:
    ds = data._analyse([str(SAMPLES / "scenarios/pfc-storm")], "pfc-storm", "analysis")
    pr = aggregates.pause_ratio(ds, "pfcstorm-gpu03", "eth0", None)
    tx3 = pr.filter(pl.col("series") == "tx p3")["pause_ratio"]
    # the finding says tx pause on priority 3 peaked at 97% of one interval
    assert 0.96 <= tx3.max() <= 0.98
    loss = aggregates.loss(ds, "pfcstorm-gpu03", "eth0", None).filter(pl.col("direction") == "rx")
    # packet_loss reports p = 5.34e-3 over the window; intervals peak above that
    assert loss["loss_ratio"].max() > 5e-3
    assert ((loss["gbn_efficiency"] > 0) & (loss["gbn_efficiency"] <= 1)).all()


def test_port_loss_and_go_back_n_match_the_lossy_collapse_finding() -> None:
    ds = data._analyse([str(SAMPLES / "scenarios/lossy-collapse")], "lossy-collapse", "analysis")
    finding = ds.findings.filter(pl.col("kind") == "lossy_collapse").row(0, named=True)
    evidence = json.loads(finding["evidence"])
    loss = aggregates.loss(ds, finding["host"], finding["device"], finding["port"])
    loss = loss.filter(pl.col("direction") == evidence["direction"])
    # truth.json: 1.5% loss into collapse-gpu02 (seen on both ends of the ring); go-back-N goodput ~36%
    assert loss["loss_ratio"].max() == pytest.approx(evidence["p"], rel=0.05)
    assert loss["gbn_efficiency"].min() == pytest.approx(evidence["gbn_efficiency"], abs=0.02)
    assert 0.34 < loss["gbn_efficiency"].min() < 0.37


def test_port_go_back_n_follows_the_configured_thresholds(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # `fabricscope dashboard --config` plots the model the detector judged with, not the defaults.
    from fabricscope.doors.dashboard import ENV_ANALYSIS, analysis_environment

    source = SAMPLES / "scenarios/lossy-collapse"
    default = data._analyse([str(source)], "lossy-collapse", "analysis")
    config = tmp_path / "rtt.toml"
    config.write_text("[lossy_collapse]\nrtt_us = 20.0\n")
    monkeypatch.setenv(ENV_ANALYSIS, analysis_environment({"config": str(config)}))
    ds = data._analyse([str(source)], "lossy-collapse", "analysis")
    cli = str(Path(sys.executable).with_name("fabricscope"))
    run = subprocess.run(
        [cli, "analyze", str(source), "--lenient", "--config", str(config), "--json", "-"],
        capture_output=True,
        text=True,
    )
    finding = next(f for f in json.loads(run.stdout)["findings"] if f["kind"] == "lossy_collapse")
    evidence = finding["evidence"]
    assert evidence["rtt_us"] == 20.0
    args = (finding["host"], finding["device"], finding["port"])
    before = aggregates.loss(default, *args).filter(pl.col("direction") == evidence["direction"])
    after = aggregates.loss(ds, *args).filter(pl.col("direction") == evidence["direction"])
    # twice the round trip: twice the packets in flight that one loss resends
    assert after["bdp_packets"].max() == pytest.approx(2 * before["bdp_packets"].max())
    assert after["bdp_packets"].max() == pytest.approx(evidence["bdp_packets"])
    # 1.5% loss with W ~ 244 packets: about 1 / (1 + 0.015 x 244) ~ 21%, what the finding says
    assert after["gbn_efficiency"].min() == pytest.approx(evidence["gbn_efficiency"], abs=0.02)
    assert 0.19 < after["gbn_efficiency"].min() < 0.23 < 0.34 < before["gbn_efficiency"].min()


def test_port_ecn_share_for_the_incast_receiver() -> None:
    ds = data._analyse([str(SAMPLES / "scenarios/ecn-incast")], "ecn-incast", "analysis")
    ecn = aggregates.ecn(ds, "incast-gpu06", "mlx5_0", 1)
    peak = dict(ecn.group_by("metric").agg(pl.col("value").max()).iter_rows())
    finding = ds.findings.filter(pl.col("kind") == "ecn_congestion").row(0, named=True)
    assert finding["host"] == "incast-gpu06"
    assert peak["ecn_marked_ratio"] >= finding["observed"] > 0.01  # above the 1% warning line
    assert peak["np_cnp_sent_packets_per_s"] > 0


def test_port_selection_switches_port() -> None:
    at = run("port", "scenarios/link-flap", port="flap-gpu02/mlx5_0:1")
    assert at.selectbox[0].value == "flap-gpu02/mlx5_0:1"
    assert "ib_congestion" in " ".join(m.value for m in at.markdown)
    assert any("Line rate 50 GB/s" in c.value for c in at.caption)


# --- Topology -------------------------------------------------------------------------------


def test_topology_link_flap_highlights_the_flapping_port() -> None:
    at = run("topology", "scenarios/link-flap")
    assert metrics(at) == {"Ports with findings": "2", "Degraded": "0", "Flapping": "1"}
    t = frame(at, "flapping")
    flap = t.filter(pl.col("flapping"))
    assert flap.select("host", "port_name", "health").row(0) == ("flap-gpu03", "mlx5_0:1", "critical")


def test_topology_link_degraded_marks_both_ports() -> None:
    at = run("topology", "scenarios/link-degraded")
    t = frame(at, "degraded").filter(pl.col("degraded"))
    assert set(zip(t["host"], t["port_name"], strict=True)) >= {
        ("degraded-gpu02", "mlx5_0:1"),
        ("degraded-gpu04", "mlx5_1:1"),
    }


def test_topology_known_fabric_matrix() -> None:
    at = run("topology", ".")
    # sample_traces/ib (4 hca→leaf, 4 leaf→spine), the six incident scenarios with an IB topology
    # chain-pause-storm's four RoCE NICs from lldpctl and trap-roce-coincident-leaves' four NICs and
    # four uplinks from the leaves' SONiC LLDP tables; the flap-windows and GUID-end scenarios' IB
    # topologies and the two one-leaf storm scenarios' SONiC tables add 20 hca→leaf and 8 leaf→spine
    caption = (
        "104 cable(s) from ibnetdiscover, lldpctl-json, lldpctl-keyvalue, sonic-lldp-table: 64 hca→leaf, 40 leaf→spine"
    )
    assert any(caption in c.value for c in at.caption), [c.value for c in at.caption]
    bad = frame(at, "lower")
    congested = bad.filter(pl.col("kinds").str.contains("ib_congestion"))
    assert congested.select("lower", "upper").row(0) == ("gpu03 mlx5_0:1", "ib-leaf02:1")
    matrix = [c for c in charts(at) if "layer" in c]
    assert matrix and matrix[0]["layer"][0]["encoding"]["x"]["field"] == "upper_node"


def test_topology_draws_roce_leaves_from_sonic_lldp_tables() -> None:
    # trap-roce-coincident-leaves: four RoCE hosts and two spines known only from the two leaves'
    # `show lldp table` (a switch-side table shows leaf <-> spine, host files cannot)
    at = run("topology", "scenarios/trap-roce-coincident-leaves")
    assert any("8 cable(s) from sonic-lldp-table: 4 hca→leaf, 4 leaf→spine" in c.value for c in at.caption), [
        c.value for c in at.caption
    ]


def test_topology_draws_roce_leaves_from_lldpctl() -> None:
    # chain-pause-storm: four RoCE hosts under two SONiC leaves, known only from lldpctl files
    at = run("topology", "scenarios/chain-pause-storm")
    assert any("4 cable(s) from lldpctl-json, lldpctl-keyvalue: 4 hca→leaf" in c.value for c in at.caption), [
        c.value for c in at.caption
    ]
    cables = frame(at, "lower")
    assert set(zip(cables["lower"], cables["upper"], cables["health"], strict=True)) >= {
        ("spread-gpu03 eth0:eth0", "spread-leaf02:Ethernet0", "critical"),
        ("spread-gpu04 eth0:eth0", "spread-leaf02:Ethernet4", "warning"),
    }
    matrix = [c for c in charts(at) if "layer" in c]
    assert matrix and matrix[0]["layer"][0]["encoding"]["x"]["field"] == "upper_node"


def test_topology_lists_the_names_joined_into_one_host() -> None:
    at = run("topology", "scenarios/chain-fqdn-cable")
    ids = frame(at, "aliases")
    host = ids.filter((pl.col("kind") == "host") & (pl.col("name") == "fqdn-gpu02.cluster.local"))
    assert host["aliases"].to_list() == ["fqdn-gpu02, fqdn-gpu02.cluster.local"]
    leaf = ids.filter((pl.col("kind") == "switch") & (pl.col("name") == "fqdn-leaf01"))
    assert leaf.height == 1 and "MF0;fqdn-leaf01:MQM9700/U1" in leaf["aliases"][0]


def test_topology_lists_the_names_the_inputs_disagree_on(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # two sysfs files claim one node GUID, two FQDNs share one short name
    shutil.copytree(Path(__file__).resolve().parents[1] / "fixtures" / "identity", tmp_path / "identity")
    monkeypatch.setenv("FABRICSCOPE_DATA", str(tmp_path))
    at = run("topology", "identity")
    assert "Names the inputs disagree on" in [s.value for s in at.subheader]
    rows = frame(at, "decision").select("kind", "name", "decision").rows()
    assert rows == [
        ("node_guid", "0x1070fd0300cc0017", "kept node17.ib.example mlx5_0"),
        ("node_guid", "0x1070fd0300cc0021", "not joined: left as read"),
        ("short_name", "node19", "not joined: name the right host with --host-alias"),
    ]


# --- Layers ---------------------------------------------------------------------------------


def test_layers_nvlink_saturated_verdict() -> None:
    at = run("layers", "scenarios/nvlink-saturated")
    verdicts = frame(at, "message")
    warn = verdicts.filter(pl.col("severity") == "warning")
    assert warn.select("host", "layer").row(0) == ("nvlink-gpu03", "nvlink")
    busiest = frame(at, "busiest_layer")
    top = busiest.sort("mean_utilisation_ratio", descending=True).row(0, named=True)
    assert top["host"] == "nvlink-gpu03" and top["busiest_layer"] == "nvlink"
    assert top["mean_utilisation_ratio"] > 0.8
    assert len(charts(at)) == 1


def test_layers_pfc_storm_has_no_saturated_layer() -> None:
    at = run("layers", "scenarios/pfc-storm")
    verdicts = frame(at, "message")
    assert set(verdicts["severity"]) == {"info"}
    busiest = frame(at, "busiest_layer")
    assert busiest.height == 4 and (busiest["mean_utilisation_ratio"] < 0.5).all()


def test_layers_without_utilisation_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A topology dump alone: cables but no counters, so nothing to measure a layer with.
    (tmp_path / "fabric").mkdir()
    (tmp_path / "fabric" / "net.txt").write_bytes((SAMPLES / "ib" / "fabric-ibnetdiscover-p.txt").read_bytes())
    monkeypatch.setenv("FABRICSCOPE_DATA", str(tmp_path))
    at = run("layers", "fabric")
    infos = [i.value for i in at.info]
    assert any("No bottleneck verdict" in i for i in infos) and any("No layer utilisation" in i for i in infos)


# --- Expected vs achieved -------------------------------------------------------------------


def test_expected_port_throughput_against_profile() -> None:
    at = run("expected", "scenarios/link-degraded")
    t = frame(at, "peak_of_line_ratio")
    assert t.height == 8  # 4 hosts x 2 HCAs with link rate gauges
    # the two degraded ports trained at 200 Gb/s: their profile follows the trained rate
    by_port = dict(zip(t["port_id"], t["profile"], strict=True))
    assert by_port["degraded-gpu02/mlx5_0:1"] == "ndr200"
    assert by_port["degraded-gpu01/mlx5_0:1"] == "ndr400"
    assert ((t["peak_of_line_ratio"] > 0) & (t["peak_of_line_ratio"] <= 1.0)).all()


def test_expected_perftest_and_nccl_results(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Real tool outputs (provenance: tests/fixtures/{nccl-tests,perftest}/SOURCES.md).
    fixtures = Path(__file__).resolve().parents[1] / "fixtures"
    (tmp_path / "bench").mkdir()
    for f in ("nccl-tests/ztan-all_reduce-16xH100.txt", "perftest/write_bw_sweep_mib.txt"):
        (tmp_path / "bench" / Path(f).name).write_bytes((fixtures / f).read_bytes())
    monkeypatch.setenv("FABRICSCOPE_DATA", str(tmp_path))
    at = run("expected", "bench")
    perf = frame(at, "bw_average_gbit_per_s").sort("size_bytes")
    assert perf["size_bytes"].to_list() == [65536, 1048576]
    assert perf["of_line_rate_ratio"].round(4).to_list() == [0.9762, 0.9791]  # of 400 Gb/s (ndr400)
    assert set(perf["verdict"]) == {"ok"}
    nccl = frame(at, "expected_busbw_gb_per_s").row(0, named=True)
    # 16 x H100 over 2 nodes: busbw 338.82 GB/s at 8 GiB against NVLink4's achievable 371 GB/s
    assert (nccl["peak_busbw_gb_per_s"], nccl["size_bytes"], nccl["n_nodes"]) == (338.82, 8589934592, 2)
    assert nccl["limited_by"] == "nvlink"
    assert nccl["expected_busbw_gb_per_s"] == pytest.approx(371.25)
    assert nccl["of_expected_ratio"] == pytest.approx(338.82 / 371.25)
    assert len(charts(at)) == 2


# --- What-if --------------------------------------------------------------------------------


def test_whatif_runs_the_advisor_interactively() -> None:
    import importlib

    advise = importlib.import_module("fabricscope.fabric.advise")  # the package exports the function as `advise`
    at = run("whatif", "scenarios/nvlink-saturated")
    assert [s.value for s in at.subheader] == ["All-reduce time", "InfiniBand vs RoCEv2 break-even"]
    assert len(charts(at)) == 2
    expected = advise.advise(advise.load_inputs())
    shown = frame(at, "hierarchical_ms")
    assert shown.height == expected.allreduce.height
    assert set(shown["gpus_per_node"]) == {advise.load_inputs().gpus_per_node}
    at.number_input(key="whatif_gpus_per_node").set_value(4).run()
    assert not at.exception
    changed = frame(at, "hierarchical_ms")
    assert set(changed["gpus_per_node"]) == {4}
    # fewer GPUs per NVLink domain: more nodes for the same job, never a faster hierarchical all-reduce
    joined = shown.join(changed, on=["gradient_gb", "gpus", "bandwidth_gbps"], suffix="_4")
    assert (joined["nodes_4"] >= joined["nodes"]).all()
    assert (joined["hierarchical_ms_4"] >= joined["hierarchical_ms"] - 1e-9).all()
    be = frame(at, "payback_years")
    assert set(be["choice"]) <= {"infiniband", "roce"}


def test_whatif_uses_measured_bandwidth(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fixtures = Path(__file__).resolve().parents[1] / "fixtures"
    (tmp_path / "bench").mkdir()
    (tmp_path / "bench" / "bw.txt").write_bytes((fixtures / "perftest" / "write_bw_sweep_mib.txt").read_bytes())
    monkeypatch.setenv("FABRICSCOPE_DATA", str(tmp_path))
    at = run("whatif", "bench")
    assert any("perftest write_bw on gpu017 mlx5_0 391.6 Gb/s" in i.value for i in at.info)
    shown = frame(at, "hierarchical_ms")
    assert shown["bandwidth_gbps"].unique().round(2).to_list() == [391.65]
    at.toggle(key="whatif_measured").set_value(False).run()
    assert not at.info
    assert sorted(frame(at, "hierarchical_ms")["bandwidth_gbps"].unique().to_list()) == [200.0, 400.0, 800.0]


# --- Sources: only under the data directory -------------------------------------------------


@pytest.mark.parametrize("source", ["..", "../..", "scenarios/../../..", "/etc", "~/.ssh", "nonexistent"])
def test_source_outside_the_data_directory_is_refused(source: str) -> None:
    at = run("overview", source)
    assert at.error and "Refused" in at.error[0].value
    assert not at.metric  # nothing was read


def test_resolve_source_refuses_symlinks_leading_out(tmp_path: Path) -> None:
    root = tmp_path / "data"
    (root / "ok").mkdir(parents=True)
    outside = tmp_path / "secret"
    outside.mkdir()
    (outside / "key.prom").write_text("secret 1\n")
    (root / "ok" / "escape").symlink_to(outside)
    (root / "direct").symlink_to(outside)
    (root / "inner").symlink_to(root / "ok", target_is_directory=True)
    with pytest.raises(allowed_sources.OutsideDataDirError, match="outside"):
        allowed_sources.resolve_source("direct", root)
    with pytest.raises(allowed_sources.OutsideDataDirError, match=r"symlinks leading outside.*ok/escape"):
        allowed_sources.resolve_source("ok", root)
    with pytest.raises(allowed_sources.OutsideDataDirError, match="not relative"):
        allowed_sources.resolve_source(str(outside), root)
    with pytest.raises(allowed_sources.OutsideDataDirError, match="NUL"):
        allowed_sources.resolve_source("ok\x00", root)
    with pytest.raises(allowed_sources.OutsideDataDirError):
        allowed_sources.resolve_source(".", root)  # the root itself contains links leading out
    assert "direct" not in allowed_sources.list_sources(root) and "inner" not in allowed_sources.list_sources(root)


def test_resolve_source_inside(tmp_path: Path) -> None:
    root = tmp_path / "data"
    (root / "a" / "b").mkdir(parents=True)
    (root / "a" / "link").symlink_to(root / "a" / "b", target_is_directory=True)
    assert allowed_sources.resolve_source("a/b", root) == (root / "a" / "b").resolve()
    assert allowed_sources.resolve_source("a/./b/../b", root) == (root / "a" / "b").resolve()
    assert allowed_sources.resolve_source("a/link", root) == (root / "a" / "b").resolve()
    assert allowed_sources.list_sources(root) == [".", "a", "a/b"]


def test_fingerprint_changes_when_a_file_is_appended(tmp_path: Path) -> None:
    f = tmp_path / "x.prom"
    f.write_text("a 1\n")
    before = data.fingerprint(tmp_path)
    with f.open("a") as fh:
        fh.write("a 2\n")
    after = data.fingerprint(tmp_path)
    assert before != after and after[1] == 8 and after[2] == 1


# --- Uploads --------------------------------------------------------------------------------


def _uploaded(name: str, content: bytes, file_id: str):
    from streamlit.proto.Common_pb2 import FileURLs
    from streamlit.runtime.uploaded_file_manager import UploadedFile, UploadedFileRec

    return UploadedFile(UploadedFileRec(file_id, name, "application/octet-stream", content), FileURLs())


def test_uploads_are_size_limited_base_named_and_parsed_leniently() -> None:
    good = (SAMPLES / "ethtool" / "roce01-eth2.log").read_bytes()
    bad = (
        b"# TYPE node_infiniband_port_data_received_bytes_total counter\n"
        b'node_infiniband_port_data_received_bytes_total{device="mlx5_0",port="1",instance="h:9100"} not-a-number\n'
        b'node_infiniband_port_data_received_bytes_total{device="mlx5_0",port="1",instance="h:9100"} 5\n'
    )
    files = [
        _uploaded("../../etc/roce01-eth2.log", good, "1"),
        _uploaded("broken.prom", bad, "2"),
        _uploaded("huge.prom", b"x" * (len(good) + 1), "3"),
    ]
    directory, digest, refused = allowed_sources.save_uploads(files, limit=len(good))
    try:
        assert sorted(p.name for p in Path(directory).iterdir()) == ["000-roce01-eth2.log", "001-broken.prom"]
        assert len(refused) == 1 and refused[0].startswith("huge.prom: ") and "above the" in refused[0]
        assert len(digest) == 64
        ds = data._analyse([directory], "upload", "upload")
        by_file = {Path(i["path"]).name: i for i in ds.inputs}
        assert by_file["000-roce01-eth2.log"]["format"] == "ethtool"
        assert by_file["001-broken.prom"]["rejected"] == 1  # the bad line counted, the good one kept
        assert by_file["001-broken.prom"]["records"] == 1
        assert "pfc_storm" in set(ds.findings["kind"])  # roce01's priority-3 storm (sample_traces/README.md)
    finally:
        shutil.rmtree(directory)


# --- Aggregation bound ----------------------------------------------------------------------


def test_downsample_bounds_points_per_series() -> None:
    n = 50_000
    start = dt.datetime(2026, 12, 2, tzinfo=dt.timezone.utc)
    df = pl.DataFrame(
        {
            "time": pl.datetime_range(start, start + dt.timedelta(seconds=n - 1), "1s", eager=True, time_zone="UTC"),
            "value": [float(i % 100) for i in range(n)],
        }
    ).with_columns(pl.lit("a").alias("series"))
    both = pl.concat([df, df.with_columns(pl.lit("b").alias("series"))])
    out = aggregates.downsample(both, ["series"], ["value"], max_points=1000)
    counts = dict(out.group_by("series").len().iter_rows())
    assert counts["a"] <= 1000 and counts["b"] <= 1000 and counts["a"] > 900
    assert abs(out["value"].mean() - 49.5) < 0.5  # averaging keeps the level
    small = df.head(10)
    assert aggregates.downsample(small, ["series"], ["value"]).equals(small.sort("series", "time"))


# --- History mode ---------------------------------------------------------------------------


def test_history_mode_reads_a_cron_history(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import subprocess
    import sys

    root = tmp_path / "data"
    cmd = [sys.executable, "-m", "fabricscope", "cron", "--inputs", str(SAMPLES / "scenarios" / "pfc-storm")]
    cmd += ["--state", str(tmp_path / "state"), "--history", str(root / "hist")]
    assert subprocess.run(cmd, capture_output=True, check=False).returncode == 2  # CRITICAL
    monkeypatch.setenv("FABRICSCOPE_DATA", str(root))
    assert allowed_sources.list_sources(root) == [".", "hist"]
    at = run("overview", "hist")
    assert at.markdown[0].value.endswith("— history: hist")
    m = metrics(at)
    assert (m["Critical"], m["Warning"]) == ("2", "2")  # what cron alerted, once per fault
    assert frame(at, "worst")["port"][0] == "pfcstorm-gpu03/eth0"
    lifecycle = frame(at, "fault_id")
    assert lifecycle.height >= 4 and lifecycle["resolved_at"].is_null().all()
    assert frame(at, "run_id").height == 1
    port = run("port", "hist")
    assert port.selectbox[0].value == "pfcstorm-gpu03/eth0"
    assert len(charts(port)) == 5


def test_upload_source_without_an_upload_falls_back_to_the_root() -> None:
    at = run("overview", components.UPLOAD)
    assert at.sidebar.selectbox[0].value == "."
    assert int(metrics(at)["Critical"]) >= 10


def test_upload_directories_are_removed_when_the_server_process_exits(tmp_path: Path) -> None:
    # The server process saves uploads, then exits (as streamlit does on SIGTERM or Ctrl-C).
    code = (
        "import allowed_sources\n"
        "class F:\n"
        "    name, size = 'x.prom', 2\n"
        "    def getbuffer(self): return b'x\\n'\n"
        "print(allowed_sources.save_uploads([F()])[0]); print(allowed_sources.save_uploads([F()])[0])\n"
    )
    env = {**os.environ, "PYTHONPATH": str(APP.parent), "TMPDIR": str(tmp_path)}
    run = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=False)
    assert run.returncode == 0, run.stderr
    made = [Path(line) for line in run.stdout.splitlines()]
    assert len(made) == 2 and all(p.is_relative_to(tmp_path) for p in made)
    assert not any(p.exists() for p in made)
    assert list(tmp_path.iterdir()) == []


def test_the_analysis_options_of_the_command_apply_to_the_data_layer(monkeypatch: pytest.MonkeyPatch) -> None:
    # `fabricscope dashboard --hosts H` shows what `fabricscope analyze --hosts H` finds, status included.
    from fabricscope.doors.dashboard import ENV_ANALYSIS, analysis_environment

    source = SAMPLES / "scenarios/pfc-storm"
    monkeypatch.setenv(ENV_ANALYSIS, analysis_environment({"hosts": ["pfcstorm-gpu03"]}))
    ds = data._analyse([str(source)], "pfc-storm", "analysis")
    cli = str(Path(sys.executable).with_name("fabricscope"))
    run = subprocess.run(
        [cli, "analyze", str(source), "--lenient", "--hosts", "pfcstorm-gpu03", "--json", "-"],
        capture_output=True,
        text=True,
    )
    doc = json.loads(run.stdout)
    assert ds.findings.height == len(doc["findings"]) > 0
    assert set(ds.findings["host"].to_list()) == {"pfcstorm-gpu03"}
    assert ds.status == doc["status"]


def _arrow(data: bytes) -> pa.Table:
    return pa.ipc.open_stream(data).read_all()


def test_topology_of_many_hosts_draws_the_worst_rows_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # 120 healthy hosts (no topology input) beside the link-flap scenario's hosts: the port matrix
    # draws the hosts with something to see, not a chart 120 rows tall.
    src = tmp_path / "fabric"
    sim = subprocess.run(
        [sys.executable, "-m", "fabricscope", "simulate", str(src / "scale"), "--scale", "960x12x3"],
        capture_output=True,
        text=True,
    )
    assert sim.returncode == 0, sim.stderr
    shutil.copytree(SAMPLES / "scenarios" / "link-flap", src / "link-flap")
    monkeypatch.setenv("FABRICSCOPE_DATA", str(tmp_path))
    at = run("topology", "fabric")
    captions = [c.value for c in at.caption]
    drawn = [c for c in captions if "hosts drawn" in c]
    assert drawn, captions
    layered = [c for c in at.get("vega_lite_chart") if "layer" in json.loads(c.proto.spec)]
    assert len(layered) == 1
    hosts = {h for ds in layered[0].proto.datasets for h in pl.from_arrow(_arrow(ds.data.data))["host"].to_list()}
    assert hosts == {"flap-gpu02", "flap-gpu03"}
    assert drawn == [
        "2 of 124 hosts drawn (those with a finding, a degraded or flapping link, worst first); "
        "122 not drawn (healthy)."
    ]
    assert metrics(at) == {"Ports with findings": "2", "Degraded": "0", "Flapping": "1"}
    assert frame(at, "health")["host"].to_list() == ["flap-gpu03", "flap-gpu02"]


def test_overview_lists_links_to_replace_with_their_fitted_curves(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from fabricscope.simulate.wearout import scenario_links, write_wearout

    write_wearout(tmp_path / "wear", scenario_links())
    monkeypatch.setenv("FABRICSCOPE_DATA", str(tmp_path))
    at = run("overview", "wear")
    assert "Links to replace (2)" in [s.value for s in at.subheader]
    table = frame(at, "crossing in (days)")
    assert table["link"].to_list() == ["wear-sparse.example/mlx5_0/1", "wear-rising.example/mlx5_0/1"]
    assert all(4.5 < d < 18.5 for d in table["crossing in (days)"])
    (chart,) = [c for c in at.get("vega_lite_chart") if "fitted errors per hour" in c.proto.spec]
    frames = [pl.from_arrow(_arrow(d.data.data)) for d in chart.proto.datasets]
    curves = next(f for f in frames if "rate_per_h" in f.columns)
    values = curves.to_dicts()
    assert {v["link"] for v in values} == set(table["link"])
    # each curve ends at the warning rate, its crossing
    last = max((v for v in values if v["link"] == "wear-rising.example/mlx5_0/1"), key=lambda v: v["time"])
    assert last["rate_per_h"] == pytest.approx(120.0, rel=1e-6)
