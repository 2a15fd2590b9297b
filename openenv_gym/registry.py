"""The catalog of ``openenv/...`` environment ids, registered with Gymnasium on ``import openenv_gym``.

Each environment is one :class:`CatalogEntry`: its id, what the server runs, where its spaces
come from, and its time limit. Other installed packages add entries through the entry-point
group ``openenv_gym.envs``: each entry point names a callable returning an iterable of
:class:`CatalogEntry`, e.g. in the package's ``pyproject.toml``::

    [project.entry-points."openenv_gym.envs"]
    my_envs = "my_package.catalog:entries"
"""

from __future__ import annotations

import dataclasses
import importlib.metadata
import importlib.util
import pathlib
import warnings
from collections.abc import Iterable
from typing import Any, NoReturn

__all__ = [
    "ENTRY_POINT_GROUP",
    "CatalogEntry",
    "builtin_entries",
    "catalog",
    "catalog_entry",
    "gymnasium_ids",
    "register",
    "register_plugins",
]

ENTRY_POINT_GROUP = "openenv_gym.envs"
_REMOTE_ENV = "openenv_gym.env:make_remote_env"
_REMOTE_VECTOR_ENV = "openenv_gym.vector:RemoteVectorEnv"
_EXTRA_MISSING = "openenv_gym.registry:extra_missing"

#: Every entry registered so far, by id.
catalog: dict[str, CatalogEntry] = {}


@dataclasses.dataclass(frozen=True)
class CatalogEntry:
    """One environment of the catalog.

    Attributes:
        id: the Gymnasium id, ``"openenv/Name-vN"``.
        server: what the server runs: a Gymnasium id or ``"module:attr"``; ``None`` for an entry
            that attaches to a running server given by ``base_url=`` (``openenv/Remote-v0``).
        spaces: deprecated and ignored (after 0.1.0, December 2026): the client always reads its
            spaces from the server's ``/schema``; still accepted, with a ``DeprecationWarning``, so that
            older catalogs load.
        max_episode_steps: the client-side time limit, ``None`` for none.
        reward_threshold: the return at which the task counts as solved, if any.
        nondeterministic: whether equal seeds may still give different trajectories.
        kwargs: default keyword arguments of ``RemoteEnv`` (``env_kwargs``, timeouts, ...).
        description: one line for listings.
        missing_extra: the extra of openenv-gym the env needs and this installation lacks
            (``"pettingzoo"``): the id is registered all the same, and ``gym.make`` and
            ``make_vec`` of it raise ``gymnasium.error.DependencyNotInstalled`` naming the extra
            to install, without starting a server.
    """

    id: str
    server: str | None
    spaces: dataclasses.InitVar[str | None] = None
    max_episode_steps: int | None = None
    reward_threshold: float | None = None
    nondeterministic: bool = False
    kwargs: dict[str, Any] = dataclasses.field(default_factory=dict)
    description: str = ""
    missing_extra: str | None = None

    def __post_init__(self, spaces: str | None) -> None:
        if spaces is not None:
            warnings.warn(
                "CatalogEntry(spaces=...) is deprecated and ignored: the client reads its spaces from the server",
                DeprecationWarning,
                stacklevel=3,  # the caller of the dataclass's __init__
            )

    @classmethod
    def from_gymnasium(cls, gym_id: str, **overrides: Any) -> CatalogEntry:
        """The remote twin of a registered Gymnasium env, with its time limit and threshold."""
        import gymnasium as gym  # see _gym_register

        spec = gym.spec(gym_id)
        fields: dict[str, Any] = {
            "id": f"openenv/{gym_id}",
            "server": gym_id,
            "max_episode_steps": spec.max_episode_steps,
            "reward_threshold": spec.reward_threshold,
            "nondeterministic": spec.nondeterministic,
            "description": f"Gymnasium's {gym_id}, served in a separate process",
        }
        fields.update(overrides)
        return cls(**fields)


#: Gymnasium's own families of envs, by the module their entry points live in, and the package each
#: needs to make its envs (``None``: Gymnasium's own dependencies).
_GYMNASIUM_FAMILIES = {
    "gymnasium.envs.classic_control.": None,
    "gymnasium.envs.toy_text.": None,
    "gymnasium.envs.box2d.": "Box2D",
    "gymnasium.envs.mujoco.": "mujoco",
}


def gymnasium_ids() -> list[str]:
    """The ids of Gymnasium's own registry whose envs can be made here: classic control and toy text
    always, Box2D and MuJoCo when their package is installed (looked up, not imported: importing
    Box2D is slow and warns). Each has its ``openenv/`` twin in the catalog."""
    import gymnasium as gym  # see _gym_register

    installed = {
        family: package is None or importlib.util.find_spec(package) is not None
        for family, package in _GYMNASIUM_FAMILIES.items()
    }
    return [
        env_id
        for env_id, spec in gym.registry.items()
        if spec.namespace is None
        and isinstance(spec.entry_point, str)
        and any(spec.entry_point.startswith(family) and found for family, found in installed.items())
    ]


