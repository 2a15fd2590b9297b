"""Every wrapper in ``gymnasium.wrappers.vector`` over every vector path, in lockstep with the same
wrapper over Gymnasium's own SyncVectorEnv: the same results, step by step. A wrapper that does
not apply to the probes' spaces says why in :data:`~tests.conformance.vector_wrapper_cases.NOT_APPLYING`; a wrapper Gymnasium adds is in
neither table and fails :func:`test_every_vector_wrapper_is_tried_or_said_why_not`."""

from __future__ import annotations

import gymnasium.wrappers.vector as vector_wrappers
import pytest

from .vector_wrapper_cases import APPLYING, NOT_APPLYING, OVER_DICT, assert_wrapped_equal


def test_every_vector_wrapper_is_tried_or_said_why_not():
    """Each name in gymnasium.wrappers.vector.__all__ is tried on every path below, or has a reason not to be."""
    tables = [set(APPLYING), set(OVER_DICT), set(NOT_APPLYING)]
    assert sum(len(table) for table in tables) == len(set.union(*tables))  # each name in one table
    assert set.union(*tables) == set(vector_wrappers.__all__)


@pytest.mark.parametrize("name", sorted(APPLYING))
def test_a_vector_wrapper_gives_what_it_gives_over_sync_vector_env(
    vector_path, servers, closing, name, tmp_path, monkeypatch
):
    """The wrapper over the path and over SyncVectorEnv: the same reset and steps, wrapped results and infos included."""
    monkeypatch.setenv("SDL_VIDEODRIVER", "dummy")  # HumanRendering's window, headless
    assert_wrapped_equal(vector_path, servers, closing, APPLYING[name], tmp_path)
