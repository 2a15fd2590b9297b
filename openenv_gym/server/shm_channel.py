"""`ShmChannel`: a session's steps through shared memory, in a thread of its own.

Once a client takes the session's offer (see :mod:`openenv_gym.protocol.shm`), the channel's
thread owns the env (a vector env, or a plain session's): it answers steps from the segment and
runs every other call of the env (reset, render, close) that the session hands it, so the env is
still only ever called from one thread. It never trusts the segment: the actions are copied out
before they are checked, and nothing else the client writes is read but the request number and
its sleeping flag. The segment is sealed against resizing before the client gets it (a client
that kept the descriptor cannot truncate it under the server's mapping: the ``SIGBUS`` would
take every session of the server with it, and Python cannot catch it per thread). Should the
thread fail all the same, the failure is logged and ends its own session only (``on_failure``).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import fcntl
import logging
import mmap
import os
import queue
import secrets
import select
import socket
import threading
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from ..errors import ProtocolError
from ..protocol import ErrorFrame, arrays
from ..protocol.shm import (
    FIRST_SLEEP,
    LONGEST_SLEEP,
    MAX_SEGMENT_BYTES,
    REWARD_DTYPES,
    STATUS_ERROR,
    STATUS_OK,
    TICKET_BYTES,
    ShmLayout,
    ShmOffer,
    Spinner,
    array_kind_ok,
    fence,
    new_ticket,
    segment_seals,
)
from .peer_user import peer_uid, same_user

__all__ = ["SHM_ACCEPT_TIMEOUT", "ShmChannel", "ShmOfferPending", "layout_for"]

logger = logging.getLogger(__name__)

#: How long an offer waits for its client to connect.
SHM_ACCEPT_TIMEOUT = 10.0
#: Bytes kept for each reply's infos: this much, plus room for a batch of observations (a
#: SameStep ``final_obs`` that cannot go in its own rows, say of another dtype).
INFOS_BASE_CAPACITY = 64 * 2**10

#: A step of the vector env: the checked actions -> (observations, rewards, terminated, truncated, infos).
StepFn = Callable[[np.ndarray], tuple[Any, Any, Any, Any, dict[str, Any]]]


def layout_for(single_action_space: Any, single_observation_space: Any, size: int) -> ShmLayout | str:
    """The segment's layout for a vector env of ``size`` sub-envs, or why it cannot have one.

    Actions and observations must batch into one fixed-size numeric array each (Box, Discrete,
    MultiDiscrete, MultiBinary); a Dict, Tuple or Text space stays on the WebSocket.
    """
    from gymnasium.vector.utils import create_empty_array

    batches: list[np.ndarray] = []
    for what, space in (("action", single_action_space), ("observation", single_observation_space)):
        batch = create_empty_array(space, size)
        if not isinstance(batch, np.ndarray) or not array_kind_ok(batch.dtype):
            return f"the {what} space {space} does not batch into one array of numbers"
        batches.append(batch)
    actions, observations = batches
    capacity = INFOS_BASE_CAPACITY + 2 * observations.nbytes
    layout = ShmLayout(
        size, actions.dtype.str, actions.shape[1:], observations.dtype.str, observations.shape[1:], capacity
    )
    if layout.size > MAX_SEGMENT_BYTES:
        return f"a segment of {layout.size} bytes is more than {MAX_SEGMENT_BYTES}"
    return layout


_FINAL_OBS_KEYS = ("final_obs", "_final_obs")


def final_obs_rows(infos: dict[str, Any], batch: np.ndarray) -> list[int] | None:
    """The sub-envs whose SameStep last observation ``infos["final_obs"]`` holds, if they can travel
    as rows of ``batch`` (the segment's ``final_obs``): Gymnasium's object array of observations
    of ``batch``'s dtype and row shape exactly where ``infos["_final_obs"]`` is true, ``None``
    elsewhere. ``None`` when they cannot: the infos then carry them, packed item by item.

    Example:
        >>> batch = np.zeros((3, 2), np.float32)
        >>> final = np.array([None, np.ones(2, np.float32), None], dtype=object)
        >>> final_obs_rows({"final_obs": final, "_final_obs": np.array([False, True, False])}, batch)
        [1]
        >>> final_obs_rows({"final_obs": final, "_final_obs": np.array([True, True, False])}, batch) is None
        True
    """
    final, mask = infos.get("final_obs"), infos.get("_final_obs")
    n = len(batch)
    if type(final) is not np.ndarray or final.dtype != object or final.shape != (n,):
        return None
    if type(mask) is not np.ndarray or mask.dtype != np.bool_ or mask.shape != (n,):
        return None
    rows, dtype, shape = [], batch.dtype, batch.shape[1:]
    for row, (item, present) in enumerate(zip(final.tolist(), mask.tolist())):
        if item is None and not present:
            continue
        if not present or type(item) is not np.ndarray or item.dtype != dtype or item.shape != shape:
            return None
        rows.append(row)
    return rows


class ShmOfferPending:
    """An offer made on the WebSocket, waiting on its listening socket for the client to take it."""

    def __init__(self, layout: ShmLayout) -> None:
        self.layout = layout
        self.ticket = new_ticket()
        # An abstract Unix socket: no file to leave behind, none to reach from another network
        # namespace (a container); the ticket and the peer's user (peer_user.same_user) decide who may take it.
        self.address = "\0openenv-gym-shm-" + secrets.token_hex(16)
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
        try:
            self.listener.bind(self.address)
            self.listener.listen(1)
            self.listener.setblocking(False)
        except BaseException:
            self.listener.close()
            raise
        self.task: asyncio.Task[None] | None = None

    def frame(self) -> ShmOffer:
        return ShmOffer("@" + self.address[1:], self.ticket, self.layout.to_json())

    async def taken(self, timeout: float) -> socket.socket | None:
        """The connection of the client that showed the ticket within ``timeout``, or None."""
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(timeout):
                while True:
                    connection, _ = await loop.sock_accept(self.listener)
                    if await self._admits(loop, connection):
                        return connection
                    connection.close()
        except TimeoutError:
            logger.info("a shared-memory offer was not taken within %g s", timeout)
            return None
        finally:
            self.withdraw()

    async def _admits(self, loop: asyncio.AbstractEventLoop, connection: socket.socket) -> bool:
        if not same_user(connection):
            logger.warning(
                "a process of another user (uid %s) tried to take a shared-memory offer", peer_uid(connection)
            )
            return False
        shown = b""
        while len(shown) < 2 * TICKET_BYTES:
            chunk = await loop.sock_recv(connection, 2 * TICKET_BYTES - len(shown))
            if not chunk:
                return False
            shown += chunk
        return secrets.compare_digest(shown, self.ticket.encode())

    def withdraw(self) -> None:
        """Stop listening (idempotent); a wait in :meth:`taken` ends."""
        self.listener.close()
        if self.task is not None and self.task is not asyncio.current_task():
            self.task.cancel()


class ShmChannel:
    """The segment of one session and the thread that serves it.

    The thread watches the segment for a moment before it sleeps (a :class:`Spinner`) only while
    it is the process's one channel: each look takes the GIL, and two watching threads would pass
    it back and forth while the others' steps wait for it.

    Args:
        layout: the segment's layout.
        step: checks and steps (raises :class:`ProtocolError` for a bad request); runs in the thread.
        error_frame: the frame of an exception the step raised (with or without its traceback).
        on_failure: called in the thread, once the channel has hung up, when the thread dies of an
            exception (logged already): the session is to end.
    """

    #: How many channels of this process have a running thread.
    running = 0
    _running_lock = threading.Lock()

    def __init__(
        self,
        layout: ShmLayout,
        step: StepFn,
        error_frame: Callable[[BaseException], ErrorFrame],
        on_failure: Callable[[BaseException], None] | None = None,
    ) -> None:
        self.layout = layout
        self._step = step
        self._error_frame = error_frame
        self._on_failure = on_failure
        self.fd = os.memfd_create("openenv-gym-shm", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
        try:
            os.ftruncate(self.fd, layout.size)
            fcntl.fcntl(self.fd, fcntl.F_ADD_SEALS, segment_seals())  # before anyone else holds it
            self._map = mmap.mmap(self.fd, layout.size)
        except BaseException:
            os.close(self.fd)
            raise
        self.views = layout.views(self._map)
        self._actions = np.empty_like(self.views.actions)  # the server's own copy, checked
        # Each reward dtype's index in the header and view of the slot (keyed by dtype: its .name is slow).
        self._rewards = {slot.dtype: (code, slot) for code, slot in enumerate(self.views.reward_slots())}
        self._calls: queue.SimpleQueue[tuple[concurrent.futures.Future[Any], Callable[[], Any]]] = queue.SimpleQueue()
        # Whether the thread still takes calls: set before it starts, cleared (under the lock) before
        # its last look at the queue, so a call is either run there or not queued at all.
        self._taking_calls = False
        self._calls_lock = threading.Lock()
        self._wake_read, self._wake_write = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        self._sock: socket.socket | None = None
        self._thread: threading.Thread | None = None
        self._stopping = False
        self._hung_up = False
        self._spinner = Spinner()
        self._sleep = FIRST_SLEEP
        #: Whether the client's end of the socket closed (it closed the session, or died).
        self.peer_gone = False

    def start(self, connection: socket.socket) -> None:
        """Hand the client the segment over ``connection`` and start serving it."""
        connection.setblocking(True)
        socket.send_fds(connection, [b"\1"], [self.fd])
        os.close(self.fd)  # the mapping stays; the kernel frees it when both sides have let go
        self.fd = -1
        connection.setblocking(False)  # a client that never reads its wake-ups must not block the thread
        self._sock = connection
        self._thread = threading.Thread(target=self._run, name="openenv-gym-shm", daemon=True)
        self._taking_calls = True
        self._thread.start()

    async def run(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Run ``fn`` in the channel's thread, between steps, and return what it returns."""
        future: concurrent.futures.Future[Any] = concurrent.futures.Future()
        with self._calls_lock:
            taking = self._taking_calls
            if taking:
                self._calls.put((future, lambda: fn(*args, **kwargs)))
        if not taking:  # stopped, or failed: the env is nobody's now
            return await asyncio.to_thread(fn, *args, **kwargs)
        self._wake()
        return await asyncio.wrap_future(future)

    def _wake(self) -> None:
        with contextlib.suppress(BlockingIOError, OSError):
            os.write(self._wake_write, b"\0")

    # The thread ---------------------------------------------------------------------------------

    def _run(self) -> None:
        header = self.views.header
        request, reply = header["request_seq"], header["reply_seq"]
        with ShmChannel._running_lock:
            ShmChannel.running += 1
        try:
            while not self._stopping:
                self._run_calls()
                if request[0] != reply[0] and not self._hung_up:
                    self._serve(int(request[0]))
                    continue
                self._wait(request, reply)
        except BaseException as exc:  # SystemExit from an env too: a thread never dies in silence
            logger.exception("a session's shared-memory channel failed; that session ends")
            self.hang_up()
            if self._on_failure is not None:
                self._on_failure(exc)
        finally:
            with ShmChannel._running_lock:
                ShmChannel.running -= 1
            with self._calls_lock:
                self._taking_calls = False
            self._run_calls()  # a call queued as it stopped still gets its answer

    def _run_calls(self) -> None:
        while True:
            try:
                future, call = self._calls.get_nowait()
            except queue.Empty:
                return
            if not future.set_running_or_notify_cancel():
                continue
            try:
                future.set_result(call())
            except BaseException as exc:
                future.set_exception(exc)

    def _wait(self, request: np.ndarray, reply: np.ndarray) -> None:
        """Wait for the next request or call: a short spin if requests have come quickly, then sleep."""

        def idle() -> bool:  # no request to answer (none, or hung up) and no call to run
            return (request[0] == reply[0] or self._hung_up) and self._calls.empty()

        started = time.perf_counter()
        budget = self._spinner.budget() if ShmChannel.running == 1 else 0.0
        if budget:
            end = started + budget
            while idle() and time.perf_counter() < end:
                os.sched_yield()  # lets the session's loop (a reset on the WebSocket) take the GIL
        if idle():
            sleeping = self.views.header["server_sleeping"]
            sleeping[0] = 1
            fence()
            if idle():  # looked again after saying so: a request now wakes us
                waits: list[Any] = [self._wake_read]
                if not self.peer_gone and self._sock is not None:
                    waits.append(self._sock)
                readable, _, _ = select.select(waits, [], [], self._sleep)
                self._sleep = min(2 * self._sleep, LONGEST_SLEEP)
                for source in readable:
                    self._drain(source)
            sleeping[0] = 0
        if request[0] != reply[0]:
            self._spinner.record(time.perf_counter() - started)
            self._sleep = FIRST_SLEEP

    def _drain(self, source: Any) -> None:
        try:
            if source is self._wake_read:
                os.read(self._wake_read, 4096)
            elif not source.recv(4096):
                self.peer_gone = True
        except BlockingIOError:
            pass
        except OSError:
            self.peer_gone = self.peer_gone or source is self._sock

    def _serve(self, seq: int) -> None:
        views, header = self.views, self.views.header
        np.copyto(self._actions, views.actions)  # what is checked is ours: the client may write on
        status, payload, reward_dtype = STATUS_OK, b"", 0
        try:
            observations, rewards, terminated, truncated, infos = self._step(self._actions)
            np.copyto(views.observations, observations, casting="same_kind")
            rewards = np.asarray(rewards)
            if rewards.dtype not in self._rewards:
                raise TypeError(f"rewards of dtype {rewards.dtype} (shared memory carries {list(REWARD_DTYPES)})")
            reward_dtype, slot = self._rewards[rewards.dtype]
            np.copyto(slot, rewards)
            np.copyto(views.terminated, terminated)
            np.copyto(views.truncated, truncated)
            rows = final_obs_rows(infos, views.final_obs) if "final_obs" in infos else None
            if rows is not None:
                final = infos["final_obs"]
                for row in rows:
                    views.final_obs[row] = final[row]
                views.final_mask[:] = infos["_final_obs"]
                infos = {key: value for key, value in infos.items() if key not in _FINAL_OBS_KEYS}
            header["final_obs"][0] = rows is not None
            payload = arrays.pack(infos) if infos else b""
        except ProtocolError as exc:
            status, payload = STATUS_ERROR, ErrorFrame.from_exception(exc).serialize().encode()
        except Exception as exc:
            status, payload = STATUS_ERROR, self._error_frame(exc).serialize().encode()
        if len(payload) > self.layout.infos_capacity:
            status = STATUS_ERROR
            payload = (
                ErrorFrame(
                    "EXECUTION_ERROR",
                    f"the step's infos take {len(payload)} bytes, more than the segment's {self.layout.infos_capacity}: "
                    "use transport='ws' for this env",
                )
                .serialize()
                .encode()
            )
        if payload:
            views.infos[: len(payload)] = np.frombuffer(payload, np.uint8)
        header["infos_bytes"][0] = len(payload)
        header["status"][0] = status
        header["reward_dtype"][0] = reward_dtype
        header["reply_seq"][0] = seq  # last: the client reads the reply once it sees this
        fence()
        if header["client_sleeping"][0] and not self.peer_gone and self._sock is not None:
            try:
                self._sock.send(b"\0")
            except BlockingIOError:
                pass  # its buffer is full of wake-ups it has not read: it is not asleep
            except OSError:
                self.peer_gone = True

    # Closing ------------------------------------------------------------------------------------

    def hang_up(self) -> None:
        """Answer no more steps, and let the client know at once (its socket ends); calls still run."""
        self._hung_up = True
        if self._sock is not None:
            with contextlib.suppress(OSError):
                self._sock.shutdown(socket.SHUT_RDWR)
        self._wake()

    def stop(self, timeout: float = 5.0) -> None:
        """Stop the thread (after the calls queued) and release the segment; idempotent."""
        self._stopping = True
        self._wake()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout)
        if self._sock is not None:
            self._sock.close()
        for fd in (self._wake_read, self._wake_write, self.fd):
            if fd >= 0:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self._wake_read = self._wake_write = self.fd = -1
        self._release_map()

    def _release_map(self) -> None:
        views, self._rewards = self.views, {}
        del views
        self.views = None  # type: ignore[assignment]
        self._actions = None  # type: ignore[assignment]
        try:
            self._map.close()
        except BufferError:  # a view is still held somewhere: the mapping goes with it
            logger.debug("the shared-memory segment is still viewed; it is released when the view is")

    @property
    def serving(self) -> bool:
        return self._thread is not None and self._thread.is_alive()
