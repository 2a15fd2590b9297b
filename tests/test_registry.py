"""The catalog: ids registered on import, the module: form, SB3 subprocess workers, entry-point plugins."""

from __future__ import annotations

import dataclasses
import importlib.util
import re
import subprocess
import sys
import textwrap
import warnings

import gymnasium as gym
import numpy as np
import pytest

import openenv_gym
from openenv_gym.registry import CatalogEntry, builtin_entries, gymnasium_ids, register
from tests.utils import REPO_ROOT

EXPECTED_IDS = {
    "openenv/Echo-v0",
    "openenv/Coding-v0",
    "openenv/CodingTools-v0",
    "openenv/Git-v0",
    "openenv/Harness-v0",
    "openenv/ReasoningGym-v0",
    "openenv/Remote-v0",
    # Gymnasium's own ids, every family installed (the test dependencies add Box2D and MuJoCo).
    *(f"openenv/{env_id}" for env_id in gymnasium_ids()),
    # PettingZoo's (a test dependency): one seat with gym.make, every agent with openenv_gym.pettingzoo.
    "openenv/ConnectFour-v3",
    "openenv/TicTacToe-v3",
    "openenv/Pistonball-v6",
    "openenv/Chess-v0",
}


def run_python(code: str, **env: str) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a fresh interpreter (nothing imported yet) from the repository root."""
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={**__import__("os").environ, **env},
    )


def test_every_ale_game_is_registered_without_importing_ale_py():
    """openenv/ALE-<Game>-v5 for each of ale-py's v5 games (read from its ROMs; ale-py is not imported)."""
    import ale_py

    gym.register_envs(ale_py)
    games = {
        id[len("ALE/") :] for id in gym.registry if id.startswith("ALE/") and id.endswith("-v5") and "-ram-" not in id
    }
    assert {id for id in openenv_gym.catalog if id.startswith("openenv/ALE-")} == {
        f"openenv/ALE-{game}" for game in games
    }
    assert gym.spec("openenv/ALE-Pong-v5").kwargs["server"] == "ALE/Pong-v5"
    result = run_python("import sys, gymnasium, openenv_gym; print('ale_py' in sys.modules)")
    assert result.stdout.strip() == "False", result.stderr


def test_import_registers_the_catalog():
    """Importing openenv_gym registers every built-in id with Gymnasium, pointing at RemoteEnv."""
    assert EXPECTED_IDS <= set(gym.registry)
    assert {id for id in openenv_gym.catalog if not id.startswith("openenv/ALE-")} == EXPECTED_IDS
    spec = gym.spec("openenv/CartPole-v1")
    assert spec.entry_point == "openenv_gym.env:make_remote_env"
    assert spec.kwargs["server"] == "CartPole-v1"
    assert spec.reward_threshold == gym.spec("CartPole-v1").reward_threshold


def test_every_installed_id_of_gymnasiums_own_registry_has_its_twin():
    """Classic control, toy text, Box2D and MuJoCo (both installed by the test dependencies): each id
    Gymnasium registers has its ``openenv/`` twin, with the spec's time limit and threshold."""
    own = {
        env_id
        for env_id, spec in gym.registry.items()
        if spec.namespace is None
        and isinstance(spec.entry_point, str)
        and spec.entry_point.startswith("gymnasium.envs.")
    }
    assert set(gymnasium_ids()) == own
    assert {"FrozenLake-v1", "Taxi-v4", "Blackjack-v1", "LunarLander-v3", "CarRacing-v3", "Hopper-v5"} <= own
    for env_id in own:
        twin = openenv_gym.catalog[f"openenv/{env_id}"]
        assert twin.server == env_id
        assert (twin.max_episode_steps, twin.reward_threshold) == (
            gym.spec(env_id).max_episode_steps,
            gym.spec(env_id).reward_threshold,
        )


def test_a_family_whose_package_is_not_installed_has_no_twins(monkeypatch):
    """Box2D and MuJoCo are looked up, not imported: without one, its ids are left out."""
    find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *rest: None if name == "mujoco" else find_spec(name, *rest)
    )
    ids = gymnasium_ids()
    assert "Hopper-v5" not in ids and "Humanoid-v4" not in ids
    assert {"LunarLander-v3", "FrozenLake-v1", "CartPole-v1"} <= set(ids)


