"""The episode checks of ``openenv-gym validate``: Gymnasium's ``check_env``, the reset/step frames, seeded
determinism, and a declared snapshot's replay."""

from __future__ import annotations

import re
import warnings
from typing import Any

from ..client import EnvClient
from ..errors import UnsupportedSpaceError
from ..protocol.frames import observation_fields
from .access import Face, exchange, face_of, get_json, one_line, raw_session, session_client, settled, short
from .result import CheckResult
from .target import Subject

__all__ = [
    "DETERMINISM_SEED",
    "STEPS",
    "check_determinism",
    "check_gymnasium",
    "check_reset_step_contract",
    "check_snapshot",
]

#: The seed of the determinism check's two resets.
DETERMINISM_SEED = 7
#: Steps the contract and determinism checks take (fewer when an episode ends first).
STEPS = 10
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def check_gymnasium(subject: Subject) -> CheckResult:
    """Gymnasium's ``check_env`` passes on the env through openenv-gym's Gymnasium face (``openenv/Remote-v0``)."""
    import gymnasium as gym
    from gymnasium.utils.env_checker import check_env

    name = "check_env"

    def run() -> list[str]:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            env = gym.make(
                "openenv/Remote-v0",
                base_url=subject.url,
                token=subject.token,
                open_timeout=subject.timeout,
                call_timeout=subject.timeout,
            )
            try:
                # The close check would make a second env while this one is open: a server of one
                # session would refuse it.
                check_env(env.unwrapped, skip_render_check=True, skip_close_check=True)
            finally:
                env.close()
        notes = [_ANSI.sub("", str(warning.message)).removeprefix("WARN: ") for warning in caught]
        return list(dict.fromkeys(notes))

    try:
        notes = settled(run)
    except Exception as exc:  # check_env's AssertionErrors, our errors, the env's
        return CheckResult.failed(name, one_line(exc))
    if notes:
        return CheckResult.passed(name, f"passed with {len(notes)} warning(s): {'; '.join(notes)}")
    return CheckResult.passed(name, "passed, no warnings")


def _frame_problem(reply: Any, space: Any, face: Face) -> str | None:
    """What is wrong with an observation frame, by OpenEnv's wire and our extensions, and against the space."""
    if not isinstance(reply, dict) or "type" not in reply:
        return f"the reply is not a frame: {short(reply)}"
    data = reply.get("data")
    if reply["type"] == "error":
        error = data if isinstance(data, dict) else {}
        return f"the server answered an error frame: {error.get('code')}: {short(error.get('message'), 120)}"
    if reply["type"] != "observation" or not isinstance(data, dict):
        return f"expected an observation frame, got {short(reply)}"
    observation = data.get("observation")
    if not isinstance(observation, dict):
        return f"its observation is {short(observation)}, not a JSON object"
    reward = data.get("reward")
    if reward is not None and (isinstance(reward, bool) or not isinstance(reward, (int, float))):
        return f"its reward is a {type(reward).__name__} ({short(reward)}): a reward must be a number (int or float) or null"
    if not isinstance(data.get("done"), bool):
        return f"its done is {short(data.get('done'))}, not a boolean"
    if "truncated" in data and not isinstance(data["truncated"], bool):
        return f"its truncated is {short(data['truncated'])}, not a boolean"
    if "info" in data and not isinstance(data["info"], dict):
        return f"its info is {short(data['info'])}, not a JSON object"
    if face.spaces is None:
        return None
    observation = observation_fields(observation)  # as parse_server_frame reads it
    try:
        value = face.spaces.observation_from_wire(observation)
    except Exception as exc:
        return f"its observation {short(observation)} does not decode: {one_line(exc)}"
    if not space.contains(value):
        from ..spaces import mismatch

        reason = mismatch(space, value)
        return f"its observation {short(observation)} is not in the observation space {space}" + (
            f": {reason}" if reason and reason != f"not a value of {space}" else ""
        )
    return None


