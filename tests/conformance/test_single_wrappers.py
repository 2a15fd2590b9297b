"""Every wrapper in ``gymnasium.wrappers`` over every single-env path, step by step equal to the
same wrapper over ``gym.make`` of the env here. A wrapper that does not apply to the probes'
spaces says why in :data:`~tests.conformance.single_wrapper_cases.NOT_APPLYING`; one Gymnasium adds is in neither table and fails
:func:`test_every_wrapper_is_tried_or_said_why_not`."""

from __future__ import annotations

import gymnasium.wrappers as wrappers
import pytest

from .single_wrapper_cases import (
    APPLYING,
    DRAWING,
    DRAWING_RENDERING,
    NOT_APPLYING,
    OVER_DICT,
    RENDERING,
    TIME_AWARE,
    assert_repeats_itself,
    assert_wrapped_equal,
)


def test_every_wrapper_is_tried_or_said_why_not():
    """Each name in gymnasium.wrappers.__all__ is tried on every path below, or has a reason not to be."""
    tables = [set(APPLYING), set(OVER_DICT), set(RENDERING), set(TIME_AWARE), set(DRAWING)]
    tables += [set(DRAWING_RENDERING), set(NOT_APPLYING)]
    assert sum(len(table) for table in tables) == len(set.union(*tables))  # each name in one table
    assert set.union(*tables) == set(wrappers.__all__)


@pytest.mark.parametrize("name", sorted(APPLYING))
def test_a_wrapper_gives_what_it_gives_over_gym_make(single_path, servers, closing, name, tmp_path):
    """The wrapper over the path and over gym.make here: the same spaces, results and infos."""
    assert_wrapped_equal(single_path, servers, closing, APPLYING[name], tmp_path)


@pytest.mark.parametrize("name", sorted(DRAWING))
def test_a_wrapper_drawing_from_the_envs_generator_repeats_itself_under_a_seed(
    single_path, servers, closing, name, tmp_path
):
    """The wrapper over the path, run twice from the same seed: the same results."""
    assert_repeats_itself(single_path, servers, closing, DRAWING[name], tmp_path)


@pytest.mark.parametrize("name", sorted(TIME_AWARE))
def test_a_wrapper_reading_the_time_limit(single_path, servers, closing, name, tmp_path):
    """A wrapper that reads the spec's max_episode_steps: as over gym.make."""
    assert_wrapped_equal(single_path, servers, closing, TIME_AWARE[name], tmp_path)


@pytest.mark.parametrize("name", sorted(RENDERING))
def test_a_rendering_wrapper_gives_what_it_gives_over_gym_make(
    single_path, servers, closing, name, tmp_path, monkeypatch
):
    """Over an env made with render_mode="rgb_array": the same results and frames."""
    monkeypatch.setenv("SDL_VIDEODRIVER", "dummy")  # HumanRendering's window, headless
    assert_wrapped_equal(single_path, servers, closing, RENDERING[name], tmp_path)


@pytest.mark.parametrize("name", sorted(DRAWING_RENDERING))
def test_a_rendering_wrapper_drawing_from_the_envs_generator_repeats_itself(
    single_path, servers, closing, name, tmp_path
):
    """The same, drawing from the env's generator: run twice from the same seed, the same frames."""
    assert_repeats_itself(single_path, servers, closing, DRAWING_RENDERING[name], tmp_path)
