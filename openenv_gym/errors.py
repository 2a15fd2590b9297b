"""Every exception openenv-gym raises, under one root.

::

    OpenEnvGymError
    ├── ProtocolError (ValueError)            a frame that breaks the wire format or the session rules
    │   └── EpisodeEndedError                      a step after the episode ended, before a reset
    ├── SpaceCodecError (ValueError)          a value, or a space's JSON form, that does not fit
    │   └── InvalidActionError                     an action outside the env's action space
    ├── UnsupportedSpaceError (TypeError)     a Gymnasium space type with no JSON form
    ├── ToolCallError (ValueError)            text that is not one tool call (the tool face shows it to the model)
    ├── ModelCallError (ValueError)           an agent's model request, or a reply to it, that its API dialect cannot carry
    ├── ToolDefinitionError (TypeError)       an environment's tool that cannot be served (at class creation)
    ├── ToolFailedError (RuntimeError)        a tool call the env refused, raised to TRL (integrations.trl)
    ├── SpaceMismatchError (RuntimeError)     a sub-env's spaces differ from the first's (from_env_fns)
    ├── SnapshotRefusedError (ValueError)     a state an env's restore() will not take (raised on the server)
    ├── SeatError (ValueError)                a seat in a game that cannot be taken (raised on the server)
    ├── GameOverError (RuntimeError)          a game that ended for good, reset again (raised on the server)
    ├── EpisodeNotEndingError (RuntimeError)  an episode still going after the steps a run allows it (eval)
    ├── ClientError                           something went wrong talking to a server
    │   ├── ServerConnectError (ConnectionError)   the server could not be reached or refused us
    │   ├── ConnectionLostError (ConnectionError)  the connection dropped while a call was waiting
    │   │   └── ServerClosedError                  ... because the server's owner closed it
    │   ├── RequestTimeoutError (TimeoutError)     no reply within the timeout
    │   ├── WaitTimeoutError (TimeoutError, multiprocessing.TimeoutError) a vector env's *_wait(timeout=) ran out
    │   ├── EnvMismatchError (ValueError)          the server runs another env than the one asked for
    │   ├── SeedNotHonouredError (ValueError)      a seeded reset refused: the server's env did not keep the seed
    │   └── RemoteError                            the server answered with an error frame
    │       ├── CapacityReachedError               ... because every session slot is taken
    │       ├── EnvCreationError                   ... because it could not create the environment
    │       ├── RemoteEpisodeEndedError (EpisodeEndedError) ... because the episode had ended
    │       └── SnapshotError                      ... about a snapshot: unknown id, limit, refused bytes
    │           └── SnapshotUnsupportedError       ... the env cannot be snapshotted (the message says why)
    ├── ProviderError (RuntimeError)          a server could not be started or stopped
    │   └── ServerStartError                       ... the server process failed to become healthy
    ├── DockerUnavailableError (ConnectionError) no Docker Engine answers
    ├── ImageBuildError                       an env image could not be built, or is missing
    ├── SandboxUnavailableError               no sandbox can run agent code here
    ├── ManifestError (ValueError)            an openenv.yaml that cannot be read or does not validate
    ├── HubError                              a manifest could not be pulled from the Hub
    └── TrustRemoteCodeError (PermissionError) running it would import code a downloaded manifest names

Built-in parents are chosen so that ``except TimeoutError`` or ``except ConnectionError`` keep
working for callers who do not know this package.

One more lives beside the Gymnasium face, since its second parent is Gymnasium's own and this
module does not import gymnasium: ``openenv_gym.env_core.ClosedEnvError`` (``OpenEnvGymError`` and
``gymnasium.error.ClosedEnvironmentError``), raised by any call on a closed env or vector env.
"""

from __future__ import annotations

import multiprocessing
from typing import Any

