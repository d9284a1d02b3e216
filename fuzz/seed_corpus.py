"""Build the fuzz seed corpora from the real fixtures (nothing binary is committed).

Every fixture file under tests/fixtures, sample_traces and the shared reference fixtures is
read once with fabricscope's own detection; the file (cut to 8 KiB, fuzzers do better on small
seeds) goes to ``fuzz/corpus/<target>/`` for its format, and to ``fuzz/corpus/detect/`` too,
plus a gzip and a zstd copy of one seed per format so detection reaches the decompressors.

Usage: ``python fuzz/seed_corpus.py [ROOT ...]`` (run from the repository; needs the venv).
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


def main(argv: list[str]) -> int:
    """Write the corpora; print the count per target."""
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
