"""`ServerOptions`: every option of a server, declared once with its default, help and rule.

`EnvServer`'s keyword arguments, :func:`~openenv_gym.server.runner.run`'s and ``openenv-gym serve``'s
flags are all derived from the fields below: adding an option is adding a field. A rule a value
must follow (:class:`Check`) and the rules between options (:meth:`ServerOptions.problem`) are
written once and worded for the surface that reports them (:data:`PYTHON`, :data:`COMMAND_LINE`).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from typing import Any

from ..urls import is_loopback_host
from .exposure import exposure_problem

__all__ = ["COMMAND_LINE", "PYTHON", "Check", "OptionSpec", "ServerOptions", "ServerTimeouts", "Spelling"]

DEFAULT_MAX_FRAME_BYTES = 16 * 2**20
DEFAULT_IDLE_TIMEOUT = 300.0
DEFAULT_HANDSHAKE_TIMEOUT = 10.0
DEFAULT_SEND_TIMEOUT = 30.0
DEFAULT_MAX_SNAPSHOTS = 1024
DEFAULT_MAX_SNAPSHOT_BYTES = 256 * 2**20
DEFAULT_MAX_SERVER_SNAPSHOT_BYTES = 2**30
DEFAULT_TURN_TIMEOUT = 60.0


@dataclasses.dataclass(frozen=True)
class Check:
    """A rule a value must follow, in the words of Python (``rule``) and of the command line (``expected``).

    ``None`` passes when ``none_ok`` (and the command line then reads ``none``), or when the
    option's default is ``None`` (the option then decides by itself).
    """

    rule: str
    expected: str
    test: Callable[[Any], bool]
    parse: Callable[[str], Any]
    none_ok: bool = False

    def problem(self, name: str, value: Any, default: Any) -> str | None:
        """Why ``value`` is not a valid ``name``, in Python's words, or ``None``."""
        if value is None and (self.none_ok or default is None):
            return None
        try:
            good = value is not None and self.test(value)
        except TypeError:
            good = False
        return None if good else f"{name} {self.rule}, got {value!r}"

    def argument(self, text: str) -> Any:
        """Parse a command-line value (argparse's ``type=``), refusing what the rule refuses."""
        import argparse

        if self.none_ok and text.lower() == "none":
            return None
        try:
            value = self.parse(text)
            good = self.test(value)
        except ValueError:
            good = False
        if not good:
            raise argparse.ArgumentTypeError(f"expected {self.expected}, got {text!r}")
        return value


AT_LEAST_ONE = Check("must be at least 1", "a whole number of at least 1", lambda value: value >= 1, int)
SECONDS = Check("must be positive", "a positive number of seconds", lambda value: 0 < value < math.inf, float)
SECONDS_OR_NONE = dataclasses.replace(
    SECONDS, rule="must be positive or None", expected="a positive number of seconds or 'none'", none_ok=True
)

HTTP_URL = Check(
    "must be an http:// or https:// URL",
    "an http:// or https:// URL",
    lambda value: value.startswith(("http://", "https://")),
    str,
)


@dataclasses.dataclass(frozen=True)
class OptionSpec:
    """How an option is told: its help, its rule, and whether ``openenv-gym serve`` has a flag for it."""

    help: str
    check: Check | None = None
    flag: bool = True
    metavar: str | None = None


def option(
    default: Any, help: str, check: Check | None = None, *, flag: bool = True, metavar: str | None = None
) -> Any:
    """A field of :class:`ServerOptions`: its default and its :class:`OptionSpec`."""
    return dataclasses.field(default=default, metadata={"option": OptionSpec(help, check, flag, metavar)})


@dataclasses.dataclass(frozen=True)
class Spelling:
    """How a rule between options names them: as ``EnvServer``'s arguments or as ``serve``'s flags."""

    cli: bool

    def name(self, option: str) -> str:
        return f"--{option.replace('_', '-')}" if self.cli else option

    @property
    def token(self) -> str:
        return "--token-env VAR" if self.cli else "a token"


PYTHON = Spelling(cli=False)
COMMAND_LINE = Spelling(cli=True)


@dataclasses.dataclass(frozen=True)
class ServerTimeouts:
    """The server's timeouts, in seconds (``None``: never): what :class:`ServerOptions` sets."""

    idle: float | None = DEFAULT_IDLE_TIMEOUT
    handshake: float = DEFAULT_HANDSHAKE_TIMEOUT
    send: float | None = DEFAULT_SEND_TIMEOUT


