"""Inputs that parse but cannot be true, and inputs whose order must not matter, through the CLI.

A sample dated 2100 is a bad record of its input (never cron's watermark of its series), a
``+Inf``/``NaN`` counter reading is a bad record (never a fault), every ``--json`` is strict
JSON, the same files give the same findings in any order, and a time or duration no clock can
hold is a usage error naming its option.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from fabricscope.doors.cli import _common, main
from fabricscope.fabric.topology import topology

from tests.cli_runner import run_cli

from .conftest import SAMPLES

SYMBOLS = "node_infiniband_symbol_error_total"
XMIT = "node_infiniband_port_data_transmitted_bytes_total"
RATE = "node_infiniband_rate_bytes_per_second"
PORT = '{device="mlx5_0",instance="gpu01:9100",port="1"}'
T0_MS = 1_796_400_000_000  # 2026-12-04T16:00:00Z
Y2100_MS = 4_102_444_800_000  # 2100-01-01T00:00:00Z


def prom(path: Path, readings: list[tuple[int, str, str]]) -> Path:
    """A Prometheus text file of ``(ms, symbol errors, bytes)`` readings of one port."""
    lines = []
    for ms, errors, sent in readings:
        lines += [f"{SYMBOLS}{PORT} {errors} {ms}", f"{XMIT}{PORT} {sent} {ms}"]
    path.write_text("\n".join(lines) + "\n")
    return path


def strict_json(text: str) -> Any:
    """``text`` as JSON, refusing the ``Infinity``/``NaN`` Python writes but JSON does not have."""

    def refuse(token: str) -> None:
        raise ValueError(f"not JSON: {token}")

    return json.loads(text, parse_constant=refuse)


def cron(tmp: Path, *extra: str) -> tuple[int, str, str]:
    return run_cli(
        ["cron", "--inputs", str(tmp / "in"), "--state", str(tmp / "st"), "--history", str(tmp / "h"), *extra],
        process=False,
    )


# --- a sample from the future ------------------------------------------------------------------


def test_a_sample_dated_2100_is_a_bad_record_not_the_series_watermark(tmp_path: Path) -> None:
    (tmp_path / "in").mkdir()
    prom(tmp_path / "in" / "a.prom", [(T0_MS, "0", "0"), (Y2100_MS, "0", "0")])
    code, out, _ = cron(tmp_path, "--json", "-")
    doc = strict_json(out)
    # the two readings of 2100 are the input's bad records; the two real ones are stored
    assert doc["inputs"][0]["rejected"] == 2 and doc["run"]["samples"] == 2
    prom(tmp_path / "in" / "b.prom", [(T0_MS + 60_000, "5000", "1000000000"), (T0_MS + 120_000, "10000", "2e9")])
    code, out, _ = cron(tmp_path)
    # the later real readings are new, not "already stored" behind a watermark of 2100
    assert out.startswith("FABRICSCOPE CRITICAL - 1 critical: link_errors gpu01/mlx5_0/1")
    assert "samples=4 " in out and "duplicates_dropped=0" in out
    assert code == 2


def test_a_watermark_of_2100_stored_before_the_bound_is_dropped(tmp_path: Path) -> None:
    (tmp_path / "in").mkdir()
    prom(tmp_path / "in" / "a.prom", [(T0_MS, "0", "0"), (Y2100_MS, "0", "0")])
    # a run without the bound stores the readings of 2100, as every run did before it existed
    assert cron(tmp_path, "--future-margin", "inf")[0] == 0
    prom(tmp_path / "in" / "b.prom", [(T0_MS + 60_000, "5000", "1000000000"), (T0_MS + 120_000, "10000", "2e9")])
    code, out, _ = cron(tmp_path)
    assert code == 2 and "duplicates_dropped=0" in out, out


def test_analyze_fails_a_future_dated_input_strictly_and_counts_it_leniently(tmp_path: Path) -> None:
    f = prom(tmp_path / "a.prom", [(T0_MS, "0", "0"), (T0_MS + 60_000, "10", "1e9"), (Y2100_MS, "20", "2e9")])
    code, out, err = run_cli(["analyze", str(f), "--json", "-"], process=False)
    assert code == 3
    assert f"{f}: symbol_errors of gpu01 mlx5_0 port 1 dated 2100-01-01T00:00:00Z" in err
    assert "--future-margin" in err
    code, out, _ = run_cli(["analyze", str(f), "--lenient", "--json", "-"], process=False)
    doc = strict_json(out)
    assert doc["inputs"] == [{"path": str(f), "format": "prometheus", "records": 4, "rejected": 2}]
    # the window ends with the last real reading, not in 2100
    assert {x["end"] for x in doc["findings"]} == {"2026-12-04T16:01:00Z"}
    # a margin wide enough keeps them
    code, out, _ = run_cli(["analyze", str(f), "--future-margin", "inf", "--json", "-"], process=False)
    assert strict_json(out)["inputs"][0]["rejected"] == 0


# --- non-finite values ---------------------------------------------------------------------------


def test_an_infinite_counter_is_a_bad_record_not_a_critical_fault(tmp_path: Path) -> None:
    f = prom(tmp_path / "a.prom", [(T0_MS, "0", "0"), (T0_MS + 60_000, "10", "1e9"), (T0_MS + 120_000, "+Inf", "2e9")])
    code, out, _ = run_cli(["analyze", str(f), "--lenient", "--json", "-"], process=False)
    doc = strict_json(out)
    assert doc["status"] == "warning" and code == 1  # 10 errors in 60 s; nothing infinite
    assert doc["inputs"][0]["rejected"] == 1
    assert [x["message"] for x in doc["findings"] if x["kind"] == "link_errors"] == [
        "10 symbol errors in 60 s (0.167/s, peak 0.167/s)"
    ]
    code, _, err = run_cli(["analyze", str(f)], process=False)
    assert code == 3 and "counter reading +Inf: expected a finite number" in err


@pytest.mark.parametrize("value", ["NaN", "-Inf"])
def test_a_non_finite_counter_in_cron_is_counted_and_the_run_is_not_critical(tmp_path: Path, value: str) -> None:
    (tmp_path / "in").mkdir()
    prom(tmp_path / "in" / "a.prom", [(T0_MS, "0", "0"), (T0_MS + 60_000, "0", "1e9"), (T0_MS + 120_000, value, "2e9")])
    code, out, _ = cron(tmp_path, "--json", "-")
    doc = strict_json(out)
    assert code == 0 and doc["status"] == "ok"
    assert doc["inputs"][0]["rejected"] == 1 and doc["run"]["samples"] == 5


def test_every_json_output_is_strict_json_when_a_gauge_is_infinite(tmp_path: Path) -> None:
    # A gauge may be +Inf (Prometheus allows it): it reaches the evidence, as null.
    lines = []
    for i, rate in enumerate(["5e10", "5e10", "+Inf"]):
        ms = T0_MS + i * 60_000
        lines += [f"{SYMBOLS}{PORT} {i * 10} {ms}", f"{XMIT}{PORT} {i * 10**9} {ms}", f"{RATE}{PORT} {rate} {ms}"]
    (tmp_path / "in").mkdir()
    f = tmp_path / "in" / "gauge.prom"
    f.write_text("\n".join(lines) + "\n")
    code, out, _ = run_cli(["analyze", str(f), "--json", "-"], process=False)
    doc = strict_json(out)
    evidence = [x["evidence"] for x in doc["findings"] if "expected_bytes_per_s" in x["evidence"]]
    assert evidence and all(e["expected_bytes_per_s"] is None for e in evidence)
    code, out, _ = cron(tmp_path, "--json", "-")
    assert strict_json(out)["status"] == "warning"
    code, out, _ = run_cli(["parse", str(f), "--json"], process=False)
    assert strict_json(out)["samples"] == 9
    code, out, _ = run_cli(["advise", "--from", str(f), "--json", "-"], process=False)
    assert code == 0 and "allreduce" in strict_json(out)


def test_a_table_printed_as_json_writes_non_finite_numbers_as_null(capsys: pytest.CaptureFixture[str]) -> None:
    _common.print_table(pl.DataFrame({"name": ["a", "b"], "gbps": [float("inf"), 1.5]}), "json")
    assert strict_json(capsys.readouterr().out) == [{"name": "a", "gbps": None}, {"name": "b", "gbps": 1.5}]


# --- order ------------------------------------------------------------------------------------------


def judged(out: str) -> tuple[Any, Any, str]:
    doc = strict_json(out)
    return doc["findings"], doc["incidents"], doc["status"]


def test_equal_timestamps_with_different_values_give_one_result_in_any_order(tmp_path: Path) -> None:
    a = prom(tmp_path / "a.prom", [(T0_MS, "0", "0"), (T0_MS + 60_000, "5000", "1000000000")])
    b = prom(tmp_path / "b.prom", [(T0_MS + 60_000, "7900", "1000000000"), (T0_MS + 120_000, "8000", "2e9")])
    one = run_cli(["analyze", str(a), str(b), "--json", "-"], process=False)[1]
    two = run_cli(["analyze", str(b), str(a), "--json", "-"], process=False)[1]
    assert judged(one) == judged(two)
    # the larger reading of 14:01 wins: 7,900 errors in its first minute
    (errors,) = [x for x in judged(one)[0] if x["kind"] == "link_errors"]
    assert errors["message"] == "8,000 symbol errors in 120 s (66.7/s, peak 132/s)"


def test_nccl_tests_job_numbers_do_not_depend_on_the_order_of_the_logs() -> None:
    ring = SAMPLES / "scenarios" / "chain-degraded-ring"
    other = SAMPLES / "scenarios" / "chain-bad-cable" / "nccl-tests" / "all_reduce_perf-run1.log"
    one = run_cli(["analyze", str(ring), str(other), "--json", "-"], process=False)[1]
    two = run_cli(["analyze", str(other), str(ring), "--json", "-"], process=False)[1]
    assert judged(one) == judged(two)
    # jobs are numbered by their hosts: cable-gpu* before ring-gpu*
    assert "nccl-tests job 2 (4 hosts from ring-gpu01)" in one


# --- times and durations no clock can hold -------------------------------------------------------


@pytest.mark.parametrize(
    ("command", "option", "value"),
    [
        ("analyze", "--since", "1e400"),
        ("analyze", "--until", "nan"),
        ("analyze", "--time", "-1e400"),
        ("analyze", "--since", "3000-01-01"),
        ("analyze", "--future-margin", "-1"),
        ("parse", "--since", "1e400"),
        ("parse", "--time", "inf"),
        ("cron", "--lookback", "1e400"),
        ("cron", "--server-lookback", "nan"),
        ("cron", "--retain-days", "1e400"),
        ("cron", "--alert-interval", "inf"),
        ("simulate", "--duration", "1e400"),
        ("simulate", "--interval", "0"),
    ],
)
def test_a_time_or_duration_out_of_range_is_a_usage_error_naming_the_option(
    tmp_path: Path, command: str, option: str, value: str
) -> None:
    inputs = {
        "analyze": [str(SAMPLES / "ethtool")],
        "parse": [str(SAMPLES / "ethtool")],
        "cron": ["--inputs", str(SAMPLES / "ethtool"), "--state", str(tmp_path / "s"), "--history", str(tmp_path)],
        "simulate": [str(tmp_path / "sim"), "--scenario", "lossy-link"],
    }[command]
    with pytest.raises(SystemExit) as stop:
        run_cli([command, *inputs, f"{option}={value}"], process=False)
    assert stop.value.code == 3


def test_the_usage_error_says_what_is_expected(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["analyze", str(SAMPLES / "ethtool"), "--since", "1e400"])
    err = capsys.readouterr().err
    assert "argument --since: expected epoch seconds or ISO 8601, a time between 1677-09-22 and 2262-04-11" in err
    assert "got '1e400'" in err


# --- topology as JSON -------------------------------------------------------------------------------


def test_topology_json_is_every_link_as_one_json_dumps_gives_it(monkeypatch: pytest.MonkeyPatch) -> None:
    links = topology(SAMPLES)
    whole = json.dumps(links.to_dicts(), indent=2, default=str) + "\n"
    # a slice of three rows: the text is joined from several slices
    monkeypatch.setattr(_common, "_JSON_SLICE_ROWS", 3)
    code, out, _ = run_cli(["topology", str(SAMPLES), "--json"], process=False)
    assert code == 0 and links.height > 6
    assert out == whole
