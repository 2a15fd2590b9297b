"""The web debug page in headless Chromium: its own session, forms, frames, plots, the JSONL log, tools, watch mode.

Every test ends by checking that the page logged no console error and that no request it made
left this machine (Chromium's performance log lists each one).
"""

from __future__ import annotations

import json
import time
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces

from openenv_gym.client import EnvClient
from openenv_gym.server import GymEnvironment, load_factory
from tests.tool_envs import ToolboxEnvironment
from tests.utils import running_server
from tests.web.browser import served


class CompositeEnv(gym.Env):
    """Every space the page builds a form for, nested; an image, a NaN and text in its observation."""

    action_space = spaces.Dict(
        {
            "move": spaces.Discrete(3, start=-1),
            "force": spaces.Box(-1.0, 1.0, (2,), np.float32),
            "keys": spaces.MultiDiscrete([2, 3]),
            "flags": spaces.MultiBinary(3),
            "say": spaces.Text(8, min_length=1, charset="abc"),
            "pair": spaces.Tuple((spaces.Discrete(2), spaces.Box(0, 5, (), np.int64))),
        }
    )
    observation_space = spaces.Dict(
        {
            "image": spaces.Box(0, 255, (16, 16, 3), np.uint8),
            "vector": spaces.Box(-np.inf, np.inf, (20,), np.float32),
            "said": spaces.Text(8, min_length=0, charset="abc"),
        }
    )

    def _observation(self, said: str) -> dict[str, Any]:
        image = np.zeros((16, 16, 3), np.uint8)
        image[4:12, 4:12] = (200, 30, 30)
        vector = np.arange(20, dtype=np.float32)
        vector[3] = np.nan
        return {"image": image, "vector": vector, "said": said}

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> Any:
        super().reset(seed=seed)
        return self._observation(""), {}

    def step(self, action: Any) -> Any:
        return self._observation(action["say"]), 0.5, False, False, {"move": int(action["move"])}


class MaskedEnv(gym.Env):
    """Discrete(4) whose info masks actions 1 and 3; taking a masked one is an error."""

    action_space = spaces.Discrete(4)
    observation_space = spaces.Discrete(2)
    mask = (1, 0, 1, 0)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> Any:
        super().reset(seed=seed)
        return 0, {"action_mask": np.array(self.mask, np.int8)}

    def step(self, action: Any) -> Any:
        if not self.mask[int(action)]:
            raise ValueError(f"action {action} is masked")
        return 1, 1.0, False, False, {"action_mask": np.array(self.mask, np.int8)}


def test_cartpole_steps_draws_plots_and_logs_an_episode_that_replays_locally(page):
    """Reset with a seed, step by buttons and arrow keys: the frame is drawn, the return plotted, and the
    downloaded JSONL replays to the same trajectory on a local CartPole-v1."""
    from selenium.webdriver.common.keys import Keys

    actions = [0, 1, 1, 0, 1, 0, 0, 1, 1, 1, 0, 0]
    with served("CartPole-v1") as server:
        page.open(server)
        assert page.find("#env-id").text == "CartPole-v1"
        assert page.find("#action-space").text == "Discrete(2)"
        modes = page.find("#render-modes").text
        assert "rgb_array" in modes and "human" not in modes and page.find("#render-fps").text == "50"
        page.set_seed(7)
        page.click("reset")
        page.wait_value("episode-count", 1)
        for action in actions[:8]:
            page.click(f"action-{action}")
        body = page.find("body")
        for action in actions[8:]:
            body.send_keys(Keys.ARROW_LEFT if action == 0 else Keys.ARROW_RIGHT)
        page.wait_value("step-count", len(actions))
        page.wait(lambda: page.canvas_ink() > 1000, "the frame to be drawn")
        line = page.find("[data-testid='plot-return-line']")
        assert int(line.get_attribute("data-points")) == len(actions)
        assert line.get_attribute("d").count("L") == len(actions) - 1
        assert page.value("episode-return") == str(len(actions))
        assert [r["action"] for r in page.records()[1:]] == [{"action": a} for a in actions]

        page.find("#scrubber").send_keys(Keys.HOME)  # back to the reset: the page shows that record
        page.wait(lambda: page.find("#viewing").is_displayed(), "the history view")
        assert page.find("#last-action").text == "reset"
        page.click("scrub-live")
        page.wait(lambda: not page.find("#viewing").is_displayed(), "the live view")

        log = page.download_log()
    assert log[0]["event"] == "reset" and log[0]["seed"] == 7 and log[0]["options"] is None
    assert [line["step"] for line in log] == list(range(len(actions) + 1))
    local = gym.make("CartPole-v1")
    try:
        observation, _ = local.reset(seed=log[0]["seed"])
        np.testing.assert_allclose(log[0]["observation"], observation, rtol=1e-6)
        for line in log[1:]:
            observation, reward, terminated, truncated, _ = local.step(line["action"]["action"])
            assert (line["reward"], line["terminated"], line["truncated"]) == (reward, terminated, truncated)
            np.testing.assert_allclose(line["observation"], observation, rtol=1e-6)
    finally:
        local.close()
    page.assert_clean()


