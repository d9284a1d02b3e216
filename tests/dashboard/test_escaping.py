"""The dashboard shows names from the data escaped: no Markdown or HTML of theirs, no control character."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from tests.conftest import rendered_markdown as rendered
from tests.dashboard.conftest import APP, SAMPLES

# Simulated: symbol errors on symerr-gpu02, loss on symerr-gpu01 (sample_traces/README.md).
SCENARIO = SAMPLES / "scenarios" / "ib-symbol-errors" / "prometheus" / "federate.prom"
# In the file: raw ESC, an escaped newline starting a forged Markdown heading, a right-to-left override.
_INSTANCE = "gpu\x1b[2J\\n# FORGED heading\\n{host}\u202e:9100"
SHOWN = "gpu\\x1b[2J\\x0a# FORGED heading\\x0a{host}\\u202e"
# Markup a viewer's browser would act on: an image it fetches, and HTML with a script handler.
_MARKUP_INSTANCE = "![b](http://host/beacon.png)<img src=x onerror=alert(1)>{host}:9100"
MARKUP_SHOWN = "![b](http://host/beacon.png)<img src=x onerror=alert(1)>{host}"
_RAW = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def _hostile(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, instance: str) -> Path:
    text = re.sub(
        r'instance="symerr-(gpu0\d):9100"',
        lambda m: 'instance="' + instance.format(host=m.group(1)) + '"',
        SCENARIO.read_text(),
    )
    (tmp_path / "hostile").mkdir()
    (tmp_path / "hostile" / "federate.prom").write_text(text)
    monkeypatch.setenv("FABRICSCOPE_DATA", str(tmp_path))
    return tmp_path


@pytest.fixture
def hostile_data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return _hostile(tmp_path, monkeypatch, _INSTANCE)


@pytest.fixture
def markup_data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return _hostile(tmp_path, monkeypatch, _MARKUP_INSTANCE)


def _texts(at: AppTest) -> list[str]:
    return [e.value for e in (*at.markdown, *at.caption, *at.success, *at.error, *at.info)]


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
    assert any(SHOWN.format(host="gpu02") in rendered(t) for t in texts), texts


@pytest.mark.parametrize("page", ["overview", "port"])
def test_markup_in_a_label_is_shown_as_text(markup_data: Path, page: str) -> None:
    at = AppTest.from_file(str(APP), default_timeout=180)
    at.query_params["source"] = "hostile"
    at.switch_page(f"app_pages/{page}.py").run()
    assert not at.exception, [e.value for e in at.exception]
    texts = _texts(at)
    # No image, link or HTML tag of the data's survives in what Streamlit renders as Markdown ...
    for t in texts:
        # (an unescaped "![" or "](": an image or a link; a raw tag; an autolink)
        assert not re.search(r"(?<!\\)(!\[|\]\()", t) and "<img" not in t and "http://" not in t, t
    # ... and the name reads as it is, every character of it.
    assert any(MARKUP_SHOWN.format(host="gpu02") in rendered(t) for t in texts), texts
