"""One episode of an OpenEnv server, run by PrimeIntellect's verifiers (its ``openenv`` taskset).

Run by ``tests/integrations/test_verifiers.py`` with the Python of a virtual environment holding
``verifiers[openenv]`` (it cannot share openenv-gym's: see that test), never imported by the suite:

    python verifiers_episode.py BASE_URL RESET_JSON ACTIONS_JSON MAX_TURNS

verifiers' episode runner (``env.run_episode``, what ``vf-eval`` and its trainers call per
rollout) drives the server at BASE_URL over OpenEnv's WebSocket. Its policy is an OpenAI-style
chat endpoint; here a scripted one, served below, answers each turn with the next of ACTIONS (no
model weights). The result is printed as one JSON line: whether the episode ran, why it stopped,
its turns and the reward verifiers recorded.
"""

from __future__ import annotations

import asyncio
import http.server
import json
import os
import sys
import threading
import time
import uuid


def policy_server(actions: list[dict]) -> http.server.ThreadingHTTPServer:
    """An OpenAI-compatible ``/v1/chat/completions`` that replies with ``actions`` in turn."""
    replies = iter(actions)

    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:  # quiet
            pass

        def do_GET(self) -> None:
            self._json({"object": "list", "data": [{"id": "scripted", "object": "model"}]})

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            content = json.dumps(next(replies, {}))
            created, name = int(time.time()), "chatcmpl-" + uuid.uuid4().hex[:12]
            usage = {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}
            if not body.get("stream"):
                message = {"role": "assistant", "content": content}
                self._json(
                    {
                        "id": name,
                        "object": "chat.completion",
                        "created": created,
                        "model": body.get("model", "scripted"),
                        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
                        "usage": usage,
                    }
                )
                return
            base = {"id": name, "object": "chat.completion.chunk", "created": created, "model": "scripted"}
            chunks = [
                {
                    **base,
                    "choices": [
                        {"index": 0, "delta": {"role": "assistant", "content": content}, "finish_reason": None}
                    ],
                },
                {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
                {**base, "choices": [], "usage": usage},
            ]
            data = "".join(f"data: {json.dumps(chunk)}\n\n" for chunk in chunks) + "data: [DONE]\n\n"
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Content-Length", str(len(data.encode())))
            self.end_headers()
            self.wfile.write(data.encode())

        def _json(self, answer: dict) -> None:
            data = json.dumps(answer).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


async def episode(base_url: str, reset: dict, policy_url: str, max_turns: int) -> dict:
    from verifiers.v1.clients import EvalClientConfig, ModelContext
    from verifiers.v1.utils.loaders import load_environment, resolve_env_config

    config = resolve_env_config(
        {
            "taskset": {"id": "openenv", "base_url": base_url, "resets": [reset]},
            "player": {
                "max_turns": max_turns,
                "harness": {"id": "null"},  # a plain chat loop: the policy's reply is the action
                "runtime": {"type": "subprocess"},  # verifiers' default is a hosted sandbox
            },
        }
    )
    env = load_environment(config)
    task = next(iter(env.taskset))
    os.environ.setdefault("SCRIPTED_POLICY_KEY", "none")
    context = ModelContext(
        model="scripted", client=EvalClientConfig(base_url=policy_url, api_key_var="SCRIPTED_POLICY_KEY")
    )
    async with env.serving():
        result = await env.run_episode(task, context)
    (trace,) = result.traces
    return {
        "env": type(env).__name__,
        "ok": result.ok,
        "errors": [str(error) for error in result.errors],
        "stop_condition": str(trace.stop_condition),
        "turns": sum(1 for node in trace.nodes if node.message.role == "assistant"),
        "rewards": {name: reward.model_dump()["score"] for name, reward in trace.rewards.items()},
    }


def main() -> None:
    base_url, reset, actions, max_turns = (
        sys.argv[1],
        json.loads(sys.argv[2]),
        json.loads(sys.argv[3]),
        int(sys.argv[4]),
    )
    server = policy_server(actions)
    try:
        policy_url = f"http://127.0.0.1:{server.server_address[1]}/v1"
        print(json.dumps(asyncio.run(episode(base_url, reset, policy_url, max_turns))))
    finally:
        server.shutdown()


if __name__ == "__main__":
    main()
