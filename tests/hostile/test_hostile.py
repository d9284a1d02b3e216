"""Hostile input for every format: truncations, wrong encodings, NUL bytes, huge lines
and numbers, label bombs, decompression bombs, symlink loops, unreadable files, lying capture
lengths. Each must give a ``fabricscope.exceptions`` error naming the file and the offset, or in
lenient mode keep the good records and count the bad ones; never a crash or an unbounded read.

Inputs are generated at test time from the real fixtures (``corpus.py``); nothing large is
committed.
"""

from __future__ import annotations

import gzip
import logging
import struct
import tempfile
from pathlib import Path

import fabricscope
import pytest
from fabricscope.exceptions import (
    DecompressionError,
    FabricscopeError,
    FormatError,
    InputError,
    LimitExceededError,
    UnknownFormatError,
)

from tests.hostile.corpus import (
    BINARY,
    FIXTURES,
    gzip_bomb,
    random_offsets,
    structural_boundaries,
    zstd_bomb,
)

TEXT = sorted(set(FIXTURES) - BINARY)
T0 = "2026-12-02T14:00:00Z"


@pytest.fixture(autouse=True)
def _quiet() -> None:
    # Lenient reads log one warning per skipped record; thousands of cuts would flood the output.
    logging.getLogger("fabricscope").setLevel(logging.ERROR)


def load(path: Path, fmt: str = "auto", strict: bool = True, **kw: object) -> fabricscope.ReadResult:
    return fabricscope.load(path, format=fmt, strict=strict, host="h", time=T0, **kw)  # type: ignore[arg-type]


def rows(res: fabricscope.ReadResult) -> int:
    """Every row an input produced: samples, attributes and the other tables (some formats, such
    as nccl-tests or cxl list, produce only the latter)."""
    return res.samples.height + res.attributes.height + sum(t.height for t in res.tables.values())


def assert_names_file_and_offset(e: FabricscopeError, path: Path, size: int) -> None:
    assert e.path == str(path)
    assert e.byte_offset is not None and 0 <= e.byte_offset <= size, (e.byte_offset, size, str(e))
    assert str(path) in str(e)


# --- truncation -------------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", sorted(FIXTURES))
def test_truncated_at_every_structural_boundary(fmt: str, tmp_path: Path) -> None:
    """Cut after every line (text) or record/block (captures): a later cut never yields fewer rows
    (no good record lost, none invented), the uncut file gives all rows, strict errors name the
    file and an offset inside it."""
    data = FIXTURES[fmt].read_bytes()
    full = load(FIXTURES[fmt], fmt)
    assert rows(full) > 0 and full.bad_records == 0
    cut_file = tmp_path / f"cut.{fmt}"
    heights = []
    for cut in structural_boundaries(fmt, data):
        cut_file.write_bytes(data[:cut])
        lenient = load(cut_file, fmt, strict=False)
        heights.append(rows(lenient))
        assert lenient.bad_records <= 2, (cut, lenient.reports[0].errors)
        try:
            strict = load(cut_file, fmt)
        except FormatError as e:
            assert_names_file_and_offset(e, cut_file, cut)
        else:
            assert rows(strict) == rows(lenient)
    heights.append(rows(full))
    assert heights == sorted(heights), heights


@pytest.mark.parametrize("fmt", sorted(FIXTURES))
def test_truncated_at_random_offsets(fmt: str, tmp_path: Path) -> None:
    """Cut mid-record: the broken record is an error at or before the cut (strict) or at most two
    counted records (the record and its unclosed section), the rows before it are kept."""
    data = FIXTURES[fmt].read_bytes()
    full = rows(load(FIXTURES[fmt], fmt))
    cut_file = tmp_path / f"cut.{fmt}"
    for cut in random_offsets(data):
        cut_file.write_bytes(data[:cut])
        lenient = load(cut_file, fmt, strict=False)
        assert rows(lenient) <= full
        assert lenient.bad_records <= 2, (cut, lenient.reports[0].errors)
        try:
            load(cut_file, fmt)
        except FormatError as e:
            assert_names_file_and_offset(e, cut_file, cut)
            assert lenient.bad_records >= 1


