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

import polars as pl
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


# --- whole-input topology readers: peak RSS against the input's size --------------------------

LLDP_TARGET_BYTES = 30_000_000
NICS = 8


def _lldp_keyvalue(hosts: int) -> str:
    """Every host's `lldpctl -f keyvalue` in one file: 8 RoCE NICs each, on a SONiC leaf port."""
    out = []
    for h in range(hosts):
        out.append(f"# host: gpu{h:06d}")
        for n in range(NICS):
            i = f"lldp.ens{n + 1}f0np0"
            out += [
                f"{i}.via=LLDP",
                f"{i}.rid={n + 1}",
                f"{i}.age=0 day, 01:02:03",
                f"{i}.chassis.mac=1c:34:da:{h >> 8 & 0xFF:02x}:{h & 0xFF:02x}:{n:02x}",
                f"{i}.chassis.name=leaf{h // 32:04d}",
                f"{i}.chassis.descr=SONiC Software Version: SONiC.202311.1 - HwSku: Mellanox-SN4600C",
                f"{i}.chassis.mgmt-ip=10.{h >> 8 & 0xFF}.{h & 0xFF}.1",
                f"{i}.chassis.Bridge.enabled=on",
                f"{i}.chassis.Router.enabled=on",
                f"{i}.chassis.Station.enabled=off",
                f"{i}.port.ifname=Ethernet{4 * ((h % 32) * NICS + n)}",
                f"{i}.port.descr=gpu{h:06d}:ens{n + 1}f0np0",
                f"{i}.port.ttl=120",
            ]
    return "\n".join(out) + "\n"


def _lldp_json(neighbours: int) -> str:
    """One `lldpctl -f json` document naming `neighbours` interfaces (lldpd's list spelling)."""
    items = [
        {
            f"ens{i}f0np0": {
                "via": "LLDP",
                "rid": str(i + 1),
                "chassis": {
                    f"leaf{i // 256:04d}": {
                        "id": {
                            "type": "mac",
                            "value": f"1c:34:da:{i >> 16 & 0xFF:02x}:{i >> 8 & 0xFF:02x}:{i & 0xFF:02x}",
                        },
                        "descr": "SONiC Software Version: SONiC.202311.1 - HwSku: Mellanox-SN4600C",
                        "capability": [{"type": "Bridge", "enabled": True}, {"type": "Router", "enabled": True}],
                    }
                },
                "port": {"id": {"type": "ifname", "value": f"Ethernet{4 * (i % 256)}"}, "ttl": "120"},
            }
        }
        for i in range(neighbours)
    ]
    return "# host: gpu000001\n" + json.dumps({"lldp": {"interface": items}}, indent=2) + "\n"


# The child is started from a fresh, small interpreter: a child's ru_maxrss includes the RSS of
# the process it was forked from until it execs (Linux keeps the old address space's high-water
# mark), and this test process holds the generated document.
MEASURE = (
    "import os, subprocess, sys\n"
    "p = subprocess.Popen(sys.argv[2:], stdout=subprocess.DEVNULL, stderr=open(sys.argv[1], 'wb'))\n"
    "_, status, usage = os.wait4(p.pid, 0)\n"
    "print(usage.ru_maxrss, os.waitstatus_to_exitcode(status))\n"
)


def _peak_rss_kib(cmd: list[str], log: Path) -> int:
    """Run ``cmd`` to its end and return its own peak RSS (KiB), from ``wait4`` on that child alone."""
    out = subprocess.run([sys.executable, "-c", MEASURE, str(log), *cmd], capture_output=True, text=True, check=True)
    kib, status = (int(x) for x in out.stdout.split())
    assert status == 0, log.read_text()
    return kib


@pytest.mark.slow
@pytest.mark.parametrize(
    ("fmt", "write", "unit_bytes", "links_per_unit"),
    [
        ("lldpctl-keyvalue", _lldp_keyvalue, len(_lldp_keyvalue(1)), NICS),
        ("lldpctl-json", _lldp_json, len(_lldp_json(2)) - len(_lldp_json(1)), 1),
    ],
)
def test_lldp_readers_peak_at_most_four_times_their_input(
    tmp_path: Path, fmt: str, write: object, unit_bytes: int, links_per_unit: int
) -> None:
    """`fabricscope parse` of 30 MB of lldpctl output grows the process by at most 4x the input.

    Measured on the CLI as a user runs it (Parquet output, links and entities side tables): its
    peak RSS minus the peak of the same command on a one-record input (interpreter, Polars and
    fabricscope loaded) is the memory reading costs. A DOM of the JSON document took 11x, the
    links as readers build them 2-12x.
    """
    assert callable(write)
    exe = Path(sys.executable).with_name("fabricscope")
    units = LLDP_TARGET_BYTES // unit_bytes
    big, small = tmp_path / f"big.{fmt}", tmp_path / f"small.{fmt}"
    big.write_text(write(units))
    small.write_text(write(1))

    def parse(path: Path) -> tuple[int, int]:
        out = path.with_suffix(".parquet")
        cmd = [str(exe), "parse", str(path), "--format", fmt, "-q", "-o", str(out)]
        peak = _peak_rss_kib(cmd, path.with_suffix(".stderr"))
        links = pl.read_parquet(out.with_name(out.stem + ".links.parquet"))
        return peak, links.height

    base, small_links = parse(small)
    peak, links = parse(big)
    size = big.stat().st_size
    ratio = (peak - base) * 1024 / size
    print(
        f"\n{fmt}: {size / 1e6:.1f} MB, {links} links; "
        f"peak {peak // 1024} MiB, baseline {base // 1024} MiB: {ratio:.2f}x"
    )
    assert (small_links, links) == (links_per_unit, units * links_per_unit)
    assert ratio <= 4.0
