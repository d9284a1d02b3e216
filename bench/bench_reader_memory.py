"""Peak RSS per reader: every format ``_native.formats()`` lists, on an input of a fixed size.

    python bench/bench_reader_memory.py [--mb 64] [--formats lldpctl-json,...] [--workdir /tmp/fsmem]

For each format this generates a deterministic input of realistic shape of about ``--mb``
megabytes (the whole-document readers are bounded by the ``max_document_bytes`` limit,
256 MiB by default; line readers stream and have no document limit), then runs
``fabricscope parse FILE --format NAME --lenient`` in a child process (and ``fabricscope analyze``
for the readers that emit topology links) and takes that child's peak RSS from ``os.wait4``, in a
small interpreter of its own that starts the command (see ``MEASURE``).

Baseline (same run): the peak RSS of the interpreter with fabricscope imported, idle
(``python -c "import fabricscope.doors.cli"``), subtracted: the headline ratio is
``(peak - idle) / input size``. A second ratio subtracts the peak of the same command on a small
input of the same format (a few records) instead, which also takes out the command's fixed costs
(Polars' thread pools, the streaming buffers, the Parquet writer): what reading costs per byte of
input. RSS does not depend on the machine's load, so the figures are stable on a shared machine;
the wall times are not and are printed only as a guide.

Formats without a generator here are listed as not measured.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import fabricscope._native as native

MB = 1_000_000


def _fill(path: Path, target: int, head: str, record: Callable[[int], str], tail: str = "") -> int:
    """Write ``head``, then ``record(i)`` for i = 0, 1, ... until ``target`` bytes, then ``tail``."""
    written = 0
    i = 0
    with path.open("w") as f:
        f.write(head)
        written += len(head)
        block: list[str] = []
        size = 0
        while written + size < target:
            r = record(i)
            block.append(r)
            size += len(r)
            i += 1
            if len(block) >= 4096:
                f.write("".join(block))
                written += size
                block, size = [], 0
        f.write("".join(block))
        f.write(tail)
        written += size + len(tail)
    return i


# --- LLDP: lldpd on hosts (keyvalue, json), SONiC `show lldp table` on leaves --------------------


def _lldp_kv_host(h: int) -> str:
    """One host's `lldpctl -f keyvalue` (8 RoCE NICs, each on a SONiC leaf port), as lldpd prints it."""
    lines = [f"# host: gpu{h:06d}"]
    for n in range(8):
        iface = f"ens{n + 1}f0np0"
        leaf = f"leaf{h // 32:04d}"
        mac = f"1c:34:da:{h >> 8 & 0xFF:02x}:{h & 0xFF:02x}:{n:02x}"
        lines += [
            f"lldp.{iface}.via=LLDP",
            f"lldp.{iface}.rid={n + 1}",
            f"lldp.{iface}.age=0 day, 01:02:03",
            f"lldp.{iface}.chassis.mac={mac}",
            f"lldp.{iface}.chassis.name={leaf}",
            f"lldp.{iface}.chassis.descr=SONiC Software Version: SONiC.202311.1 - HwSku: Mellanox-SN4600C",
            f"lldp.{iface}.chassis.mgmt-ip=10.{h >> 8 & 0xFF}.{h & 0xFF}.1",
            f"lldp.{iface}.chassis.mgmt-iface=2",
            f"lldp.{iface}.chassis.Bridge.enabled=on",
            f"lldp.{iface}.chassis.Router.enabled=on",
            f"lldp.{iface}.chassis.Wlan.enabled=off",
            f"lldp.{iface}.chassis.Station.enabled=off",
            f"lldp.{iface}.port.ifname=Ethernet{4 * ((h % 32) * 8 + n)}",
            f"lldp.{iface}.port.descr=gpu{h:06d}:{iface}",
            f"lldp.{iface}.port.ttl=120",
            f"lldp.{iface}.port.mfs=9216",
        ]
    return "\n".join(lines) + "\n"


