"""A saved Prometheus remote read response (``/api/v1/read``) is read like any other input.

The fixture is a real response of Prometheus 2.42 (tests/fixtures/prometheus-api/SOURCES.md):
it must give exactly the rows the same server's JSON answer gives, and a damaged body must be
a typed error naming the file and what was expected, through the API and the CLI.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import fabricscope
import polars as pl
import pytest
from fabricscope import _native
from fabricscope.exceptions import FormatError

REPO = Path(__file__).resolve().parent.parent
FIX = REPO / "tests/fixtures/prometheus-api"
FABRICSCOPE = Path(sys.executable).with_name("fabricscope")
COLS = ["time", "host", "device", "port", "priority", "counter", "value_u64", "value_f64", "scale", "is_counter"]


def _canon(df: pl.DataFrame) -> pl.DataFrame:
    return df.select(COLS).with_columns(pl.col(pl.Categorical).cast(pl.String)).sort(COLS[:6], nulls_last=True)


def test_remote_read_gives_the_rows_of_the_json_api() -> None:
    read = fabricscope.load(FIX / "read-response.bin", format="prometheus-remote-read")
    json_api = fabricscope.load(FIX / "matrix.json")
    assert read.samples.height == 7
    assert _canon(read.samples).equals(_canon(json_api.samples))
    assert read.samples["source"].cast(pl.String).unique().to_list() == ["prometheus-remote-read"]
    tx = read.samples.filter(pl.col("counter") == "port_xmit_data_bytes").sort("time")
    assert tx["value_u64"].to_list() == [18_527_668, 9_007_199_254_740_992]
    # The DCGM int64 blank, stored as the float64 2^63, is no value, as through JSON.
    nvlink = read.samples.filter(pl.col("device") == "gpu0").sort("time")
    assert nvlink["value_u64"].to_list() == [123_456_789, None]
    assert nvlink["value_f64"].to_list() == [None, None]


def test_the_request_is_what_the_fixture_was_asked_with() -> None:
    names = (
        "node_infiniband_port_data_transmitted_bytes_total|node_infiniband_info|node_ethtool_received_prio3_pause"
        "|DCGM_FI_PROF_NVLINK_TX_BYTES|node_infiniband_port_errors_received_total"
    )
    body = _native.remote_read_request(1_796_399_940_000, 1_796_400_030_000, [("__name__", "=~", names)])
    assert body == (FIX / "read-request.bin").read_bytes()
    with pytest.raises(ValueError, match="expected one of =, !=, =~, !~"):
        _native.remote_read_request(0, 1, [("job", "==", "node")])


def test_a_damaged_body_is_a_format_error(tmp_path: Path) -> None:
    cut = tmp_path / "cut.bin"
    cut.write_bytes((FIX / "read-response.bin").read_bytes()[:300])
    with pytest.raises(FormatError) as err:
        fabricscope.load(cut, format="prometheus-remote-read")
    assert err.value.path == str(cut) and err.value.byte_offset == 0
    assert "snappy-compressed (raw block format) Prometheus ReadResponse" in err.value.expected
    lenient = fabricscope.load(cut, format="prometheus-remote-read", strict=False)
    assert (lenient.samples.height, lenient.reports[0].bad_records) == (0, 1)
    run = subprocess.run(
        [str(FABRICSCOPE), "parse", "--format", "prometheus-remote-read", str(cut)], capture_output=True, text=True
    )
    assert run.returncode == 3 and f"{cut}: byte 0: expected a snappy-compressed" in run.stderr, run.stderr
    ok = subprocess.run(
        [str(FABRICSCOPE), "parse", "--format", "prometheus-remote-read", str(FIX / "read-response.bin"), "--json"],
        capture_output=True,
        text=True,
    )
    doc = json.loads(ok.stdout)
    assert (doc["samples"], doc["inputs"][0]["format"]) == (7, "prometheus-remote-read")
