"""Build the fuzz seed corpora from the real fixtures (nothing binary is committed).

Every fixture file under tests/fixtures, sample_traces and the shared reference fixtures is
read once with fabricscope's own detection; the file (cut to 8 KiB, fuzzers do better on small
seeds) goes to ``fuzz/corpus/<target>/`` for its format, and to ``fuzz/corpus/detect/`` too,
plus a gzip and a zstd copy of one seed per format so detection reaches the decompressors.

Usage: ``python fuzz/seed_corpus.py [ROOT ...]`` (run from the repository; needs the venv).

``python fuzz/seed_corpus.py --committed`` writes the small corpus kept in the repository,
``fuzz/seeds/<target>/``: from this repository's fixtures only (provenance in their SOURCES
files), at most :data:`COMMITTED_PER_TARGET` seeds of :data:`COMMITTED_SEED_BYTES` per target.
The CI smoke run (``rust/fabricscope-core/tests/fuzz_smoke.rs``) starts from these.
"""

from __future__ import annotations

import gzip
import hashlib
import logging
import sys
from pathlib import Path

import fabricscope
from fabricscope.exceptions import FabricscopeError

REPO = Path(__file__).resolve().parent.parent
DEFAULT_ROOTS = [REPO / "tests" / "fixtures", REPO / "sample_traces", Path("/work/shared/reference/fixtures")]
MAX_SEED_BYTES = 8 << 10
COMMITTED_PER_TARGET = 3
COMMITTED_SEED_BYTES = 4 << 10
# Readers detection does not pick from content alone (a protobuf body, an API document) take
# their seeds from these fixtures.
EXPLICIT = {
    "prometheus_api": [
        "tests/fixtures/prometheus-api/matrix.json",
        "tests/fixtures/prometheus-api/vector.json",
        "tests/fixtures/prometheus-api/error.json",
    ],
    "prometheus_remote_read": ["tests/fixtures/prometheus-api/read-response.bin"],
}
# Format name -> fuzz target; pcap and pcapng share the capture target.
TARGETS = {"pcap": "capture", "pcapng": "capture"}


def target_for(fmt: str) -> str:
    """The fuzz target that reads ``fmt`` (format names use dashes, target names underscores)."""
    return TARGETS.get(fmt, fmt.replace("-", "_"))


def put(corpus: Path, target: str, data: bytes) -> None:
    """Store one seed under its content hash (dedups identical fixtures)."""
    d = corpus / target
    d.mkdir(parents=True, exist_ok=True)
    (d / hashlib.sha1(data).hexdigest()).write_bytes(data)


def committed() -> int:
    """Write ``fuzz/seeds/``: the small corpus kept in the repository."""
    logging.getLogger("fabricscope").setLevel(logging.ERROR)
    out = REPO / "fuzz" / "seeds"
    counts: dict[str, int] = {}
    for target, files in EXPLICIT.items():
        for f in files:
            put(out, target, (REPO / f).read_bytes()[:COMMITTED_SEED_BYTES])
            counts[target] = counts.get(target, 0) + 1
    for root in (REPO / "tests" / "fixtures", REPO / "sample_traces"):
        for path in sorted(p for p in root.rglob("*") if p.is_file() and not p.is_symlink()):
            try:
                res = fabricscope.load(path, strict=False, time=0)
            except (FabricscopeError, ValueError, OSError):
                continue
            fmt = res.reports[0].format if res.reports else None
            if not fmt or fmt == "sysfs":
                continue
            raw = path.read_bytes()
            if raw[:2] == b"\x1f\x8b":
                raw = gzip.decompress(raw)
            data = raw[:COMMITTED_SEED_BYTES]
            target = target_for(fmt)
            if counts.get(target, 0) < COMMITTED_PER_TARGET:
                put(out, target, data)
                counts[target] = counts.get(target, 0) + 1
            if counts.get("detect", 0) < 2 * len(counts) and f"detect-{fmt}" not in counts:
                counts[f"detect-{fmt}"] = 1
                put(out, "detect", data[:1024])
                put(out, "detect", gzip.compress(data[:1024]))
                counts["detect"] = counts.get("detect", 0) + 2
    for d in sorted(out.iterdir()):
        print(f"{d.name:24} {sum(1 for _ in d.iterdir()):3} seeds")
    return 0


def main(argv: list[str]) -> int:
    """Write the corpora; print the count per target."""
    if argv == ["--committed"]:
        return committed()
    logging.getLogger("fabricscope").setLevel(logging.ERROR)  # fixtures without hosts are fine here
    roots = [Path(a) for a in argv] or DEFAULT_ROOTS
    corpus = REPO / "fuzz" / "corpus"
    compressed: set[str] = set()
    for root in roots:
        for path in sorted(p for p in root.rglob("*") if p.is_file() and not p.is_symlink()):
            try:
                res = fabricscope.load(path, strict=False, time=0)
            except (FabricscopeError, ValueError, OSError):
                continue
            fmt = res.reports[0].format if res.reports else None
            if not fmt or fmt == "sysfs":
                continue
            raw = path.read_bytes()
            if raw[:2] == b"\x1f\x8b":
                raw = gzip.decompress(raw)
            data = raw[:MAX_SEED_BYTES]
            put(corpus, target_for(fmt), data)
            put(corpus, "detect", data)
            if fmt not in compressed:
                compressed.add(fmt)
                put(corpus, "detect", gzip.compress(data[:4096]))
                try:
                    import zstandard

                    put(corpus, "detect", zstandard.ZstdCompressor().compress(data[:4096]))
                except ImportError:
                    pass
    for d in sorted(corpus.iterdir()):
        print(f"{d.name:20} {sum(1 for _ in d.iterdir()):5} seeds")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