def _lldp_json_interface(i: int, json0: bool = False) -> str:
    """One neighbour of a large `lldpctl -f json` document (one key of `lldp.interface`)."""
    leaf = f"leaf{i // 256:04d}"
    mac = f"1c:34:da:{i >> 16 & 0xFF:02x}:{i >> 8 & 0xFF:02x}:{i & 0xFF:02x}"
    body = {
        "via": "LLDP",
        "rid": str(i + 1),
        "age": "0 day, 01:02:03",
        "chassis": {
            leaf: {
                "id": {"type": "mac", "value": mac},
                "descr": "SONiC Software Version: SONiC.202311.1 - HwSku: Mellanox-SN4600C",
                "mgmt-ip": f"10.{i >> 16 & 0xFF}.{i >> 8 & 0xFF}.{i & 0xFF}",
                "mgmt-iface": "2",
                "capability": [
                    {"type": "Bridge", "enabled": True},
                    {"type": "Router", "enabled": True},
                    {"type": "Wlan", "enabled": False},
                    {"type": "Station", "enabled": False},
                ],
            }
        },
        "port": {"id": {"type": "ifname", "value": f"Ethernet{4 * (i % 256)}"}, "descr": f"port {i}", "ttl": "120"},
    }
    return json.dumps({f"ens{i}f0np0": body}, indent=2)


def gen_lldpctl_json(path: Path, target: int) -> int:
    # lldpd prints one document; with several neighbours `interface` is an array of one-key objects
    return _fill(
        path,
        target,
        '# host: gpu000001\n{\n  "lldp": {\n    "interface": [\n',
        lambda i: ("" if i == 0 else ",\n") + _lldp_json_interface(i),
        "\n    ]\n  }\n}\n",
    )


def gen_lldpctl_keyvalue(path: Path, target: int) -> int:
    # one file gathering every host's output (`for h in ...; do ssh $h lldpctl -f keyvalue; done`)
    return _fill(path, target, "", _lldp_kv_host)


SONIC_HEADER = ("LocalPort", "RemoteDevice", "RemotePortID", "Capability", "RemotePortDescr")
SONIC_WIDTHS = (13, 18, 19, 12, 17)


def _sonic_row(cells: tuple[str, ...]) -> str:
    return "  ".join(c.ljust(w) for c, w in zip(cells, SONIC_WIDTHS, strict=True)).rstrip() + "\n"


def _sonic_table(leaf: int) -> str:
    """One leaf's `show lldp table`: 256 host NIC ports and 8 spine uplinks, lldpshow's layout."""
    rows = []
    for p in range(256):
        h = leaf * 32 + p // 8
        mac = f"0c:42:a1:{h >> 8 & 0xFF:02x}:{h & 0xFF:02x}:{p % 8:02x}"
        rows.append((f"Ethernet{4 * p}", f"gpu{h:06d}", mac, "R", f"ens{p % 8 + 1}f0np0"))
    for s in range(8):
        rows.append((f"Ethernet{1024 + 4 * s}", f"spine{s + 1:02d}", f"Ethernet{4 * leaf}", "BR", ""))
    return (
        f"admin@leaf{leaf:04d}:~$ show lldp table\n"
        "Capability codes: (R) Router, (B) Bridge, (O) Other\n"
        + _sonic_row(SONIC_HEADER)
        + "  ".join("-" * w for w in SONIC_WIDTHS)
        + "\n"
        + "".join(_sonic_row(r) for r in rows)
        + "-" * 50
        + f"\nTotal entries displayed:  {len(rows)}\n"
    )


def gen_sonic_lldp_table(path: Path, target: int) -> int:
    # every leaf's table in one file, each after its echoed prompt
    return _fill(path, target, "", _sonic_table)


# --- counters -----------------------------------------------------------------------------------


