"""Findings on every sample trace and scenario stay exactly what they were (engine changes are not
allowed to move a single number).

`tests/fixtures/golden/findings.json` holds the findings document of `fabricscope analyze` on each
directory of `sample_traces/` and `sample_traces/scenarios/`, computed with the Polars rate engine
(`rates_reference`; the first version was committed before the native kernel existed). Regenerate
it only for an intended change of findings: `python tests/test_findings_golden.py --write`, and add a
row to `tests/fixtures/golden/CHANGES.md` with the reason and the independent check.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from fabricscope.incidents.findings import document
from fabricscope.pipeline import run_analysis

REPO = Path(__file__).resolve().parent.parent
GOLDEN = REPO / "tests" / "fixtures" / "golden" / "findings.json"
FABRICSCOPE = Path(sys.executable).parent / "fabricscope"


def _targets() -> list[str]:
    base = REPO / "sample_traces"
    dirs = [p for p in sorted(base.iterdir()) if p.is_dir() and p.name != "scenarios"]
    dirs += sorted(p for p in (base / "scenarios").iterdir() if p.is_dir())
    return [p.relative_to(REPO).as_posix() for p in dirs]


def _findings(target: str) -> list[dict]:
    analysis = run_analysis(REPO / target)
    return document(analysis.findings, analysis.inputs)["findings"]


def _golden() -> dict[str, list[dict]]:
    return json.loads(GOLDEN.read_text())


def _assert_same_findings(found: list[dict], golden: list[dict]) -> None:
    """Every finding identical; order identical up to ties the document's ordering leaves open
    (severity, kind, host, device, port: two metrics of one port may come in either order)."""
    assert [_rank(f) for f in found] == [_rank(f) for f in golden]
    assert sorted(found, key=_full) == sorted(golden, key=_full)


def _rank(f: dict) -> tuple:
    return (f["severity"], f["kind"], f["host"], f["device"], f["port"])


def _full(f: dict) -> str:
    return json.dumps(f, sort_keys=True)


CHANGES = GOLDEN.with_name("CHANGES.md")


def _sha256(path: Path) -> str:
    import hashlib

    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_every_golden_version_states_its_reason_and_check() -> None:
    # A row "| <sha256> | reason | independent check |" for the file as it is: golden findings
    # never change silently, regenerated from the output they are meant to check.
    digest = _sha256(GOLDEN)
    rows = [line.split("|")[1:-1] for line in CHANGES.read_text().splitlines() if line.startswith(f"| {digest} ")]
    assert rows, f"{GOLDEN.name} (sha256 {digest}) has no row in {CHANGES.name}: state the reason and the check"
    _, reason, check = (cell.strip() for cell in rows[0])
    assert reason and check


def test_golden_covers_every_sample_directory() -> None:
    assert sorted(_golden()) == sorted(_targets())
    assert len(_targets()) >= 24


@pytest.mark.parametrize("target", _targets())
def test_findings_identical_to_golden(target: str) -> None:
    _assert_same_findings(_findings(target), _golden()[target])


@pytest.mark.parametrize("target", ["sample_traces/prometheus", "sample_traces/scenarios/trap-counter-reset"])
def test_cli_findings_identical_to_golden(target: str) -> None:
    proc = subprocess.run(
        [str(FABRICSCOPE), "analyze", target, "--json", "-"], cwd=REPO, capture_output=True, text=True, check=False
    )
    assert proc.returncode in (0, 1, 2), proc.stderr
    golden = _golden()[target]
    # The CLI document may add keys to a finding (incident links); the golden keys must match.
    keys = set(golden[0]) if golden else set()
    found = [{k: v for k, v in f.items() if k in keys} for f in json.loads(proc.stdout)["findings"]]
    _assert_same_findings(found, golden)


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        sys.exit("usage: python tests/test_findings_golden.py --write")
    # The golden file records the Polars reference engine's findings.
    import fabricscope.engines.base as engine_base
    from fabricscope.detect.rates import rates_reference

    engine_base.rates = rates_reference  # type: ignore[assignment]
    GOLDEN.parent.mkdir(parents=True, exist_ok=True)
    GOLDEN.write_text(json.dumps({t: _findings(t) for t in _targets()}, indent=1, sort_keys=True) + "\n")
    print(f"sha256 {_sha256(GOLDEN)}: add its row (reason, independent check) to {CHANGES}")
