"""Parse throughput: fabricscope's Prometheus reader against prometheus_client, in one run.

    python bench/bench_parse.py [--mb 100] [--repeat 3] [--inputs g,int]

Generates deterministic Prometheus /federate files of about --mb megabytes under bench/data/
(node_exporter InfiniBand and ethtool families for 256 hosts x 4 devices, `instance`/`job`
labels, ms timestamps), in two value spellings:

* ``g`` (the default headline): values as node_exporter, DCGM exporter and Prometheus
  ``/federate`` write them. Their client library stores every sample as a float64 and
  prometheus/common ``expfmt.writeFloat`` prints it with ``strconv.AppendFloat(f, 'g', -1, 64)``:
  the shortest round-trip digits, in exponent form once the decimal exponent is < -4 or >= 6
  (``1.8527668e+07``, ``5e+10``, ``123456``, ``0``). Counter magnitudes follow a busy fabric:
  byte counters 1e7..1e14, packet counters 1e6..1e11, error counters mostly 0 or small.
* ``single``: one scrape of ``--single-hosts`` hosts (default 8,000) x 8 HCAs x the same 12
  families, Go ``%g`` values (about 104 MB, 768,000 samples): what a file holds when each file is one
  ``/federate`` or exporter scrape. Every ``name{labels}`` text occurs once, so the per-series cost
  (resolving labels, interning the host, the attribute of the ``job`` label) is paid on every line;
  its ratio to the ``g`` row of the same run is the per-series overhead.
* ``int``: the same families with plain integer values (``18527668``), which exporters do not
  write; kept as a second, labelled row because the reader takes a separate exact-integer path.

Then it measures, medians of --repeat runs with the file warm in the page cache, in wall time and
in CPU time of this process (all threads; less sensitive to other load on a shared machine):

* fabricscope.read(path) end to end: Rust parse into Arrow batches + the Polars DataFrame;
* the same, over the file split in two (two inputs are parsed on two threads);
* prometheus_client.parser.text_string_to_metric_families on a prefix of the same file (it is
  ~100x slower), consuming every sample: the named baseline. Ratios are fabricscope / baseline.
"""

from __future__ import annotations

import argparse
import decimal
import math
import os
import platform
import random
import statistics
import sys
import time
from pathlib import Path

DATA = Path(__file__).resolve().parent / "data"

# (family, value model): "bytes" 1e7..1e14 (InfiniBand data counters are 4-octet words x 4),
# "packets" 1e6..1e11, "wait" 1e3..1e9, "errors" mostly 0 else small, "pause" often 0 else up
# to 1e7.
FAMILIES = [
    ("node_infiniband_port_data_transmitted_bytes_total", "bytes"),
    ("node_infiniband_port_data_received_bytes_total", "bytes"),
    ("node_infiniband_port_packets_transmitted_total", "packets"),
    ("node_infiniband_port_packets_received_total", "packets"),
    ("node_infiniband_port_transmit_wait_total", "wait"),
    ("node_infiniband_symbol_error_total", "errors"),
    ("node_infiniband_link_downed_total", "errors"),
    ("node_infiniband_port_errors_received_total", "errors"),
    ("node_ethtool_received_prio3_pause", "pause"),
    ("node_ethtool_received_prio3_pause_duration", "pause"),
    ("node_ethtool_transmitted_prio3_pause", "pause"),
    ("node_ethtool_received_discards_phy", "errors"),
]


def go_format_g(v: float) -> str:
    """Go's ``strconv.FormatFloat(v, 'g', -1, 64)`` as prometheus/common expfmt writes a value.

    Python's ``repr`` gives the same shortest round-trip digits as Go's shortest formatting; Go
    then uses the exponent form when the decimal exponent x is x < -4 or x >= 6 (precision 6 is
    what ``strconv`` takes for the decision when the precision is the shortest), with at least
    two exponent digits (``e+07``).
    """
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "+Inf" if v > 0 else "-Inf"
    if v == 0:
        return "0"  # expfmt writes both zeros as "0"
    sign, digit_tuple, exp = decimal.Decimal(repr(v)).as_tuple()
    digits = "".join(map(str, digit_tuple)).rstrip("0")
    exp += len(digit_tuple) - len(digits)  # the stripped zeros move into the exponent
    dp = len(digits) + exp  # position of the decimal point relative to the digits
    x = dp - 1
    neg = "-" if sign else ""
    if x < -4 or x >= 6:
        frac = f".{digits[1:]}" if len(digits) > 1 else ""
        return f"{neg}{digits[0]}{frac}e{'-' if x < 0 else '+'}{abs(x):02d}"
    if dp <= 0:
        return f"{neg}0.{'0' * -dp}{digits}"
    if dp >= len(digits):
        return f"{neg}{digits}{'0' * (dp - len(digits))}"
    return f"{neg}{digits[:dp]}.{digits[dp:]}"


