"""Tests for openenv_gym.protocol.pickled: the batch_make frame, the query, and the rule for taking pickles (no sockets)."""

from __future__ import annotations

import json
import re
import sys

import pytest

from openenv_gym.errors import ProtocolError
from openenv_gym.protocol.batch import AutoresetMode, BatchQuery, parse_batch_query
from openenv_gym.protocol.pickled import (
    BatchMakeFrame,
    check_pickles_allowed,
    import_path,
    parse_batch_make,
    pickled_batch_query,
    wants_pickled_factories,
)


def test_batch_make_round_trips_its_bytes_as_base64():
    """A batch_make frame carries arbitrary bytes as base64 text, the version, the first index and the
    client's import path, and parses back."""
    frame = BatchMakeFrame([b"\x80\x05first", b"\x00\xffsecond"], "3.11", first=4, path=["/home/me/project"])
    text = frame.serialize()
    assert json.loads(text) == {
        "type": "batch_make",
        "data": {
            "factories": ["gAVmaXJzdA==", "AP9zZWNvbmQ="],
            "python": "3.11",
            "first": 4,
            "path": ["/home/me/project"],
        },
    }
    assert parse_batch_make(text, 2) == frame
    assert str(frame) == "batch_make of 2 factories (15 bytes)"


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"factories": ["AA=="], "python": "3.11"}, "batch_make has 1 factories for 2 sub-envs"),
        ({"factories": "AA==", "python": "3.11"}, "batch_make needs data.factories, a list of base64 strings"),
        ({"factories": ["AA==", "not base64!"], "python": "3.11"}, "batch_make factories must be base64"),
        ({"factories": ["AA==", "AA=="]}, "batch_make needs data.python"),
        ({"factories": ["AA==", "AA=="], "python": "3.11", "first": -1}, "data.first must be a non-negative integer"),
        ({"factories": ["AA==", "AA=="], "python": "3.11", "path": "/src"}, "data.path must be a list of strings"),
    ],
    ids=["count", "not-a-list", "not-base64", "no-version", "first", "path"],
)
def test_a_malformed_batch_make_is_a_validation_error(data, message):
    """A batch_make of the wrong shape is a VALIDATION_ERROR saying what is wrong."""
    with pytest.raises(ProtocolError, match=re.escape(message)) as caught:
        parse_batch_make(json.dumps({"type": "batch_make", "data": data}), 2)
    assert caught.value.code == "VALIDATION_ERROR"


def test_a_batch_make_without_a_path_asks_for_no_entries():
    """A client that sends no path (an older one) gets none added: the path is empty."""
    frame = parse_batch_make(json.dumps({"type": "batch_make", "data": {"factories": ["AA=="], "python": "3.11"}}), 1)
    assert frame.path == []


def test_the_import_path_is_this_interpreter_s_with_every_entry_absolute(monkeypatch, tmp_path):
    """The working directory ("") and relative entries are made absolute: the server's working directory is another."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", ["", "relative", "/an/absolute/one"])
    assert import_path() == [str(tmp_path), str(tmp_path / "relative"), "/an/absolute/one"]


def test_a_session_of_pickled_factories_opens_with_batch_make():
    """Any other first frame is refused."""
    with pytest.raises(ProtocolError, match=re.escape("opens with batch_make, got 'batch_reset'")):
        parse_batch_make('{"type":"batch_reset","data":{}}', 1)


def test_the_query_asks_for_pickled_factories_on_top_of_a_batch_session():
    """The query is a batch session's, plus factories=pickled; another kind of factories is refused."""
    query = pickled_batch_query(3, AutoresetMode.SAME_STEP)
    assert query == "envs=3&autoreset_mode=SameStep&factories=pickled"
    assert parse_batch_query(query, 8) == BatchQuery(3, AutoresetMode.SAME_STEP)
    assert wants_pickled_factories(query) and not wants_pickled_factories("envs=3")
    with pytest.raises(ProtocolError, match=re.escape("unknown factories='dill'")):
        wants_pickled_factories("envs=3&factories=dill")


@pytest.mark.parametrize(
    ("accepted", "token_required", "message"),
    [
        (False, True, "it was started without --accept-pickled-factories"),
        (False, False, "it was started without --accept-pickled-factories"),
        (True, False, "it requires no token"),
    ],
)
def test_pickles_need_the_opt_in_and_a_token(accepted, token_required, message):
    """A server takes pickles only when it was started to and requires a token; otherwise PICKLES_REFUSED."""
    with pytest.raises(ProtocolError, match=re.escape(message)) as caught:
        check_pickles_allowed(accepted, token_required)
    assert caught.value.code == "PICKLES_REFUSED"
    check_pickles_allowed(True, True)
