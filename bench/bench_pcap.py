"""Packet-capture throughput: fabricscope's Rust pcap reader against dpkt and tshark, in one run.

    python bench/bench_pcap.py [--packets 1000000] [--baseline-packets 100000] [--repeat 3]
                               [--build "maturin develop --release"] [--write]

Generates, under bench/data/ (gitignored), a deterministic RoCEv2 + PFC capture (classic pcap,
little-endian, ns magic, LINKTYPE_ETHERNET; seed 4791): 64 queue pairs, RDMA WRITE packets with
1 KiB payloads, coalesced ACKs, CE marks and CNPs, a PSN gap now and then, IPv6 and 802.1Q/QinQ
mixed in, PFC XOFF/XON frames. The same packets are written twice: full 1 KB frames and
128-byte snapshots (snaplen 128). Then it measures, medians of --repeat runs, warm page cache:

* fabricscope: ``_native.read([file])`` end to end (Rust framing + decode + PSN tracking + the
  events and samples Arrow tables), one file; and four copies of the file at once (inputs are
  read in parallel, one per core);
* dpkt 1.9.8 (when installed; ``pip install dpkt==1.9.8``): ``dpkt.pcap.Reader`` +
  ``dpkt.ethernet.Ethernet`` per packet, ECN/UDP-port checks, on a --baseline-packets prefix (it is
  ~100x slower);
* tshark (when installed): ``tshark -r FILE -T fields`` with the CE/CNP/PFC display filter, on
  the same prefix.

Packets/s are per tool on the file it read; ratios are fabricscope / baseline. CPU seconds (this
process's threads plus tshark) are reported next to wall time because they depend less on other
jobs sharing the machine; the load average at start and end is printed. With --write the results
are appended to BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import platform
import random
import resource
import shutil
import statistics
import struct
import subprocess
import sys
import time
from pathlib import Path

DATA = Path(__file__).resolve().parent / "data"
REPO = Path(__file__).resolve().parent.parent

ETH_PFC_DST = bytes.fromhex("0180c2000001")


def _ipv4(src: int, dst: int, tos: int, payload_len: int) -> bytes:
    return struct.pack("!BBHHHBBH4s4s", 0x45, tos, 20 + payload_len, 0, 0x4000, 64, 17, 0,
                       src.to_bytes(4, "big"), dst.to_bytes(4, "big"))  # fmt: skip


def _ipv6(src: int, dst: int, tc: int, payload_len: int) -> bytes:
    word = (6 << 28) | (tc << 20)
    return struct.pack("!IHBB16s16s", word, payload_len, 17, 64, src.to_bytes(16, "big"), dst.to_bytes(16, "big"))


def _eth(ethertype: int, tags: int, pcp: int) -> bytes:
    head = bytes.fromhex("02000000000102000000000208")[:12]
    if tags == 2:
        head += struct.pack("!HH", 0x88A8, (pcp << 13) | 100)
    if tags >= 1:
        head += struct.pack("!HH", 0x8100, (pcp << 13) | 10)
    return head + struct.pack("!H", ethertype)


def _roce(ipver: int, tags: int, tos: int, src: int, dst: int, bth: bytes, payload: int) -> bytearray:
    udp_len = 8 + len(bth) + payload + 4
    udp = struct.pack("!HHHH", 0xC000, 4791, udp_len, 0)
    ip = _ipv4(src, dst, tos, udp_len) if ipver == 4 else _ipv6(src, dst, tos, udp_len)
    eth = _eth(0x0800 if ipver == 4 else 0x86DD, tags, 3)
    return bytearray(eth + ip + udp + bth + bytes(payload) + b"\0\0\0\0")


def generate(path: Path, packets: int, snaplen: int | None, seed: int = 4791) -> dict[str, int]:
    """Write the capture; return the expected counts."""
    rng = random.Random(seed)
    qps = []
    for q in range(64):
        ipver = 6 if q % 8 == 7 else 4
        tags = 2 if q % 16 == 5 else (1 if q % 4 == 1 else 0)
        src, dst = (
            (0x0A000001 + q, 0x0A100001 + q) if ipver == 4 else ((0xFD << 120) | q, (0xFD << 120) | (1 << 64) | q)
        )
        qps.append(
            {"ipver": ipver, "tags": tags, "src": src, "dst": dst, "qp": 0x100 + q, "psn": rng.randrange(1 << 24)}
        )
    truth = dict(packets=0, ce=0, cnp=0, ack=0, gaps=0, pfc=0)
    t = 1_700_000_000_000_000_000
    magic = 0xA1B23C4D
    out = path.open("wb")
    out.write(struct.pack("<IHHiIII", magic, 2, 4, 0, 0, snaplen or 262144, 1))
    buf: list[bytes] = []
    # Templates per QP: data (ECT0 / CE), ACK and CNP in the reverse direction.
    templates = []
    for q in qps:
        bth = struct.pack("!BBHII", 0x07, 0, 0xFFFF, q["qp"], 0)
        data = _roce(q["ipver"], q["tags"], 0x6A, q["src"], q["dst"], bth, 1024)
        ce = _roce(q["ipver"], q["tags"], 0x6B, q["src"], q["dst"], bth, 1024)
        ack = _roce(
            q["ipver"],
            q["tags"],
            0x6A,
            q["dst"],
            q["src"],
            struct.pack("!BBHII", 0x11, 0, 0xFFFF, q["qp"] + 0x1000, 0) + b"\x1f\0\0\0",
            0,
        )
        cnp = _roce(
            q["ipver"],
            q["tags"],
            0xC2,
            q["dst"],
            q["src"],
            struct.pack("!BBHII", 0x81, 0, 0xFFFF, 0x40000000 | (q["qp"] + 0x1000), 0) + bytes(16),
            0,
        )
        bth_off = len(data) - 4 - 1024 - 12
        templates.append((data, ce, ack, cnp, bth_off, len(ack) - 4 - 4 - 12, len(cnp) - 4 - 16 - 12))  # fmt: skip
    pfc_hdr = ETH_PFC_DST + bytes(6) + struct.pack("!HHH", 0x8808, 0x0101, 0x0008)
    pfc_on = bytearray(pfc_hdr + struct.pack("!8H", 0, 0, 0, 0xFFFF, 0, 0, 0, 0) + bytes(26))
    pfc_off = bytearray(pfc_on)
    struct.pack_into("!H", pfc_off, 18 + 6, 0)
    for i in range(packets):
        r = rng.random()
        qi = i % 64
        q = qps[qi]
        data, ce, ack, cnp, bth_off, ack_off, _cnp_off = templates[qi]
        if i % 1000 == 999:
            frame = pfc_on if (i // 1000) % 2 == 0 else pfc_off
            truth["pfc"] += 1
        elif r < 0.10:
            frame = ack
            struct.pack_into("!I", frame, ack_off + 8, q["psn"])
            truth["ack"] += 1
        elif r < 0.11:
            frame = cnp
            truth["cnp"] += 1
        else:
            frame = ce if r > 0.99 else data
            truth["ce"] += r > 0.99
            if rng.random() < 0.0002:
                q["psn"] = (q["psn"] + 1) & 0xFFFFFF  # a lost packet before the capture point
                truth["gaps"] += 1
            struct.pack_into("!I", frame, bth_off + 8, q["psn"])
            q["psn"] = (q["psn"] + 1) & 0xFFFFFF
        t += 25 + (i & 7)
        orig = len(frame)
        incl = min(orig, snaplen) if snaplen else orig
        buf.append(struct.pack("<IIII", t // 1_000_000_000, t % 1_000_000_000, incl, orig))
        buf.append(bytes(frame[:incl]))
        truth["packets"] += 1
        if len(buf) >= 20000:
            out.write(b"".join(buf))
            buf.clear()
    out.write(b"".join(buf))
    out.close()
    return truth


def prefix(src: Path, dst: Path, packets: int) -> None:
    """Copy the first `packets` records of a classic pcap."""
    with src.open("rb") as f, dst.open("wb") as o:
        o.write(f.read(24))
        for _ in range(packets):
            h = f.read(16)
            if len(h) < 16:
                break
            incl = struct.unpack_from("<I", h, 8)[0]
            o.write(h + f.read(incl))


def _cpu_seconds() -> float:
    """CPU time of this process (all threads) plus its waited-for children (tshark)."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


