# Three entry points, each doing its own set-up in .venv:
#   make demo   trains SB3 PPO on 16 remote CartPole sub-envs and reports return and steps/s (only the sb3 extra)
#   make lint   ruff (lint and format) and mypy, as configured in pyproject.toml
#   make check  lint, then the fast tiers of the suite (under 3 minutes): for every change
#   make docs   the documentation site (MkDocs, Material, mkdocstrings), built strictly into build/site
#   make fuzz   the protocol and spaces parsers under atheris for FUZZ_SECONDS (default 600); the
#               inputs it finds go to .fuzz-corpus/, a crash to crash-<sha1> (add it to tests/fuzz/regressions/)
#   make test   lint, then the whole test suite (what CI runs): it starts a Docker Engine when
#               none answers and builds the env images offline first (kept in Docker's cache),
#               and installs Debian's chromium and chromium-driver for the web page's tests
#               (and libseccomp2, for the sandbox's seccomp filter, and iproute2 and iptables,
#               for the simulated multi-host cluster, should they be missing)
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: demo lint check docs test images bench fuzz clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

# torch is installed first, a CPU build, so Stable-Baselines3 and TRL do not pull a multi-gigabyte
# CUDA build from PyPI: from pip's find-links alone when they hold it (this machine keeps
# torch-2.13.0+cpu on disk: no index is asked), else from PyTorch's CPU index, TORCH_INDEX.
# --no-deps: torch's own dependencies come with the next install, from PyPI.
TORCH := torch==2.13.0
TORCH_INDEX ?= https://download.pytorch.org/whl/cpu
INSTALL_TORCH := $(BIN)/pip install --quiet --disable-pip-version-check --no-deps --no-index "$(TORCH)" 2>/dev/null \
	|| $(BIN)/pip install --quiet --disable-pip-version-check --no-deps "$(TORCH)" --index-url $(TORCH_INDEX)

$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(INSTALL_TORCH)
	$(BIN)/pip install --quiet --disable-pip-version-check -e ".[test]"
	touch $@

# OpenEnv 0.10, the interoperability tests' peer, in a virtual environment of its own: its pins
# (MCP 1.x, FastMCP 3) differ from ours. The tests run its clients and servers as processes.
PEER_VENV := .venv-openenv
$(PEER_VENV)/.installed: tests/openenv010/requirements.txt
	$(PYTHON) -m venv $(PEER_VENV)
	$(PEER_VENV)/bin/pip install --quiet --disable-pip-version-check -r tests/openenv010/requirements.txt
	touch $@

# The demo needs only the sb3 extra (Stable-Baselines3 and rich), not the test extra.
$(VENV)/.demo-installed: pyproject.toml | $(BIN)/python
	$(INSTALL_TORCH)
	$(BIN)/pip install --quiet --disable-pip-version-check -e ".[sb3]"
	touch $@

demo: $(VENV)/.demo-installed
	$(BIN)/python examples/train_ppo.py

lint: $(VENV)/.installed
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

# The fast tiers: the pure layers (protocol, spaces) and their fuzzing, errors, faces and rewards,
# the import graph, the catalog and the docs build. No server process, container or cluster.
CHECK_TESTS := tests/protocol tests/spaces tests/fuzz openenv_gym/protocol openenv_gym/spaces \
	tests/test_errors.py tests/test_urls.py tests/test_manifest.py tests/test_face.py tests/test_task_sampling.py \
	tests/test_rewards.py tests/server/test_options.py tests/test_layers.py tests/test_lazy_imports.py \
	tests/test_registry.py tests/test_doctest_collection.py tests/test_docs_site.py

check: lint
	$(BIN)/python -m pytest -m "not slow" $(CHECK_TESTS)

# Strict: a warning (a broken link, a docstring that does not fit its signature) fails the build.
docs: $(VENV)/.installed
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

# The suite in two parts: first the tests that may run beside others, spread over TEST_WORKERS
# pytest-xdist workers (one pytest process leaves a core idle while a test waits on a server, a
# container or a sandbox; each file stays on one worker, so its module fixtures start once), then
# alone the tests marked serial, whose checks see the whole machine. Both parts run even when the
# first fails.
TEST_WORKERS ?= 2

test: $(VENV)/.installed $(PEER_VENV)/.installed lint
	@/sbin/ldconfig -p | grep -q 'libseccomp\.so\.2 ' || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libseccomp2 >/dev/null; }
	@command -v ip >/dev/null && command -v iptables >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq iproute2 iptables >/dev/null; }
	@if bash scripts/docker-engine.sh; then $(MAKE) --no-print-directory images; \
	elif [ -n "$$CI" ]; then echo "make test: CI runs the Docker tests, and no engine could be started" >&2; exit 1; \
	else echo "make test: no Docker Engine: the Docker tests will be skipped" >&2; fi
	@if ! bash scripts/browser.sh; then \
		if [ -n "$$CI" ]; then echo "make test: CI runs the browser tests, and Chromium could not be installed" >&2; exit 1; \
		else echo "make test: no Chromium: the web page's browser tests will be skipped" >&2; fi; fi
	@parallel=0; serial=0; \
	$(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadfile -m "not serial" || parallel=$$?; \
	$(BIN)/python -m pytest -m serial || serial=$$?; \
	exit $$(( parallel || serial ))

# The images the Docker tests use; each is rebuilt only when openenv-gym's code changed.
images: $(VENV)/.installed
	@command -v debootstrap >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null; }
	$(BIN)/openenv-gym build echo
	$(BIN)/openenv-gym build coding
	$(BIN)/openenv-gym build harness

bench: $(VENV)/.installed
	$(BIN)/pip install --quiet --disable-pip-version-check -e ".[bench]"
	$(BIN)/python benchmarks/single_session.py
	$(BIN)/python benchmarks/vector.py
	$(BIN)/python benchmarks/atari.py
	$(BIN)/python benchmarks/tools.py
	$(BIN)/python benchmarks/async_episodes.py
	$(BIN)/python benchmarks/codec.py
	$(BIN)/python benchmarks/coding_step.py
	$(BIN)/python benchmarks/git_step.py
	$(BIN)/python benchmarks/containers.py
	$(BIN)/python benchmarks/multihost.py
	$(BIN)/python benchmarks/ray_vector.py
	$(BIN)/python benchmarks/web_page.py
	$(BIN)/python benchmarks/harness.py
	$(BIN)/python benchmarks/soak.py --duration 1800

FUZZ_SECONDS ?= 600
fuzz: $(VENV)/.installed
	mkdir -p .fuzz-corpus
	$(BIN)/python -m tests.fuzz.atheris_target -dict=tests/fuzz/wire.dict -max_total_time=$(FUZZ_SECONDS) \
		.fuzz-corpus tests/fuzz/corpus tests/fuzz/regressions

clean:
	rm -rf $(VENV) $(PEER_VENV) *.egg-info
