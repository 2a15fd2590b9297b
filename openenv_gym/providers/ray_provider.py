"""`RayProvider`: env servers placed across a Ray cluster, each one run by a Ray actor.

A small actor (:class:`ServerActor`) starts ``openenv-gym serve`` on its node, as a
:class:`~openenv_gym.providers.process.ProcessProvider` does locally, and reports the server's
address; clients then talk to the server directly, so Ray is never on the path of a step. The
server binds the node's address, so that a client on another node reaches it, and so it requires a
token, which the provider generates for each run and the clients present.

Nothing outlives its owner: the actors are not detached, so Ray kills them with the driver that
made them, and each server watches its actor through a pipe and exits when the actor is gone.
"""

from __future__ import annotations

import math
import threading
import uuid
import weakref
from typing import Any

try:
    import ray
    from ray.exceptions import GetTimeoutError, RayError, RayTaskError
    from ray.util.placement_group import PlacementGroup, placement_group, remove_placement_group
    from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy
except ModuleNotFoundError as exc:  # pragma: no cover - depends on what is installed
    if exc.name != "ray" and not (exc.name or "").startswith("ray."):
        raise
    raise ModuleNotFoundError("provider='ray' needs Ray: pip install 'openenv-gym[ray]'", name=exc.name) from exc

from ..client import http_get_json
from ..errors import OpenEnvGymError, ProviderError
from ..startup import shared_snapshot_key
from ..urls import with_host
from .base import Provider, checked_token
from .process import DEFAULT_STARTUP_TIMEOUT, ProcessProvider, new_token

__all__ = ["ACTOR_NAME_PREFIX", "PLACEMENT_STRATEGIES", "RayProvider", "ServerActor"]

#: Every actor this provider creates is named with this prefix (``ray.util.list_named_actors``).
ACTOR_NAME_PREFIX = "openenv-gym-server-"
#: Ray's placement group strategies, by the names ``placement=`` takes.
PLACEMENT_STRATEGIES = {
    "pack": "PACK",
    "spread": "SPREAD",
    "strict_pack": "STRICT_PACK",
    "strict_spread": "STRICT_SPREAD",
}
# Seconds for an actor to answer a short call (is its server alive?); a lost node does not answer.
PING_TIMEOUT = 10.0
# Seconds for an actor to stop its server (EOF, then TERM, then KILL, a few seconds each).
STOP_TIMEOUT = 20.0
# Ray's names for the resources it has actor options for; any other key is a custom resource.
_RESOURCE_NAMES = {"num_cpus": "CPU", "num_gpus": "GPU", "memory": "memory"}
# Binds every IPv4 interface; the server then reports its node's address. ("::" would bind IPv6
# only, since asyncio sets IPV6_V6ONLY, while Ray reports nodes by IPv4 address.)
WILDCARD_HOST = "0.0.0.0"
_connect_lock = threading.Lock()
_BUNDLE_INDEX_WITH_PLACEMENT = "with placement=, the servers get the bundles of their own group: leave out bundle_index"


class ServerActor:
    """Runs on a Ray node: one ``openenv-gym serve`` process there, and its address.

    Args:
        target: what the server serves (see :class:`~openenv_gym.providers.ProcessProvider`).
        host: the address to bind; ``None``: the node's address. A wildcard (``"0.0.0.0"``)
            binds every interface and reports the node's address.
        options: the other arguments of the ``ProcessProvider`` that runs the server.
    """

    def __init__(self, target: str, host: str | None, options: dict[str, Any]) -> None:
        node_address = ray.util.get_node_ip_address()
        bind = node_address if host is None else host
        self._reported_host = node_address if bind == WILDCARD_HOST else None
        self._server = ProcessProvider(target, host=bind, **options)

    def start(self) -> str:
        """Start the server if it is not running (again, if it died), and return its URL."""
        url = self._server.start()
        return url if self._reported_host is None else with_host(url, self._reported_host)

    def is_alive(self) -> bool:
        return self._server.is_alive()

    def server_pid(self) -> int | None:
        return self._server.pid

    def node(self) -> tuple[str, str]:
        """This actor's node: its address and Ray's id for it."""
        return ray.util.get_node_ip_address(), ray.get_runtime_context().get_node_id()

    def stop(self) -> None:
        self._server.stop()

    def kill(self) -> None:
        self._server.kill()


_RemoteServerActor = ray.remote(ServerActor)


