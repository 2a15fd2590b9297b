"""`EnvCore`: what an env over one session knows and decides, with no I/O of its own.

:class:`~openenv_gym.env.RemoteEnv` and :class:`~openenv_gym.async_env.AsyncRemoteEnv` are thin
layers over one: they hold a connection and make its calls, blocking or awaited, and the core
says what the calls mean. It holds

* :class:`ServerInfo`, what the server serves, as its ``/schema`` said once
  (:func:`openenv_gym.served.read_server_info` is the one reader);
* the :class:`~openenv_gym.face.Face` (Gymnasium values <-> wire actions and frames) and the
  render mode the session's env is made in;
* the episode's steps and the time limit they count towards (this side's, and the one the server
  says it applies: :attr:`EnvCore.time_limit`, which the env's spec states);
* the snapshot rules: whether the server snapshots the env, which handles are restored by id and
  which from their bytes, what a restore sets back, which handles a session may release, and what
  a fork copies.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import gymnasium as gym

from .errors import InvalidActionError, OpenEnvGymError
from .face import Face, PublishedSpaces, StepResult, wire_action
from .snapshot import Snapshot, check_support, falls_back, portable_bytes
from .urls import ws_url

if TYPE_CHECKING:
    from .client.task_resets import TaskResets
    from .errors import SnapshotError
    from .protocol import ObservationFrame
    from .protocol.snapshot import SnapshotFrame
    from .protocol.vector import VectorResultFrame

__all__ = ["ClosedEnvError", "EnvCore", "ServerInfo", "reset_kwargs"]


class ClosedEnvError(OpenEnvGymError, gym.error.ClosedEnvironmentError):
    """A call on an env or vector env after its ``close()``: nothing is sent, nothing restarts.

    Attributes:
        env: the ``repr`` of the closed env.
        call: the method called.
    """

    def __init__(self, env: str, call: str) -> None:
        super().__init__(env, call)
        self.env = env
        self.call = call

    def __str__(self) -> str:
        return f"{self.call}() on {self.env} after close(): make a new env"


def reset_kwargs(seed: int | None, options: dict[str, Any] | None) -> dict[str, Any]:
    """A reset's keyword arguments for the server: only those given (an OpenEnv env takes no ``None``)."""
    kwargs: dict[str, Any] = {}
    if seed is not None:
        kwargs["seed"] = seed
    if options is not None:
        kwargs["options"] = options
    return kwargs


def _lists_tools(wire: dict[str, Any]) -> bool:
    """Whether ``wire`` is OpenEnv's step that lists tools, which a session lets through after the end."""
    if "type" not in wire:  # no tool env's: the tool calls' module stays unloaded
        return False
    from .protocol.tools import LIST_TOOLS

    return bool(wire["type"] == LIST_TOOLS["type"])


@dataclasses.dataclass(frozen=True)
class ServerInfo:
    """What a server serves, read once (:func:`openenv_gym.served.read_server_info`).

    Attributes:
        base_url: the server (``http://host:port``).
        serves: what the env was made for (a Gymnasium id or ``"module:attr"``), for messages.
        schema: its ``/schema`` (for a seat in a game, with the seat's spaces as the env's own).
    """

    base_url: str
    serves: str | None
    schema: Mapping[str, Any]

    @property
    def address(self) -> str:
        """The session URL of the server, the one its snapshots name (``ws://host:port/ws``)."""
        return ws_url(self.base_url)