def counter_value(rng: random.Random, model: str) -> int:
    """One counter reading of a busy fabric, by value model."""
    if model == "bytes":
        return 4 * int(10 ** rng.uniform(6.4, 13.4))
    if model == "packets":
        return int(10 ** rng.uniform(6, 11))
    if model == "wait":
        return int(10 ** rng.uniform(3, 9))
    if model == "errors":
        return 0 if rng.random() < 0.9 else rng.randrange(1, 200)
    return 0 if rng.random() < 0.6 else int(10 ** rng.uniform(0, 7))


def generate(path: Path, target_bytes: int, spelling: str) -> tuple[int, int]:
    """Write a federate file of at least target_bytes; returns (bytes, samples)."""
    rng = random.Random(4791)
    t0 = 1_796_200_000_000
    samples = 0
    written = 0
    with path.open("w") as f:
        scrape = 0
        while written < target_bytes:
            ts = t0 + scrape * 15_000
            parts: list[str] = []
            for fam, model in FAMILIES:
                parts.append(f"# TYPE {fam} counter\n")
                ib = fam.startswith("node_infiniband")
                for h in range(256):
                    inst = f"gpu{h:04d}.cluster.local:9100"
                    for d in range(4):
                        dev = f"mlx5_{d}" if ib else f"eth{d}"
                        port = ',port="1"' if ib else ""
                        v = counter_value(rng, model)
                        text = go_format_g(float(v)) if spelling == "g" else str(v)
                        parts.append(f'{fam}{{device="{dev}",instance="{inst}",job="node"{port}}} {text} {ts}\n')
                        samples += 1
            chunk = "".join(parts)
            f.write(chunk)
            written += len(chunk)
            scrape += 1
    return written, samples


def generate_single_scrape(path: Path, hosts: int) -> tuple[int, int]:
    """One scrape of ``hosts`` hosts x 8 HCAs x the 12 families, Go ``%g`` values: every series once.

    This is what a file holds when each file is one ``/federate`` or exporter scrape (``curl
    host:9090/federate > t.prom`` every interval, or the Prometheus textfile/pushgateway dump of
    one moment): Prometheus writes every series of the match once, grouped by family, sorted by
    label set. The parser sees each ``name{labels}`` text exactly once, so nothing it caches per
    series is ever reused.
    """
    rng = random.Random(4792)
    ts = 1_796_200_000_000
    samples = 0
    written = 0
    with path.open("w") as f:
        for fam, model in FAMILIES:
            ib = fam.startswith("node_infiniband")
            parts = [f"# TYPE {fam} counter\n"]
            for h in range(hosts):
                inst = f"gpu{h:05d}.cluster.local:9100"
                for d in range(8):
                    dev = f"mlx5_{d}" if ib else f"eth{d}"
                    port = ',port="1"' if ib else ""
                    text = go_format_g(float(counter_value(rng, model)))
                    parts.append(f'{fam}{{device="{dev}",instance="{inst}",job="node"{port}}} {text} {ts}\n')
                    samples += 1
            chunk = "".join(parts)
            f.write(chunk)
            written += len(chunk)
    return written, samples


def median_time(fn, repeat: int) -> tuple[float, float]:
    """Median wall seconds and median CPU seconds (all threads of this process) of fn()."""
    wall, cpu = [], []
    for _ in range(repeat):
        t, c = time.perf_counter(), time.process_time()
        fn()
        wall.append(time.perf_counter() - t)
        cpu.append(time.process_time() - c)
    return statistics.median(wall), statistics.median(cpu)


