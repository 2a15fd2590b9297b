"""`SyncConnection`: a session's connection on websockets' Sans-I/O protocol and a blocking socket.

Each call sends its frame and reads the reply in the caller's thread: no event loop and no
thread hand-off on the hot path, which is why ``RemoteEnv.step`` uses it. One shared daemon
thread services idle connections every few seconds, answering the server's pings (OpenEnv's
uvicorn servers close connections that leave pings unanswered for 40 s, and an agent may think
longer than that between steps). What travels is the business of the
:class:`~openenv_gym.client.session_kind.SessionKind` the connection is handed; how its steps
travel, of the :class:`~openenv_gym.client.step_transport.StepTransport` (the WebSocket, or a
shared-memory segment, :class:`~openenv_gym.client.shm_link.ShmLink`, whose steps take no frame).
"""

from __future__ import annotations

import collections
import logging
import select
import socket
import ssl
import threading
import time
import weakref
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Generic, Self, TypeVar, cast

from websockets.client import ClientProtocol
from websockets.exceptions import InvalidState, InvalidStatus
from websockets.frames import Frame, Opcode
from websockets.protocol import State
from websockets.uri import parse_uri

from ..errors import (
    CapacityReachedError,
    ConnectionLostError,
    OpenEnvGymError,
    ProtocolError,
    RequestTimeoutError,
    ServerClosedError,
    ServerConnectError,
)
from ..protocol import ErrorCode, ErrorFrame
from ..protocol.closing import SERVER_CLOSED_REASON
from ..urls import tcp_form, unix_socket_path
from . import _holding as holding
from ._http import auth_headers, websockets_logger
from ._session import Delegated, SessionTerms, connection_lost, remote_error
from .session_kind import SessionKind
from .step_transport import StepTransport

if TYPE_CHECKING:
    from .shm_link import ShmLink

__all__ = ["SyncConnection", "replies_waiting"]

CLOSE_TIMEOUT = 2.0
KEEPALIVE_INTERVAL = 5.0
_RECV_BYTES = 2**16

ReplyT = TypeVar("ReplyT")


class _StillWaiting(OpenEnvGymError):
    """A caller's shorter wait ran out; the call itself is still in flight."""


class _Keepalive:
    """One daemon thread that lets every open connection answer pings while it is idle."""

    def __init__(self) -> None:
        self.clients: weakref.WeakSet[SyncConnection[Any]] = weakref.WeakSet()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def add(self, client: SyncConnection[Any]) -> None:
        with self._lock:
            self.clients.add(client)
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="openenv-gym-keepalive", daemon=True)
                self._thread.start()

    def _run(self) -> None:
        while True:
            time.sleep(KEEPALIVE_INTERVAL)
            with self._lock:
                clients = list(self.clients)
            for client in clients:
                try:
                    client._service_idle()
                except Exception:  # one odd client must not stop the keepalive for all
                    logging.getLogger(__name__).exception("keepalive failed for %r", client)


_keepalive = _Keepalive()


