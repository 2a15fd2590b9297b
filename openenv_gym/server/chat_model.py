"""`ChatModel`: an OpenAI-compatible chat completions API (vLLM, SGLang, llama.cpp's server, a hosted
API) that answers a harness turn's model calls, as the server's operator names it
(``serve --harness-model-url``): OpenEnv's ``/harness`` socket runs the agent against it.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Mapping
from typing import Any

from ..errors import ModelCallError
from ..protocol.model_calls import Reply
from ..protocol.model_calls.chat_completions import completion_reply, completion_request

__all__ = ["DEFAULT_MODEL_TIMEOUT", "ChatModel"]

#: Seconds one call waits for the model's answer (a long generation on a slow server included).
DEFAULT_MODEL_TIMEOUT = 600.0
_MAX_ANSWER_BYTES = 64 * 2**20
_ERROR_TEXT = 300


class ChatModel:
    """Ask ``base_url``'s chat completions (``POST {base_url}/chat/completions``) each call's reply.

    Args:
        base_url: the API's base, with its ``/v1`` (``http://127.0.0.1:8000/v1``).
        model: the model named in each request (``None``: the one the agent named).
        api_key: sent as a bearer token, when the API wants one.
        timeout: seconds each call waits for its answer.
    """

    def __init__(
        self,
        base_url: str,
        model: str | None = None,
        api_key: str | None = None,
        timeout: float = DEFAULT_MODEL_TIMEOUT,
    ) -> None:
        if not base_url.startswith(("http://", "https://")):
            raise ValueError(f"a model API's URL is http:// or https://, got {base_url!r}")
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.model = model
        self.timeout = timeout
        self._headers = {"Content-Type": "application/json"}
        if api_key:
            self._headers["Authorization"] = f"Bearer {api_key}"
        # Directly: a proxy from the environment would see the key, and may not reach a local server.
        self._opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))

    def __repr__(self) -> str:
        return f"ChatModel({self.url!r}, model={self.model!r})"

    def __call__(self, observation: Mapping[str, Any]) -> Reply:
        """The model's reply to ``observation``'s call.

        Raises:
            ModelCallError: the API could not be reached in time, answered an error, or no completion.
        """
        body = json.dumps(completion_request(observation, self.model)).encode()
        request = urllib.request.Request(self.url, body, self._headers, method="POST")
        try:
            with self._opener.open(request, timeout=self.timeout) as response:
                answer = response.read(_MAX_ANSWER_BYTES + 1)
        except urllib.error.HTTPError as exc:
            text = exc.read(_ERROR_TEXT).decode("utf-8", "replace")
            raise ModelCallError(f"the model API at {self.url} answered {exc.code}: {text}") from None
        except (OSError, urllib.error.URLError) as exc:
            raise ModelCallError(f"the model API at {self.url} could not be reached: {exc}") from None
        if len(answer) > _MAX_ANSWER_BYTES:
            raise ModelCallError(f"the model API's answer is larger than {_MAX_ANSWER_BYTES} bytes")
        try:
            completion = json.loads(answer)
        except ValueError:
            raise ModelCallError(f"the model API's answer is not JSON: {answer[:_ERROR_TEXT]!r}") from None
        return completion_reply(completion)
