"""Shared helpers for the dashboard tests: the app, its data layer, and page runs."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

pytest.importorskip("streamlit", reason="the dashboard extra is not installed (pip install '.[dashboard]')")

ROOT = Path(__file__).resolve().parents[2]
APP = ROOT / "dashboards" / "app.py"
SAMPLES = ROOT / "sample_traces"

# The pages import the data layer as `data` (Streamlit puts the app's folder on sys.path); the
# tests import the same module so both share one set of caches.
if str(APP.parent) not in sys.path:
    sys.path.insert(0, str(APP.parent))


@pytest.fixture(autouse=True)
def _data_dir(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FABRICSCOPE_DATA", str(SAMPLES))
