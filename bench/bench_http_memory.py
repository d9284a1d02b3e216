"""Peak memory of an HTTP answer: a valid 250 MiB body and an oversized one, two trees, same run.

    python bench/bench_http_memory.py --baseline OTHER_CHECKOUT/python [--candidate python] [--mib 250]

A raw socket server on 127.0.0.1 plays a Prometheus server that answers the query API (remote
read: 404): the buildinfo probe, the ``__name__`` label values, and one range-selector answer of
about ``--mib`` MiB of valid JSON (node_exporter InfiniBand counters, 1,000 series over 15
minutes, sent with its Content-Length) to every ``/api/v1/query``. Each tree runs, in a fresh
process whose peak RSS the kernel reports (``wait4``):

* ``request``: ``HttpClient.request`` of the answer alone (the body as the pull hands it to the
  decoder): peak RSS over the process's RSS before the request, divided by the body size;
* ``parse``: ``fabricscope parse URL -o OUT.parquet`` of the same 15 minutes (probe, label values,
  the answer, decoding into the samples table, writing it): peak RSS divided by the body size;
* ``oversized``: the same pull with ``--limit max_document_bytes`` set to 5/6 of the body
  (300 MiB over a 250 MiB budget, scaled), the answer sent with its Content-Length and sent
  chunked (as Prometheus sends a large answer): the exit status, the queries the server saw
  and the peak RSS divided by the body size.

Ratios are against the body size measured in the same run, so they hold on a busy machine; the
numbers go in BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
METRIC = "node_infiniband_port_data_received_bytes_total"
T0_S = 1_796_400_000
SPAN_S = 900
SERIES = 1000

# Runs in the child under the tree's PYTHONPATH: RSS before, one request, the body size.
REQUEST = """
import resource, sys
from fabricscope.transport import Connection, HttpClient
def rss():
    with open("/proc/self/status") as f:
        return next(int(l.split()[1]) for l in f if l.startswith("VmRSS:")) * 1024
