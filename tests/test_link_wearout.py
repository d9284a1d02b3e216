"""link_wearout: the rising link is named with when it will cross, days ahead; the others are not."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np
import pytest
from fabricscope.detect.link_wearout import poisson_trend
from fabricscope.simulate.wearout import WearLink, scenario_links, write_wearout

from . import cli_runner


def _cli(*args: str, process: bool = True) -> subprocess.CompletedProcess[str]:
    return cli_runner.fabricscope(*args, process=process)


@pytest.fixture(scope="module")
def fourteen_days(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    out = tmp_path_factory.mktemp("wearout")
    truth = write_wearout(out, scenario_links())
    return out, truth


def test_poisson_trend_recovers_a_known_doubling_time() -> None:
    rng = np.random.default_rng(3)
    t = np.arange(-336.0, 0.0) + 0.5
    counts = rng.poisson(5.0 * np.exp(np.log(2) / 48.0 * t)).astype(float)
    fit = poisson_trend(t, counts, np.ones_like(t))
    assert fit is not None
    a, b, se, dispersion = fit
    assert np.log(2) / b == pytest.approx(48.0, rel=0.1)
    assert np.exp(a) == pytest.approx(5.0, rel=0.15)
    assert b / se > 10 and dispersion == pytest.approx(1.0, abs=0.2)
    # nothing to fit: no counts, or one instant
    assert poisson_trend(t, np.zeros_like(t), np.ones_like(t)) is None
    assert poisson_trend(np.zeros(5), np.ones(5), np.ones(5)) is None


def test_cli_analyze_on_fourteen_daily_files_names_the_rising_links_with_their_eta(
    fourteen_days: tuple[Path, dict], tmp_path: Path
) -> None:
    out, truth = fourteen_days
    doc_path = tmp_path / "f.json"
    r = _cli("analyze", str(out), "--json", str(doc_path))
    assert r.returncode == 1, r.stdout + r.stderr  # warnings only: nothing has crossed yet
    doc = json.loads(doc_path.read_text())
    wear = {f["host"]: f for f in doc["findings"] if f["kind"] == "link_wearout"}
    rising = {x["host"]: x for x in truth["links"] if x["wearing_out"]}
    assert set(wear) == set(rising) == {"wear-rising.example", "wear-sparse.example"}
    for host, f in wear.items():
        true_eta = rising[host]["eta_s"]
        assert true_eta == pytest.approx(9.17 * 86400, rel=0.01)
        ev = f["evidence"]
        # within a factor of two of the truth (the fit is much closer on this seed)
        assert true_eta / 2 <= ev["threshold_eta_s"] <= true_eta * 2
        assert ev["threshold_eta_s"] == pytest.approx(true_eta, rel=0.25)
        assert ev["doubling_time_s"] == pytest.approx(48 * 3600, rel=0.25)
        assert ev["z"] >= 3 and ev["p_value"] < 1e-3
        assert ev["threshold_per_h"] == 120.0 and "NVSentinel" in ev["threshold_source"]
        assert f["severity"] == "warning" and f["device"] == "mlx5_0" and f["port"] == 1
    assert wear["wear-rising.example"]["evidence"]["hours_used"] == 335
    assert wear["wear-rising.example"]["evidence"]["samples_used"] == 335
    # six-hourly scrapes: the same trend from 55 intervals
    assert wear["wear-sparse.example"]["evidence"]["samples_used"] == 55
    # the steady, burst and reset links raise no link_wearout and no link_errors
    for host in ("wear-steady.example", "wear-burst.example", "wear-reset.example"):
        assert not [f for f in doc["findings"] if f["host"] == host and f["kind"] in ("link_wearout", "link_errors")]
    assert "crosses the 120/h warning rate in" in r.stdout


def test_cli_a_rate_already_over_the_threshold_is_link_errors_not_a_forecast(tmp_path: Path) -> None:
    write_wearout(tmp_path, [WearLink("worn.example", "rising", 250.0, doubling_h=100.0)], days=4)
    r = _cli("analyze", str(tmp_path), "--json", str(tmp_path / "f.json"))
    doc = json.loads((tmp_path / "f.json").read_text())
    kinds = {f["kind"] for f in doc["findings"] if f["host"] == "worn.example"}
    assert "link_errors" in kinds and "link_wearout" not in kinds, r.stdout


def test_cli_too_short_a_history_is_no_trend(tmp_path: Path) -> None:
    # two days of a fast-rising rate: below the 72 h minimum span
    write_wearout(tmp_path, [WearLink("young.example", "rising", 5.0, doubling_h=12.0)], days=2)
    r = _cli("analyze", str(tmp_path), "--json", str(tmp_path / "f.json"))
    doc = json.loads((tmp_path / "f.json").read_text())
    assert not [f for f in doc["findings"] if f["kind"] == "link_wearout"], r.stdout


def test_cli_fourteen_daily_cron_runs_keep_the_roll_up_and_forecast_like_analyze(tmp_path: Path) -> None:
    from . import alertmanager_server as am

    days = tmp_path / "days"
    links = [
        WearLink("cr-rising.example", "rising", 5.0, doubling_h=48.0),
        WearLink("cr-steady.example", "steady", 6.0),
    ]
    truth = write_wearout(days, links)
    inputs = tmp_path / "in"
    inputs.mkdir()
    daily = sorted(days.glob("node-*.prom"))
    assert len(daily) == 14

    def run(*extra: str, process: bool = True) -> subprocess.CompletedProcess[str]:
        return _cli(
            "cron",
            "--inputs",
            str(inputs),
            "--state",
            str(tmp_path / "state"),
            "--history",
            str(tmp_path / "history"),
            "--json",
            str(tmp_path / "run.json"),
            "--textfile",
            str(tmp_path / "fabricscope.prom"),
            *extra,
            process=process,
        )

    # The first and the last day run the console script in a process; the days between the CLI in
    # this one (a Python start-up each would be most of the test's time).
    codes = []
    for i, day in enumerate(daily[:-1]):
        (inputs / day.name).write_bytes(day.read_bytes())
        codes.append(run(process=i == 0).returncode)
    # the trend needs three days and enough errors to be significant: quiet until then (this seed:
    # from the 8th day on, two weeks before the crossing), a warning from then on
    first = codes.index(1)
    assert first >= 3 and codes[first:] == [1] * (len(codes) - first) and codes[:first] == [0] * first, codes
    (inputs / daily[-1].name).write_bytes(daily[-1].read_bytes())
    with am.serve(tmp_path / "am") as url:
        last = run("--alertmanager", url, "--fabric", "lab-w")
        assert last.returncode == 1, last.stdout + last.stderr
        (alert,) = am.get(url, "/api/v2/alerts")
    # every run read one new day; the forecast spans all fourteen through the roll-up
    doc = json.loads((tmp_path / "run.json").read_text())
    assert doc["run"]["samples"] == 48
    (f,) = [x for x in doc["findings"] if x["kind"] == "link_wearout"]
    true_eta = next(x["eta_s"] for x in truth["links"] if x["wearing_out"])
    assert f["host"] == "cr-rising.example"
    assert true_eta / 2 <= f["evidence"]["threshold_eta_s"] <= true_eta * 2
    assert f["evidence"]["hours_used"] == 335
    # the same forecast as analyze over the same fourteen files
    a = _cli("analyze", str(days), "--json", str(tmp_path / "a.json"))
    (g,) = [x for x in json.loads((tmp_path / "a.json").read_text())["findings"] if x["kind"] == "link_wearout"]
    assert f["evidence"]["threshold_eta_s"] == pytest.approx(g["evidence"]["threshold_eta_s"], rel=1e-6), a.stdout
    # the doors: the textfile's forecast and the alert's crossing time
    text = (tmp_path / "fabricscope.prom").read_text()
    line = next(x for x in text.splitlines() if x.startswith("fabricscope_link_wearout_eta_seconds{"))
    assert 'host="cr-rising.example",device="mlx5_0",port="1",counter="symbol_errors"' in line
    assert float(line.rsplit(" ", 1)[1]) >= 0
    assert alert["labels"]["kind"] == "link_wearout" and alert["labels"]["host"] == "cr-rising.example"
    assert alert["annotations"]["threshold_eta_s"] == f"{f['evidence']['threshold_eta_s']:.0f}"
    assert alert["annotations"]["threshold_eta"].startswith("2026-12-")
    assert "crosses the 120/h warning rate" in alert["annotations"]["summary"]


def test_cli_report_lists_links_to_replace_soonest_first(fourteen_days: tuple[Path, dict], tmp_path: Path) -> None:
    out, _truth = fourteen_days
    md = tmp_path / "r.md"
    # No plots: the links-to-replace section is what is read.
    r = _cli("report", str(out), "-o", str(md), "--max-ports", "0", "-q")
    assert r.returncode == 1, r.stdout + r.stderr
    text = md.read_text()
    section = text.split("## Links to replace (2)", 1)[1].split("\n## ", 1)[0]
    rows = [x for x in section.splitlines() if x.startswith("| wear-")]
    assert [x.split(" | ")[0] for x in rows] == ["| wear-sparse.example/mlx5_0/1", "| wear-rising.example/mlx5_0/1"]
    days = [float(x.split(" | ")[2]) for x in rows]
    assert days == sorted(days) and all(4.5 < d < 18.5 for d in days)
    html_out = tmp_path / "r.html"
    assert _cli("report", str(out), "-o", str(html_out), "--max-ports", "0", "-q").returncode == 1
    assert "<h2 id='replace'>Links to replace (2)</h2>" in html_out.read_text()


def test_cli_daily_cron_runs_over_year_old_files_forecast_like_analyze(tmp_path: Path) -> None:
    """A replay: files whose samples are a year old. The roll-up keeps the hours by the data's
    time (the newest sample), so cron names the rising link as analyze does on the same files."""
    import datetime as dt

    days = tmp_path / "days"
    start = dt.datetime(2025, 11, 16, tzinfo=dt.timezone.utc)
    links = [
        WearLink("old-rising.example", "rising", 5.0, doubling_h=48.0),
        WearLink("old-steady.example", "steady", 6.0),
    ]
    write_wearout(days, links, start=start)
    inputs = tmp_path / "in"
    inputs.mkdir()
    args = ["cron", "--inputs", str(inputs), "--state", str(tmp_path / "s"), "--history", str(tmp_path / "h")]
    for day in sorted(days.glob("node-*.prom")):
        (inputs / day.name).write_bytes(day.read_bytes())
        run = _cli(*args, "--json", str(tmp_path / "run.json"), process=False)
    assert run.returncode == 1, run.stdout + run.stderr
    doc = json.loads((tmp_path / "run.json").read_text())
    (f,) = [x for x in doc["findings"] if x["kind"] == "link_wearout"]
    assert f["host"] == "old-rising.example" and f["evidence"]["hours_used"] == 335
    a = _cli("analyze", str(days), "--json", str(tmp_path / "a.json"), process=False)
    (g,) = [x for x in json.loads((tmp_path / "a.json").read_text())["findings"] if x["kind"] == "link_wearout"]
    assert f["evidence"]["threshold_eta_s"] == pytest.approx(g["evidence"]["threshold_eta_s"], rel=1e-6), a.stdout
    # the history keeps the replayed days: retention counts back from the data's newest sample
    assert len(list((tmp_path / "h" / "samples").glob("date=2025-*"))) == 14
