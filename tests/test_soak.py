"""The short soak: ``benchmarks/soak.py``'s load, for under a minute, over real servers.

Every kind of session (plain and vector CartPole, Coding-v0 steps, CodingTools and Echo tool
calls, MCP frames) runs with resets and reconnects; then no client call may have failed, and once
the sessions are closed every server's open fds, threads and child processes must come back
exactly to what they were before the load (after a warm-up burst of every kind). RSS only may
stay a little above: memory a process freed is not always handed back to the kernel (pymalloc's
arenas, glibc's heap), so it gets :data:`RSS_TOLERANCE_MIB`. The long run (30 minutes and more,
the slopes) is the benchmark's.
"""

from __future__ import annotations

import sys

import pytest

from tests.utils import REPO_ROOT

# benchmarks/ is not a package: its scripts import their helpers (servers.py) by bare name.
sys.path.insert(0, str(REPO_ROOT / "benchmarks"))
import soak

#: RSS a server may keep above its baseline after the short load (MiB).
RSS_TOLERANCE_MIB = 24.0


@pytest.mark.slow
def test_short_soak_returns_to_baseline():
    report = soak.run_soak(sessions=24, duration=30.0, interval=2.0, warmup=10.0, pace=0.5, seed=1)
    assert report.total_errors == 0, report.error_messages
    steps = {kind: report.actions.get(f"{kind} step", 0) for kind in soak.KINDS}
    assert all(steps.values()), steps  # every kind did act
    for server, baseline in report.baseline.items():
        final = report.final[server]
        for metric in soak.COUNTS:
            assert final[metric] == baseline[metric], (server, metric, baseline, final)
        assert final["rss_mib"] <= baseline["rss_mib"] + RSS_TOLERANCE_MIB, (server, baseline, final)
    assert report.settled
    # The load was there: during it each server held sessions (fds) and the sandboxes their workers.
    for server in soak.TARGETS:
        assert report.slopes[server]["fds"]["mean"] > report.baseline[server]["fds"], server
    for server in ("coding", "tools"):
        assert report.slopes[server]["children"]["mean"] > 0, server


def test_plan_splits_the_sessions():
    plan = soak.plan(256)
    assert sum(plan.sessions.values()) == 256
    assert plan.sessions == {"cartpole": 96, "vector": 16, "coding": 32, "tools": 32, "echo": 48, "mcp": 32}
    assert plan.max_sessions["cartpole"] >= 96 + 16 * soak.VECTOR_ENVS
    small = soak.plan(len(soak.KINDS))
    assert set(small.sessions.values()) == {1}
    with pytest.raises(ValueError, match="at least 6"):
        soak.plan(5)


def test_slope_is_least_squares():
    assert soak.slope([(0, 1), (1, 3), (2, 5)]) == pytest.approx(2.0)
    assert soak.slope([(0, 4), (1, 4), (2, 4)]) == 0.0
    assert soak.slope([(1, 4)]) == 0.0
    assert soak.slope([(1, 4), (1, 5)]) == 0.0