def connect(address: str | None = None) -> None:
    """Join the Ray cluster at ``address`` (``None``: Ray's default, a local instance unless
    ``RAY_ADDRESS`` is set; ``"auto"``; ``"ray://host:10001"``), unless this process already has."""
    with _connect_lock:
        if not ray.is_initialized():
            ray.init(address=address)


def _join(address: str | None) -> None:
    """:func:`connect`, with Ray's failure said as a provider's."""
    try:
        connect(address)
    except Exception as exc:  # Ray's own errors here are ConnectionError, RuntimeError, ...
        raise ProviderError(f"cannot join the Ray cluster ({address or 'Ray default'}): {exc}") from exc


def resource_request(resources: dict[str, float] | None) -> dict[str, float]:
    """One server's resources in Ray's bundle form: ``{"num_cpus": 2, "gpu_node": 1}`` becomes
    ``{"CPU": 2, "gpu_node": 1}``; one CPU unless told otherwise (a server is a busy process)."""
    request: dict[str, float] = {"CPU": 1.0}
    for key, amount in (resources or {}).items():
        if isinstance(amount, bool) or not isinstance(amount, (int, float)) or not math.isfinite(amount) or amount < 0:
            raise ValueError(f"resources[{key!r}] must be a non-negative number, got {amount!r}")
        request[_RESOURCE_NAMES.get(key, key)] = float(amount)
    return request


def _actor_resources(request: dict[str, float]) -> dict[str, Any]:
    """The actor options that ask for ``request`` (a bundle's resources)."""
    options: dict[str, Any] = {"num_cpus": request.get("CPU", 0.0), "num_gpus": request.get("GPU", 0.0)}
    if "memory" in request:
        options["memory"] = request["memory"]
    custom = {key: amount for key, amount in request.items() if key not in ("CPU", "GPU", "memory")}
    if custom:
        options["resources"] = custom
    return options


class _Reservation:
    """One attempt at reserving a placement group, which servers starting together wait on."""

    def __init__(self) -> None:
        self.done = threading.Event()
        self.failure: ProviderError | None = None


class _SharedPlacementGroup:
    """One placement group for a run of servers: reserved when the first of them starts, removed
    when the last of them stops (a server restarted after a fault finds its bundle reserved).

    Servers that start together wait for one reservation and share its outcome: a group the
    cluster cannot place fails them all after one ``timeout``, not one after the other.
    """

    def __init__(self, bundles: list[dict[str, float]], strategy: str, timeout: float) -> None:
        self.bundles = bundles
        self.strategy = strategy
        self.timeout = timeout
        self._lock = threading.RLock()  # release() may run in a finalizer, on any thread
        self._group: PlacementGroup | None = None
        self._reservation: _Reservation | None = None
        self._holders = 0

    def acquire(self) -> PlacementGroup:
        """The reserved group, reserving it first if need be; pair each success with :meth:`release`."""
        with self._lock:
            reservation, ours = self._reservation, None  # ours: the reservation this call makes
            if self._group is None and reservation is None:
                reservation = ours = _Reservation()
                self._reservation = reservation
        if ours is not None:
            self._reserve(ours)
        elif reservation is not None:
            reservation.done.wait(self.timeout + PING_TIMEOUT)
        with self._lock:
            if self._group is None:
                assert reservation is not None
                raise reservation.failure or ProviderError(
                    f"Ray did not reserve the placement group within {self.timeout:g} s"
                )
            self._holders += 1
            return self._group

    def _reserve(self, reservation: _Reservation) -> None:
        group, reserved = None, False
        try:
            group = placement_group(self.bundles, strategy=self.strategy)
            ready, _ = ray.wait([group.ready()], timeout=self.timeout)
            reserved = bool(ready)
            if not reserved:
                reservation.failure = ProviderError(
                    f"Ray could not reserve {len(self.bundles)} x {self.bundles[0]} with strategy {self.strategy} "
                    f"within {self.timeout:g} s; the cluster has {ray.available_resources()} available"
                )
        except Exception as exc:  # what Ray raised, for every server waiting on this reservation
            reservation.failure = ProviderError(f"Ray refused the placement group: {exc}")
        finally:  # even when interrupted: nobody may wait on a reservation no one makes
            with self._lock:
                if reserved:
                    self._group = group
                self._reservation = None
            if not reserved and group is not None:
                _remove_group(group)
            reservation.done.set()

    def release(self) -> None:
        with self._lock:
            self._holders -= 1
            if self._holders > 0 or self._group is None:
                return
            group, self._group = self._group, None
        _remove_group(group)


