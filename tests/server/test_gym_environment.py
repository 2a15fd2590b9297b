"""GymEnvironment: a Gymnasium env behind the wire, seeds, options, info and spaces intact."""

from __future__ import annotations

import re

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces

from openenv_gym.server import GymEnvironment
from openenv_gym.spaces import from_wire, space_from_json


class InfoEnv(gym.Env):
    """Dict actions, numpy values in info, and options echoed back."""

    action_space = spaces.Dict({"move": spaces.Discrete(3), "power": spaces.Box(0, 1, (2,), np.float32)})
    observation_space = spaces.Box(-1, 1, (2,), np.float32)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return self.np_random.uniform(-1, 1, 2).astype(np.float32), {"options": options, "scale": np.float64(2.5)}

    def step(self, action):
        obs = np.asarray(action["power"], dtype=np.float32)
        return obs, 1.0, action["move"] == 2, False, {"mask": np.array([True, False]), "count": np.int64(3)}


def test_reset_step_and_info_become_json():
    """Observations and info travel as plain JSON values; the reward is a float and flags bools."""
    env = GymEnvironment(InfoEnv())
    first = env.reset(seed=1, options={"level": 2})
    assert first.info == {"options": {"level": 2}, "scale": 2.5}
    action = env.parse_action({"move": 2, "power": [0.25, 0.5]})
    result = env.step(action)
    assert result.observation == {"observation": [0.25, 0.5]}
    assert (result.reward, result.done, result.truncated) == (1.0, True, False)
    assert result.info == {"mask": [True, False], "count": 3}
    assert env.state_data() == {"episode_id": env.state.episode_id, "step_count": 1}


def test_seeded_resets_match_the_local_env():
    """reset(seed=) reaches the wrapped env, so the first observation matches a local one."""
    served = GymEnvironment(gym.make("CartPole-v1"))
    local = gym.make("CartPole-v1")
    assert served.reset(seed=11).observation["observation"] == local.reset(seed=11)[0].tolist()


def test_actions_are_checked_against_the_space():
    """Wire actions that do not fit the action space raise ValueError naming the space."""
    env = GymEnvironment(gym.make("CartPole-v1"))
    assert env.parse_action({"action": 1}) == 1
    with pytest.raises(ValueError, match=re.escape("is outside the action space Discrete(2)")):
        env.parse_action({"action": 2})
    with pytest.raises(ValueError, match=re.escape("expected an object with the single field 'action'")):
        env.parse_action({"move": 1})


@pytest.mark.parametrize("start", [0, -3, 5])
def test_discrete_actions_decode_as_the_space_decoder_does(start: int) -> None:
    """The Discrete fast path gives what from_wire gives, and refuses what it refuses."""
    space = spaces.Discrete(4, start=start)

    class Shifted(gym.Env):  # type: ignore[type-arg]
        action_space = space
        observation_space = spaces.Discrete(1)

    env = GymEnvironment(Shifted())
    for value in (start, start + 3, float(start + 1)):
        action = env.parse_action({"action": value})
        assert action == from_wire(space, {"action": value}, "action") and type(action) is np.int64
    for bad in (start - 1, start + 4, True, 1.5, "1", None, 2**70):
        with pytest.raises(ValueError):
            env.parse_action({"action": bad})
    for bad_frame in ({"action": start, "extra": 1}, {}, {"actions": start}):
        with pytest.raises(ValueError):
            env.parse_action(bad_frame)


def test_schema_publishes_the_exact_spaces():
    """/schema carries the env's spaces, which rebuild into equal spaces."""
    env = GymEnvironment(InfoEnv())
    schema = env.schema()
    assert space_from_json(schema["spaces"]["action"]) == InfoEnv.action_space
    assert space_from_json(schema["spaces"]["observation"]) == InfoEnv.observation_space


def test_metadata_names_the_env():
    """get_metadata names the Gymnasium id."""
    assert GymEnvironment(gym.make("Pendulum-v1")).get_metadata().name == "Pendulum-v1"


def test_not_a_gymnasium_env():
    """Anything else is refused with a TypeError."""
    with pytest.raises(TypeError, match=re.escape("expected a gymnasium.Env, got int")):
        GymEnvironment(lambda: 3)
