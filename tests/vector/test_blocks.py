"""The block interface of the vector env, with recording sessions: no servers."""

from __future__ import annotations

import numpy as np
import pytest
from gymnasium import spaces
from gymnasium.vector import AutoresetMode

from openenv_gym.errors import ConnectionLostError
from openenv_gym.face import PublishedSpaces
from openenv_gym.protocol.batch import BatchResultFrame
from openenv_gym.protocol.vector import VectorResultFrame
from openenv_gym.vector.batch_block import BatchBlock, BatchCodec
from openenv_gym.vector.faults import FAILURE_INFO_KEY, ask_all, send_all
from openenv_gym.vector.plain_block import PlainBlock
from openenv_gym.vector.vector_block import VectorBlock, VectorCodec


class RecordingSession:
    """A session that records the requests begun on it and answers them from a queue."""

    def __init__(self, url: str, *, fail_on: str | None = None) -> None:
        self.url = url
        self.sent: list[tuple[str, object]] = []
        self.replies: list[object] = []
        self.fail_on = fail_on

    def _record(self, kind: str, value: object = None) -> None:
        if kind == self.fail_on:
            raise ConnectionLostError(self.url, kind, None, "dropped")
        self.sent.append((kind, value))

    def connect(self) -> RecordingSession:
        return self

    def close(self) -> None:
        self.sent.append(("close", None))

    def complete(self, timeout: float | None = None) -> object:
        return self.replies.pop(0)

    def begin_render(self) -> None:
        self._record("render")

    def begin_batch_reset(self, seeds=None, options=None, mask=None) -> None:
        self._record("reset", (seeds, options, mask))

    def begin_batch_step(self, actions) -> None:
        self._record("step", actions)

    def begin_vector_reset(self, seed=None, options=None, mask=None) -> None:
        self._record("reset", (seed, options, mask))

    def begin_vector_step(self, actions) -> None:
        self._record("step", actions)


def test_a_batch_block_slices_the_vector_envs_seeds_and_mask_and_resets_after_a_restart():
    """begin_reset takes the env's per-sub-env seeds and mask; a NextStep restart's next step is a reset."""
    block = BatchBlock(RecordingSession, "ws://a", None, 2, 4)
    block.begin_reset([0, 1, 2, 3], None, [True, False, False, True])
    assert block.client.sent == [("reset", ([2, 3], None, [False, True]))]
    block.reset_next = True
    block.begin_step([{"action": 0}, {"action": 1}])
    assert block.client.sent[-1] == ("reset", (None, None, None))
    result = block.read_step(BatchResultFrame(["o1", "o2"], [{}, {}]))
    assert (result.rewards, result.terminated, result.truncated) == ([0.0, 0.0], [False, False], [False, False])
    assert not block.reset_next


def test_a_lost_batch_block_reports_its_last_observations_truncated_with_the_reason():
    """NextStep: last observations, no reward, truncated, remote_failure; the next step resets."""
    block = BatchBlock(RecordingSession, "ws://a", None, 0, 2)
    block.remember(BatchResultFrame(["o1", "o2"], [{}, {}], [1.0, 1.0], [False, False], [False, False]))
    lost = block.lost("ConnectionLostError: gone", AutoresetMode.NEXT_STEP, FAILURE_INFO_KEY)
    assert lost.observations == ["o1", "o2"] and lost.truncated == [True, True] and lost.rewards == [0.0, 0.0]
    assert lost.infos == [{FAILURE_INFO_KEY: "ConnectionLostError: gone"}] * 2
    assert block.reset_next


def test_a_vector_block_seeds_its_vector_env_at_its_first_sub_env():
    """reset(seed=s) seeds the block at sub-env k with s + k; other seeds go as the block's own list."""
    block = VectorBlock(
        RecordingSession, "ws://a", None, 3, 6, backend="gymnasium", observation_space=spaces.Discrete(2)
    )
    block.begin_reset([10, 11, 12, 13, 14, 15], None, None)
    block.begin_reset([1, 5, 2, 3, None, 6], None, None)
    assert block.client.sent == [("reset", (13, None, None)), ("reset", ([3, None, 6], None, None))]


