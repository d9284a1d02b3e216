"""Property tests: rendering samples in a real format and parsing them back is lossless."""

from __future__ import annotations

import tempfile
from pathlib import Path

import fabricscope
import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st

label_value = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=0, max_size=12)


def _escape(v: str) -> str:
    return v.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


series = st.fixed_dictionaries(
    {
        "metric": st.from_regex(r"[a-z][a-z0-9_]{0,20}_total", fullmatch=True),
        "device": st.from_regex(r"mlx5_[0-9]", fullmatch=True),
        "port": st.integers(1, 64),
        "extra": label_value,
        "value": st.integers(0, 2**64 - 1),
        "ts_ms": st.integers(1_000_000_000_000, 4_000_000_000_000),
    }
)


@settings(max_examples=60, deadline=None)
@given(st.lists(series, min_size=1, max_size=30))
def test_prometheus_text_round_trip(rows: list[dict[str, object]]) -> None:
    lines = [
        f'{r["metric"]}{{device="{r["device"]}",instance="h{i % 3}:9100",port="{r["port"]}",'
        f'zz="{_escape(str(r["extra"]))}"}} {r["value"]} {r["ts_ms"]}'
        for i, r in enumerate(rows)
    ]
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "x.prom"
        p.write_text("\n".join(lines) + "\n", encoding="utf-8")
        df = fabricscope.read(p, format="prometheus")
    assert df.height == len(rows)
    assert df["value_u64"].to_list() == [r["value"] for r in rows]
    assert df["port"].to_list() == [r["port"] for r in rows]
    assert df["host"].cast(pl.String).to_list() == [f"h{i % 3}" for i in range(len(rows))]
    assert df["time"].dt.epoch("ns").to_list() == [int(r["ts_ms"]) * 1_000_000 for r in rows]


ethtool_names = st.from_regex(r"[a-z][a-z0-9_.\[\] ]{0,24}[a-z0-9\]]", fullmatch=True).filter(
    lambda s: "prio" not in s and ": " not in s
)


@settings(max_examples=60, deadline=None)
@given(st.dictionaries(ethtool_names, st.integers(0, 2**64 - 1), min_size=1, max_size=40))
def test_ethtool_round_trip(stats: dict[str, int]) -> None:
    body = "\n".join(f"     {k}: {v}" for k, v in stats.items())
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "eth0.txt"
        p.write_text(f"1796200000\n# ethtool -S eth0\nNIC statistics:\n{body}\n")
        df = fabricscope.read(p, host="h")
    assert df.height == len(stats)
    assert df["value_u64"].to_list() == list(stats.values())
