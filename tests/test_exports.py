"""The public names each package exports stay as documented."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

import pytest

import openenv_gym

PUBLIC = {
    "openenv_gym": {
        "AsyncEnvClient",
        "AsyncEnvPool",
        "AsyncRemoteEnv",
        "CapacityReachedError",
        "CatalogEntry",
        "ClientError",
        "ClosedEnvError",
        "ConnectionLostError",
        "DockerUnavailableError",
        "EnvClient",
        "EnvCreationError",
        "EnvMismatchError",
        "EpisodeEndedError",
        "GameOverError",
        "EpisodeNotEndingError",
        "HubError",
        "ImageBuildError",
        "InvalidActionError",
        "ManifestError",
        "ModelCallError",
        "OpenEnvGymError",
        "ProtocolError",
        "ProviderError",
        "RemoteEnv",
        "RemoteEpisodeEndedError",
        "RemoteError",
        "RequestTimeoutError",
        "SandboxUnavailableError",
        "SeatError",
        "SeedNotHonouredError",
        "ServerClosedError",
        "ServerConnectError",
        "ServerStartError",
        "SnapshotError",
        "SnapshotRefusedError",
        "SnapshotUnsupportedError",
        "SpaceCodecError",
        "SpaceMismatchError",
        "TaskCatalog",
        "ToolCallError",
        "ToolDefinitionError",
        "ToolFailedError",
        "TrustRemoteCodeError",
        "UnsupportedSpaceError",
        "WaitTimeoutError",
        "__version__",
        "catalog",
        "hub",
        "make_async",
        "make_sb3_vec_env",
        "register",
        "tasks",
    },
    "openenv_gym.vector": {"RemoteVectorEnv"},
    "openenv_gym.wrappers": {
        "ChatMessages",
        "RecordAsyncEpisodes",
        "RecordEpisodes",
        "RecordVectorEpisodes",
        "SB3VecEnv",
        "SampleTasks",
        "make_sb3_vec_env",
    },
    "openenv_gym.pettingzoo": {
        "AgentsVectorEnv",
        "RemoteAECEnv",
        "RemoteParallelEnv",
        "make_aec",
        "make_agents_vec",
        "make_parallel",
    },
    "openenv_gym.protocol": {
        "ClientFrame",
        "ClientSession",
        "CloseFrame",
        "ErrorCode",
        "ErrorFrame",
        "McpFrame",
        "MessageType",
        "ObservationFrame",
        "RenderFrame",
        "RenderRequest",
        "ResetFrame",
        "ServerFrame",
        "ServerSession",
        "SessionState",
        "StateFrame",
        "StateRequest",
        "StepFrame",
        "parse_client_frame",
        "parse_server_frame",
    },
    "openenv_gym.spaces": {
        "ACTION_FIELD",
        "OBSERVATION_FIELD",
        "ToolCallSpace",
        "UnicodeText",
        "decode",
        "encode",
        "from_wire",
        "jsonable",
        "mismatch",
        "space_from_json",
        "space_to_json",
        "to_wire",
    },
    "openenv_gym.server": {
        "Action",
        "BaseTask",
        "EnvServer",
        "Environment",
        "EnvironmentMetadata",
        "GymEnvironment",
        "Observation",
        "State",
        "TaskSet",
        "ToolResult",
        "load_factory",
        "run",
        "tool",
    },
    "openenv_gym.providers": {
        "DockerProvider",
        "ProcessProvider",
        "Provider",
        "RayProvider",
        "SwarmProvider",
        "URLProvider",
        "make_provider",
        "make_providers",
        "provider_class",
        "provider_options",
        "start_options",
    },
    "openenv_gym.hub": {
        "MANIFEST_FILENAME",
        "SPACE_TOKEN_SECRET",
        "HubError",
        "PushPlan",
        "TrustRemoteCodeError",
        "make_hub_env",
        "make_hub_vector_env",
        "pull",
        "push",
        "push_plan",
        "register",
        "register_manifest",
    },
    "openenv_gym.manifest": {"Manifest", "ManifestError", "Resources", "load_manifest"},
    "openenv_gym.integrations": set(),
    "openenv_gym.integrations.mcp": {
        "DONE_KEY",
        "ERROR_TYPE_KEY",
        "INSTALL_HINT",
        "RESET_TOOL",
        "RESET_TOOL_WITH_CHOICE",
        "REWARD_KEY",
        "TRUNCATED_KEY",
        "EnvBridge",
        "call_result",
        "mcp_tool",
        "one_line",
        "reset_kwargs",
        "reset_result",
        "resolve_target",
        "serve",
    },
    "openenv_gym.integrations.trl": {
        "EnvRollout",
        "ToolCall",
        "ToolEnvironment",
        "ToolFailedError",
        "annotation_of",
        "component_reward",
        "env_reward",
        "environment_factory",
        "extract_code",
        "prompt_text",
        "rollout_func",
        "tool_method",
    },
    "openenv_gym.scaffold": {"VARIANTS", "EnvNames", "init_env"},
    "openenv_gym.validation": {
        "CHECKS",
        "CHECK_NAMES",
        "DEFAULT_IDLE_TIMEOUT",
        "DEFAULT_TIMEOUT",
        "CheckResult",
        "OpenEnvProbe",
        "Status",
        "Subject",
        "Target",
        "resolve_target",
        "run_checks",
    },
    "openenv_gym.sandbox": {"Limits", "RunResult", "Sandbox", "SandboxUnavailableError", "find_bwrap"},
    "openenv_gym.envs.echo": {"EchoAction", "EchoEnvironment", "EchoObservation"},
    "openenv_gym.envs.coding": {
        "CodeAction",
        "CodeObservation",
        "CodingEnvironment",
        "CodingState",
        "CodingToolsEnvironment",
        "CodingToolsObservation",
        "Task",
        "TaskObservation",
        "TestCase",
        "load_tasks",
        "task_ids",
    },
    "openenv_gym.envs.coding_tools": {"CodingToolsEnvironment", "CodingToolsObservation"},
    "openenv_gym.envs.reasoning": {
        "CODE_SCORERS",
        "DEFAULT_GENERATORS",
        "AnswerAction",
        "ReasoningGymEnvironment",
        "ReasoningObservation",
        "ReasoningState",
        "ReasoningTask",
        "make_tasks",
    },
    "openenv_gym.envs.git": {"GitEnvironment", "GitObservation", "GitState", "GitTask", "load_tasks", "task_ids"},
}


@pytest.mark.parametrize("module_name", sorted(PUBLIC))
def test_public_names(module_name):
    """Each package's __all__ is exactly the documented set, and every name resolves."""
    module = importlib.import_module(module_name)
    assert set(module.__all__) == PUBLIC[module_name]
    for name in module.__all__:
        assert hasattr(module, name), name


