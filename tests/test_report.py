"""fabricscope report: renders for every sample trace, self-contained, parses, names every finding."""

from __future__ import annotations

import base64
import gzip
import html
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import polars as pl
import pytest
from fabricscope.doors.cron import CronOptions, run_cron
from fabricscope.doors.report.build import gather, render_html, render_markdown, write_report

from .conftest import SAMPLES

TRACE_DIRS = sorted(
    [p for p in SAMPLES.iterdir() if p.is_dir() and p.name != "scenarios"]
    + [p for p in (SAMPLES / "scenarios").iterdir() if p.is_dir()]
)


class _Collect(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.text: list[str] = []
        self.urls: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        for k, v in attrs:
            # Anything the browser would fetch: src, href (xlink:href inside SVG stays in-document).
            if k in ("src", "href") and v and not v.startswith(("#", "data:")):
                self.urls.append(v)

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def _parse(text: str) -> _Collect:
    p = _Collect()
    p.feed(text)
    p.close()
    return p


@pytest.mark.parametrize("trace", TRACE_DIRS, ids=lambda p: p.name)
def test_report_renders_for_every_sample_trace(trace: Path, tmp_path: Path) -> None:
    data = gather([trace], strict=False)
    # Plot the worst port of each trace here (a plot takes about a second; more ports per trace
    # are slower, not more telling).
    from fabricscope.doors.report.plots import _plot_port, _port_frames

    for key, pr, pf in _port_frames(data, 1):
        svg = _plot_port(key, pr, pf, data.gauges)
        data.plots.append(("/".join(str(k) for k in key if k is not None), svg))
        assert isinstance(svg, str) and svg.startswith("<svg")
    doc = render_html(data)
    parsed = _parse(doc)
    assert parsed.urls == []  # self-contained: nothing to fetch
    assert "script" not in parsed.tags
    text = html.unescape("".join(parsed.text))
    for r in data.findings.iter_rows(named=True):
        assert r["message"] in text
        assert r["kind"] in text
    md = render_markdown(data)
    for r in data.findings.iter_rows(named=True):
        assert r["kind"] in md
    # The SVG drawn for HTML shows in Markdown too, as a data URI.
    assert md.count("](data:image/svg+xml;base64,") == len(data.plots)


def test_report_cli_html_and_markdown(tmp_path: Path) -> None:
    trace = SAMPLES / "scenarios" / "pfc-storm"
    out = tmp_path / "r.html"
    r = subprocess.run(
        [sys.executable, "-m", "fabricscope", "report", str(trace), "-o", str(out), "--max-ports", "2", "-q"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 2, r.stderr  # Nagios CRITICAL: the storm, as analyze says
    assert r.stderr == ""  # --quiet: no progress
    # the storm, and the pause gpu02 receives (no LLDP or job relates it to the storm): two incidents
    assert "CRITICAL, 2 incident(s), 8 finding(s), 2 port plot(s)" in r.stdout
    doc = out.read_text()
    parsed = _parse(doc)
    assert parsed.tags.count("svg") == 2
    assert "data:image/png" not in doc  # each plot drawn once, in the format the report shows
    text = html.unescape("".join(parsed.text))
    assert "pfc_storm" in text and "CRITICAL" in text
    # The threshold source of each finding is shown.
    assert "PFC watchdog" in text or "mlx5" in text
    md = tmp_path / "r.md"
    r = subprocess.run(
        [sys.executable, "-m", "fabricscope", "report", str(trace), "-o", str(md), "--max-ports", "1", "-q"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 2, r.stderr
    m = md.read_text()
    assert m.startswith("# fabricscope report") and "## Status: CRITICAL" in m
    assert m.count("data:image/png;base64,") == 1
    assert "<svg" not in m and "image/svg" not in m


def test_html_report_shows_a_png_plot_as_an_image_of_its_data_uri() -> None:
    data = gather([SAMPLES / "scenarios" / "pfc-storm"], strict=False)
    png = b"\x89PNG\r\n\x1a\n" + bytes(range(40))
    data.plots.append(("gpu01/mlx5_0/1 <b>\x1b[31m", png))
    parsed = _parse(render_html(data))
    assert parsed.urls == []
    assert parsed.tags.count("img") == 1
    doc = render_html(data)
    assert f"src='data:image/png;base64,{base64.b64encode(png).decode()}'" in doc
    # The title as every text of the report: control characters escaped, then HTML's escaping.
    assert "alt='gpu01/mlx5_0/1 &lt;b&gt;\\x1b[31m'" in doc and "\x1b" not in doc


def test_report_over_a_history_shows_lifecycle(tmp_path: Path) -> None:
    inp = SAMPLES / "scenarios" / "pfc-storm" / "ethtool"
    run_cron(CronOptions(inputs=[str(inp)], state=tmp_path / "s", history=tmp_path / "h"))
    out = tmp_path / "h.html"
    data = write_report([tmp_path / "h"], out, max_ports=1)
    direct = gather([inp])
    key = ["kind", "severity", "host", "device", "port", "priority"]
    assert (
        data.findings.select(key)
        .sort(key, nulls_last=True)
        .equals(direct.findings.select(key).sort(key, nulls_last=True))
    )
    text = html.unescape("".join(_parse(out.read_text()).text))
    assert "Fault lifecycle (history)" in text
    assert data.inputs[0]["format"] == "history"


def test_threshold_sources_are_extracted_from_nested_evidence() -> None:
    from fabricscope.doors.report.content import _sources_of

    ev = '{"threshold_source": "A", "also_fired": [{"source": "B"}, {"threshold_source": "A"}], "n": 1}'
    assert _sources_of(ev) == ["A", "B"]
    assert _sources_of("not json") == []


def test_empty_findings_render(tmp_path: Path) -> None:
    from fabricscope.doors.report import ReportData
    from fabricscope.incidents.findings import empty_findings

    d = ReportData("t", ["x"], empty_findings(), pl.DataFrame(), pl.DataFrame(), [])
    doc = render_html(d)
    assert "No findings." in doc and "OK" in doc
    _parse(doc)


def test_bottleneck_view_and_advisor_sections() -> None:
    import importlib.util

    data = gather([SAMPLES / "scenarios" / "pfc-storm" / "ethtool"])
    doc = render_html(data)
    text = html.unescape("".join(_parse(doc).text))
    assert "Bottlenecks" in text and "Advisor" in text
    if data.layers is not None and data.layers.height:
        assert "Utilisation per layer" in text
        assert "utilisation_ratio" in text
    if importlib.util.find_spec("fabricscope.fabric.advise") is not None:
        assert isinstance(data.advice, dict), data.advice
        assert "allreduce" in text and "breakeven" in text
    else:
        assert "not available" in text


def test_report_leads_with_the_verdict_and_keeps_inputs_last() -> None:
    from fabricscope.doors.report.content import _groups

    data = gather([SAMPLES / "scenarios" / "pfc-storm"])
    doc = render_html(data)
    # The order a reader meets: verdict, findings, evidence plots, ..., inputs (collapsed) last.
    marks = ["class='verdict critical'", "id='findings'", "id='plots'", "id='bottlenecks'", "id='inputs'"]
    positions = [doc.index(m) for m in marks]
    assert positions == sorted(positions)
    inputs = doc[doc.index("id='inputs'") :]
    assert inputs.index("<details>") < inputs.index("<table>")  # the inputs table is inside the collapsed block
    # The verdict sentence leads with the incident's root cause (pfc_storm, not the worst-ranked
    # finding, which may be one of its consequences) and its action; the first findings group is
    # the worst finding's port.
    worst = data.findings.row(0, named=True)
    assert worst["severity"] == "critical"
    head = html.unescape(doc[: doc.index("id='findings'")])
    incident, alone = data.incidents
    assert incident.root["kind"] == "pfc_storm"
    assert (alone.rule, alone.root["kind"], alone.root["host"]) == ("single_fault", "pfc_congestion", "pfcstorm-gpu02")
    assert "2 incident(s), root cause(s): pfc_storm on pfcstorm-gpu03" in head
    assert f"First action: {incident.action}" in head
    groups = _groups(data.findings.filter(pl.col("severity") != "info"))
    assert groups[0][1][0]["severity"] == "critical"
    ranks = [min({"critical": 0, "warning": 1}[r["severity"]] for r in rows) for _, rows in groups]
    assert ranks == sorted(ranks)
    first_group = html.unescape(doc[doc.index("id='findings'") :]).split("<h3>")[1]
    assert groups[0][0] in first_group
    # Every finding of a group is about that group's port.
    for port, rows in groups:
        assert all(port.startswith(str(r["host"])) for r in rows)
    # Info findings (data quality) are collapsed.
    n_info = data.findings.filter(pl.col("severity") == "info").height
    if n_info:
        assert f"<summary>{n_info} info finding(s)" in doc
    # Tables fit the page (fixed layout, wrapping cells) and print keeps rows and plots whole.
    assert "table.findings{table-layout:fixed}" in doc and "overflow-wrap:anywhere" in doc
    assert "@media print" in doc and "break-inside:avoid" in doc


def test_report_inputs_are_summarised_per_format() -> None:
    data = gather([SAMPLES / "scenarios" / "pfc-storm"])
    assert data.formats is not None
    by = {r["format"]: r for r in data.formats.iter_rows(named=True)}
    n_files = sum(1 for i in data.inputs if i["format"] == "ethtool")
    assert by["ethtool"]["files"] == n_files > 0
    # records count sample and attribute rows; samples only the former
    assert 0 < by["ethtool"]["samples"] <= sum(i["records"] for i in data.inputs if i["format"] == "ethtool")
    assert by["ethtool"]["first"] is not None and by["ethtool"]["first"] <= by["ethtool"]["last"]
    md = render_markdown(data)
    assert md.index("## Findings") < md.index("## Per-port time series") < md.index("## Inputs")


def test_report_without_matplotlib_is_whole_but_for_its_plots(tmp_path: Path) -> None:
    # A core install (no `report` extra): the command still writes the report, says where the plots
    # would be and which extra adds them, and exits with the verdict (no traceback).
    out = tmp_path / "r.html"
    code = (
        "import sys; sys.modules['matplotlib'] = None\n"
        "from fabricscope.doors.cli import main\n"
        f"raise SystemExit(main(['report', {str(SAMPLES / 'scenarios' / 'pfc-storm')!r}, '-o', {str(out)!r}, '-q']))"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert r.returncode == 2, r.stderr
    assert "Traceback" not in r.stderr
    assert "no plots (the `report` extra adds them)" in r.stdout
    text = html.unescape(out.read_text())
    assert "Plots omitted: matplotlib is not installed (pip install 'fabricscope[report]' adds them)." in text
    assert "<svg" not in text and "pfc_storm" in text


@pytest.mark.parametrize("lenient", [False, True], ids=["strict", "lenient"])
def test_report_with_an_unreadable_input_is_unknown_as_analyze_says(tmp_path: Path, lenient: bool) -> None:
    # sample_traces/ib has no critical finding: one truncated .gz beside it makes the verdict UNKNOWN
    # (exit 3) with and without --lenient, and the report is still written with the other inputs.
    src = tmp_path / "ib"
    shutil.copytree(SAMPLES / "ib", src)
    (src / "counters.prom.gz").write_bytes(gzip.compress(b"x 1\n" * 200, mtime=0)[:30])
    out = tmp_path / "r.md"
    flags = ["--lenient"] if lenient else []
    cmd = [sys.executable, "-m", "fabricscope"]
    r = subprocess.run(
        [*cmd, "report", str(src), "-o", str(out), "--max-ports", "0", "-q", *flags],
        capture_output=True,
        text=True,
        timeout=300,
    )
    a = subprocess.run([*cmd, "analyze", str(src), *flags], capture_output=True, text=True, timeout=300)
    assert r.returncode == a.returncode == 3, r.stdout + r.stderr
    assert "UNKNOWN, 0 incident(s), 1 finding(s)" in r.stdout
    assert f"could not read {src / 'counters.prom.gz'}: " in r.stdout
    assert "## Status: UNKNOWN" in out.read_text()


def test_a_report_on_many_hosts_lists_the_worst_and_summarises_the_rest(tmp_path: Path) -> None:
    # 80 hosts x 8 HCAs, healthy: one bottleneck info finding per host, more than the 50 listed.
    src = tmp_path / "fabric"
    cmd = [sys.executable, "-m", "fabricscope"]
    sim = subprocess.run([*cmd, "simulate", str(src), "--scale", "640x12x3"], capture_output=True, text=True)
    assert sim.returncode == 0, sim.stderr
    for out in (tmp_path / "r.html", tmp_path / "r.md"):
        r = subprocess.run(
            [*cmd, "report", str(src), "-o", str(out), "--max-ports", "1", "-q"],
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert r.returncode == 0, r.stderr
        assert "OK, 0 incident(s), 80 finding(s)" in r.stdout
    text = html.unescape("".join(_parse((tmp_path / "r.html").read_text()).text))
    # The info findings: 50 one by one (one port each), the other 30 in one line per kind.
    assert text.count("scale-gpu") >= 50
    assert "30 more finding(s) on 30 host(s), summarised per kind (every finding: fabricscope analyze --json):" in text
    assert "info  bottleneck: 30 finding(s) on 30 host(s); worst: scale-gpu" in text
    # The bottleneck section: the 50 busiest of 80.
    assert "The 50 busiest of 80 shown; every one: fabricscope analyze --json." in text
    md = (tmp_path / "r.md").read_text()
    assert "30 more finding(s) on 30 host(s)" in md and "- info  bottleneck: 30 finding(s) on 30 host(s)" in md
    assert md.split("## Per-port time series")[0].count("\n### scale-gpu") == 50
