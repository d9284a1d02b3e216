from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SAMPLES = REPO / "sample_traces"
FIXTURES = REPO / "tests" / "fixtures"


@pytest.fixture
def samples_dir() -> Path:
    return SAMPLES


@pytest.fixture
def fixtures_dir() -> Path:
    return FIXTURES


@pytest.fixture(autouse=True)
def _run_from_repo_root(monkeypatch: pytest.MonkeyPatch) -> None:
    # Docstring examples use repository-relative paths such as "sample_traces".
    monkeypatch.chdir(REPO)
