"""Generators of hostile inputs, built at test time from the real fixtures (nothing committed).

Each function returns bytes or writes into a directory the test owns (``tmp_path``); the large
ones (100 MB lines, bombs, multi-GB streams) are generated on the fly and never stored.
"""

from __future__ import annotations

import gzip
import random
import struct
import zlib
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

#: One real example per format: the input every structural truncation is cut from.
FIXTURES: dict[str, Path] = {
    "prometheus": REPO / "tests/fixtures/prometheus/dcgm.prom",
    "openmetrics": REPO / "tests/fixtures/prometheus/concatenated.om",
    "ethtool": REPO / "tests/fixtures/ethtool/constructed/ens1f0np0-ethtool-loop.log",
    "sysfs-grep": REPO / "sample_traces/scenarios/ecn-incast/sysfs-grep/incast-gpu01-counters.txt",
    "perfquery": REPO / "tests/fixtures/ib/perfquery/0x506b4b03005c2740.out",
    "ibqueryerrors": REPO / "tests/fixtures/ib/constructed/ibqueryerrors.txt",
    "iblinkinfo": REPO / "tests/fixtures/ib/constructed/iblinkinfo.txt",
    "ibnetdiscover": REPO / "tests/fixtures/ib/ibnetdiscover/test.out",
    "ibdiagnet-db-csv": REPO / "tests/fixtures/ib/constructed/ibdiagnet2.db_csv",
    "ibdiagnet-net-dump": REPO / "tests/fixtures/ib/constructed/ibdiagnet2.net_dump",
    "ibswinfo": REPO / "tests/fixtures/ib/ibswinfo/test1.out",
    "ufm-csv": REPO / "tests/fixtures/ib/constructed/ufm_metrics.csv",
    "ufm-json": REPO / "tests/fixtures/ib/ufm/small_telemetry.json",
    "telegraf": REPO / "tests/fixtures/ib/telegraf/infiniband_readme.lp",
    "nvidia-smi-nvlink": REPO / "tests/fixtures/nvidia-smi/nvlink-e-gb300.txt",
    "nccl-tests": REPO / "tests/fixtures/nccl-tests/ring-8gb-ib.txt",
    "nccl-tests-json": REPO / "tests/fixtures/nccl-tests/constructed-report.json",
    "perftest": REPO / "tests/fixtures/perftest/write_bw_sweep_mib.txt",
    "cxl-list": REPO / "tests/fixtures/cxl/cxl-list-memdevs.json",
    "perf-stat-cxl": REPO / "tests/fixtures/cxl/perf-stat-interval.csv",
    "pcap": REPO / "tests/fixtures/captures/synth_roce_pfc_le_us.pcap",
    "pcapng": REPO / "tests/fixtures/captures/synth_roce_pfc_le.pcapng",
}

BINARY = {"pcap", "pcapng"}


def pcap_record_boundaries(data: bytes) -> list[int]:
    """Offsets where each classic pcap record starts (after the 24-byte file header), and the end."""
    endian = "<" if data[:4] in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1") else ">"
    out, off = [24], 24
    while off + 16 <= len(data):
        (incl,) = struct.unpack_from(endian + "I", data, off + 8)
        off += 16 + incl
        out.append(off)
    return out


def pcapng_block_boundaries(data: bytes) -> list[int]:
    """Offsets where each pcapng block starts, and the end."""
    endian = "<" if data[8:12] == b"\x4d\x3c\x2b\x1a" else ">"
    out, off = [0], 0
    while off + 12 <= len(data):
        (length,) = struct.unpack_from(endian + "I", data, off + 4)
        if length < 12:
            break
        off += length
        out.append(off)
    return out


def structural_boundaries(fmt: str, data: bytes, most: int = 80) -> list[int]:
    """Every record boundary of ``data`` (line ends for text, records/blocks for captures),
    thinned evenly to at most ``most`` so long fixtures stay quick."""
    if fmt == "pcap":
        cuts = pcap_record_boundaries(data)
    elif fmt == "pcapng":
        cuts = pcapng_block_boundaries(data)
    else:
        cuts = [i + 1 for i, b in enumerate(data) if b == 0x0A]
    cuts = [c for c in cuts if 0 < c < len(data)]
    if len(cuts) > most:
        step = len(cuts) / most
        cuts = [cuts[int(i * step)] for i in range(most)]
    return cuts


def random_offsets(data: bytes, n: int = 24, seed: int = 12) -> list[int]:
    """``n`` reproducible random cut points inside ``data``."""
    rng = random.Random(seed)
    return sorted({rng.randrange(1, len(data)) for _ in range(n)})


def gzip_bomb(path: Path, head: bytes, expanded_bytes: int) -> int:
    """Write ``head`` followed by ``expanded_bytes`` newlines as a gzip stream (about 1000:1) and
    return its compressed size. Streams in 1 MiB pieces: the bomb never exists uncompressed."""
    comp = zlib.compressobj(9, zlib.DEFLATED, 31)
    block = b"\n" * (1 << 20)
    with path.open("wb") as f:
        f.write(comp.compress(head))
        for _ in range(expanded_bytes >> 20):
            f.write(comp.compress(block))
        f.write(comp.flush())
    return path.stat().st_size


def zstd_bomb(path: Path, head: bytes, expanded_bytes: int) -> int:
    """As :func:`gzip_bomb` with zstd (ratios far above 1000:1)."""
    import zstandard

    with path.open("wb") as f, zstandard.ZstdCompressor(level=3).stream_writer(f) as w:
        w.write(head)
        block = b"\n" * (1 << 20)
        for _ in range(expanded_bytes >> 20):
            w.write(block)
    return path.stat().st_size


def prometheus_stream(total_bytes: int, series: int = 2000) -> Iterator[bytes]:
    """About ``total_bytes`` of valid Prometheus text in ~1 MiB pieces: scrapes of ``series``
    counters, one timestamp per scrape, values increasing, so every row is distinct and valid."""
    produced, scrape = 0, 0
    while produced < total_bytes:
        ts = 1_764_686_822_000 + scrape * 15_000
        piece = "".join(
            f'node_infiniband_port_data_received_bytes_total{{device="mlx5_{i % 8}",instance="gpu{i // 8:03d}:9100",'
            f'port="1"}} {scrape * 4096 + i} {ts}\n'
            for i in range(series)
        ).encode()
        produced += len(piece)
        scrape += 1
        yield piece


def gzipped(data: bytes) -> bytes:
    """``data`` gzip-compressed."""
    return gzip.compress(data)
