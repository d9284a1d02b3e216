#!/usr/bin/env bash
# The package as a user gets it: build the wheel and the sdist with maturin, install the wheel (not
# editable) into a clean venv, and run every README command from that venv, the dashboard included
# (health endpoint, a page in headless Chromium, stopped with SIGTERM). No FABRICSCOPE_* variable is
# set: the wheel must carry everything its commands need.
#
# Usage: bash .ci/wheel_smoke.sh   (needs cargo, python3 with venv, and /usr/bin/chromium)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
WORK=$(mktemp -d "${TMPDIR:-/tmp}/fabricscope-wheel.XXXXXX")
DASH_PID=
cleanup() {
  if [ -n "$DASH_PID" ] && kill -0 "$DASH_PID" 2>/dev/null; then
    kill -KILL -- "-$DASH_PID" 2>/dev/null || true
  fi
  rm -rf "$WORK"
}
trap cleanup EXIT
unset FABRICSCOPE_DASHBOARD_APP FABRICSCOPE_DATA FABRICSCOPE_MAX_UPLOAD_MB FABRICSCOPE_REMOTE
PIP_FLAGS=(-q --disable-pip-version-check)

echo "== wheel: build the wheel (manylinux_2_28, abi3, linked by zig) and the sdist (maturin, profile ci) [$(date -u +%T)]"
# With the checkout's .venv (make setup), the build runs as every build of the Makefile does: its
# maturin and ziglang, its python first on PATH, the same cargo profile, so the crates its editable
# install compiled are reused. Without one, a build venv of its own.
BUILD=$ROOT/.venv
if ! { [ -x "$BUILD/bin/maturin" ] && "$BUILD/bin/python" -m ziglang version >/dev/null 2>&1; }; then
  BUILD=$WORK/build
  python3 -m venv "$BUILD"
  "$BUILD/bin/pip" install "${PIP_FLAGS[@]}" 'maturin>=1.12.1,<2' 'ziglang>=0.13'
fi
"$BUILD/bin/pip" install "${PIP_FLAGS[@]}" 'auditwheel>=6'
PATH="$BUILD/bin:$PATH" "$BUILD/bin/maturin" build --profile ci --zig --compatibility manylinux_2_28 \
  --out "$WORK/dist" --interpreter "$BUILD/bin/python"
"$BUILD/bin/maturin" sdist --out "$WORK/dist"
WHEEL=$(ls "$WORK"/dist/fabricscope-*.whl)
SDIST=$(ls "$WORK"/dist/fabricscope-*.tar.gz)

echo "== wheel: portable (auditwheel show: manylinux_2_28 or older, abi3) [$(date -u +%T)]"
"$BUILD/bin/auditwheel" show "$WHEEL" | tee "$WORK/auditwheel.txt"
python3 - "$WHEEL" "$WORK/auditwheel.txt" <<'EOF'
import re
import sys
from pathlib import Path

wheel, report = Path(sys.argv[1]).name, Path(sys.argv[2]).read_text()
assert "-abi3-" in wheel, f"not an abi3 wheel: {wheel}"
tags = re.findall(r"manylinux_2_(\d+)_x86_64", wheel)
assert tags and max(int(t) for t in tags) <= 28, f"the wheel's tag needs glibc > 2.28: {wheel}"
# auditwheel names the most compatible policy the wheel's symbols allow.
found = re.search(r'consistent\s+with\s+the\s+following\s+platform\s+tag:\s+"manylinux_2_(\d+)_x86_64"', report)
assert found and int(found.group(1)) <= 28, f"auditwheel does not confirm manylinux_2_28 or older:\n{report}"
print(f"{wheel}: auditwheel confirms manylinux_2_{found.group(1)}")
EOF

echo "== wheel: archive contents (the dashboard inside the package; its source in the sdist) [$(date -u +%T)]"
python3 - "$WHEEL" "$SDIST" <<'EOF'
import sys
import tarfile
import zipfile
from pathlib import Path

