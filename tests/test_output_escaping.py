"""Text that came from the data never reaches an output raw: one rule at every door.

A Prometheus label value may hold anything: an escape sequence that clears the screen or sets a
terminal's title, an escaped newline followed by a forged Nagios line, a right-to-left override.
Every door (analyze's and cron's terminal output, cron's Nagios line, the textfile, the HTML and
Markdown reports, Alertmanager's labels) shows it through ``fabricscope.redaction.printable``:
escaped, one line, never a control character. ``--json`` keeps the value itself (JSON escapes it).
Markup in a label (a Markdown image a viewer fetches, an HTML tag with a script handler) is text
in the reports: HTML-escaped in the HTML one, ``fabricscope.redaction.markdown_text`` in the
Markdown one.
"""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests import alertmanager_server as am

from . import cli_runner
from .conftest import rendered_markdown as rendered

REPO = Path(__file__).resolve().parent.parent
# Simulated: symbol errors on symerr-gpu02 (critical), loss on symerr-gpu01 (sample_traces/README.md).
SCENARIO = REPO / "sample_traces" / "scenarios" / "ib-symbol-errors" / "prometheus" / "federate.prom"

# In the file: a raw ESC (clear screen), an escaped newline and a forged Nagios line, a raw OSC
# title sequence ended by BEL, and a right-to-left override.
_FORGED = "FABRICSCOPE OK - all fine | x=1"
_INSTANCE = "gpu\x1b[2J\\n{forged}\\n{host}\x1b]0;t\x07\u202e:9100"
# What the data holds once read (the exposition format's \n is a newline)...
HOSTILE = "gpu\x1b[2J\n{forged}\n{host}\x1b]0;t\x07\u202e"
# ...and how every output shows it.
SHOWN = "gpu\\x1b[2J\\x0a{forged}\\x0a{host}\\x1b]0;t\\x07\\u202e"

# Every character no output may carry raw: C0 but newline, DEL, C1, bidi controls, line separators.
_RAW = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def raw_controls(text: str) -> list[str]:
    """The control characters ``text`` carries raw (newline aside: outputs are made of lines)."""
    return _RAW.findall(text)


def forged_lines(text: str) -> int:
    return sum(1 for line in text.splitlines() if line.startswith("FABRICSCOPE OK"))


@pytest.fixture
def hostile(tmp_path: Path) -> Path:
    """The simulated scenario with every host's ``instance`` label replaced by a hostile one."""
    text = SCENARIO.read_text()
    out = re.sub(
        r'instance="symerr-(gpu0\d):9100"',
        lambda m: 'instance="' + _INSTANCE.format(forged=_FORGED, host=m.group(1)) + '"',
        text,
    )
    assert out.count("\x1b[2J") > 100  # the substitution took
    d = tmp_path / "in"
    d.mkdir()
    path = d / "federate.prom"
    path.write_text(out)
    return path


def fabricscope(*args: str) -> subprocess.CompletedProcess[str]:
    return cli_runner.fabricscope(*args, cwd=REPO)


def shown(host: str) -> str:
    return SHOWN.format(forged=_FORGED, host=host)


def test_analyze_shows_hostile_names_escaped_on_their_own_lines(hostile: Path) -> None:
    r = fabricscope("analyze", str(hostile))
    assert r.returncode == 2, r.stderr
    assert raw_controls(r.stdout) == [] and raw_controls(r.stderr) == []
    assert forged_lines(r.stdout) == 0
    # The names are there, escaped: the incident on gpu02's port and the last verdict line.
    assert f"link_errors on {shown('gpu02')} mlx5_0 port 1" in r.stdout
    assert r.stdout.splitlines()[-1].startswith("CRITICAL - 1 input(s), 14 finding(s)")
    # --json keeps the value as read (JSON escapes it).
    j = fabricscope("analyze", str(hostile), "--json", "-")
    doc = json.loads(j.stdout)
    hosts = {f["host"] for f in doc["findings"] if f["kind"] == "link_errors"}
    assert hosts == {HOSTILE.format(forged=_FORGED, host="gpu02")}
    assert raw_controls(j.stdout) == []


