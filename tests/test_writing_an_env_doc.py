"""docs/writing-an-env.md's commands run as written: `init my-env`, then its `serve` line from the new
directory serves the class it names (issue 52, 5: the page named classes `init` does not write).
Its Python snippet runs with the others (tests/test_readme.py)."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from openenv_gym.client import http_get_json
from openenv_gym.startup import READY_PREFIX
from tests.utils import REPO_ROOT, UNIT, stop_process

PAGE = REPO_ROOT / "docs" / "writing-an-env.md"
CONSOLE_SCRIPT = str(Path(sys.executable).with_name("openenv-gym"))


def page_command(verb: str) -> list[str]:
    """The first `openenv-gym VERB ...` line of the page's first bash block, without its comment."""
    (block,) = re.findall(r"^```bash\n(.*?)^```$", PAGE.read_text(), flags=re.S | re.M)[:1]
    line = next(line for line in block.splitlines() if line.startswith(f"openenv-gym {verb} "))
    return shlex.split(line, comments=True)


def test_the_pages_serve_line_serves_what_its_init_line_wrote(tmp_path: Path):
    init = page_command("init")
    made = subprocess.run([CONSOLE_SCRIPT, *init[1:]], cwd=tmp_path, capture_output=True, text=True, timeout=120 * UNIT)
    assert made.returncode == 0, made.stderr
    serve = page_command("serve")
    serve[serve.index("--port") + 1] = "0"  # the page's 8000 may be taken here
    server = subprocess.Popen(
        [CONSOLE_SCRIPT, *serve[1:]], cwd=tmp_path / init[2], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        line = server.stdout.readline()
        if not line.startswith(READY_PREFIX):
            server.wait(30 * UNIT)
            pytest.fail(f"{shlex.join(serve)} did not start: {server.stderr.read()}")
        metadata = http_get_json(line[len(READY_PREFIX) :].split()[0], "/metadata", timeout=10 * UNIT)
        assert metadata["target"] == serve[2]
    finally:
        stop_process(server)
        server.stdout.close()
        server.stderr.close()
