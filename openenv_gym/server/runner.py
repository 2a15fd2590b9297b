"""Run a server in the foreground: resolve what to serve, bind, report readiness, stop on a signal."""

from __future__ import annotations

import asyncio
import importlib
import inspect
import json
import os
import re
import signal
import sys
from collections.abc import Callable
from types import ModuleType
from typing import Any, NoReturn

from ..startup import FAILED_LINE, FAILED_PREFIX, READY_PREFIX
from .env_server import EnvServer
from .environment import Environment
from .options import ServerOptions
from .served_env import ServedEnv
from .session import factory_error
from .shutdown import stop_unless_busy

__all__ = ["load_factory", "run"]
# Gymnasium namespaces whose envs exist once a package is imported (Gymnasium loads no plugins).
_REGISTERING_PACKAGES = {"ALE": "ale_py"}

# Seconds a stopping server waits for its sessions to close their environments before it exits
# regardless, so a stuck environment cannot keep an orphaned server alive.
STOP_TIMEOUT = 10.0


def load_factory(
    target: str,
    *,
    max_episode_steps: int | None = -1,
    env_kwargs: dict[str, Any] | None = None,
    inline: bool = False,
) -> Callable[[], Environment[Any, Any, Any]]:
    """Resolve ``target`` into a factory that makes one environment per session.

    An ``Environment`` subclass named without ``env_kwargs`` comes back as itself; anything else
    as a :class:`~openenv_gym.server.served_env.ServedEnv` (callable like a factory) that says
    what a server may do with it: render modes, concurrent sessions, vector backends.

    ``target`` is ``"module:attr"`` naming an ``Environment`` subclass or a callable returning
    an ``Environment``, a ``gymnasium.Env`` or a PettingZoo env, an id of openenv-gym's catalog
    (``"openenv/CodingTools-v0"``: what the entry's server runs, not the Gymnasium face a client
    makes of it), a registered Gymnasium id (``"CartPole-v1"``, ``"module:Id-v0"``), or a PettingZoo
    env: an id of its registries (``"classic/connect_four-v3"``) or its module
    (``"pettingzoo.classic.connect_four_v3"``). Gymnasium environments are served through
    :class:`~openenv_gym.server.gym_environment.GymEnvironment`; PettingZoo envs through
    multi-agent sessions and, on ``/ws``, one agent's seat (:mod:`~openenv_gym.server.seat_env`).

    Args:
        target: what to serve.
        max_episode_steps: for Gymnasium ids: ``-1`` keeps the spec's time limit, ``None``
            removes it, a number replaces it.
        env_kwargs: keyword arguments for the factory or for ``gym.make``.
        inline: serve Gymnasium environments on the event loop even if they are not known to
            be cheap (see :class:`~openenv_gym.server.gym_environment.GymEnvironment`).
    """
    env_kwargs = env_kwargs or {}
    from .agents_host import is_pettingzoo_id, is_pettingzoo_module

    if is_pettingzoo_module(target):
        return _pettingzoo_served(target, env_kwargs)
    env_id = target
    module_name, _, attr = target.partition(":")
    module: ModuleType | None = None  # imported, and lacking attr: a Gymnasium id it registers, or a typo
    if attr and "/" not in module_name:
        try:
            module = importlib.import_module(module_name)
        except ImportError as exc:
            raise ValueError(f"cannot import {module_name!r} to serve {target!r}: {exc}") from exc
        found = getattr(module, attr, None)
        if found is not None:
            if not callable(found):
                raise ValueError(f"{target!r} is not callable: expected an Environment subclass or a factory")
            if isinstance(found, type) and issubclass(found, Environment) and not env_kwargs:
                return found
            is_environment = isinstance(found, type) and issubclass(found, Environment)
            if "pettingzoo" in sys.modules and not is_environment:
                # Only a module that imported PettingZoo can return its envs: make one to see.
                served = _maybe_pettingzoo_served(target, env_kwargs)
                if served is not None:
                    return served
            return _adapting_factory(found, env_kwargs, inline)
        # "module:Id-v0" is Gymnasium's form for an id that importing module registers.
        env_id = attr
    catalogued = _catalog_target(env_id, env_kwargs)
    if catalogued is not None:
        server, server_kwargs = catalogued
        return load_factory(server, max_episode_steps=max_episode_steps, env_kwargs=server_kwargs, inline=inline)

    import gymnasium as gym

    from .gym_environment import GymEnvironment, make_gym_env
    from .vector_backends import VectorBackends

    namespace = env_id.partition("/")[0] if "/" in env_id else None
    if namespace in _REGISTERING_PACKAGES and namespace not in {spec.namespace for spec in gym.registry.values()}:
        try:
            importlib.import_module(_REGISTERING_PACKAGES[namespace])
        except ImportError as exc:
            raise ValueError(f"serving {target!r} needs {_REGISTERING_PACKAGES[namespace]!r}: {exc}") from exc
    try:
        gym.spec(env_id)
    except gym.error.Error as exc:
        if is_pettingzoo_id(target):
            return _pettingzoo_served(target, env_kwargs)
        if module is not None:
            # An id-like name ("Id-v0") was meant as one: Gymnasium's "did you mean" is for it.
            id_failure = f"; nor is it a Gymnasium id the module registers: {exc}" if re.search(r"-v\d+$", attr) else ""
            raise ValueError(_missing_attribute(target, module, attr, id_failure)) from exc
        raise ValueError(f"{target!r} is neither 'module:attr' nor a registered Gymnasium id: {exc}") from exc

    def factory(render_mode: str | None = None) -> GymEnvironment:
        kwargs = env_kwargs if render_mode is None else {**env_kwargs, "render_mode": render_mode}
        return GymEnvironment(make_gym_env(env_id, max_episode_steps, **kwargs), blocking=False if inline else None)

    factory.__name__ = env_id
    return ServedEnv(
        factory,
        takes_render_mode=True,  # a session may ask /ws?render_mode=
        concurrent_sessions=True,
        vector_backends=VectorBackends(env_id, max_episode_steps, env_kwargs),
    )


