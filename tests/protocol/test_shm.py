"""The shared-memory segment's layout, offer and wait rules: pure, checked before anything is mapped."""

from __future__ import annotations

import numpy as np
import pytest

from openenv_gym.errors import ProtocolError
from openenv_gym.protocol.shm import MAX_SEGMENT_BYTES, ShmLayout, ShmOffer, Spinner
from openenv_gym.protocol.vector import parse_vector_client_frame, parse_vector_server_frame

LAYOUT = ShmLayout(8, "<i8", (), "<f4", (4,), 4096)


def test_a_layout_round_trips_and_its_arrays_are_aligned_and_apart():
    assert ShmLayout.from_json(LAYOUT.to_json(), 8) == LAYOUT
    offsets = LAYOUT.offsets()
    assert all(offset % 64 == 0 for offset in offsets.values())
    views = LAYOUT.views(bytearray(LAYOUT.size))
    assert views.actions.shape == (8,) and views.observations.shape == (8, 4)
    views.observations[:] = 1.0  # writing one array leaves the others alone
    assert not views.actions.any() and not views.rewards.any() and not views.header["reply_seq"].any()
    assert views.infos.nbytes == 4096


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"num_envs": 9}, "is for 9 sub-envs"),
        ({"infos_capacity": -1}, "infos_capacity"),
        ({"infos_capacity": True}, "infos_capacity"),
        ({"action": {"dtype": "O", "shape": []}}, "not a fixed-size number"),
        ({"action": {"dtype": "<U4", "shape": []}}, "not a fixed-size number"),
        ({"action": {"dtype": "nonsense", "shape": []}}, "is not a dtype"),
        ({"observation": {"dtype": "<f4", "shape": [-1]}}, "small integers"),
        ({"observation": {"dtype": "<f4", "shape": [2**30]}}, "small integers"),
        ({"observation": {"dtype": "<f4", "shape": [2**24, 2**24]}}, "more than"),
        ({"observation": "<f4"}, "must be"),
    ],
)
def test_a_layout_from_the_wire_is_checked(change, message):
    with pytest.raises(ProtocolError, match=message):
        ShmLayout.from_json({**LAYOUT.to_json(), **change}, 8)
    assert MAX_SEGMENT_BYTES == 2**31


def test_the_offer_and_the_open_request_parse_on_a_vector_session():
    offer = ShmOffer("@openenv-gym-shm-abc", "ab" * 32, LAYOUT.to_json())
    assert parse_vector_server_frame(offer.serialize()) == offer
    assert str(parse_vector_client_frame('{"type":"shm_open"}')) == "shm_open"
    for data, message in (
        ('{"socket":"","ticket":"","layout":{}}', "socket"),
        ('{"socket":"@x","ticket":"short","layout":{}}', "ticket"),
        ('{"socket":"@x","ticket":"' + "a" * 64 + '","layout":[]}', "layout"),
    ):
        with pytest.raises(ProtocolError, match=message):
            parse_vector_server_frame('{"type":"shm_offer","data":' + data + "}")


def test_a_side_watches_only_while_answers_come_quickly():
    spinner = Spinner(limit=300e-6)
    assert spinner.budget() == pytest.approx(20e-6)  # nothing learnt yet: a short look
    for _ in range(10):
        spinner.record(60e-6)
    assert 100e-6 < spinner.budget() <= 300e-6
    for _ in range(10):
        spinner.record(0.01)  # a trainer thinking between steps, or a slow env
    assert spinner.budget() == 0.0
    assert Spinner(limit=0.0).budget() == 0.0
    assert np.isfinite(spinner.typical)
