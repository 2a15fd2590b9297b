"""`ShmLink`: the client's end of a vector session's shared-memory steps (see :mod:`openenv_gym.protocol.shm`)."""

from __future__ import annotations

import contextlib
import fcntl
import mmap
import os
import select
import socket
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from ..errors import ProtocolError
from ..protocol import ErrorFrame, arrays
from ..protocol._json import invalid
from ..protocol.frames import parse_server_frame
from ..protocol.shm import (
    FIRST_SLEEP,
    LONGEST_SLEEP,
    REWARD_DTYPES,
    STATUS_ERROR,
    STATUS_OK,
    ShmLayout,
    ShmOffer,
    Spinner,
    fence,
    segment_seals,
)
from ..protocol.vector import VectorResultFrame

__all__ = ["ShmLink", "socket_address"]


def socket_address(name: str) -> str:
    """The address to connect to for an offer's socket: ``@name`` is Linux's abstract namespace."""
    return "\0" + name[1:] if name.startswith("@") else name


class ShmLink:
    """The segment of one session (a vector session's, or a plain one's: a batch of one), mapped,
    and the socket that wakes each side.

    Made by :meth:`open` from the server's offer. :meth:`send` writes a step's actions,
    :meth:`receive` waits for and reads its results.
    """

    def __init__(self, sock: socket.socket, segment: mmap.mmap, layout: ShmLayout) -> None:
        self._sock = sock
        self._map = segment
        self.layout = layout
        self.views: Any = layout.views(segment)
        self._seq = int(self.views.header["reply_seq"][0])
        self._spinner = Spinner()
        self._sent_at = 0.0
        self._rewards = self.views.reward_slots()

    @classmethod
    def open(cls, offer: ShmOffer, num_envs: int, timeout: float) -> ShmLink:
        """Take ``offer``: connect, show the ticket, map the segment handed back.

        Raises:
            OSError: the socket cannot be reached (another host, another network namespace) or
                the server hung up.
            ProtocolError: the layout or what came back is not what an offer promises (a segment
                too small, or one not sealed against resizing: whoever kept its descriptor could
                shrink it under this process's mapping, whose next read would kill it).
        """
        layout = ShmLayout.from_json(offer.layout, num_envs)
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
        try:
            sock.settimeout(timeout)
            sock.connect(socket_address(offer.socket))
            sock.sendall(offer.ticket.encode())
            message, fds, _, _ = socket.recv_fds(sock, 1, 1)
            if message != b"\1" or len(fds) != 1:
                for fd in fds:
                    os.close(fd)
                raise ConnectionError("the server did not hand over the segment")
            try:
                seals = segment_seals()
                if fcntl.fcntl(fds[0], fcntl.F_GET_SEALS) & seals != seals:
                    raise invalid("the segment is not sealed against resizing (F_SEAL_SHRINK, F_SEAL_GROW)")
                if os.fstat(fds[0]).st_size < layout.size:
                    raise invalid(f"the segment is smaller than its layout's {layout.size} bytes")
                segment = mmap.mmap(fds[0], layout.size)
            finally:
                os.close(fds[0])  # the mapping keeps the segment
        except BaseException:
            sock.close()
            raise
        sock.setblocking(False)  # waits go through select(): a socket timeout would poll before every recv
        return cls(sock, segment, layout)

    def send(self, actions: Any) -> None:
        """Write a step's actions and ask for the step.

        Raises:
            ValueError: the actions do not fit the layout (nothing was asked).
            OSError: the server is gone.
        """
        views = self.views
        actions = np.asarray(actions)
        if actions.dtype == views.actions.dtype and actions.shape == views.actions.shape:  # the usual case
            np.copyto(views.actions, actions)
            self.ask()
            return
        kinds = (actions.dtype.kind, views.actions.dtype.kind)
        if kinds[0] != kinds[1] and not set(kinds) <= {"i", "u"} and not (kinds[1] == "f" and kinds[0] in "iu"):
            raise ValueError(f"expected an array of {views.actions.dtype}, got one of {actions.dtype}")
        if actions.shape != views.actions.shape:
            raise ValueError(f"expected shape {views.actions.shape}, got shape {actions.shape}")
        if actions.dtype != views.actions.dtype:
            converted = actions.astype(views.actions.dtype)
            if not np.array_equal(converted, actions):
                raise ValueError(f"values that {views.actions.dtype} cannot hold")
            actions = converted
        np.copyto(views.actions, actions)  # the server checks the bounds
        self.ask()

    def send_one(self, action: Any) -> None:
        """Write a plain session's action (a value of its action space, checked by the caller) and ask for the step."""
        self.views.actions[0] = action
        self.ask()

    def ask(self) -> None:
        """Ask for a step of whatever the actions area holds (:meth:`send` writes it first)."""
        header = self.views.header
        self._seq += 1
        header["request_seq"][0] = self._seq
        self._sent_at = time.perf_counter()
        fence()
        if header["server_sleeping"][0]:
            with contextlib.suppress(BlockingIOError):  # a full buffer of wake-ups: it is not asleep
                self._sock.send(b"\0")

    def answered(self) -> bool:
        """Whether the reply to the step asked for is in."""
        return int(self.views.header["reply_seq"][0]) == self._seq

    def waitable(self) -> socket.socket:
        """The socket to wait on for the reply (readable when it is in, or the server is gone):
        from now on the server wakes this side when it answers; look at :meth:`answered` after."""
        self.views.header["client_sleeping"][0] = 1
        fence()
        return self._sock

    def receive(
        self, deadline: float, control: Any = None, on_control: Callable[[], None] | None = None
    ) -> VectorResultFrame | ErrorFrame:
        """The step's results (copies), or the error frame the server wrote.

        Args:
            deadline: when to give up (``time.monotonic()``).
            control, on_control: the session's WebSocket, and what to do when it turns readable
                while this side sleeps (read it: a close, or its connection cut under us, raises).

        Raises:
            TimeoutError: no reply by ``deadline`` (``time.monotonic()``); the step stays asked.
            ConnectionError: the server is gone.
            ProtocolError: the reply is malformed.
        """
        reply = self.views.header["reply_seq"]
        self.views.header["client_sleeping"][0] = 0  # awake (a wait on waitable() may have said otherwise)
        budget = self._spinner.budget()
        if budget:
            end = time.perf_counter() + budget
            while reply[0] != self._seq and time.perf_counter() < end:
                os.sched_yield()  # the GIL and the core, to whatever else runs here, for a moment
        if reply[0] != self._seq:
            self._sleep_until_answered(deadline, control, on_control)
        self._spinner.record(time.perf_counter() - self._sent_at)
        return self._read()

    def _sleep_until_answered(self, deadline: float, control: Any, on_control: Callable[[], None] | None) -> None:
        header = self.views.header
        waits = [self._sock] if control is None else [self._sock, control]
        reply, sleeping = header["reply_seq"], header["client_sleeping"]
        nap = FIRST_SLEEP
        sleeping[0] = 1
        fence()
        try:
            while reply[0] != self._seq:  # looked at after saying we sleep: a reply now wakes us
                left = deadline - time.monotonic()
                # Past the deadline, still look once: an end of either socket is news, not a timeout.
                readable, _, _ = select.select(waits, [], [], max(min(nap, left), 0.0))
                nap = min(2 * nap, LONGEST_SLEEP)
                if self._sock in readable:
                    self._drain()
                if control in readable and on_control is not None:
                    on_control()
                if left <= 0 and reply[0] != self._seq:
                    raise TimeoutError
        finally:
            sleeping[0] = 0

    def _drain(self) -> None:
        try:
            if not self._sock.recv(4096):
                raise ConnectionError("the server closed the shared-memory channel")
        except BlockingIOError:
            pass

    def _read(self) -> VectorResultFrame | ErrorFrame:
        views, header = self.views, self.views.header
        size = int(header["infos_bytes"][0])
        if size > self.layout.infos_capacity:
            raise invalid(f"the reply's infos claim {size} bytes, more than the segment's {self.layout.infos_capacity}")
        payload = views.infos[:size].tobytes()
        status = int(header["status"][0])
        if status == STATUS_ERROR:
            frame = parse_server_frame(payload.decode("utf-8", errors="replace"))
            if not isinstance(frame, ErrorFrame):
                raise invalid("an error reply in the segment must hold an error frame")
            return frame
        if status != STATUS_OK:
            raise invalid(f"unknown status {status} in the segment")
        code = int(header["reward_dtype"][0])
        if code >= len(REWARD_DTYPES):
            raise invalid(f"unknown reward dtype {code} in the segment")
        infos = arrays.unpack(payload) if size else {}
        if not isinstance(infos, dict):
            raise ProtocolError("VALIDATION_ERROR", "the reply's infos must be an object")
        moved = int(header["final_obs"][0])
        if moved not in (0, 1):
            raise invalid(f"final_obs must be 0 or 1 in the segment, not {moved}")
        if moved:  # Gymnasium's object array and mask, rebuilt from the rows
            mask = views.final_mask.view(np.uint8) != 0
            final = np.empty(len(mask), dtype=object)
            for row in np.flatnonzero(mask).tolist():
                final[row] = views.final_obs[row].copy()
            infos = {"final_obs": final, "_final_obs": mask, **infos}
        return VectorResultFrame(
            views.observations.copy(),
            infos,
            self._rewards[code].copy(),
            views.terminated.copy(),
            views.truncated.copy(),
        )

    def close(self) -> None:
        """Let go of the segment and the socket; idempotent."""
        self._sock.close()
        if self.views is not None:
            self.views, self._rewards = None, []
            try:
                self._map.close()
            except BufferError:  # an array still views it: the mapping goes with that array
                pass
