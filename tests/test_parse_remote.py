"""``fabricscope parse URL``: a real Prometheus server (Debian's) parsed like the files it holds.

The server holds the pfc-storm scenario (a TSDB built with promtool from its Prometheus text, exact
millisecond timestamps). Parsing the server over the scenario's range must write the rows and port
attributes parsing the files writes, and print the same kind of summary.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import polars as pl
import pytest

from tests.prometheus_server import serve_files

REPO = Path(__file__).resolve().parent.parent
FILES = REPO / "sample_traces" / "scenarios" / "pfc-storm" / "prometheus"
FABRICSCOPE = Path(sys.executable).with_name("fabricscope")
RANGE = ["--since", "2026-12-04T16:00:00Z", "--until", "2026-12-04T16:05:00Z"]
SAMPLE_KEY = ["time", "host", "device", "port", "priority", "counter", "value_u64", "value_f64", "scale", "is_counter"]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    # Without the binaries this fails (FileNotFoundError), never skips: CI installs them.
    with serve_files(sorted(FILES.glob("*.prom")), tmp_path_factory.mktemp("prometheus")) as url:
        yield url


def parse(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(FABRICSCOPE), "parse", *args], capture_output=True, text=True)


def canon(df: pl.DataFrame, key: list[str]) -> pl.DataFrame:
    return df.select(key).with_columns(pl.col(pl.Categorical).cast(pl.String)).sort(key, nulls_last=True)


def test_parse_a_server_writes_what_parsing_its_files_writes(server: str, tmp_path: Path) -> None:
    from_files = parse(str(FILES), "-o", str(tmp_path / "files.parquet"))
    # 7-second chunks: many requests streamed into one file, none lost or doubled at the edges.
    from_server = parse(server, *RANGE, "--chunk", "7", "-o", str(tmp_path / "server.parquet"))
    assert from_files.returncode == from_server.returncode == 0, from_server.stderr
    files = pl.read_parquet(tmp_path / "files.parquet")
    pulled = pl.read_parquet(tmp_path / "server.parquet")
    assert pulled.height == files.height == 10_836
    assert canon(pulled, SAMPLE_KEY).equals(canon(files, SAMPLE_KEY))
    assert set(pulled["source"].unique()) == {"prometheus-remote-read"}
    # The port attributes (exporters' *_info series) land in the side file, as for files.
    attr_key = ["time", "host", "device", "port", "key", "value"]
    files_attrs = pl.read_parquet(tmp_path / "files.attributes.parquet")
    pulled_attrs = pl.read_parquet(tmp_path / "server.attributes.parquet")
    assert pulled_attrs.height == files_attrs.height == 184  # each row once, however many chunks
    assert canon(pulled_attrs, attr_key).equals(canon(files_attrs, attr_key))
    # The same summary: one line for the format, the samples, the hosts, the time range, the outputs.
    out = from_server.stdout
    assert "read 1 input(s)" in out and "10,836 samples from 4 host(s) (40 devices)" in out
    assert "prometheus-remote-read      1   10,836            0  2026-12-04 16:00:00 .." in out
    assert f"wrote {tmp_path / 'server.parquet'}, {tmp_path / 'server.attributes.parquet'}" in out


def test_parse_a_server_and_files_together_as_json(server: str, tmp_path: Path) -> None:
    ethtool = FILES.parent / "ethtool"
    run = parse(server.replace("http://", "http://ops:pw-5e1d@"), str(ethtool), *RANGE, "--json", "-q")
    assert run.returncode == 0, run.stderr
    doc = json.loads(run.stdout)
    inputs = {i["path"]: i for i in doc["inputs"]}
    # The URL is shown without its credentials.
    assert "pw-5e1d" not in run.stdout + run.stderr
    assert inputs[server]["format"] == "prometheus-remote-read"
    assert inputs[server]["rows"] == 10_836
    ethtool_rows = sum(i["rows"] for p, i in inputs.items() if p != server)
    assert ethtool_rows > 0
    assert doc["samples"] == 10_836 + ethtool_rows


def test_parse_a_closed_port_names_the_url_and_writes_nothing(tmp_path: Path) -> None:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again when the block ends: nothing listens there
    out = tmp_path / "out.parquet"
    run = parse(f"http://127.0.0.1:{port}", "--retries", "0", "-o", str(out))
    assert run.returncode == 3
    assert f"cannot read input: http://127.0.0.1:{port}/api/v1/status/buildinfo: no response:" in run.stderr
    assert "Traceback" not in run.stderr
    assert list(tmp_path.iterdir()) == []


def test_parse_rejects_a_bad_range(server: str) -> None:
    backwards = parse(server, "--since", "2026-12-04T16:05:00Z", "--until", "2026-12-04T16:00:00Z")
    assert backwards.returncode == 3
    assert "empty time range: since 2026-12-04T16:05:00Z is not before until 2026-12-04T16:00:00Z" in backwards.stderr
    garbled = parse(server, "--since", "yesterday")
    assert garbled.returncode == 3  # usage error: UNKNOWN
    assert "argument --since: expected epoch seconds or ISO 8601" in garbled.stderr
