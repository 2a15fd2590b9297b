# Two entry points, each doing its own set-up in .venv:
#   make demo   trains SB3 PPO on 16 remote CartPole sub-envs and reports return and steps/s
#   make test   runs the whole test suite (what CI runs)
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: demo test bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

# torch is pinned first to the CPU build this machine keeps on disk, so Stable-Baselines3
# does not pull a multi-gigabyte CUDA build from the index.
$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet --disable-pip-version-check "torch==2.13.0"
	$(BIN)/pip install --quiet --disable-pip-version-check -e ".[test]"
	touch $@

demo: $(VENV)/.installed
	$(BIN)/python examples/train_ppo.py

test: $(VENV)/.installed
	$(BIN)/python -m pytest

bench: $(VENV)/.installed
	$(BIN)/python benchmarks/single_session.py
	$(BIN)/python benchmarks/vector.py
	$(BIN)/python benchmarks/codec.py
	$(BIN)/python benchmarks/coding_step.py

clean:
	rm -rf $(VENV) *.egg-info