def ale_games() -> list[str]:
    """The names of ale-py's single-player games (``"Pong"``, ``"SpaceInvaders"``), read from the
    ROMs it ships without importing it; empty when ale-py is not installed."""
    found = importlib.util.find_spec("ale_py")
    if found is None or not found.submodule_search_locations:
        return []
    roms = pathlib.Path(next(iter(found.submodule_search_locations)), "roms")
    # ale-py registers no v5 env for these: they have no single-player ROM.
    multiplayer = {"combat", "joust", "maze_craze", "warlords"}
    return sorted(rom.stem.title().replace("_", "") for rom in roms.glob("*.bin") if rom.stem not in multiplayer)


def ale_entry(game: str) -> CatalogEntry:
    """``openenv/ALE-<Game>-v5``: ALE's ``ALE/<Game>-v5`` on a server. Gymnasium's ids take one
    namespace, so ``openenv/ALE/<Game>-v5`` cannot be registered."""
    return CatalogEntry(
        id=f"openenv/ALE-{game}-v5",
        server=f"ALE/{game}-v5",
        description=f"ALE's {game} (ale-py), frames as binary arrays; make_vec serves AtariVectorEnv",
    )


#: PettingZoo envs registered by id when PettingZoo is installed: (id, module). Chess is left out:
#: ``openenv/Chess-v0`` is the text game for LLM agents, and Gymnasium takes one name's versions
#: for one env.
_PETTINGZOO = (
    ("openenv/ConnectFour-v3", "classic/connect_four-v3"),
    ("openenv/TicTacToe-v3", "classic/tictactoe-v3"),
    ("openenv/Pistonball-v6", "butterfly/pistonball-v6"),
)


def pettingzoo_entries() -> list[CatalogEntry]:
    """PettingZoo's envs as ids: ``gym.make`` gives one agent's seat against the server's opponents,
    :func:`openenv_gym.pettingzoo.make_aec` and ``make_parallel`` the whole env. Without PettingZoo
    (the ``pettingzoo`` extra), making one says to install the extra."""
    missing = None if importlib.util.find_spec("pettingzoo") is not None else "pettingzoo"
    chess = CatalogEntry(
        id="openenv/Chess-v0",
        server="openenv_gym.envs.chess:ChessEnvironment",
        # No TimeLimit: the game truncates itself after its move limit.
        max_episode_steps=None,
        reward_threshold=1.0,
        description="Chess for a tool-calling agent (make_move, resign, show_board) against the server's "
        "opponent, or another client in a game joined by id",
        missing_extra=missing,
        # A seat's opponents draw the server's randomness, not the seed's (server/game_rules.py).
        nondeterministic=True,
    )
    return [chess] + [
        CatalogEntry(
            id=env_id,
            server=module,
            description=f"PettingZoo's {module}: one agent's seat (gym.make) or every agent "
            "(openenv_gym.pettingzoo.make_aec / make_parallel)",
            missing_extra=missing,
            nondeterministic=True,  # as Chess-v0's: the opponents' draws are the server's
        )
        for env_id, module in _PETTINGZOO
    ]


def builtin_entries() -> list[CatalogEntry]:
    """The environments openenv-gym ships."""
    entries = [
        CatalogEntry(
            id="openenv/Echo-v0",
            server="openenv_gym.envs.echo:EchoEnvironment",
            description="Echoes a message back; the protocol's reference environment",
        ),
        CatalogEntry(
            id="openenv/Coding-v0",
            server="openenv_gym.envs.coding:CodingEnvironment",
            max_episode_steps=8,
            reward_threshold=1.0,
            description="Python function-writing tasks with hidden tests; code runs in a sandbox",
        ),
        CatalogEntry(
            id="openenv/CodingTools-v0",
            server="openenv_gym.envs.coding_tools:CodingToolsEnvironment",
            max_episode_steps=16,  # tool calls; as envs/coding_tools/openenv.yaml says
            reward_threshold=1.0,
            description="The Coding tasks through tools: run_python, run_tests on the examples, submit",
        ),
        CatalogEntry(
            id="openenv/Git-v0",
            server="openenv_gym.envs.git:GitEnvironment",
            # No TimeLimit: the server truncates at each task's turn limit (envs/git/openenv.yaml's max_turns).
            max_episode_steps=None,
            reward_threshold=1.0,
            description="Tasks in a git repository through tools: run a command, read_file, write_file, submit",
        ),
        CatalogEntry(
            id="openenv/Harness-v0",
            server="openenv_gym.envs.harness:HarnessEnvironment",
            # No TimeLimit: each model call is a step, and the server truncates at max_calls.
            max_episode_steps=None,
            reward_threshold=1.0,
            description="The Coding tasks solved by a real coding agent (mini-swe-agent, Codex CLI, Claude Code); each of its model calls is a step",
            nondeterministic=True,  # the agent's own ids, times and process scheduling
        ),
        CatalogEntry(
            id="openenv/ReasoningGym-v0",
            server="openenv_gym.envs.reasoning:ReasoningGymEnvironment",
            # No TimeLimit: an answer terminates the episode (a limit of 1 would truncate it too).
            max_episode_steps=None,
            reward_threshold=1.0,
            description="Questions from reasoning-gym's generators, scored by its verifiers (pip install 'openenv-gym[reasoning]')",
        ),
        CatalogEntry(
            id="openenv/Remote-v0",
            server=None,
            kwargs={"json_schema_fallback": True},
            description="Any running OpenEnv-protocol server: base_url= (make_vec: base_urls=[...] or base_url=)",
        ),
    ]
    entries += [CatalogEntry.from_gymnasium(gym_id) for gym_id in gymnasium_ids()]
    entries += [ale_entry(game) for game in ale_games()]
    entries += pettingzoo_entries()
    return entries