def test_a_box_slider_s_value_reaches_the_env(page):
    """Pendulum's torque set on the slider, then typed past its bound (clamped to 2), steps the env with those torques."""
    with served("Pendulum-v1") as server:
        page.open(server)
        page.set_seed(3)
        page.click("reset")
        page.wait_value("episode-count", 1)
        slider = page.find("[data-testid='box-slider-0']")
        page.script("arguments[0].value = '1.24'; arguments[0].dispatchEvent(new Event('input'))", slider)
        assert page.find("[data-testid='box-number-0']").get_attribute("value") == "1.24"
        page.click("step")
        page.wait_value("step-count", 1)
        number = page.find("[data-testid='box-number-0']")
        number.clear()
        number.send_keys("5")
        page.click("step")  # the change event clamps 5 to the bound before the step reads it
        page.wait_value("step-count", 2)
        records = page.records()
    assert [r["action"] for r in records[1:]] == [{"action": [1.24]}, {"action": [2]}]
    local = gym.make("Pendulum-v1")
    try:
        local.reset(seed=3)
        for record, torque in zip(records[1:], [1.24, 2.0]):
            observation, reward, *_ = local.step(np.array([torque], dtype=np.float32))
            np.testing.assert_allclose(record["data"]["observation"]["observation"], observation, rtol=1e-6)
            assert record["data"]["reward"] == pytest.approx(reward)
    finally:
        local.close()
    page.assert_clean()


def test_a_coding_env_text_action_runs_and_its_stdout_shows(page):
    """Coding-v0's Text action (a program) runs in its sandbox, and the observation shows its stdout."""
    with served("openenv_gym.envs.coding:CodingEnvironment", env_kwargs={"limits": {"wall_time": 5}}) as server:
        page.open(server)
        assert page.find("#action-space").text.startswith("Text(0, 65536")
        page.click("reset")
        page.wait_value("episode-count", 1)
        page.find("#text-action").send_keys("print(6 * 7)\nprint('from the page')")
        page.click("step")
        page.wait_value("step-count", 1)
        stdout = page.wait(lambda: page.find("#observation [data-key='stdout']").text, "stdout")
        assert stdout == "42\nfrom the page"
        assert page.find("#observation [data-key='exit_code']").text == "0"
    page.assert_clean()


