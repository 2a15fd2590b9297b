"""The wrappers of ``gymnasium.wrappers`` the single-env paths are tried under, each with the probe
it wraps, or the reason it does not apply; and the comparisons: with gym.make's, or with itself
under the same seed."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gymnasium as gym
import gymnasium.wrappers as wrappers
import numpy as np

from .envs import DICT_ID, PROBE_ID

STEPS = 30

Case = tuple[str, str | None, Callable[[Any, Any], Any]]

# name -> (the probe it wraps, its render mode, the wrapper applied to an env and a temp folder)
APPLYING: dict[str, Case] = {
    "DelayObservation": (PROBE_ID, None, lambda env, _: wrappers.DelayObservation(env, delay=2)),
    "DtypeObservation": (PROBE_ID, None, lambda env, _: wrappers.DtypeObservation(env, np.int32)),
    "DiscretizeObservation": (PROBE_ID, None, lambda env, _: wrappers.DiscretizeObservation(env, bins=4)),
    "FrameStackObservation": (PROBE_ID, None, lambda env, _: wrappers.FrameStackObservation(env, stack_size=3)),
    "TransformObservation": (
        PROBE_ID,
        None,
        lambda env, _: wrappers.TransformObservation(env, lambda obs: obs * 2, env.observation_space),
    ),
    "MaxAndSkipObservation": (PROBE_ID, None, lambda env, _: wrappers.MaxAndSkipObservation(env, skip=2)),
    "NormalizeObservation": (PROBE_ID, None, lambda env, _: wrappers.NormalizeObservation(env)),
    "ReshapeObservation": (PROBE_ID, None, lambda env, _: wrappers.ReshapeObservation(env, (3, 1))),
    "RescaleObservation": (
        PROBE_ID,
        None,
        lambda env, _: wrappers.RescaleObservation(env, np.float32(-1), np.float32(1)),
    ),
    "TransformAction": (PROBE_ID, None, lambda env, _: wrappers.TransformAction(env, lambda a: 2 - a, None)),
    "RepeatAction": (PROBE_ID, None, lambda env, _: wrappers.RepeatAction(env, num_repeats=2)),
    "ClipReward": (PROBE_ID, None, lambda env, _: wrappers.ClipReward(env, 0.0, 1.5)),
    "TransformReward": (PROBE_ID, None, lambda env, _: wrappers.TransformReward(env, lambda r: -r)),
    "NormalizeReward": (PROBE_ID, None, lambda env, _: wrappers.NormalizeReward(env)),
    "TimeLimit": (PROBE_ID, None, lambda env, _: wrappers.TimeLimit(env, max_episode_steps=4)),
    "Autoreset": (PROBE_ID, None, lambda env, _: wrappers.Autoreset(env)),
    "PassiveEnvChecker": (PROBE_ID, None, lambda env, _: wrappers.PassiveEnvChecker(env)),
    "OrderEnforcing": (PROBE_ID, None, lambda env, _: wrappers.OrderEnforcing(env)),
    "RecordEpisodeStatistics": (PROBE_ID, None, lambda env, _: wrappers.RecordEpisodeStatistics(env)),
}


# Over the Dict probe: tried by test_single_spaces.py on the paths that carry Dict observations.
OVER_DICT: dict[str, Case] = {
    "FilterObservation": (DICT_ID, None, lambda env, _: wrappers.FilterObservation(env, ["steps"])),
    "FlattenObservation": (DICT_ID, None, lambda env, _: wrappers.FlattenObservation(env)),
}


# Over an env made with render_mode="rgb_array".
RENDERING: dict[str, Case] = {
    "AddRenderObservation": (
        PROBE_ID,
        "rgb_array",
        lambda env, _: wrappers.AddRenderObservation(env, render_only=False),
    ),
    "RenderCollection": (PROBE_ID, "rgb_array", lambda env, _: wrappers.RenderCollection(env)),
    "RecordVideo": (
        PROBE_ID,
        "rgb_array",
        lambda env, folder: wrappers.RecordVideo(env, str(folder), episode_trigger=lambda episode: episode == 0),
    ),
    "HumanRendering": (PROBE_ID, "rgb_array", lambda env, _: wrappers.HumanRendering(env)),
}


# Needs the env's time limit in its spec (a remote env's spec states its server's).
TIME_AWARE: dict[str, Case] = {
    "TimeAwareObservation": (PROBE_ID, None, lambda env, _: wrappers.TimeAwareObservation(env)),
}


# These draw from the env's own generator, env.np_random, which a local env also draws from and a
# remote env does not (its env's draws happen on the server): they cannot equal gym.make's, and
# are held to repeating themselves under the same seed instead.
DRAWING: dict[str, Case] = {
    "StickyAction": (PROBE_ID, None, lambda env, _: wrappers.StickyAction(env, repeat_action_probability=0.5)),
}


# The same, rendering: tried with RENDERING.
DRAWING_RENDERING: dict[str, Case] = {
    "AddWhiteNoise": (
        PROBE_ID,
        "rgb_array",
        lambda env, _: wrappers.AddWhiteNoise(env, probability_of_noise_per_pixel=0.5),
    ),
    "ObstructView": (
        PROBE_ID,
        "rgb_array",
        lambda env, _: wrappers.ObstructView(env, obstructed_pixels_ratio=0.25, obstruction_width=1),
    ),
}


NOT_APPLYING = {
    "vector": "the module of vector wrappers (test_vector_wrappers.py), not a wrapper",
    "AtariPreprocessing": "preprocesses ALE's Atari envs (frame skip, image observations); the probes are none",
    "GrayscaleObservation": "converts RGB image observations; the probes observe no image",
    "ResizeObservation": "resizes image observations; the probes observe no image",
    "ClipAction": "clips Box actions; the probes act in Discrete(3)",
    "RescaleAction": "rescales Box actions; the probes act in Discrete(3)",
    "DiscretizeAction": "discretizes Box actions; the probes act in Discrete(3)",
    "ArrayConversion": "needs array-api-compat (Gymnasium's array-api extra), which the test extra does not install",
    "JaxToNumpy": "converts a JAX env's arrays (jax is not installed), and the probes give numpy's",
    "JaxToTorch": "converts a JAX env's arrays (jax is not installed), and the probes give numpy's",
    "NumpyToTorch": "needs array-api-compat (Gymnasium's array-api extra), which the test extra does not install",
}


def episodes(env: gym.Env[Any, Any], steps: int) -> list[Any]:
    """Seeded resets and random actions (resetting at each end), with each result and render."""
    env.action_space.seed(1)
    results: list[Any] = [env.reset(seed=2)]
    for _ in range(steps):
        result = env.step(env.action_space.sample())
        results.append(result)
        if env.render_mode is not None:
            results.append(env.render())
        if result[2] or result[3]:
            results.append(env.reset())
    return results


def without_times(results: Any) -> Any:
    """Results without RecordEpisodeStatistics' episode times, which are the clock's."""
    if isinstance(results, dict) and "episode" in results:
        return {**results, "episode": {key: value for key, value in results["episode"].items() if key != "t"}}
    if isinstance(results, (tuple, list)):
        return type(results)(without_times(item) for item in results)
    return results


def assert_wrapped_equal(single_path, servers, closing, entry: Case, tmp_path) -> None:
    """The wrapper of ``entry`` over the path and over gym.make here: the same spaces, results, infos and frames."""
    env_id, render_mode, wrap = entry
    env = closing(wrap(single_path(servers, env_id, render_mode=render_mode), tmp_path / "remote"))
    local = closing(wrap(gym.make(env_id, render_mode=render_mode), tmp_path / "local"))
    assert env.observation_space == local.observation_space and env.action_space == local.action_space
    np.testing.assert_equal(without_times(episodes(env, STEPS)), without_times(episodes(local, STEPS)))


def assert_repeats_itself(single_path, servers, closing, entry: Case, tmp_path) -> None:
    """The wrapper of ``entry`` over the path, run twice from the same seed: the same results and frames."""
    env_id, render_mode, wrap = entry
    env = closing(wrap(single_path(servers, env_id, render_mode=render_mode), tmp_path))
    np.testing.assert_equal(episodes(env, STEPS), episodes(env, STEPS))
