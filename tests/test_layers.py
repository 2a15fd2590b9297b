"""The import graph of the layers, each checked in a fresh interpreter: what a layer loads at import time."""

from __future__ import annotations

import json
import pkgutil
import subprocess
import sys

import pytest

import openenv_gym.client
import openenv_gym.protocol
import openenv_gym.spaces

# Prints, as JSON, the modules that importing sys.argv[1] (the package root on the way, as any user's
# import runs it) added.
_NEW_MODULES = """
import importlib, json, sys
before = set(sys.modules)
importlib.import_module(sys.argv[1])
print(json.dumps(sorted(set(sys.modules) - before)))
"""


def new_modules(module: str) -> set[str]:
    """The modules a fresh interpreter loads to import ``module``."""
    result = subprocess.run(
        [sys.executable, "-c", _NEW_MODULES, module], capture_output=True, text=True, timeout=60, check=True
    )
    return set(json.loads(result.stdout))


def loaded(modules: set[str], *packages: str) -> list[str]:
    """The modules of ``modules`` that are one of ``packages`` or inside one."""
    return sorted(name for name in modules if any(name == p or name.startswith(p + ".") for p in packages))


def layer_modules(package) -> list[str]:
    """A package and each of its modules, by name."""
    return [package.__name__] + [info.name for info in pkgutil.walk_packages(package.__path__, package.__name__ + ".")]


def test_importing_the_env_loads_no_server():
    """``import openenv_gym.env`` (the whole package on the way) loads neither our server nor websockets' server."""
    modules = new_modules("openenv_gym.env")
    assert "openenv_gym.env" in modules
    assert loaded(modules, "openenv_gym.server", "websockets.asyncio.server", "websockets.server") == []


@pytest.mark.parametrize("module", layer_modules(openenv_gym.protocol))
def test_the_protocol_imports_no_gymnasium_numpy_or_io_layer(module):
    """Each protocol module imports neither gymnasium nor numpy, nor the client, server, providers or sandbox."""
    modules = new_modules(module)
    assert module in modules
    forbidden = ("gymnasium", "numpy", "openenv_gym.client", "openenv_gym.server", "openenv_gym.providers")
    assert loaded(modules, *forbidden, "openenv_gym.sandbox") == []


@pytest.mark.parametrize("module", layer_modules(openenv_gym.spaces))
def test_the_spaces_import_no_server_provider_or_client(module):
    """Each spaces module imports neither the server, the providers nor the client."""
    modules = new_modules(module)
    assert module in modules
    assert loaded(modules, "openenv_gym.server", "openenv_gym.providers", "openenv_gym.client") == []


@pytest.mark.parametrize("module", layer_modules(openenv_gym.client))
def test_the_client_imports_no_gymnasium_server_or_provider(module):
    """Each client module imports neither gymnasium, the server nor the providers."""
    modules = new_modules(module)
    assert module in modules
    assert loaded(modules, "gymnasium", "openenv_gym.server", "openenv_gym.providers") == []


def test_importing_the_package_loads_only_its_root():
    """``import openenv_gym`` loads its errors and import hook, nothing of the layers (they load on first use)."""
    assert loaded(new_modules("openenv_gym"), "openenv_gym", "gymnasium", "numpy") == [
        "openenv_gym",
        "openenv_gym._post_import",
        "openenv_gym.errors",
    ]


def test_the_trl_integration_loads_neither_trl_nor_torch():
    """``openenv_gym.integrations.trl`` imports none of TRL, transformers, torch or datasets (seconds each):
    the trainer passes in what a rollout generates with, and its dataset rows are made on demand."""
    modules = new_modules("openenv_gym.integrations.trl")
    assert "openenv_gym.integrations.trl" in modules
    assert loaded(modules, "trl", "transformers", "torch", "datasets", "mcp") == []


@pytest.mark.parametrize("module", ["openenv_gym.cli", "openenv_gym.integrations"])
def test_only_the_mcp_bridge_loads_the_mcp_sdk(module):
    """The CLI (so ``serve``) and the integrations package load no MCP SDK (seconds to import):
    only ``openenv-gym mcp`` does, through ``openenv_gym.integrations.mcp``."""
    modules = new_modules(module)
    assert module in modules
    assert loaded(modules, "mcp", "mcp_types", "openenv_gym.integrations.mcp") == []
