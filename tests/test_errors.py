"""The exception tree: one root for every exception class of the package, and each public one at the top level."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import openenv_gym

# Packages to walk: the installed package, and the three folders mapped into it from the repository root.
PACKAGES = ("openenv_gym", "openenv_gym.envs", "openenv_gym.vector", "openenv_gym.wrappers")
# Top-level names of optional extras; a module that needs a missing one is skipped.
OPTIONAL = {"ray", "stable_baselines3", "rich"}


def package_modules() -> list[str]:
    """Every module under PACKAGES, by name (``__main__`` left out: importing it runs the CLI)."""
    names = set(PACKAGES)
    for package in PACKAGES:
        path = importlib.import_module(package).__path__
        names.update(info.name for info in pkgutil.walk_packages(path, package + "."))
    return sorted(name for name in names if not name.endswith(".__main__"))


def exception_classes() -> dict[str, type[BaseException]]:
    """Every exception class defined in a module of the package, by ``module.qualname``."""
    found = {}
    for name in package_modules():
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if (exc.name or "").split(".")[0] not in OPTIONAL:
                raise
            continue
        for value in vars(module).values():
            if inspect.isclass(value) and issubclass(value, BaseException) and value.__module__ == name:
                found[f"{name}.{value.__qualname__}"] = value
    return found


def test_every_exception_class_derives_from_the_root():
    """Each exception class defined anywhere in the package, private ones too, is an OpenEnvGymError."""
    classes = exception_classes()
    assert "openenv_gym.errors.RemoteError" in classes and "openenv_gym.env_core.ClosedEnvError" in classes
    outside = sorted(name for name, cls in classes.items() if not issubclass(cls, openenv_gym.OpenEnvGymError))
    assert outside == []


def test_every_public_exception_class_is_exported_at_the_top_level():
    """Each public exception class is ``openenv_gym.<Name>``, the same class, and listed in ``__all__``."""
    public = {name: cls for name, cls in exception_classes().items() if not cls.__name__.startswith("_")}
    missing = sorted(name for name, cls in public.items() if getattr(openenv_gym, cls.__name__, None) is not cls)
    assert missing == []
    assert sorted(name for name, cls in public.items() if cls.__name__ not in openenv_gym.__all__) == []


def test_a_servers_error_is_its_one_line_reason_with_the_remote_traceback_apart():
    """An env that cannot be made: the error's text is the server's one-line reason; the server's
    traceback is `remote_traceback`, printed above the local one (as concurrent.futures prints a
    worker's), so a printed error still ends with the reason; a pickled copy keeps both."""
    import pickle
    import traceback

    import gymnasium as gym
    import pytest

    with pytest.raises(openenv_gym.EnvCreationError) as caught:
        gym.make("openenv/CodingTools-v0", tasks="/nonexistent/tasks.jsonl")
    error = caught.value
    reason = "FileNotFoundError: [Errno 2] No such file or directory: '/nonexistent/tasks.jsonl'"
    assert str(error) == f"the server could not create openenv_gym.envs.coding_tools:CodingToolsEnvironment: {reason}"
    assert error.remote_traceback.startswith("Traceback (most recent call last):")
    assert error.remote_traceback.rstrip().endswith(reason)
    printed = "".join(traceback.format_exception(error)).rstrip()
    assert printed.endswith(f"openenv_gym.errors.EnvCreationError: {error}")
    assert printed.index(error.remote_traceback.strip().splitlines()[1]) < printed.index("The above exception")
    copy = pickle.loads(pickle.dumps(error))
    assert (str(copy), copy.remote_traceback) == (str(error), error.remote_traceback)
    assert openenv_gym.RemoteError("EXECUTION_ERROR", "boom").remote_traceback is None
