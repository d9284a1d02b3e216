# Developer and CI entry points. Every target sets up what it needs on a fresh machine.
VENV    ?= .venv
PY      := $(VENV)/bin/python
PIP     := $(PY) -m pip --disable-pip-version-check -q
# Verbose, for the installs that build the Rust core (see SHOW_BUILD).
PIP_V   := $(PY) -m pip --disable-pip-version-check -v

.PHONY: setup deps demo test test-rust test-python lint fmt bench docs clean wheel

# Cargo profile of the Rust extension and of `cargo test`: ci (optimised without LTO: builds in
# about half the time, runs the sample traces as fast) or release (fat LTO: the fastest code, the
# slowest build; `make bench` uses it). The extension is linked by zig, into
# target/x86_64-unknown-linux-gnu/<profile>; `cargo test` by the host's linker, into target/<profile>:
# cargo compiles the dependencies once for each (its fingerprint of a crate includes the linker).
PROFILE      ?= ci
DEMO_PROFILE ?= ci
# Every build of the Rust extension (the editable installs of setup and demo, `make wheel`,
# .ci/wheel_smoke.sh) links with zig for manylinux_2_28 (glibc 2.28: RHEL/Rocky 8 and later), using
# the venv's maturin and ziglang (no build isolation, PATH led by the venv so `python -m ziglang` is
# the venv's): the same flags and environment every time, so cargo compiles the crates once and the
# wheel reuses them. maturin's build backend takes cargo arguments from MATURIN_PEP517_ARGS.
WHEEL_PLATFORM ?= manylinux_2_28
BUILD_TOOLS  = 'maturin>=1.12.1,<2' 'ziglang>=0.13'
BUILD_WITH   = $(PIP) install $(BUILD_TOOLS) && PATH="$(abspath $(VENV))/bin:$$PATH" \
	MATURIN_PEP517_ARGS="--profile $(1) --zig --compatibility $(WHEEL_PLATFORM)"
# pip shows the build backend's output only with -v: keep cargo's lines (what it compiles, errors)
# and pip's verdict, so a build of several minutes shows its progress. pipefail keeps pip's status.
SHOW_BUILD   = grep --line-buffered -E '^ *(Compiling|Finished|Successfully installed)|error|ERROR'
setup demo wheel: SHELL := /bin/bash
setup demo wheel: .SHELLFLAGS := -o pipefail -c
BUILD_NOTE   = @echo "== building the Rust core (cargo profile $(1)): about 2-4 min on 2 idle cores (ci), 2x that with fat LTO (release), longer under load; cargo's progress follows"

$(PY):
	python3 -m venv $(VENV)
	$(PIP) install --upgrade pip

# Builds the Rust extension and installs the package with every extra the tests use
# (dashboard: streamlit; browser: playwright driving Debian's chromium; ray: the distributed engine).
SETUP_EXTRAS = test,dashboard,browser,ray
setup: $(PY)
	$(call BUILD_NOTE,$(PROFILE))
	$(call BUILD_WITH,$(PROFILE)) $(PIP_V) install --no-build-isolation -e '.[$(SETUP_EXTRAS)]' 2>&1 | $(SHOW_BUILD)

# What setup installs but the package itself: its dependencies, its extras' and the build tools,
# without building the Rust core (CI runs this while clippy compiles).
deps: $(PY)
	$(PY) .ci/requirements.py $(SETUP_EXTRAS) >$(VENV)/setup-requirements.txt
	$(PIP) install -r $(VENV)/setup-requirements.txt $(BUILD_TOOLS)

# Only what the demo runs: the core and matplotlib for the report's plots (the `report` extra).
# analyze and report exit with the fabric's Nagios status (the sample traces hold critical faults: 2);
# the demo shows it and fails only on 3 (UNKNOWN: an input could not be read) or 4 (internal error).
NAGIOS_SHOW = rc=$$?; echo "== exit status $$rc (Nagios: 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN)"; test $$rc -le 2
demo: $(PY)
	$(call BUILD_NOTE,$(DEMO_PROFILE))
	$(call BUILD_WITH,$(DEMO_PROFILE)) $(PIP_V) install --no-build-isolation -e '.[report]' 2>&1 | $(SHOW_BUILD)
	$(VENV)/bin/fabricscope parse sample_traces/ -o out/samples.parquet
	$(VENV)/bin/fabricscope analyze sample_traces/ --json out/findings.json; $(NAGIOS_SHOW)
	$(VENV)/bin/fabricscope report sample_traces/ -o out/report.html; $(NAGIOS_SHOW)

# The core's tests (the binding crate has none: tests/ drives it through Python).
test-rust:
	cargo test -p fabricscope-core --locked --profile $(PROFILE)

test-python: setup
	$(PY) -m pytest -q -n 2 --dist loadfile

test: test-rust test-python

lint: setup
	cargo fmt --all -- --check
	cargo clippy --workspace --all-targets --locked -- -D warnings
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

fmt:
	cargo fmt --all
	$(VENV)/bin/ruff format .

bench: PROFILE := release
bench: setup
	$(call BUILD_WITH,$(PROFILE)) $(PIP) install --no-build-isolation -e '.[test,bench]'
	$(PY) bench/bench_parse.py
	$(PY) bench/bench_cron.py
	$(PY) bench/bench_dashboard.py --skip-scale
	$(PY) bench/bench_e2e.py --sizes 1e6,1e7
	$(PY) bench/bench_ray.py --samples 1e6

docs: setup
	$(PY) docs/generate_counters.py > docs/counters.md
	$(PY) docs/generate_detectors.py
	$(PY) docs/generate_architecture.py

# A portable wheel for PyPI-style indexes: manylinux_2_28 (glibc 2.28: RHEL/Rocky 8, Ubuntu 20.04 and
# later), abi3 (one wheel for CPython >= 3.10), linked with zig (PyPI's ziglang) so no container is
# needed (maturin runs `python -m ziglang` with the python on PATH: the venv's); plus the sdist. `auditwheel show` prints the tag the wheel really qualifies for.
wheel: $(PY)
	$(PIP) install $(BUILD_TOOLS) 'auditwheel>=6'
	$(call BUILD_NOTE,$(PROFILE))
	PATH="$(abspath $(VENV))/bin:$$PATH" $(VENV)/bin/maturin build --profile $(PROFILE) --zig --compatibility $(WHEEL_PLATFORM) --interpreter $(PY) --out dist
	$(VENV)/bin/maturin sdist --out dist
	$(VENV)/bin/auditwheel show "$$(ls -t dist/fabricscope-*.whl | head -n 1)"

clean:
	rm -rf $(VENV) target out