def measure(spelling: str, args: argparse.Namespace) -> list[str]:
    """Table rows for one value spelling."""
    import fabricscope
    from prometheus_client.parser import text_string_to_metric_families

    label = {
        "g": "Go `%g` values (as exporters write), repeated series (many scrapes per file)",
        "int": "integer values (not what exporters write)",
        "single": f"Go `%g` values, one scrape of {args.single_hosts:,} hosts x 8 HCAs (every series new)",
    }[spelling]
    name = (
        f"federate-single-{args.single_hosts}hosts.prom"
        if spelling == "single"
        else f"federate-{spelling}-{args.mb}mb.prom"
    )
    path = DATA / name
    if not path.exists():
        print(f"generating {path} ...", file=sys.stderr)
        if spelling == "single":
            generate_single_scrape(path, args.single_hosts)
        else:
            generate(path, args.mb * 1_000_000, spelling)
    size = path.stat().st_size
    raw = path.read_bytes()
    half = raw.rfind(b"\n# TYPE", 0, len(raw) // 2) + 1
    parts = [DATA / f"split-{spelling}-a.prom", DATA / f"split-{spelling}-b.prom"]
    parts[0].write_bytes(raw[:half])
    parts[1].write_bytes(raw[half:])
    prefix = raw[: raw.rfind(b"\n", 0, args.baseline_mb * 1_000_000) + 1].decode()
    del raw

    n_rows = fabricscope.read(path).height  # warm-up + row count
    t_one, c_one = median_time(lambda: fabricscope.read(path), args.repeat)
    t_two, c_two = median_time(lambda: fabricscope.read(parts), args.repeat)

    def baseline() -> int:
        n = 0
        for fam in text_string_to_metric_families(prefix):
            for _ in fam.samples:
                n += 1
        return n

    t_base, c_base = median_time(baseline, max(1, args.repeat - 2))
    mb, base_mb = size / 1e6, len(prefix) / 1e6
    per_mb = n_rows / mb

    def num(x: float) -> str:
        return f"{x:,.1f}" if x < 100 else f"{x:,.0f}"

    def row(name: str, reader: str, mb_s: float, cpu_mb_s: float) -> str:
        return (
            f"| {name} | {reader} | {num(mb_s)} | {mb_s * per_mb:,.0f} | {num(mb_s / (base_mb / t_base))}x | "
            f"{num(cpu_mb_s)} | {num(cpu_mb_s / (base_mb / c_base))}x |"
        )

    return [
        row(
            f"{label}: {path.name}, {mb:.1f} MB, {n_rows:,} samples",
            f"prometheus_client text_string_to_metric_families ({base_mb:.0f} MB prefix)",
            base_mb / t_base,
            base_mb / c_base,
        ),
        row(label, "fabricscope.read, 1 file (1 core) into a Polars DataFrame", mb / t_one, mb / c_one),
        row(label, "fabricscope.read, same data as 2 files (2 cores)", mb / t_two, mb / c_two),
    ]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mb", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--baseline-mb", type=int, default=8, help="prefix size parsed by prometheus_client")
    ap.add_argument(
        "--inputs",
        default="g,single,int",
        help="inputs to measure: g (Go %%g, repeated series), single (one scrape, every series new), int",
    )
    ap.add_argument("--single-hosts", type=int, default=8000, help="hosts of the single-scrape input")
    args = ap.parse_args()

    import fabricscope
    import polars as pl

    DATA.mkdir(exist_ok=True)
    rows: list[str] = []
    for spelling in args.inputs.split(","):
        rows += measure(spelling.strip(), args)

    print(
        f"machine: {platform.machine()} {os.cpu_count()} cpu, Python {platform.python_version()}, "
        f"polars {pl.__version__}, fabricscope {fabricscope.__version__}, "
        f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}"
    )
    print()
    print(
        "| input | reader | MB/s | samples/s | vs prometheus_client | MB per CPU-second | vs prometheus_client (CPU) |"
    )
    print("|---|---|---|---|---|---|---|")
    for row in rows:
        print(row)


if __name__ == "__main__":
    main()