def check_reset_step_contract(subject: Subject) -> CheckResult:
    """Reset and a few steps, as the server sends them: reward a number or null, done and truncated
    booleans, info an object, the observation in the observation space."""
    name = "reset/step contract"
    try:
        face = face_of(subject)
    except UnsupportedSpaceError as exc:  # an OpenEnv server's action field with no Gymnasium space
        return CheckResult.skipped(name, f"no action can be sampled: {one_line(exc)}")
    except Exception as exc:
        return CheckResult.failed(name, f"no spaces to act in: {one_line(exc)}")
    space = face.spaces.observation_space if face.spaces is not None else None
    actions = face.actions(STEPS)

    def run() -> tuple[str | None, str]:
        """What is wrong with the first frame that breaks the contract (``None``: none), and what was walked."""
        with raw_session(subject) as connection:
            reply = exchange(connection, {"type": "reset", "data": {"seed": 0}}, subject.timeout)
            problem = _frame_problem(reply, space, face)
            if problem is not None:
                return f"reset: {problem}", "reset"
            for steps, action in enumerate(actions, start=1):
                reply = exchange(connection, {"type": "step", "data": action}, subject.timeout)
                problem = _frame_problem(reply, space, face)
                if problem is not None:
                    return f"step {steps} ({short(action, 40)}): {problem}", f"{steps} steps"
                if reply["data"]["done"] or reply["data"].get("truncated"):
                    return None, f"reset and {steps} step(s) to the episode's end"
        return None, "reset and list_tools" if face.tools else f"reset and {len(actions)} steps"

    try:
        problem, walked = settled(run)
    except Exception as exc:
        return CheckResult.failed(name, one_line(exc))
    if problem is not None:
        return CheckResult.failed(name, problem)
    checked = "rewards numbers or null, done and truncated booleans, info objects"
    if face.spaces is not None:
        checked += ", observations in the observation space"
    return CheckResult.passed(name, f"{walked}: {checked}")


def check_determinism(subject: Subject) -> CheckResult:
    """Two resets with the same seed, and the same actions, give the same trajectory, where the env
    claims it: its manifest or catalog entry does not say ``nondeterministic: true``, and it is
    an openenv-gym server (it publishes spaces or tools) or its manifest says it is deterministic."""
    name = "determinism"
    if subject.nondeterministic:
        return CheckResult.skipped(name, f"{subject.claimed_by} says nondeterministic: true")
    try:
        schema = get_json(subject, "/schema")
        face = face_of(subject, schema)
    except UnsupportedSpaceError as exc:  # an OpenEnv server's action field with no Gymnasium space
        return CheckResult.skipped(name, f"no action can be sampled: {one_line(exc)}")
    except Exception as exc:
        return CheckResult.failed(name, f"no spaces to act in: {one_line(exc)}")
    ours = isinstance(schema, dict) and bool(schema.get("spaces") or schema.get("tools"))
    if not ours and subject.nondeterministic is None:
        return CheckResult.skipped(
            name, "an OpenEnv server (no Gymnasium spaces or tools in /schema) makes no claim about seeds"
        )
    actions = [] if face.tools else face.actions(STEPS)

    def episode(client: EnvClient) -> list[tuple[Any, ...]]:
        first = client.reset(seed=DETERMINISM_SEED)
        return [(first.observation,), *_play(client, actions)]

    def run() -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
        with session_client(subject) as client:
            return episode(client), episode(client)

    try:
        first, second = settled(run)
    except Exception as exc:
        return CheckResult.failed(name, f"replaying an episode: {one_line(exc)}")
    for index, (one, other) in enumerate(zip(first, second)):
        if one != other:
            if index == 0:
                return CheckResult.failed(
                    name,
                    f"reset(seed={DETERMINISM_SEED}) twice gave different observations, {short(one[0], 60)} and "
                    f"{short(other[0], 60)}: reset ignores its seed (or draws from a generator it does not seed)",
                )
            fields = ("observation", "reward", "done", "truncated")
            which = next(field for field, a, b in zip(fields, one, other) if a != b)
            return CheckResult.failed(
                name,
                f"step {index} after reset(seed={DETERMINISM_SEED}) gave another {which} the second time: "
                f"{short(one[fields.index(which)], 50)} and {short(other[fields.index(which)], 50)}",
            )
    if len(first) != len(second):
        return CheckResult.failed(
            name, f"the same actions ended one episode after {min(len(first), len(second)) - 1} steps only"
        )
    if face.tools:
        return CheckResult.passed(
            name, f"reset(seed={DETERMINISM_SEED}) twice gave the same observation (a tool env: no actions replayed)"
        )
    return CheckResult.passed(
        name, f"reset(seed={DETERMINISM_SEED}) and the same {len(first) - 1} actions gave the same trajectory twice"
    )


