"""A real Prometheus server over our sample traces, for tests and benchmarks.

Our Prometheus text files (``/federate`` dumps with millisecond timestamps) become one
OpenMetrics file (timestamps in seconds, exact to the millisecond), ``promtool tsdb
create-blocks-from openmetrics`` turns it into TSDB blocks, and ``prometheus`` serves that storage
on 127.0.0.1 on a free port. Nothing here imitates the server: it is Debian's ``prometheus``.
"""

from __future__ import annotations

import http.server
import json
import shutil
import socket
import subprocess
import threading
import time
import urllib.request
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

INSTALL_HINT = "the prometheus and promtool binaries are required: apt-get install -y prometheus"


def binaries() -> tuple[str, str]:
    """Paths of ``prometheus`` and ``promtool``; raises when either is missing."""
    prometheus, promtool = shutil.which("prometheus"), shutil.which("promtool")
    if not prometheus or not promtool:
        raise FileNotFoundError(INSTALL_HINT)
    return prometheus, promtool


def prometheus_text_to_openmetrics(sources: Iterable[Path], out: Path) -> int:
    """Write the samples of Prometheus text files (millisecond timestamps) as OpenMetrics.

    Comments are dropped (every family becomes ``unknown``, as ``untyped`` was); each sample keeps
    its labels and value text, and its timestamp becomes seconds with three decimals, so the
    server stores exactly the millisecond it was written with. Returns the number of samples.
    """
    n = 0
    with out.open("w") as f:
        for src in sources:
            for line in src.read_text().splitlines():
                if not line or line.startswith("#"):
                    continue
                head, _, ts = line.rpartition(" ")
                ms = int(ts)
                f.write(f"{head} {ms // 1000}.{ms % 1000:03d}\n")
                n += 1
        f.write("# EOF\n")
    return n


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def serve(openmetrics: Path, workdir: Path, *, ready_timeout_s: float = 60.0, reuse: bool = False) -> Iterator[str]:
    """Build a TSDB from ``openmetrics`` and serve it; yields the server's base URL.

    ``reuse``: serve the TSDB already in ``workdir/data`` when there is one (benchmarks).
    """
    prometheus, promtool = binaries()
    data = workdir / "data"
    if not (reuse and data.is_dir() and any(data.iterdir())):
        subprocess.run(
            [promtool, "tsdb", "create-blocks-from", "openmetrics", str(openmetrics), str(data)],
            check=True,
            capture_output=True,
        )
    config = workdir / "prometheus.yml"
    config.write_text("global: {}\nscrape_configs: []\n")
    port = _free_port()
    log = (workdir / "prometheus.log").open("w")
    proc = subprocess.Popen(
        [
            prometheus,
            f"--config.file={config}",
            f"--storage.tsdb.path={data}",
            # The traces are dated years apart from the machine clock: keep every block.
            "--storage.tsdb.retention.time=100y",
            f"--web.listen-address=127.0.0.1:{port}",
            "--log.level=warn",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + ready_timeout_s
        while True:
            if proc.poll() is not None:
                raise RuntimeError(
                    f"prometheus exited with {proc.returncode}: {(workdir / 'prometheus.log').read_text()}"
                )
            try:
                with urllib.request.urlopen(url + "/-/ready", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"prometheus on {url} not ready after {ready_timeout_s} s")
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


@contextmanager
def serve_files(files: Iterable[Path], workdir: Path) -> Iterator[str]:
    """Serve Prometheus text files (see :func:`prometheus_text_to_openmetrics`); yields the base URL."""
    prometheus_text_to_openmetrics(files, workdir / "traces.om")
    with serve(workdir / "traces.om", workdir) as url:
        yield url


class Endpoint:
    """A local HTTP server whose handler the test chooses; records the requests it saw.

    For what is not a Prometheus server: an exporter's ``/metrics``, a proxy that refuses.
    """

    def __init__(self, handle: Callable[[http.server.BaseHTTPRequestHandler], None]) -> None:
        self.requests: list[tuple[str, dict[str, str]]] = []
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                outer.requests.append((self.path, dict(self.headers)))
                handle(self)

            do_POST = do_GET  # noqa: N815

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> Endpoint:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def build_info(url: str) -> dict[str, object]:
    """The server's ``/api/v1/status/buildinfo`` data."""
    with urllib.request.urlopen(url + "/api/v1/status/buildinfo", timeout=10) as r:
        return dict(json.load(r)["data"])
