"""The Gymnasium face of tool envs: a tool call as JSON text in, the result as text out, errors as
observations; on our Echo and tool envs, and on a stock openenv-core MCPEnvironment (FastMCP)."""

from __future__ import annotations

import json

import gymnasium as gym
import pytest
from gymnasium.utils.env_checker import check_env

import openenv_gym
from openenv_gym.protocol.tools import CALL_FORMS
from openenv_gym.spaces import ToolCallSpace, UnicodeText
from openenv_gym.wrappers import ChatMessages
from tests.tool_envs import ToolboxEnvironment
from tests.utils import openenv_core_servers, running_server


@pytest.fixture(scope="module")
def echo():
    env = gym.make("openenv/Echo-v0", tool_calls=True)
    yield env
    env.close()


@pytest.fixture(scope="module")
def toolbox_url():
    with running_server(ToolboxEnvironment, max_sessions=8) as server:
        yield server.url


@pytest.fixture(scope="module")
def calculator_url():
    with openenv_core_servers(("mcp",)) as urls:
        yield urls["mcp"]


def test_the_spaces_are_text_that_any_call_fits(echo):
    assert isinstance(echo.action_space, ToolCallSpace) and isinstance(echo.observation_space, UnicodeText)
    assert echo.action_space.tool_names == ("echo_message", "echo_with_length")
    for text in ['{"name": "echo_message", "arguments": {"message": "héllo ✓"}}', "not json at all", ""]:
        assert echo.action_space.contains(text)
    assert not echo.action_space.contains({"name": "echo_message"}) and not echo.action_space.contains(3)
    call = json.loads(echo.action_space.sample())
    assert call["name"] in echo.action_space.tool_names and call["arguments"] == {}


def test_reset_lists_the_tools_in_openai_format(echo):
    prompt, info = echo.reset(seed=0)
    assert prompt == ""  # Echo has no task
    assert [tool["function"]["name"] for tool in info["tools"]] == ["echo_message", "echo_with_length"]
    assert info["tools"][0] == {
        "type": "function",
        "function": {
            "name": "echo_message",
            "description": "Echo back the provided message.",
            "parameters": {
                "type": "object",
                "additionalProperties": False,
                "properties": {"message": {"type": "string", "description": "The message to echo back"}},
                "required": ["message"],
            },
        },
    }


@pytest.mark.parametrize(
    ("action", "text"),
    [
        ('{"name": "echo_message", "arguments": {"message": "héllo ✓"}}', "héllo ✓"),
        ({"name": "echo_with_length", "arguments": {"message": "ab"}}, '{"message":"ab","length":2}'),
        ('{"tool_name": "echo_message", "arguments": {"message": "x"}}', "x"),
        ('{"type": "function", "function": {"name": "echo_message", "arguments": "{\\"message\\": \\"y\\"}"}}', "y"),
    ],
)
def test_a_call_returns_the_result_text(echo, action, text):
    echo.reset()
    observation, reward, terminated, truncated, info = echo.step(action)
    assert observation == text
    assert (reward, terminated, truncated) == (0.0, False, False) and type(reward) is float
    assert info["tool_name"] in ("echo_message", "echo_with_length") and "error" not in info
    assert info["tool_result"]["is_error"] is False


@pytest.mark.parametrize(
    ("action", "error_type", "message"),
    [
        ("echo_message('hi')", "invalid_tool_call", "the tool call is not valid JSON"),
        ('["echo_message"]', "invalid_tool_call", "a tool call is a JSON object, got list"),
        ('{"arguments": {}}', "invalid_tool_call", 'needs a "name"'),
        ('{"name": "nope", "arguments": {}}', "tool_not_found", "Unknown tool: 'nope'"),
        ('{"name": "echo_message", "arguments": {}}', "invalid_args", "message: Field required"),
        ('{"name": "echo_message", "arguments": {"message": "a", "x": 1}}', "invalid_args", "x: Extra inputs"),
        (
            '{"name": "echo_message", "arguments": {"message": 5}}',
            "invalid_args",
            "message: Input should be a valid string",
        ),
    ],
)
def test_a_bad_call_is_an_error_observation_and_the_episode_goes_on(echo, action, error_type, message):
    """What every LLM trainer does: the model sees its mistake, with reward 0, not terminated."""
    echo.reset()
    observation, reward, terminated, truncated, info = echo.step(action)
    assert observation.startswith("Error: ") and message in observation and "\n" not in observation
    if error_type == "invalid_tool_call":  # a call that cannot be read says what one looks like
        assert observation.endswith(f"; {CALL_FORMS}")
    assert (reward, terminated, truncated) == (0.0, False, False)
    assert info["error"]["error_type"] == error_type and message in info["error"]["message"]
    assert echo.step('{"name": "echo_message", "arguments": {"message": "still here"}}')[0] == "still here"