def _prom_scrape(s: int) -> str:
    """One /federate scrape: 64 hosts x 8 HCAs x 8 node_exporter InfiniBand families."""
    ts = 1_764_686_822_000 + s * 15_000
    names = (
        "node_infiniband_port_data_received_bytes_total",
        "node_infiniband_port_data_transmitted_bytes_total",
        "node_infiniband_port_packets_received_total",
        "node_infiniband_port_packets_transmitted_total",
        "node_infiniband_port_transmit_wait_total",
        "node_infiniband_symbol_error_total",
        "node_infiniband_link_downed_total",
        "node_infiniband_port_errors_received_total",
    )
    return "".join(
        f'{n}{{device="mlx5_{d}",instance="gpu{h:04d}:9100",job="node",port="1"}} '
        f"{(s + 1) * (h * 8 + d + k + 1) * 4096} {ts}\n"
        for h in range(64)
        for d in range(8)
        for k, n in enumerate(names)
    )


def gen_prometheus(path: Path, target: int) -> int:
    return _fill(path, target, "", _prom_scrape)


ETHTOOL_STATS = (
    "rx_packets_phy",
    "tx_packets_phy",
    "rx_bytes_phy",
    "tx_bytes_phy",
    "rx_discards_phy",
    "tx_discards_phy",
    "rx_crc_errors_phy",
    "rx_out_of_buffer",
    "rx_prio3_pause",
    "tx_prio3_pause",
    "rx_prio3_pause_duration",
    "tx_prio3_pause_duration",
    "rx_prio3_bytes",
    "tx_prio3_bytes",
    "rx_prio3_packets",
    "tx_prio3_packets",
    "rx_pcs_symbol_err_phy",
    "rx_corrected_bits_phy",
    "rx_ecn_mark",
    "np_cnp_sent",
)


def _ethtool_snapshot(s: int) -> str:
    """One `date +%s; ethtool -S ens1f0np0` snapshot of an mlx5 NIC, 5 s apart."""
    body = "".join(f"     {n}: {(s + 1) * (k * 7919 + 1)}\n" for k, n in enumerate(ETHTOOL_STATS))
    return f"{1_764_686_822 + 5 * s}\nNIC statistics:\n{body}"


def gen_ethtool(path: Path, target: int) -> int:
    return _fill(path, target, "# host: gpu000001\n", _ethtool_snapshot)


def gen_openmetrics(path: Path, target: int) -> int:
    # the same scrapes in OpenMetrics text: seconds timestamps, one `# EOF` at the end
    def scrape(s: int) -> str:
        return "".join(
            line.rsplit(" ", 1)[0] + f" {(1_764_686_822_000 + s * 15_000) / 1000:.3f}\n"
            for line in _prom_scrape(s).splitlines()
        )

    return _fill(path, target, "", scrape, "# EOF\n")


def _telegraf_scrape(s: int) -> str:
    """One Telegraf `infiniband` input interval: 64 hosts x 8 HCAs, line protocol, ns timestamps."""
    ts = (1_764_686_822 + 10 * s) * 1_000_000_000
    return "".join(
        f"infiniband,device=mlx5_{d},host=gpu{h:04d},port=1 "
        f"port_xmit_data={(s + 1) * (h + d + 1) * 4096}i,port_rcv_data={(s + 1) * (h + d + 2) * 4096}i,"
        f"port_xmit_packets={(s + 1) * (h + d + 1) * 16}i,port_rcv_packets={(s + 1) * (h + d + 2) * 16}i,"
        f"port_xmit_wait={(s + 1) * 3}i,symbol_error=0i,link_downed=0i,port_rcv_errors=0i {ts}\n"
        for h in range(64)
        for d in range(8)
    )


def gen_telegraf(path: Path, target: int) -> int:
    return _fill(path, target, "", _telegraf_scrape)


UFM_COUNTERS = (
    "Infiniband_MBOut_u_Gb",
    "Infiniband_MBIn_u_Gb",
    "Infiniband_PckOut_u_Packets",
    "Infiniband_PckIn_u_Packets",
    "Infiniband_SymbolErrors_u_Errors",
    "Infiniband_LinkDowned_u_Errors",
    "Infiniband_RcvErrors_u_Errors",
    "Infiniband_XmtDiscards_u_Errors",
    "Infiniband_XmitWait_u_Ticks",
    "Infiniband_CBW_f_u_Gbps",
)


