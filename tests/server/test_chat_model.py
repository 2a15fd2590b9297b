"""`ChatModel`: the operator's chat completions API a ``/harness`` turn asks, and how its failures read."""

from __future__ import annotations

import pytest

from openenv_gym.errors import ModelCallError
from openenv_gym.server.chat_model import ChatModel
from tests.envs.harness_policy import ScriptedModelApi
from tests.utils import free_port

CALL = {"messages": [{"role": "user", "content": "hi"}], "tools": [], "params": {"model": None, "stream": False}}


@pytest.fixture
def api():
    scripted = ScriptedModelApi()
    yield scripted
    scripted.close()


def test_the_reply_is_the_apis_and_the_key_and_model_are_sent(api):
    api.replies[:] = [{"content": "hello"}]
    reply = ChatModel(api.url, model="served", api_key="secret")(CALL)
    assert (reply.content, reply.usage.prompt_tokens) == ("hello", 7)
    assert api.requests[0]["model"] == "served" and api.authorizations == ["Bearer secret"]


def test_an_error_status_says_what_the_api_answered(api):
    with pytest.raises(ModelCallError, match=r"answered 500: .*no reply scripted"):
        ChatModel(api.url)(CALL)


def test_an_api_that_cannot_be_reached_says_so():
    with pytest.raises(ModelCallError, match="could not be reached"):
        ChatModel(f"http://127.0.0.1:{free_port()}/v1", timeout=5)(CALL)


def test_a_url_that_is_no_http_is_refused():
    with pytest.raises(ValueError, match="http:// or https://"):
        ChatModel("127.0.0.1:8000/v1")