def check_snapshot(subject: Subject) -> CheckResult:
    """Where ``/schema["snapshot"]`` says the env snapshots: a snapshot mid-episode, restored, answers
    with the frame it was taken at and replays the same actions as the original did."""
    name = "snapshot"
    try:
        schema = get_json(subject, "/schema")
    except Exception as exc:
        return CheckResult.failed(name, f"GET /schema: {one_line(exc)}")
    support = schema.get("snapshot") if isinstance(schema, dict) else None
    if not isinstance(support, dict):
        return CheckResult.skipped(name, "/schema says nothing of snapshots (an OpenEnv server, or an older one)")
    if not support.get("supported"):
        return CheckResult.skipped(name, f"the env does not snapshot: {support.get('reason')}")
    if subject.nondeterministic:
        return CheckResult.skipped(name, f"{subject.claimed_by} says nondeterministic: true")
    try:
        face = face_of(subject, schema)
    except UnsupportedSpaceError as exc:
        return CheckResult.skipped(name, f"no action can be sampled: {one_line(exc)}")
    except Exception as exc:
        return CheckResult.failed(name, f"no spaces to act in: {one_line(exc)}")
    actions = [] if face.tools else face.actions(STEPS)

    def run() -> str | None:
        with session_client(subject) as client:
            # The snapshot is taken a third of the way into the episode these actions play, which
            # a first run measures (an episode may end within a few steps).
            client.reset(seed=DETERMINISM_SEED)
            split = min(len(actions) // 3, len(_play(client, actions)) - 1) if actions else 0
            frame = client.reset(seed=DETERMINISM_SEED)
            for action in actions[:split]:
                frame = client.step(action)
            after = actions[split:]
            kept = client.snapshot()
            assert kept.id is not None
            state = client.state()
            original = _play(client, after)
            restored = client.restore(kept.id)
            if restored.observation != frame.observation:
                return (
                    f"the restore answered with the observation {short(restored.observation, 50)}, the snapshot "
                    f"was taken at {short(frame.observation, 50)}"
                )
            if client.state() != state:
                return f"the state after the restore is {short(client.state(), 60)}, it was {short(state, 60)}"
            again = _play(client, after)
            client.release((kept.id,))
        replayed.append(len(original))
        return _replay_problem(original, again)

    replayed: list[int] = []  # the steps replayed after the restore, by the run that passed
    try:
        problem = settled(run)
    except Exception as exc:
        return CheckResult.failed(name, f"snapshot and restore: {one_line(exc)}")
    if problem is not None:
        return CheckResult.failed(name, problem)
    what = f"and the same {replayed[-1]} step(s) replayed" if actions else "(a tool env: no actions replayed)"
    return CheckResult.passed(name, f"{support.get('method')}: restored to the snapshot's frame and state {what}")


def _replay_problem(original: list[tuple[Any, ...]], again: list[tuple[Any, ...]]) -> str | None:
    """How the steps after a restore differ from those after the snapshot (``None``: they do not)."""
    fields = ("observation", "reward", "done", "truncated")
    for index, (one, other) in enumerate(zip(original, again), start=1):
        if one != other:
            which = next(field for field, a, b in zip(fields, one, other) if a != b)
            return (
                f"step {index} after the restore gave another {which} than after the snapshot: "
                f"{short(other[fields.index(which)], 50)}, not {short(one[fields.index(which)], 50)} "
                "(the snapshot misses part of the env's state)"
            )
    if len(original) != len(again):
        return f"the same actions ended one branch after {min(len(original), len(again))} steps only"
    return None


def _play(client: EnvClient, actions: list[Any]) -> list[tuple[Any, ...]]:
    """Each step's observation, reward and flags, up to the end of the episode."""
    trajectory = []
    for action in actions:
        frame = client.step(action)
        trajectory.append((frame.observation, frame.reward, frame.done, frame.truncated))
        if frame.done or frame.truncated:
            break
    return trajectory