CPU: dict[str, float] = {}


def median_time(fn, repeat: int, key: str = "") -> float:
    """Median wall seconds of `repeat` runs; the median CPU seconds go to CPU[key]."""
    times = []
    cpus = []
    for _ in range(repeat):
        c0 = _cpu_seconds()
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
        cpus.append(_cpu_seconds() - c0)
    CPU[key] = statistics.median(cpus)
    return statistics.median(times)


def run_fabricscope(paths: list[Path]) -> int:
    from fabricscope import _native

    _s, _a, tables, reports = _native.read([str(p) for p in paths], host="bench")
    assert all(not r["failed"] and r["bad_records"] == 0 for r in reports)
    return len(tables.get("packet_events", []))


def run_dpkt(path: Path) -> int:
    import dpkt

    n = ce = 0
    with path.open("rb") as f:
        for _ts, buf in dpkt.pcap.Reader(f):
            n += 1
            eth = dpkt.ethernet.Ethernet(buf)
            ip = eth.data
            if isinstance(ip, dpkt.ip.IP):
                if ip.tos & 3 == 3:
                    ce += 1
                udp = ip.data
            elif isinstance(ip, dpkt.ip6.IP6):
                if (ip.fc >> 0) & 3 == 3:
                    ce += 1
                udp = ip.data
            else:
                continue
            if isinstance(udp, dpkt.udp.UDP) and udp.dport == 4791:
                _ = udp.data[0:1]
    return n


