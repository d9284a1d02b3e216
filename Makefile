# Developer and CI entry points. Every target sets up what it needs on a fresh machine.
VENV    ?= .venv
PY      := $(VENV)/bin/python
PIP     := $(PY) -m pip --disable-pip-version-check -q

.PHONY: setup demo test test-rust test-python lint fmt bench docs clean

# Cargo profile of the Rust extension: release (fat LTO: the fastest code, the slowest build) or ci
# (optimised without LTO: builds in about half the time, runs the sample traces as fast).
PROFILE      ?= release
DEMO_PROFILE ?= ci
# maturin's build backend takes cargo arguments from this variable.
BUILD_WITH   = MATURIN_PEP517_ARGS="--profile $(1)"

$(PY):
	python3 -m venv $(VENV)
	$(PIP) install --upgrade pip

# Builds the Rust extension and installs the package with every extra the tests use
# (dashboard: streamlit; browser: playwright driving Debian's chromium; ray: the distributed engine).
setup: $(PY)
	$(call BUILD_WITH,$(PROFILE)) $(PIP) install -e '.[test,dashboard,browser,ray]'

# Only what the demo runs: the core and matplotlib for the report's plots (the `report` extra).
demo: $(PY)
	$(call BUILD_WITH,$(DEMO_PROFILE)) $(PIP) install -e '.[report]'
	$(VENV)/bin/fabricscope parse sample_traces/ -o out/samples.parquet
	$(VENV)/bin/fabricscope analyze sample_traces/ --json out/findings.json || test $$? -le 2
	$(VENV)/bin/fabricscope report sample_traces/ -o out/report.html || test $$? -le 2

test-rust:
	cargo test --workspace --locked

test-python: setup
	$(PY) -m pytest -q

test: test-rust test-python

lint: setup
	cargo fmt --all -- --check
	cargo clippy --workspace --all-targets --locked -- -D warnings
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

fmt:
	cargo fmt --all
	$(VENV)/bin/ruff format .

bench: setup
	$(PIP) install -e '.[test,bench]'
	$(PY) bench/bench_parse.py
	$(PY) bench/bench_cron.py
	$(PY) bench/bench_dashboard.py --skip-scale
	$(PY) bench/bench_e2e.py --sizes 1e6,1e7
	$(PY) bench/bench_ray.py --samples 1e6

docs: setup
	$(PY) docs/generate_counters.py > docs/counters.md
	$(PY) docs/generate_detectors.py

clean:
	rm -rf $(VENV) target out
