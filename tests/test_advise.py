"""advise: all-reduce time (flat ring, hierarchical) and the InfiniBand/RoCEv2 break-even."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import fabricscope
import polars as pl
import pytest
from fabricscope.doors.cli import main
from fabricscope.fabric.advise import AdviseInputs, advise, load_inputs

from .test_bottleneck import counter
from .test_rates import samples
from .test_underperformance import H100, nccl_rows, perf, perf_row, ranks


def row(a: fabricscope.fabric.advise.Advice, **where: float) -> dict:
    df = a.allreduce
    for k, v in where.items():
        df = df.filter(pl.col(k) == v)
    assert df.height == 1
    return df.row(0, named=True)


def test_every_default_cites_a_source() -> None:
    i = AdviseInputs()
    assert set(i.sources) == {f.name for f in dataclasses.fields(i)} - {"overridden"}
    assert all(len(s) > 20 for s in i.sources.values())
    assert i.sources["gradient_gb"].startswith("fabricscope default")


def test_flat_ring_and_hierarchical_formulas() -> None:
    a = advise(load_inputs(gpus=[256], gradient_gb=[4.0], bandwidth_gbps=[400.0], network_efficiency_ratio=1.0))
    r = row(a)
    s, n, g, m = 4e9, 256, 8, 32
    b_net, b_nvl = 50e9, AdviseInputs().nvlink_gb_per_s * 1e9
    assert r["nodes"] == m
    assert r["flat_ring_s"] == pytest.approx(2 * (n - 1) / n * s / b_net)
    assert r["hierarchical_s"] == pytest.approx(2 * (g - 1) / g * s / b_nvl + 2 * (m - 1) / m * s / (g * b_net))
    assert r["flat_ring_ms"] == pytest.approx(r["flat_ring_s"] * 1e3)
    assert r["hierarchical_speedup_ratio"] == pytest.approx(r["flat_ring_s"] / r["hierarchical_s"])


def test_70b_gradients_at_400g_take_tens_of_ms() -> None:
    # 1-10 GB of gradients per step at 400 Gb/s -> 20-80 ms. With NCCL's 94% of NDR and NVLink 4 the
    # hierarchical all-reduce on 256 GPUs takes 9.9-98.7 ms; a flat ring 42-424 ms.
    a = advise(load_inputs(gpus=[256], gradient_gb=[1.0, 10.0], bandwidth_gbps=[400.0]))
    got = a.allreduce.select("gradient_gb", pl.col("flat_ring_ms", "hierarchical_ms").round(1)).rows()
    assert got == [(1.0, 42.4, 9.9), (10.0, 423.9, 98.7)]


def test_a_job_inside_one_node_never_touches_the_network() -> None:
    a = advise(load_inputs(gpus=[8], gradient_gb=[1.0], bandwidth_gbps=[200.0, 800.0]))
    assert a.allreduce["nodes"].to_list() == [1, 1]
    assert a.allreduce["flat_ring_s"].n_unique() == 1
    assert (a.allreduce["flat_ring_s"] == a.allreduce["hierarchical_s"]).all()


def test_breakeven_favours_ib_when_busy() -> None:
    a = advise()
    be = a.breakeven
    at = be.filter((pl.col("utilisation_ratio") == 0.8) & (pl.col("penalty_ratio") == 0.1)).row(0, named=True)
    # ($2.0M - $1.15M) / 256 GPUs saved; 8760 h x 0.8 x 0.1 x $2.25 lost per GPU and year
    assert at["saving_per_gpu_usd"] == pytest.approx(850_000 / 256)
    assert at["lost_usd_per_gpu_per_year"] == pytest.approx(1576.8)
    assert at["payback_years"] == pytest.approx(850_000 / 256 / 1576.8)
    assert at["choice"] == "infiniband"
    # mixed, lightly used clusters: RoCE
    low = be.filter((pl.col("utilisation_ratio") == 0.3) & (pl.col("penalty_ratio") == 0.1)).row(0, named=True)
    assert low["choice"] == "roce"
    assert low["break_even_utilisation_ratio"] == pytest.approx(850_000 / 256 / (8760 * 3 * 0.1 * 2.25))
    assert be.height == 4 * 3


def test_load_inputs_from_toml(tmp_path: Path) -> None:
    f = tmp_path / "cluster.toml"
    f.write_text("[advise]\ngpus = [512, 2048]\ngpu_hour_usd = 3.5\ngradient_gb = 4\n")
    i = load_inputs(f, utilisation_ratio=[0.9])
    assert i.gpus == (512, 2048) and i.gpu_hour_usd == 3.5 and i.gradient_gb == (4.0,)
    assert i.sources["gpus"] == f"config {f}" and i.sources["utilisation_ratio"] == "override"
    assert i.sources["gpus_per_node"].startswith("fabricscope default")


@pytest.mark.parametrize(
    ("text", "msg"),
    [
        ("gpu = [8]\n", "unknown input 'gpu'"),
        ('gpus = ["eight"]\n', "must be a number"),
        ("utilisation_ratio = [1.5]\n", "out of range"),
        ("gpus_per_node = [8, 4]\n", "takes one value"),
        ("gpus = [\n", "config .*bad.toml"),
        ("gpus = []\n", "at least one value"),
        ("comm_bound_ratio = true\n", "must be a number"),
    ],
)
def test_bad_config_names_the_key(tmp_path: Path, text: str, msg: str) -> None:
    f = tmp_path / "bad.toml"
    f.write_text(text)
    with pytest.raises(ValueError, match=msg):
        load_inputs(f)


def test_measured_bandwidths_override_profiled_ones() -> None:
    tables = {
        "perftest_results": perf([perf_row("write_bw", "bw", 1048576, bw_average_gbit_per_s=391.6)]),
        "nccl_results": nccl_rows([(8589934592, 250.0, 249.0)], nodes=1, per_node=8),
        "nccl_ranks": ranks(H100, 8),
    }
    an = fabricscope.run_analysis(samples(counter("symbol_errors", [0.0])), tables=tables)
    a = advise(load_inputs(gpus=[64], gradient_gb=[1.0]), analysis=an)
    assert a.inputs.bandwidth_gbps == (391.6,)
    assert a.inputs.network_efficiency_ratio == 1.0
    assert a.inputs.nvlink_gb_per_s == 250.0
    assert a.sources["bandwidth_gbps"].startswith("measured: perftest write_bw on gpu017")
    assert "nccl-tests all_reduce busbw" in a.sources["nvlink_gb_per_s"]
    assert row(a)["network_bytes_per_s"] == pytest.approx(391.6e9 / 8)
    # what the user sets wins over what was measured
    b = advise(load_inputs(gpus=[64], gradient_gb=[1.0], bandwidth_gbps=[200.0]), analysis=an)
    assert b.inputs.bandwidth_gbps == (200.0,) and b.sources["bandwidth_gbps"] == "override"


def test_to_dict_is_the_json_document() -> None:
    d = json.loads(json.dumps(advise(load_inputs(gpus=[16])).to_dict()))
    assert d["schema"] == "fabricscope.advice/1"
    assert d["inputs"]["gpus"] == [16]
    assert len(d["allreduce"]) == 4 * 3 and len(d["breakeven"]) == 12
    assert set(d["sources"]) == set(d["inputs"])


def test_cli_tables_and_json(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert main(["advise", "--gpus", "256", "--gradient-gb", "1", "10", "--bandwidth-gbps", "400"]) == 0
    out = capsys.readouterr().out
    assert "hierarchical_ms" in out and "payback_years" in out and "gpus: override" in out
    assert main(["advise", "--gpus", "512", "--json", "-"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert {r["gpus"] for r in doc["allreduce"]} == {512}
    target = tmp_path / "out" / "advice.json"
    assert main(["advise", "--json", str(target)]) == 0
    assert json.loads(target.read_text())["schema"] == "fabricscope.advice/1"
    capsys.readouterr()
    assert main(["advise", "--utilisation", "2"]) == 3  # usage error: UNKNOWN
    assert "out of range" in capsys.readouterr().err
    assert main(["advise", "--gpus", "0"]) == 3
    assert main(["advise", "--config", str(tmp_path / "missing.toml")]) == 3
    assert "missing.toml" in capsys.readouterr().err


@pytest.mark.parametrize(
    "name",
    [
        "fabricscope.fabric.advise",
        "fabricscope.detect.bottleneck",
        "fabricscope.detect.underperformance",
        "fabricscope.fabric.profiles",
    ],
)
def test_docstring_examples(name: str) -> None:
    import doctest
    import importlib

    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0 and result.failed == 0


def test_cli_from_measured_inputs(capsys: pytest.CaptureFixture[str]) -> None:
    fix = Path(__file__).resolve().parent / "fixtures" / "perftest"
    assert "perftest_results" in fabricscope.load(fix / "write_bw_sweep_mib.txt").tables
    assert main(["advise", "--from", str(fix / "write_bw_sweep_mib.txt"), "--gpus", "16", "--json", "-"]) == 0
    doc = json.loads(capsys.readouterr().out)
    # 46688.00 MiB/s at 1 MiB = 391.6 Gb/s measured on mlx5_0
    assert doc["inputs"]["bandwidth_gbps"] == [pytest.approx(46688.00 * 2**20 * 8 / 1e9)]
    assert doc["sources"]["bandwidth_gbps"].startswith("measured: perftest write_bw on gpu017 mlx5_0")
