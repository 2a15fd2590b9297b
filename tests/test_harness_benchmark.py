"""``benchmarks/harness.py --quick`` runs and prints its figures: the cost per model call against
the echo reference, mini-swe-agent's start-up and the concurrency table (figures only: no timing is
asserted)."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from tests.utils import REPO_ROOT, UNIT

pytest.importorskip("minisweagent", reason="mini-swe-agent is the test extra's harness")


@pytest.mark.slow
def test_the_quick_run_prints_every_figure():
    done = subprocess.run(
        [sys.executable, "benchmarks/harness.py", "--quick"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=600 * UNIT,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    out = done.stdout
    assert re.search(r"^round 1: agent-seen ms: echo p50 [\d.]+, env \(none\) p50 [\d.]+", out, re.M), out
    assert re.search(r"^  bare loopback echo server\s+[\d.]+\s+[\d.]+\s+20  reference$", out, re.M), out
    assert re.search(r"^ratio env \(none\) / echo, agent-seen: p50 [\d.]+x", out, re.M), out
    assert re.search(r"^target: .* p50 <= 5 ms -> [\d.]+ ms, (met|NOT met)$", out, re.M), out
    assert re.search(r"^  agent sandbox none\s+[\d.]+\s+[\d.]+\s+1$", out, re.M), out  # the start-up
    rows = re.findall(r"^\s+(\d+)\s+([\d.]+)\s+[\d.]+\s+([\d.]+)\s+[\d.]+\s+[\d.]+\s+\d+$", out, re.M)
    assert [n for n, *_ in rows][:1] == ["1"] and all(float(rss) > 0 for _, rss, _ in rows), out