wheel, sdist = sys.argv[1], sys.argv[2]
names = set(zipfile.ZipFile(wheel).namelist())
app = sorted(
    str(p.relative_to("dashboards")) for p in Path("dashboards").rglob("*") if p.is_file() and "__pycache__" not in p.parts
)
missing = [a for a in app if f"fabricscope/_dashboard_app/{a}" not in names]
assert not missing, f"the wheel lacks dashboard files: {missing}"
assert not any(n.startswith("dashboards/") for n in names), "the wheel must not install a top-level dashboards/"
stray = sorted(n for n in names if "__pycache__" in n or n.endswith(".pyc"))
assert not stray, f"bytecode in the wheel: {stray}"
top = {n.split("/", 1)[1] for n in tarfile.open(sdist).getnames() if "/" in n}
need = {"dashboards/app.py", "rust/fabricscope-py/build.rs", "Cargo.lock", "pyproject.toml"}
assert need <= top, f"the sdist lacks {sorted(need - top)}"
print(f"wheel: {len(app)} dashboard files under fabricscope/_dashboard_app/; sdist: source tree complete")
EOF

echo "== wheel: the core install (no extra): what needs an extra names it (exit 3, one line) [$(date -u +%T)]"
python3 -m venv "$WORK/core"
"$WORK/core/bin/pip" install "${PIP_FLAGS[@]}" "$WHEEL"
core_check() { # core_check STATUS TEXT ARGS... : exit STATUS, stderr/stdout holds TEXT, no traceback
  local want=$1 text=$2; shift 2; local rc=0
  "$WORK/core/bin/fabricscope" "$@" > "$WORK/core.out" 2>&1 || rc=$?
  echo "\$ fabricscope $* -> exit $rc: $(tail -n 1 "$WORK/core.out")"
  [ "$rc" -eq "$want" ] && grep -qF "$text" "$WORK/core.out" && ! grep -q Traceback "$WORK/core.out" \
    || { cat "$WORK/core.out"; exit 1; }
}
core_check 2 "no plots (the \`report\` extra adds them)" report sample_traces/scenarios/pfc-storm -o "$WORK/core.html" -q
core_check 3 "pip install 'fabricscope[dashboard]'" dashboard --port 1
core_check 3 "pip install 'fabricscope[ray]'" analyze sample_traces/ethtool --engine ray
core_check 3 "usage:" analyze --no-such-option
core_check 2 "CRITICAL" analyze sample_traces/scenarios/pfc-storm

echo "== wheel: install into a clean venv (not editable) [$(date -u +%T)]"
python3 -m venv "$WORK/venv"
"$WORK/venv/bin/pip" install "${PIP_FLAGS[@]}" "$WHEEL[dashboard,report,browser]"
FS="$WORK/venv/bin/fabricscope"
PY="$WORK/venv/bin/python"
# The package imported is the installed one, not the checkout's python/ tree.
"$PY" -c 'import sys, fabricscope; assert fabricscope.__file__.startswith(sys.prefix), fabricscope.__file__'

# Every `fabricscope SUBCOMMAND` of the README is run below; `ran` records which.
RAN=()
run() { # run SUBCOMMAND ARGS... : exit status must be 0
  RAN+=("$1"); echo "\$ fabricscope $*"; "$FS" "$@" > "$WORK/last.out"; tail -n 3 "$WORK/last.out"
}
run_nagios() { # as run, but 1 (warning) and 2 (critical) are results, not failures
  RAN+=("$1"); echo "\$ fabricscope $*"; local rc=0; "$FS" "$@" > "$WORK/last.out" || rc=$?
  tail -n 3 "$WORK/last.out"; [ "$rc" -le 2 ] || { echo "exit $rc"; exit 1; }
}

echo "== wheel: the dashboard outside a checkout, without --data, says what to point it at [$(date -u +%T)]"
rc=0; (cd "$WORK" && "$FS" dashboard --port 8599) > "$WORK/nodata.out" 2>&1 || rc=$?
cat "$WORK/nodata.out"
[ "$rc" -eq 3 ] && grep -q "pass --data DIR" "$WORK/nodata.out" && [ "$(wc -l < "$WORK/nodata.out")" -eq 1 ]

