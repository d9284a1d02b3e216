"""The dashboard shows names from the data escaped: no Markdown line of theirs, no control character."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from tests.dashboard.conftest import APP, SAMPLES

# Simulated: symbol errors on symerr-gpu02, loss on symerr-gpu01 (sample_traces/README.md).
SCENARIO = SAMPLES / "scenarios" / "ib-symbol-errors" / "prometheus" / "federate.prom"
# In the file: raw ESC, an escaped newline starting a forged Markdown heading, a right-to-left override.
_INSTANCE = "gpu\x1b[2J\\n# FORGED heading\\n{host}\u202e:9100"
SHOWN = "gpu\\x1b[2J\\x0a# FORGED heading\\x0a{host}\\u202e"
_RAW = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


@pytest.fixture
def hostile_data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    text = re.sub(
        r'instance="symerr-(gpu0\d):9100"',
        lambda m: 'instance="' + _INSTANCE.format(host=m.group(1)) + '"',
        SCENARIO.read_text(),
    )
    (tmp_path / "hostile").mkdir()
    (tmp_path / "hostile" / "federate.prom").write_text(text)
    monkeypatch.setenv("FABRICSCOPE_DATA", str(tmp_path))
    return tmp_path


def _texts(at: AppTest) -> list[str]:
    return [e.value for e in (*at.markdown, *at.caption, *at.success)]


@pytest.mark.parametrize("page", ["overview", "port"])
def test_hostile_names_are_shown_escaped(hostile_data: Path, page: str) -> None:
    at = AppTest.from_file(str(APP), default_timeout=180)
    at.query_params["source"] = "hostile"
    at.switch_page(f"app_pages/{page}.py").run()
    assert not at.exception, [e.value for e in at.exception]
    texts = _texts(at)
    assert [t for t in texts if _RAW.search(t)] == []
    assert not any(line.startswith("# FORGED") for t in texts for line in t.splitlines())
    # The names are there, escaped (the incident on gpu02 on the overview; the worst port on the port page).
    assert any(SHOWN.format(host="gpu02") in t for t in texts), texts
