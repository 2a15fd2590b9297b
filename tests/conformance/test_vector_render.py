"""Render on every vector path: a vector env's frames as SyncVectorEnv's (a tuple of each sub-env's)."""

from __future__ import annotations

from tests.equivalence import assert_same

from .contract import lockstep
from .paths import reference_vector


def test_render_gives_each_sub_envs_frame(vector_path, servers, closing):
    """render_mode="rgb_array": render_mode and render_fps as the sub-envs', and render() their frames, as SyncVectorEnv's."""
    envs = closing(vector_path(servers, render_mode="rgb_array"))
    local = closing(reference_vector(render_mode="rgb_array"))
    assert envs.render_mode == "rgb_array"
    assert envs.metadata["render_fps"] == local.metadata["render_fps"]
    envs.reset(seed=0)
    local.reset(seed=0)
    lockstep(envs, local, [[1, 0, 2]])
    assert_same(envs.render(), local.render(), "render")
