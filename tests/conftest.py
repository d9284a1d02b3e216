from __future__ import annotations

import html
import os
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SAMPLES = REPO / "sample_traces"
FIXTURES = REPO / "tests" / "fixtures"


def rendered_markdown(markdown: str) -> str:
    """What a Markdown source shows as text: its backslash escapes and character references resolved.

    Text from the data reaches Markdown (the report, the dashboard) through
    ``fabricscope.redaction.markdown_text``; tests compare what a person reads.
    """
    return html.unescape(re.sub(r"\\([!-/:-@\[-`{-~])", r"\1", markdown))


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
class SkipPolicy:
    """Every skip the session reports, judged against FABRICSCOPE_ALLOWED_SKIPS when it ends.

    A skip at collection (``pytest.skip(..., allow_module_level=True)``, a module's or a
    conftest's ``pytest.importorskip``) skips a whole module or directory: it counts too. The
    policy is a plugin of the session, not hooks of this conftest, because pytest sends a
    directory's collection report only to the conftests that directory loaded, and a conftest
    that skipped while loading is not one of them.
    """

    def __init__(self) -> None:
        self.skipped: list[tuple[str, str]] = []

    def _record(self, report: pytest.TestReport | pytest.CollectReport) -> None:
        longrepr = report.longrepr
        reason = str(longrepr[2]) if isinstance(longrepr, tuple) else str(longrepr)
        self.skipped.append((report.nodeid or ".", reason))

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.skipped and not hasattr(report, "wasxfail"):
            self._record(report)

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.skipped:
            self._record(report)

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        allowed = os.environ.get("FABRICSCOPE_ALLOWED_SKIPS")
        # Under pytest-xdist the controller receives every worker's reports and judges them once.
        if allowed is None or hasattr(session.config, "workerinput"):
            return
        reasons = [line.strip() for line in allowed.splitlines() if line.strip()]
        refused = [(node, why) for node, why in self.skipped if not any(r in why for r in reasons)]
        if refused:
            reporter = session.config.pluginmanager.get_plugin("terminalreporter")
            lines = [f"{len(refused)} skip(s) not listed in FABRICSCOPE_ALLOWED_SKIPS (.ci/run):"]
            lines += [f"  {node}: {why}" for node, why in refused]
            if reporter is not None:
                reporter.write_line("\n".join(lines), red=True)
            session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_configure(config: pytest.Config) -> None:
    config.pluginmanager.register(SkipPolicy(), "fabricscope-skip-policy")