def test_a_tool_call_with_arguments_runs_and_its_result_shows(page):
    """A tool env's tools are listed; a call's arguments come from its schema's form, nested objects too."""
    from selenium.webdriver.support.ui import Select

    with running_server(ToolboxEnvironment) as server:
        page.open(server)
        assert not page.find("#tools-panel").get_attribute("hidden")
        page.click("reset")
        page.wait_value("episode-count", 1)
        tools = Select(page.find("#tool-select"))
        assert "add" in [option.text for option in tools.options]
        tools.select_by_visible_text("add")
        page.find("[data-arg='a']").send_keys("2")
        page.find("[data-arg='b']").send_keys("40")
        page.click("call-tool")
        page.wait_value("step-count", 1)
        assert page.find("#tool-result").text == "42"
        tools.select_by_visible_text("distance")
        for name, value in [("start.x", "0"), ("start.y", "0"), ("end.x", "3"), ("end.y", "4")]:
            page.find(f"[data-arg='{name}']").send_keys(value)
        page.click("call-tool")
        page.wait_value("step-count", 2)
        assert json.loads(page.find("#tool-result").text) == {"distance": 5.0}
        assert page.records()[-1]["action"] == {
            "type": "call_tool",
            "tool_name": "distance",
            "arguments": {"start": {"x": 0, "y": 0}, "end": {"x": 3, "y": 4}},
        }
    page.assert_clean()


def test_watch_mode_follows_a_client_s_session_and_acts_on_nothing(page):
    """The page watches a client's CartPole session from the sessions list: its counts follow the client's,
    frames come, no control acts, and a frame sent on the watch socket changes nothing."""
    with served("CartPole-v1") as server:
        client = EnvClient(server.url)
        client.ask_render_mode("rgb_array")
        client.connect()
        try:
            client.reset(seed=1)
            page.open(server)
            page.find("#sessions-panel > summary").click()
            rows = page.wait(
                lambda: [row for row in page.find_all("#sessions-list tr") if "(web)" not in row.text],
                "the client's session in the list",
            )
            session_id = rows[0].get_attribute("data-session")
            page.click(f"watch-{session_id}")
            page.wait(lambda: "watch=" in page.driver.current_url, "the watch page")
            page.wait(lambda: page.state() == "connected", "the watch socket")
            assert page.find("#watch-text").text.startswith(f"watching session {session_id} (read-only)")
            assert not page.find("#controls").is_displayed()
            enabled = page.script(
                "return [...document.querySelectorAll('#controls button, #controls input, #controls select,"
                " #controls textarea')].filter(e => !e.disabled).length"
            )
            assert enabled == 0
            steps = 0
            for action in [0, 1] * 6:
                frame = client.step({"action": action})
                steps += 1
                if frame.done:
                    break
                time.sleep(0.03)
            page.wait_value("step-count", steps)
            page.wait_value("total-steps", steps)
            page.wait(lambda: page.canvas_ink() > 1000, "the watched session's frame")
            page.script("window.openenvGymPage.watchSocket.send({type: 'step', data: {action: 1}})")
            page.wait(lambda: page.find("#error-code").text == "READ_ONLY", "the READ_ONLY refusal")
            assert client.state()["step_count"] == steps
        finally:
            client.close()
        page.wait(lambda: "ended" in page.find("#watch-text").text, "the end of the watched session")
    page.assert_clean()


def test_watch_mode_shows_a_sampled_episode_s_true_return_and_length(page):
    """A 53-step CartPole episode played faster than the page is sent transitions: the page shows its
    return and length, 53, and the next episode apart (issue 52: ~11, and the two merged)."""
    from openenv_gym.client import http_get_json

    with served("CartPole-v1") as server:
        client = EnvClient(server.url).connect()
        try:
            session_id = http_get_json(server.url, "/web/sessions")["sessions"][0]["id"]
            page.open(server, f"/web/?watch={session_id}")
            page.wait(lambda: http_get_json(server.url, "/web/sessions")["sessions"][0]["watchers"] == 1, "the watcher")
            frame = client.reset(seed=93)
            steps = 0
            while not frame.done:  # pushes toward the pole's lean: 53 steps from seed 93
                frame = client.step({"action": int(frame.observation["observation"][2] > 0)})
                steps += 1
            assert steps == 53
            client.reset(seed=0)
            for _ in range(5):
                client.step({"action": 0})
            page.wait_value("total-steps", 58)
            page.wait_value("step-count", 5)
            page.wait_value("episode-return", 5)
            assert page.script("return window.openenvGymPage.episodes") == [{"index": 1, "return": 53, "length": 53}]
        finally:
            client.close()
    page.assert_clean()