def test_echo_keeps_its_message_face_unless_asked():
    env = gym.make("openenv/Echo-v0")
    try:
        assert isinstance(env.action_space, gym.spaces.Dict)
        env.reset()
        assert env.step({"message": "hi"})[0] == {"echoed_message": "hi", "message_length": 2}
    finally:
        env.close()


def test_the_tool_face_needs_an_env_with_tools():
    with pytest.raises(ValueError, match="offers no tools"):
        gym.make("openenv/CartPole-v1", tool_calls=True)


def test_check_env_passes_on_tool_envs(echo, toolbox_url, calculator_url):
    check_env(echo.unwrapped)
    for url in (toolbox_url, calculator_url):
        env = gym.make("openenv/Remote-v0", base_url=url)
        try:
            check_env(env.unwrapped)
        finally:
            env.close()


# A tool env of our own: prompt, reward, done, limits -----------------------------------------


@pytest.fixture
def toolbox(toolbox_url):
    env = gym.make("openenv/Remote-v0", base_url=toolbox_url, max_episode_steps=4)
    yield env
    env.close()


def test_an_env_with_tools_and_no_spaces_gets_the_tool_face(toolbox):
    prompt, info = toolbox.reset(seed=1)
    assert prompt == "Add 2 and 3, then submit the sum."
    assert info["metadata"] == {"task": "sum"}
    assert "submit" in {tool["function"]["name"] for tool in info["tools"]}
    assert toolbox.step('{"name": "add", "arguments": {"a": 2, "b": 3}}')[:4] == ("5", 0.0, False, False)
    observation, reward, terminated, truncated, info = toolbox.step({"name": "submit", "arguments": {"answer": 5}})
    assert (observation, reward, terminated, truncated) == ("correct", 1.0, True, False)
    assert info["metadata"] == {"solved": True}


def test_the_turn_limit_truncates(toolbox):
    toolbox.reset()
    results = [toolbox.step('{"name": "add", "arguments": {"a": 1}}') for _ in range(4)]
    assert [truncated for *_, truncated, _ in results] == [False, False, False, True]
    assert not any(terminated for _, _, terminated, _, _ in results)


@pytest.mark.parametrize(
    ("call", "error_type", "message"),
    [
        (
            {"name": "fail", "arguments": {"why": "on purpose"}},
            "execution_error",
            "Error calling tool 'fail': on purpose",
        ),
        ({"name": "quick", "arguments": {}}, "timeout", "tool 'quick' did not return within 0.2 s"),
        ({"name": "huge", "arguments": {"megabytes": 10}}, "execution_error", "more than this environment's limit"),
    ],
)
def test_tool_failures_reach_the_model_as_observations(toolbox, call, error_type, message):
    toolbox.reset()
    observation, reward, terminated, _, info = toolbox.step(call)
    assert message in observation and info["error"]["error_type"] == error_type
    assert observation.startswith("Error") and observation.lower().count("error") == 1  # said once
    assert (reward, terminated) == (0.0, False)
    assert toolbox.step('{"name": "add", "arguments": {"a": 7}}')[0] == "7"


# A stock OpenEnv MCP server -------------------------------------------------------------------


def test_remote_v0_drives_an_openenv_mcp_server(calculator_url):
    env = gym.make("openenv/Remote-v0", base_url=calculator_url)
    try:
        assert isinstance(env.action_space, ToolCallSpace)
        _, info = env.reset(seed=0)
        names = [tool["function"]["name"] for tool in info["tools"]]
        assert names == ["echo_message", "echo_with_length", "calculate", "submit"]
        calculate = info["tools"][2]["function"]
        assert calculate["parameters"]["properties"]["expression"]["type"] == "string"
        assert env.step('{"name": "calculate", "arguments": {"expression": "6*7"}}')[:4] == ("42.0", -0.1, False, False)
        observation, reward, _, _, info = env.step('{"name": "calculate", "arguments": {"expression": "x"}}')
        assert "only numbers" in observation and info["error"]["error_type"] == "execution_error"
        assert reward == pytest.approx(-0.1)  # the env's own reward arrives with the error
        observation, reward, terminated, truncated, _ = env.step('{"name": "submit", "arguments": {"answer": 42}}')
        assert (observation, reward, terminated, truncated) == ("correct", 1.0, True, False)
    finally:
        env.close()


# The chat wrapper ---------------------------------------------------------------------------