def test_truncated_prometheus_keeps_exactly_the_complete_samples(tmp_path: Path) -> None:
    lines = FIXTURES["prometheus"].read_bytes().splitlines(keepends=True)
    cut_file = tmp_path / "cut.prom"
    for n in range(len(lines) + 1):
        cut_file.write_bytes(b"".join(lines[:n]))
        expected = sum(1 for line in lines[:n] if line.strip() and not line.startswith(b"#"))
        assert load(cut_file, "prometheus").samples.height == expected


def test_a_last_line_without_newline_is_read_and_reported_as_possibly_cut(tmp_path: Path) -> None:
    """``x_total 123456`` cut to ``x_total 12`` still parses: the report must say it may be cut."""
    p = tmp_path / "cut.prom"
    p.write_bytes(b"a_total 1\nx_total 12")
    res = load(p)
    assert res.samples["value_u64"].to_list() == [1, 12]
    assert res.reports[0].warnings == [
        "the input does not end with a newline at byte 20: its last line may be truncated"
    ]
    p.write_bytes(b"a_total 1\nx_total 123456\n")
    assert load(p).reports[0].warnings == []


def test_truncated_gzip_is_a_decompression_error_with_offset(tmp_path: Path) -> None:
    raw = FIXTURES["sysfs-grep"].read_bytes()
    packed = gzip.compress(raw)
    cut = tmp_path / "cut.txt.gz"
    cut.write_bytes(packed[: len(packed) // 2])
    with pytest.raises(DecompressionError) as ei:
        load(cut)
    assert ei.value.path == str(cut)
    assert ei.value.byte_offset is not None and 0 < ei.value.byte_offset < len(raw)
    # A file-level failure: lenient mode reports it failed rather than guessing at the rest.
    res = load(cut, strict=False)
    assert res.reports[0].failed and res.samples.height == 0


# --- encodings and bytes ---------------------------------------------------------------------


@pytest.mark.parametrize("fmt", TEXT)
@pytest.mark.parametrize("bom", [b"\xff\xfe", b"\xfe\xff"], ids=["utf16le", "utf16be"])
def test_utf16_is_refused_at_byte_zero_with_advice(fmt: str, bom: bytes, tmp_path: Path) -> None:
    codec = "utf-16-le" if bom == b"\xff\xfe" else "utf-16-be"
    p = tmp_path / "utf16.txt"
    p.write_bytes(bom + FIXTURES[fmt].read_text(encoding="utf-8").encode(codec))
    for forced in ("auto", fmt):
        with pytest.raises(FormatError) as ei:
            load(p, forced)
        assert (ei.value.path, ei.value.line, ei.value.byte_offset) == (str(p), 1, 0)
        assert ei.value.expected == "UTF-8 text" and "iconv" in str(ei.value)
        # Not a record problem: lenient mode fails the whole input, with the same message.
        report = load(p, forced, strict=False).reports[0]
        assert report.failed and "iconv" in report.errors[0]


@pytest.mark.parametrize("fmt", TEXT)
def test_utf16_without_bom_is_not_guessed(fmt: str, tmp_path: Path) -> None:
    p = tmp_path / "utf16.txt"
    p.write_bytes(FIXTURES[fmt].read_text(encoding="utf-8").encode("utf-16-le"))
    with pytest.raises(FabricscopeError) as ei:
        load(p)
    assert isinstance(ei.value, (UnknownFormatError, FormatError)) and ei.value.path == str(p)


@pytest.mark.parametrize("fmt", TEXT)
def test_utf8_bom_is_skipped_and_rows_are_unchanged(fmt: str, tmp_path: Path) -> None:
    p = tmp_path / FIXTURES[fmt].name  # the same name: some formats take the device from it
    p.write_bytes(b"\xef\xbb\xbf" + FIXTURES[fmt].read_bytes())
    with_bom = load(p, fmt).samples
    assert with_bom.drop("source").equals(load(FIXTURES[fmt], fmt).samples.drop("source"))


def test_latin1_label_value_is_one_bad_record(tmp_path: Path) -> None:
    p = tmp_path / "latin1.prom"
    p.write_bytes(b'a_total{x="caf\xe9"} 1\ny_total 3\n')
    with pytest.raises(FormatError) as ei:
        load(p)
    assert (ei.value.line, ei.value.byte_offset, ei.value.expected) == (1, 0, "a UTF-8 label value")
    res = load(p, strict=False)
    assert (res.samples.height, res.bad_records) == (1, 1)


def test_nul_bytes_inside_a_record(tmp_path: Path) -> None:
    p = tmp_path / "nul.prom"
    p.write_bytes(b"a_total 1\nx_to\x00tal 2\ny_total 3\n")
    with pytest.raises(FormatError) as ei:
        load(p)
    assert (ei.value.path, ei.value.line, ei.value.byte_offset) == (str(p), 2, 10)
    res = load(p, strict=False)
    assert (res.samples.height, res.bad_records) == (2, 1)
    assert res.samples["value_u64"].to_list() == [1, 3]


def test_a_block_of_nul_bytes_from_a_crash(tmp_path: Path) -> None:
    """A file system that lost the tail of a file after a crash fills it with NUL bytes."""
    p = tmp_path / "crashed.prom"
    good = b"a_total 1\nb_total 2\n"
    p.write_bytes(good + b"\x00" * 65536 + b"\n" + b"c_total 3\n")
    with pytest.raises(FormatError) as ei:
        load(p, "prometheus")
    assert (ei.value.line, ei.value.byte_offset) == (3, len(good))
    res = load(p, "prometheus", strict=False)
    assert (res.samples.height, res.bad_records) == (3, 1)
    zeros = tmp_path / "zeros.bin"
    zeros.write_bytes(b"\x00" * 65536)
    with pytest.raises(UnknownFormatError) as ui:
        load(zeros)
    assert ui.value.path == str(zeros)


@pytest.mark.parametrize("fmt", sorted(FIXTURES))
def test_random_garbage_forced_into_every_reader(fmt: str, tmp_path: Path) -> None:
    """Bytes that are no format at all, read as each format: an error naming the file, or rows
    with counted bad records; never an exception from outside fabricscope."""
    rng = __import__("random").Random(fmt)
    p = tmp_path / "garbage"
    for size in (1, 7, 100, 5000):
        p.write_bytes(bytes(rng.randrange(256) for _ in range(size)))
        try:
            res = load(p, fmt, strict=False)
        except FabricscopeError as e:
            assert e.path == str(p)
        else:
            assert res.reports[0].rows == res.samples.height


# --- huge lines and numbers ------------------------------------------------------------------


def test_a_100_mb_single_line_is_one_limit_error(tmp_path: Path) -> None:
    p = tmp_path / "long.prom"
    head = b"a_total 1\n"
    with p.open("wb") as f:
        f.write(head)
        chunk = b"x" * (1 << 20)
        for _ in range(100):
            f.write(chunk)
        f.write(b" 5\nb_total 2\n")
    with pytest.raises(LimitExceededError) as ei:
        load(p)
    assert (ei.value.path, ei.value.line, ei.value.byte_offset) == (str(p), 2, len(head))
    assert "max_line_bytes" in str(ei.value)
    res = load(p, strict=False)
    assert (res.samples.height, res.bad_records) == (2, 1)
    assert res.samples["value_u64"].to_list() == [1, 2]
    # The same line compressed (100 KB on disk): the limit holds on the decompressed stream.
    gz = tmp_path / "long.prom.gz"
    gz.write_bytes(gzip.compress(p.read_bytes(), 1))
    res = load(gz, strict=False)
    assert (res.samples.height, res.bad_records) == (2, 1)


def test_the_line_limit_is_an_override(tmp_path: Path) -> None:
    # The limit bounds lines that outgrow the 4 MiB read chunk (docs/security.md): a 6 MiB line.
    p = tmp_path / "wide.prom"
    p.write_bytes(b'a_total{v="' + b"y" * (6 << 20) + b'"} 1\n')
    with pytest.raises(LimitExceededError) as ei:
        load(p, "prometheus")
    assert (ei.value.line, ei.value.byte_offset) == (1, 0)
    assert load(p, "prometheus", limits={"max_line_bytes": 8 << 20}).samples.height == 1
    assert load(p, "prometheus", max_line_bytes=8 << 20).samples.height == 1


def test_numbers_above_2_64_and_negative_counters(tmp_path: Path) -> None:
    # Prometheus values are floats by specification: kept as floats, never wrapped to integers.
    prom = tmp_path / "big.prom"
    prom.write_bytes(b"a_total 18446744073709551616\nb_total 18446744073709551615\nc_total -5\nd 1e400\n")
    s = load(prom).samples
    assert s["value_u64"].to_list() == [None, 2**64 - 1, None, None]
    assert s["value_f64"].to_list() == [2.0**64, None, -5.0, float("inf")]
    # Formats whose counters are unsigned 64-bit integers refuse both, with file, line and offset.
    eth = tmp_path / "eth0.txt"
    eth.write_bytes(b"NIC statistics:\n     rx_packets: 18446744073709551616\n     tx_packets: -5\n     rx_bytes: 7\n")
    with pytest.raises(FormatError) as ei:
        load(eth)
    assert (ei.value.line, ei.value.byte_offset) == (2, 16)
    res = load(eth, strict=False)
    assert (res.samples["value_u64"].to_list(), res.bad_records) == ([7], 2)
    grep = tmp_path / "counters.txt"
    base = b"/sys/class/infiniband/mlx5_0/ports/1/counters/"
    grep.write_bytes(
        base + b"port_xmit_data:18446744073709551616\n" + base + b"port_rcv_data:-5\n" + base + b"port_rcv_packets:5\n"
    )
    res = load(grep, strict=False)
    assert (res.samples["value_u64"].to_list(), res.bad_records) == ([5], 2)
    lp = tmp_path / "t.lp"
    lp.write_bytes(
        b"infiniband,device=mlx5_0,host=h,port=1 port_xmit_data=18446744073709551616i 1737652060000000000\n"
        b"infiniband,device=mlx5_0,host=h,port=1 port_rcv_packets=5i 1737652060000000000\n"
    )
    with pytest.raises(FormatError) as ei:
        load(lp)
    assert (ei.value.line, ei.value.byte_offset) == (1, 0)
    res = load(lp, strict=False)
    assert (res.samples["value_u64"].to_list(), res.bad_records) == ([5], 1)


# --- labels ----------------------------------------------------------------------------------


def test_label_count_bomb_names_max_labels_and_the_override_lifts_it(tmp_path: Path) -> None:
    p = tmp_path / "labels.prom"
    first = b'ok_total{instance="h"} 1\n'
    bomb = b"bomb_total{" + b",".join(b'l%d="v"' % i for i in range(10_000)) + b"} 1\n"
    p.write_bytes(first + bomb + b'ok2_total{instance="h"} 2\n')
    with pytest.raises(LimitExceededError) as ei:
        load(p)
    assert (ei.value.line, ei.value.byte_offset) == (2, len(first))
    assert "max_labels" in str(ei.value)
    res = load(p, strict=False)
    assert (res.samples.height, res.bad_records) == (2, 1)
    assert load(p, limits={"max_labels": 10_001}).samples.height == 3


def test_repeated_and_deeply_nested_labels(tmp_path: Path) -> None:
    p = tmp_path / "dup.prom"
    p.write_bytes(b'a_total{x="1",x="2"} 1\ny_total 3\n')
    with pytest.raises(FormatError) as ei:
        load(p)
    assert ei.value.expected == "distinct label names in one series"
    assert (load(p, strict=False).samples.height, load(p, strict=False).bad_records) == (1, 1)
    # Braces, quotes and escapes nested 100k deep inside one label value are just text.
    nested = tmp_path / "nested.prom"
    value = "{" * 50_000 + '\\"' * 10_000 + "}" * 50_000
    nested.write_text(f'a_total{{v="{value}",instance="h"}} 7\n', encoding="utf-8")
    s = load(nested, "prometheus").samples  # one line longer than the 64 KiB detection window
    assert s["value_u64"].to_list() == [7]
    unterminated = tmp_path / "open.prom"
    unterminated.write_bytes(b'a_total{v="' + b"{" * 100_000 + b"\nb_total 2\n")
    res = load(unterminated, "prometheus", strict=False)
    assert (res.samples["value_u64"].to_list(), res.bad_records) == ([2], 1)


# --- bombs -----------------------------------------------------------------------------------

HEAD = b"# TYPE x counter\nx 1\n"


def test_gzip_bomb_stops_at_the_ratio_limit(tmp_path: Path) -> None:
    p = tmp_path / "bomb.prom.gz"
    size = gzip_bomb(p, HEAD, 256 << 20)
    assert size < 300_000  # 256 MiB behind a quarter of a megabyte
    with pytest.raises(LimitExceededError) as ei:
        load(p)
    assert ei.value.path == str(p) and "max_decompression_ratio" in str(ei.value)
    assert (64 << 20) <= ei.value.byte_offset <= (70 << 20)
    with pytest.raises(LimitExceededError, match="max_decompressed_bytes"):
        load(p, limits={"max_decompressed_bytes": 1 << 20})


def test_zstd_bomb_stops_at_the_ratio_limit(tmp_path: Path) -> None:
    pytest.importorskip("zstandard")
    p = tmp_path / "bomb.prom.zst"
    size = zstd_bomb(p, HEAD, 1 << 30)
    assert size < 200_000  # 1 GiB behind less than 200 KB
    with pytest.raises(LimitExceededError) as ei:
        load(p)
    assert ei.value.path == str(p) and "max_decompression_ratio" in str(ei.value)
    assert (64 << 20) <= ei.value.byte_offset <= (70 << 20)
    # Lenient mode cannot skip past a bomb: the input fails, with the same message.
    report = load(p, strict=False).reports[0]
    assert report.failed and "max_decompression_ratio" in report.errors[0]


def test_a_bomb_among_good_inputs_fails_only_itself_in_lenient_mode(tmp_path: Path) -> None:
    bomb = tmp_path / "a-bomb.prom.gz"
    gzip_bomb(bomb, HEAD, 128 << 20)
    good = tmp_path / "b-good.prom"
    good.write_bytes(b'y_total{instance="h"} 5\n')
    res = fabricscope.load(tmp_path, strict=False, time=T0, limits={"max_decompressed_bytes": 8 << 20})
    by_name = {Path(r.path).name: r for r in res.reports}
    assert by_name["a-bomb.prom.gz"].failed
    assert "max_decompressed_bytes" in by_name["a-bomb.prom.gz"].errors[0]
    assert res.samples["value_u64"].to_list() == [5]


def test_unknown_or_bad_limits_are_value_errors() -> None:
    with pytest.raises(ValueError, match="unknown limit"):
        fabricscope.load("sample_traces", limits={"max_lines": 5})
    with pytest.raises(ValueError, match="positive integer"):
        fabricscope.load("sample_traces", limits={"max_labels": 0})
    assert set(fabricscope.reading.scan.LIMITS) == {
        "max_line_bytes",
        "max_labels",
        "max_decompressed_bytes",
        "max_decompression_ratio",
        "max_document_bytes",
    }


def test_ufm_json_document_limit(tmp_path: Path) -> None:
    with pytest.raises(LimitExceededError) as ei:
        load(FIXTURES["ufm-json"], limits={"max_document_bytes": 4096})
    assert ei.value.byte_offset == 4096 and "max_document_bytes" in str(ei.value)


# --- file system -----------------------------------------------------------------------------


def test_directory_with_a_symlink_loop_reads_each_file_once(tmp_path: Path) -> None:
    d = tmp_path / "dumps"
    (d / "sub").mkdir(parents=True)
    (d / "sub" / "a.prom").write_bytes(b'a_total{instance="h"} 1\n')
    (d / "sub" / "loop").symlink_to(d, target_is_directory=True)
    (d / "self").symlink_to(".", target_is_directory=True)
    res = fabricscope.load(d, time=T0)
    assert res.samples["value_u64"].to_list() == [1]


def test_dangling_symlink_is_an_input_error_naming_it(tmp_path: Path) -> None:
    link = tmp_path / "gone.prom"
    link.symlink_to(tmp_path / "missing.prom")
    with pytest.raises(InputError) as ei:
        load(link)
    assert ei.value.path == str(link)
    d = tmp_path / "d"
    d.mkdir()
    (d / "gone.prom").symlink_to(tmp_path / "missing.prom")
    (d / "ok.prom").write_bytes(b'ok_total{instance="h"} 1\n')
    res = fabricscope.load(d, strict=False, time=T0)
    assert [r.failed for r in res.reports] == [True, False]
    assert res.samples.height == 1


def _reads_any_file() -> bool:
    """Whether this process reads a file whatever its mode (root with CAP_DAC_OVERRIDE)."""
    with tempfile.TemporaryDirectory() as d:
        probe = Path(d) / "probe"
        probe.write_bytes(b"x")
        probe.chmod(0)
        try:
            probe.read_bytes()
        except PermissionError:
            return False
        finally:
            probe.chmod(0o600)
    return True


# .ci/run runs as root, then reruns this test without the capabilities that bypass file modes.
@pytest.mark.skipif(_reads_any_file(), reason="this process reads files whatever their mode (root)")
def test_unreadable_file_and_directory(tmp_path: Path) -> None:
    f = tmp_path / "secret.prom"
    f.write_bytes(b"a_total 1\n")
    f.chmod(0)
    try:
        with pytest.raises(InputError) as ei:
            load(f)
        assert ei.value.path == str(f)
    finally:
        f.chmod(0o600)
    d = tmp_path / "locked"
    d.mkdir()
    (d / "x.prom").write_bytes(b"a_total 1\n")
    d.chmod(0)
    try:
        res = fabricscope.load(tmp_path, strict=False, time=T0)
        assert any(r.failed and r.path == str(d) for r in res.reports)
    finally:
        d.chmod(0o700)


# --- captures that lie -----------------------------------------------------------------------


def test_pcap_record_claiming_4_gib_is_an_error_at_its_header(tmp_path: Path) -> None:
    data = bytearray(FIXTURES["pcap"].read_bytes())
    records = structural_boundaries("pcap", bytes(data), most=10**6)
    middle = records[len(records) // 2]
    struct.pack_into("<II", data, middle + 8, 0xFFFF_FFFF, 0xFFFF_FFFF)  # incl_len, orig_len
    p = tmp_path / "lying.pcap"
    p.write_bytes(bytes(data))
    with pytest.raises(FormatError) as ei:
        load(p)
    assert ei.value.path == str(p) and ei.value.byte_offset == middle
    res = load(p, strict=False)
    assert res.bad_records == 1
    full = load(FIXTURES["pcap"]).samples.height
    assert 0 < res.samples.height < full  # the packets before the lie are kept


def test_pcapng_block_length_lies(tmp_path: Path) -> None:
    data = FIXTURES["pcapng"].read_bytes()
    blocks = structural_boundaries("pcapng", data)
    for bad_len in (0, 7, 0xFFFF_FFFC, len(data) * 2):
        lying = bytearray(data)
        struct.pack_into("<I", lying, blocks[2] + 4, bad_len)
        p = tmp_path / "lying.pcapng"
        p.write_bytes(bytes(lying))
        with pytest.raises(FormatError) as ei:
            load(p)
        assert ei.value.path == str(p) and ei.value.byte_offset == blocks[2], (bad_len, str(ei.value))
        assert load(p, strict=False).bad_records == 1


def test_snaplen_larger_than_the_file(tmp_path: Path) -> None:
    data = bytearray(FIXTURES["pcap"].read_bytes())
    struct.pack_into("<I", data, 16, 0xFFFF_FFFF)  # snaplen
    p = tmp_path / "snap.pcap"
    p.write_bytes(bytes(data))
    assert load(p).tables["packet_events"].height == load(FIXTURES["pcap"]).tables["packet_events"].height


# --- panics ----------------------------------------------------------------------------------


def test_a_rust_panic_is_an_internal_error_not_an_abort() -> None:
    from fabricscope import _native
    from fabricscope.exceptions import InternalError

    with pytest.raises(InternalError, match="internal error") as ei:
        _native._panic_for_test()
    assert isinstance(ei.value, FabricscopeError)


# --- command line ----------------------------------------------------------------------------


def test_cli_limit_flag_raises_and_lowers_limits(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from fabricscope.doors.cli import main

    p = tmp_path / "labels.prom"
    p.write_bytes(b'x_total{a="1",b="2",instance="h"} 1\n')
    assert main(["parse", "-q", "--limit", "max_labels=2", str(p)]) == 3
    assert "max_labels" in capsys.readouterr().err
    assert main(["parse", "-q", "--limit", "max_labels=3", "--limit", "max_decompression_ratio=50", str(p)]) == 0
    with pytest.raises(SystemExit) as ei:
        main(["parse", "--limit", "max_lines=5", str(p)])
    assert ei.value.code == 3  # usage error: UNKNOWN
    assert "max_line_bytes, max_labels" in capsys.readouterr().err
