"""Screenshots of a fabricscope incident in Alertmanager's own web UI: firing, then resolved.

Starts Debian's prometheus-alertmanager on 127.0.0.1 (tests/alertmanager_server.py), runs
`fabricscope cron --alertmanager` three times over the pfc-storm scenario's ethtool log as it
grows (the storm, the storm going on, new data after the storm), and photographs the UI with
headless Chromium (Debian's, through Playwright) after the first and the last run.

Debian's package serves no web UI (its page says so). The UI matching Debian's 0.25 API is the
one the upstream v0.25.0 release embeds, generated into asset/assets_vfsdata.go (Apache-2.0):
`extract-ui` unpacks it (`git -C alertmanager show v0.25.0:asset/assets_vfsdata.go > vfs.go`).

Usage (from the repository root, in the venv with the `browser` extra):
    python docs/alerting/screenshots.py extract-ui vfs.go UI_DIR
    python docs/alerting/screenshots.py UI_DIR [OUT_DIR]
"""

from __future__ import annotations

import codecs
import gzip
import itertools
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from playwright.sync_api import sync_playwright

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests import alertmanager_server as am  # noqa: E402

ETH = ROOT / "sample_traces" / "scenarios" / "pfc-storm" / "ethtool" / "pfcstorm-gpu03-eth0.log"
CUTS_AT = [1796400120, 1796400200]
CHROMIUM = os.environ.get("FABRICSCOPE_CHROMIUM", "/usr/bin/chromium")
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update"]


def extract_ui(vfsdata_go: str, outdir: str) -> int:
    """Unpack the files vfsgen embedded under /static/ (gzip-compressed Go byte strings)."""
    src = Path(vfsdata_go).read_text(encoding="utf-8")
    entry = re.compile(
        r'"/static/([^"]+)": &vfsgen\u06f0(CompressedFileInfo|FileInfo)\{.*?(?:compressedContent|content): '
        r'\[\]byte\("((?:[^"\\]|\\.)*)"\)',
        re.S,
    )
    n = 0
    for name, kind, literal in entry.findall(src):
        data = codecs.escape_decode(literal.encode("latin-1"))[0]
        target = Path(outdir) / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(gzip.decompress(data) if kind == "CompressedFileInfo" else data)
        n += 1
    print(f"{n} UI files under {outdir}")
    return 0 if n else 1


def _cron(work: Path, url: str) -> dict[str, object]:
    subprocess.run(
        [
            sys.executable,
            "-m",
            "fabricscope",
            "cron",
            "--inputs",
            str(work / "in"),
            "--state",
            str(work / "state"),
            "--history",
            str(work / "hist"),
            "--json",
            str(work / "run.json"),
            "--alertmanager",
            url,
            "--fabric",
            "lab-a",
            "--evidence-url",
            "http://dashboard.example:8501/?incident={incident_id}",
        ],
        check=False,
        capture_output=True,
        timeout=300,
    )
    return dict(json.loads((work / "run.json").read_text()))


def _shot(url: str, out: Path, expand: bool) -> None:
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 800})
            page.goto(f"{url}/#/alerts", wait_until="networkidle")
            page.wait_for_timeout(1500)
            if expand:
                # Open the alert's annotations (title, action, description, evidence).
                info = page.get_by_text("Info", exact=False)
                if info.count():
                    info.first.click(timeout=5000)
                    page.wait_for_timeout(500)
            page.screenshot(path=str(out), full_page=True)
        finally:
            browser.close()


def main(ui: str, outdir: str) -> int:
    """Run the three crons against a fresh Alertmanager; write the two PNGs into ``outdir``."""
    out = Path(outdir)
    out.mkdir(parents=True, exist_ok=True)
    data = ETH.read_bytes()
    text = data.decode()
    bounds = [0, *(text.index(f"\n{t}\n") + 1 for t in CUTS_AT), len(data)]
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        (work / "in").mkdir()
        with am.serve(work / "am", ui_path=Path(ui).resolve()) as url:
            for i, (a, b) in enumerate(itertools.pairwise(bounds)):
                with (work / "in" / ETH.name).open("ab") as f:
                    f.write(data[a:b])
                doc = _cron(work, url)
                print(f"run {i + 1}: status {doc['status']}, alertmanager {doc.get('alertmanager')}")
                if i == 0:
                    _shot(url, out / "alertmanager-firing.png", expand=True)
            _shot(url, out / "alertmanager-resolved.png", expand=False)
    print(f"wrote {out / 'alertmanager-firing.png'} and {out / 'alertmanager-resolved.png'}")
    return 0


if __name__ == "__main__":
    if sys.argv[1] == "extract-ui":
        raise SystemExit(extract_ui(sys.argv[2], sys.argv[3]))
    raise SystemExit(main(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else "docs/alerting"))