def test_every_space_gets_a_form_whose_random_actions_the_server_accepts(page):
    """A Dict of Discrete, Box, MultiDiscrete, MultiBinary, Text and Tuple: the form has a control for
    each, actions sampled in the page pass the server's check, a too-short Text is stopped in the page,
    and the observation's image is drawn and its array's NaN counted."""
    from selenium.webdriver.common.keys import Keys

    with running_server(lambda: GymEnvironment(CompositeEnv())) as server:
        page.open(server)
        page.click("reset")
        page.wait_value("episode-count", 1)
        form = page.find("#action-form")
        assert [legend.text for legend in form.find_elements("css selector", "legend")] == [
            "flags",
            "force",
            "keys",
            "move",
            "pair",
            "[0]",
            "[1]",
            "say",
        ]  # fmt: skip (a Dict space sorts its keys)
        assert len(form.find_elements("css selector", "input[type=checkbox]")) == 3
        assert len(form.find_elements("css selector", "input[type=range]")) == 3  # force[0], force[1], pair[1]
        page.find("#random-n").clear()
        page.find("#random-n").send_keys("6")
        page.click("random-steps")
        page.wait_value("step-count", 6)
        assert not page.find("#error-banner").is_displayed()
        red = page.script(
            "const c = document.querySelector('.obs-image'); const d = c.getContext('2d').getImageData(0, 0, 16, 16).data;"
            "let n = 0; for (let i = 0; i < d.length; i += 4) n += d[i] === 200 && d[i + 1] === 30 && d[i + 2] === 30;"
            "return n;"
        )
        assert red == 64  # the image's red square, pixel for pixel
        vector = page.find("#observation [data-key='vector']").text
        assert "shape (20,)" in vector and "NaN 1" in vector and "max 19" in vector
        said = page.find("[data-testid='text-say']")
        said.clear()
        page.click("step")
        page.wait(lambda: "expected 1 to 8 characters, got 0" in page.find("#action-problems").text, "the problem")
        said.send_keys("abcz")
        page.click("step")
        # A character outside the charset is only a warning in the page: the server judges, and refuses it.
        page.wait(lambda: page.find("#error-code").text == "VALIDATION_ERROR", "the server's refusal")
        assert "outside the space's charset (the server may refuse them): z" in page.find("#action-problems").text
        assert page.value("step-count") == "6"
        said.send_keys(Keys.BACKSPACE)
        page.click("step")
        page.wait_value("step-count", 7)
        assert page.records()[-1]["data"]["observation"]["said"] == "abc"
    page.assert_clean()


def test_the_action_mask_greys_buttons_and_error_frames_show(page):
    """A step before reset shows the server's error frame; then info["action_mask"] disables masked
    buttons and keys, and random steps keep to the allowed actions."""
    from selenium.webdriver.common.keys import Keys

    with running_server(lambda: GymEnvironment(MaskedEnv())) as server:
        page.open(server)
        page.click("action-0")
        page.wait(lambda: page.find("#error-banner").is_displayed(), "the error banner")
        assert page.find("#error-code").text == "SESSION_ERROR"
        assert page.find("#error-message").text == "step before reset: send a reset frame first"
        page.click("reset")
        page.wait_value("episode-count", 1)
        assert [page.find(f"#action-{a}").is_enabled() for a in range(4)] == [True, False, True, False]
        page.find("body").send_keys("1")  # masked: the key does nothing
        page.find("body").send_keys(Keys.ARROW_UP)  # action 2
        page.wait_value("step-count", 1)
        page.click("random-steps")
        page.wait_value("step-count", 11)
        page.click("run")  # at 10 steps/s: the env publishes no fps
        page.wait(lambda: int(page.value("step-count")) >= 14, "the run to step")
        page.click("run")
        paused = page.wait(lambda: page.queued() == 0 and page.value("step-count"), "the pause")
        time.sleep(0.3)
        assert page.value("step-count") == paused and page.find("#run").text == "Run"
        assert {r["action"]["action"] for r in page.records()[1:]} <= {0, 2}
    page.assert_clean()


