"""A model API played by the protocol module inside the SDKs' own HTTP clients (a mock transport, no
socket): each request an SDK sends is read into a ModelCall, kept, and answered with the next reply,
streamed when the request asked for it."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import anthropic
import httpx
import httpx2
import openai

from openenv_gym.protocol.model_calls import ModelCall, answer, read_model_call

Action = str | Mapping[str, Any]


class ModelServer:
    """Answers the calls of an OpenAI or Anthropic client with the replies given, in order."""

    def __init__(self, replies: Iterable[Action]) -> None:
        self.replies = list(replies)
        self.calls: list[ModelCall] = []

    def answer(self, path: str, body: bytes) -> tuple[dict[str, str], Iterator[bytes]]:
        """The headers and the content (the body in one piece, or the events one by one) of one call's answer."""
        call = read_model_call(path, body)
        self.calls.append(call)
        media, chunks = answer(call, self.replies.pop(0))
        return {"content-type": media}, iter(chunks)

    def _httpx(self, request: httpx.Request) -> httpx.Response:
        headers, content = self.answer(request.url.path, request.read())
        return httpx.Response(200, headers=headers, content=content)

    def _httpx2(self, request: httpx2.Request) -> httpx2.Response:
        headers, content = self.answer(request.url.path, request.read())
        return httpx2.Response(200, headers=headers, content=content)

    def openai(self) -> openai.OpenAI:
        transport = httpx.MockTransport(self._httpx)
        return openai.OpenAI(
            api_key="test",
            base_url="http://model.test/v1",
            http_client=httpx.Client(transport=transport),
            max_retries=0,
        )

    def anthropic(self) -> anthropic.Anthropic:
        # anthropic's SDK runs on httpx2 (a fork of httpx), openai's on httpx.
        transport = httpx2.MockTransport(self._httpx2)
        return anthropic.Anthropic(
            api_key="test", base_url="http://model.test", http_client=httpx2.Client(transport=transport), max_retries=0
        )