def test_every_error_derives_from_the_root():
    """Every exception class openenv_gym exports derives from OpenEnvGymError."""
    errors = [getattr(openenv_gym, name) for name in openenv_gym.__all__ if name.endswith("Error")]
    assert errors and all(issubclass(error, openenv_gym.OpenEnvGymError) for error in errors)


def test_layers_are_not_top_level_names(tmp_path):
    """vector, wrappers and envs install inside the package, never as generic top-level modules."""
    code = (
        "import importlib.util, openenv_gym.vector, openenv_gym.wrappers, openenv_gym.envs.echo\n"
        "print([importlib.util.find_spec(name) for name in ('vector', 'wrappers', 'envs')])"
    )
    # Outside the repository, so only what the installed distribution provides is importable.
    result = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[None, None, None]"


def test_every_package_of_the_source_tree_is_in_the_distribution():
    """pyproject lists packages by hand: a new package missing there would be absent from wheels and images."""
    import tomllib

    root = Path(__file__).resolve().parent.parent
    listed = set(tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    mapped = {
        "openenv_gym": "openenv_gym",
        "openenv_gym.envs": "envs",
        "openenv_gym.vector": "vector",
        "openenv_gym.wrappers": "wrappers",
    }
    found = set()
    for package, folder in mapped.items():
        for init in (root / folder).rglob("__init__.py"):
            relative = init.parent.relative_to(root / folder)
            if "__pycache__" not in relative.parts:
                found.add(".".join([package, *relative.parts]))
    assert found == listed


def test_hub_is_a_lazy_attribute():
    """openenv_gym.hub works without importing it first, and plain `import openenv_gym` does not load it."""
    code = (
        "import sys, openenv_gym\n"
        "print('openenv_gym.hub' in sys.modules, 'huggingface_hub' in sys.modules)\n"
        "print(callable(openenv_gym.hub.register), 'openenv_gym.hub' in sys.modules)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["False", "False", "True", "True"]