@pytest.mark.parametrize("env_id", ["FrozenLake-v1", "Taxi-v4", "Blackjack-v1", "LunarLander-v3", "Hopper-v5"])
def test_a_twin_steps_as_the_local_env_does(env_id):
    """Toy text, Box2D and MuJoCo twins: the same seeded episode as Gymnasium's own env."""
    with warnings.catch_warnings():
        # Box2D's SWIG module warns while it is imported, and a warning made an error crashes that import.
        warnings.simplefilter("ignore", DeprecationWarning)
        local = gym.make(env_id)
    remote = gym.make(f"openenv/{env_id}")
    try:
        assert remote.observation_space == local.observation_space and remote.action_space == local.action_space
        remote.action_space.seed(5)
        for got, want in zip(remote.reset(seed=11), local.reset(seed=11), strict=True):
            assert_equal_nested(got, want)
        for _ in range(30):
            action = remote.action_space.sample()
            got, want = remote.step(action), local.step(action)
            for got_part, want_part in zip(got[:4], want[:4], strict=True):
                assert_equal_nested(got_part, want_part)
            if got[2] or got[3]:
                break
    finally:
        remote.close()
        local.close()


def assert_equal_nested(got, want) -> None:
    """Equal values, arrays compared element by element (MuJoCo's float64 bit for bit)."""
    if isinstance(want, dict):
        assert set(got) == set(want)
        for key in want:
            assert_equal_nested(got[key], want[key])
    elif isinstance(want, tuple):
        assert len(got) == len(want)
        for got_item, want_item in zip(got, want, strict=True):
            assert_equal_nested(got_item, want_item)
    else:
        np.testing.assert_array_equal(got, want)


def test_catalog_is_data_driven():
    """Each built-in env is one CatalogEntry naming its id, server and time limit."""
    entries = {entry.id: entry for entry in builtin_entries()}
    assert entries["openenv/Pendulum-v1"] == CatalogEntry(
        id="openenv/Pendulum-v1",
        server="Pendulum-v1",
        max_episode_steps=200,
        reward_threshold=None,
        description="Gymnasium's Pendulum-v1, served in a separate process",
    )
    assert entries["openenv/Echo-v0"].server == "openenv_gym.envs.echo:EchoEnvironment"


def test_a_catalog_entrys_spaces_is_deprecated_and_ignored():
    """``CatalogEntry(spaces=...)`` still builds the entry, with a DeprecationWarning, and changes nothing in it."""
    with pytest.warns(DeprecationWarning, match=re.escape("CatalogEntry(spaces=...) is deprecated and ignored")):
        entry = CatalogEntry("openenv/Old-v0", "CartPole-v1", "schema", 9)
    assert entry == CatalogEntry(id="openenv/Old-v0", server="CartPole-v1", max_episode_steps=9)
    assert "spaces" not in {field.name for field in dataclasses.fields(entry)}


def test_register_a_new_entry():
    """register() adds an id that gym.make serves remotely, with the entry's time limit."""
    register(CatalogEntry(id="openenv/ShortCartPole-v0", server="CartPole-v1", max_episode_steps=5))
    try:
        env = gym.make("openenv/ShortCartPole-v0")
        env.reset(seed=0)
        truncated = False
        for _ in range(5):
            _, _, terminated, truncated, _ = env.step(0 if _ % 2 else 1)
        assert truncated and not terminated
        env.close()
    finally:
        del gym.registry["openenv/ShortCartPole-v0"]
        del openenv_gym.catalog["openenv/ShortCartPole-v0"]


