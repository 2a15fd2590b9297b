"""The snapshot frames and sealed bytes (pure), and where they sit in the session rules."""

from __future__ import annotations

import base64
import json

import pytest

from openenv_gym.errors import ProtocolError
from openenv_gym.protocol import ClientSession, ErrorFrame, ServerSession, SessionState, parse_client_frame
from openenv_gym.protocol.batch import BatchStepFrame, parse_batch_client_frame, parse_batch_server_frame
from openenv_gym.protocol.frames import parse_server_frame
from openenv_gym.protocol.snapshot import (
    BatchRestoreRequest,
    BatchSnapshotFrame,
    BatchSnapshotRequest,
    ReleaseRequest,
    RestoreRequest,
    SnapshotFrame,
    SnapshotRequest,
    seal,
    unseal,
)

OBSERVATION = '{"type":"observation","data":{"observation":{"action":0},"reward":1.0,"done":false}}'
ENDED = '{"type":"observation","data":{"observation":{"action":0},"reward":1.0,"done":true}}'


@pytest.mark.parametrize(
    "frame",
    [
        SnapshotRequest(),
        SnapshotRequest(portable=True),
        RestoreRequest(id="s-1"),
        RestoreRequest(portable=b"\x00\xffbytes"),
        ReleaseRequest(("s-1", "s-2")),
    ],
)
def test_each_request_reads_back_as_itself(frame):
    assert parse_client_frame(frame.serialize()) == frame


def test_the_reply_reads_back_as_itself():
    frame = SnapshotFrame(id="s-1", size=12, portable=b"sealed", held=2, held_bytes=40)
    assert parse_server_frame(frame.serialize()) == frame
    released = SnapshotFrame(released=("s-1",), held=1, held_bytes=28)
    assert parse_server_frame(released.serialize()) == released


@pytest.mark.parametrize(
    ("text", "complaint"),
    [
        ('{"type":"snapshot","data":{"portable":"yes"}}', "portable must be a boolean"),
        ('{"type":"restore","data":{}}', "either id .* or portable"),
        ('{"type":"restore","data":{"id":"s-1","portable":"AA=="}}', "either id .* or portable"),
        ('{"type":"restore","data":{"id":7}}', "id must be a string"),
        ('{"type":"restore","data":{"portable":"not base64!"}}', "not valid base64"),
        ('{"type":"release","data":{"ids":"s-1"}}', "ids must be a list"),
        ('{"type":"release","data":{"ids":[1]}}', "ids must be a list"),
    ],
)
def test_a_malformed_request_is_a_validation_error(text, complaint):
    with pytest.raises(ProtocolError, match=complaint) as raised:
        parse_client_frame(text)
    assert raised.value.code == "VALIDATION_ERROR"


def test_a_malformed_reply_is_refused():
    with pytest.raises(ProtocolError, match="integers"):
        parse_server_frame('{"type":"snapshot","data":{"id":"s-1","bytes":"12"}}')


def test_sealed_bytes_open_only_with_their_key_and_unaltered():
    blob = seal(b"key", {"env": "CartPole-v1", "ended": False}, b"\x80state")
    assert unseal(b"key", blob) == ({"env": "CartPole-v1", "ended": False}, b"\x80state")
    with pytest.raises(ProtocolError, match="not sealed with this server's key") as raised:
        unseal(b"another key", blob)
    assert raised.value.code == "SNAPSHOT_REFUSED"
    for position in (len(blob) - 1, 10, 40):  # the state, the mac, the header
        altered = bytearray(blob)
        altered[position] ^= 0x01
        with pytest.raises(ProtocolError, match=r"not sealed|not a portable"):
            unseal(b"key", bytes(altered))
    with pytest.raises(ProtocolError, match="not a portable snapshot"):
        unseal(b"key", base64.b64decode("gASVCAAAAAAAAACMBHBvc3SULg=="))  # a bare pickle


def test_the_server_refuses_a_snapshot_before_a_reset_but_takes_a_restore():
    session = ServerSession()
    refused = session.receive(SnapshotRequest().serialize())
    assert isinstance(refused, ErrorFrame) and "snapshot before reset" in refused.message
    assert session.receive(RestoreRequest(id="s-1").serialize()) == RestoreRequest(id="s-1")  # a fork's first frame
    session.restored(ended=True)
    assert session.state is SessionState.ENDED
    session.restored(ended=False)
    assert session.state is SessionState.READY
    session.reset_needed()  # a restore failed half-way
    refused = session.receive('{"type":"step","data":{"action":0}}')
    assert isinstance(refused, ErrorFrame) and "step before reset" in refused.message


def test_the_client_takes_the_ended_flag_of_a_restored_state():
    session = ClientSession()
    session.send_restore("s-1")
    session.receive(ENDED)
    assert session.state is SessionState.ENDED
    session.send_restore("s-1")
    session.receive(OBSERVATION)
    assert session.state is SessionState.READY
    session.send_snapshot()
    with pytest.raises(ProtocolError, match="snapshot expects a SnapshotFrame"):
        session.receive(OBSERVATION)


# --- on batch sessions -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "frame",
    [
        BatchSnapshotRequest((0, 2)),
        BatchSnapshotRequest((1,), portable=True),
        BatchRestoreRequest((0, 3), ids=("s-1", "s-1")),
        BatchRestoreRequest((2,), portables=(b"\x00sealed",)),
        ReleaseRequest(("s-1",)),
    ],
)
def test_each_batch_request_reads_back_as_itself(frame):
    assert parse_batch_client_frame(frame.serialize()) == frame


def test_the_batch_reply_reads_back_as_itself():
    frame = BatchSnapshotFrame((SnapshotFrame(id="s-1", size=3), SnapshotFrame(id="s-2", size=4, portable=b"x")), 2, 7)
    assert parse_batch_server_frame(frame.serialize()) == frame


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"envs": []}, "non-empty list"),
        ({"envs": [0, 0]}, "names a sub-env twice"),
        ({"envs": [-1]}, "non-empty list of sub-env indices"),
        ({"envs": [True]}, "non-empty list of sub-env indices"),
    ],
)
def test_a_batch_snapshot_names_each_sub_env_once(data, message):
    with pytest.raises(ProtocolError, match=message):
        parse_batch_client_frame(json.dumps({"type": "snapshot", "data": data}))


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"envs": [0, 1], "ids": ["s-1"]}, "one snapshot per sub-env"),
        ({"envs": [0], "ids": ["s-1"], "portable": ["eA=="]}, "either ids"),
        ({"envs": [0]}, "either ids"),
        ({"envs": [0], "portable": ["not base64!"]}, "not valid base64"),
        ({"envs": [0], "ids": [7]}, "ids must be strings"),
    ],
)
def test_a_batch_restore_takes_one_snapshot_per_sub_env(data, message):
    with pytest.raises(ProtocolError, match=message):
        parse_batch_client_frame(json.dumps({"type": "restore", "data": data}))


def test_a_batch_snapshot_before_the_first_reset_is_refused():
    session = ServerSession(parse_batch_client_frame, step_types=(BatchStepFrame,))
    refused = session.receive(BatchSnapshotRequest((0,)).serialize())
    assert isinstance(refused, ErrorFrame) and refused.code == "SESSION_ERROR"
    assert session.receive(BatchRestoreRequest((0,), ids=("s-1",)).serialize()) == BatchRestoreRequest(
        (0,), ids=("s-1",)
    )