echo "== wheel: the README's commands, from the installed package [$(date -u +%T)]"
sed -n '/^```toml$/,/^```$/p' docs/detectors.md | sed '1d;$d' > "$WORK/thresholds.toml"  # the documented example
run_nagios analyze sample_traces/
run_nagios analyze sample_traces/ --json "$WORK/findings.json" --profile ndr400 --config "$WORK/thresholds.toml"
run_nagios analyze sample_traces/ --hosts gpu01,gpu02 --since 2026-12-02T14:00:00Z
# The Ray engine needs the ray extra and a cluster; the partitioned path it shares is run locally here
# (tests/test_engines.py runs both engines against each other).
run_nagios analyze sample_traces/scenarios --engine local
run parse sample_traces/ -o "$WORK/out/samples.parquet"
test -s "$WORK/out/samples.parquet" && test -s "$WORK/out/samples.attributes.parquet"
if [ -d /sys/class/infiniband ]; then run parse /sys/class/infiniband -o "$WORK/now.parquet"
else run parse sample_traces/sysfs/gpu02 -o "$WORK/now.parquet"; fi
gzip -c sample_traces/prometheus/federate-rail0.prom > "$WORK/federate.prom.gz"
run parse "$WORK/federate.prom.gz" --lenient
run parse sample_traces/ethtool/roce01-eth2.log --format ethtool --host gpu17 --time 2026-12-02T14:00:00Z
run topology sample_traces/ib
run_nagios report sample_traces/scenarios/pfc-storm -o "$WORK/report.html" -q
run_nagios report sample_traces/scenarios/pfc-storm -o "$WORK/report.md" -q
grep -q "CRITICAL" "$WORK/report.html" && grep -q "^## Status: CRITICAL" "$WORK/report.md"
run advise --gpus 256 --gradient-gb 1 10 --bandwidth-gbps 400
run simulate "$WORK/sim" --scenario pfc-storm
test -s "$WORK/sim/truth.json"
run simulate "$WORK/e2e" --scale 64x12x10 --files 2
run formats
run counters --layer network
run_nagios cron --inputs sample_traces/ethtool --state "$WORK/state" --history "$WORK/history" \
  --textfile "$WORK/fabricscope.prom"
test -s "$WORK/fabricscope.prom"
echo "\$ python: the README's Python example"
"$PY" - <<'EOF'
import fabricscope

df = fabricscope.read("sample_traces/")
res = fabricscope.load("sample_traces/", strict=False)
frames = sum(1 for _ in fabricscope.scan("sample_traces/prometheus/federate-rail0.prom"))
findings = fabricscope.analyze("sample_traces/")
assert df.height > 0 and res.samples.height == df.height and frames >= 1 and findings.height > 0
assert fabricscope.counters().height and fabricscope.formats().height and fabricscope.profiles().height
print(f"read {df.height} samples, {findings.height} findings")
EOF

echo "== wheel: the dashboard (no FABRICSCOPE_DASHBOARD_APP): health, a page in Chromium, SIGTERM [$(date -u +%T)]"
RAN+=(dashboard)
PORT=$("$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
# Own session, so that its whole process tree can be found (and cleaned up) by session id.
setsid "$FS" dashboard --port "$PORT" > "$WORK/dashboard.log" 2>&1 &
DASH_PID=$!
"$PY" - "$PORT" "$WORK/dashboard.log" <<'EOF' || { cat "$WORK/dashboard.log"; exit 1; }
import sys
import time
import urllib.request

url = f"http://127.0.0.1:{sys.argv[1]}/_stcore/health"
deadline = time.monotonic() + 120
while True:
    try:
        with urllib.request.urlopen(url, timeout=2) as r:
            if r.read() == b"ok":
                break
    except OSError:
        pass
    if time.monotonic() > deadline:
        raise SystemExit(f"{url}: no answer in 120 s")
    time.sleep(0.5)
print(f"{url}: ok")
EOF
mkdir -p out/screenshots
"$PY" .ci/wheel_page.py "http://127.0.0.1:$PORT" out/screenshots/wheel-overview.png \
  || { cat "$WORK/dashboard.log"; exit 1; }
kill -TERM "$DASH_PID"  # fabricscope only: it must stop its Streamlit child and exit with it
rc=0; wait "$DASH_PID" || rc=$?
[ "$rc" -eq 0 ] || { echo "dashboard exited $rc after SIGTERM"; cat "$WORK/dashboard.log"; exit 1; }
if ps -eo sid= | grep -qx " *$DASH_PID"; then
  echo "processes of the dashboard survived SIGTERM:"; ps -o pid,cmd --sid "$DASH_PID"; exit 1
fi
DASH_PID=
echo "dashboard stopped cleanly on SIGTERM"

echo "== wheel: every README subcommand was run [$(date -u +%T)]"
missing=$(comm -23 <(grep -o '\.venv/bin/fabricscope [a-z]*' README.md | awk '{print $2}' | sort -u) \
                   <(printf '%s\n' "${RAN[@]}" | sort -u))
[ -z "$missing" ] || { echo "README commands not run from the wheel: $missing"; exit 1; }
echo "wheel smoke: ok"