def _ufm_record(i: int) -> str:
    guid = f"0x0c42a10300{i >> 6:06x}"
    values = ", ".join(f'"{n}": {(i + 1) * (k + 1) * 1024}' for k, n in enumerate(UFM_COUNTERS))
    rec = (
        f'{{"timestamp": {1_709_652_347_161_873 + (i >> 12) * 10_000_000}, "source_id": "{guid}", '
        f'"node_guid": "{guid}", "port_guid": "{guid}", "port_num": {i % 64 + 1}, {values}}}'
    )
    return ("" if i == 0 else ",\n") + "    " + rec


def gen_ufm_json(path: Path, target: int) -> int:
    # one UFM telemetry `values` document (fluentd plugin / REST): the whole fabric's ports
    head = '{\n  "timestamp": "2024-03-05 16:26:11",\n  "type": "full",\n  "values": [\n'
    return _fill(path, target, head, _ufm_record, "\n  ]\n}\n")


RDMA_STATS = (
    "rx_write_requests",
    "rx_read_requests",
    "out_of_buffer",
    "out_of_sequence",
    "resp_cqe_error",
    "req_cqe_error",
    "rp_cnp_handled",
    "np_ecn_marked_roce_packets",
    "np_cnp_sent",
    "rnr_nak_retry_err",
    "packet_seq_err",
    "local_ack_timeout_err",
)


def _rdma_stat(i: int) -> str:
    counters = ",".join(f'"{n}":{(i + 1) * (k + 3)}' for k, n in enumerate(RDMA_STATS))
    return ("" if i == 0 else ",") + f'{{"ifindex":{i},"ifname":"mlx5_{i}","port":1,{counters}}}'


def gen_rdma_statistic(path: Path, target: int) -> int:
    # `rdma -j statistic show`: one array, one object per device port
    return _fill(path, target, "# host: gpu000001\n1764686822\n[", _rdma_stat, "]\n")


def _ibnetdiscover_switch(sw: int) -> str:
    """`ibnetdiscover -p` lines of one leaf: 32 HCA ports both ways and 8 uplinks to spines."""
    leaf = f"0x7cfe900300{sw:06x}"
    lines = []
    for p in range(32):
        hca = f"0x506b4b03{sw:06x}{p:02x}"
        name = f"gpu{sw * 32 + p:06d} mlx5_0"
        lid_h, lid_s = 1000 + sw * 40 + p, 1 + sw
        lines.append(f"CA {lid_h:5d}  1 {hca} 4x NDR - SW {lid_s:5d} {p + 1:2d} {leaf} ( '{name}' - 'leaf{sw:04d}' )")
        lines.append(f"SW {lid_s:5d} {p + 1:2d} {leaf} 4x NDR - CA {lid_h:5d}  1 {hca} ( 'leaf{sw:04d}' - '{name}' )")
    for u in range(8):
        spine = f"0x08c0eb0300{u:06x}"
        lines.append(
            f"SW {1 + sw:5d} {33 + u:2d} {leaf} 4x NDR - SW {60000 + u:5d} {sw % 64 + 1:2d} {spine} "
            f"( 'leaf{sw:04d}' - 'spine{u:02d}' )"
        )
    return "\n".join(lines) + "\n"


def gen_ibnetdiscover(path: Path, target: int) -> int:
    return _fill(path, target, "", _ibnetdiscover_switch)


# --- the run ----------------------------------------------------------------------------------

GENERATORS: dict[str, Callable[[Path, int], int]] = {
    "lldpctl-json": gen_lldpctl_json,
    "lldpctl-keyvalue": gen_lldpctl_keyvalue,
    "sonic-lldp-table": gen_sonic_lldp_table,
    "prometheus": gen_prometheus,
    "openmetrics": gen_openmetrics,
    "ethtool": gen_ethtool,
    "telegraf": gen_telegraf,
    "ufm-json": gen_ufm_json,
    "rdma-statistic": gen_rdma_statistic,
    "ibnetdiscover": gen_ibnetdiscover,
}

