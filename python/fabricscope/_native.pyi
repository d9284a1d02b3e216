"""Type stubs for the Rust extension ``fabricscope._native`` (private; use ``fabricscope``)."""

from collections.abc import Iterator
from os import PathLike
from typing import Any

__version__: str
SCHEMA_VERSION: int
DEBUG_BUILD: bool

class FabricscopeError(Exception):
    path: str | None
    line: int | None
    byte_offset: int | None
    expected: str | None
    found: str | None

class InputError(FabricscopeError): ...
class FormatError(FabricscopeError): ...
class UnknownFormatError(FormatError): ...
class DecompressionError(FormatError): ...
class LimitExceededError(FabricscopeError): ...
class InternalError(FabricscopeError): ...

class _ArrowStream:
    """An Arrow table or batch exporting ``__arrow_c_stream__``/``__arrow_c_array__``."""

    def __arrow_c_stream__(self, requested_schema: object | None = None) -> object: ...

class _ArrowArray:
    """An Arrow array (Arrow PyCapsule interface)."""

    def __arrow_c_array__(self, requested_schema: object | None = None) -> tuple[object, object]: ...

class _ArrowSchema:
    def __arrow_c_schema__(self) -> object: ...

def read(
    paths: list[str | PathLike[str]],
    *,
    format: str | None = None,
    host: str | None = None,
    time_ns: int | None = None,
    strict: bool = True,
    batch_rows: int = ...,
    limits: dict[str, int] | None = None,
    link_speed_gbps: float | None = None,
    bin_seconds: float = 1.0,
    readers: ReaderPool | None = None,
) -> tuple[_ArrowStream, _ArrowStream, dict[str, _ArrowStream], list[dict[str, Any]]]:
    """Parse inputs with the GIL released; returns (samples, attributes, other tables, reports).

    ``limits`` overrides reader limits by name (:func:`limits` lists them); an unknown name or a
    value that is not a positive integer raises ``ValueError`` naming it. ``readers``: a pool that
    reads of one run share (see :class:`ReaderPool`).
    """

def read_buffer(
    data: bytes,
    name: str,
    *,
    format: str | None = None,
    host: str | None = None,
    time_ns: int | None = None,
    strict: bool = True,
    batch_rows: int = ...,
    limits: dict[str, int] | None = None,
) -> tuple[_ArrowStream, _ArrowStream, dict[str, _ArrowStream], list[dict[str, Any]]]:
    """Parse one in-memory input named ``name`` (an API response, a scrape); returns what :func:`read` returns."""

def known_prometheus_metrics(names: list[str]) -> list[str]:
    """The metric names among ``names`` that the counter vocabulary knows."""

def remote_read_request(start_ms: int, end_ms: int, matchers: list[tuple[str, str, str]]) -> bytes:
    """A snappy-compressed remote read ``ReadRequest`` for ``[start_ms, end_ms]`` (inclusive).

    ``matchers`` are ``(label, op, value)`` with ``op`` one of ``=``, ``!=``, ``=~``, ``!~``.
    """

class ReaderPool:
    """Readers kept from one read for the next of the same run.

    A reader that finished a Prometheus input keeps the label sets it resolved; the next input
    it reads (the same fabric's next scrape) finds them resolved. What each input reads is what
    it reads alone. The pool holds its readers' caches until it is dropped.
    """

    def __init__(self) -> None: ...

class Scanner(Iterator[tuple[str, Any]]):
    """Background parser yielding ``("samples" | "attributes", RecordBatch)``."""

    def __init__(
        self,
        paths: list[str | PathLike[str]],
        *,
        format: str | None = None,
        host: str | None = None,
        time_ns: int | None = None,
        strict: bool = True,
        batch_rows: int = ...,
        limits: dict[str, int] | None = None,
        link_speed_gbps: float | None = None,
        bin_seconds: float = 1.0,
        readers: ReaderPool | None = None,
        regular_files_only: bool = False,
    ) -> None: ...
    def __iter__(self) -> Scanner: ...
    def __next__(self) -> tuple[str, Any]: ...
    def reports(self) -> list[dict[str, Any]] | None: ...
    @property
    def bytes_read(self) -> int: ...
    @property
    def bytes_total(self) -> int: ...

def formats() -> list[dict[str, Any]]: ...
def compression(head: bytes) -> str | None: ...
def counters() -> list[dict[str, Any]]:
    """One dict per canonical counter.

    Keys: ``name``, ``unit``, ``kind``, ``overflow``, ``layer``, ``per_priority``, ``description``,
    ``roles`` (role names), ``role_ranks`` (the counter's preference in each role, 1 first),
    ``spellings``, ``drivers``.
    """

def samples_schema_arrow() -> _ArrowSchema: ...
def events_schema_arrow() -> _ArrowSchema: ...
def attributes_schema_arrow() -> _ArrowSchema: ...
def rates(
    table: Any,
    counters: list[tuple[int, str]],
    *,
    gap_factor: float = 3.0,
    min_gap_s: float = 0.0,
    min_rows_per_task: int | None = None,
) -> tuple[_ArrowStream, _ArrowArray]:
    """Rate kernel over an Arrow table; releases the GIL and runs on the rayon pool.

    ``table`` holds ``time`` (int64 ns), the six series key codes, ``value_u64``, ``value_f64``,
    ``scale`` and ``is_counter``; ``counters`` names the counter codes, ``(code, name)``: the
    kernel looks each name's overflow rule up in the vocabulary (codes not named and names
    outside it are 64-bit wrapping). Returns the intervals (``series, start, end, interval_s,
    value, delta, rate_per_s, scale, wrapped, saturated, reset, gap``; ``start`` and ``end`` in
    int64 ns) and, per series number, the input row of the series' first reading (uint32).
    ``min_rows_per_task`` (default about 64k) only changes how the work is split over threads.
    """

def overflow_rules() -> list[tuple[str, str, int, int]]:
    """Every vocabulary counter's overflow rule as the kernel applies it: ``(counter, mode, bits, register_max)``."""

def links_schema_arrow() -> _ArrowSchema: ...
def limits(overrides: dict[str, int] | None = None) -> list[tuple[str, int]]:
    """The reader limits by name: the defaults with ``overrides`` applied (validated as the readers do)."""

def expand(paths: list[str | PathLike[str]], format: str | None = None) -> list[tuple[str, str]]:
    """What ``paths`` expand to, in reading order: ``(path, kind)``.

    ``kind`` is ``file``, ``walked``, ``sysfs-tree`` or ``failed``.
    """

def parse_directive_line(line: str) -> tuple[str, str | int] | None:
    """``("host", name)``, ``("device", netdev)`` or ``("time", ns)`` for a directive line, else None."""

def normalize_guid(text: str) -> str | None:
    """A node GUID as every reader stores it (``0x`` + 16 lowercase hex digits), or None."""

def merge_links(tables: list[Any]) -> _ArrowStream | None:
    """Several inputs' links tables (Arrow) as one: each cable once, tiers over the whole fabric; None without links."""

def hca_host_device(description: str) -> tuple[str, str] | None:
    """The (host, RDMA device) an HCA's node description names (rdma-ndd's ``%h %d``), or None."""

def switch_name(description: str) -> str:
    """A switch's own name from its node description (``MF0;ib-leaf01:MQM9700/U1`` is ``ib-leaf01``)."""

def _panic_for_test() -> None: ...