TSHARK_FILTER = "ip.dsfield.ecn==3 || ipv6.tclass.ecn==3 || infiniband.bth.opcode==129 || macc.opcode==0x0101"


def run_tshark(path: Path) -> int:
    cmd = ["tshark", "-r", str(path), "-n", "-Y", TSHARK_FILTER, "-T", "fields", "-e", "frame.time_epoch",
           "-e", "ip.src", "-e", "ip.dst", "-e", "infiniband.bth.opcode", "-e", "infiniband.bth.destqp",
           "-e", "infiniband.bth.psn", "-e", "macc.cbfc.enbv"]  # fmt: skip
    out = subprocess.run(cmd, capture_output=True, check=True, text=True).stdout
    return out.count("\n")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--packets", type=int, default=1_000_000)
    ap.add_argument("--baseline-packets", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--parallel", type=int, default=4)
    ap.add_argument("--build", default="maturin develop --profile ci", help="how the extension was built (printed)")
    ap.add_argument("--write", action="store_true", help="append the results to BENCHMARKS.md")
    ap.add_argument("--keep", action="store_true", help="keep the generated captures")
    args = ap.parse_args()

    DATA.mkdir(parents=True, exist_ok=True)
    load_start = os.getloadavg()
    rows: list[tuple[str, str, int, int, float, float]] = []  # tool, file, packets, bytes, wall s, CPU s
    tshark = shutil.which("tshark")
    has_dpkt = importlib.util.find_spec("dpkt") is not None
    summary: dict[str, dict[str, float]] = {}
    for label, snap in (("1 KB frames", None), ("128-byte snapshots", 128)):
        f = DATA / f"roce_pfc_{args.packets}{'_snap128' if snap else ''}.pcap"
        t0 = time.perf_counter()
        truth = generate(f, args.packets, snap)
        print(
            f"generated {f.name}: {f.stat().st_size / 1e6:.0f} MB in {time.perf_counter() - t0:.1f} s {truth}",
            file=sys.stderr,
        )
        size = f.stat().st_size
        run_fabricscope([f])  # warm-up: page cache, thread pool, first import
        fab = median_time(lambda f=f: run_fabricscope([f]), args.repeat, "fab")
        rows.append(("fabricscope (Rust), 1 file", label, args.packets, size, fab, CPU["fab"]))
        copies = [f]
        for k in range(1, args.parallel):
            c = f.with_name(f"{f.stem}.copy{k}.pcap")
            if not c.exists():
                os.link(f, c)
            copies.append(c)
        par = median_time(lambda c=copies: run_fabricscope(c), args.repeat, "par")
        rows.append(
            (
                f"fabricscope (Rust), {args.parallel} files at once ({os.cpu_count()} cores)",
                label,
                args.packets * args.parallel,
                size * args.parallel,
                par,
                CPU["par"],
            )
        )
        pre = DATA / f"{f.stem}_prefix.pcap"
        prefix(f, pre, args.baseline_packets)
        psize = pre.stat().st_size
        summary[label] = {
            "fab": args.packets / fab,
            "fab_cpu": args.packets / CPU["fab"],
            "par": args.packets * args.parallel / par,
        }
        if has_dpkt:
            dp = median_time(lambda p=pre: run_dpkt(p), args.repeat, "dpkt")
            rows.append(
                (
                    "dpkt 1.9.8 loop",
                    label + f" ({args.baseline_packets:,} prefix)",
                    args.baseline_packets,
                    psize,
                    dp,
                    CPU["dpkt"],
                )
            )
            summary[label]["dpkt"] = args.baseline_packets / dp
        if tshark:
            ts = median_time(lambda p=pre: run_tshark(p), args.repeat, "tshark")
            rows.append(
                (
                    "tshark -Y filter -T fields",
                    label + f" ({args.baseline_packets:,} prefix)",
                    args.baseline_packets,
                    psize,
                    ts,
                    CPU["tshark"],
                )
            )
            summary[label]["tshark"] = args.baseline_packets / ts
        if not args.keep:
            for p in [*copies, pre]:
                p.unlink(missing_ok=True)
    load_end = os.getloadavg()

    lines = [
        "| tool | capture | packets | median wall s | median CPU s | packets/s (wall) | packets per CPU-s"
        " | MB/s (wall) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for tool, label, n, size, s, cpu in rows:
        per_cpu = f"{n / cpu / 1e6:.2f} M" if cpu > 0 else "-"
        rate = f"{n / s / 1e6:.2f} M"
        lines.append(f"| {tool} | {label} | {n:,} | {s:.3f} | {cpu:.3f} | {rate} | {per_cpu} | {size / s / 1e6:,.0f} |")
    ratio_lines = []
    for label, v in summary.items():
        parts = [f"{v['fab'] / v['dpkt']:.0f}x dpkt"] if "dpkt" in v else []
        if "tshark" in v:
            parts.append(f"{v['fab'] / v['tshark']:.0f}x tshark")
        together = f"{args.parallel} files at once = {v['par'] / 1e6:.2f} M packets/s in total"
        ratio_lines.append(
            f"- {label}: fabricscope 1 file = {v['fab'] / 1e6:.2f} M packets/s wall, {v['fab_cpu'] / 1e6:.2f} M per "
            f"CPU-second ({', '.join(parts) or 'no baseline installed'}); {together}."
        )
    machine = (
        f"Machine: {platform.machine()}, {os.cpu_count()} vCPU, Python {platform.python_version()}, "
        f"{platform.platform()}; dpkt {'installed' if has_dpkt else 'not installed (skipped)'}; "
        f"tshark {'installed' if tshark else 'not installed (skipped)'}; extension built "
        f"with `{args.build}`. Load average (1/5/15 min) at start {load_start[0]:.2f} / {load_start[1]:.2f} / "
        f"{load_start[2]:.2f}, at end {load_end[0]:.2f} / {load_end[1]:.2f} / {load_end[2]:.2f}."
    )
    table = "\n".join(lines)
    print(machine)
    print()
    print(table)
    print()
    print("\n".join(ratio_lines))
    if args.write:
        with (REPO / "BENCHMARKS.md").open("a") as md:
            md.write(
                f"\n### Packet captures, run of {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}\n\n"
                f"Command: `python bench/bench_pcap.py --packets {args.packets} --baseline-packets "
                f"{args.baseline_packets} --repeat {args.repeat} --write`.\n\n"
                + machine
                + "\n\n"
                + table
                + "\n\n"
                + "\n".join(ratio_lines)
                + "\n"
            )
    if not args.keep:
        for p in DATA.glob("roce_pfc_*.pcap"):
            p.unlink()
    return 0


if __name__ == "__main__":
    sys.exit(main())
