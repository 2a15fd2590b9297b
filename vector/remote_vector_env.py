r"""`RemoteVectorEnv`: a Gymnasium VectorEnv whose sub-environments live in sessions on servers.

It orchestrates :class:`~openenv_gym.vector.block.Block`\ s (a batch session per server, a
server-side vector env per server, or a plain session per sub-env: one interface) and their
kind's :class:`~openenv_gym.vector.block.BlockCodec`; fault recovery is :mod:`.faults`, EnvPool's
``send``/``recv`` mode :mod:`.send_recv`.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, NoReturn

import numpy as np
from gymnasium.envs.registration import EnvSpec
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from openenv_gym.client import DEFAULT_CALL_TIMEOUT, DEFAULT_OPEN_TIMEOUT
from openenv_gym.client.batch_client import BatchClient
from openenv_gym.client.vector_client import TRANSPORTS
from openenv_gym.env import ClosedEnvError, own_frame
from openenv_gym.make_options import MakeOptions, Timeouts
from openenv_gym.protocol import RenderFrame
from openenv_gym.protocol.batch import AutoresetMode as WireAutoresetMode
from openenv_gym.protocol.batch import BatchCallFrame
from openenv_gym.providers.base import DEFAULT_STARTUP_TIMEOUT
from openenv_gym.providers.fleet import Fleet
from openenv_gym.redaction import hide_token_kwarg
from openenv_gym.served import read_server_info

from .batching import attr_values, check_batch, likely_one_vector_env, reset_mask, seed_list
from .block import Block, StepTuple
from .faults import FAILURE_INFO_KEY, ask_all, finish_resets, read_reply, read_step, recover_all
from .make_blocks import open_blocks, transport_of
from .pending import Call, PendingCall
from .send_recv import SendRecv
from .serving import Serving, check_attached

if TYPE_CHECKING:
    import gymnasium as gym

    from openenv_gym.snapshot import Snapshot

__all__ = ["FAILURE_INFO_KEY", "RemoteVectorEnv"]


def _release(blocks: list[Block[Any]], fleet: Fleet, *, parallel: bool = False) -> None:
    """Close the blocks' sessions, then stop the servers (serially unless ``parallel``: a finalizer starts no thread)."""
    for block in blocks:
        block.close()
    fleet.close(parallel=parallel)