__all__ = [
    "CapacityReachedError",
    "ClientError",
    "ConnectionLostError",
    "DockerUnavailableError",
    "EnvCreationError",
    "EnvMismatchError",
    "EpisodeEndedError",
    "EpisodeNotEndingError",
    "GameOverError",
    "HubError",
    "ImageBuildError",
    "InvalidActionError",
    "ManifestError",
    "ModelCallError",
    "OpenEnvGymError",
    "ProtocolError",
    "ProviderError",
    "RemoteEpisodeEndedError",
    "RemoteError",
    "RequestTimeoutError",
    "SandboxUnavailableError",
    "SeatError",
    "SeedNotHonouredError",
    "ServerClosedError",
    "ServerConnectError",
    "ServerStartError",
    "SnapshotError",
    "SnapshotRefusedError",
    "SnapshotUnsupportedError",
    "SpaceCodecError",
    "SpaceMismatchError",
    "ToolCallError",
    "ToolDefinitionError",
    "ToolFailedError",
    "TrustRemoteCodeError",
    "UnsupportedSpaceError",
    "WaitTimeoutError",
]


class OpenEnvGymError(Exception):
    """Base class of every exception raised by openenv-gym."""


class ProtocolError(OpenEnvGymError, ValueError):
    """A frame does not follow the wire format, or arrives when the session cannot take it.

    Attributes:
        code: the wire error code (an ``ErrorCode`` value) a server answers with.
        message: what was wrong, in words.
        details: extra fields carried in the error frame (for example pydantic's ``errors``).
    """

    def __init__(self, code: str, message: str, details: dict[str, Any] | None = None) -> None:
        super().__init__(code, message)
        self.code = code
        self.message = message
        self.details = details or {}

    def __str__(self) -> str:
        return f"{self.message} (code: {self.code})"


class EpisodeEndedError(ProtocolError):
    """A step (or tool call) after the episode ended, ``terminated`` or ``truncated``, and before a
    ``reset``: refused before anything is sent, so it is never scored (code ``EPISODE_ENDED``; a
    server refuses one that reaches it with an error frame of that code).

    Gymnasium's own envs only warn here; a remote env is often scoring an agent's work, and a
    step that an ended episode took would be paid again.
    """


class SpaceCodecError(OpenEnvGymError, ValueError):
    """A Gymnasium space, or a value of one, cannot be converted to or from its JSON form."""


class InvalidActionError(SpaceCodecError):
    """An action that is not in the env's action space, refused before anything is sent.

    Attributes:
        action: the value given.
        space: the action space it is not in.
        reason: what keeps it out (``"expected an integer, got float"``).
        env_id: the environment, when known.
    """

    def __init__(self, action: Any, space: Any, reason: str, env_id: str | None = None) -> None:
        super().__init__(action, space, reason, env_id)
        self.action = action
        self.space = space
        self.reason = reason
        self.env_id = env_id

    def __str__(self) -> str:
        where = f" of {self.env_id}" if self.env_id else ""
        return f"action {self.action!r:.200} is not in the action space {self.space}{where}: {self.reason}"


class UnsupportedSpaceError(OpenEnvGymError, TypeError):
    """A Gymnasium space type that has no JSON form (yet)."""


class ToolCallError(OpenEnvGymError, ValueError):
    """Text or a dict that is not one tool call ``{"name": .., "arguments": {..}}``.

    The Gymnasium tool face never raises it: it answers with an error observation, so that the
    model sees its mistake.
    """


