"""The wrappers of ``gymnasium.wrappers.vector`` the vector paths are tried under, each with the
probe it wraps, or the reason it does not apply; and the lockstep comparison with SyncVectorEnv."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gymnasium as gym
import gymnasium.wrappers.vector as vector_wrappers
import numpy as np

from tests.equivalence import assert_same

from .envs import DICT_ID, PROBE_ID
from .paths import reference_vector

NUM_ENVS = 3
STEPS = 15

Case = tuple[str, str | None, Callable[[Any, Any], Any]]

# name -> (the probe it wraps, its render mode, the wrapper applied to a vector env and a temp folder)
APPLYING: dict[str, Case] = {
    "VectorizeTransformObservation": (
        PROBE_ID,
        None,
        lambda env, _: vector_wrappers.VectorizeTransformObservation(
            env, wrapper=gym.wrappers.DtypeObservation, dtype=np.int32
        ),
    ),
    "VectorizeTransformAction": (
        PROBE_ID,
        None,
        lambda env, _: vector_wrappers.VectorizeTransformAction(
            env, wrapper=gym.wrappers.TransformAction, func=lambda action: 2 - action, action_space=None
        ),
    ),
    "VectorizeTransformReward": (
        PROBE_ID,
        None,
        lambda env, _: vector_wrappers.VectorizeTransformReward(
            env, wrapper=gym.wrappers.TransformReward, func=lambda reward: 10 * reward
        ),
    ),
    "DictInfoToList": (PROBE_ID, None, lambda env, _: vector_wrappers.DictInfoToList(env)),
    "TransformObservation": (
        PROBE_ID,
        None,
        lambda env, _: vector_wrappers.TransformObservation(env, lambda observations: observations * 2),
    ),
    "ReshapeObservation": (PROBE_ID, None, lambda env, _: vector_wrappers.ReshapeObservation(env, (3, 1))),
    "RescaleObservation": (
        PROBE_ID,
        None,
        lambda env, _: vector_wrappers.RescaleObservation(env, np.float32(-1), np.float32(1)),
    ),
    "DtypeObservation": (PROBE_ID, None, lambda env, _: vector_wrappers.DtypeObservation(env, np.int32)),
    "NormalizeObservation": (PROBE_ID, None, lambda env, _: vector_wrappers.NormalizeObservation(env)),
    "TransformAction": (
        PROBE_ID,
        None,
        lambda env, _: vector_wrappers.TransformAction(env, lambda actions: 2 - actions),
    ),
    "TransformReward": (PROBE_ID, None, lambda env, _: vector_wrappers.TransformReward(env, lambda rewards: -rewards)),
    "ClipReward": (PROBE_ID, None, lambda env, _: vector_wrappers.ClipReward(env, 0.0, 1.5)),
    "NormalizeReward": (PROBE_ID, None, lambda env, _: vector_wrappers.NormalizeReward(env)),
    "RecordEpisodeStatistics": (PROBE_ID, None, lambda env, _: vector_wrappers.RecordEpisodeStatistics(env)),
    "RecordVideo": (
        PROBE_ID,
        "rgb_array",
        lambda env, folder: vector_wrappers.RecordVideo(env, str(folder), step_trigger=lambda step: step == 0),
    ),
    "HumanRendering": (PROBE_ID, "rgb_array", lambda env, _: vector_wrappers.HumanRendering(env)),
}


# Over the Dict probe: tried by pending_spaces.py until every path carries Dict observations.
OVER_DICT: dict[str, Case] = {
    "FilterObservation": (DICT_ID, None, lambda env, _: vector_wrappers.FilterObservation(env, ["steps"])),
    "FlattenObservation": (DICT_ID, None, lambda env, _: vector_wrappers.FlattenObservation(env)),
}


NOT_APPLYING = {
    "GrayscaleObservation": "converts RGB image observations; the probes observe no image",
    "ResizeObservation": "resizes image observations; the probes observe no image",
    "ClipAction": "clips Box actions; the probes act in Discrete(3)",
    "RescaleAction": "rescales Box actions; the probes act in Discrete(3)",
    "ArrayConversion": "needs array-api-compat (Gymnasium's array-api extra), which the test extra does not install",
    "JaxToNumpy": "converts a JAX env's arrays (jax is not installed), and the probes give numpy's",
    "JaxToTorch": "converts a JAX env's arrays (jax is not installed), and the probes give numpy's",
    "NumpyToTorch": "needs array-api-compat (Gymnasium's array-api extra), which the test extra does not install",
}


def without_times(step: tuple) -> tuple:
    """A step's results without RecordEpisodeStatistics' episode times, which are the clock's."""
    infos = step[-1]
    if "episode" in infos:
        infos = {**infos, "episode": {key: value for key, value in infos["episode"].items() if key != "t"}}
    return (*step[:-1], infos)


def assert_wrapped_equal(vector_path, servers, closing, entry: Case, tmp_path) -> None:
    """The wrapper of ``entry`` over the path and over SyncVectorEnv: the same spaces, results and recorded frames."""
    env_id, render_mode, wrap = entry
    envs = closing(wrap(vector_path(servers, env_id, NUM_ENVS, render_mode=render_mode), tmp_path / "remote"))
    local = closing(wrap(reference_vector(env_id, NUM_ENVS, render_mode=render_mode), tmp_path / "local"))
    assert envs.single_observation_space == local.single_observation_space
    assert envs.observation_space == local.observation_space and envs.action_space == local.action_space
    assert_same(envs.reset(seed=3), local.reset(seed=3), "reset")
    local.action_space.seed(0)
    for index in range(STEPS):
        actions = local.action_space.sample()  # a copy to each: VectorizeTransformAction writes into its argument
        assert_same(
            without_times(envs.step(actions.copy())), without_times(local.step(actions.copy())), f"step {index}"
        )
    if hasattr(local, "recorded_frames"):
        assert_same(envs.recorded_frames, local.recorded_frames, "recorded frames")
