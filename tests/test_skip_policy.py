"""The skip policy itself (tests/conftest.py, FABRICSCOPE_ALLOWED_SKIPS in .ci/run).

Each case runs pytest in a subprocess on a temporary test directory holding a copy of the
project's conftest, as CI runs the suite: a skip whose reason is not listed fails the run, whether
it skips one test, a whole module at collection, or a whole directory from its conftest.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
# Collect tests/ (so tests/dashboard/conftest.py loads during collection, as in the whole suite)
# but only the dashboard's directory.
ONLY_DASHBOARD = ["--ignore-glob=tests/test_*.py", "--ignore=tests/hostile"]
PYTEST = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist"]

# name -> (file, content): each skips in its own way.
CASES = {
    "module_skip": (
        "test_module_skip.py",
        "import pytest\n"
        'pytest.skip("chromium is missing here", allow_module_level=True)\n'
        "def test_never_runs():\n    pass\n",
    ),
    "module_importorskip": (
        "test_module_importorskip.py",
        'import pytest\npytest.importorskip("fabricscope_no_such_module")\ndef test_never_runs():\n    pass\n',
    ),
    "conftest_importorskip": (
        "extra/conftest.py",
        'import pytest\npytest.importorskip("fabricscope_no_such_extra", reason="the extra is not installed")\n',
    ),
    "runtime_skip": (
        "test_runtime_skip.py",
        'import pytest\ndef test_skips():\n    pytest.skip("the server is not installed")\n',
    ),
}
REASONS = {
    "module_skip": "chromium is missing here",
    "module_importorskip": "fabricscope_no_such_module",
    "conftest_importorskip": "the extra is not installed",
    "runtime_skip": "the server is not installed",
}


def run_pytest(tmp_path: Path, case: str, allowed: str | None) -> subprocess.CompletedProcess[str]:
    """pytest on a directory with the project's conftest, one passing test and the ``case``."""
    root = tmp_path / "suite"
    root.mkdir()
    shutil.copy(REPO / "tests" / "conftest.py", root / "conftest.py")
    (root / "test_passes.py").write_text("def test_passes():\n    assert 1 + 1 == 2\n")
    name, text = CASES[case]
    (root / name).parent.mkdir(parents=True, exist_ok=True)
    (root / name).write_text(text)
    if name.endswith("conftest.py"):
        (root / name).with_name("test_in_extra.py").write_text("def test_never_runs():\n    pass\n")
    env = {k: v for k, v in os.environ.items() if k != "FABRICSCOPE_ALLOWED_SKIPS"}
    if allowed is not None:
        env["FABRICSCOPE_ALLOWED_SKIPS"] = allowed
    return subprocess.run(
        [*PYTEST, str(root)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=root,
        env=env,
    )


@pytest.mark.parametrize("case", sorted(CASES))
def test_an_unlisted_skip_fails_the_run(tmp_path: Path, case: str) -> None:
    r = run_pytest(tmp_path, case, allowed="this process reads files whatever their mode (root)")
    assert r.returncode == 1, r.stdout + r.stderr
    assert "1 skip(s) not listed in FABRICSCOPE_ALLOWED_SKIPS (.ci/run):" in r.stdout
    assert REASONS[case] in r.stdout
    assert "1 passed, 1 skipped" in r.stdout


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_listed_skip_passes(tmp_path: Path, case: str) -> None:
    r = run_pytest(tmp_path, case, allowed=f"something else\n{REASONS[case]}\n")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "not listed" not in r.stdout
    assert "1 passed, 1 skipped" in r.stdout


def test_without_the_list_no_skip_is_judged(tmp_path: Path) -> None:
    # A developer's run: skips are reported, not failed.
    r = run_pytest(tmp_path, "module_skip", allowed=None)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "1 passed, 1 skipped" in r.stdout


def test_dashboard_tests_fail_without_streamlit(tmp_path: Path) -> None:
    # The dashboard tests' conftest, with streamlit made unimportable (a None entry in sys.modules
    # is what import machinery treats as "not importable"): collection fails instead of skipping.
    (tmp_path / "no_streamlit.py").write_text('import sys\nsys.modules["streamlit"] = None\n')
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])}
    r = subprocess.run(
        [*PYTEST, "-p", "no_streamlit", "--collect-only", *ONLY_DASHBOARD, "tests"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=REPO,
        env=env,
    )
    assert r.returncode == pytest.ExitCode.INTERRUPTED, r.stdout + r.stderr
    assert "ERROR tests/dashboard - Failed" in r.stdout
    assert "the dashboard tests need the dashboard extra: pip install '.[dashboard]'" in r.stdout + r.stderr