class ModelCallError(OpenEnvGymError, ValueError):
    """An agent's model request that does not follow its API dialect (chat completions, Responses,
    Anthropic Messages), or a reply that cannot be written in it; the message names the field.

    Attributes:
        dialect: the dialect's name (``"chat_completions"``...), when known.
    """

    def __init__(self, message: str, dialect: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.dialect = dialect


class ToolDefinitionError(OpenEnvGymError, TypeError):
    """An environment's tool that cannot be served: a reserved name, a parameter with no JSON
    schema, ``*args``; raised when the class is created."""


class ToolFailedError(OpenEnvGymError, RuntimeError):
    """A tool call the env refused, or that could not be made; TRL shows the model ``str(error)``.

    Attributes:
        tool_name: the tool called.
        error_type: the env's ``error_type`` (``invalid_args``, ``execution_error``, ``timeout``,
            ``tool_not_found``...), or ``episode_over`` for a call after the episode ended, or
            ``session_lost`` when the session broke.
        message: what went wrong, in the env's words.
    """

    def __init__(self, tool_name: str, error_type: str, message: str) -> None:
        super().__init__(message)
        self.tool_name = tool_name
        self.error_type = error_type
        self.message = message


class SpaceMismatchError(OpenEnvGymError, RuntimeError):
    """A sub-env's space differs from the first env's, so the batch cannot hold it (as
    ``gymnasium.vector.AsyncVectorEnv`` refuses, with a ``RuntimeError``).

    Attributes:
        index: the sub-env.
        role: ``"observation"`` or ``"action"``.
        expected: the space of the env made from ``env_fns[0]``.
        got: the sub-env's space (its JSON form if it cannot be rebuilt here).
    """

    def __init__(self, index: int, role: str, expected: Any, got: Any, observation_mode: str = "same") -> None:
        super().__init__(index, role, expected, got)
        self.index = index
        self.role = role
        self.expected = expected
        self.got = got
        self.observation_mode = observation_mode  # "different": only shapes and dtypes must agree

    def __str__(self) -> str:
        if self.role == "observation" and self.observation_mode != "same":
            return (
                f"sub-env {self.index} has the observation space {self.got}, whose shape or dtype differs from "
                f"{self.expected}'s: with observation_mode='different' or a custom space the sub-environments' "
                "observation spaces must share a common shape and dtype"
            )
        hint = (
            "; some of the sub-environments observation spaces are not equivalent. If this is intentional, use "
            "`observation_mode='different'` instead."
            if self.role == "observation"
            else ""
        )
        return (
            f"sub-env {self.index} has the {self.role} space {self.got}, not {self.expected} as the env of "
            f"env_fns[0] has; in order to batch them, every sub-env's {self.role} space must be equal{hint}"
        )


class ClientError(OpenEnvGymError):
    """Base class of the errors a client sees while talking to an environment server."""


class ServerConnectError(ClientError, ConnectionError):
    """The server could not be reached, or it refused the WebSocket handshake."""

    def __init__(self, url: str, reason: str) -> None:
        super().__init__(url, reason)
        self.url = url
        self.reason = reason

    def __str__(self) -> str:
        return f"cannot connect to {self.url}: {self.reason}"


class ConnectionLostError(ClientError, ConnectionError):
    """The connection closed while a call was in flight, or before one was made.

    Attributes:
        url: the session's WebSocket URL.
        call: the call that was waiting (``"reset"``, ``"step"``, ...), or ``None``.
        code: the WebSocket close code, if a close frame was received.
        reason: the close reason the server gave, if any.
    """

    def __init__(self, url: str, call: str | None, code: int | None = None, reason: str = "") -> None:
        super().__init__(url, call, code, reason)
        self.url = url
        self.call = call
        self.code = code
        self.reason = reason

    def __str__(self) -> str:
        during = f" during {self.call}" if self.call else ""
        if self.code is not None:
            how = f"closed with code {self.code}" + (f": {self.reason}" if self.reason else "")
        elif self.reason:
            how = self.reason
        else:
            how = "closed without a close frame (did the server process die?)"
        return f"connection to {self.url} lost{during}, {how}"


class ServerClosedError(ConnectionLostError):
    """The server's owner closed it while this session was attached: the env that started it was
    closed (a parent before its forks, the first copy of an agents vector env, the ``gym.make`` whose
    ``base_url`` another shares), or ``openenv-gym serve`` was stopped. The session is over: make a
    new env."""

    def __str__(self) -> str:
        during = f" during {self.call}" if self.call else ""
        return (
            f"connection to {self.url} lost{during}: the server was closed by its owner (the env that started it "
            "was closed, or its `openenv-gym serve` stopped); this session is over: make a new env"
        )


class RequestTimeoutError(ClientError, TimeoutError):
    """The server did not answer a call within its timeout."""

    def __init__(self, url: str, call: str, timeout: float) -> None:
        super().__init__(url, call, timeout)
        self.url = url
        self.call = call
        self.timeout = timeout

    def __str__(self) -> str:
        return (
            f"{self.call} on {self.url} got no answer within {self.timeout:g} s; "
            f"raise the timeout if the environment is slow"
        )


class WaitTimeoutError(ClientError, multiprocessing.TimeoutError, TimeoutError):
    """A vector env's ``*_wait(timeout=...)`` ran out of time; the call stays pending (call ``*_wait`` again).

    It is what Gymnasium's AsyncVectorEnv raises (``multiprocessing.TimeoutError``) and a built-in
    ``TimeoutError``.
    """


class EnvMismatchError(ClientError, ValueError):
    """The server at a URL runs another environment than the id asked for.

    Attributes:
        url: the server.
        expected: what was asked for (a Gymnasium id or ``"module:attr"``).
        served: what the server's ``/metadata`` says it runs.
    """

    def __init__(self, url: str, expected: str, served: str) -> None:
        super().__init__(url, expected, served)
        self.url = url
        self.expected = expected
        self.served = served

    def __str__(self) -> str:
        return (
            f"the server at {self.url} serves {self.served!r}, not {self.expected!r}; use the id of what it "
            f"serves, or gym.make('openenv/Remote-v0', base_url=...) to attach to any server"
        )


class SeedNotHonouredError(ClientError, ValueError):
    """A seeded reset refused because the server's env did not keep the seed: the same seed gave two
    different first observations. OpenEnv's server drops a seed its env's reset does not take, and an
    env may take one and drop it (OpenEnv #1102); a reset that looked seeded would not be.

    Attributes:
        url: the session's server.
        seed: the seed asked for.
    """

    def __init__(self, url: str, seed: Any) -> None:
        super().__init__(url, seed)
        self.url = url
        self.seed = seed

    def __str__(self) -> str:
        return (
            f"reset(seed={self.seed!r}) refused: the env at {self.url} does not honour seeds (the same seed gave "
            "two different first observations), so a seeded episode would not be reproducible; reset without a seed"
        )


class _RemoteTraceback(OpenEnvGymError):
    """A server's traceback, made the cause of the :class:`RemoteError` that carries it: a printed
    error shows it above its own traceback, as ``concurrent.futures`` shows a worker's, and still
    ends with the one-line reason."""

    def __str__(self) -> str:
        return "\n" + str(self.args[0]).rstrip()


class RemoteError(ClientError):
    """The server answered a call with an error frame; the session stays usable.

    Its text is the server's reason, one line; the server's traceback, when it sent one, is
    :attr:`remote_traceback`, which a printed traceback of this error shows above its own.

    Attributes:
        code: the wire error code, e.g. ``"VALIDATION_ERROR"`` or ``"EXECUTION_ERROR"``.
        message: the server's message.
        details: the remaining fields of the error frame (a remote ``traceback`` among them).
        env_id: the environment the session runs, when known.
    """

    def __init__(
        self,
        code: str,
        message: str,
        details: dict[str, Any] | None = None,
        env_id: str | None = None,
    ) -> None:
        super().__init__(code, message)
        self.code = code
        self.message = message
        self.details = details or {}
        self.env_id = env_id
        if self.remote_traceback is not None:
            self.__cause__ = _RemoteTraceback(self.remote_traceback)

    @property
    def remote_traceback(self) -> str | None:
        """The server's traceback of the failure, if it sent one."""
        found = self.details.get("traceback")
        return found if isinstance(found, str) and found else None

    def __reduce__(self) -> tuple[Any, ...]:
        # Pickled whole (a Ray actor raises it in another process), not as its arguments alone.
        return type(self), (self.code, self.message, self.details, self.env_id)

    def headline(self) -> str:
        """The first line of the message: what the server said, without its traceback."""
        where = f" in {self.env_id}" if self.env_id else ""
        return f"server error{where}: {self.message} (code: {self.code})"

    def __str__(self) -> str:
        return self.headline()


class RemoteEpisodeEndedError(RemoteError, EpisodeEndedError):
    """The server refused a step because the episode had ended (code ``EPISODE_ENDED``): a vector
    sub-env that ended with autoreset disabled, or a step a client sent past the end it was told of."""


class SnapshotError(RemoteError):
    """A snapshot could not be taken, kept or restored (its ``code`` says why: ``SNAPSHOT_UNKNOWN``,
    an id the server no longer keeps; ``SNAPSHOT_LIMIT``, the session holds as many as allowed;
    ``SNAPSHOT_REFUSED``, portable bytes this server did not seal). The env is as it was."""


class SnapshotRefusedError(OpenEnvGymError, ValueError):
    """Raised by an env's ``restore()`` (on the server) for a state it will not take, before it
    changed anything: one of an env made with other arguments, of another task set... The client
    gets a :class:`SnapshotError` with code ``SNAPSHOT_REFUSED``, and the session goes on as it was."""


class SeatError(OpenEnvGymError, ValueError):
    """A seat in a game that cannot be taken: not an agent of the env, an opponent's, already
    taken, a wrong game token, or a game that is over. Raised on the server as a session opens;
    the client gets an :class:`EnvCreationError` with the same message."""


class GameOverError(OpenEnvGymError, RuntimeError):
    """A game that ended for good (a player left, or overran its turn) was reset again: raised
    on the server; the client's reset gets a :class:`RemoteError` saying why."""


class EpisodeNotEndingError(OpenEnvGymError, RuntimeError):
    """An episode had not ended after the steps a run allows it (``openenv-gym eval``'s
    ``max_steps``): the env has no time limit its policy reaches."""


class SnapshotUnsupportedError(SnapshotError):
    """The env cannot be snapshotted (code ``SNAPSHOT_UNSUPPORTED``); the message says why.

    Raised before anything is sent when the server's ``/schema["snapshot"]`` says so (or says
    nothing: an OpenEnv server), and when a server refuses at the time (a state that cannot be
    copied, such as an env rendering to a window). Never a silently wrong state.
    """


class CapacityReachedError(RemoteError):
    """The server refused a new session because all of its session slots are taken."""


class EnvCreationError(RemoteError):
    """The server could not create the environment (code ``FACTORY_ERROR``).

    The env's own constructor failed, e.g. on bad ``env_kwargs`` or a missing tasks file. The
    message is the server's; a server started for the env reports it at start-up, a running one
    on ``/schema`` or when a session opens.
    """

    def headline(self) -> str:
        where = f" {self.env_id}" if self.env_id else " the environment"
        return f"the server could not create{where}: {self.message}"


class ProviderError(OpenEnvGymError, RuntimeError):
    """A provider could not start, reach or stop an environment server."""


class ServerStartError(ProviderError):
    """A server process exited or did not become healthy in time.

    Attributes:
        command: the command line that was run.
        output: the last lines the server wrote to stderr.
    """

    def __init__(self, message: str, command: list[str], output: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.command = command
        self.output = output

    def __reduce__(self) -> tuple[Any, ...]:
        # Pickled whole (a Ray actor raises it in another process), not as its message alone.
        return type(self), (self.message, self.command, self.output)

    def __str__(self) -> str:
        text = f"{self.message}\ncommand: {' '.join(self.command)}"
        if self.output:
            text += f"\nserver output (last lines):\n{self.output}"
        return text


class DockerUnavailableError(OpenEnvGymError, ConnectionError):
    """No Docker Engine answers (or the docker SDK cannot reach it)."""


class ImageBuildError(OpenEnvGymError):
    """An image could not be built, or is missing and may not be built here."""


class SandboxUnavailableError(OpenEnvGymError):
    """No sandbox mechanism can run here (or the one asked for failed to start)."""


class ManifestError(OpenEnvGymError, ValueError):
    """A manifest that cannot be read or does not validate; the message names the field."""


class HubError(OpenEnvGymError):
    """A manifest could not be pulled (no such repo, revision or file, or offline without a cache)."""


class TrustRemoteCodeError(OpenEnvGymError, PermissionError):
    """Running the env would import code named by a downloaded manifest, and that was not allowed."""
