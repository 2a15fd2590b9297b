"""The openenv.yaml manifest: OpenEnv's fields and ours, validation, and the errors it names."""

from __future__ import annotations

import dataclasses
import importlib
import inspect

import pytest

import openenv_gym
from openenv_gym.manifest import Manifest, ManifestError, load_manifest
from openenv_gym.sandbox import Limits
from tests.manifests import CARTPOLE, write
from tests.utils import REPO_ROOT

SHIPPED = sorted((REPO_ROOT / "envs").glob("*/openenv.yaml"))


def test_the_shipped_manifests_validate():
    """Every env's openenv.yaml in the repository validates, names an app of ours and an image,
    but ReasoningGym-v0's: its image would need reasoning-gym's wheels, which no
    ``envs/reasoning/requirements.txt`` brings yet (as Harness-v0's brings its agents'): it runs in a
    local process."""
    assert [path.parent.name for path in SHIPPED] == ["coding", "coding_tools", "echo", "git", "harness", "reasoning"]
    for path in SHIPPED:
        manifest = load_manifest(path)
        assert manifest.app.startswith("openenv_gym.envs.")
        assert bool(manifest.image) == (path.parent.name != "reasoning")


@pytest.mark.parametrize("path", SHIPPED, ids=lambda path: path.parent.name)
def test_each_shipped_manifest_is_its_catalog_entry(path):
    """The registry's entry for a manifest's gym_id serves its app, with its turn limit and threshold.

    The catalog cannot read the manifests (``import openenv_gym`` stays cheap), so the two say it
    twice and this holds them together; the app's folder is the manifest's (the Docker provider
    finds a manifest by its app's folder).
    """
    manifest = load_manifest(path)
    assert manifest.gym_id in openenv_gym.catalog, f"{path}: no catalog entry {manifest.gym_id}"
    entry = openenv_gym.catalog[manifest.gym_id]
    assert (entry.server, entry.max_episode_steps, entry.reward_threshold, entry.nondeterministic) == (
        manifest.app,
        manifest.max_episode_steps,
        manifest.reward_threshold,
        manifest.nondeterministic,
    )
    assert manifest.app.startswith(f"openenv_gym.envs.{path.parent.name}:")


@pytest.mark.parametrize(
    "path",
    [path for path in SHIPPED if "tool_timeout_s" in load_manifest(path).model_extra],
    ids=lambda p: p.parent.name,
)
def test_a_manifests_per_call_limits_are_its_envs_defaults(path):
    """``tool_timeout_s``, ``limits`` and the turn limit in a manifest state what its env does when not told otherwise.

    The turn limit is ``max_episode_steps``, or ``max_turns`` for an env whose tasks may set their
    own (the server truncates then, and the catalog entry has no client-side limit).
    """
    manifest = load_manifest(path)
    module, _, name = manifest.app.partition(":")
    parameters = inspect.signature(getattr(importlib.import_module(module), name)).parameters
    extra = manifest.model_extra or {}
    assert parameters["tool_timeout_s"].default == extra["tool_timeout_s"]
    if "max_turns" in extra:
        assert parameters["max_turns"].default == extra["max_turns"] and manifest.max_episode_steps is None
    else:
        assert parameters["max_episode_steps"].default == manifest.max_episode_steps
    assert parameters["limits"].default is None  # so the sandbox's own defaults apply
    defaults = dataclasses.asdict(Limits())
    assert extra["limits"] == {key: defaults[key] for key in extra["limits"]}


def test_openenv_fields_keep_their_meaning_and_unknown_keys_are_kept(tmp_path):
    """OpenEnv's fields read as OpenEnv means them; unknown keys are kept in model_extra; app names code when it has a colon."""
    manifest = load_manifest(write(tmp_path, CARTPOLE + "future_field: 3\n"))
    assert (manifest.name, manifest.app, manifest.port, manifest.max_episode_steps) == (
        "cartpole-hub",
        "CartPole-v1",
        8000,
        200,
    )
    assert manifest.model_extra == {"future_field": 3} and not manifest.app_is_code
    assert Manifest(name="x", app="pkg.mod:Env").app_is_code
    assert Manifest(name="x", app="pkg.mod:Evil-v0").app_is_code  # Gymnasium would import pkg.mod


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ("max_episode_steps: 0", "max_episode_steps: Input should be greater than 0"),
        ("gym_id: CartPole", "gym_id: Value error, 'CartPole' is not a Gymnasium id"),
        ("port: 99999", "port: Input should be less than or equal to 65535"),
        ("network: host", "network: Input should be 'bridge' or 'none'"),
        ("resources: {memory: 1g, gpus: 2}", "resources.gpus: Extra inputs are not permitted"),
        ("spaces: {action: {type: Discrete, n: 2}}", "spaces: Value error, spaces needs both"),
        ("spaces: {action: {type: Nope}, observation: {type: Discrete, n: 2}}", "spaces.action is not a space"),
        ("space_url: ftp://x", "space_url: String should match pattern"),
    ],
)
def test_a_bad_manifest_names_the_field(tmp_path, change, message):
    """An invalid field is a ManifestError naming the field and what it should be."""
    key = change.split(":")[0]
    lines, skipping = [], False
    for line in CARTPOLE.splitlines():
        skipping = line.startswith(key + ":") or (skipping and line.startswith(" "))
        if not skipping:
            lines.append(line)
    text = "\n".join(lines) + "\n" + change + "\n"
    with pytest.raises(ManifestError, match=message.replace("(", r"\(").replace(")", r"\)")):
        load_manifest(write(tmp_path, text))


def test_unreadable_manifests(tmp_path):
    """Bad YAML, a non-mapping, a missing required field and a missing file are ManifestErrors saying which."""
    with pytest.raises(ManifestError, match="not valid YAML"):
        load_manifest(write(tmp_path, "name: [unclosed\n"))
    with pytest.raises(ManifestError, match="must be a mapping of fields, not list"):
        load_manifest(write(tmp_path, "- a\n- b\n"))
    with pytest.raises(ManifestError, match="app: Field required"):
        load_manifest(write(tmp_path, "name: x\n"))
    with pytest.raises(ManifestError, match="cannot read"):
        load_manifest(tmp_path / "absent.yaml")
