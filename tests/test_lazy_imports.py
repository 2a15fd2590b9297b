"""call_after_import: registration waits for gymnasium, so servers of plain envs never load it."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from openenv_gym._lazy import call_after_import
from openenv_gym.providers import ProcessProvider
from tests.utils import REPO_ROOT


def run_python(code: str) -> str:
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], cwd=REPO_ROOT, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def test_callback_runs_at_once_for_an_imported_module():
    """A module already imported gets its callback immediately."""
    calls = []
    call_after_import("json", lambda: calls.append("json"))
    assert calls == ["json"]


def test_registration_waits_for_gymnasium_then_happens():
    """import openenv_gym loads no gymnasium; importing gymnasium later registers the ids, loader intact."""
    output = run_python(
        """
        import sys
        import openenv_gym
        print("gymnasium" in sys.modules, "numpy" in sys.modules)
        import gymnasium as gym
        print(gym.spec("openenv/CartPole-v1").max_episode_steps)
        print(type(gym.__spec__.loader).__name__, type(gym.__loader__).__name__)
        """
    )
    assert output.splitlines() == ["False False", "500", "SourceFileLoader SourceFileLoader"]


def test_a_lookup_does_not_use_up_the_hook():
    """Checking whether gymnasium is installed (find_spec) before importing it still registers the ids."""
    output = run_python(
        """
        import importlib.util
        import openenv_gym
        assert importlib.util.find_spec("gymnasium") is not None
        import gymnasium as gym
        print("openenv/CartPole-v1" in gym.registry)
        """
    )
    assert output == "True"


def test_submodule_import_triggers_registration_too():
    """Importing a gymnasium submodule first (which imports the package) registers the ids as well."""
    output = run_python(
        """
        import openenv_gym
        from gymnasium.envs.registration import registry
        print("openenv/Echo-v0" in registry)
        """
    )
    assert output == "True"


def test_lazy_names_before_gymnasium_is_imported():
    """openenv_gym.catalog as the first use of gymnasium: the registry must not meet its own hook half-made."""
    output = run_python(
        """
        import openenv_gym
        print(len(openenv_gym.catalog) > 5, openenv_gym.CatalogEntry.__name__)
        """
    )
    assert output == "True CatalogEntry"


def test_echo_server_never_loads_numpy():
    """The Echo server process serves a session without numpy (so without gymnasium, which needs it)."""
    from openenv_gym.client.sync_client import EnvClient

    provider = ProcessProvider("openenv_gym.envs.echo:EchoEnvironment")
    url = provider.start()
    try:
        with EnvClient(url) as client:
            client.reset()
            assert client.step({"message": "hi"}).observation["echoed_message"] == "hi"
        with open(f"/proc/{provider.pid}/maps") as maps:
            mapped = maps.read()
    finally:
        provider.stop()
    assert "libpython" in mapped or "python3" in mapped  # the map is the server's
    assert "_multiarray_umath" not in mapped


def test_finder_removes_itself():
    """Once the module is imported, the finder leaves sys.meta_path and the callback ran once."""
    calls = []
    call_after_import("email.mime.audio", lambda: calls.append(1))  # stdlib, not imported yet
    assert "email.mime.audio" not in sys.modules
    import email.mime.audio  # noqa: F401

    assert calls == [1]
    assert not any(getattr(finder, "module_name", None) == "email.mime.audio" for finder in sys.meta_path)
