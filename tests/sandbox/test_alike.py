"""A sandbox alike another (`Sandbox.alike`): the kind its `SpareKey` names, one construction for a fresh
sandbox and a spare alike."""

from __future__ import annotations

import os
import sqlite3

from openenv_gym.sandbox import Limits, Sandbox
from openenv_gym.sandbox.fresh import FreshSandbox
from openenv_gym.sandbox.spares import SpareKey
from tests.utils import UNIT


def model() -> Sandbox:
    """A sandbox whose every option differs from the default."""
    return Sandbox(
        Limits(wall_time=5 * UNIT, output_limit=4321),
        hidden_paths=[os.path.dirname(sqlite3.__file__)],  # a package no worker needs
        startup_timeout=17 * UNIT,
        workspace=True,
        ipc_objects=True,
    )


def test_every_sandbox_keeps_its_kind():
    """Every sandbox holds its `SpareKey` (spares or not): its mechanism, interpreter, limits, hidden paths,
    workspace and IPC rule."""
    like = model()
    assert like.key == SpareKey(
        "bubblewrap", like.python, like.limits, tuple(like.hidden_paths), workspace=True, ipc_objects=True
    )


def test_a_sandbox_alike_is_of_its_kind_with_no_worker_yet():
    like = model()
    other = like.alike()
    assert other is not like and other.key == like.key
    assert other.startup_timeout == like.startup_timeout
    assert other.pid is None and other._spares is None  # no worker, no spares of its own


def test_a_fresh_sandbox_is_alike_with_a_worker_of_its_own():
    like = model()
    with like, FreshSandbox(like) as fresh:
        box = fresh.ready()
        assert box.key == like.key and box.startup_timeout == like.startup_timeout
        assert box.pid is not None and box.pid != like.pid
        assert box.run("print(1)").stdout == "1\n"
