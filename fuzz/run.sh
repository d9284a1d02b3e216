#!/usr/bin/env bash
# Run every fuzz target, one after another on one core, for SECONDS each (default 900) or
# 10 million executions, whichever comes first. Seeds come from the real fixtures
# (seed_corpus.py); findings land in fuzz/artifacts/<target>/, logs in fuzz/logs/<target>.log,
# and the last line of each log gives the execution count.
#
#   fuzz/run.sh            # 15 minutes per target
#   fuzz/run.sh 60         # a one-minute smoke run per target
#   TARGETS="prometheus detect" fuzz/run.sh 300
#
# Needs `cargo install cargo-fuzz`; works on stable through RUSTC_BOOTSTRAP=1. Sanitizer builds go
# to their own target dir so they never invalidate the workspace's shared one.
set -euo pipefail
cd "$(dirname "$0")"
SECONDS_PER_TARGET="${1:-900}"
RUNS="${RUNS:-10000000}"
export RUSTC_BOOTSTRAP=1
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-/work/fuzz-target}"
PY="${PYTHON:-../.venv/bin/python}"
mkdir -p logs corpus
if [ -x "$PY" ] && [ ! -d corpus/detect ]; then
    (cd .. && "$PY" fuzz/seed_corpus.py)
fi
targets="${TARGETS:-$(cargo fuzz list)}"
# -a: debug assertions, so integer overflow panics instead of wrapping silently.
cargo fuzz build -a
status=0
for t in $targets; do
    mkdir -p "corpus/$t" "artifacts/$t"
    echo "== $t: up to ${SECONDS_PER_TARGET}s / $RUNS runs"
    # One process, one core (-fork=0, no -jobs): six engineers share two cores.
    if ! cargo fuzz run -a "$t" "corpus/$t" -- \
        -max_total_time="$SECONDS_PER_TARGET" -runs="$RUNS" -max_len=8192 -fork=0 -timeout=10 -rss_limit_mb=2048 \
        -artifact_prefix="artifacts/$t/" -print_final_stats=1 >"logs/$t.log" 2>&1; then
        echo "   FINDING: see logs/$t.log and artifacts/$t/"
        status=1
    fi
    grep -E "^stat::number_of_executed_units|^Done [0-9]+ runs" "logs/$t.log" | tail -2 | sed 's/^/   /'
done
exit $status