class OneStepEnv(gym.Env):
    """Every episode ends at its first step, paying 1."""

    action_space = spaces.Discrete(2)
    observation_space = spaces.Discrete(2)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> Any:
        super().reset(seed=seed)
        return 0, {}

    def step(self, action: Any) -> Any:
        return 1, 1.0, True, False, {}


def test_a_step_after_the_episode_ended_is_refused_and_pays_nothing(page):
    """The page's step buttons stay live after an end (the user may press them): the server refuses the
    step with EPISODE_ENDED, the banner says so, and the episode's steps and return are unchanged."""
    with running_server(lambda: GymEnvironment(OneStepEnv())) as server:
        page.open(server)
        page.click("reset")
        page.wait_value("episode-count", 1)
        page.click("action-0")
        page.wait_value("step-count", 1)
        page.click("action-1")
        page.wait(lambda: page.find("#error-banner").is_displayed(), "the error banner")
        assert page.find("#error-code").text == "EPISODE_ENDED"
        assert "reset before stepping again" in page.find("#error-message").text
        assert page.value("step-count") == "1" and len(page.records()) == 2  # the reset and the one step
        page.click("reset")
        page.wait_value("episode-count", 2)
        page.click("action-0")
        page.wait_value("step-count", 1)


def test_ansi_frames_show_as_text(page):
    """With ?render_mode=ansi the page's session renders FrozenLake as text, shown preformatted."""
    with served("FrozenLake-v1") as server:
        page.open(server, "/web/?render_mode=ansi")
        assert "(this page: ansi)" in page.find("#render-modes").text
        page.set_seed(0)
        page.click("reset")
        page.wait_value("episode-count", 1)
        page.click("action-2")  # right
        page.wait_value("step-count", 1)
        text = page.wait(lambda: page.find("#frame-text").text, "the ansi frame")
        assert "(Right)" in text and "SFFF" in text
        assert not page.find("#frame").is_displayed()
    page.assert_clean()


def test_watch_mode_follows_one_sub_env_of_a_vector_session(page):
    """A trainer's make_vec session is listed with its size; the page watches the sub-env picked beside its link."""
    from selenium.webdriver.support.ui import Select

    with served("CartPole-v1") as server:
        envs = gym.make_vec("openenv/CartPole-v1", num_envs=2, base_url=server.url)
        try:
            envs.reset(seed=0)
            page.open(server)
            page.find("#sessions-panel > summary").click()
            rows = page.wait(
                lambda: [row for row in page.find_all("#sessions-list tr") if "vector" in row.text],
                "the vector session",
            )
            session_id = rows[0].get_attribute("data-session")
            Select(page.find(f"[data-testid='watch-env-{session_id}']")).select_by_value("1")
            page.click(f"watch-{session_id}")
            page.wait(lambda: page.driver.current_url.endswith(f"?watch={session_id}&env=1"), "the watch page")
            page.wait(lambda: "sub-env 1" in page.find("#watch-text").text, "the watch socket's hello")
            for _ in range(5):
                envs.step(np.array([0, 1]))
                time.sleep(0.03)
            page.wait_value("step-count", 5)
            assert page.records()[-1]["action"] == 1  # the watched sub-env's own action
        finally:
            envs.close()
    page.assert_clean()


def test_a_server_with_a_token_serves_the_page_after_its_cookie_login(page):
    """/web?token= logs the browser in once: the page's /schema, /metadata and /ws then carry the cookie."""
    with running_server(load_factory("CartPole-v1"), token="a-page-token") as server:
        page.open(server, "/web?token=a-page-token")
        assert page.driver.current_url == f"{server.url}/web"  # the token left the address bar
        page.click("reset")
        page.click("action-1")
        page.wait_value("step-count", 1)
    page.assert_clean()
