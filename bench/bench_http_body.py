"""Body read speed of ``fabricscope.transport.HttpClient``: two source trees, same run, interleaved.

    python bench/bench_http_body.py --baseline OTHER_CHECKOUT/python [--candidate python] [--mib 128] [--repeat 5]

A raw socket server on 127.0.0.1 sends one ``--mib`` MiB body (with its Content-Length) per
request, as fast as the kernel takes it. Each tree's client (``HttpClient.request``) reads it in
a fresh process, the two trees alternating ``--repeat`` times; the script prints each time, the
medians and their ratio (candidate / baseline). Only the ratio is meaningful on a shared machine.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import socket
import statistics
import subprocess
import sys
import threading
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

# Runs in the child, under the tree's PYTHONPATH: one request, its wall time and body size.
CLIENT = """
import sys, time
from fabricscope.transport import Connection, HttpClient
client = HttpClient(sys.argv[1], Connection(retries=0))
t = time.perf_counter()
_, body = client.request("/body")
print(time.perf_counter() - t, len(body))
"""


def serve(body_bytes: int) -> str:
    """Start the server thread; returns its base URL."""
    head = b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n" % body_bytes
    payload = head + b"x" * body_bytes
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)

    def loop() -> None:
        while True:
            conn, _ = server.accept()
            with conn:
                conn.recv(65536)
                with contextlib.suppress(OSError):  # a client that gave up
                    conn.sendall(payload)

    threading.Thread(target=loop, daemon=True).start()
    return f"http://127.0.0.1:{server.getsockname()[1]}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--baseline", required=True, help="the baseline tree's python/ directory")
    ap.add_argument("--candidate", default=str(REPO / "python"), help="the candidate's (default: this tree's)")
    ap.add_argument("--mib", type=int, default=128)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    size = args.mib << 20
    url = serve(size)
    times: dict[str, list[float]] = {"baseline": [], "candidate": []}
    for _ in range(args.repeat):
        for name in times:
            env = {**os.environ, "PYTHONPATH": getattr(args, name)}
            out = subprocess.run(
                [sys.executable, "-c", CLIENT, url], env=env, capture_output=True, text=True, check=True
            ).stdout.split()
            if int(out[1]) != size:
                raise SystemExit(f"{name}: read {out[1]} bytes, expected {size}")
            times[name].append(float(out[0]))
    for name, values in times.items():
        print(f"{name}: {', '.join(f'{v:.2f}' for v in values)} s")
    base, cand = statistics.median(times["baseline"]), statistics.median(times["candidate"])
    print(f"median baseline {base:.2f} s, candidate {cand:.2f} s, candidate/baseline {cand / base:.2f}")


if __name__ == "__main__":
    main()
