"""Vector sessions' frames and the choice of a server-side vector env (pure)."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from openenv_gym.errors import ProtocolError
from openenv_gym.protocol import ErrorFrame, RenderFrame, RenderRequest
from openenv_gym.protocol.batch import AutoresetMode, BatchQuery, batch_query, parse_batch_query
from openenv_gym.protocol.vector import (
    VectorResetFrame,
    VectorResultFrame,
    VectorStepFrame,
    choose_vector_backend,
    parse_vector_client_frame,
    parse_vector_server_frame,
)

CARTPOLE = {
    "gymnasium": {
        "entry_point": "cartpole:CartPoleVectorEnv",
        "autoreset_modes": ["NextStep"],
        "render_modes": ["rgb_array"],
    }
}
OWN_CARTPOLE = {
    "entry_point": "openenv_gym.envs.cartpole_vector:CartPoleVectorEnv",
    "autoreset_modes": ["NextStep", "SameStep", "Disabled"],
    "render_modes": ["rgb_array"],
}
ATARI = {
    "gymnasium": {"entry_point": "ale_py:AtariVectorEnv", "autoreset_modes": ["NextStep", "SameStep"]},
    "ale": {"entry_point": "ale_py:AtariVectorEnv", "autoreset_modes": ["NextStep", "SameStep"]},
    "envpool": {"entry_point": "envpool", "autoreset_modes": ["NextStep"]},
}


@pytest.mark.parametrize(
    ("requested", "mode", "offered", "chosen", "reason"),
    [
        ("auto", AutoresetMode.NEXT_STEP, CARTPOLE, "gymnasium", "vector_entry_point (cartpole:CartPoleVectorEnv)"),
        ("auto", AutoresetMode.SAME_STEP, CARTPOLE, None, "not SameStep: one env per sub-env"),
        (
            "auto",
            AutoresetMode.SAME_STEP,
            {**CARTPOLE, "openenv_gym": OWN_CARTPOLE},
            "openenv_gym",
            "serves autoreset modes ['NextStep'], not SameStep; openenv-gym's own vector env (openenv_gym.envs",
        ),
        ("auto", AutoresetMode.NEXT_STEP, {**CARTPOLE, "openenv_gym": OWN_CARTPOLE}, "gymnasium", "vector_entry_point"),
        ("auto", AutoresetMode.SAME_STEP, {"openenv_gym": OWN_CARTPOLE}, "openenv_gym", "no vector_entry_point; "),
        ("openenv_gym", AutoresetMode.NEXT_STEP, {**CARTPOLE, "openenv_gym": OWN_CARTPOLE}, "openenv_gym", "asked for"),
        ("auto", AutoresetMode.NEXT_STEP, {}, None, "no vector_entry_point"),
        ("auto", AutoresetMode.NEXT_STEP, {"envpool": ATARI["envpool"]}, None, "no vector_entry_point"),
        ("per_env", AutoresetMode.NEXT_STEP, ATARI, None, "per_env asked for"),
        ("ale", AutoresetMode.SAME_STEP, ATARI, "ale", "ale asked for"),
        ("envpool", AutoresetMode.NEXT_STEP, ATARI, "envpool", "envpool asked for"),
    ],
)
def test_choose_vector_backend(requested, mode, offered, chosen, reason):
    name, why = choose_vector_backend(requested, mode, offered)
    assert name == chosen and reason in why


@pytest.mark.parametrize(
    ("requested", "mode", "message"),
    [
        ("envpool", AutoresetMode.SAME_STEP, "serves autoreset modes ['NextStep'], not SameStep"),
        ("ale", AutoresetMode.NEXT_STEP, "cannot serve this env: CartPole is no ALE game"),
        ("numba", AutoresetMode.NEXT_STEP, "vector_backend must be one of"),
    ],
)
def test_a_forced_backend_that_cannot_serve_is_a_clear_error(requested, mode, message):
    offered = {**CARTPOLE, "envpool": ATARI["envpool"]}
    with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("]", r"\]")):
        choose_vector_backend(requested, mode, offered, {"ale": "CartPole is no ALE game"})


@pytest.mark.parametrize(
    ("render_mode", "chosen", "reason"),
    [
        ("rgb_array", "gymnasium", "vector_entry_point (cartpole:CartPoleVectorEnv)"),
        ("rgb_array_list", None, "renders ['rgb_array'], not 'rgb_array_list': one env per sub-env"),
    ],
)
@pytest.mark.parametrize("own", [False, True])
def test_auto_takes_a_vector_env_only_if_it_renders_the_mode(render_mode, chosen, reason, own):
    offered = {**CARTPOLE, "openenv_gym": OWN_CARTPOLE} if own else CARTPOLE
    name, why = choose_vector_backend("auto", AutoresetMode.NEXT_STEP, offered, render_mode=render_mode)
    assert name == chosen and reason in why


@pytest.mark.parametrize(
    ("requested", "message"),
    [
        ("gymnasium", "vector_backend='gymnasium' renders ['rgb_array'], not render_mode='rgb_array_list'"),
        ("ale", "vector_backend='ale' renders [], not render_mode='rgb_array_list': use vector_backend='per_env'"),
    ],
)
def test_a_forced_backend_that_cannot_render_the_mode_is_a_clear_error(requested, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        choose_vector_backend(requested, AutoresetMode.NEXT_STEP, {**ATARI, **CARTPOLE}, render_mode="rgb_array_list")


@pytest.mark.parametrize("binary", [True, False])
def test_render_frames_round_trip(binary):
    """A render request parses on a vector session; the vector env's frames come back as it gave them."""
    assert parse_vector_client_frame('{"type":"render"}') == RenderRequest()
    for frames in ([np.ones((2, 3, 3), np.uint8)] * 2, np.arange(36, dtype=np.uint8).reshape(2, 2, 3, 3)):
        reply = RenderFrame(frames)
        got = parse_vector_server_frame(reply.serialize_binary() if binary else reply.serialize())
        assert isinstance(got, RenderFrame)
        got.check(2)
        assert type(got.frame) is type(frames)
        np.testing.assert_array_equal(np.asarray(got.frame), np.asarray(frames))


