"""The coverage-guided fuzz target: its seed corpus, the inputs it once crashed on, and a short
run of libFuzzer over the corpus (CI's share of ``make fuzz``)."""

from __future__ import annotations

import pathlib
import re
import subprocess
import sys

import pytest

from .make_corpus import CORPUS, write_corpus
from .wire_properties import TARGETS, one_input

HERE = pathlib.Path(__file__).parent
REPO_ROOT = HERE.parent.parent
REGRESSIONS = HERE / "regressions"
RUNS = 20_000


def _files(folder: pathlib.Path) -> list[pathlib.Path]:
    return sorted(path for path in folder.iterdir() if path.is_file())


def test_corpus_is_what_make_corpus_writes(tmp_path: pathlib.Path) -> None:
    written = tmp_path / "corpus"
    write_corpus(written, reference=None)  # the wire reference's frames come on top, when it is here
    for path in _files(written):
        assert (CORPUS / path.name).read_bytes() == path.read_bytes(), f"rerun make_corpus: {path.name} changed"
    names = {path.name.rsplit("-", 1)[0] for path in _files(CORPUS)}
    assert names == {target.__name__ for target in TARGETS}  # every parser has seeds


@pytest.mark.parametrize("path", _files(REGRESSIONS) + _files(CORPUS), ids=lambda path: path.name)
def test_input_keeps_the_property(path: pathlib.Path) -> None:
    """Each input the fuzzer once crashed on (``regressions/``), and each seed, passes in-process."""
    one_input(path.read_bytes())


@pytest.mark.slow
def test_short_atheris_run(tmp_path: pathlib.Path) -> None:
    """libFuzzer runs the target over the corpus for a bounded number of mutations, crash-free."""
    found = tmp_path / "found"
    found.mkdir()
    command = [
        sys.executable, "-m", "tests.fuzz.atheris_target", f"-runs={RUNS}", "-seed=1", "-max_total_time=240", "-timeout=30",
        f"-dict={HERE / 'wire.dict'}", f"-artifact_prefix={tmp_path}/", str(found), str(CORPUS), str(REGRESSIONS),
    ]  # fmt: skip
    done = subprocess.run(command, cwd=REPO_ROOT, capture_output=True, text=True, timeout=280)
    output = done.stderr + done.stdout
    tail = "\n".join(line for line in output.splitlines() if not line.startswith("INFO: Instrumenting"))[-3000:]
    assert done.returncode == 0, tail
    assert not list(tmp_path.glob("crash-*")), tail
    ran = re.search(r"Done (\d+) runs in (\d+) second", output)
    assert ran is not None, tail
    assert int(ran.group(1)) >= RUNS or "max_total_time" in output, tail
    loaded = re.search(r"INITED cov: (\d+)", output)
    assert loaded is not None and int(loaded.group(1)) > 100, tail  # the instrumentation saw our code
