"""Reading an input far larger than any buffer stays in bounded memory.

About 2 GB of valid Prometheus text is streamed through a FIFO (it never exists on disk) into
``fabricscope.scan`` in a fresh interpreter, whose peak RSS is then compared with its RSS before
reading. Slow: run with ``pytest -m slow tests/hostile/test_bounded_memory.py -s``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

STREAM_BYTES = 2 << 30

CHILD = textwrap.dedent(
    """
    import json, os, resource, sys, threading
    import fabricscope

    fifo, total = sys.argv[1], int(sys.argv[2])
    series = 2000
    template = "".join(
        f'node_infiniband_port_data_received_bytes_total{{device="mlx5_{i % 8}",instance="gpu{i // 8:03d}:9100",'
        f'port="1"}} {i * 4096} @TS@\\n'
        for i in range(series)
    ).encode()
    written = scrapes = 0

    def write() -> None:
        global written, scrapes
        with open(fifo, "wb") as f:
            while written < total:
                piece = template.replace(b"@TS@", str(1_764_686_822_000 + scrapes * 15_000).encode())
                f.write(piece)
                written += len(piece)
                scrapes += 1

    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    writer = threading.Thread(target=write)
    writer.start()
    rows = 0
    for frame in fabricscope.scan(fifo, format="prometheus", batch_rows=1 << 18):
        rows += frame.height
    writer.join()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"rows": rows, "expected_rows": scrapes * series, "bytes": written,
                      "rss_before_kib": before, "rss_peak_kib": peak}))
    """
)


@pytest.mark.slow
def test_two_gigabytes_stream_in_bounded_memory(tmp_path: Path) -> None:
    fifo = tmp_path / "scrapes.prom"
    os.mkfifo(fifo)
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(fifo), str(STREAM_BYTES)],
        capture_output=True,
        text=True,
        check=True,
        timeout=1800,
    )
    m = json.loads(out.stdout.strip().splitlines()[-1])
    print(
        f"\nstreamed {m['bytes'] / 1e9:.2f} GB, {m['rows']} rows; RSS {m['rss_before_kib'] // 1024} MiB before, "
        f"{m['rss_peak_kib'] // 1024} MiB peak"
    )
    assert m["rows"] == m["expected_rows"] and m["bytes"] >= STREAM_BYTES
    # Every row arrived, and reading 2 GB grew the process by less than 512 MiB: a 4 MiB chunk,
    # the 1 MiB line bound, four frames of 2^18 rows in flight.
    assert (m["rss_peak_kib"] - m["rss_before_kib"]) < 512 * 1024
