"""Monte Carlo tree search over a remote CartPole, branching the server's env with snapshots.

``.venv/bin/python examples/mcts_cartpole.py --episodes 3 --simulations 16``

The env the agent acts in and the one the search plans in are two sessions on one server:
``fork`` makes the planner. Before each move the planner is put into the real env's state
(``restore`` of a snapshot the real env's session took), and every node of the search tree is a
snapshot of the planner's, so a simulation restores its leaf and steps from there instead of
replaying the moves that led to it. Nothing is copied to this process but the handles; the tree's
snapshots are released after each move. Random play, on the same seeds, is printed beside it.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import random
from collections.abc import Sequence
from typing import Any

import gymnasium as gym

import openenv_gym  # noqa: F401 - registers openenv/CartPole-v1
from openenv_gym.snapshot import Snapshot, fork, release, restore, snapshot


@dataclasses.dataclass(eq=False)
class Node:
    """A state of the tree: its snapshot (None once the episode ended there) and its statistics."""

    handle: Snapshot | None
    children: dict[int, Node] = dataclasses.field(default_factory=dict)
    visits: int = 0
    total: float = 0.0

    def ucb_child(self, exploration: float) -> tuple[int, Node]:
        """The child to descend to: the best upper confidence bound (UCT)."""
        log_visits = math.log(self.visits)
        return max(
            self.children.items(),
            key=lambda item: item[1].total / item[1].visits + exploration * math.sqrt(log_visits / item[1].visits),
        )


def rollout(planner: gym.Env[Any, Any], depth: int, rng: random.Random) -> float:
    """The reward of up to ``depth`` random steps from the planner's state."""
    total = 0.0
    for _ in range(depth):
        _, reward, terminated, truncated, _ = planner.step(rng.randrange(2))
        total += float(reward)
        if terminated or truncated:
            break
    return total


def simulate(root: Node, planner: gym.Env[Any, Any], depth: int, rng: random.Random, taken: list[Snapshot]) -> None:
    """One simulation: descend by UCT, expand one action from a restored snapshot, roll out, back up."""
    path, rewards, node = [root], [0.0], root
    while node.handle is not None and len(node.children) == 2:
        _, node = node.ucb_child(exploration=1.4 * depth)
        path.append(node)
        rewards.append(1.0)  # every CartPole step pays 1: the edge's reward
    value = 0.0
    if node.handle is not None:
        action = next(action for action in (0, 1) if action not in node.children)
        restore(planner, node.handle)
        _, reward, terminated, truncated, _ = planner.step(action)
        child = Node(None if terminated or truncated else snapshot(planner))
        if child.handle is not None:
            taken.append(child.handle)
            value = rollout(planner, depth, rng)
        node.children[action] = child
        path.append(child)
        rewards.append(float(reward))
    for visited, reward in zip(reversed(path), reversed(rewards), strict=True):
        visited.visits += 1
        visited.total += value
        value += reward


def plan(env: gym.Env[Any, Any], planner: gym.Env[Any, Any], simulations: int, depth: int, rng: random.Random) -> int:
    """The action the search prefers in ``env``'s current state."""
    here = snapshot(env)
    restore(planner, here)
    root = Node(snapshot(planner))
    taken = [root.handle]
    for _ in range(simulations):
        simulate(root, planner, depth, rng, taken)
    release(planner, *taken)
    release(env, here)
    return max(root.children.items(), key=lambda item: item[1].visits)[0]


def mcts_return(env: gym.Env[Any, Any], seed: int, simulations: int, depth: int) -> float:
    """The return of one episode of ``env`` played by the search."""
    env.reset(seed=seed)
    (planner,) = fork(env, 1)
    rng, total = random.Random(seed), 0.0
    try:
        while True:
            _, reward, terminated, truncated, _ = env.step(plan(env, planner, simulations, depth, rng))
            total += float(reward)
            if terminated or truncated:
                return total
    finally:
        planner.close()


def random_return(env: gym.Env[Any, Any], seed: int) -> float:
    """The return of one episode of ``env`` played at random."""
    env.reset(seed=seed)
    env.action_space.seed(seed)
    total = 0.0
    while True:
        _, reward, terminated, truncated, _ = env.step(env.action_space.sample())
        total += float(reward)
        if terminated or truncated:
            return total


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--episodes", type=int, default=3)
    parser.add_argument("--simulations", type=int, default=16, help="simulations per move")
    parser.add_argument("--depth", type=int, default=10, help="random steps per rollout")
    parser.add_argument("--max-episode-steps", type=int, default=200)
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args(argv)
    env = gym.make("openenv/CartPole-v1", max_episode_steps=args.max_episode_steps)
    try:
        seeds = range(args.episodes)
        searched = [mcts_return(env, seed, args.simulations, args.depth) for seed in seeds]
        played = [random_return(env, seed) for seed in seeds]
    finally:
        env.close()
    print(f"MCTS ({args.simulations} simulations a move): returns {searched}, mean {sum(searched) / len(searched):.1f}")
    print(f"random play:                   returns {played}, mean {sum(played) / len(played):.1f}")


if __name__ == "__main__":
    main()
