"""Run a peer's own test suite against openenv-gym's drop-ins.

    python scripts/peer_tests/run.py gymnasium PATH [pytest args]   # Gymnasium's tests/vector, tests/wrappers/vector
    python scripts/peer_tests/run.py sb3 [pytest args]              # SB3's tests/test_vec_envs.py

``gymnasium``: PATH is a checkout of Gymnasium at the installed version's tag (its tests are not
in the package); the tests run as they are, with ``RemoteVectorEnv.from_env_fns`` standing in for
``AsyncVectorEnv`` (``gymnasium_plugin.py``). ``sb3``: SB3's source distribution of the installed
version, which ships its tests, is downloaded from PyPI into a temporary folder, and the line of
``tests/test_vec_envs.py`` that lists ``VEC_ENV_CLASSES`` gets one more class, ``SB3VecEnv`` over
``from_env_fns`` (``sb3_plugin.py``). Neither puts anything on ``PYTHONPATH``: the servers
``from_env_fns`` starts must find the tests' modules by themselves.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import os
import subprocess
import sys
import tarfile
import tempfile
import types
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
GYMNASIUM_TESTS = ["tests/vector", "tests/wrappers/vector"]
SB3_CLASSES_LINE = "VEC_ENV_CLASSES = [DummyVecEnv, SubprocVecEnv]"


def _plugin(name: str) -> types.ModuleType:
    sys.path.insert(0, str(HERE))
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(str(HERE))


def run_gymnasium(checkout: Path, args: list[str]) -> int:
    os.chdir(checkout)
    return pytest.main(["-p", "no:cacheprovider", *GYMNASIUM_TESTS, *args], plugins=[_plugin("gymnasium_plugin")])


def run_sb3(args: list[str]) -> int:
    version = importlib.metadata.version("stable_baselines3")
    folder = Path(tempfile.mkdtemp(prefix="sb3-tests-"))
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--quiet",
            "--no-deps",
            "--no-binary",
            ":all:",
            "-d",
            str(folder),
            f"stable_baselines3=={version}",
        ],
        check=True,
    )
    (archive,) = folder.glob("*.tar.gz")
    with tarfile.open(archive) as tar:
        tar.extractall(folder, filter="data")
    root = folder / f"stable_baselines3-{version}"
    module = root / "tests" / "test_vec_envs.py"
    text = module.read_text()
    if text.count(SB3_CLASSES_LINE) != 1:
        raise SystemExit(f"{module} has no line {SB3_CLASSES_LINE!r}: this runner knows SB3 2.9's tests")
    module.write_text(
        text.replace(
            SB3_CLASSES_LINE,
            "from sb3_plugin import remote_vec_env\nVEC_ENV_CLASSES = [DummyVecEnv, SubprocVecEnv, remote_vec_env]",
        )
    )
    sys.modules["sb3_plugin"] = _plugin("sb3_plugin")
    os.chdir(root)
    return pytest.main(["-p", "no:cacheprovider", "tests/test_vec_envs.py", *args])


def main(argv: list[str]) -> int:
    if argv[:1] == ["gymnasium"] and len(argv) >= 2:
        return run_gymnasium(Path(argv[1]).resolve(), argv[2:])
    if argv[:1] == ["sb3"]:
        return run_sb3(argv[1:])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
