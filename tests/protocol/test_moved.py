"""What moved out of the protocol package (it holds only the wire) still imports from its old path, with a warning."""

from __future__ import annotations

import importlib
import re

import pytest

import openenv_gym.redaction
import openenv_gym.startup
import openenv_gym.urls

MOVED = [
    (f"openenv_gym.protocol.{new.__name__.rpartition('.')[2]}", new, name)
    for new in (openenv_gym.redaction, openenv_gym.startup, openenv_gym.urls)
    for name in new.__all__
] + [
    ("openenv_gym.protocol.pickled", openenv_gym.startup, name) for name in ("ACCEPT_FLAG", "PICKLED_FACTORIES_TARGET")
]


@pytest.mark.parametrize(("old", "new", "name"), MOVED, ids=[f"{old}.{name}" for old, _, name in MOVED])
def test_a_moved_name_still_imports_from_its_old_module_with_a_warning(old, new, name):
    """``from openenv_gym.protocol.<old> import <name>`` gives the same object, and a DeprecationWarning naming
    its new module."""
    module = importlib.import_module(old)
    with pytest.warns(DeprecationWarning, match=re.escape(f"{old}.{name} is deprecated: it moved to {new.__name__}")):
        value = getattr(module, name)
    assert value is getattr(new, name)


def test_an_unknown_name_of_a_moved_module_is_an_attribute_error():
    """An old module answers only for the names that moved: anything else is an AttributeError, without warning."""
    import openenv_gym.protocol.urls

    with pytest.raises(AttributeError, match=re.escape("module 'openenv_gym.protocol.urls' has no attribute 'nope'")):
        _ = openenv_gym.protocol.urls.nope