client = HttpClient(sys.argv[1], Connection(retries=0), max_body_bytes=int(sys.argv[2]))
print(rss())
_, body = client.request("/api/v1/query")
print(len(body))
"""


def answer(mib: int) -> bytes:
    """A valid range-selector answer of about ``mib`` MiB: ``SERIES`` series over ``SPAN_S`` seconds."""
    # One sample is about 33 bytes of JSON: `[1796400000.123,"1000000012345"],`.
    per_series = max(2, (mib << 20) // 33 // SERIES)
    step_ms = SPAN_S * 1000 // per_series
    result = []
    for s in range(SERIES):
        values = ",".join(
            f'[{T0_S + (i * step_ms) // 1000}.{(i * step_ms) % 1000:03d},"{1_000_000_000_000 + i * 4096 + s}"]'
            for i in range(per_series)
        )
        metric = json.dumps({"__name__": METRIC, "device": f"mlx5_{s % 8}", "port": "1", "instance": f"gpu{s}:9100"})
        result.append(f'{{"metric":{metric},"values":[{values}]}}')
    return ('{"status":"success","data":{"resultType":"matrix","result":[' + ",".join(result) + "]}}").encode()


def _response(payload: bytes, status: str = "200 OK") -> bytes:
    return b"HTTP/1.1 %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n" % (
        status.encode(),
        len(payload),
    )


class Server:
    """The local server; counts the ``/api/v1/query`` requests it answered."""

    def __init__(self, body: bytes) -> None:
        self.body, self.queries = body, 0
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        threading.Thread(target=self._loop, daemon=True).start()

    def _loop(self) -> None:
        while True:
            conn, _ = self.sock.accept()
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        with conn, contextlib.suppress(OSError):
            request = conn.recv(65536)
            path = request.split(b" ", 2)[1].split(b"?")[0]
            # Under /chunked the answer is sent chunked, without a Content-Length (as Prometheus
            # sends a large answer): the client learns its size only by reading it.
            chunked = path.startswith(b"/chunked/")
            path = path.removeprefix(b"/chunked")
            if path == b"/api/v1/status/buildinfo":
                doc = b'{"status":"success","data":{"version":"2.45.0"}}'
                conn.sendall(_response(doc) + doc)
            elif path == b"/api/v1/label/__name__/values":
                doc = b'{"status":"success","data":["' + METRIC.encode() + b'"]}'
                conn.sendall(_response(doc) + doc)
            elif path == b"/api/v1/query" and chunked:
                self.queries += 1
                conn.sendall(
                    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n"
                    b"Connection: close\r\n\r\n"
                )
                view = memoryview(self.body)
                for i in range(0, len(view), 1 << 20):
                    piece = view[i : i + (1 << 20)]
                    conn.sendall(b"%x\r\n" % len(piece))
                    conn.sendall(piece)
                    conn.sendall(b"\r\n")
                conn.sendall(b"0\r\n\r\n")
            elif path == b"/api/v1/query":
                self.queries += 1
                conn.sendall(_response(self.body))
                conn.sendall(self.body)
            elif path == b"/count":
                doc = json.dumps({"queries": self.queries, "body_bytes": len(self.body)}).encode()
                conn.sendall(_response(doc) + doc)
            else:
                conn.sendall(_response(b"", "404 Not Found"))


def _run(cmd: list[str], tree: str) -> tuple[int, str, int]:
    """Exit status, stdout and peak RSS (bytes) of ``cmd`` under ``tree``'s PYTHONPATH."""
    env = {**os.environ, "PYTHONPATH": tree}
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(cmd, env=env, stdout=out, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        out.seek(0)
        err.seek(0)
        code = os.waitstatus_to_exitcode(status)
        if code not in (0, 3):
            raise SystemExit(f"{cmd} failed ({code}): {err.read().decode()}")
        return code, out.read().decode(), usage.ru_maxrss * 1024


def _count(url: str) -> dict[str, int]:
    with urllib.request.urlopen(url + "/count", timeout=30) as r:
        return dict(json.load(r))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--baseline", required=True, help="the baseline tree's python/ directory")
    ap.add_argument("--candidate", default=str(REPO / "python"), help="the candidate's (default: this tree's)")
    ap.add_argument("--mib", type=int, default=250)
    ap.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.serve:
        print(Server(answer(args.mib)).url, flush=True)
        threading.Event().wait()
        return
    # The server runs in a process of its own: a child forked from a process holding the body
    # would count the parent's pages in its peak RSS (Linux keeps the high-water mark across exec).
    served = subprocess.Popen(
        [sys.executable, __file__, "--baseline", "-", "--mib", str(args.mib), "--serve"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert served.stdout is not None
        _measure(args, served.stdout.readline().strip())
    finally:
        served.terminate()
        served.wait()


def _measure(args: argparse.Namespace, url: str) -> None:
    size = _count(url)["body_bytes"]
    fabricscope = str(Path(sys.executable).with_name("fabricscope"))
    since, until = f"{T0_S}", f"{T0_S + SPAN_S}"
    print(f"body: {size / 2**20:.1f} MiB of JSON ({SERIES} series over {SPAN_S} s)")
    print(
        "| tree | `HttpClient.request`: peak - start, / body | `parse`: peak, / body "
        "| oversized, Content-Length: exit, queries, peak / body | oversized, chunked: exit, queries, peak / body |"
    )
    print("|---|---|---|---|---|")
    for name in ("baseline", "candidate"):
        tree = getattr(args, name)
        _, out, peak = _run([sys.executable, "-c", REQUEST, url, str(size)], tree)
        start, got = (int(x) for x in out.split())
        if got != size:
            raise SystemExit(f"{name}: read {got} bytes, expected {size}")
        cells = [f"{(peak - start) / 2**20:.0f} MiB, {(peak - start) / size:.2f}x"]
        pull = ["--since", since, "--until", until, "--concurrency", "1"]
        with tempfile.TemporaryDirectory() as tmp:
            code, _, parse_peak = _run([fabricscope, "parse", url, *pull, "-o", f"{tmp}/out.parquet", "-q"], tree)
            if code != 0:
                raise SystemExit(f"{name}: parse of the valid answer failed")
        cells.append(f"{parse_peak / 2**20:.0f} MiB, {parse_peak / size:.2f}x")
        for base in (url, url + "/chunked"):
            before = _count(url)["queries"]
            budget = f"max_document_bytes={size * 5 // 6}"
            code, _, over_peak = _run([fabricscope, "parse", base, *pull, "--limit", budget, "-q"], tree)
            queries = _count(url)["queries"] - before
            cells.append(f"{code}, {queries}, {over_peak / 2**20:.0f} MiB, {over_peak / size:.2f}x")
        print(f"| {name} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
