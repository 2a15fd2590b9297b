"""Work deferred until something is imported: module attributes resolved on first use (PEP 562: a
package's lazy re-exports, names that moved away) and `call_after_import`, which runs a callback
once a module has been imported, without importing it.

``import openenv_gym`` must register its ids with Gymnasium, but a server process that hosts a
non-Gymnasium environment should not pay for importing gymnasium and numpy (about 30 MB and
0.2 s). So registration waits for whoever imports gymnasium first: at once if that already
happened, otherwise right after gymnasium's own ``__init__`` has run.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import types
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

__all__ = ["call_after_import", "lazy_exports", "moved_names"]


def lazy_exports(package: str, exports: Mapping[str, str]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """A package's module ``__getattr__`` and ``__dir__``: each name in ``exports`` imports from its module
    (relative to ``package``, e.g. ``".frames"``) on first use, and a submodule not imported yet imports
    when it is first read as an attribute, as it would have if the package had imported it.

    Example::

        __getattr__, __dir__ = lazy_exports(__name__, {"ErrorFrame": ".frames"})
    """

    def __getattr__(name: str) -> Any:
        if name in exports:
            value = getattr(importlib.import_module(exports[name], package), name)
        elif not name.startswith("__") and importlib.util.find_spec(f"{package}.{name}") is not None:
            value = importlib.import_module(f"{package}.{name}")
        else:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        setattr(sys.modules[package], name, value)  # the next read is a plain attribute
        return value

    def __dir__() -> list[str]:
        return sorted(set(vars(sys.modules[package])) | set(exports))

    return __getattr__, __dir__


def moved_names(old: str, new: str, names: Iterable[str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` for names that moved from module ``old`` to module ``new``: each still
    resolves to the same object, with a ``DeprecationWarning`` that names its new home.

    Example::

        __getattr__ = moved_names(__name__, "openenv_gym.urls", ["ws_url"])
    """
    moved = frozenset(names)

    def __getattr__(name: str) -> Any:
        if name not in moved:
            raise AttributeError(f"module {old!r} has no attribute {name!r}")
        warnings.warn(
            f"{old}.{name} is deprecated: it moved to {new}.{name} (after 0.1.0, December 2026)",
            DeprecationWarning,
            stacklevel=2,
        )
        return getattr(importlib.import_module(new), name)

    return __getattr__


def call_after_import(module_name: str, callback: Callable[[], None]) -> None:
    """Call ``callback`` now if ``module_name`` is imported, else right after its first import."""
    if module_name in sys.modules:
        callback()
    else:
        sys.meta_path.insert(0, _AfterImportFinder(module_name, callback))


class _AfterImportFinder(importlib.abc.MetaPathFinder):
    """Finds nothing itself; wraps the real loader of one module so the callback follows it.

    It stays on ``sys.meta_path`` until the module is really executed: a mere lookup
    (``importlib.util.find_spec("gymnasium")`` to test availability) must not use it up.
    """

    def __init__(self, module_name: str, callback: Callable[[], None]) -> None:
        self.module_name = module_name
        self.callback = callback

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: types.ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != self.module_name:
            return None
        # Ask the other finders (without us, or we would recurse) for the real spec.
        index = sys.meta_path.index(self)
        del sys.meta_path[index]
        try:
            spec = importlib.util.find_spec(fullname)
        finally:
            sys.meta_path.insert(index, self)
        if spec is not None and spec.loader is not None:
            spec.loader = _CallbackLoader(spec.loader, self)
        return spec

    def fire(self) -> None:
        """The module ran: leave ``sys.meta_path`` and call back, once."""
        if self in sys.meta_path:
            sys.meta_path.remove(self)
            self.callback()


class _CallbackLoader(importlib.abc.Loader):
    """Delegates to the real loader, restores it on the module, then fires the finder."""

    def __init__(self, loader: importlib.abc.Loader, finder: _AfterImportFinder) -> None:
        self.loader = loader
        self.finder = finder

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType | None:
        return self.loader.create_module(spec)

    def exec_module(self, module: types.ModuleType) -> None:
        # The module must not keep our wrapper as its loader (resource readers ask for it).
        module.__loader__ = self.loader
        if module.__spec__ is not None:
            module.__spec__.loader = self.loader
        self.loader.exec_module(module)
        self.finder.fire()