def catalog_entry(name: str) -> CatalogEntry | None:
    """The catalog's entry that ``name`` names: its id (``"openenv/Echo-v0"``) or that id without
    ``openenv/`` (``"Echo-v0"``); ``None`` if none. ``serve`` and ``validate`` resolve ids through this,
    so both run what ``gym.make`` would start a server of."""
    import gymnasium  # noqa: F401 - its import registers the catalog (see _gym_register)

    return catalog.get(name) or catalog.get(f"openenv/{name}")


def register(entry: CatalogEntry) -> None:
    """Add ``entry`` to the catalog and register its id with Gymnasium (replacing an older one)."""
    catalog[entry.id] = entry
    if entry.missing_extra is not None:
        kwargs = {"env_id": entry.id, "extra": entry.missing_extra}
        _gym_register(id=entry.id, entry_point=_EXTRA_MISSING, vector_entry_point=_EXTRA_MISSING, kwargs=kwargs)
        return
    _gym_register(
        id=entry.id,
        entry_point=_REMOTE_ENV,
        vector_entry_point=_REMOTE_VECTOR_ENV,
        max_episode_steps=entry.max_episode_steps,
        reward_threshold=entry.reward_threshold,
        nondeterministic=entry.nondeterministic,
        kwargs={"server": entry.server, **entry.kwargs},
    )


def extra_missing(*, env_id: str, extra: str, **_: Any) -> NoReturn:
    """What ``gym.make`` and ``make_vec`` of an id whose extra is not installed call: an error saying
    which extra to install.

    Raises:
        gymnasium.error.DependencyNotInstalled: always.
    """
    import gymnasium as gym  # see _gym_register

    raise gym.error.DependencyNotInstalled(f"{env_id} needs the {extra} extra: pip install 'openenv-gym[{extra}]'")


def _gym_register(**spec: Any) -> None:
    """``gym.register(**spec)``, replacing an id registered before without a warning."""
    # Imported here, not at the top: gymnasium's first import registers the catalog, which imports
    # this module, so a top-level import would run that hook in a half-initialised registry.
    import gymnasium as gym

    with warnings.catch_warnings():
        # Re-registering the same id (a module reload, a plugin loaded twice) is expected.
        warnings.filterwarnings("ignore", message=".*Overriding environment.*")
        gym.register(**spec)


def register_plugins() -> list[str]:
    """Register the entries of every installed package in the ``openenv_gym.envs`` group.

    A plugin that fails to load is reported with a warning and skipped, so one broken package
    cannot break ``import openenv_gym``. Returns the ids registered.
    """
    registered = []
    for entry_point in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        try:
            entries: Iterable[CatalogEntry] = entry_point.load()()
            for entry in entries:
                register(entry)
                registered.append(entry.id)
        except Exception as exc:  # a broken third-party plugin must not break our import
            warnings.warn(
                f"openenv-gym: skipping env plugin {entry_point.name!r} ({entry_point.value}): "
                f"{type(exc).__name__}: {exc}",
                RuntimeWarning,
                stacklevel=2,
            )
    return registered


HUB_ID = "openenv/Hub-v0"


def register_hub_id() -> None:
    """Register ``openenv/Hub-v0``: ``gym.make(HUB_ID, repo_id="org/name")`` makes a Hub manifest's env."""
    _gym_register(
        id=HUB_ID, entry_point="openenv_gym.hub:make_hub_env", vector_entry_point="openenv_gym.hub:make_hub_vector_env"
    )
