"""Record model calls through OpenEnv 0.10's capture proxy and write its trace (the rollout document
with each call's messages) to a file; prints ``{"path": ...}``.

``capture_trace.py OUT_PATH``: a fake model server (a thread here) answers chat completions; an agent
stand-in makes three calls through the proxy (a tool call, the tool's result, a final answer).
"""

from __future__ import annotations

import json
import socket
import sys
import threading
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from openenv.core.harness.capture import CaptureServer

TOOLS = [{"type": "function", "function": {"name": "bash", "description": "run", "parameters": {"type": "object"}}}]


def _reply(body: dict[str, Any]) -> dict[str, Any]:
    """The fake model: a tool call first, then the answer once a tool's result is in the history."""
    if any(message.get("role") == "tool" for message in body["messages"]):
        message: dict[str, Any] = {"role": "assistant", "content": "The file holds 42."}
        finish = "stop"
    else:
        call = {"id": "call_1", "type": "function", "function": {"name": "bash", "arguments": '{"command": "cat f"}'}}
        message, finish = {"role": "assistant", "content": None, "tool_calls": [call]}, "tool_calls"
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 0,
        "model": "fake",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8},
    }


class FakeModel(BaseHTTPRequestHandler):
    def _send(self, value: dict[str, Any]) -> None:
        data = json.dumps(value).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        self._send({"object": "list", "data": [{"id": "fake", "object": "model"}]})

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self._send(_reply(body))

    def log_message(self, *args: Any) -> None:
        pass


def _post(url: str, body: dict[str, Any], key: str | None = None) -> dict[str, Any]:
    headers = {"Content-Type": "application/json", **({"Authorization": f"Bearer {key}"} if key else {})}
    request = urllib.request.Request(url, json.dumps(body).encode(), headers)
    with urllib.request.urlopen(request, timeout=60) as response:
        return json.loads(response.read())


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def main(out_path: str) -> None:
    model = ThreadingHTTPServer(("127.0.0.1", 0), FakeModel)
    threading.Thread(target=model.serve_forever, daemon=True).start()
    capture = CaptureServer(
        llm_url=f"http://127.0.0.1:{model.server_address[1]}/v1", model="fake", port=_free_port(), capture_level="text"
    )
    capture.start()
    base = f"http://127.0.0.1:{capture.port}"
    try:
        session = _post(f"{base}/sessions", {"metadata": {"task": "read-f"}})["session_id"]
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": "You are an agent."},
            {"role": "user", "content": "What does f hold?"},
        ]
        first = _post(f"{base}/v1/chat/completions", {"model": "any", "messages": messages, "tools": TOOLS}, session)
        messages.append(first["choices"][0]["message"])
        messages.append({"role": "tool", "tool_call_id": "call_1", "content": "42\n"})
        _post(f"{base}/v1/chat/completions", {"model": "any", "messages": messages, "tools": TOOLS}, session)
        url = f"{base}/sessions/{session}/rollout?include_messages=true"
        with urllib.request.urlopen(url, timeout=60) as response:
            document = json.loads(response.read())
    finally:
        capture.stop()
        model.shutdown()
    with open(out_path, "w") as file:
        json.dump(document, file)
    print(json.dumps({"path": out_path, "session_id": session}))


if __name__ == "__main__":
    main(sys.argv[1])