def test_chat_messages_grow_by_one_call_and_its_result(toolbox_url):
    """The text format (tests/wrappers/test_chat.py has the structured one, the default)."""
    env = ChatMessages(gym.make("openenv/Remote-v0", base_url=toolbox_url), tool_format="text")
    try:
        messages, info = env.reset()
        assert [message["role"] for message in messages] == ["system", "user"]
        assert '"name": "submit"' in messages[0]["content"] and messages[1]["content"].startswith("Add 2 and 3")
        assert env.observation_space.contains(messages)
        messages, *_ = env.step('{"name": "add", "arguments": {"a": 2, "b": 3}}')
        messages, reward, terminated, _, _ = env.step({"name": "submit", "arguments": {"answer": 5}})
        assert [message["role"] for message in messages] == ["system", "user", "assistant", "tool", "assistant", "tool"]
        assert messages[3]["content"] == "5" and messages[5]["content"] == "correct"
        assert json.loads(messages[4]["content"]) == {"name": "submit", "arguments": {"answer": 5}}
        assert env.observation_space.contains(messages) and (reward, terminated) == (1.0, True)
        assert _rendered(messages, info["tools"])
    finally:
        env.close()


# A ChatML template that renders tool results (as Qwen's do); written here, so nothing is downloaded.
CHAT_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n{{ message['content'] }}<|im_end|>\n"
    "{% endfor %}{% if tools %}<tools>{{ tools | tojson }}</tools>{% endif %}"
)


def _rendered(messages, tools) -> bool:
    """The messages go through transformers' own apply_chat_template with a tokenizer built here."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    backend = Tokenizer(models.WordLevel({"[UNK]": 0}, unk_token="[UNK]"))
    backend.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=backend, unk_token="[UNK]")
    text = tokenizer.apply_chat_template(list(messages), tools=tools, chat_template=CHAT_TEMPLATE, tokenize=False)
    assert text.count("<|im_start|>") == len(messages)
    assert "<|im_start|>tool\ncorrect<|im_end|>" in text and '"name": "submit"' in text
    ids = tokenizer.apply_chat_template(list(messages), tools=tools, chat_template=CHAT_TEMPLATE, return_dict=False)
    return len(ids) > 0


def test_tool_face_names_are_public():
    assert openenv_gym.wrappers.ChatMessages is ChatMessages


# make_vec ------------------------------------------------------------------------------------


def test_make_vec_steps_text_calls_in_batches(toolbox_url):
    """One plain session per sub-env; bad calls answered locally; autoreset brings the next prompt."""
    envs = gym.make_vec("openenv/Remote-v0", num_envs=3, base_url=toolbox_url)
    try:
        assert isinstance(envs.single_action_space, ToolCallSpace) and "submit" in envs.single_action_space.tool_names
        prompts, infos = envs.reset(seed=0)
        assert prompts == ("Add 2 and 3, then submit the sum.",) * 3
        assert len(infos["tools"]) == 3 and infos["_tools"].all()
        actions = ('{"name": "add", "arguments": {"a": 1}}', "oops", {"name": "submit", "arguments": {"answer": 5}})
        texts, rewards, terminations, truncations, infos = envs.step(actions)
        assert texts[0] == "1" and texts[1].startswith("Error: ") and texts[2] == "correct"
        assert rewards.tolist() == [0.0, 0.0, 1.0] and terminations.tolist() == [False, False, True]
        assert not truncations.any()
        assert infos["error"]["error_type"][1] == "invalid_tool_call" and infos["_error"].tolist() == [
            False,
            True,
            False,
        ]
        # Results of different shapes sit side by side (read-only mappings, not merged key by key).
        assert infos["tool_result"][0]["data"] == 1 and infos["tool_result"][2]["data"] == "correct"
        texts, rewards, terminations, _, infos = envs.step(('{"name": "add", "arguments": {"a": 2}}',) * 3)
        assert texts == ("2", "2", "Add 2 and 3, then submit the sum.")  # NextStep: the ended sub-env reset
        assert rewards.tolist() == [0.0, 0.0, 0.0]
    finally:
        envs.close()


def test_make_vec_drives_openenv_mcp_servers(calculator_url):
    """An OpenEnv server lists no tools in /schema: the first session lists them."""
    envs = gym.make_vec("openenv/Remote-v0", num_envs=2, base_url=calculator_url)
    try:
        assert envs.single_action_space.tool_names == ("echo_message", "echo_with_length", "calculate", "submit")
        envs.reset(seed=0)
        texts, rewards, *_ = envs.step(
            (
                '{"name": "calculate", "arguments": {"expression": "1+1"}}',
                '{"name": "echo_message", "arguments": {"message": "hi"}}',
            )
        )
        assert texts == ("2.0", "hi") and rewards.tolist() == pytest.approx([-0.1, 0.0])
    finally:
        envs.close()


def test_make_vec_of_echo_tools():
    envs = gym.make_vec("openenv/Echo-v0", num_envs=2, tool_calls=True)
    try:
        envs.reset()
        texts, *_ = envs.step(('{"name": "echo_message", "arguments": {"message": "é"}}',) * 2)
        assert texts == ("é", "é")
    finally:
        envs.close()