SUFFIX = {"lldpctl-json": ".json", "ufm-json": ".json", "rdma-statistic": ".json", "openmetrics": ".om"}


# Measures its child from a fresh, small interpreter: a child's ru_maxrss includes the RSS of the
# process it was forked from until it execs (Linux records the old address space's high-water mark
# at exec), so a child of this generator process would inherit the generator's own peak.
MEASURE = (
    "import os, subprocess, sys\n"
    "p = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n"
    "_, status, usage = os.wait4(p.pid, 0)\n"
    "print(usage.ru_maxrss, os.waitstatus_to_exitcode(status))\n"
)


def peak_rss_kib(cmd: list[str], cwd: Path) -> tuple[int, float, int]:
    """Run ``cmd``; its peak RSS (KiB, from ``os.wait4``), wall seconds and exit status."""
    t = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", MEASURE, *cmd], cwd=cwd, capture_output=True, text=True, check=True)
    kib, status = (int(x) for x in out.stdout.split())
    return kib, time.perf_counter() - t, status


def fabricscope_cmd(command: str, path: Path, fmt: str) -> list[str]:
    exe = Path(sys.executable).with_name("fabricscope")
    cmd = [str(exe), command, str(path), "--format", fmt, "--lenient", "-q"]
    if command == "analyze":
        cmd = [str(exe), command, str(path), "--format", fmt, "--lenient"]
    return cmd


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mb", type=float, default=64, help="input size in MB (default 64)")
    ap.add_argument("--formats", default="", help="comma-separated format names (default: every one with a generator)")
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/fabricscope-reader-memory"))
    ap.add_argument("--no-analyze", action="store_true", help="only `parse`, also for the topology readers")
    args = ap.parse_args()
    infos = {f["name"]: f for f in native.formats()}
    wanted = [f for f in args.formats.split(",") if f] or [f for f in infos if f in GENERATORS]
    for name in wanted:
        if name not in GENERATORS:
            ap.error(f"no generator for {name!r}; have {', '.join(GENERATORS)}")
    args.workdir.mkdir(parents=True, exist_ok=True)
    limit = dict(native.limits())["max_document_bytes"]
    load = os.getloadavg()
    print(
        f"# peak RSS per reader, {args.mb:g} MB inputs; {platform.python_version()}, "
        f"max_document_bytes {limit:,}; load {load[0]:.1f}"
    )
    print()
    idle, _, _ = peak_rss_kib([sys.executable, "-c", "import fabricscope.doors.cli"], args.workdir)
    print(f"baseline: the interpreter with fabricscope imported, idle: {idle / 1024:,.0f} MiB peak RSS")
    print()
    print(
        "| format | command | input MB | records | small input MiB | peak MiB "
        "| (peak - idle) / input | (peak - small input) / input | s |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for name in wanted:
        suffix = SUFFIX.get(name, ".txt")
        big = args.workdir / f"{name}-{args.mb:g}mb{suffix}"
        small = args.workdir / f"{name}-small{suffix}"
        records = GENERATORS[name](big, int(args.mb * MB))
        GENERATORS[name](small, 1)
        size = big.stat().st_size
        commands = ["parse"]
        if infos[name]["emits_links"] and not args.no_analyze:
            commands.append("analyze")
        for command in commands:
            base, _, _ = peak_rss_kib(fabricscope_cmd(command, small, name), args.workdir)
            peak, wall, status = peak_rss_kib(fabricscope_cmd(command, big, name), args.workdir)
            note = "" if status in (0, 1, 2) else f" (exit {status})"
            print(
                f"| {name} | {command} | {size / MB:,.1f} | {records:,} | {base / 1024:,.0f} | "
                f"{peak / 1024:,.0f} | **{(peak - idle) * 1024 / size:.2f}x**{note} | "
                f"{(peak - base) * 1024 / size:.2f}x | {wall:.1f} |",
                flush=True,
            )
    missing = [n for n in infos if n not in GENERATORS]
    if missing and not args.formats:
        print()
        print(f"not measured (no generator): {', '.join(missing)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
