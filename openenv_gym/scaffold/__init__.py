"""`openenv-gym init`: a new env package, written from the templates in ``templates/``, that works at once.

:func:`init_env` renders one variant with :class:`string.Template` (``$name`` placeholders; a
``__module__`` part of a path is the package's name, a ``dot-`` prefix a leading dot):

- ``plain``: an :class:`~openenv_gym.server.Environment` with an action and an observation model,
  Gymnasium spaces, a reward, a time limit and seeded resets;
- ``tools``: an env driven by ``@tool`` methods, with a ``submit`` tool that ends the episode.

Both come with the files ``common/`` holds: ``pyproject.toml`` (the package, its test extra and
its entry point in openenv-gym's catalog), ``README.md``, ``Dockerfile`` (on openenv-gym's runtime
image, as ``envs/echo``'s), ``.gitignore``, and the manifest and tests of the variant. The tests
run Gymnasium's ``check_env`` on the served env and check that equal seeds give equal episodes.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import keyword
import re
import string
import sys
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path

__all__ = ["VARIANTS", "EnvNames", "init_env"]

#: The kinds of env ``init`` writes: ``--tools`` picks ``tools``.
VARIANTS = ("plain", "tools")
#: What the package's ``test`` extra holds: the runner of its tests.
TEST_REQUIREMENT = "pytest>=8"

_NAME = re.compile(r"^[a-z][a-z0-9_-]*$")
# Package names that would shadow what the env itself imports, or the test tree's own.
_TAKEN = frozenset({"openenv_gym", "openenv", "gymnasium", "gym", "pydantic", "numpy", "tests", "test"})

# What differs between the variants, beyond their own templates.
_VARIANT_VALUES = {
    "plain": {
        "description": "Walk along a line to a goal",
        "max_episode_steps": "20",
        "goal_reward": "1.0",
        "step_reward": "-0.01",
        "spaces_note": " and its Gymnasium spaces",
        "tests_note": ", the reward and the time limit",
        "about": "Each step moves a walker one cell left (action 0) or right (action 1) along a line; reaching "
        "the goal ends the episode with reward 1.0, every other step costs 0.01, and 20 steps truncate "
        "it. `reset(seed=...)` makes an episode repeatable. Change the models, the spaces and `step` to "
        "make it your env; the tests say what still holds.",
        "example_step": "obs, reward, terminated, truncated, info = env.step(1)  # one cell right",
    },
    "tools": {
        "description": "Find a secret number with tools",
        "max_episode_steps": "10",
        "correct_reward": "1.0",
        "spaces_note": " and its `@tool` methods",
        "tests_note": ", tool calls and the turn limit",
        "about": "Each episode plays a task of a task set: a secret number from 1 to 20, 100 or 500 (easy, medium, "
        "hard). The agent calls tools: `compare(number)` "
        "says whether the secret is higher, lower or equal, and `submit(answer)` ends the episode with "
        "reward 1.0 when it is right; 10 calls truncate it. `reset(seed=...)` makes an episode "
        "repeatable; the task set has openenv-gym's task API: `openenv_gym.tasks(env)` lists it, "
        '`reset(options={"task_id": ...})` or `{"split": "test", "index": 0}` picks a task, and `tasks=` '
        "gives the env a set of your own. Through Gymnasium, an action is one tool call as JSON text and an observation the "
        "tool's result; `info[\"tools\"]` lists the tools in OpenAI's format. Add `@tool` methods to make "
        "it your env; the tests say what still holds.",
        "example_step": "text, reward, terminated, truncated, info = env.step("
        '\'{"name": "compare", "arguments": {"number": 50}}\')',
    },
}


@dataclasses.dataclass(frozen=True)
class EnvNames:
    """The names a new env goes by, all made from the one ``openenv-gym init`` is given.

    Attributes:
        name: the distribution's and the manifest's name (``my-env``).
        module: the Python package (``my_env``).
        prefix: the classes' prefix (``My``: a trailing ``_env`` is dropped, so ``my_env`` gives ``My``
            and the classes are ``MyEnvironment``, ``MyAction``, ``MyObservation``).
        gym_id: the Gymnasium id, in the package's own namespace (``my_env/My-v0``).
    """

    name: str
    module: str
    prefix: str
    gym_id: str

    @classmethod
    def of(cls, name: str) -> EnvNames:
        """The names made from ``name``.

        Raises:
            ValueError: ``name`` is not lowercase letters, digits, ``-`` and ``_`` starting with a
                letter, or its package would be a Python keyword or shadow a module it imports.
        """
        if not _NAME.match(name):
            suggestion = re.sub(r"[^a-z0-9_-]+", "_", name.lower()).strip("_-")
            hint = f" (e.g. {suggestion!r})" if suggestion and _NAME.match(suggestion) else ""
            raise ValueError(
                f"{name!r} is not an env name: use lowercase letters, digits, '-' and '_', starting with a letter{hint}"
            )
        module = name.replace("-", "_")
        # An installed module of that name would be shadowed by the package wherever it is imported from.
        installed = module in sys.stdlib_module_names or importlib.util.find_spec(module) is not None
        if keyword.iskeyword(module) or module in _TAKEN or installed:
            raise ValueError(
                f"{name!r} would make a package {module!r} that shadows a module of that name; choose another name"
            )
        stem = module[: -len("_env")] if module.endswith("_env") and len(module) > len("_env") else module
        prefix = "".join(part.capitalize() for part in stem.split("_") if part)
        return cls(name, module, prefix, f"{module}/{prefix}-v0")


def init_env(name: str, directory: str | Path | None = None, *, tools: bool = False) -> list[Path]:
    """Write a new env package called ``name`` into ``directory`` (default: ``./name``).

    Args:
        name: the env's name (see :meth:`EnvNames.of`).
        directory: where to write it; it must not exist, or be empty.
        tools: write the tool env (``@tool`` methods and a ``submit`` tool) instead of the plain one.

    Returns:
        The files written, sorted.

    Raises:
        ValueError: a bad name, or a directory that is not empty (or is a file).
    """
    names = EnvNames.of(name)
    target = Path(directory) if directory is not None else Path(name)
    if target.is_file() or (target.is_dir() and any(target.iterdir())):
        what = "a file" if target.is_file() else "a directory that is not empty"
        raise ValueError(f"{target} is {what}: init writes a new env into a new or empty directory (--dir PATH)")
    values = _values(names, "tools" if tools else "plain")
    rendered: dict[Path, str] = {}
    for variant in ("common", values["variant"]):
        for relative, template in _templates(resources.files(__name__) / "templates" / variant):
            text = template.read_text(encoding="utf-8")
            try:
                rendered[target / _destination(relative, names.module)] = string.Template(text).substitute(values)
            except (KeyError, ValueError) as exc:  # a template error of ours, named with its file
                raise RuntimeError(f"scaffold template {variant}/{'/'.join(relative)} is broken: {exc!r}") from exc
    for path, text in sorted(rendered.items()):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return sorted(rendered)


def next_steps() -> str:
    """What to run in a new env's directory: its tests, then ``validate``; pytest (the test extra)
    installed first when this Python lacks it, as a virtual environment with openenv-gym alone does."""
    install = f"python -m pip install '{TEST_REQUIREMENT}' && " if importlib.util.find_spec("pytest") is None else ""
    return f"{install}python -m pytest && openenv-gym validate ."


def _values(names: EnvNames, variant: str) -> dict[str, str]:
    from .. import __version__

    class_name = f"{names.prefix}Environment"
    return {
        "variant": variant,
        "name": names.name,
        "module": names.module,
        "prefix": names.prefix,
        "gym_id": names.gym_id,
        "class_name": class_name,
        "action_class": f"{names.prefix}Action",
        "observation_class": f"{names.prefix}Observation",
        "app": f"{names.module}.environment:{class_name}",
        "image": f"{names.name}:0.1.0",
        "openenv_gym_version": __version__,
        "test_requirement": TEST_REQUIREMENT,
        "runtime_image": f"openenv-gym/runtime:{__version__}",
        **_VARIANT_VALUES[variant],
    }


def _templates(root: Traversable, parts: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], Traversable]]:
    """Every ``*.tmpl`` file under ``root``, with its path below it."""
    found = []
    for entry in sorted(root.iterdir(), key=lambda entry: entry.name):
        if entry.is_dir():
            found += _templates(entry, (*parts, entry.name))
        elif entry.name.endswith(".tmpl"):
            found.append(((*parts, entry.name), entry))
    return found


def _destination(relative: tuple[str, ...], module: str) -> Path:
    """Where a template's file goes: ``__module__`` is the package, ``dot-`` a leading dot, no ``.tmpl``."""
    parts = [part.replace("__module__", module) for part in relative]
    parts[-1] = parts[-1].removesuffix(".tmpl")
    if parts[-1].startswith("dot-"):
        parts[-1] = "." + parts[-1].removeprefix("dot-")
    return Path(*parts)
