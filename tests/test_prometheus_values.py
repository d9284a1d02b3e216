"""Prometheus sample values as exporters write them: Go's ``strconv.FormatFloat(v, 'g', -1, 64)``
(prometheus/common ``expfmt.writeFloat``) gives ``1.8527668e+07``, ``5e+10``, ``123456``. They
read into exactly the same samples as the integers they stand for, through the API and the CLI,
and the edge cases keep their float64 meaning."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import fabricscope
import polars as pl

T_MS = 1_764_686_822_000
FAMILIES = [
    "node_infiniband_port_data_transmitted_bytes_total",
    "node_infiniband_port_packets_received_total",
    "node_infiniband_symbol_error_total",
]
# Counter readings and their Go %g spelling (outputs of strconv.FormatFloat(v, 'g', -1, 64)).
READINGS = [
    (18_527_668, "1.8527668e+07"),
    (50_000_000_000, "5e+10"),
    (34_359_738_368, "3.4359738368e+10"),
    (123_456, "123456"),
    (1_000_000, "1e+06"),
    (0, "0"),
    (1, "1"),
    (9_007_199_254_740_992, "9.007199254740992e+15"),
]


def _federate(spelling: int) -> str:
    lines = []
    for fam in FAMILIES:
        lines.append(f"# TYPE {fam} counter")
        for i, reading in enumerate(READINGS):
            value = reading[spelling]
            lines.append(f'{fam}{{device="mlx5_{i}",instance="gpu017:9100",job="node",port="1"}} {value} {T_MS}')
    return "\n".join(lines) + "\n"


def _write(tmp_path: Path) -> tuple[Path, Path]:
    ints = tmp_path / "federate-int.prom"
    go_g = tmp_path / "federate-g.prom"
    ints.write_text(_federate(0))
    go_g.write_text(_federate(1))
    return ints, go_g


def test_go_g_values_read_like_the_integers_they_spell(tmp_path: Path) -> None:
    ints, go_g = _write(tmp_path)
    a = fabricscope.read(ints)
    b = fabricscope.read(go_g)
    assert a.schema == b.schema
    assert a.height == b.height == len(FAMILIES) * len(READINGS)
    assert b["value_f64"].null_count() == b.height  # every reading is an exact integer
    assert a.drop("source").equals(b.drop("source"))
    xmit = b.filter(pl.col("counter") == "port_xmit_data_bytes").sort("device")
    assert xmit["value_u64"].to_list() == [v for v, _ in READINGS]
    assert xmit["scale"].to_list() == [4] * len(READINGS)  # the counter counts 4-octet words


def test_cli_parse_writes_the_same_values(tmp_path: Path) -> None:
    _, go_g = _write(tmp_path)
    exe = Path(sys.executable).parent / "fabricscope"
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "fabricscope"]
    out = tmp_path / "s.parquet"
    r = subprocess.run([*cmd, "parse", str(go_g), "-q", "-o", str(out)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    cli = pl.read_parquet(out).sort(["counter", "device"])
    api = fabricscope.read(go_g).sort(["counter", "device"])
    assert cli["value_u64"].to_list() == api["value_u64"].to_list()
    rcv = cli.filter(pl.col("counter") == "port_rcv_packets")
    assert rcv["value_u64"].to_list() == [v for v, _ in READINGS]


def test_edge_values_keep_their_float64_meaning(tmp_path: Path) -> None:
    cases = [
        ("9.007199254740993e+15", 9_007_199_254_740_992, None),  # not a double: rounds to 2^53
        ("9.007199254740994e+15", None, 9_007_199_254_740_994.0),
        ("9007199254740993", 9_007_199_254_740_993, None),  # a plain integer stays exact
        ("1e+21", None, 1e21),
        ("1.8446744073709552e+19", None, 1.8446744073709552e19),
        ("-0", 0, None),
        ("4.9e-324", None, 5e-324),
        ("-3.5", None, -3.5),
        ("0.25", None, 0.25),
        ("+Inf", None, math.inf),
        ("-Inf", None, -math.inf),
    ]
    text = "".join(f'edge_value{{case="{i}"}} {tok} {T_MS}\n' for i, (tok, _, _) in enumerate(cases))
    p = tmp_path / "edge.prom"
    p.write_text(text + f'edge_value{{case="nan"}} NaN {T_MS}\n')
    df = fabricscope.read(p)
    assert df["value_u64"].to_list()[: len(cases)] == [u for _, u, _ in cases]
    assert df["value_f64"].to_list()[: len(cases)] == [f for _, _, f in cases]
    assert math.isnan(df["value_f64"][len(cases)])
    bad = tmp_path / "bad.prom"
    bad.write_text(f"edge_value 1.5e {T_MS}\nedge_value 1e+ {T_MS}\nedge_value 7 {T_MS}\n")
    res = fabricscope.load(bad, format="prometheus", strict=False)
    assert res.samples["value_u64"].to_list() == [7]
    assert res.reports[0].bad_records == 2
