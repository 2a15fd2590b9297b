"""The import graph of the layers: what a layer loads at import time, each checked in a fresh interpreter,
and which modules of the package a layer's modules import, read from their source.

The rules, from the layer table of the design (docs/architecture.md):

- the protocol (``openenv_gym.protocol``, ``openenv_gym.spaces``) imports no I/O layer;
- the client imports neither gymnasium, the server nor the providers;
- a provider imports no wire internals (no module of ``openenv_gym.protocol``; the start-up
  handshake and the package's public frames only) and no Gymnasium face;
- no registration module (``registry``, ``hub``, ``manifest``) imports the Gymnasium face;
- what belongs to no layer (``errors``; ``startup``, a server's start-up report and serve flags;
  ``urls``; ``redaction``) sits at the package root, imports nothing of the package but ``errors``,
  and every layer may import it; the protocol package holds only the wire;
- ``import openenv_gym.env`` loads only what a plain env needs.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

import openenv_gym.client
import openenv_gym.protocol
import openenv_gym.providers
import openenv_gym.spaces

#: The Gymnasium face: what turns the wire into ``gymnasium.Env``/``VectorEnv`` and their adapters.
FACE = (
    "openenv_gym.env",
    "openenv_gym.env_core",
    "openenv_gym.served",
    "openenv_gym.rendering",
    "openenv_gym.seats",
    "openenv_gym.async_env",
    "openenv_gym.async_pool",
    "openenv_gym.tool_face",
    "openenv_gym.vector",
    "openenv_gym.wrappers",
)
REGISTRATION = ("openenv_gym.registry", "openenv_gym.hub", "openenv_gym.manifest")
#: What every layer may import: modules of no layer, at the package root.
SHARED = ("openenv_gym.errors", "openenv_gym.redaction", "openenv_gym.startup", "openenv_gym.urls")

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


def imports_of(module: str) -> set[str]:
    """The modules of openenv_gym that ``module``'s source imports, anywhere in it (a function's import
    too), by absolute name: ``from .x import y`` counts as ``x`` and, when ``x.y`` is a module, ``x.y``."""
    spec = importlib.util.find_spec(module)
    assert spec is not None and spec.origin is not None
    package = module if spec.submodule_search_locations is not None else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(Path(spec.origin).read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = importlib.util.resolve_name("." * node.level + base, package)
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names if _is_module(f"{base}.{alias.name}"))
    return {name for name in found if name == "openenv_gym" or name.startswith("openenv_gym.")}


def _is_module(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:  # the parent is not a package
        return False


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
        "openenv_gym._lazy",
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


PROVIDER_MODULES = layer_modules(openenv_gym.providers)


@pytest.mark.parametrize("module", PROVIDER_MODULES)
def test_a_provider_imports_no_wire_internals(module):
    """A provider imports none of the protocol's modules: it reads a server's start-up report (the
    handshake module) and, at most, the frames and codes ``openenv_gym.protocol`` itself exports."""
    assert sorted(name for name in imports_of(module) if name.startswith("openenv_gym.protocol.")) == []


@pytest.mark.parametrize("module", PROVIDER_MODULES)
def test_a_provider_imports_no_gymnasium_face(module):
    """A provider's source imports no module of the Gymnasium face, and importing it loads none."""
    assert loaded(imports_of(module), *FACE) == []
    assert loaded(new_modules(module), *FACE) == []


@pytest.mark.parametrize(
    "module",
    [
        "openenv_gym.registry",
        "openenv_gym.hub",
        "openenv_gym.manifest",
    ],
)
def test_registration_source_imports_no_gymnasium_face(module):
    """A registration module's source imports no module of the Gymnasium face: the catalog names its entry
    points as strings, and Gymnasium imports them when an env is made."""
    assert loaded(imports_of(module), *FACE) == []


@pytest.mark.parametrize("module", REGISTRATION)
def test_importing_registration_loads_no_gymnasium_face(module):
    """Importing a registration module first, in a fresh interpreter, works and loads no Gymnasium face."""
    modules = new_modules(module)
    assert module in modules
    assert loaded(modules, *FACE) == []


# Prints, as JSON, the package's modules a fresh interpreter holds after ``import openenv_gym.env``.
_ENV_MODULES = """
import json, sys
import openenv_gym.env
print(json.dumps(sorted(name for name in sys.modules if name.split(".")[0] == "openenv_gym")))
"""