def _remove_group(group: PlacementGroup) -> None:
    if ray.is_initialized():
        try:
            remove_placement_group(group)
        except RayError:
            pass  # the cluster is gone, and the group with it


def _kill_actor(actor: Any) -> None:
    """Kill ``actor`` (its server follows it); safe if it, or Ray, is gone already."""
    if ray.is_initialized():
        try:
            ray.kill(actor, no_restart=True)
        except (RayError, ValueError):
            pass


class RayProvider(Provider):
    """Run one env server on a Ray cluster, started by a Ray actor on the node Ray chooses.

    ``gym.make_vec(id, num_envs=64, provider="ray", servers=8, resources={"num_cpus": 1})``
    places eight servers; ``placement="spread"`` reserves them together in one placement group,
    one bundle per server. The servers bind their nodes' addresses and require a token that the
    provider generates (one for all the servers of a run) and the clients present.

    Args:
        target: what to serve: a Gymnasium id or ``"module:attr"``, importable on the nodes.
        env_kwargs, max_episode_steps, max_sessions, idle_timeout: as for
            :class:`~openenv_gym.providers.ProcessProvider`.
        startup_timeout: seconds for Ray to place the actor (its worker started, its
            ``runtime_env`` set up), and then again for its server to become healthy.
        ray_address: the cluster to join if this process has not joined one: ``None`` (Ray's
            default: a new local instance, or ``RAY_ADDRESS``), ``"auto"``, or ``"ray://host:port"``.
        resources: what one server asks of Ray: ``num_cpus`` (default 1), ``num_gpus``, ``memory``
            (bytes) and custom resources by name (``{"env_node": 0.1}``).
        placement: reserve the run's servers together in a placement group with this strategy:
            ``"pack"``, ``"spread"``, ``"strict_pack"`` or ``"strict_spread"``; ``None`` (default):
            each server is placed on its own.
        placement_group, bundle_index: place the server in this existing placement group (one the
            caller owns, as RL frameworks on Ray do), in this bundle (``-1``: any).
        host: the address the server binds: default, its node's address; ``"0.0.0.0"`` binds every
            IPv4 interface. ``"127.0.0.1"`` keeps a one-machine cluster on loopback.
        token: the token the server requires; default, a fresh random one.
        runtime_env: Ray runtime environment of the actor (``{"pip": ["openenv-gym"]}`` for nodes
            that lack it).
        accept_pickled_factories: run the server with ``--accept-pickled-factories`` (for
            ``RemoteVectorEnv.from_env_fns``, which sets it); it has the token anyway.
    """

    def __init__(
        self,
        target: str,
        *,
        env_kwargs: dict[str, Any] | None = None,
        max_episode_steps: int | None = -1,
        max_sessions: int | None = None,
        idle_timeout: float | None = None,
        startup_timeout: float = DEFAULT_STARTUP_TIMEOUT,
        ray_address: str | None = None,
        resources: dict[str, float] | None = None,
        placement: str | None = None,
        placement_group: PlacementGroup | None = None,
        bundle_index: int = -1,
        host: str | None = None,
        token: str | None = None,
        runtime_env: dict[str, Any] | None = None,
        accept_pickled_factories: bool = False,
        _shared_group: _SharedPlacementGroup | None = None,
    ) -> None:
        self.target = target
        self.startup_timeout = startup_timeout
        self.ray_address = ray_address
        self.request = resource_request(resources)
        if placement is not None and placement not in PLACEMENT_STRATEGIES:
            raise ValueError(f"placement must be one of {sorted(PLACEMENT_STRATEGIES)} or None, got {placement!r}")
        if placement is not None and placement_group is not None:
            raise ValueError("pass placement= (a group this provider reserves) or placement_group=, not both")
        if placement is not None and not any(self.request.values()):
            raise ValueError(f"a placement group needs a resource to reserve, but each server asks {self.request}")
        if placement is not None and _shared_group is None:
            if bundle_index != -1:
                raise ValueError(_BUNDLE_INDEX_WITH_PLACEMENT)
            _shared_group = _SharedPlacementGroup([self.request], PLACEMENT_STRATEGIES[placement], startup_timeout)
            bundle_index = 0
        if host is not None and (not host or host == "::"):
            raise ValueError(f"host must be an address to bind, {WILDCARD_HOST!r} or None (the node's), got {host!r}")
        token = checked_token(token)
        self.placement = placement
        self.placement_group = placement_group
        self.bundle_index = bundle_index
        self.host = host
        self.token = token or new_token()
        self.runtime_env = runtime_env
        self._shared_group = _shared_group
        self._process_options: dict[str, Any] = {
            "env_kwargs": env_kwargs,
            "max_episode_steps": max_episode_steps,
            "max_sessions": max_sessions,
            "idle_timeout": idle_timeout,
            "startup_timeout": startup_timeout,
            "token": self.token,
            "accept_pickled_factories": accept_pickled_factories,
            # The driver's: every server of the run, on whichever node, restores the others' snapshots.
            "snapshot_key": shared_snapshot_key(),
        }
        self.base_url: str | None = None
        self.node: str | None = None
        self.node_id: str | None = None
        self.actor_name: str | None = None
        self._actor: Any = None
        self._actor_finalizer: weakref.finalize | None = None
        self._held_group: PlacementGroup | None = None
        self._group_hold: weakref.finalize | None = None  # releases this server's share of the group

    @classmethod
    def preferred_count(cls, **options: Any) -> int | None:
        """With ``placement="spread"`` (or ``"strict_spread"``): one server per node that has room
        for one (``resources``), so that a run spreads over the whole cluster; else no view."""
        if options.get("placement") not in ("spread", "strict_spread") or options.get("placement_group"):
            return None
        request = resource_request(options.get("resources"))
        _join(options.get("ray_address"))
        fitting = [
            node
            for node in ray.nodes()
            if node["Alive"] and all(node["Resources"].get(key, 0.0) >= amount for key, amount in request.items())
        ]
        return max(len(fitting), 1)

    @classmethod
    def group(cls, count: int, **options: Any) -> list[Provider]:
        """``count`` servers of one run: one token, and with ``placement=`` one placement group."""
        token = options.pop("token", None)
        token = new_token() if token is None else token
        placement = options.get("placement")
        if placement not in PLACEMENT_STRATEGIES or options.get("placement_group") is not None:
            return super().group(count, token=token, **options)  # the constructor reports bad input
        if "bundle_index" in options:
            raise ValueError(_BUNDLE_INDEX_WITH_PLACEMENT)
        request = resource_request(options.get("resources"))
        timeout = options.get("startup_timeout", DEFAULT_STARTUP_TIMEOUT)
        shared = _SharedPlacementGroup([request] * count, PLACEMENT_STRATEGIES[placement], timeout)
        return [cls(token=token, bundle_index=index, _shared_group=shared, **options) for index in range(count)]

    def __repr__(self) -> str:
        return f"RayProvider({self.target!r}, url={self.base_url!r}, actor={self.actor_name!r})"

    def start(self) -> str:
        """Return the server's URL: ask its actor (which restarts a server that died), or place a
        new actor if there is none or it is lost; then check the server answers from here.

        Raises:
            ProviderError: Ray could not place the actor, or its server did not start or cannot
                be reached from this machine, within ``startup_timeout`` (each).
        """
        _join(self.ray_address)
        if self._actor is not None:
            try:
                return self._restarted_by_actor()
            except ProviderError:
                self.kill()  # its server runs but cannot be reached: try a new placement
            except RayError:
                self._end_actor()  # the actor or its node is lost (or hung): place a new one
        try:
            self._place_actor()
        except (RayError, ValueError, TypeError) as exc:  # options Ray refuses (a bad runtime_env, say)
            raise ProviderError(f"Ray refused the actor for a {self.target!r} server: {exc}") from exc
        try:
            self._call("__ray_ready__", self.startup_timeout)
        except GetTimeoutError:
            self._end_actor()
            raise ProviderError(
                f"Ray did not place a server for {self.target!r} within {self.startup_timeout:g} s: each asks "
                f"{self.request}, and the cluster has {ray.available_resources()} available"
            ) from None
        except RayError as exc:
            self._end_actor()
            raise ProviderError(f"the Ray actor for a {self.target!r} server did not start: {exc}") from exc
        try:
            # The actor's own ProcessProvider times the server's start: give it room to say why.
            url = self._call("start", self.startup_timeout + PING_TIMEOUT)
        except RayTaskError as exc:
            self._end_actor()
            if isinstance(exc.cause, OpenEnvGymError):  # the server's own failure, as the process provider says it
                raise exc.cause from None
            raise ProviderError(f"the Ray actor {self.actor_name} could not start its server: {exc}") from exc
        except RayError as exc:
            self._end_actor()
            raise ProviderError(f"the Ray actor {self.actor_name} was lost while starting its server: {exc}") from exc
        try:
            self.node, self.node_id = self._call("node", PING_TIMEOUT)
        except RayError as exc:
            self.kill()
            raise ProviderError(f"the Ray actor {self.actor_name} was lost after starting its server: {exc}") from exc
        try:
            return self._reachable(url)
        except ProviderError:
            self.kill()
            raise

    def _restarted_by_actor(self) -> str:
        """The URL of the live actor's server, restarted by the actor if it died.

        A server killed an instant ago can still look alive to its actor (on a loaded node the
        process is not gone yet), which then hands back the old address: if that does not answer,
        the actor kills what is left of the server and starts a new one, once, before the caller
        gives up on the actor.

        Raises:
            ProviderError: the server the actor started again does not answer from here either.
            RayError: the actor or its node is lost.
        """
        url = self._call("start", self.startup_timeout + PING_TIMEOUT)
        try:
            return self._reachable(url)
        except ProviderError:
            self._call("kill", PING_TIMEOUT)
            return self._reachable(self._call("start", self.startup_timeout + PING_TIMEOUT))

    def _place_actor(self) -> None:
        options: dict[str, Any] = {**_actor_resources(self.request), "name": ACTOR_NAME_PREFIX + uuid.uuid4().hex}
        if self.runtime_env is not None:
            options["runtime_env"] = self.runtime_env
        group = self.placement_group
        if self._shared_group is not None:
            if self._group_hold is None:  # kept across restarts; given back by stop()
                self._held_group = self._shared_group.acquire()
                self._group_hold = weakref.finalize(self, self._shared_group.release)
            group = self._held_group
        if group is not None:
            options["scheduling_strategy"] = PlacementGroupSchedulingStrategy(
                group, placement_group_bundle_index=self.bundle_index
            )
        actor = _RemoteServerActor.options(**options).remote(self.target, self.host, self._process_options)
        self._actor, self.actor_name = actor, options["name"]
        self._actor_finalizer = weakref.finalize(self, _kill_actor, actor)

    def _call(self, method: str, timeout: float) -> Any:
        return ray.get(getattr(self._actor, method).remote(), timeout=timeout)

    def _reachable(self, url: str) -> str:
        """``url``, once its ``/health`` answers from this process (another node may not reach it)."""
        try:
            http_get_json(url, "/health", timeout=self.startup_timeout)
        except OpenEnvGymError as exc:
            raise ProviderError(
                f"the server of Ray actor {self.actor_name} at {url} does not answer from this machine: {exc} "
                "(does the network let this machine reach that node? see host=)"
            ) from exc
        self.base_url = url
        return url

    @property
    def server_pid(self) -> int | None:
        """The server's process id on its node (``None`` if there is no live actor)."""
        if self._actor is None:
            return None
        try:
            return self._call("server_pid", PING_TIMEOUT)
        except RayError:
            return None

    def is_alive(self) -> bool:
        if self._actor is None:
            return False
        try:
            return bool(self._call("is_alive", PING_TIMEOUT))
        except RayError:
            return False

    def stop(self) -> None:
        """Stop the server in order, kill its actor, and give back its share of a placement group."""
        if self._actor is not None and ray.is_initialized():
            try:
                self._call("stop", STOP_TIMEOUT)
            except RayError:
                pass  # a lost actor: killing it below is all there is to do
        self._end_actor()
        if self._group_hold is not None:
            self._group_hold()
            self._group_hold, self._held_group = None, None

    def kill(self) -> None:
        """SIGKILL the server (it may be hung), then kill its actor; its placement stays reserved
        for a restart (:meth:`stop` gives it back)."""
        if self._actor is not None and ray.is_initialized():
            try:
                self._call("kill", PING_TIMEOUT)
            except RayError:
                pass
        self._end_actor()

    def _end_actor(self) -> None:
        if self._actor_finalizer is not None:
            self._actor_finalizer()  # runs _kill_actor once
            self._actor_finalizer = None
        self._actor = None
        self.base_url = self.node = self.node_id = None
