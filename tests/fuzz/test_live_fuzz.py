"""A short live fuzz of each kind of server (``benchmarks/live_fuzz.py`` runs the long one):
real ``openenv-gym serve`` processes, real sockets, mutated frames over many connections."""

from __future__ import annotations

import importlib.util
import pathlib
import sys
from types import ModuleType

import pytest

BENCHMARK = pathlib.Path(__file__).parents[2] / "benchmarks" / "live_fuzz.py"
# The Coding env makes a sandbox per connection and runs each valid step in it: fewer frames.
FRAMES = {"plain": 2000, "batch": 2000, "tool": 2000, "coding": 600}


def _live_fuzz() -> ModuleType:
    """The benchmark module, loaded from its file (benchmarks/ is no package; its folder on
    sys.path would shadow names such as ``vector``)."""
    if "live_fuzz" not in sys.modules:
        spec = importlib.util.spec_from_file_location("live_fuzz", BENCHMARK)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules["live_fuzz"] = module  # dataclasses look their module up by name
        spec.loader.exec_module(module)
    return sys.modules["live_fuzz"]


@pytest.mark.slow
@pytest.mark.parametrize("kind", list(FRAMES))
def test_live_fuzz(kind: str) -> None:
    """Every mutated frame gets an error frame, a reply or a clean close; nothing is stuck, the
    server lives, the well-behaved client beside the fuzz steps without an error, and after it
    the server is healthy, holds no session and leaves no process."""
    live_fuzz = _live_fuzz()
    report = live_fuzz.fuzz_kind(kind, FRAMES[kind], connections=8, seed=1)
    problems = "\n".join([live_fuzz.HEADER, report.row(), *report.bad_closes[:20], *report.good_errors])
    assert report.ok, problems
    assert report.frames >= FRAMES[kind]
    assert report.error_frames > 0 and report.replies > 0 and report.closes, problems
    assert set(report.mutations) == {name for name, _ in live_fuzz.Mutator._mutations}, report.mutations
    assert report.good_steps > 0