#: What a plain env needs, module by module: the import budget of ``import openenv_gym.env`` (no count
#: stands for it). Anything else it loads is a layer it does not use (a new entry here needs its reason).
PLAIN_ENV_MODULES = {
    # the root (lazy exports, the hook that registers the catalog when gymnasium is imported), its
    # errors, and the registry that hook loads
    "openenv_gym": "the package",
    "openenv_gym._lazy": "PEP 562 exports of the lazy packages; registers the catalog when gymnasium is imported",
    "openenv_gym.errors": "the error tree",
    "openenv_gym.registry": "the catalog gymnasium's import registers",
    # the Gymnasium face of one env
    "openenv_gym.env": "RemoteEnv",
    "openenv_gym.env_core": "its EnvCore (what it knows of its server, its episode, the snapshot rules)",
    "openenv_gym.served": "the one reader of a server's /schema",
    "openenv_gym.snapshot": "Snapshot, the handle the core's snapshot rules give",
    "openenv_gym.rendering": "render modes judged, frames handed out",
    "openenv_gym.seats": "a seat in a game: its /ws query and its /schema",
    "openenv_gym.face": "its Face (spaces <-> wire)",
    "openenv_gym.make_options": "gym.make's arguments sorted once",
    "openenv_gym._lost_server": "a call that lost its server says when the server process died",
    # one plain session over a blocking socket
    "openenv_gym.client": "the client package",
    "openenv_gym.client._http": "GET /health and /schema",
    "openenv_gym.client._session": "what the sync and async connections share",
    "openenv_gym.client.session_kind": "the plain session's kind",
    "openenv_gym.client.sync_connection": "the blocking connection",
    "openenv_gym.client.seed_check": "a seeded reset checked where the server cannot say it keeps seeds",
    "openenv_gym.client.sync_client": "EnvClient",
    "openenv_gym.client._holding": "what every client does with the connection it holds",
    "openenv_gym.client.step_transport": "how a session's steps travel (the shared-memory link loads when taken)",
    # the frames of a plain session and their codecs
    "openenv_gym.protocol": "the wire package",
    "openenv_gym.protocol._json": "JSON helpers the frames share",
    "openenv_gym.protocol.arrays": "packed (binary) messages, which any frame may arrive as",
    "openenv_gym.protocol.codes": "message types and error codes",
    "openenv_gym.protocol.closing": "the close code and reason of a server its owner closed",
    "openenv_gym.protocol.frames": "reset/step/state/render/error frames",
    "openenv_gym.protocol.session": "ClientSession",
    "openenv_gym.protocol.shm": "shm_open and shm_offer, which a plain session may exchange",
    "openenv_gym.protocol.snapshot": "snapshot/restore frames: the session's replies include them",
    "openenv_gym.spaces": "the spaces package",
    "openenv_gym.spaces.codec": "spaces and their values <-> JSON",
    # the fleet of one server and the provider of a running one (the others load when used)
    "openenv_gym.providers": "the providers package",
    "openenv_gym.providers.base": "Provider",
    "openenv_gym.providers.fleet": "the fleet every env starts its servers through",
    "openenv_gym.providers.layout": "how the fleet lays sessions out over its servers",
    "openenv_gym.providers.url": "base_url= (a running server)",
    # shared by the layers
    "openenv_gym.urls": "URL forms (ws://, http+unix://)",
    "openenv_gym.redaction": "tokens kept out of websockets' logs",
}


def test_importing_the_env_loads_only_what_a_plain_env_needs():
    """``import openenv_gym.env`` loads only the modules a plain env needs (one session, the codec,
    the fleet and the provider of a running server): none of the batch, vector or async clients, the
    pickled factories, the tool calls, the server, the vector env or a provider that starts servers
    (each loads when first used)."""
    result = subprocess.run(
        [sys.executable, "-c", _ENV_MODULES], capture_output=True, text=True, timeout=60, check=True
    )
    modules = json.loads(result.stdout)
    unneeded = ("batch_client", "vector_client", "async_client", "pickled", "tools", "tool_face", "process")
    assert [name for name in modules if name.rpartition(".")[2] in unneeded] == []
    assert sorted(set(modules) - set(PLAIN_ENV_MODULES)) == []


@pytest.mark.parametrize("package", ["openenv_gym.protocol", "openenv_gym.spaces"])
def test_a_lazy_package_loads_none_of_its_modules(package):
    """Importing ``openenv_gym.protocol`` or ``openenv_gym.spaces`` alone loads none of its modules: each
    exported name imports its module on first use."""
    assert loaded(new_modules(package), package) == [package]


@pytest.mark.parametrize("module", SHARED)
def test_what_the_layers_share_imports_no_layer(module):
    """A module every layer imports (errors, start-up report, URLs, redaction) imports nothing of the package
    but the errors, and importing it loads no layer."""
    assert imports_of(module) <= {"openenv_gym.errors"}
    assert loaded(new_modules(module), "openenv_gym") == sorted(
        {"openenv_gym", "openenv_gym._lazy", "openenv_gym.errors", module}
    )
