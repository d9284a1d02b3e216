"""Computations detectors share: made once per analysis input, in the input's own cache; views by name."""

from __future__ import annotations

import dataclasses
import json
import re
import subprocess
import sys
from pathlib import Path

import fabricscope
import polars as pl
import pytest
from fabricscope.detect import VIEWS, AnalysisInput, _shared
from fabricscope.detect.config import DEFAULTS
from fabricscope.detect.lossy_collapse import GO_BACK_N_SCHEMA

ROOT = Path(__file__).resolve().parent.parent
LOSSY = ROOT / "sample_traces" / "scenarios" / "lossy-collapse"
FABRICSCOPE = Path(sys.executable).parent / "fabricscope"


def _input() -> AnalysisInput:
    empty = pl.DataFrame()
    return AnalysisInput(samples=empty, rates=empty, gauges=empty, attributes=empty, config=DEFAULTS)


def test_a_computation_is_made_once_per_input() -> None:
    inp = _input()
    made: list[int] = []
    first = inp.once("twice_asked", lambda: made.append(1) or len(made))
    second = inp.once("twice_asked", lambda: made.append(1) or len(made))
    assert (first, second, made) == (1, 1, [1])
    # another input, or one copied with other frames, starts with a cache of its own
    assert _input().once("twice_asked", lambda: 7) == 7
    copy = dataclasses.replace(inp, rates=pl.DataFrame({"x": [1]}))
    assert copy.computed == {}
    assert copy.once("twice_asked", lambda: 9) == 9


def test_the_loss_intervals_are_computed_once_per_input_of_a_run(monkeypatch: pytest.MonkeyPatch) -> None:
    # packet_loss and lossless_misconfig read them on the partition, lossy_collapse and its go_back_n
    # view on the fabric-wide input: a frame is one partition, so two inputs and two computations.
    calls: list[int] = []
    compute = _shared._loss_intervals

    def counted(inp: AnalysisInput) -> pl.DataFrame:
        calls.append(inp.rates.height)
        return compute(inp)

    monkeypatch.setattr(_shared, "_loss_intervals", counted)
    samples = fabricscope.read(LOSSY)
    a = fabricscope.run_analysis(samples, keep_detail=True)
    assert len(calls) == 2
    assert set(a.findings["kind"].to_list()) >= {"packet_loss", "lossy_collapse"}
    assert a.views["go_back_n"].height > 0


def test_every_declared_view_is_in_the_analysis_with_its_schema() -> None:
    assert set(VIEWS) == {"layers", "go_back_n"}
    # without the detail (an engine named) no view is computed: each is empty, with its columns
    lean = fabricscope.run_analysis(LOSSY, engine="local")
    assert {n: v.schema for n, v in lean.views.items()} == {n: v.schema for n, v in VIEWS.items()}
    assert all(v.is_empty() for v in lean.views.values())
    full = fabricscope.run_analysis(LOSSY)
    assert full.views["go_back_n"].schema == GO_BACK_N_SCHEMA
    assert full.views["layers"].height > 0


def test_the_go_back_n_view_is_the_model_the_finding_states() -> None:
    # Through the front door: the CLI's finding and the API's view of the same run agree.
    run = subprocess.run(
        [str(FABRICSCOPE), "analyze", str(LOSSY), "--json", "-"], capture_output=True, text=True, check=False
    )
    assert run.returncode == 2, run.stderr  # critical: the collapse
    finding = next(f for f in json.loads(run.stdout)["findings"] if f["kind"] == "lossy_collapse")
    ev = finding["evidence"]
    view = fabricscope.run_analysis(LOSSY).views["go_back_n"]
    mine = view.filter(
        (pl.col("host") == finding["host"])
        & (pl.col("device") == finding["device"])
        & (pl.col("direction") == ev["direction"])
        & (pl.col("end") > pl.lit(finding["start"]).str.to_datetime(time_zone="UTC"))
    )
    assert mine["bdp_packets"].unique().to_list() == [pytest.approx(ev["bdp_packets"])]
    # the window's p sums events over packets; the intervals' p scatter around it
    assert mine["loss_ratio"].median() == pytest.approx(ev["p"], rel=0.05)
    assert mine["gbn_efficiency"].median() == pytest.approx(ev["gbn_efficiency"], abs=0.02)
    w = ev["bdp_packets"]
    assert mine["gbn_efficiency"].to_list() == pytest.approx([1 / (1 + p * w) for p in mine["loss_ratio"]])


def test_the_schema_doc_lists_every_view_with_its_columns() -> None:
    text = (ROOT / "docs" / "schema.md").read_text(encoding="utf-8")
    section = text.split("## views", 1)[1].split("\n## ", 1)[0]
    rows = [line.split("|")[1:-1] for line in section.splitlines() if line.startswith("| `")]
    documented = {cells[0].strip(" `"): cells[3] for cells in rows}
    assert set(documented) == set(VIEWS)
    for name, view in VIEWS.items():
        columns = [c for c in re.findall(r"`([a-z_]+)`", documented[name])]
        assert [c for c in columns if c in view.schema.names()] == view.schema.names(), name


@pytest.mark.parametrize("partitions", [2, 3])
def test_views_are_the_same_whichever_way_the_hosts_are_partitioned(partitions: int) -> None:
    # Each partition's input has its own cache: no partition sees another's frames.
    whole = fabricscope.run_analysis(LOSSY)
    split = fabricscope.run_analysis(LOSSY, engine="local", partitions=partitions, keep_detail=True)
    for name, view in whole.views.items():
        keys = [c for c in ("host", "device", "port", "direction", "window_start", "layer", "end") if c in view.columns]
        assert view.height > 0, name
        assert split.views[name].sort(keys, nulls_last=True).equals(view.sort(keys, nulls_last=True)), name
