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
        "ts_ms": st.integers(
            1_000_000_000_000, 1_790_000_000_000
        ),  # 2001 .. 2026: a sample from the future is a bad record
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


# --- any input: the public API never fails outside fabricscope's exceptions ---------

FORMAT_NAMES = [f["name"] for f in fabricscope.formats().to_dicts() if f["name"] != "sysfs"]


@settings(max_examples=150, deadline=None)
@given(data=st.binary(max_size=2048), fmt=st.sampled_from(["auto", *FORMAT_NAMES]))
def test_any_bytes_give_rows_or_a_fabricscope_error(data: bytes, fmt: str) -> None:
    from fabricscope.exceptions import FabricscopeError

    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "input"
        p.write_bytes(data)
        try:
            strict = fabricscope.load(p, format=fmt, host="h", time=0)
        except FabricscopeError as e:
            assert e.path == str(p)
            strict = None
        lenient = fabricscope.load(p, format=fmt, host="h", time=0, strict=False)
    report = lenient.reports[0]
    if strict is not None:
        # Nothing was wrong: lenient mode reads exactly the same rows and skips nothing.
        assert report.bad_records == 0
        assert lenient.samples.height == strict.samples.height
    assert report.rows == lenient.samples.height


good_line = st.builds(
    lambda n, v: f'ok_{n}_total{{instance="h"}} {v} 1764686822000\n',
    st.integers(0, 10**6),
    st.integers(0, 2**64 - 1),
)
bad_line = st.sampled_from(
    [
        "bad{ 1\n",
        'x_total{a="1",a="2"} 1\n',
        "9starts_with_digit 1\n",
        'x_total{a="unterminated} 1\n',
        "x_total not_a_number\n",
        "x_total\x00 1\n",
    ]
)


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.booleans(), good_line, bad_line), min_size=1, max_size=40))
def test_lenient_keeps_every_good_line_and_counts_every_bad_one(lines: list[tuple[bool, str, str]]) -> None:
    text = "".join(good if is_good else bad for is_good, good, bad in lines)
    goods = [int(good.split()[1]) for is_good, good, _ in lines if is_good]
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "mixed.prom"
        p.write_text(text, encoding="utf-8")
        res = fabricscope.load(p, format="prometheus", strict=False)
    assert res.samples["value_u64"].to_list() == goods
    assert res.bad_records == len(lines) - len(goods)


@settings(max_examples=40, deadline=None)
@given(n_labels=st.integers(1, 60), limit=st.integers(1, 60))
def test_label_limit_is_exact(n_labels: int, limit: int) -> None:
    from fabricscope.exceptions import LimitExceededError

    labels = ",".join(f'l{i}="v"' for i in range(n_labels))
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "labels.prom"
        p.write_text(f"x_total{{{labels}}} 1 1764686822000\n", encoding="utf-8")
        if n_labels > limit:
            try:
                fabricscope.load(p, host="h", limits={"max_labels": limit})
            except LimitExceededError as e:
                assert (e.line, e.byte_offset) == (1, 0) and "max_labels" in str(e)
            else:
                raise AssertionError("the label limit did not apply")
        else:
            assert fabricscope.load(p, host="h", limits={"max_labels": limit}).samples.height == 1
