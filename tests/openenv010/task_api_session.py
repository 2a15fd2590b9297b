"""Run under OpenEnv 0.10: its Task API calls on the server at ``argv[1]``, the way 0.10 makes them
(``httpx`` posts to the routes, as its harbor client does; ``GenericEnvClient.reset(split=, index=)``
and ``reset(task_spec=)`` over the WebSocket), and prints what each answered as one JSON line.

``argv[2]`` is the split to read; ``argv[3]`` (optional) a split to try a reset on that the server
should refuse (an operator's closed split).
"""

from __future__ import annotations

import asyncio
import json
import sys

import httpx
from openenv.core import GenericEnvClient


def answered(response: httpx.Response) -> dict:
    return {"status": response.status_code, "body": response.json()}


async def resets(url: str, split: str, indices: list[int], spec: dict, closed: str | None) -> dict:
    """Reset 0.10's generic client to each index of ``split``, then to the task ``spec`` (as the
    Task API gave it); the state names the task each reset got."""
    seen, refused = [], None
    async with GenericEnvClient(base_url=url) as client:
        for index in indices:
            first = await client.reset(split=split, index=index)
            state = await client.state()
            seen.append({"index": index, "task_id": state.get("task_id"), "done": first.done})
        await client.reset(task_spec=spec)
        by_spec = (await client.state()).get("task_id")
        if closed is not None:
            try:
                await client.reset(split=closed, index=0)
            except Exception as exc:  # what 0.10's client raises for the server's refusal
                refused = f"{type(exc).__name__}: {exc}"
    return {"resets": seen, "by_spec": by_spec, "refused": refused}


def main(url: str, split: str, closed: str | None) -> dict:
    with httpx.Client(base_url=url, timeout=120.0) as http:
        environments = http.get("/list_environments").raise_for_status().json()
        name = environments[0]
        splits = http.get(f"/{name}/splits").raise_for_status().json()
        count = http.post(f"/{name}/num_tasks", json={"split": split}).raise_for_status().json()["num_tasks"]
        listed = http.post(f"/{name}/tasks", json={"split": split}).raise_for_status().json()
        last = http.post(f"/{name}/task", json={"split": split, "index": count - 1}).raise_for_status().json()
        window = http.post(f"/{name}/task_range", json={"split": split, "start": 1, "stop": 3}).raise_for_status()
        whole = http.post(f"/{name}/task_range", json={"split": split}).raise_for_status().json()
        errors = {
            "other_case": answered(http.get(f"/{name.upper()}/splits")),
            "unknown_env": answered(http.post("/no_such_env/num_tasks", json={"split": split})),
            "bad_index": answered(http.post(f"/{name}/task", json={"split": split, "index": count})),
            "missing_index": answered(http.post(f"/{name}/task", json={"split": split})),
            "extra_field": answered(http.post(f"/{name}/num_tasks", json={"split": split, "limit": 3})),
        }
        if closed is not None:
            errors["closed_split"] = answered(http.post(f"/{name}/num_tasks", json={"split": closed}))
    played = asyncio.run(resets(url, split, [0, count - 1], listed["tasks"][1], closed))
    return {
        "environments": environments,
        "splits": splits,
        "num_tasks": count,
        "tasks": listed,
        "last": last,
        "range": window.json(),
        "whole_range": whole,
        "errors": errors,
        **played,
    }


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1], sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else None)))
