"""Load the dashboard's Overview in headless Chromium (Debian's chromium) and save a screenshot.

Usage: python .ci/wheel_page.py URL SCREENSHOT.png  (run with the interpreter of the venv under test)
"""

from __future__ import annotations

import os
import sys

from playwright.sync_api import sync_playwright

CHROMIUM = os.environ.get("FABRICSCOPE_CHROMIUM", "/usr/bin/chromium")
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update"]


def main(url: str, shot: str) -> int:
    """Load the page, check it, save the screenshot; 0 when it rendered without errors."""
    errors: list[str] = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto(f"{url}/?source=scenarios/pfc-storm", wait_until="domcontentloaded")
            # The pfc-storm scenario is critical (sample_traces/README.md).
            page.get_by_text("CRITICAL", exact=False).first.wait_for(state="visible", timeout=120_000)
            page.wait_for_selector('[data-testid="stStatusWidget"]', state="detached", timeout=120_000)
            if page.locator('[data-testid="stException"]').count():
                errors.append("the Overview shows an exception")
            page.screenshot(path=shot, full_page=True)
        finally:
            browser.close()
    if errors:
        print("\n".join(errors), file=sys.stderr)
        return 1
    print(f"Overview rendered in Chromium; screenshot {shot}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1], sys.argv[2]))