class EnvCore:
    """One env's knowledge of its server, its face, its episode and its snapshot rules (no I/O).

    Args:
        info: what the server serves.
        face: how the session's actions and frames travel.
        env_id: the id errors name (the Gymnasium id, else what the server serves).
        max_episode_steps: the time limit this side counts (``None``: the server's and
            ``gym.make``'s ``TimeLimit`` are the only ones).
        render_mode: the env's ``render_mode``, as asked.
        render: the server's render metadata for it (``None``: the server renders nothing).

    Attributes:
        task_resets: how its sessions' resets send their task options to a server with OpenEnv
            0.10's Task API (:func:`~openenv_gym.task_catalog.task_resets_of`); ``None``: as given.
    """

    task_resets: TaskResets | None = None

    def __init__(
        self,
        info: ServerInfo,
        face: Face,
        *,
        env_id: str | None = None,
        max_episode_steps: int | None = None,
        render_mode: str | None = None,
        render: dict[str, Any] | None = None,
    ) -> None:
        self.info = info
        self.face = face
        self.env_id = env_id if env_id is not None else info.serves
        self.max_episode_steps = max_episode_steps
        self.render_mode = render_mode
        self.render = render
        self.elapsed_steps = 0

    @property
    def time_limit(self) -> int | None:
        """The time limit in force: the sooner of this side's and the one the server applies (its
        ``/schema["max_episode_steps"]``), as a spec's ``max_episode_steps`` says it; ``None``: none."""
        served = self.info.schema.get("max_episode_steps")
        limits = [limit for limit in (self.max_episode_steps, served) if isinstance(limit, int) and limit > 0]
        return min(limits, default=None)

    def spec(self, spec: gym.envs.registration.EnvSpec | None) -> gym.envs.registration.EnvSpec | None:
        """``spec`` (``gym.make``'s, which counts no limit it adds no ``TimeLimit`` for) with the time
        limit in force as its ``max_episode_steps``, so wrappers that read it (``TimeAwareObservation``)
        see the limit the episodes end at."""
        limit = self.time_limit
        if spec is None or limit is None or spec.max_episode_steps is not None:
            return spec
        return dataclasses.replace(spec, max_episode_steps=limit)

    @property
    def renders(self) -> bool:
        """Whether the session's env is made in :attr:`render_mode` and its frames asked for."""
        return self.render is not None and self.render_mode is not None

    def asks_frame(self, who: str) -> bool:
        """Whether ``render()`` asks the server for a frame: ``False`` without a render mode (it
        returns ``None``, as a local env's).

        Raises:
            NotImplementedError: a render mode, and a server that publishes no render modes.
        """
        if self.render_mode is None:
            return False
        if not self.renders:
            raise NotImplementedError(f"{who}: the server renders nothing (it publishes no render modes)")
        return True

    # The episode.

    def wire_action(self, action: Any, check_can_step: Callable[[], None]) -> dict[str, Any] | StepResult:
        """``action`` as the wire action to send, or the step result to return with nothing sent.

        ``check_can_step`` is the session's episode-end rule. The session's step frame runs it as
        it is built, so it is run here only where no such frame will be: an invalid action, a call
        the face answers itself, and listing tools (no step to the session, a step of this env).
        After the end each of them raises ``EpisodeEndedError``, as a valid step does.

        Raises:
            InvalidActionError: ``action`` is not in the action space; nothing may be sent.
            EpisodeEndedError: the episode ended and nothing will be sent.
        """
        try:
            wire = wire_action(self.face, action, self.env_id)
        except InvalidActionError:
            check_can_step()  # an ended episode is the error, whatever the action
            raise
        if isinstance(wire, tuple) or _lists_tools(wire):
            check_can_step()
        return wire

    def shared_value(self, action: Any) -> Any:
        """``action`` as a value of the action space, for a step through shared memory (only a face
        of published spaces takes it: :func:`~openenv_gym.face.shm_refusal`).

        Raises:
            InvalidActionError: ``action`` is not in the action space; nothing may be sent.
        """
        assert isinstance(self.face, PublishedSpaces)
        try:
            return self.face.space_value(action)
        except InvalidActionError as exc:
            exc.env_id = self.env_id
            raise

    def shared_result(self, result: VectorResultFrame) -> StepResult:
        """What ``step`` returns for a step's results through shared memory (a batch of one)."""
        assert isinstance(self.face, PublishedSpaces)
        return self.face.row_result(result)

    def reset_result(self, frame: ObservationFrame) -> tuple[Any, dict[str, Any]]:
        """What ``reset`` returns for the server's frame; the episode's steps count from 0."""
        self.elapsed_steps = 0
        return self.face.reset_result(frame)

    def count_step(self, result: StepResult) -> tuple[StepResult, bool]:
        """Count a step of the episode: its result, truncated when it reaches the time limit, and
        whether it did (the caller then ends the session's episode, as the server would)."""
        self.elapsed_steps += 1
        if self.max_episode_steps is None or self.elapsed_steps < self.max_episode_steps:
            return result, False
        observation, reward, terminated, _, info = result
        return (observation, reward, terminated, True, info), True

    # Snapshots: the state is the server's; the handle, the steps counted here.

    def check_snapshots(self, who: str) -> None:
        """Refuse before anything is sent unless the server's ``/schema`` says it snapshots the env.

        Raises:
            SnapshotUnsupportedError: it says the env cannot (with its reason), or says nothing.
        """
        check_support(self.info.schema, who, self.env_id)

    def snapshot(self, frame: SnapshotFrame) -> Snapshot:
        """The handle of the state the server kept, with the steps counted towards the time limit."""
        return Snapshot.of(frame, self.info.address, self.elapsed_steps)

    def restore_request(self, handle: Snapshot, failed: SnapshotError | None = None) -> tuple[str | None, bytes | None]:
        """The restore to send for ``handle``, as ``(snapshot_id, portable)``: by id where this env's
        server keeps it, else from its bytes. After ``failed`` (the restore sent was refused), its
        bytes stand in only for an id the server has forgotten; else ``failed`` is raised again.
        Both envs send the first and, on a ``SnapshotError``, the second: the rule is written here once.

        Raises:
            SnapshotError: ``failed``, when the bytes may not stand in; the handle holds no bytes
                where they are needed.
        """
        snapshot_id = handle.id if handle.server == self.info.address else None
        if failed is None and snapshot_id is not None:
            return snapshot_id, None
        if failed is not None and (snapshot_id is None or not falls_back(handle, failed)):
            raise failed  # the bytes were refused, or the refusal was not a forgotten id
        return None, portable_bytes(handle, self.env_id)

    def restored(self, handle: Snapshot, frame: ObservationFrame) -> tuple[Any, dict[str, Any]]:
        """What ``restore`` returns for the server's frame; the time limit counts on from the handle's step."""
        self.elapsed_steps = handle.elapsed_steps
        return self.face.restored_result(frame)

    def releasable(self, handles: tuple[Snapshot, ...]) -> tuple[str, ...]:
        """The ids of ``handles`` this env's server keeps (a session releases no other server's)."""
        return tuple(handle.id for handle in handles if handle.server == self.info.address)

    @staticmethod
    def check_fork_count(count: int) -> None:
        """Raises ``ValueError`` for fewer than one fork."""
        if count < 1:
            raise ValueError(f"fork(count) needs a count of at least 1, got {count}")

    def forked(self) -> EnvCore:
        """A fork's core: the same server, face, time limit and render mode, and a copy of the
        episode's steps (each fork counts on from here on its own)."""
        return copy.copy(self)

    def fresh(self) -> EnvCore:
        """The core of another session on the same server: all but the episode's steps, which start at 0."""
        core = copy.copy(self)
        core.elapsed_steps = 0
        return core
