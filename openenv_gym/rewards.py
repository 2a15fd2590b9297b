"""Rewards in parts: an env's named reward components, their composition, and reward functions users add.

An env that scores in parts returns them in ``info["reward_components"]`` (``{"tests": 0.5}``)
and declares in ``/schema["reward"]`` how the scalar reward is made of them
(:class:`Composition`: each part's weight, and gates: parts that multiply the rest). Each task
env of openenv-gym documents its own (``docs/tasks.md``). Its server also sends them in the
observation's ``metadata`` (:func:`metadata_with_parts`), where OpenEnv's clients read them.

On the client, a :class:`RewardFunction` adds a part of the user's: a function of each step
(``per="step"``, called with the step's :class:`StepView`) or of the whole episode (``per="episode"``,
called with its :class:`~openenv_gym.trajectories.Trajectory` at its last step). Its value joins
``info["reward_components"]`` under its name, and ``weight`` times it joins the reward:
:class:`~openenv_gym.wrappers.RecordEpisodes` applies them to a single env, a vector env or the
pool's async envs, and the TRL integration's ``rollout_func(rewards=[...])`` returns them for
TRL to log beside the env's parts. ``openenv-gym rescore`` recomputes them from recorded
episodes, without the env or the model. An OpenEnv rubric is one through
:func:`openenv_gym.rubrics.rubric_reward`.
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from .trajectories import Trajectory

__all__ = [
    "COMPONENTS_KEY",
    "Composition",
    "RewardFunction",
    "RewardPart",
    "StepView",
    "load_reward_function",
    "metadata_with_parts",
    "rescored",
    "reward_functions",
]

#: Where a step's reward components travel: ``info["reward_components"]``, and under the same key
#: in the observation's ``metadata``, where OpenEnv's clients read what an env says beside it.
COMPONENTS_KEY = "reward_components"


def metadata_with_parts(metadata: Mapping[str, Any] | None, info: Mapping[str, Any]) -> dict[str, Any] | None:
    """An observation's ``metadata`` as a server sends it: with the step's reward parts
    (``info["reward_components"]``) under the same key, ``{name: value}``, the shape of an OpenEnv
    rubric tree's scores (``{name: r.last_score for name, r in rubric.named_rubrics()}``), so an
    OpenEnv client reads them in ``StepResult.metadata`` (``None``: nothing to send).

    Example:
        >>> metadata_with_parts({}, {"reward_components": {"tests": 0.5}})
        {'reward_components': {'tests': 0.5}}
    """
    parts = info.get(COMPONENTS_KEY)
    if not parts or (metadata and COMPONENTS_KEY in metadata):  # an env that sends its own keeps them
        return dict(metadata) if metadata else None
    return {**(metadata or {}), COMPONENTS_KEY: dict(parts)}


@dataclass(frozen=True)
class RewardPart:
    """One named part of an env's reward: ``weight`` times its value joins the reward, or, for a
    ``gate``, the value (0 to 1) multiplies everything else."""

    name: str
    weight: float = 1.0
    gate: bool = False
    description: str = ""


@dataclass(frozen=True)
class Composition:
    """How a reward is made of its parts: ``prod(gates) * sum(weight * value)``.

    Example:
        >>> scoring = Composition((RewardPart("tests", 0.9), RewardPart("format", 0.1), RewardPart("compiles", gate=True)))
        >>> scoring.combine({"tests": 0.5, "format": 1.0, "compiles": 1.0})
        0.55
        >>> scoring.combine({"tests": 0.5, "format": 1.0, "compiles": 0.0})
        0.0
    """

    parts: tuple[RewardPart, ...]

    def combine(self, components: Mapping[str, float]) -> float:
        """The reward of ``components`` (a part missing from them counts 0).

        Raises:
            ValueError: a component this composition has no part for.
        """
        unknown = set(components) - {part.name for part in self.parts}
        if unknown:
            raise ValueError(
                f"components {sorted(unknown)} are not parts of this reward ({[p.name for p in self.parts]})"
            )
        gate = math.prod(float(components.get(part.name, 0.0)) for part in self.parts if part.gate)
        total = math.fsum(part.weight * float(components.get(part.name, 0.0)) for part in self.parts if not part.gate)
        return gate * total

    def describe(self) -> dict[str, Any]:
        """What ``/schema["reward"]`` says."""
        return {
            "formula": "prod(gates) * sum(weight * value)",
            "parts": [
                {"name": p.name, "weight": p.weight, "gate": p.gate, "description": p.description} for p in self.parts
            ],
        }

    @classmethod
    def from_schema(cls, data: Mapping[str, Any]) -> Composition:
        """The composition :meth:`describe` published."""
        return cls(
            tuple(
                RewardPart(
                    str(p["name"]),
                    float(p.get("weight", 1.0)),
                    bool(p.get("gate", False)),
                    str(p.get("description", "")),
                )
                for p in data["parts"]
            )
        )


@dataclass(frozen=True)
class StepView:
    """What a step-level reward function sees of one step (values as the env gives them)."""

    observation: Any
    action: Any
    reward: float
    terminated: bool
    truncated: bool
    info: Mapping[str, Any]
    step: int  # 0 for the episode's first step


@dataclass(frozen=True)
class RewardFunction:
    """A reward part of the user's, computed on the client.

    Args:
        fn: ``fn(step: StepView) -> float`` (``per="step"``) or ``fn(trajectory: Trajectory) ->
            float`` (``per="episode"``, at the episode's last step; the trajectory holds the
            episode so far, that step included).
        name: the component's name (default: the function's).
        weight: what one unit of it adds to the reward (``0``: logged, not paid).
        per: ``"step"`` or ``"episode"``.
    """

    fn: Callable[[Any], float]
    name: str = ""
    weight: float = 1.0
    per: Literal["step", "episode"] = "episode"

    def __post_init__(self) -> None:
        if self.per not in ("step", "episode"):
            raise ValueError(f"per must be 'step' or 'episode', got {self.per!r}")
        if not self.name:
            object.__setattr__(self, "name", getattr(self.fn, "__name__", "reward"))

    def on_step(self, step: StepView) -> float:
        return _number(self.fn(step), self.name)

    def on_episode(self, trajectory: Trajectory) -> float:
        return _number(self.fn(trajectory), self.name)


def reward_functions(functions: Sequence[RewardFunction | Callable[[Any], float]]) -> list[RewardFunction]:
    """``functions`` as :class:`RewardFunction` (a plain function is an episode-level one of weight 1).

    Raises:
        ValueError: two with the same name.
    """
    made = [f if isinstance(f, RewardFunction) else RewardFunction(f) for f in functions]
    names = [f.name for f in made]
    if len(set(names)) != len(names):
        raise ValueError(f"reward functions need distinct names, got {names}")
    return made


def rescored(trajectory: Trajectory, functions: Sequence[RewardFunction]) -> Trajectory:
    """``trajectory`` paid by ``functions`` instead of the reward functions it was recorded with,
    from its record alone (no env, no model): each step's components are the env's (its recorded
    info's) and the functions' values, and its reward the env's plus ``weight`` times each value;
    the same numbers a :class:`~openenv_gym.wrappers.RecordEpisodes` with ``functions`` pays live.

    Step-level functions see each step re-built from the record (the observation and action
    decoded by the recorded spaces, the info as JSON); episode-level ones see the trajectory.
    """
    from dataclasses import replace

    observations = trajectory.decoded_observations()
    actions = trajectory.decoded_actions()
    rewards: list[float] = []
    components: list[dict[str, float]] = []
    for index in range(trajectory.length):
        info = trajectory.infos[index + 1]
        last = index == trajectory.length - 1
        parts = {name: float(value) for name, value in (info.get(COMPONENTS_KEY) or {}).items()}
        paid = float(trajectory.env_rewards[index])
        view = StepView(
            observations[index + 1],
            actions[index],
            paid,
            trajectory.terminated and last,
            trajectory.truncated and last,
            info,
            index,
        )
        for function in functions:
            if function.per == "step":
                parts[function.name] = function.on_step(view)
                paid += function.weight * parts[function.name]
        rewards.append(paid)
        components.append(parts)
    result = replace(trajectory, rewards=rewards, reward_components=components)
    if trajectory.done and trajectory.length:
        paid = result.rewards[-1]
        for function in functions:  # as paid live: each sees the parts before it, the reward is set after
            if function.per == "episode":
                value = function.on_episode(result)
                result.reward_components[-1][function.name] = value
                paid += function.weight * value
        result.rewards[-1] = paid
    return result


def load_reward_function(
    spec: str, *, weight: float = 1.0, per: Literal["step", "episode"] = "episode"
) -> RewardFunction:
    """The reward function ``"module:attr"`` names (a :class:`RewardFunction`, or a plain function).

    Raises:
        ValueError: ``spec`` is not ``module:attr``, or names nothing callable.
        ImportError: the module does not import.
    """
    module, _, attr = spec.partition(":")
    if not module or not attr:
        raise ValueError(f"a reward function is named as module:attr, got {spec!r}")
    found = getattr(importlib.import_module(module), attr, None)
    if isinstance(found, RewardFunction):
        return found
    if not callable(found):
        raise ValueError(f"{spec} is not a function")
    return RewardFunction(found, name=attr, weight=weight, per=per)


def _number(value: Any, name: str) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise TypeError(f"reward function {name!r} returned {value!r}, not a number") from None
    if not math.isfinite(number):
        raise ValueError(f"reward function {name!r} returned {number}")
    return number
