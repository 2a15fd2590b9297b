"""`MakeOptions`: ``gym.make``'s keyword arguments for a remote env, sorted once; `Timeouts`: the client's.

``RemoteEnv``, ``RemoteVectorEnv``, ``make_async`` and ``AsyncEnvPool`` take the same keyword
arguments (``server=``, ``base_url=``, ``provider=``, ``token=``, the timeouts, the env's own...).
:meth:`MakeOptions.parse` sorts them: ours become fields, the provider's options go to the
provider and the rest to the environment (:func:`~openenv_gym.providers.start_options`), and
:meth:`MakeOptions.fleet` gives the :class:`~openenv_gym.providers.fleet.Fleet` of their servers,
laid out once (:meth:`MakeOptions.layout`: how many, which sessions each serves).
"""

from __future__ import annotations

import dataclasses
import warnings
from typing import Any

from .client import DEFAULT_CALL_TIMEOUT, DEFAULT_OPEN_TIMEOUT
from .providers import Provider, provider_class, start_options
from .providers.base import DEFAULT_STARTUP_TIMEOUT
from .providers.fleet import Fleet, build_providers
from .providers.layout import Layout, even_layout, plan_layout, server_layout

__all__ = ["MakeOptions", "Timeouts", "build_provider"]

#: What a single env says when it has neither a server to run nor one to attach to.
ONE_ENV_NEEDS = (
    "RemoteEnv needs base_url='http://host:port' (a running server, as openenv/Remote-v0 "
    "always does) or server= (the environment for provider={provider!r} to start)"
)


@dataclasses.dataclass(frozen=True)
class Timeouts:
    """The client's timeouts, in seconds (``open_timeout=``, ``call_timeout=``, ``startup_timeout=``).

    Attributes:
        open: to connect to a server (and for its HTTP answers: ``/health``, ``/schema``).
        call: for each reset, step or other call of a session.
        startup: for a started server to become healthy.
    """

    open: float = DEFAULT_OPEN_TIMEOUT
    call: float = DEFAULT_CALL_TIMEOUT
    startup: float = DEFAULT_STARTUP_TIMEOUT

    def session(self) -> dict[str, float]:
        """A session client's keyword arguments for them (``open_timeout=``, ``call_timeout=``)."""
        return {"open_timeout": self.open, "call_timeout": self.call}