class SyncConnection(Generic[ReplyT]):
    """A synchronous session with one environment server (ours or OpenEnv's), of the kind it is handed.

    Arguments as :class:`~openenv_gym.client.SessionTerms` (held as :attr:`terms`), and ``steps``:
    how the steps travel (default: the WebSocket). Calls are serialized by a lock, so a connection
    may be shared between threads. Every wait is bounded: connecting by ``open_timeout``, each
    call by ``call_timeout``. After a timeout the session is abandoned (a late reply could be taken
    for the next call's) and later calls raise :class:`~openenv_gym.errors.ConnectionLostError`;
    connecting again starts a new session. The clients (:class:`~openenv_gym.client.EnvClient`,
    :class:`~openenv_gym.client.BatchClient`, :class:`~openenv_gym.client.VectorClient`,
    ``AgentsClient``) each hold one, handed their kind, and make the kind's calls on it.
    """

    #: The session's ``ws://`` URL (see :class:`~openenv_gym.client.SessionTerms`).
    url: Delegated[str] = Delegated("terms.url")
    __repr__ = holding.describe

    def __init__(
        self, kind: SessionKind[ReplyT], base_url: str, *, steps: StepTransport | None = None, **settings: Any
    ) -> None:
        self.terms = SessionTerms(kind, base_url, **settings)
        self.kind = kind
        #: How the steps travel; :attr:`link` is the segment they take while it has one.
        self.steps = steps if steps is not None else StepTransport()
        self.link: ShmLink | None = None
        self._link_in_flight = False
        self._sock: socket.socket | None = None
        self._ws: ClientProtocol | None = None
        #: Serializes calls (hold it to make a begin and its complete one call); reentrant: a locked
        #: call may connect first.
        self.lock = threading.RLock()
        self._inbox: collections.deque[str | bytes] = collections.deque()
        self._fragments: list[bytes] = []
        self._binary = False  # the kind of the message being assembled
        self._call, self._deadline = "call", 0.0  # the request in flight, for complete()
        self._in_flight = False

    @property
    def transport(self) -> str:
        """``"shm"`` while the steps go through shared memory, else ``"ws"``."""
        return "shm" if self.link is not None else "ws"

    # Connection ---------------------------------------------------------------------------------

    def connect(self) -> Self:
        """Open the session, send the kind's opening request if it has one, and take the step
        transport (see :class:`~openenv_gym.client.step_transport.StepTransport`); idempotent.

        Raises:
            ServerConnectError: refused, unreachable, or no handshake within ``open_timeout``.
            RemoteError, and what the kind's check raises: its opening request failed (the
                connection is closed again).
            ConnectionLostError: ``transport="shm"`` and the server cannot offer it or be reached
                (the message says why); the connection is closed again.
        """
        with self.lock:
            if self._ws is None:
                self._open()
                self.link = self.steps.take(self)
        return self

    def _open(self) -> None:
        """Connect, finish the handshake and send the kind's opening request (see :meth:`connect`)."""
        terms = self.terms
        url, open_timeout = terms.url, terms.open_timeout
        uri = parse_uri(tcp_form(url))
        socket_path = unix_socket_path(url)
        deadline = time.monotonic() + open_timeout
        try:
            if socket_path is not None:
                sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                sock.settimeout(open_timeout)
                try:
                    sock.connect(socket_path)
                except OSError:
                    sock.close()
                    raise
            else:
                sock = socket.create_connection((uri.host, uri.port), timeout=open_timeout)
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except OSError as exc:
            if terms.unusable == SERVER_CLOSED_REASON:  # refused since: say why, not just "refused"
                raise terms.not_connected("connect") from exc
            raise ServerConnectError(url, str(exc)) from exc
        try:
            if uri.secure:
                sock = ssl.create_default_context().wrap_socket(sock, server_hostname=uri.host)
            protocol = ClientProtocol(
                uri,
                max_size=terms.max_frame_bytes,
                subprotocols=self.kind.subprotocols,
                logger=websockets_logger(terms.token),
            )
            request = protocol.connect()
            request.headers.update(auth_headers(terms.token))
            protocol.send_request(request)
            self._sock, self._ws = sock, protocol
            self._flush(deadline)
            while protocol.state is State.CONNECTING and protocol.handshake_exc is None:
                self._read(deadline)
        except TimeoutError as exc:
            self._drop("the handshake timed out")
            raise ServerConnectError(url, f"no handshake within {open_timeout:g} s") from exc
        except (OSError, ConnectionLostError) as exc:
            if self._sock is None:
                sock.close()  # the TLS wrap failed before the socket was ours to drop
            self._drop("the handshake failed")
            raise ServerConnectError(url, str(exc)) from exc
        if protocol.handshake_exc is not None:
            self._drop("the handshake was refused")
            why = _refusal(protocol.handshake_exc)
            raise ServerConnectError(url, why) from protocol.handshake_exc
        terms.connected(protocol.subprotocol)
        _keepalive.add(self)
        opening = self.kind.opening()
        if opening is not None:
            try:
                self.begin(*opening)
                self.kind.opened(self.complete())
            except BaseException:
                self.close()
                raise

    def _flush(self, deadline: float) -> None:
        """Send whatever the protocol has queued (frames, pongs, the close handshake)."""
        assert self._sock is not None and self._ws is not None
        for data in self._ws.data_to_send():
            if data:
                self._sock.settimeout(max(deadline - time.monotonic(), 0.001))
                self._sock.sendall(data)
            else:  # the protocol asks to half-close the TCP connection
                try:
                    self._sock.shutdown(socket.SHUT_WR)
                except OSError:
                    pass

    def _read(self, deadline: float) -> None:
        """Read once from the socket, feed the protocol, and queue complete text messages.

        Raises:
            TimeoutError: nothing arrived before ``deadline``.
            ConnectionLostError: the connection ended and nothing is left to read.
        """
        assert self._sock is not None and self._ws is not None
        # Past the deadline, still take what already arrived (a reply read late is not a late reply).
        self._sock.settimeout(max(deadline - time.monotonic(), 0.0))
        try:
            data = self._sock.recv(_RECV_BYTES)
        except (TimeoutError, BlockingIOError):
            raise TimeoutError from None
        except ConnectionResetError:
            data = b""
        if data:
            self._ws.receive_data(data)
        else:
            self._ws.receive_eof()
        self._flush(deadline)
        for event in self._ws.events_received():
            if isinstance(event, Frame):  # the handshake's Response is checked by the protocol itself
                self._assemble(event)
        if not data and not self._inbox:
            raise self._lost(None)

    def _assemble(self, frame: Frame) -> None:
        if frame.opcode in (Opcode.TEXT, Opcode.BINARY):
            self._binary = frame.opcode is Opcode.BINARY
        if frame.opcode in (Opcode.TEXT, Opcode.BINARY, Opcode.CONT):
            self._fragments.append(bytes(frame.data))
            if frame.fin:
                message, self._fragments = b"".join(self._fragments), []
                self._inbox.append(message if self._binary else message.decode("utf-8", errors="replace"))

    def _lost(self, call: str | None) -> ConnectionLostError:
        close = self._ws.close_rcvd if self._ws is not None else None
        return connection_lost(self.url, call, close.code if close else None, close.reason if close else "")

    def _failed(self, call: str | None, exc: OSError) -> ConnectionLostError:
        """The error for a socket (or shared-memory channel) that failed under ``call``: what the
        server's close frame says, if it sent one before it went (read now if it waits in the
        socket: the channel's end may be noticed first), else the socket's error."""
        try:
            for _ in range(4):  # a close frame follows a reply or two at most
                if self._ws is None or self._sock is None or self._ws.close_rcvd is not None:
                    break
                if not select.select([self._sock], [], [], 0)[0]:
                    break
                self._read(time.monotonic())
        except (OSError, TimeoutError, ConnectionLostError):
            pass
        if self._ws is not None and self._ws.close_rcvd is not None:
            return self._lost(call)
        return ConnectionLostError(self.url, call, None, str(exc))

    def _drop(self, why: str) -> None:
        """Forget the connection (and the shared-memory segment, if it has one) at once, without a close handshake."""
        sock, self._sock, self._ws = self._sock, None, None
        link, self.link = self.link, None
        self._link_in_flight = False
        if link is not None:
            link.close()
        self.terms.disconnected(why)
        self._inbox.clear()
        self._fragments = []
        if sock is not None:
            sock.close()

    def _service_idle(self) -> None:
        """Answer pings and notice a close while no call is running (from the keepalive thread)."""
        if not self.lock.acquire(blocking=False):
            return  # a call is running and reads the socket itself
        try:
            if self._in_flight or self._sock is None or self._ws is None or self._ws.state is not State.OPEN:
                return  # a reply is on its way: complete() reads it
            readable, _, _ = select.select([self._sock], [], [], 0)
            if readable:
                self._read(time.monotonic() + 1.0)
        except (OSError, TimeoutError, ConnectionLostError):
            pass  # the next call reports the broken connection
        finally:
            self.lock.release()

    # Calls --------------------------------------------------------------------------------------

    def request(self, call: str, build: Callable[..., str | bytes], *args: Any) -> ReplyT:
        """Send the frame ``build(*args)`` makes (once the connection is known to be there); read its reply."""
        with self.lock:
            self.begin(call, build, *args)
            return self.complete()

    def begin(self, call: str, build: Callable[..., str | bytes], *args: Any) -> None:
        """Send the request ``build(*args)`` makes without waiting for its reply; :meth:`complete` reads it.

        ``build`` is one of the kind's request builders, called once the connection is known to
        be there (it marks the call as in flight in the kind's session).

        The split lets one thread send to many servers before reading any reply (the vector
        env does). Drive a split call from one thread: another thread's call in between would
        be refused as a second call in flight.

        Raises:
            ConnectionLostError: not connected, or the connection failed while sending.
        """
        with self.lock:
            if self._ws is None:
                raise self.terms.not_connected(call)
            text = build(*args)
            self._call, self._deadline = call, time.monotonic() + self.terms.call_timeout
            self._in_flight = True  # the keepalive thread must not read this reply
            try:
                self._guarded(self._send_text, text)
            except BaseException:
                self._in_flight = False
                raise

    def complete(self, timeout: float | None = None) -> ReplyT:
        """Read the reply to the request :meth:`begin` sent, within its ``call_timeout``; checked by the kind.

        Args:
            timeout: wait at most this long, if that is shorter than what is left of
                ``call_timeout``; running out of it raises ``TimeoutError`` and leaves the call
                in flight (call ``complete()`` again), where the call timeout drops the session.

        Raises:
            RemoteError: the server answered with an error frame; the session stays usable.
            RequestTimeoutError, ConnectionLostError: the session is dropped (see the class).
        """
        with self.lock:
            if not self._in_flight:
                raise ProtocolError(ErrorCode.SESSION_ERROR.value, "complete() with no request in flight")
            call_deadline = self._deadline
            patient = False
            if timeout is not None and time.monotonic() + timeout < call_deadline:
                # the caller's own, shorter wait: running out of it is not the call's fault
                patient, self._deadline = True, time.monotonic() + timeout
            try:
                reply = self._guarded(self._next_message, keep_on_timeout=patient)
            except _StillWaiting:  # the call stays in flight, with its own deadline
                self._deadline = call_deadline
                raise TimeoutError(
                    f"no reply to {self._call} within {timeout:g} s yet; it is still in flight: call complete() again"
                ) from None
            except BaseException:
                self._in_flight = False  # the session was dropped
                raise
            self._in_flight = False
            try:
                return self._finish(reply)
            except CapacityReachedError:
                self._drop("the server refused the session: it is at capacity")
                raise

    def _guarded(self, step: Callable[..., Any], *args: Any, keep_on_timeout: bool = False) -> Any:
        """Run one I/O step of the call in flight, turning failures into our errors and dropping the session."""
        call = self._call
        try:
            return step(*args)
        except TimeoutError:
            if keep_on_timeout:
                raise _StillWaiting from None
            self._drop(f"the session was abandoned after {call} timed out; make a new client")
            raise RequestTimeoutError(self.url, call, self.terms.call_timeout) from None
        except ConnectionLostError as exc:
            exc.call = call
            self._drop(
                SERVER_CLOSED_REASON if isinstance(exc, ServerClosedError) else "the connection was closed earlier"
            )
            raise
        except OSError as exc:
            lost = self._failed(call, exc)
            self._drop(SERVER_CLOSED_REASON if isinstance(lost, ServerClosedError) else "the connection failed earlier")
            raise lost from exc
        except BaseException:  # interrupted mid-call: its late reply would be taken for the next
            self._drop(f"the session was abandoned when {call} was interrupted; make a new client")
            raise

    def _send_text(self, text: str | bytes) -> None:
        assert self._ws is not None
        if self._ws.state is State.OPEN:
            try:
                if isinstance(text, bytes):  # a packed binary request (vector sessions)
                    self._ws.send_binary(text)
                else:
                    self._ws.send_text(text.encode())
                self._flush(self._deadline)
            except (OSError, InvalidState):
                pass  # the server may have said why before it closed: read that

    def begin_shared_step(self, call: str, write: Callable[[ShmLink], None]) -> None:
        """Ask for a step through the segment (:attr:`link` must be there): ``write(link)`` writes
        its actions and asks; :meth:`complete` reads the reply (a frame, or the error frame the
        server wrote).

        Raises:
            ValueError: what ``write`` raised for actions that do not fit (nothing was asked).
            ConnectionLostError: the channel failed (the session is dropped).
        """
        with self.lock:
            if self._in_flight:
                raise ProtocolError(ErrorCode.SESSION_ERROR.value, f"{call} while {self._call} is in flight")
            assert self.link is not None
            self._call, self._deadline = call, time.monotonic() + self.terms.call_timeout
            try:
                write(self.link)
            except OSError as exc:
                lost = self._failed(call, exc)
                self._drop(
                    SERVER_CLOSED_REASON
                    if isinstance(lost, ServerClosedError)
                    else "the shared-memory channel failed earlier"
                )
                raise lost from exc
            self._link_in_flight = self._in_flight = True

    def _next_message(self) -> Any:
        """The reply to the call in flight: from shared memory for a step there (a frame, already
        read), else the WebSocket's next message. :meth:`complete` maps the failures, as for both."""
        if self._link_in_flight:
            assert self.link is not None
            try:
                # The WebSocket is watched too: a connection cut under this client ends the step at once.
                reply = self.link.receive(self._deadline, self._sock, lambda: self._read(self._deadline))
            except ProtocolError as exc:  # a malformed segment: the channel is not to be trusted further
                raise ConnectionLostError(self.url, self._call, None, str(exc)) from exc
            self._link_in_flight = False
            return reply
        if self._ws is None:
            raise self.terms.not_connected(self._call)
        while not self._inbox:
            if self._ws.state is State.CLOSED:
                raise self._lost(self._call)
            self._read(self._deadline)
        return self._inbox.popleft()

    def _finish(self, reply: Any) -> ReplyT:
        if isinstance(reply, (str, bytes)):
            return self.terms.finish(reply)
        if isinstance(reply, ErrorFrame):  # written by the server into the segment
            raise remote_error(reply, self.terms.env_id)
        return cast("ReplyT", reply)  # a step's result, read from the segment

    def answered(self) -> bool:
        """Whether a reply to the call in flight has begun to arrive, or the connection is gone."""
        if self._link_in_flight and self.link is not None:
            return self.link.answered()
        return bool(self._inbox) or self._sock is None

    def waitable(self) -> Any:
        """What turns readable when a reply arrives (for ``select``; call :meth:`answered` after)."""
        if self._link_in_flight and self.link is not None:
            return self.link.waitable()
        return self._sock

    def close(self) -> None:
        """Send a close frame, close the WebSocket and the socket; idempotent, never raises."""
        with self.lock:
            protocol = self._ws
            if protocol is None:
                return
            deadline = time.monotonic() + CLOSE_TIMEOUT
            try:
                if protocol.state is State.OPEN:
                    protocol.send_text(self.kind.close().encode())
                    protocol.send_close(1000)
                    self._flush(deadline)
                while protocol.state is not State.CLOSED:
                    self._read(deadline)
            except (OSError, TimeoutError, ConnectionLostError, InvalidState):
                pass  # closing anyway
            self._drop("the client was closed")

    def __enter__(self) -> Self:
        return self.connect()

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def _refusal(exc: Exception) -> str:
    """Why a server refused the handshake: its status and the start of its body, if it sent one."""
    if not isinstance(exc, InvalidStatus):  # answered 101, but the handshake failed its checks
        return str(exc)
    response = exc.response
    reason = f"HTTP {response.status_code}"
    body = bytes(response.body or b"")[:500].decode(errors="replace")
    return f"{reason}: {body}" if body else reason


def replies_waiting(clients: Sequence[SyncConnection[Any]], timeout: float | None) -> list[int]:
    """The indices of the clients with a call in flight whose reply has begun to arrive.

    Waits up to ``timeout`` seconds (``None``: until one has) for the first; then
    :meth:`SyncConnection.complete` on those reads their replies with little or no wait. A client
    whose connection is gone counts as ready (``complete()`` then raises its error).
    """
    deadline = None if timeout is None else time.monotonic() + timeout
    nap = 1e-3
    while True:
        waiting = {client.waitable(): index for index, client in enumerate(clients)}
        ready = [index for index, client in enumerate(clients) if client.answered()]  # after waitable(): see there
        if ready or not waiting:
            return ready
        left = None if deadline is None else deadline - time.monotonic()
        if left is not None and left <= 0:
            return []
        # In naps that double, as a shared-memory sleeper's (see openenv_gym.protocol.shm).
        readable, _, _ = select.select(list(waiting), [], [], nap if left is None else min(nap, left))
        if readable:
            return sorted(waiting[sock] for sock in readable)
        nap = min(2 * nap, 1.0)
