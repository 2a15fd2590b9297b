"""A single env as one seat in a PettingZoo server's game: the ``/ws`` query that asks for the
seat, and the seat's view of the server's ``/schema`` (its agent's spaces as the env's own).

``gym.make``'s arguments for a seat (:class:`~openenv_gym.env.RemoteEnv`'s):

* ``agent``: the agent whose seat the env plays (default: the env's first agent); the other
  seats are the server's opponents, or other clients in a game joined with ``game``.
* ``game``: the id of a game to join (made by the first session that names it; its other seats
  then wait for players, unless ``opponents`` gives them to the server). Every player's
  ``reset`` waits for the others', and each ``step`` returns once it is this agent's turn again
  (the reward is what it earned since its last action).
* ``game_token``: the game's token: a game is known by its id and its token together, so a
  session joins only the game made with the token it gives (or made without one).
* ``opponents``: seats the server plays, as ``{agent: policy}`` (``"random"``, or a name the
  server was given with ``serve --opponents``).
* ``turn_timeout``: this seat's turns: seconds a turn of its may take, at most (and by default)
  the server's. A player that overruns its turn, or leaves mid-round, loses the round and the
  others win it (terminated, ``info["forfeit"]`` saying who and why).
"""

from __future__ import annotations

from typing import Any

__all__ = ["seat_query", "seat_schema"]


def seat_query(
    agent: str | None,
    game: str | None,
    game_token: str | None,
    opponents: dict[str, str] | None,
    turn_timeout: float | None,
) -> dict[str, str]:
    """The ``/ws`` query of a seat in a PettingZoo server's game (only what is given; without
    ``agent`` the server seats the env's first agent)."""
    params = {"agent": agent, "game": game, "game_token": game_token}
    query = {key: value for key, value in params.items() if value is not None}
    if opponents:
        query["opponents"] = ",".join(f"{seat}:{policy}" for seat, policy in opponents.items())
    if turn_timeout is not None:
        query["turn_timeout"] = repr(float(turn_timeout))
    return query


def seat_schema(schema: dict[str, Any], agent: str, base_url: str) -> dict[str, Any]:
    """``schema`` with ``agent``'s spaces as its own: a server whose sessions are seats in games
    lists its agents in ``/schema["agents"]``, with each one's spaces when they have any (a
    tool env's seats have tools instead).

    Raises:
        ValueError: the server's sessions are no seats in games, or it has no such agent.
    """
    agents = schema.get("agents")
    if not isinstance(agents, dict):
        raise ValueError(f"agent={agent!r}: the server at {base_url} plays no games (no agents in /schema)")
    possible = agents.get("possible_agents") or []
    if agent not in possible:
        raise ValueError(f"agent={agent!r} is not one of the env's agents {possible}")
    if "action_spaces" not in agents:
        return schema
    spaces = {"action": agents["action_spaces"][agent], "observation": agents["observation_spaces"][agent]}
    return {**schema, "spaces": spaces}
