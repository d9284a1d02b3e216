"""XIDs from the GPU driver: read from the DCGM exporter and dcgmi, classified by NVIDIA's catalogue."""

from __future__ import annotations

import json
from pathlib import Path

import fabricscope
import polars as pl
import pytest
from fabricscope.detect.gpu_xid import FABRIC_XIDS, XIDS, classify

FIX = Path(__file__).parent / "fixtures"
REPO = Path(__file__).resolve().parent.parent
LABELS = 'Hostname="gpu07",UUID="GPU-0c4d",device="nvidia{g}",gpu="{g}",instance="gpu07:9400",job="dcgm"'


def _scrapes(tmp_path: Path, codes: list[dict[int, float | str]], *, err_labels: bool = True) -> Path:
    """A /federate file of DCGM_FI_DEV_XID_ERRORS, one scrape per entry (GPU -> value), 15 s apart."""
    lines = ["# TYPE DCGM_FI_DEV_XID_ERRORS gauge"]
    for i, scrape in enumerate(codes):
        ts = 1_796_400_000_000 + 15_000 * i
        for g, v in scrape.items():
            extra = f',err_code="{v}",err_msg="x"' if err_labels else ""
            lines.append(f"DCGM_FI_DEV_XID_ERRORS{{{LABELS.format(g=g)}{extra}}} {v} {ts}")
    p = tmp_path / "federate.prom"
    p.write_text("\n".join(lines) + "\n")
    return p


def _xids(path: Path) -> pl.DataFrame:
    a = fabricscope.run_analysis(path)
    return a.findings.filter(pl.col("kind") == "gpu_xid").sort("device", "start")


def test_the_catalogue_classifies_fabric_and_application_xids() -> None:
    assert sorted(FABRIC_XIDS) == [74, 79, 136, 144, 145, 146, 147, 148, 149, 150]
    assert (classify(74).mnemonic, classify(74).layer, classify(74).severity) == ("NVLINK_ERROR", "nvlink", "critical")
    assert (classify(79).layer, classify(79).immediate_action) == ("pcie", "RESTART_BM")
    assert (classify(149).mnemonic, classify(149).severity) == ("NVLINK_NETIR_ERROR", "warning")
    # the application events the issue names are information, never a fabric fault
    for code in (13, 31, 43, 45):
        assert classify(code).layer is None and classify(code).severity == "info"
    # corrected C2C errors and an intentional link-down are NVLink words but no fault
    assert classify(121).layer is None and classify(155).layer is None
    assert classify(999) == ("XID 999", "not in fabricscope's table of the catalogue", None, "info", "")
    assert all(x.severity in ("info", "warning", "critical") for x in XIDS.values())


def test_real_dcgm_exporter_scrape_with_no_xid_is_read_and_silent() -> None:
    # NVIDIA aiperf's dcgm-exporter sample: one RTX 6000 Ada, XID gauge 0
    p = FIX / "prometheus" / "dcgm-aiperf-rtx6000ada.prom"
    s = fabricscope.load(p).samples.with_columns(pl.col("counter", "host", "device").cast(pl.String))
    row = s.filter(pl.col("counter") == "gpu_last_xid")
    assert row.select("host", "device").rows() == [("ed7e7a5e585f", "gpu0")]
    assert row["value_u64"].to_list() == [0] or row["value_f64"].to_list() == [0.0]
    assert _xids(p).is_empty()


def test_an_xid_held_since_the_first_reading_is_a_warning_that_says_when_is_unknown() -> None:
    # the constructed DCGM scrape: GPU 3 holds XID 79 with the exporter's err_code/err_msg labels,
    # which describe the value and never split the series
    p = FIX / "prometheus" / "dcgm.prom"
    counters = fabricscope.load(p).samples["counter"].cast(pl.String).unique().to_list()
    assert "gpu_last_xid" in counters and not [c for c in counters if c.startswith("gpu_last_xid{")]
    f = _xids(p)
    assert f.select("severity", "host", "device", "layer", "observed").rows() == [
        ("warning", "gpu017", "gpu3", "pcie", 79.0)
    ]
    ev = json.loads(f["evidence"][0])
    assert ev["since_first_reading"] is True and ev["mnemonic"] == "ROBUST_CHANNEL_GPU_HAS_FALLEN_OFF_THE_BUS"
    assert "when it happened is not in the data" in f["message"][0]


def test_a_change_to_an_nvlink_xid_is_critical_from_the_scrape_that_showed_it(tmp_path: Path) -> None:
    p = _scrapes(tmp_path, [{0: 0, 1: 0}, {0: 0, 1: 0}, {0: 74, 1: 0}, {0: 74, 1: 0}, {0: 74, 1: 13}])
    f = _xids(p)
    rows = f.select("severity", "device", "layer", "observed").rows()
    assert rows == [("critical", "gpu0", "nvlink", 74.0), ("info", "gpu1", None, 13.0)]
    nvl = f.row(0, named=True)
    # from the third scrape (the first holding 74) to the last, which still holds it
    assert (nvl["start"].timestamp(), nvl["end"].timestamp()) == (1_796_400_030.0, 1_796_400_060.0)
    assert "NVLINK_ERROR" in nvl["message"] and "fabric fault (nvlink)" in nvl["message"]
    assert json.loads(nvl["evidence"])["immediate_action"] == "WORKFLOW_NVLINK_ERR"


def test_a_new_xid_after_another_is_a_second_event(tmp_path: Path) -> None:
    p = _scrapes(tmp_path, [{0: 0}, {0: 45}, {0: 45}, {0: 74}])
    f = _xids(p)
    assert f.select("observed", "severity").rows() == [(45.0, "info"), (74.0, "critical")]


@pytest.mark.parametrize("value", ["NaN", "+Inf", "-1", "9223372036854775794", "1e30"])
def test_sentinels_and_impossible_codes_are_unknown(tmp_path: Path, value: str) -> None:
    p = _scrapes(tmp_path, [{0: 0}, {0: value}], err_labels=False)
    assert _xids(p).is_empty()


def test_dcgmi_dmon_xider_column_is_the_same_gauge() -> None:
    # DCGM 4.4.1's `dcgmi dmon -e 230,...` (field 230 is XIDER): three readings of 0
    p = FIX / "dcgmi-dmon" / "dcgm-exporter-700-dcgm-4.4.1.txt"
    s = fabricscope.load(p).samples.with_columns(pl.col("counter").cast(pl.String))
    assert s.filter(pl.col("counter") == "gpu_last_xid").height == 3
    assert _xids(p).is_empty()


def test_the_nvlink_scenario_pages_once_for_link_and_xid(tmp_path: Path) -> None:
    # the CRC errors on GPU 3 link 7 and the driver's XID 74 on GPU 3 are one fault: the link
    out = tmp_path / "f.json"
    from fabricscope.doors.cli import main

    code = main(["analyze", str(REPO / "sample_traces" / "scenarios" / "nvlink-crc"), "--json", str(out)])
    assert code == 2
    doc = json.loads(out.read_text())
    pages = [i for i in doc["incidents"] if i["severity"] in ("warning", "critical")]
    assert [(i["rule"], i["root"]["kind"], i["root"]["device"], i["root"]["port"]) for i in pages] == [
        ("nvlink_link_xid", "link_errors", "gpu3", 7)
    ]
    members = [(c["finding"]["kind"], c["finding"]["device"], c["relation"]) for c in pages[0]["consequences"]]
    assert members == [("gpu_xid", "gpu3", "same_port")]