def _missing_attribute(target: str, module: ModuleType, attr: str, id_failure: str) -> str:
    """Why ``module:attr`` cannot be served when the module imports but lacks ``attr`` (and registers
    no Gymnasium id of that name): what it has that ``serve`` would take, so a wrong name is one
    look away from the right one."""
    import gymnasium as gym

    defined = [
        (name, value)
        for name, value in vars(module).items()
        if not name.startswith("_") and getattr(value, "__module__", None) == module.__name__
    ]
    envs = [name for name, value in defined if isinstance(value, type) and issubclass(value, Environment | gym.Env)]
    factories = [name for name, value in defined if inspect.isfunction(value)]
    if envs or factories:
        has = f"it has: {', '.join(envs + factories)} (the Environment subclasses and callables it defines)"
    else:
        has = "it defines no Environment subclass or callable"
    return f"cannot serve {target!r}: module {module.__name__!r} has no attribute {attr!r}; {has}{id_failure}"


def _catalog_target(env_id: str, env_kwargs: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
    """What an ``openenv/`` id of the catalog serves, and with which keyword arguments: the env the
    id names (CodingTools' class, with its tools), not the Gymnasium face a client makes of it. The
    same resolution as ``validate``'s (:func:`~openenv_gym.registry.catalog_entry`). ``None`` when
    ``env_id`` is no catalog id, or names what it serves already (``CartPole-v1``)."""
    from ..registry import catalog_entry

    entry = catalog_entry(env_id)
    if entry is None or entry.server == env_id:
        return None
    if entry.server is None:
        raise ValueError(f"{entry.id} starts no server of its own: it attaches to a running server by base_url=")
    return entry.server, {**(entry.kwargs.get("env_kwargs") or {}), **env_kwargs}


def _pettingzoo_served(target: str, env_kwargs: dict[str, Any]) -> ServedEnv:
    """A PettingZoo env served: multi-agent sessions, and ``/ws`` seats in games."""
    from .agents_host import pettingzoo_factory

    return _served_agents(pettingzoo_factory(target, env_kwargs))


def _maybe_pettingzoo_served(target: str, env_kwargs: dict[str, Any]) -> ServedEnv | None:
    """``target``'s env served as a PettingZoo env if it makes one; ``None`` if it makes something else
    or fails (it then fails again, with its reason, where any factory's failure is reported)."""
    from .agents_host import pettingzoo_factory

    try:
        return _served_agents(pettingzoo_factory(target, env_kwargs))
    except Exception:
        return None


def _served_agents(agents: Any) -> ServedEnv:
    from .games import Games
    from .seat_env import seat_factory

    api = agents.game_api
    games = Games(lambda render_mode: agents.make(api, render_mode))
    return ServedEnv(
        seat_factory(games, agents.name),
        takes_render_mode=True,
        concurrent_sessions=True,
        agents=agents,
        games=games,
    )


def _adapting_factory(factory: Callable[..., Any], env_kwargs: dict[str, Any], inline: bool) -> ServedEnv:
    """Wrap a user factory: bind its kwargs, and serve a ``gymnasium.Env`` it returns through GymEnvironment."""

    def make() -> Environment[Any, Any, Any]:
        env = factory(**env_kwargs)
        if isinstance(env, Environment):
            return env
        from .gym_environment import GymEnvironment

        return GymEnvironment(env, blocking=False if inline else None)

    make.__name__ = getattr(factory, "__name__", "factory")
    # Environment classes say whether sessions may share a process; a plain factory makes a
    # fresh object per session, so it may.
    return ServedEnv(make, concurrent_sessions=ServedEnv.of(factory).concurrent_sessions)


async def _serve(server: EnvServer, exit_on_stdin_eof: bool, ready_fd: int | None) -> int:
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    if exit_on_stdin_eof:
        # The parent holds the only write end of our stdin: EOF means it is gone, even if it
        # was killed with SIGKILL, so we stop instead of lingering as an orphan.
        def on_stdin() -> None:
            if not os.read(sys.stdin.fileno(), 4096):
                stop.set()

        loop.add_reader(sys.stdin.fileno(), on_stdin)
    # One environment is made before listening, so one that cannot be made stops the server
    # now, with the reason, instead of failing every client that connects later.
    describe = asyncio.ensure_future(server.describe())
    stopping = asyncio.ensure_future(stop.wait())
    await asyncio.wait({describe, stopping}, return_when=asyncio.FIRST_COMPLETED)
    if not describe.done():  # the owner left while the environment was being made
        _exit_now("stopped while creating the environment")
    stopping.cancel()
    failure = describe.exception()
    if failure is not None:
        _report_failure(server, failure, ready_fd)
        return 1
    await server.start()
    line = f"{READY_PREFIX}{server.url} (WebSocket {server.url.replace('http', 'ws', 1)}/ws)\n"
    sys.stdout.write(line)
    if server.web and server.unix_socket is None:
        login = " (log in once at /web?token=<token>)" if server.requires_token else ""
        sys.stdout.write(f"web page: {server.url}/web{login}\n")
    sys.stdout.flush()
    if ready_fd is not None:
        os.write(ready_fd, line.encode())
        os.close(ready_fd)
    try:
        await stop.wait()
    finally:
        try:
            stopped = await asyncio.wait_for(stop_unless_busy(server.stop(), server.sessions), STOP_TIMEOUT)
        except TimeoutError:
            _exit_now(f"sessions did not close within {STOP_TIMEOUT:g} s; exiting anyway")
        if not stopped:
            _exit_now("a session was still in a call: its environment was not closed; exiting anyway")
        if server.stuck:
            # A worker thread is still inside an environment's close(); the interpreter would
            # wait for it at exit, forever.
            _exit_now("an environment's close() never returned; exiting anyway")
    return 0


def _report_failure(server: EnvServer, exc: BaseException, ready_fd: int | None) -> None:
    """Say why the environment could not be made: in words on stderr, as JSON on ``ready_fd``."""
    frame = factory_error(server.factory, exc, with_traceback=True)
    sys.stderr.write(f"{frame.details['traceback']}{FAILED_LINE}{frame.message}\n")
    sys.stderr.flush()
    if ready_fd is not None:
        os.write(ready_fd, f"{FAILED_PREFIX}{json.dumps(frame.data())}\n".encode())
        os.close(ready_fd)


def _exit_now(why: str) -> NoReturn:
    sys.stderr.write(f"openenv-gym server: {why}\n")
    sys.stderr.flush()
    os._exit(1)


def run(
    factory: ServedEnv | Callable[[], Environment[Any, Any, Any]],
    *,
    options: ServerOptions | None = None,
    exit_on_stdin_eof: bool = False,
    ready_fd: int | None = None,
    **option_values: Any,
) -> int:
    """Serve ``factory`` until SIGINT or SIGTERM (or EOF on stdin when asked), then close every session.

    One environment is made (and closed) first. Once listening, the server prints a line
    starting with :data:`~openenv_gym.startup.READY_PREFIX` and its URL to stdout, and to ``ready_fd`` (then closed)
    when one is given. If that environment cannot be made, it says why on stderr (and on
    ``ready_fd``, after :data:`~openenv_gym.startup.FAILED_PREFIX`, as JSON) and returns 1 without listening.
    ``options`` and the keyword arguments (host, port, token, limits, timeouts, ...: the fields of
    :class:`~openenv_gym.server.options.ServerOptions`) are :class:`EnvServer`'s; the web page's
    address is printed on the line after the ready line.

    Returns:
        The exit status: 0 after a normal stop, 1 when the environment could not be made.
    """
    # stdout carries the start-up report; pygame (classic-control's rendering) would greet there on import.
    os.environ.setdefault("PYGAME_HIDE_SUPPORT_PROMPT", "1")
    server = EnvServer(factory, options=options, **option_values)
    return asyncio.run(_serve(server, exit_on_stdin_eof, ready_fd))
