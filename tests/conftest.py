from __future__ import annotations

import os
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


# CI (.ci/run) lists the skips it accepts in FABRICSCOPE_ALLOWED_SKIPS, one reason (or a part of
# one) per line; any other skip fails the session there, so a missing dependency or a skip
# condition that always fires cannot turn tests into passes. Unset (a developer's run): no check.
_SKIPPED: list[tuple[str, str]] = []


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.skipped and not hasattr(report, "wasxfail"):
        longrepr = report.longrepr
        reason = str(longrepr[2]) if isinstance(longrepr, tuple) else str(longrepr)
        _SKIPPED.append((report.nodeid, reason))


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    allowed = os.environ.get("FABRICSCOPE_ALLOWED_SKIPS")
    # Under pytest-xdist the controller receives every worker's reports and judges them once.
    if allowed is None or hasattr(session.config, "workerinput"):
        return
    reasons = [line.strip() for line in allowed.splitlines() if line.strip()]
    refused = [(node, why) for node, why in _SKIPPED if not any(r in why for r in reasons)]
    if refused:
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        lines = [f"{len(refused)} skip(s) not listed in FABRICSCOPE_ALLOWED_SKIPS (.ci/run):"]
        lines += [f"  {node}: {why}" for node, why in refused]
        if reporter is not None:
            reporter.write_line("\n".join(lines), red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
