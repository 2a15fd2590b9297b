"""`ServedEnv`: what a server serves, said explicitly instead of in attributes set on a function."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .environment import Environment

if TYPE_CHECKING:
    from .agents_host import PettingZooFactory
    from .games import Games
    from .vector_backends import VectorBackends

__all__ = ["ServedEnv"]


@dataclasses.dataclass(frozen=True)
class ServedEnv:
    """An environment factory and what a server may do with it.

    Calling it makes one environment (``served()``, or ``served(render_mode="rgb_array")`` when
    :attr:`takes_render_mode`), so it stands wherever a factory does.

    Args:
        factory: makes one environment per session (an ``Environment`` subclass or any callable).
        takes_render_mode: the factory accepts ``render_mode=``, so a session may ask for one
            (``/ws?render_mode=``).
        concurrent_sessions: many of its environments may live in one server process; when
            false, :class:`~openenv_gym.server.EnvServer` serves one session at a time by default.
        vector_backends: the server-side vector envs a vector session may make of it (Gymnasium
            envs only), or ``None``.
        agents: for a PettingZoo env, what makes it for a multi-agent session (``/ws/agents``);
            ``factory`` then makes a ``/ws`` session's seat in one of ``games``
            (``factory(seat_query, render_mode=...)``).
        games: for a PettingZoo env, or an ``Environment`` class whose sessions are seats in
            games (one with a ``games`` attribute, such as Chess-v0's), the table of games its
            seats join; ``factory`` then takes the seat's query.

    >>> from openenv_gym.envs.echo import EchoEnvironment
    >>> ServedEnv.of(EchoEnvironment).concurrent_sessions
    True
    """

    factory: Callable[..., Environment[Any, Any, Any]]
    takes_render_mode: bool = False
    concurrent_sessions: bool = True
    vector_backends: VectorBackends | None = None
    agents: PettingZooFactory | None = None
    games: Games | None = None

    @classmethod
    def of(cls, factory: ServedEnv | Callable[..., Environment[Any, Any, Any]]) -> ServedEnv:
        """``factory`` itself if it is a ``ServedEnv``, else a description of a plain factory.

        An ``Environment`` class says whether its instances may share a process
        (``SUPPORTS_CONCURRENT_SESSIONS``); a plain function makes a fresh object per session, so
        it may. The other attributes a factory once carried for the server (``takes_render_mode``,
        ``vector_backends``) are still read, for factories written that way.
        """
        if isinstance(factory, ServedEnv):
            return factory
        return cls(
            factory,
            takes_render_mode=bool(getattr(factory, "takes_render_mode", False)),
            concurrent_sessions=bool(getattr(factory, "SUPPORTS_CONCURRENT_SESSIONS", True)),
            vector_backends=getattr(factory, "vector_backends", None),
            games=getattr(factory, "games", None),  # an Environment whose sessions are seats in games
        )

    @property
    def SUPPORTS_CONCURRENT_SESSIONS(self) -> bool:  # an Environment class's spelling
        """:attr:`concurrent_sessions` under the name an ``Environment`` class declares it by."""
        return self.concurrent_sessions

    @property
    def name(self) -> str:
        """The factory's name, as errors and ``repr`` give it."""
        return str(getattr(self.factory, "__name__", self.factory))

    def __call__(self, render_mode: str | None = None) -> Environment[Any, Any, Any]:
        """Make one environment (in ``render_mode``, when given)."""
        return self.maker(render_mode)()

    def maker(self, render_mode: str | None = None) -> Callable[[], Environment[Any, Any, Any]]:
        """A factory of no arguments making the environment in ``render_mode`` (``None``: the factory's own)."""
        if render_mode is None:
            return self.factory
        return functools.update_wrapper(functools.partial(self.factory, render_mode=render_mode), self.factory)