def test_the_batch_query_names_the_backend():
    query = batch_query(8, AutoresetMode.NEXT_STEP, "gymnasium")
    assert parse_batch_query(query, max_envs=8) == BatchQuery(8, AutoresetMode.NEXT_STEP, "gymnasium")


@pytest.mark.parametrize("binary", [True, False])
def test_frames_round_trip(binary):
    actions = np.array([0, 1, 1], dtype=np.int64)
    step = VectorStepFrame(actions)
    parsed = parse_vector_client_frame(step.serialize_binary() if binary else step.serialize())
    assert isinstance(parsed, VectorStepFrame) and parsed.actions.dtype == np.int64
    np.testing.assert_array_equal(parsed.actions, actions)
    assert parse_vector_client_frame(VectorResetFrame(3, {"x": 1}, [True, False]).serialize()) == VectorResetFrame(
        3, {"x": 1}, [True, False]
    )
    result = VectorResultFrame(
        np.zeros((3, 4), np.float32),
        {"lives": np.array([1, 2, 3], np.int32)},
        np.ones(3, np.float32),
        np.zeros(3, bool),
        np.array([False, True, False]),
    )
    got = parse_vector_server_frame(result.serialize_binary() if binary else result.serialize())
    assert isinstance(got, VectorResultFrame)
    got.check(3)
    assert got.rewards.dtype == np.float32 and got.infos["lives"].dtype == np.int32
    np.testing.assert_array_equal(got.truncated, [False, True, False])


@pytest.mark.parametrize(
    "message",
    [
        pytest.param(json.dumps({"type": "vector_step", "data": {}}), id="no-actions"),
        pytest.param(json.dumps({"type": "vector_reset", "data": {"seed": "1"}}), id="seed-not-int"),
        pytest.param(json.dumps({"type": "vector_reset", "data": {"seed": True}}), id="seed-bool"),
        pytest.param(json.dumps({"type": "vector_reset", "data": {"mask": [1, 0]}}), id="mask-not-bools"),
        pytest.param(json.dumps({"type": "vector_reset", "data": {"options": []}}), id="options-not-object"),
        pytest.param(json.dumps({"type": "batch_step", "data": {"actions": []}}), id="batch-frame"),
        pytest.param(b"\x00\x01binary junk", id="unpacked-binary"),
        pytest.param("not json", id="not-json"),
    ],
)
def test_bad_client_frames_are_protocol_errors(message):
    with pytest.raises(ProtocolError):
        parse_vector_client_frame(message)


def test_a_result_of_the_wrong_size_fails_its_check():
    result = VectorResultFrame(np.zeros((2, 4)), {}, np.zeros(2), np.zeros(2, bool), np.zeros(2, bool))
    with pytest.raises(ProtocolError, match="rewards must be an array of 3 items"):
        parse_vector_server_frame(result.serialize_binary()).check(3)  # type: ignore[union-attr]


def test_an_error_frame_parses_as_one():
    error = ErrorFrame("VALIDATION_ERROR", "bad actions")
    assert parse_vector_server_frame(error.serialize()) == error
