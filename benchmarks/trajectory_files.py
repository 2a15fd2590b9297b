"""Trajectory files: writing and reading 100 recorded episodes as JSONL, and as Parquet through
pyarrow (what openenv_gym.trajectories uses) or through ``datasets`` (the alternative).

The episodes are CartPole's, recorded once from a local env (no server: the files are what is
measured). Each round times, in the same process, writing then reading the same episodes with
each of the three, and prints the times and the ratios to pyarrow's; the file sizes too. Run from
the repository root on an otherwise idle machine::

    .venv/bin/python benchmarks/trajectory_files.py
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

import gymnasium as gym
import numpy as np

from openenv_gym.trajectories import JSON_TEXT_COLUMNS, Trajectory, read_trajectories, write_trajectories
from openenv_gym.wrappers import RecordEpisodes


def episodes(count: int) -> list[Trajectory]:
    env = RecordEpisodes(gym.make("CartPole-v1"))
    actions = np.random.default_rng(0)
    for seed in range(count):
        env.reset(seed=seed)
        done = False
        while not done:
            *_, terminated, truncated, _ = env.step(int(actions.integers(0, 2)))
            done = terminated or truncated
    env.close()
    return env.episodes


def with_pyarrow(path: Path, trajectories: list[Trajectory]) -> list[Trajectory]:
    write_trajectories(path, trajectories)
    return list(read_trajectories(path))


def with_jsonl(path: Path, trajectories: list[Trajectory]) -> list[Trajectory]:
    write_trajectories(path, trajectories)
    return list(read_trajectories(path))


def with_datasets(path: Path, trajectories: list[Trajectory]) -> list[Trajectory]:
    """The same rows (nested values as JSON text) through datasets' to_parquet and from_parquet."""
    import datasets

    rows = [
        {key: json.dumps(value) if key in JSON_TEXT_COLUMNS else value for key, value in t.to_record().items()}
        for t in trajectories
    ]
    datasets.Dataset.from_list(rows).to_parquet(str(path))
    loaded = datasets.Dataset.from_parquet(str(path), keep_in_memory=True)
    return [
        Trajectory.from_record({k: json.loads(v) if k in JSON_TEXT_COLUMNS else v for k, v in row.items()})
        for row in loaded
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--episodes", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    import datasets

    datasets.disable_progress_bars()
    recorded = episodes(args.episodes)
    print(f"{len(recorded)} CartPole episodes, {sum(t.length for t in recorded)} steps")
    ratios: dict[str, list[float]] = {"jsonl": [], "datasets": []}
    with tempfile.TemporaryDirectory() as folder:
        for number in range(1, args.rounds + 1):
            times = {}
            for name, run, suffix in (
                ("pyarrow", with_pyarrow, ".parquet"),
                ("jsonl", with_jsonl, ".jsonl"),
                ("datasets", with_datasets, ".parquet"),
            ):
                path = Path(folder) / f"{name}-{number}{suffix}"
                start = time.perf_counter()
                again = run(path, recorded)
                times[name] = time.perf_counter() - start
                assert [t.to_record() for t in again] == [t.to_record() for t in recorded], name
                if number == 1:
                    print(f"  {name}: {path.stat().st_size / 1024:.0f} KiB")
            ratios["jsonl"].append(times["jsonl"] / times["pyarrow"])
            ratios["datasets"].append(times["datasets"] / times["pyarrow"])
            print(
                f"round {number}: write+read pyarrow {times['pyarrow'] * 1000:.1f} ms, jsonl "
                f"{times['jsonl'] * 1000:.1f} ms ({ratios['jsonl'][-1]:.2f}x), datasets "
                f"{times['datasets'] * 1000:.1f} ms ({ratios['datasets'][-1]:.2f}x)"
            )
    for name, values in ratios.items():
        print(
            f"{name} / pyarrow: median {statistics.median(values):.2f}x (rounds: {', '.join(f'{v:.2f}' for v in values)})"
        )


if __name__ == "__main__":
    main()
