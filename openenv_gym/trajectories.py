"""Trajectories: one record per episode, written as JSONL or Parquet, read back, re-played and re-scored.

A :class:`Trajectory` holds what an episode was: the env (id and version), the reset's seed and
options (the task), every action and observation (in the JSON form of the env's spaces, which the
record carries, so it decodes without the env; a tool call the env was given as a dict, as that
JSON object), the rewards with their components, the infos, and how it ended, or that ``close()``
cut it short (``unfinished``). The recording wrappers of :mod:`openenv_gym.wrappers.recording` make them from
a single env, a vector env, or the pool's async envs; :func:`write_trajectories` and
:func:`read_trajectories` keep them in a file (``.jsonl``, or ``.parquet`` through pyarrow:
measured faster to write than ``datasets``, and the same columns). ``openenv-gym replay`` steps
an env with a file's actions and reports where it diverges; ``openenv-gym rescore`` recomputes
rewards from the records alone.

Episodes of one env in a row form a *stream* (``stream`` and ``episode`` name the env instance
and the episode's place in it): an episode that reset without a seed (a vector env's autoreset)
continues its env's random generator, so it re-plays only after the stream's earlier episodes.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

__all__ = [
    "JSON_TEXT_COLUMNS",
    "Divergence",
    "Trajectory",
    "TrajectoryWriter",
    "read_trajectories",
    "replay",
    "write_trajectories",
]

#: Columns a Parquet file keeps as JSON text: nested values of mixed types, which Arrow cannot hold.
JSON_TEXT_COLUMNS = (
    "options",
    "spaces",
    "observations",
    "actions",
    "rewards",
    "env_rewards",
    "reward_components",
    "infos",
    "metadata",
)


@dataclass
class Trajectory:
    """One episode.

    Attributes:
        env_id: the id it was made with (``openenv/CartPole-v1``), when known.
        env_version: the env's version as its server says (``/metadata``), when known.
        stream: which env instance played it (episodes of one stream ran in a row on one env).
        episode: its place in the stream (0 for the first).
        seed, options: the reset's arguments (``options`` names the task of a task env).
        task_id: the task, from the reset's info, when the env has tasks.
        spaces: the action and observation spaces, in :func:`openenv_gym.spaces.space_to_json`'s form.
        observations: the reset's observation, then each step's (encoded by the observation space).
        actions: each step's action as the env received it: encoded by the action space, except a
            tool call given as a dict, kept as that JSON object (a tool env's text action space
            holds no object, so it cannot be mistaken for text).
        rewards: each step's reward as the agent was paid it: the env's, plus what the user's
            reward functions added (:mod:`openenv_gym.rewards`).
        env_rewards: each step's reward as the env paid it (what a replay compares).
        reward_components: each step's named parts of the reward (``info["reward_components"]``).
        infos: the reset's info, then each step's (as plain JSON).
        terminated, truncated: how it ended (neither: cut short before it ended).
        unfinished: the recorder was closed before the episode ended: its steps are recorded,
            its return is not an episode's (the means of ``openenv-gym rescore`` and ``eval``
            leave it out). A record written before this field existed gets it from its flags.
        metadata: anything else the recorder was told (a policy's name, a run id).
    """

    env_id: str | None = None
    env_version: str | None = None
    stream: str = "0"
    episode: int = 0
    seed: int | None = None
    options: dict[str, Any] | None = None
    task_id: str | None = None
    spaces: dict[str, Any] | None = None
    observations: list[Any] = field(default_factory=list)
    actions: list[Any] = field(default_factory=list)
    rewards: list[float] = field(default_factory=list)
    env_rewards: list[float] = field(default_factory=list)
    reward_components: list[dict[str, float]] = field(default_factory=list)
    infos: list[dict[str, Any]] = field(default_factory=list)
    terminated: bool = False
    truncated: bool = False
    unfinished: bool = False
    metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def length(self) -> int:
        """Steps taken."""
        return len(self.actions)

    @property
    def total_reward(self) -> float:
        """The episode's return (the sum of its rewards)."""
        return float(math.fsum(self.rewards))

    @property
    def done(self) -> bool:
        """Whether the episode ended (terminated or truncated)."""
        return self.terminated or self.truncated

    def components_total(self) -> dict[str, float]:
        """Each reward component summed over the episode."""
        totals: dict[str, float] = {}
        for step in self.reward_components:
            for name, value in step.items():
                totals[name] = totals.get(name, 0.0) + float(value)
        return totals

    def decoded_actions(self) -> list[Any]:
        """The actions as the env takes them (decoded by the recorded action space; a tool call
        recorded as a JSON object is that object, as the env took it)."""
        return self._decoded("action", self.actions)

    def decoded_observations(self) -> list[Any]:
        """The observations as the env gave them (decoded by the recorded observation space)."""
        return self._decoded("observation", self.observations)

    def _decoded(self, which: str, values: list[Any]) -> list[Any]:
        if not self.spaces or which not in self.spaces:
            return list(values)
        from gymnasium.spaces import Text

        from .spaces import decode, space_from_json

        space = space_from_json(self.spaces[which])
        # A tool call given as a dict is recorded as that object, which no value of a Text space is.
        return [
            value if isinstance(space, Text) and isinstance(value, dict) else decode(space, value) for value in values
        ]

    def to_record(self) -> dict[str, Any]:
        """The trajectory as one JSON object (a JSONL line), with its return and length."""
        return {**asdict(self), "total_reward": self.total_reward, "length": self.length}

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> Trajectory:
        """A trajectory from :meth:`to_record`'s object (derived keys are ignored).

        Raises:
            ValueError: the record lacks a field, or is not an object.
        """
        if not isinstance(record, Mapping):
            raise ValueError(f"a trajectory record is an object, got {type(record).__name__}")
        names = {item.name for item in fields(cls)}
        known = {key: value for key, value in record.items() if key in names}
        if "unfinished" not in known:  # an older record: only an episode cut short ended neither way
            known["unfinished"] = not (record.get("terminated") or record.get("truncated"))
        try:
            return cls(**known)
        except TypeError as exc:
            raise ValueError(f"not a trajectory record: {exc}") from None


def write_trajectories(path: str | Path, trajectories: Iterable[Trajectory]) -> Path:
    """Write ``trajectories`` to ``path``: JSONL, or Parquet for a ``.parquet`` name (needs pyarrow).

    Returns the path written.
    """
    with TrajectoryWriter(path) as writer:
        for trajectory in trajectories:
            writer.write(trajectory)
    return Path(path)


class TrajectoryWriter:
    """Writes trajectories one by one: a JSONL file gets each line at once (flushed, so a crash
    loses nothing written), a Parquet file gets its rows when the writer closes.

    Args:
        path: the file (``.jsonl``, or ``.parquet``); its folder is made if missing.
        append: add to a JSONL file instead of replacing it.
    """

    def __init__(self, path: str | Path, *, append: bool = False) -> None:
        self.path = Path(path)
        self.parquet = self.path.suffix == ".parquet"
        if self.parquet and append:
            raise ValueError("a Parquet file is written whole: append=True is for JSONL")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.count = 0
        self._rows: list[dict[str, Any]] | None = [] if self.parquet else None  # a Parquet file's, until close()
        self._file = None if self.parquet else self.path.open("a" if append else "w", encoding="utf-8")

    def write(self, trajectory: Trajectory) -> None:
        """Add one episode."""
        record = trajectory.to_record()
        if self._file is not None:
            self._file.write(json.dumps(record, separators=(",", ":")) + "\n")
            self._file.flush()
        elif self._rows is not None:
            self._rows.append(
                {key: json.dumps(value) if key in JSON_TEXT_COLUMNS else value for key, value in record.items()}
            )
        else:
            raise ValueError(f"{self.path}: written after close()")
        self.count += 1

    def close(self) -> None:
        """Finish the file; idempotent."""
        if self._file is not None:
            self._file.close()
            self._file = None
        elif self._rows is not None:
            import pyarrow as pa
            import pyarrow.parquet as pq

            pq.write_table(pa.Table.from_pylist(self._rows), self.path)
            self._rows = None

    def __enter__(self) -> TrajectoryWriter:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def read_trajectories(path: str | Path) -> Iterator[Trajectory]:
    """The trajectories of a file :class:`TrajectoryWriter` wrote (JSONL or Parquet).

    Raises:
        ValueError: a line or row that is not a trajectory record (the message names it).
    """
    path = Path(path)
    if path.suffix == ".parquet":
        import pyarrow.parquet as pq

        for number, row in enumerate(pq.read_table(path).to_pylist(), 1):
            decoded = {
                key: json.loads(value) if key in JSON_TEXT_COLUMNS and isinstance(value, str) else value
                for key, value in row.items()
            }
            yield _parsed(decoded, f"{path.name} row {number}")
        return
    with path.open(encoding="utf-8") as lines:
        for number, line in enumerate(lines, 1):
            if line.strip():
                try:
                    record = json.loads(line)
                except ValueError as exc:
                    raise ValueError(f"{path.name} line {number}: not JSON ({exc})") from None
                yield _parsed(record, f"{path.name} line {number}")


def _parsed(record: Any, where: str) -> Trajectory:
    try:
        return Trajectory.from_record(record)
    except ValueError as exc:
        raise ValueError(f"{where}: {exc}") from None


@dataclass(frozen=True)
class Divergence:
    """Where a re-played episode first differs from its record."""

    stream: str
    episode: int
    step: int  # -1: the reset
    what: str  # "observation", "reward", "terminated", "truncated", or "unseeded"
    recorded: Any
    replayed: Any

    def __str__(self) -> str:
        at = "the reset" if self.step < 0 else f"step {self.step}"
        return (
            f"stream {self.stream} episode {self.episode}, {at}: {self.what} "
            f"recorded {_short(self.recorded)}, replayed {_short(self.replayed)}"
        )


def replay(
    trajectories: Iterable[Trajectory], make_env: Any, *, progress: bool = False
) -> tuple[int, list[Divergence]]:
    """Step fresh envs with the recorded actions; how many episodes re-played, and every divergence.

    Each stream gets one env from ``make_env(trajectory)``, which re-plays its episodes in order:
    each reset with its recorded seed and options, then every recorded action; the observation,
    reward and flags of each step are compared with the record (exactly: numbers as the record
    keeps them). A stream whose first episode was not seeded cannot start where it did: it is
    reported (``"unseeded"``), not re-played.
    """
    from tqdm.auto import tqdm

    from .spaces import encode, jsonable

    streams: dict[str, list[Trajectory]] = {}
    for trajectory in trajectories:
        streams.setdefault(trajectory.stream, []).append(trajectory)
    divergences: list[Divergence] = []
    replayed = 0
    total = sum(len(episodes) for episodes in streams.values())
    with tqdm(total=total, desc="replay", unit="episode", disable=not progress) as bar:
        for stream, episodes in streams.items():
            episodes.sort(key=lambda trajectory: trajectory.episode)
            if episodes[0].seed is None:
                divergences.append(Divergence(stream, episodes[0].episode, -1, "unseeded", None, None))
                bar.update(len(episodes))
                continue
            env = make_env(episodes[0])
            try:
                for trajectory in episodes:
                    found = _replay_one(env, trajectory, encode, jsonable)
                    replayed += 1
                    bar.update(1)
                    if found is not None:
                        divergences.append(found)
                        bar.update(len(episodes) - (episodes.index(trajectory) + 1))
                        break  # the env's state is off the record now: the stream's later episodes cannot follow
            finally:
                env.close()
    return replayed, divergences


def _replay_one(env: Any, trajectory: Trajectory, encode: Any, jsonable: Any) -> Divergence | None:
    def differs(step: int, what: str, recorded: Any, replayed: Any) -> Divergence | None:
        return (
            None
            if recorded == replayed
            else Divergence(trajectory.stream, trajectory.episode, step, what, recorded, replayed)
        )

    observation, _ = env.reset(seed=trajectory.seed, options=trajectory.options)
    space = env.observation_space
    if trajectory.observations:
        found = differs(-1, "observation", trajectory.observations[0], jsonable(encode(space, observation)))
        if found:
            return found
    for step, action in enumerate(trajectory.decoded_actions()):
        observation, reward, terminated, truncated, _ = env.step(action)
        checks = [
            ("observation", trajectory.observations[step + 1], jsonable(encode(space, observation))),
            ("reward", trajectory.env_rewards[step], float(reward)),
            ("terminated", trajectory.terminated if step == trajectory.length - 1 else False, bool(terminated)),
            ("truncated", trajectory.truncated if step == trajectory.length - 1 else False, bool(truncated)),
        ]
        for what, recorded, replayed in checks:
            found = differs(step, what, recorded, replayed)
            if found:
                return found
    return None


def _short(value: Any) -> str:
    text = json.dumps(value, default=repr)
    return text if len(text) <= 80 else text[:77] + "..."
