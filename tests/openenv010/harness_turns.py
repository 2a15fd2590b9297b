"""Talk to a server's ``/harness`` socket as OpenEnv 0.10's types spell it, and print what came back.

``harness_turns.py WS_URL TURNS_JSON``: connects, reads ``session_started``, sends one frame that is
no turn (the reply read as 0.10's ``HarnessProtocolError``), then each of TURNS_JSON's messages as a
``HarnessClientMessage``, reading every frame of the turn as a ``HarnessEvent`` (which refuses a
frame that does not fit) until ``turn_complete``. Prints ``{"started", "protocol_error", "turns"}``,
each turn its events' types and its ``turn_complete``'s data.
"""

from __future__ import annotations

import json
import sys

from openenv.core.harness.events import HarnessClientMessage, HarnessEvent, HarnessEventType, HarnessProtocolError
from websockets.sync.client import connect

TIMEOUT = 120


def main(url: str, turns: list[str]) -> None:
    with connect(url, open_timeout=TIMEOUT) as socket:
        started = json.loads(socket.recv(timeout=TIMEOUT))
        socket.send('{"type": "message"}')
        refusal = HarnessProtocolError.model_validate_json(socket.recv(timeout=TIMEOUT))
        told = []
        for content in turns:
            socket.send(HarnessClientMessage(type="message", content=content).model_dump_json())
            events = []
            while True:
                event = HarnessEvent.model_validate_json(socket.recv(timeout=TIMEOUT))
                events.append(event)
                if event.type in (HarnessEventType.TURN_COMPLETE, HarnessEventType.ERROR):
                    break
            told.append({"types": [event.type.value for event in events], "last": events[-1].data})
    print(json.dumps({"started": started, "protocol_error": refusal.data, "turns": told}))


if __name__ == "__main__":
    main(sys.argv[1], json.loads(sys.argv[2]))