class RemoteVectorEnv(VectorEnv[Any, Any, Any]):
    """Many remote sub-environments, stepped together over batch sessions.

    Usually made with ``gym.make_vec`` (example below). Sub-envs are packed onto servers started
    in parallel, or spread over running ones. A step sends one frame per server, to all before any
    reply is read, so the servers work in parallel; the caller's thread does the I/O (blocking
    sockets, websockets' Sans-I/O protocol: 1.2-3x faster than an asyncio loop in a thread). The
    servers autoreset as ``autoreset_mode`` says: results, ``final_obs``/``final_info`` and info
    masks match ``gymnasium.vector.SyncVectorEnv``'s. A server that dies or stops answering is
    replaced; its sub-envs come back truncated, ``info["remote_failure"]`` saying why.

    Example:
        >>> import gymnasium as gym, openenv_gym
        >>> envs = gym.make_vec("openenv/CartPole-v1", num_envs=4)
        >>> envs
        RemoteVectorEnv(CartPole-v1, num_envs=4)
        >>> obs, infos = envs.reset(seed=0)
        >>> obs.shape
        (4, 4)
        >>> obs, rewards, terminations, truncations, infos = envs.step(envs.action_space.sample())
        >>> rewards.tolist()
        [1.0, 1.0, 1.0, 1.0]
        >>> envs.close()

    OpenEnv's own servers work too: ``gym.make_vec("openenv/Remote-v0", num_envs=8, base_urls=[url,
    ...])`` maps their JSON schemas to spaces; each sub-env gets a plain session (``batched``).

    Args:
        server: what each server runs: a Gymnasium id or ``"module:attr"``.
        num_envs: the number of sub-environments.
        base_urls: running servers to use instead of starting any, each given a contiguous block
            of sub-envs (a URL may repeat); ``base_url``: one for all (``base_urls=[base_url]``).
        max_episode_steps: the time limit of the servers this env starts (``gym.make_vec`` passes
            the spec's); servers given by URL keep their own.
        autoreset_mode: a ``gymnasium.vector.AutoresetMode`` (or its value); default NEXT_STEP.
        sessions_per_server: sub-envs per server; default: one server per CPU, or one for all if it
            will likely step them as one vector env (a second would only add a round trip). With
            ``servers`` (how many to start, sub-envs spread evenly), how many one may take (room for
            a failed server's sub-envs), an error if fewer than the spread puts on it.
        batched: ``True``: one batch session per server (fastest; needs openenv-gym's
            ``/ws/batch``); ``False``: one plain OpenEnv ``/ws`` session per sub-env, autoreset on
            the client; ``None`` (default): batch sessions if the first server's ``/schema``
            publishes Gymnasium spaces (every openenv-gym server's does), plain ones otherwise.
        codec: ``"binary"`` (default): Box observations come as raw bytes (with a vector backend,
            every array goes so both ways); ``"json"``: every frame is JSON, as non-Box ones always are.
        batch_size: for EnvPool's mode (:meth:`recv`, :meth:`send`): whole equal server blocks (by
            default, ``ceil(num_envs / batch_size)`` servers start); ``None``: ``num_envs`` (lockstep).
        vector_backend: what steps each server's sub-envs: ``"auto"`` (default), as
            ``gymnasium.make_vec``, the env's ``vector_entry_point`` (``CartPoleVectorEnv``, ALE's
            ``AtariVectorEnv``) if it serves ``autoreset_mode``, else ``"per_env"``: one env per
            sub-env (exactly ``SyncVectorEnv``'s results); ``"gymnasium"``, ``"ale"``, ``"envpool"``:
            that one, or ``ValueError`` saying why not. A server's K sub-envs are then one vector
            env of K, ``reset(seed=s)`` seeding the block at sub-env k with ``s + k``;
            ``metadata["vector_backend"]`` and ``["vector_backend_reason"]`` say which runs, and why.
        transport: how a server-side vector env's steps travel: ``"auto"`` (default), through
            shared memory when its server is on this host and offers it (the process provider's
            are), else the WebSocket; ``"shm"``: shared memory or an error saying why not;
            ``"ws"``: the WebSocket. Resets, render and errors always take the WebSocket.
            ``metadata["transport"]`` and ``["transport_reason"]`` say which was taken, and why.
        render_mode: as for ``RemoteEnv`` (``"human"`` raises; servers without render modes take
            any, with a warning): every sub-env (or server-side vector env) is made in it, see
            :meth:`render`. ``metadata["render_modes"]`` and ``["render_fps"]`` are the servers' (a
            vector backend's own; ``"auto"`` steps one env per sub-env if that cannot render it).

    ``json_schema_fallback``, ``provider``, ``provider_kwargs``, ``env_kwargs``, ``tool_calls``,
    ``token``, ``open_timeout``, ``call_timeout`` and ``startup_timeout`` are as for
    :class:`~openenv_gym.env.RemoteEnv` (each sub-env's, each server's); a tool env's sub-envs get a
    plain session each.
    """

    _spec: EnvSpec | None = None
    _copy = True  # from_env_fns(copy=False): reset and step return the env's own observation batch
    _check_actions = True  # from_env_fns: the caller's own envs take actions unchecked, as AsyncVectorEnv's

    @property
    def spec(self) -> EnvSpec | None:
        """The spec ``gym.make_vec`` gave the env; its ``token`` argument has a repr that hides it."""
        return self._spec

    @spec.setter
    def spec(self, spec: EnvSpec | None) -> None:
        self._spec = hide_token_kwarg(spec)

    @property
    def placement(self) -> list[dict[str, Any]]:
        """Where each block of sub-envs runs now (after a restart too): ``{"sub_envs": (start, stop),
        "url": ..., "node": ...}`` per session, ``node`` a Ray node's address (``None``: this machine)."""
        return [{"sub_envs": (b.start, b.stop), "url": b.url, "node": b.serving.node} for b in self._blocks]

    def __init__(
        self,
        server: str | None = None,
        num_envs: int = 1,
        *,
        base_urls: list[str] | None = None,
        base_url: str | None = None,
        json_schema_fallback: bool = False,
        provider: str = "process",
        provider_kwargs: dict[str, Any] | None = None,
        env_kwargs: dict[str, Any] | None = None,
        max_episode_steps: int | None = None,
        autoreset_mode: AutoresetMode | str = AutoresetMode.NEXT_STEP,
        sessions_per_server: int | None = None,
        servers: int | None = None,
        tool_calls: bool | None = None,
        batched: bool | None = None,
        codec: str = "binary",
        batch_size: int | None = None,
        vector_backend: str = "auto",
        transport: str = "auto",
        render_mode: str | None = None,
        open_timeout: float = DEFAULT_OPEN_TIMEOUT,
        call_timeout: float = DEFAULT_CALL_TIMEOUT,
        startup_timeout: float = DEFAULT_STARTUP_TIMEOUT,
        token: str | None = None,
        **kwargs: Any,
    ) -> None:
        if num_envs < 1:
            raise ValueError(f"num_envs must be at least 1, got {num_envs}")
        if transport not in TRANSPORTS:
            raise ValueError(f"transport must be one of {list(TRANSPORTS)}, got {transport!r}")
        # What made it, for a fork of a sub-env (a new vector env of the same servers' kind).
        self._made_with: dict[str, Any] = {
            "server": server,
            "base_urls": base_urls,
            "base_url": base_url,
            "json_schema_fallback": json_schema_fallback,
            "provider": provider,
            "provider_kwargs": provider_kwargs,
            "env_kwargs": env_kwargs,
            "max_episode_steps": max_episode_steps,
            "autoreset_mode": autoreset_mode,
            "tool_calls": tool_calls,
            "codec": codec,
            "transport": transport,
            "render_mode": render_mode,
            "open_timeout": open_timeout,
            "call_timeout": call_timeout,
            "startup_timeout": startup_timeout,
            "token": token,
            **kwargs,
        }
        if base_url is not None and base_urls:
            raise ValueError("pass base_url= (one server) or base_urls= (several), not both")
        # For running servers, split= is their resets' default split (a Task API server's), not an env argument.
        split = kwargs.pop("split", None) if base_url is not None or base_urls else None
        self.autoreset_mode = AutoresetMode(autoreset_mode)
        # Started servers: one for all sub-envs if one vector env will likely step them (a guess).
        one_server = likely_one_vector_env(server, vector_backend, self.autoreset_mode.value)
        options = MakeOptions.parse(
            server=server,
            base_url=base_url,
            base_urls=base_urls[:num_envs] if base_urls else None,
            provider=provider,
            provider_kwargs=provider_kwargs,
            env_kwargs=env_kwargs,
            token=token,
            open_timeout=open_timeout,
            call_timeout=call_timeout,
            startup_timeout=startup_timeout,
            **kwargs,
        )
        self.server = server
        self.num_envs = num_envs
        self.metadata = {"autoreset_mode": self.autoreset_mode}
        self.call_timeout = call_timeout
        self.batch_size = num_envs if batch_size is None else batch_size
        if not 1 <= self.batch_size <= num_envs:
            raise ValueError(f"batch_size must be between 1 and num_envs={num_envs}, got {batch_size}")
        self._pending = PendingCall()  # the asynchronous call in flight (reset_async, step_async, ...)
        # The layout is decided once, here: the fleet holds it, and its servers' blocks follow it.
        self._fleet = options.fleet(
            num_envs,
            servers=servers,
            sessions_per_server=sessions_per_server,
            one_server=one_server,
            batch_size=self.batch_size,
            max_episode_steps=max_episode_steps,  # servers given by URL keep their own
            health_timeout=call_timeout,
            needs="RemoteVectorEnv needs server= (what to run) or base_urls= (where it runs)",
        )
        self._providers = self._fleet.providers
        self._blocks: list[Block[Any]] = []
        # Sessions and servers are released when the env is garbage collected or at exit, too.
        self._closer = weakref.finalize(self, _release, self._blocks, self._fleet)
        self.closed = False
        try:
            urls = self._fleet.start()
            if options.base_urls:  # started by someone else: are they servers of this env?
                check_attached(urls, self._providers, server, open_timeout)
            serving = Serving.read(
                urls[0],
                self._server_schema,
                tool_calls=tool_calls,
                batched=batched,
                vector_backend=vector_backend,
                autoreset_mode=WireAutoresetMode(self.autoreset_mode.value),
                json_schema_fallback=json_schema_fallback,
                timeout=open_timeout,
                token=self._fleet.token,
                render_mode=render_mode,
                split=split,
            )
            self.render_mode = render_mode
            self._renders = serving.render_mode is not None
            self.metadata.update(serving.metadata)
            self.single_action_space = serving.face.action_space
            self.single_observation_space = serving.face.observation_space
            self.action_space = batch_space(self.single_action_space, num_envs)
            self.observation_space = batch_space(self.single_observation_space, num_envs)
            self._codec, blocks = open_blocks(
                serving,
                self._fleet,
                self._batch_client,
                self._name,
                self.action_space,
                copy=self._copy,
                check_actions=self._check_actions,
                wire_codec=codec,
                transport=transport,
                **options.timeouts.session(),
                env_id=server,
                autoreset_mode=WireAutoresetMode(self.autoreset_mode.value),
            )
            self._blocks += blocks
            self.metadata.update(transport_of(self._blocks))
            self._pool = SendRecv(
                self._blocks,
                self._codec,
                self._fleet,
                repr(self),
                self.autoreset_mode,
                self.batch_size,
                self.single_action_space,
                self._name,
            )
        except BaseException:
            self.close()
            raise

    @classmethod
    def from_env_fns(
        cls, env_fns: Sequence[Callable[[], gym.Env[Any, Any]]], *args: Any, **kwargs: Any
    ) -> RemoteVectorEnv:
        """``gymnasium.vector.AsyncVectorEnv(env_fns, ...)``'s drop-in: your factories, on servers this
        call starts. See :func:`openenv_gym.vector.from_env_fns.from_env_fns` (its arguments, rules)."""
        from .from_env_fns import from_env_fns

        return from_env_fns(env_fns, *args, **kwargs)

    def _server_schema(self, url: str, open_timeout: float) -> Any:
        """The first server's ``/schema``, which the spaces come from (from_env_fns: the local env's)."""
        return read_server_info(url, Timeouts(open=open_timeout), self._fleet.token).schema

    def _batch_client(self, start: int, stop: int) -> Callable[..., BatchClient]:
        """What opens the batch session of sub-envs ``start`` to ``stop`` (from_env_fns sends their factories)."""
        return BatchClient

    def __repr__(self) -> str:
        return f"RemoteVectorEnv({self.server or '?'}, num_envs={self.num_envs})"

    def __reduce__(self) -> NoReturn:
        raise TypeError(
            f"{self!r} holds live sessions with its servers and cannot be pickled or copied; make it where it "
            "is used instead (pass a function that calls gym.make_vec)"
        )

    def _name(self) -> str | None:
        """The Gymnasium id this env was made from, else what its servers serve."""
        return self.spec.id if self.spec is not None else self.server

    def _check_open(self, call: str) -> None:
        if self.closed:
            raise ClosedEnvError(repr(self), call)

    def _check_idle(self, call: str) -> None:
        """Raise unless the env is open and no call is pending."""
        self._check_open(call)
        self._pending.check_idle(call)

    def reset(
        self, *, seed: int | list[int | None] | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        """Reset all sub-envs, or those ``options["reset_mask"]`` selects (as SyncVectorEnv does)."""
        self._check_open("reset")
        self.reset_async(seed=seed, options=options)
        return self.reset_wait()

    def reset_async(self, seed: int | list[int | None] | None = None, options: dict[str, Any] | None = None) -> None:
        """Send the reset to every server (or those ``options["reset_mask"]`` selects); :meth:`reset_wait`
        collects the results, as AsyncVectorEnv's."""
        self._check_idle("reset_async")
        seeds = seed_list(seed, self.num_envs)
        options = dict(options) if options is not None else None
        mask = reset_mask(options, self.num_envs)
        selected = [block for block in self._blocks if mask is None or any(mask[block.start : block.stop])]

        def begin(block: Block[Any]) -> None:
            block.begin_reset(seeds, options, mask)

        self._pending.begin(Call.RESET, selected, begin, context=(begin, mask))

    def reset_wait(self, timeout: float | None = None) -> tuple[Any, dict[str, Any]]:
        """The results of :meth:`reset_async`; a lost server's block is reset again on a healthy one.

        Raises:
            NoAsyncCallError: no reset is pending.
            multiprocessing.TimeoutError: (an :class:`~openenv_gym.errors.WaitTimeoutError`) not every server
                answered within ``timeout``; the reset stays pending.
            RemoteError: a server refused the reset (an exception in the env), once every reply is read.
        """
        self._check_open("reset_wait")
        flight, error = self._pending.wait(Call.RESET, timeout, read_reply)
        if error is not None:
            raise error
        begin, mask = flight.context
        outcomes = finish_resets(flight.blocks, flight.outcomes, begin, self._fleet, repr(self))
        results = {id(block): outcome for block, outcome in zip(flight.blocks, outcomes)}
        return self._codec.assemble_reset(self._blocks, results, mask)

    def step(self, actions: Any) -> StepTuple:
        """Step every sub-env: one frame to each server, all sent before any reply is read."""
        self._check_open("step")
        self.step_async(actions)
        return self.step_wait()

    def step_async(self, actions: Any) -> None:
        """Send the actions to every server; :meth:`step_wait` collects the results.

        Raises:
            TypeError: ``actions`` is no batch (a scalar), as AsyncVectorEnv raises it.
            InvalidActionError: an action is not in the action space; nothing was sent.
        """
        self._check_idle("step_async")
        prepared = self._codec.prepare(check_batch(actions), self.action_space, self.num_envs)

        def send_step(block: Block[Any]) -> None:
            block.begin_step(self._codec.slice(prepared, block.start, block.stop))

        self._pending.begin(Call.STEP, self._blocks, send_step)

    def step_wait(self, timeout: float | None = None) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """Collect the results of :meth:`step_async`: each server has ``call_timeout`` (or ``timeout``
        for all, if shorter) to answer; one that does not, or is lost, is replaced (see the class docstring).

        Raises:
            NoAsyncCallError: no step is pending.
            multiprocessing.TimeoutError: (an :class:`~openenv_gym.errors.WaitTimeoutError`) not every result
                came within ``timeout``; the step stays pending: a later ``step_wait`` reads the rest.
            RemoteError: a server refused the step (an invalid action, an exception in the env);
                raised once every other server's reply has been read.
        """
        self._check_open("step_wait")
        flight, error = self._pending.wait(Call.STEP, timeout, read_step)
        if error is not None:
            raise error
        # Every healthy server's reply is read; now restart the failed blocks.
        results = recover_all(self._blocks, flight.outcomes, self._fleet, repr(self), self.autoreset_mode)
        return self._codec.assemble_step(self._blocks, results)

    # EnvPool-style asynchronous stepping -------------------------------------------------------

    def async_reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> None:
        """Reset every sub-env without waiting, as EnvPool's ``async_reset``; then loop ``recv()`` /
        ``send(actions, info["env_id"])``."""
        self._check_idle("async_reset")
        seeds = seed_list(seed, self.num_envs)
        self._pool.begin(self._blocks, lambda block: block.begin_reset(seeds, options, None))
        self._pending.enter(Call.SEND_RECV)

    def send(self, actions: Any, env_id: Any = None) -> None:
        """Step the sub-envs ``env_id`` (all when ``None``) without waiting, as EnvPool's ``send``:
        ``env_id`` is usually the last :meth:`recv`'s ``info["env_id"]``, and must hold whole server blocks.

        Raises:
            InvalidActionError: an action outside the action space; nothing was sent.
            ValueError: ``env_id`` splits a block, or names one still in flight.
        """
        self._check_open("send")
        if self._pending.call is not Call.SEND_RECV:
            self._check_idle("send")
        self._pool.send(check_batch(actions), env_id)
        self._pending.enter(Call.SEND_RECV)

    def recv(self, timeout: float | None = None) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """The step results of the first ``batch_size`` sub-envs whose results are in, EnvPool's way,
        with ``infos["env_id"]`` their indices (for :meth:`send`). A reset's have zero rewards and
        false flags; a lost server's sub-envs come back truncated, as from :meth:`step`.

        Raises:
            NoAsyncCallError: fewer than ``batch_size`` sub-envs are in flight.
            TimeoutError: not enough results within ``timeout``; they stay in flight.
        """
        self._check_open("recv")
        result = self._pool.recv(timeout)
        if self._pool.idle:
            self._pending.done()
        return result

    def call(self, name: str, *args: Any, **kwargs: Any) -> tuple[Any, ...]:
        """Call a public method of every sub-env (or read the attribute if it is not callable); results
        travel as JSON (arrays come back as lists). Not available with ``batched=False``."""
        self._check_open("call")
        self.call_async(name, *args, **kwargs)
        return self.call_wait()

    def call_async(self, name: str, /, *args: Any, **kwargs: Any) -> None:
        """Send :meth:`call`'s request to every server; :meth:`call_wait` collects the results."""
        self._check_idle("call_async")
        frame = BatchCallFrame("call", name, list(args), kwargs)
        self._pending.begin(Call.CALL, self._blocks, lambda block: block.begin_call(frame))

    def call_wait(self, timeout: float | None = None) -> tuple[Any, ...]:
        """The results of :meth:`call_async`, one per sub-env.

        Raises:
            NoAsyncCallError: no call is pending.
            multiprocessing.TimeoutError: (an :class:`~openenv_gym.errors.WaitTimeoutError`) not every server
                answered within ``timeout``; the call stays pending.
            ConnectionLostError: (or another lost-server failure) once every reply was read; the
                next step restarts that block.
        """
        self._check_open("call_wait")
        flight, error = self._pending.wait(Call.CALL, timeout, read_reply)
        error = error or next((outcome for outcome in flight.outcomes if isinstance(outcome, Exception)), None)
        if error is not None:
            raise error
        return tuple(value for result in flight.outcomes for value in result.values)

    def get_attr(self, name: str) -> tuple[Any, ...]:
        """A public attribute of every sub-env, as JSON values."""
        self._check_open("get_attr")
        return self._call_blocks(BatchCallFrame("get", name))

    def set_attr(self, name: str, values: list[Any] | tuple[Any, ...] | Any) -> None:
        """Set a public attribute on every sub-env: one value each, or one value for all."""
        self._check_open("set_attr")
        self._call_blocks(BatchCallFrame("set", name, values=attr_values(values, self.num_envs)))

    def _call_blocks(self, frame: BatchCallFrame) -> tuple[Any, ...]:
        self._check_idle(frame.op)
        results = ask_all(self._blocks, lambda block: block.begin_call(frame))  # errors as faults.complete raises them
        return tuple(value for result in results for value in result.values)

    @property
    def np_random_seed(self) -> Any:
        """Each sub-env's ``np_random_seed``, as AsyncVectorEnv's (a tuple); a server-side vector env's
        sub-envs are one env, whose seed is the vector env's own (an int, as Gymnasium's vector envs)."""
        try:
            return self.get_attr("np_random_seed")
        except (NotImplementedError, AttributeError):  # no attribute calls, or a vector env without sub-envs
            return super().np_random_seed

    # Snapshots (vector/snapshots.py) -----------------------------------------------------------

    def snapshot(self, indices: Sequence[int] | None = None, *, portable: bool = False) -> list[Snapshot]:
        """Have the servers keep the states of sub-envs ``indices`` (all by default); one
        :class:`~openenv_gym.snapshot.Snapshot` per sub-env, in that order.

        Each is a single env's snapshot: it restores into any sub-env (or ``RemoteEnv``) of the
        same server, and with ``portable`` into one of another server sharing the key.

        Raises:
            SnapshotUnsupportedError: the sub-envs cannot be snapshotted: the env cannot, or they
                live in a server-side vector env (``vector_backend="per_env"`` serves one env each).
            SnapshotError: a session holds as many snapshots as its server allows.
        """
        from .snapshots import chosen_indices, snapshot_sub_envs

        self._check_idle("snapshot")
        return snapshot_sub_envs(self, chosen_indices(indices, self.num_envs), portable)

    def restore(
        self, snapshots: Sequence[Snapshot], indices: Sequence[int] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        """Put sub-envs ``indices`` (default: the first ``len(snapshots)``) into ``snapshots``, one
        each (a handle may be given for several); returns every sub-env's observations and the
        restored ones' infos, as ``reset(options={"reset_mask": ...})`` does. A restored sub-env
        whose episode had ended is ended again: under NextStep its next step resets it.

        Raises:
            SnapshotError: a state its server no longer keeps, or of another server without bytes.
        """
        from .snapshots import chosen_indices, restore_sub_envs

        self._check_idle("restore")
        chosen = chosen_indices(range(len(snapshots)) if indices is None else indices, self.num_envs)
        return restore_sub_envs(self, snapshots, chosen)

    def release(self, *snapshots: Snapshot) -> None:
        """Have the servers drop these snapshots' states (those this env's sessions took)."""
        from .snapshots import release_sub_envs

        self._check_idle("release")
        release_sub_envs(self, snapshots)

    def fork(self, index: int, count: int, **kwargs: Any) -> RemoteVectorEnv:
        """A new vector env of ``count`` sub-envs, each starting from sub-env ``index``'s state.

        It is made as this one was (the same env, provider and options; ``kwargs`` override them),
        on servers of its own, one env per sub-env, restored from a portable snapshot: the servers
        this process starts share one snapshot key. Close it as any vector env."""
        from .snapshots import fork_sub_env

        self._check_idle("fork")
        return fork_sub_env(self, index, count, **kwargs)

    def render(self) -> Any:
        """Every sub-env's frame in ``render_mode``, as Gymnasium's vector envs give them: a tuple of
        one per sub-env (as ``SyncVectorEnv``), or a server-side vector env's ``render()``, the
        servers' blocks joined (``CartPoleVectorEnv``: a list of arrays); ``None`` without a render
        mode. Every server is asked before any reply is read; arrays are the caller's to write to.

        Raises:
            NotImplementedError: the servers publish no render modes.
            RemoteError: a sub-env's ``render()`` raised on its server.
            ConnectionLostError: a server was lost (the next step restarts its block).
        """
        self._check_idle("render")
        if self.render_mode is None:
            return None
        if not self._renders:
            raise NotImplementedError(f"{self!r}: the servers render nothing (they publish no render modes)")
        # The sessions take no other reply to a render request than a RenderFrame.
        results: list[RenderFrame] = ask_all(self._blocks, lambda block: block.begin_render())
        return self._codec.join_frames([own_frame(result.frame) for result in results])

    def close_extras(self, timeout: float | None = None, terminate: bool = False) -> None:
        """Close every session and stop every server this env started. A pending call is warned of
        and given ``timeout`` (``terminate``: none) to finish first, as AsyncVectorEnv's ``close`` does."""
        try:
            waits = {Call.RESET: self.reset_wait, Call.STEP: self.step_wait, Call.CALL: self.call_wait}
            self._pending.close(waits, 0 if terminate else timeout)
        finally:
            if self._closer.detach() is not None:
                _release(self._blocks, self._fleet, parallel=True)