@dataclasses.dataclass(frozen=True)
class ServerOptions:
    """The options of :class:`~openenv_gym.server.EnvServer` (its keyword arguments).

    Each field's help is the ``serve`` flag's help too; see ``EnvServer`` for what they do together.
    """

    host: str = option("127.0.0.1", "address to bind (default: loopback only)")
    port: int = option(8000, "port to bind; 0 picks a free one (default: 8000)")
    unix_socket: str | None = option(None, "listen on this Unix socket instead of --host/--port", metavar="PATH")
    # The command line reads the token from a variable (--token-env), never from its arguments.
    token: str | None = option(None, "the token every request but /health must carry", flag=False)
    insecure: bool = option(
        False,
        "bind beyond loopback without a token (with a warning): anyone who reaches the port can run "
        "the env; only for networks that admit trusted peers alone",
    )
    accept_pickled_factories: bool = option(
        False,
        "also make batch sessions' sub-envs from factories the client sends pickled "
        "(RemoteVectorEnv.from_env_fns); unpickling runs the client's code, so this needs --token-env",
    )
    max_sessions: int | None = option(None, "sessions served at once", AT_LEAST_ONE)
    idle_timeout: float | None = option(
        DEFAULT_IDLE_TIMEOUT,
        f"seconds before an idle session is closed, or none (default: {DEFAULT_IDLE_TIMEOUT:g})",
        SECONDS_OR_NONE,
    )
    max_frame_bytes: int = option(DEFAULT_MAX_FRAME_BYTES, "largest frame accepted (default: 16 MiB)", AT_LEAST_ONE)
    max_connections: int | None = option(
        None,
        "TCP connections held at once, handshakes and sessions alike; more get HTTP 503 "
        "(default: 4096, or half of ulimit -n when lower)",
        AT_LEAST_ONE,
    )
    handshake_timeout: float = option(
        DEFAULT_HANDSHAKE_TIMEOUT,
        "seconds a connection has to send its whole request (a WebSocket handshake's, or an HTTP body) "
        f"(default: {DEFAULT_HANDSHAKE_TIMEOUT:g})",
        SECONDS,
    )
    send_timeout: float | None = option(
        DEFAULT_SEND_TIMEOUT,
        "seconds a reply may wait for the client to read it before the session is dropped, or none "
        f"(default: {DEFAULT_SEND_TIMEOUT:g})",
        SECONDS_OR_NONE,
    )
    max_snapshots: int = option(
        DEFAULT_MAX_SNAPSHOTS,
        f"snapshots one session may hold at once (default: {DEFAULT_MAX_SNAPSHOTS})",
        AT_LEAST_ONE,
    )
    max_snapshot_bytes: int = option(
        DEFAULT_MAX_SNAPSHOT_BYTES,
        "bytes of snapshots one session may hold at once, the observation kept with each counted (default: 256 MiB)",
        AT_LEAST_ONE,
    )
    max_server_snapshot_bytes: int = option(
        DEFAULT_MAX_SERVER_SNAPSHOT_BYTES,
        "bytes of snapshots all sessions together may hold at once, counted as above (default: 1 GiB)",
        AT_LEAST_ONE,
    )
    # Read from OPENENV_GYM_SNAPSHOT_KEY when not given, never from the command line (which ps shows).
    snapshot_key: str | None = option(
        None,
        "the key portable snapshots are sealed with; servers sharing it restore each other's (default: "
        "$OPENENV_GYM_SNAPSHOT_KEY, else a random key of this process)",
        flag=False,
    )
    send_tracebacks: bool | None = option(None, "send server-side tracebacks in EXECUTION_ERROR frames", flag=False)
    # The command line's TARGET is a positional argument (and what it loads), not a flag.
    target: str | None = option(None, "what the server serves, published in /metadata", flag=False)
    web: bool | None = option(
        None, "serve the web debug page at /web (default: on when bound to loopback, off beyond it)"
    )
    # PettingZoo envs: the games that /ws sessions join (openenv_gym.server.games).
    turn_timeout: float = option(
        DEFAULT_TURN_TIMEOUT,
        "PettingZoo envs: seconds a game waits for a player's turn (or its reset) before the game "
        f"ends for everyone in it (default: {DEFAULT_TURN_TIMEOUT:g})",
        SECONDS,
    )
    opponents: str | None = option(
        None,
        "PettingZoo envs: named opponents for seats no client takes, besides 'random' "
        "(each a function policy(observation, agent, action_space) -> action)",
        metavar="NAME=MODULE:FN[,...]",
    )
    default_opponent: str = option(
        "random", "PettingZoo envs: the opponent of a private game's other seats (default: random)"
    )
    # Task envs (openenv_gym.server.task_sets): who resets picks the task, within what the operator serves.
    task_splits: str | None = option(
        None,
        "task envs: the only splits a client may reset to, comma-separated (default: all); a reset "
        "to another is refused, and /schema names the others without their task ids",
        metavar="SPLIT[,...]",
    )
    # Harness envs (envs/harness): OpenEnv's turn-based /harness socket asks this model each agent call.
    harness_model_url: str | None = option(
        None,
        "harness envs: serve OpenEnv's turn-based /harness socket, each of the agent's model calls "
        "answered by this OpenAI-compatible API (its base URL, with /v1)",
        HTTP_URL,
        metavar="URL",
    )
    harness_model: str | None = option(
        None, "harness envs: the model /harness's requests name (default: the one the agent names)", metavar="NAME"
    )
    # Read from OPENENV_GYM_HARNESS_MODEL_KEY when not given, never from the command line (which ps shows).
    harness_model_key: str | None = option(
        None, "the bearer token of --harness-model-url (default: $OPENENV_GYM_HARNESS_MODEL_KEY)", flag=False
    )

    @property
    def local(self) -> bool:
        """Whether only this machine can connect: loopback or a Unix socket."""
        return self.unix_socket is not None or is_loopback_host(self.host)

    @property
    def timeouts(self) -> ServerTimeouts:
        return ServerTimeouts(self.idle_timeout, self.handshake_timeout, self.send_timeout)

    @property
    def opponent_targets(self) -> dict[str, str]:
        """:attr:`opponents` as ``{name: "module:fn"}``.

        Raises:
            ValueError: an entry that is not ``NAME=module:fn``.
        """
        found: dict[str, str] = {}
        for entry in filter(None, (self.opponents or "").split(",")):
            name, sep, target = entry.strip().partition("=")
            if not sep or not name or ":" not in target:
                raise ValueError(f"opponents entry {entry!r}: expected NAME=module:function")
            found[name] = target
        return found

    @property
    def served_splits(self) -> tuple[str, ...] | None:
        """:attr:`task_splits` as names (``None``: every split is served)."""
        if self.task_splits is None:
            return None
        return tuple(name.strip() for name in self.task_splits.split(","))

    def problem(self, spelling: Spelling = PYTHON) -> str | None:
        """What is wrong with these options, alone or together, worded in ``spelling``; or ``None``."""
        for field in dataclasses.fields(self):
            check = field.metadata["option"].check
            found = check and check.problem(spelling.name(field.name), getattr(self, field.name), field.default)
            if found:
                return found
        if self.token is not None and not self.token:
            return "token must not be empty"
        try:
            _ = self.opponent_targets
        except ValueError as exc:
            return str(exc)
        if self.served_splits is not None and not all(self.served_splits):
            return f"{spelling.name('task_splits')} must name splits, comma-separated, got {self.task_splits!r}"
        if self.web and not self.local and self.token is None:
            web = f"{spelling.name('web')} on {self.host}" if spelling.cli else "web=True beyond loopback"
            return f"{web} needs {spelling.token}: any page a browser visits could reach the server otherwise"
        exposed = exposure_problem(
            None if self.unix_socket is not None else self.host, self.token is not None, self.insecure, cli=spelling.cli
        )
        if exposed is not None:
            return exposed
        if self.accept_pickled_factories and self.token is None:
            return (
                f"{spelling.name('accept_pickled_factories')} needs {spelling.token}: unpickling runs whatever "
                "code a client sends, so only clients holding the token may send it"
            )
        return None

    def check(self) -> None:
        """Raise what :meth:`problem` finds.

        Raises:
            ValueError: an option out of its range, or options that do not go together.
        """
        found = self.problem(PYTHON)
        if found is not None:
            raise ValueError(found)

    @classmethod
    def flags(cls) -> list[tuple[str, dict[str, Any]]]:
        """``serve``'s flags: each option's name and ``argparse.add_argument`` keywords."""
        import argparse

        found = []
        for field in dataclasses.fields(cls):
            spec: OptionSpec = field.metadata["option"]
            if not spec.flag:
                continue
            keywords: dict[str, Any] = {"default": field.default, "help": spec.help}
            if isinstance(field.default, bool):
                keywords["action"] = "store_true"
            elif field.type == "bool | None":
                keywords["action"] = argparse.BooleanOptionalAction
            else:
                keywords["type"] = spec.check.argument if spec.check else type(field.default or "")
            if spec.metavar:
                keywords["metavar"] = spec.metavar
            found.append((f"--{field.name.replace('_', '-')}", keywords))
        return found

    @classmethod
    def from_arguments(cls, arguments: Any, **more: Any) -> ServerOptions:
        """The options of parsed ``serve`` arguments (an ``argparse.Namespace``), with ``more`` besides."""
        names = [field.name for field in dataclasses.fields(cls) if field.metadata["option"].flag]
        return cls(**{name: getattr(arguments, name) for name in names}, **more)