def test_cron_prints_one_nagios_line_and_an_escaped_textfile(hostile: Path, tmp_path: Path) -> None:
    textfile = tmp_path / "fabricscope.prom"
    r = fabricscope(
        "cron",
        "--inputs",
        str(hostile.parent),
        "--state",
        str(tmp_path / "state"),
        "--history",
        str(tmp_path / "hist"),
        "--textfile",
        str(textfile),
    )
    assert r.returncode == 2, r.stdout + r.stderr
    lines = r.stdout.splitlines()
    assert len(lines) == 1, r.stdout
    (line,) = lines
    # one page: the bad link's incident holds its own loss and its only sender's retransmissions
    assert line.startswith("FABRICSCOPE CRITICAL - 1 critical: link_errors ")
    # Exactly one "|": the one before the performance data (a "|" in a name is escaped too).
    text, perf = line.split("|")
    assert perf == " samples=4636 files=1 duplicates_dropped=0"
    escaped_bar = shown("gpu02").replace("|", "\\x7c")
    assert f"link_errors {escaped_bar}/mlx5_0/1" in text
    assert raw_controls(r.stdout) == [] and raw_controls(r.stderr) == []

    body = textfile.read_text()
    assert raw_controls(body) == []
    assert forged_lines(body) == 0
    # Still the exposition format node_exporter reads, the escaped names as label values.
    health = {
        s.labels["host"]: s.value
        for fam in text_string_to_metric_families(body)
        if fam.name == "fabricscope_port_health"
        for s in fam.samples
    }
    hostile_hosts = {h: v for h, v in health.items() if h.startswith("gpu")}
    assert hostile_hosts == {shown("gpu01"): 1.0, shown("gpu02"): 2.0, shown("gpu03"): 0.0, shown("gpu04"): 0.0}


@pytest.mark.parametrize("suffix", ["html", "md"])
def test_report_shows_hostile_names_escaped(hostile: Path, tmp_path: Path, suffix: str) -> None:
    out = tmp_path / f"report.{suffix}"
    r = fabricscope("report", str(hostile), "-o", str(out), "-q")
    assert r.returncode == 2, r.stdout + r.stderr
    assert raw_controls(r.stdout) == [] and raw_controls(r.stderr) == []
    body = out.read_text()
    assert raw_controls(body) == []
    assert forged_lines(body) == 0
    if suffix == "html":
        assert f"link_errors on {shown('gpu02')} mlx5_0 port 1" in body
    else:
        assert f"Root: link_errors on {shown('gpu02')} mlx5_0 port 1" in rendered(body)


# An image a Markdown viewer fetches, and an HTML tag whose handler a browser runs.
_MARKUP = "![b](http://host/beacon.png)<img src=x onerror=alert(1)>"


@pytest.mark.parametrize("suffix", ["html", "md"])
def test_report_shows_markup_in_a_label_as_text(tmp_path: Path, suffix: str) -> None:
    d = tmp_path / "in"
    d.mkdir()
    text = re.sub(
        r'instance="symerr-(gpu0\d):9100"', lambda m: f'instance="{_MARKUP}{m.group(1)}:9100"', SCENARIO.read_text()
    )
    (d / "federate.prom").write_text(text)
    out = tmp_path / f"report.{suffix}"
    r = fabricscope("report", str(d), "-o", str(out), "-q")
    assert r.returncode == 2, r.stdout + r.stderr
    body = out.read_text()
    if suffix == "html":
        # The report's own plots are <img> elements: the data's tag is what must not be there (its
        # Markdown is plain text in HTML).
        assert "<img src=x" not in body
        assert f"link_errors on {html.escape(_MARKUP)}gpu02" in body
    else:
        assert "<img" not in body and "![b](" not in body and "](http://host" not in body
        assert f"Root: link_errors on {_MARKUP}gpu02" in rendered(body)


def test_alertmanager_receives_escaped_labels(hostile: Path, tmp_path: Path) -> None:
    with am.serve(tmp_path / "am") as url:
        r = fabricscope(
            "cron",
            "--inputs",
            str(hostile.parent),
            "--state",
            str(tmp_path / "state"),
            "--history",
            str(tmp_path / "hist"),
            "--alertmanager",
            url,
        )
        assert r.returncode == 2, r.stdout + r.stderr
        assert len(r.stdout.splitlines()) == 1
        alerts = am.get(url, "/api/v2/alerts")
    # one alert, the bad link's; the sender whose retransmissions it explains is named in its hosts
    assert {a["labels"]["host"] for a in alerts} == {shown("gpu02")}
    assert all(shown("gpu01") in a["annotations"]["hosts"] for a in alerts)
    for a in alerts:
        assert raw_controls(json.dumps(a, ensure_ascii=False)) == []


def test_a_clean_name_is_shown_unchanged(tmp_path: Path) -> None:
    # The near miss: nothing to escape, nothing changed (the textfile names the host as read).
    d = tmp_path / "in"
    d.mkdir()
    shutil.copy(SCENARIO, d / "federate.prom")
    textfile = tmp_path / "fabricscope.prom"
    state, hist = str(tmp_path / "s"), str(tmp_path / "h")
    r = fabricscope("cron", "--inputs", str(d), "--state", state, "--history", hist, "--textfile", str(textfile))
    assert r.returncode == 2, r.stdout + r.stderr
    assert r.stdout.startswith("FABRICSCOPE CRITICAL - 1 critical: link_errors symerr-gpu02/mlx5_0/1 |")
    assert 'fabricscope_port_health{host="symerr-gpu02",device="mlx5_0",port="1"} 2' in textfile.read_text()
