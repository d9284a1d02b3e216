"""InfiniBand diagnostic readers: throughput on a generated fabric of 2,000 switches x 64 ports.

    python bench/bench_ib.py [--switches 2000] [--ports 64] [--repeat 3] [--keep]

Writes two deterministic files under bench/data/ (gitignored; deleted afterwards unless --keep):

* ``fabric-perfquery-x.txt``: one ``perfquery -x`` block (24 counters) per switch port, the
  shape of ``perfquery -x -l -G <guid> 1-64`` looped over the fabric;
* ``fabric-ibdiagnet2.db_csv``: NODES, PORTS, LINKS and PM_INFO sections for the same fabric
  (PM_INFO with 22 columns, basic and ``Ext``/``Extended`` copies, hex values and sentinels).

Then reads each with ``fabricscope.load`` (Rust parse into Arrow + Polars frames, end to end) and
reports medians of --repeat runs: MB/s of input and sample rows/s. The first run warms the page
cache and is not counted. The baseline is a plain Python line loop that splits each
``Name:....value`` line (the minimum any Python perfquery parser does), on the same file.
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import statistics
import time
from pathlib import Path

import fabricscope

DATA = Path(__file__).resolve().parent / "data"

PQ_FIELDS = [
    "PortXmitData", "PortRcvData", "PortXmitPkts", "PortRcvPkts", "PortUnicastXmitPkts",
    "PortUnicastRcvPkts", "PortMulticastXmitPkts", "PortMulticastRcvPkts",
]  # fmt: skip
PQ_ERRORS = [
    "SymbolErrorCounter", "LinkErrorRecoveryCounter", "LinkDownedCounter", "PortRcvErrors",
    "PortRcvRemotePhysicalErrors", "PortRcvSwitchRelayErrors", "PortXmitDiscards",
    "PortXmitConstraintErrors", "PortRcvConstraintErrors", "LocalLinkIntegrityErrors",
    "ExcessiveBufferOverrunErrors", "VL15Dropped", "PortXmitWait", "QP1Dropped",
]  # fmt: skip
PM_COLUMNS = [
    "LinkDownedCounter", "LinkErrorRecoveryCounter", "SymbolErrorCounter", "PortRcvErrors",
    "PortXmitDiscards", "PortXmitWait", "PortXmitWaitExt", "PortXmitData", "PortRcvData",
    "PortXmitDataExtended", "PortRcvDataExtended", "PortXmitPktsExtended", "PortRcvPktsExtended",
    "PortUnicastXmitPktsExtended", "PortUnicastRcvPktsExtended", "ExcessiveBufferOverrunErrors",
    "VL15Dropped", "PortRcvRemotePhysicalErrors", "PortRcvSwitchRelayErrors",
    "PortFECCorrectableBlockCounter", "PortFECUncorrectableBlockCounter", "max_retransmission_rate",
]  # fmt: skip


def guid(i: int) -> str:
    return f"0x98039b0300{i:06x}"


def write_perfquery(path: Path, switches: int, ports: int) -> None:
    rng = random.Random(6)
    with path.open("w") as f:
        f.write("1796200000\n")
        for s in range(switches):
            lid = s + 1
            for p in range(1, ports + 1):
                f.write(f"# Port extended counters: Lid {lid} port {p} (CapMask: 0x5A00 CapMask2: 0x0000002)\n")
                f.write(f"{'PortSelect:':.<33}{p}\n{'CounterSelect:':.<33}0x0000\n")
                for name in PQ_FIELDS:
                    f.write(f"{name + ':':.<33}{rng.randrange(10**9, 10**14)}\n")
                f.write(f"{'CounterSelect2:':.<33}0x00000000\n")
                for name in PQ_ERRORS:
                    f.write(f"{name + ':':.<33}{rng.randrange(0, 3) if rng.random() < 0.1 else 0}\n")


def write_db_csv(path: Path, switches: int, ports: int) -> None:
    rng = random.Random(7)
    with path.open("w") as f:
        f.write("START_NODES\nNodeDesc,NumPorts,NodeType,NodeGUID\n")
        for s in range(switches):
            f.write(f'"MF0;sw{s:04d}:MQM9700/U1",{ports},2,{guid(s)}\n')
        f.write("END_NODES\n\nSTART_PORTS\n")
        f.write("NodeGuid,PortNum,LID,PortState,PortPhyState,LinkWidthActv,LinkSpeedActv,LinkSpeedExtActv\n")
        for s in range(switches):
            for p in range(1, ports + 1):
                f.write(f"{guid(s)},{p},{s + 1},4,5,2,4,8\n")
        f.write("END_PORTS\n\nSTART_LINKS\nNodeGuid1,PortNum1,NodeGuid2,PortNum2\n")
        half = switches // 2
        for s in range(half):
            for p in range(1, ports + 1):
                f.write(f"{guid(s)},{p},{guid(half + (s + p) % half)},{(s % ports) + 1}\n")
        f.write("END_LINKS\n\nSTART_PM_INFO\nNodeGUID,PortNumber," + ",".join(PM_COLUMNS) + "\n")
        for s in range(switches):
            for p in range(1, ports + 1):
                cells = []
                for c in PM_COLUMNS:
                    v = rng.randrange(0, 10**12)
                    cells.append(f"0x{v:016x}" if "Ext" in c else ("-1" if c.startswith("PortFEC") else str(v % 65536)))
                f.write(f"{guid(s)},{p}," + ",".join(cells) + "\n")
        f.write("END_PM_INFO\n")


def baseline(path: Path) -> float:
    start = time.perf_counter()
    n = 0
    with path.open() as f:
        for line in f:
            _, _, rest = line.partition(":")
            if rest.startswith("."):
                int(rest.lstrip(".").strip(), 0)
                n += 1
    return time.perf_counter() - start


def measure(path: Path, repeat: int) -> tuple[float, int, int]:
    fabricscope.load(path, host="mgmt01", time=1_796_200_000)  # warm-up
    times = []
    rows = links = 0
    for _ in range(repeat):
        t = time.perf_counter()
        res = fabricscope.load(path, host="mgmt01", time=1_796_200_000)
        times.append(time.perf_counter() - t)
        rows = res.samples.height
        links = res.tables["links"].height if "links" in res.tables else 0
    return statistics.median(times), rows, links


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--switches", type=int, default=2000)
    ap.add_argument("--ports", type=int, default=64)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--keep", action="store_true", help="keep the generated files")
    args = ap.parse_args()
    DATA.mkdir(exist_ok=True)
    pq = DATA / "fabric-perfquery-x.txt"
    db = DATA / "fabric-ibdiagnet2.db_csv"
    try:
        write_perfquery(pq, args.switches, args.ports)
        write_db_csv(db, args.switches, args.ports)
        print(f"machine: {platform.machine()} {platform.processor() or ''} cpus={os.cpu_count()}")
        print(f"fabric: {args.switches} switches x {args.ports} ports = {args.switches * args.ports} ports")
        print("| input | MB | rows | links | median s | MB/s | rows/s |")
        print("|---|---|---|---|---|---|---|")
        for label, path in (("perfquery -x", pq), ("ibdiagnet2.db_csv", db)):
            mb = path.stat().st_size / 1e6
            secs, rows, links = measure(path, args.repeat)
            print(f"| {label} | {mb:.1f} | {rows} | {links} | {secs:.3f} | {mb / secs:.0f} | {rows / secs:,.0f} |")
        b = statistics.median(baseline(pq) for _ in range(max(1, args.repeat)))
        mb = pq.stat().st_size / 1e6
        print(f"| baseline: Python line split, perfquery -x | {mb:.1f} | | | {b:.3f} | {mb / b:.0f} | |")
    finally:
        if not args.keep:
            for p in (pq, db):
                p.unlink(missing_ok=True)


if __name__ == "__main__":
    main()
