"""A batch session of Gymnasium envs on the binary codec sends infos, SameStep's final observations
and batch_call values as the env gave them (packed); on the JSON codec, as their readable JSON forms."""

from __future__ import annotations

import json
from typing import Any, ClassVar

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces
from websockets.sync.client import ClientConnection

from openenv_gym.protocol.arrays import unpack
from openenv_gym.protocol.batch import BINARY_SUBPROTOCOL, AutoresetMode, parse_batch_server_frame
from openenv_gym.server import GymEnvironment
from tests.server.test_batch_session import reset, send, step, ws
from tests.utils import running_server


class Counting(gym.Env[int, int]):
    """Discrete observations as plain ints; infos holding an array, a numpy scalar and a Python float."""

    observation_space = spaces.Discrete(4)
    action_space = spaces.Discrete(4)
    metadata: ClassVar[dict[str, Any]] = {"render_modes": ["rgb_array"]}

    def __init__(self) -> None:
        self.render_mode = "rgb_array"
        self.position = 0

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[int, dict[str, Any]]:
        self.position = 0
        return 0, {"pair": np.array([1, 2], dtype=np.int16)}

    def step(self, action: int) -> tuple[int, float, bool, bool, dict[str, Any]]:
        self.position += 1
        info = {"pair": np.array([self.position, 2], dtype=np.int16), "count": np.int32(self.position), "half": 0.5}
        return self.position, 1.0, self.position >= 2, False, info

    def render(self) -> np.ndarray:
        return np.full((2, 3, 3), self.position, dtype=np.uint8)


def session(server: Any, binary: bool) -> ClientConnection:
    query = f"envs=2&autoreset_mode={AutoresetMode.SAME_STEP.value}"
    return ws(server, query, subprotocols=[BINARY_SUBPROTOCOL] if binary else None)


@pytest.fixture(scope="module")
def server():
    with running_server(lambda: GymEnvironment(Counting())) as running:
        yield running


def test_binary_session_sends_infos_and_final_observations_as_the_env_gave_them(server):
    with session(server, binary=True) as websocket:
        first = parse_batch_server_frame(send(websocket, reset([0, 1])))
        assert first.infos[0]["pair"].dtype == np.int16  # an array, not a list
        send(websocket, step({"action": 0}, {"action": 0}))
        ended = parse_batch_server_frame(send(websocket, step({"action": 0}, {"action": 0})))
    info = ended.final[0]["info"]
    assert isinstance(info["pair"], np.ndarray) and info["pair"].tolist() == [2, 2]
    assert type(info["count"]) is np.int32 and type(info["half"]) is float
    final = ended.final[1]["raw_observation"]
    assert type(final) is int and final == 2  # what the env returned, not np.int64 from the wire form


def test_binary_session_sends_call_values_as_they_are(server):
    with session(server, binary=True) as websocket:
        send(websocket, reset([0, 1]))
        reply = send(websocket, {"type": "batch_call", "data": {"op": "call", "name": "render"}})
    assert isinstance(reply, bytes)
    frames = unpack(reply)["data"]["values"]
    assert all(isinstance(frame, np.ndarray) and frame.shape == (2, 3, 3) for frame in frames)


def test_json_session_keeps_the_readable_json_forms(server):
    with session(server, binary=False) as websocket:
        send(websocket, reset([0, 1]))
        send(websocket, step({"action": 0}, {"action": 0}))
        ended = json.loads(send(websocket, step({"action": 0}, {"action": 0})))
        values = json.loads(send(websocket, {"type": "batch_call", "data": {"op": "call", "name": "render"}}))
    final = ended["data"]["final"]["0"]
    assert final == {"observation": {"observation": 2}, "info": {"pair": [2, 2], "count": 2, "half": 0.5}}
    assert values["data"]["values"][0] == [[[0] * 3] * 3] * 2  # reset in the same step: back at 0