@dataclasses.dataclass(frozen=True)
class MakeOptions:
    """``gym.make``'s keyword arguments for a remote env, sorted (see :meth:`parse`).

    Attributes:
        server: what a started server runs (a Gymnasium id or ``"module:attr"``).
        base_urls: running servers to attach to instead (none started).
        provider: a provider's name or a provider built by the caller.
        provider_options: that provider's options (``provider_kwargs``, the loose ones it takes,
            and the token its servers are to require).
        env_kwargs: the environment's keyword arguments.
        token: the token given (``token=``), if any.
        timeouts: the client's timeouts.
        json_schema_fallback, tool_calls: as for :class:`~openenv_gym.env.RemoteEnv`.
        sessions_per_server: a spec's, for ``gym.make_vec`` and pools.
    """

    server: str | None = None
    base_urls: tuple[str, ...] = ()
    provider: str | Provider = "process"
    provider_options: dict[str, Any] = dataclasses.field(default_factory=dict)
    env_kwargs: dict[str, Any] = dataclasses.field(default_factory=dict)
    token: str | None = None
    timeouts: Timeouts = Timeouts()
    json_schema_fallback: bool = False
    tool_calls: bool | None = None
    sessions_per_server: int | None = None

    @classmethod
    def parse(
        cls,
        *,
        server: str | None = None,
        base_url: str | None = None,
        base_urls: list[str] | tuple[str, ...] | None = None,
        provider: str | Provider = "process",
        provider_kwargs: dict[str, Any] | None = None,
        env_kwargs: dict[str, Any] | None = None,
        token: str | None = None,
        open_timeout: float = DEFAULT_OPEN_TIMEOUT,
        call_timeout: float = DEFAULT_CALL_TIMEOUT,
        startup_timeout: float = DEFAULT_STARTUP_TIMEOUT,
        json_schema_fallback: bool = False,
        tool_calls: bool | None = None,
        sessions_per_server: int | None = None,
        **kwargs: Any,
    ) -> MakeOptions:
        """Sort ``gym.make``-style keyword arguments; ``kwargs`` are the loose ones.

        As with a local ``gym.make(id, **kwargs)``, a loose argument goes to the environment,
        except the options of the provider that starts its servers (``memory=`` for Docker,
        ``ray_address=`` for Ray), which go to the provider. ``base_urls`` wins over ``base_url``
        (a spec may set one, the caller the other).

        Args:
            server: what the provider serves: a Gymnasium id or ``"module:attr"``.
            base_url: attach to a running server instead (``"ws://127.0.0.1:8000"``); sets
                ``provider="url"``.
            base_urls: several running servers (a vector env's or a pool's).
            provider: ``"process"`` (default: a child process on loopback), ``"docker"`` (a
                container), ``"ray"`` (a Ray cluster), ``"url"``, or a
                :class:`~openenv_gym.providers.Provider` instance.
            provider_kwargs: options of the provider, such as ``{"memory": "1g"}`` for Docker; they
                may also be given as further keyword arguments (``ray_address="auto"``).
            env_kwargs: keyword arguments for the environment on the server (for one whose name is
                also a provider option); other keyword arguments go there too.
            token: the token the server requires (``Authorization: Bearer``); for a server the
                provider starts, the token it is to require. Default: the provider's (none on
                loopback, a fresh one for a server beyond it).
            open_timeout: seconds to connect to the server.
            call_timeout: seconds to wait for each reset or step.
            startup_timeout: seconds a started server has to become healthy.
            json_schema_fallback: when the server publishes no Gymnasium spaces (an OpenEnv server),
                build them from its JSON schemas (:mod:`openenv_gym.spaces.schema`: fields that
                cannot be mapped are left out with one warning; a required action field that cannot
                be mapped raises ``UnsupportedSpaceError``). Off by default: such a server is
                refused with a ``ValueError``. A server's published spaces are always used as they are.
            tool_calls: ``None`` (the default) picks the tool face for an env that offers tools and
                publishes no spaces; ``True`` always (the env must offer tools), ``False`` never.
            sessions_per_server: how many sub-envs ``gym.make_vec`` packs per server (a registered
                spec, a Hub manifest's, may set it; a single env holds one session and ignores it).

        Raises:
            TypeError: loose arguments that cannot reach an env, since no server is started.
            ValueError: an argument given twice (loose and in ``env_kwargs``; the token twice).
        """
        urls = tuple(base_urls or ([base_url] if base_url is not None else []))
        starts = not urls and isinstance(provider, str)
        provider_options, env_kwargs = start_options(
            provider, provider_kwargs, kwargs, token, env_kwargs, starts=starts
        )
        return cls(
            server=server,
            base_urls=urls,
            provider=provider,
            provider_options=provider_options,
            timeouts=Timeouts(open_timeout, call_timeout, startup_timeout),
            env_kwargs=env_kwargs,
            token=token,
            json_schema_fallback=json_schema_fallback,
            tool_calls=tool_calls,
            sessions_per_server=sessions_per_server,
        )

    @property
    def starts(self) -> bool:
        """Whether servers are started (no ``base_urls``, no provider built by the caller)."""
        return not self.base_urls and isinstance(self.provider, str)

    def layout(
        self,
        sessions: int,
        *,
        servers: int | None = None,
        sessions_per_server: int | None = None,
        one_server: bool = False,
        batch_size: int | None = None,
    ) -> Layout:
        """How ``sessions`` sessions are laid out over these servers: spread evenly over the running
        ``base_urls``; all on the provider the caller built; else on the servers
        :func:`~openenv_gym.providers.layout.plan_layout` says to start.

        Raises:
            ValueError: ``servers`` with ``base_urls`` (none is started), or a layout that cannot be.
        """
        if self.base_urls:
            if servers is not None:
                raise ValueError("servers= is the number of servers to start; with base_urls= none is started")
            return even_layout(sessions, len(self.base_urls))
        name = self.provider
        if not isinstance(name, str):  # a provider the caller built is one server
            server_layout(sessions, sessions_per_server, servers)  # the counts asked for are still checked
            return even_layout(sessions, 1)
        return plan_layout(
            sessions,
            servers=servers,
            sessions_per_server=sessions_per_server,
            one_server=one_server,
            batch_size=batch_size,
            preferred_count=lambda: provider_class(name).preferred_count(**self.provider_options),
        )

    def providers(
        self,
        layout: Layout | None = None,
        *,
        max_episode_steps: int | None = None,
        needs: str = ONE_ENV_NEEDS,
        **server_options: Any,
    ) -> list[Provider]:
        """The providers of these servers, none started (see :meth:`fleet`)."""
        return build_providers(self.server, layout=layout, **self._sources(max_episode_steps, needs, server_options))

    def fleet(
        self,
        sessions: int | None = None,
        *,
        servers: int | None = None,
        sessions_per_server: int | None = None,
        one_server: bool = False,
        batch_size: int | None = None,
        max_episode_steps: int | None = None,
        health_timeout: float | None = None,
        needs: str = ONE_ENV_NEEDS,
        **server_options: Any,
    ) -> Fleet:
        """The fleet of these servers, laid out for ``sessions`` sessions, none started yet.

        Args:
            sessions: how many sessions the servers are to hold, laid out as :meth:`layout` says
                with ``servers``, ``sessions_per_server``, ``one_server`` and ``batch_size``
                (``None``: one env's server).
            max_episode_steps: the time limit of the servers started (``None``: none, the client's
                ``TimeLimit`` being the only one).
            health_timeout: for the fleet's health checks (default: the open timeout).
            needs: the error when there is neither a server to start nor one to attach to
                (``{provider}`` is the provider's name).
            server_options: further options of every server started (``accept_pickled_factories``).

        Raises:
            ValueError: no server to start nor to attach to; a layout that cannot be (see :meth:`layout`).
        """
        sources = self._sources(max_episode_steps, needs, server_options)
        layout = Layout()  # one env's server, as the provider makes it
        if sessions is not None:
            layout = self.layout(
                sessions,
                servers=servers,
                sessions_per_server=sessions_per_server,
                one_server=one_server,
                batch_size=batch_size,
            )
        providers = build_providers(self.server, layout=layout, **sources)
        return Fleet(providers, name=self.server, health_timeout=health_timeout or self.timeouts.open, layout=layout)

    def _sources(self, max_episode_steps: int | None, needs: str, server_options: dict[str, Any]) -> dict[str, Any]:
        """Where the servers come from: :func:`~openenv_gym.providers.fleet.build_providers`'
        arguments but the target and the layout.

        Raises:
            ValueError: no server to start nor to attach to (``needs`` says so).
        """
        if self.starts and self.server is None and self.provider != "url":
            raise ValueError(needs.format(provider=self.provider))
        return {
            "urls": self.base_urls,
            "provider": self.provider,
            "provider_options": self.provider_options,
            "token": self.token,
            "open_timeout": self.timeouts.open,
            "env_kwargs": self.env_kwargs,
            "max_episode_steps": max_episode_steps,
            "startup_timeout": self.timeouts.startup,
            **server_options,
        }


#: ``build_provider``'s parameters, in the order it took them positionally.
_BUILD_PROVIDER_PARAMETERS = (
    "server",
    "base_url",
    "provider",
    "provider_kwargs",
    "env_kwargs",
    "kwargs",
    "token",
    "open_timeout",
    "startup_timeout",
)


def build_provider(*args: Any, **arguments: Any) -> Provider:
    """The provider of one env's server, from ``gym.make``'s arguments (nothing is started yet).

    Deprecated: ``MakeOptions.parse(server=..., **gym_make_kwargs).providers()[0]`` does the
    same, and is what ``gym.make`` uses. Takes ``server, base_url, provider, provider_kwargs,
    env_kwargs, kwargs, token, open_timeout, startup_timeout`` as before, ``kwargs`` being the
    loose keyword arguments.
    """
    warnings.warn(
        "build_provider is deprecated: use openenv_gym.make_options.MakeOptions.parse(...).providers()[0]",
        DeprecationWarning,
        stacklevel=2,
    )
    arguments.update(zip(_BUILD_PROVIDER_PARAMETERS, args))
    loose = arguments.pop("kwargs", None) or {}
    return MakeOptions.parse(**arguments, **loose).providers()[0]
