"""A real Alertmanager (Debian's ``prometheus-alertmanager``) on 127.0.0.1, for tests and screenshots.

Nothing here imitates the server: the binary is started with its own configuration (one route
grouping by ``fabric`` and ``kind``, a receiver that sends nowhere, clustering off) on a free port.
"""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

INSTALL_HINT = "the prometheus-alertmanager binary is required: apt-get install -y prometheus-alertmanager"

#: The route the tests assert grouping against.
GROUP_BY = ("fabric", "kind")


def config(webhook: str | None) -> str:
    """The configuration: one route grouping by :data:`GROUP_BY`, to ``webhook`` (or nowhere)."""
    receiver = f"    webhook_configs:\n      - url: {webhook}\n        send_resolved: true\n" if webhook else ""
    return (
        "route:\n  receiver: test\n"
        f"  group_by: [{', '.join(GROUP_BY)}]\n"
        "  group_wait: 1s\n  group_interval: 1s\n  repeat_interval: 1h\n"
        f"receivers:\n  - name: test\n{receiver}"
    )


def binary() -> str:
    """Path of ``prometheus-alertmanager`` (Debian's name) or ``alertmanager``; raises when missing."""
    found = shutil.which("prometheus-alertmanager") or shutil.which("alertmanager")
    if not found:
        raise FileNotFoundError(INSTALL_HINT)
    return found


def free_port() -> int:
    """A TCP port nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def serve(
    workdir: Path,
    *,
    webhook: str | None = None,
    port: int | None = None,
    ui_path: Path | None = None,
    ready_timeout_s: float = 60.0,
) -> Iterator[str]:
    """Start Alertmanager (see :func:`config`) on ``port`` (default: a free one); yields its base URL.

    ``ui_path``: a directory with Alertmanager's web UI (Debian's binary ships none).
    """
    workdir.mkdir(parents=True, exist_ok=True)
    config_file = workdir / "alertmanager.yml"
    config_file.write_text(config(webhook))
    port = port or free_port()
    url = f"http://127.0.0.1:{port}"
    log = (workdir / "alertmanager.log").open("w")
    proc = subprocess.Popen(
        [
            binary(),
            f"--config.file={config_file}",
            f"--storage.path={workdir / 'data'}",
            f"--web.listen-address=127.0.0.1:{port}",
            f"--web.external-url={url}",
            "--cluster.listen-address=",  # no gossip port: several servers may run at once
            "--log.level=warn",
            *([f"--web.ui-path={ui_path}/"] if ui_path else []),
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + ready_timeout_s
        while True:
            if proc.poll() is not None:
                raise RuntimeError(
                    f"alertmanager exited with {proc.returncode}: {(workdir / 'alertmanager.log').read_text()}"
                )
            try:
                with urllib.request.urlopen(url + "/-/ready", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"alertmanager on {url} not ready after {ready_timeout_s} s")
            time.sleep(0.2)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


def get(url: str, path: str) -> Any:
    """GET a v2 API path and decode its JSON."""
    with urllib.request.urlopen(url + path, timeout=10) as r:
        return json.load(r)