def test_module_prefix_works_without_a_prior_import():
    """gym.make("openenv_gym:openenv/CartPole-v1") works in a fresh interpreter that never imported us."""
    result = run_python(
        """
        import sys, gymnasium as gym
        assert "openenv_gym" not in sys.modules
        env = gym.make("openenv_gym:openenv/CartPole-v1")
        obs, _ = env.reset(seed=3)
        print(type(env.unwrapped).__name__, obs.shape)
        env.close()
        """
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "RemoteEnv (4,)"


@pytest.mark.slow
def test_sb3_subprocess_workers():
    """SB3's SubprocVecEnv builds remote envs in its worker processes from the module: id string."""
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.vec_env import SubprocVecEnv

    vec_env = make_vec_env("openenv_gym:openenv/CartPole-v1", n_envs=2, seed=0, vec_env_cls=SubprocVecEnv)
    try:
        obs = vec_env.reset()
        assert obs.shape == (2, 4)
        obs, rewards, _dones, _infos = vec_env.step([0, 1])
        assert rewards.tolist() == [1.0, 1.0]
        assert vec_env.get_attr("server") == ["CartPole-v1", "CartPole-v1"]
    finally:
        vec_env.close()


def write_plugin(tmp_path, body: str) -> None:
    """An installed distribution, as importlib.metadata sees one, declaring an openenv_gym.envs entry point."""
    (tmp_path / "fake_plugin.py").write_text(textwrap.dedent(body))
    dist_info = tmp_path / "fake_plugin-0.1.dist-info"
    dist_info.mkdir()
    (dist_info / "METADATA").write_text("Metadata-Version: 2.1\nName: fake-plugin\nVersion: 0.1\n")
    (dist_info / "entry_points.txt").write_text("[openenv_gym.envs]\nfake = fake_plugin:entries\n")


def test_entry_point_plugin_adds_envs(tmp_path):
    """An installed package declaring the openenv_gym.envs entry point adds its ids on import."""
    write_plugin(
        tmp_path,
        """
        from openenv_gym.registry import CatalogEntry

        def entries():
            return [CatalogEntry(id="openenv/FakeCartPole-v0", server="CartPole-v1", max_episode_steps=7)]
        """,
    )
    result = run_python(
        """
        import gymnasium as gym, openenv_gym
        print(gym.spec("openenv/FakeCartPole-v0").max_episode_steps, gym.spec("openenv/FakeCartPole-v0").kwargs)
        """,
        PYTHONPATH=str(tmp_path),
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "7 {'server': 'CartPole-v1'}"


def test_broken_plugin_warns_and_import_survives(tmp_path):
    """A plugin that raises is skipped with a warning naming it; the built-in ids are still there."""
    write_plugin(tmp_path, "def entries():\n    raise ImportError('missing dependency xyz')\n")
    result = run_python(
        """
        import gymnasium as gym, openenv_gym
        print(gym.spec("openenv/CartPole-v1").id)
        """,
        PYTHONPATH=str(tmp_path),
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "openenv/CartPole-v1"
    assert "skipping env plugin 'fake' (fake_plugin:entries): ImportError: missing dependency xyz" in result.stderr


def test_without_pettingzoo_its_ids_name_the_extra_to_install():
    """With PettingZoo not importable (as without the extra), gym.make and make_vec of its ids say
    which extra to install, as ReasoningGym-v0 and the SB3 wrappers do, and start no server."""
    script = textwrap.dedent(
        """
        import sys
        sys.modules["pettingzoo"] = None  # as if it were not installed
        import gymnasium as gym
        import openenv_gym
        from openenv_gym.providers import process

        process.ProcessProvider.start = lambda self: sys.exit("a server was started")
        for make in (gym.make, lambda env_id: gym.make_vec(env_id, num_envs=2)):
            for env_id in ("openenv/Chess-v0", "openenv/ConnectFour-v3"):
                try:
                    make(env_id)
                except gym.error.DependencyNotInstalled as exc:
                    print(exc)
        """
    )
    done = subprocess.run([sys.executable, "-c", script], cwd=REPO_ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == 4, done.stdout + done.stderr
    for line, env_id in zip(lines, ["openenv/Chess-v0", "openenv/ConnectFour-v3"] * 2, strict=True):
        assert line == f"{env_id} needs the pettingzoo extra: pip install 'openenv-gym[pettingzoo]'"