def test_plain_blocks_share_their_server_and_refuse_pooling_and_calls():
    """A plain session's server serves many: a hung one is not killed; no send/recv pools."""
    assert BatchBlock.exclusive and BatchBlock.pools and VectorBlock.exclusive
    assert not PlainBlock.exclusive and not PlainBlock.pools


def test_send_all_reads_the_replies_already_asked_for_before_an_error_propagates():
    """A send that fails with a non-recoverable error leaves no unread reply on the sessions before it."""
    first = BatchBlock(RecordingSession, "ws://a", None, 0, 1)
    first.client.replies.append("reply")
    second = BatchBlock(RecordingSession, "ws://b", None, 1, 2)

    def send(block):
        if block is second:
            raise RuntimeError("bad")
        block.begin_render()

    with pytest.raises(RuntimeError):
        send_all([first, second], send)
    assert first.client.replies == []


def test_ask_all_reads_every_reply_then_raises_a_lost_servers_failure():
    """render/call ask every block; a lost block's failure comes after the others' replies are read."""
    healthy = BatchBlock(RecordingSession, "ws://a", None, 0, 1)
    healthy.client.replies.append("frame")
    lost = BatchBlock(lambda url: RecordingSession(url, fail_on="render"), "ws://b", None, 1, 2)
    with pytest.raises(ConnectionLostError):
        ask_all([lost, healthy], lambda block: block.begin_render())
    assert healthy.client.replies == []


def test_codecs_convert_a_batch_once_and_join_blocks_in_order():
    """BatchCodec: one wire action list for the batch; VectorCodec: arrays joined, never converted."""
    face = PublishedSpaces(spaces.Discrete(2), spaces.Box(-1, 1, (2,), np.float32))
    codec = BatchCodec(face, 3, lambda: "test")
    assert codec.prepare(np.array([0, 1, 1]), spaces.MultiDiscrete([2, 2, 2]), 3) == [
        {"action": 0},
        {"action": 1},
        {"action": 1},
    ]
    blocks = [BatchBlock(RecordingSession, "ws://a", None, 0, 2), BatchBlock(RecordingSession, "ws://b", None, 2, 3)]
    results = [
        BatchResultFrame([{"observation": [0, 0]}, {"observation": [0.5, 0]}], [{}, {"k": 1}], [1, 2], [0, 1], [0, 0]),
        BatchResultFrame([np.array([1, 1], np.float32)], [{}], [3], [0], [1]),
    ]
    observations, rewards, terminated, truncated, infos = codec.assemble_step(blocks, results)
    assert observations.tolist() == [[0, 0], [0.5, 0], [1, 1]] and rewards.tolist() == [1.0, 2.0, 3.0]
    assert terminated.tolist() == [False, True, False] and truncated.tolist() == [False, False, True]
    assert infos["_k"].tolist() == [False, True, False]
    vector = VectorCodec(spaces.Discrete(2), spaces.Box(-1, 1, (2,), np.float32), 3, lambda: "test")
    vector_blocks = [
        VectorBlock(
            RecordingSession, "ws://a", None, 0, 1, backend="gymnasium", observation_space=face.observation_space
        ),
        VectorBlock(
            RecordingSession, "ws://b", None, 1, 3, backend="gymnasium", observation_space=face.observation_space
        ),
    ]
    frames = [
        VectorResultFrame(np.zeros((1, 2), np.float32), {}, np.ones(1), np.zeros(1, bool), np.zeros(1, bool)),
        VectorResultFrame(np.ones((2, 2), np.float32), {}, np.ones(2), np.ones(2, bool), np.zeros(2, bool)),
    ]
    observations, rewards, terminated, _, _ = vector.assemble_step(vector_blocks, frames)
    assert (
        observations.dtype == np.float32 and observations.shape == (3, 2) and terminated.tolist() == [False, True, True]
    )
    assert vector_blocks[1].last_result is frames[1]
