"""Watch mode: a read-only view of a live session, for the web page (``/web/watch?session=ID``).

A batch or vector session (a trainer's ``make_vec``) is watched one sub-env at a time
(``&env=I``, default 0): its transitions are cut out of the batched results and sent in the
form a plain session's replies have, so the page shows every kind of session alike.

A session that nobody watches pays one empty-set loop per frame. A watched session hands each
transition to its :class:`Watcher` by reference (the reply text it already sent its own client);
the watcher keeps only the latest and sends it at most ``fps`` times a second, so a trainer's
session is never slowed by a slow browser: transitions in between are dropped and counted.
Each watcher still tallies every transition (:class:`~.watch_episodes.EpisodeTally`), so the page
gets the episode's exact return and length and every episode's end, sent or not.
When the session renders ``rgb_array`` or ``ansi`` (modes whose ``render()`` only reads the
state), the watcher asks for a frame after each transition it sends, through the session's own
worker thread, so it never runs beside a step.

Who may watch: on a server with a token, whoever presents it; on one without, processes of the
server's own user only (:func:`~openenv_gym.server.peer_user.same_user`, the rule its
shared-memory segments follow too), since the other users of a host reach its loopback as well.
The list of sessions follows the same rule (:func:`watch_refusal`).
"""

from __future__ import annotations

import asyncio
import copy
import dataclasses
import json
import logging
import urllib.parse
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from websockets.asyncio.server import ServerConnection
from websockets.exceptions import ConnectionClosed

from ..protocol import ErrorCode, ErrorFrame
from ..protocol.batch import BINARY_SUBPROTOCOL, AutoresetMode
from .peer_user import same_user
from .watch_episodes import EpisodeTally

if TYPE_CHECKING:
    from .session import Session

__all__ = [
    "DEFAULT_WATCH_FPS",
    "MAX_WATCHERS",
    "SESSIONS_PATH",
    "WATCH_PATH",
    "SubEnvTransition",
    "Watcher",
    "parse_watch_query",
    "session_listing",
    "show_sub_env",
    "sub_env_info",
    "watch_refusal",
]

logger = logging.getLogger(__name__)

WATCH_PATH = "/web/watch"
SESSIONS_PATH = "/web/sessions"
DEFAULT_WATCH_FPS = 10.0
MAX_WATCH_FPS = 30.0
MIN_WATCH_FPS = 0.5  # a watcher waits at most 2 s between sends, so it sees its session end soon
#: Watch connections a server holds at once (they take no session slot, so they have their own cap).
MAX_WATCHERS = 16
SEND_TIMEOUT = 10.0
RENDER_TIMEOUT = 10.0
# render() of these modes reads the state and changes nothing; "*_list" modes would take frames
# from the session's own client.
_WATCHABLE_RENDER_MODES = ("rgb_array", "ansi")


def parse_watch_query(query: str) -> tuple[str, float, int]:
    """The session id, the frame rate and the sub-env a watch URL's query asks for.

    Raises:
        ValueError: no ``session``, an ``fps`` that is not a positive number, or an ``env`` that
            is not a sub-env index.
    """
    params = urllib.parse.parse_qs(query)
    session_id = params.get("session", [""])[0]
    if not session_id:
        raise ValueError("/web/watch needs ?session=ID (the ids are listed at /web/sessions)")
    text = params.get("fps", [str(DEFAULT_WATCH_FPS)])[0]
    try:
        fps = float(text)
    except ValueError:
        raise ValueError(f"fps={text!r} is not a number") from None
    if not fps > 0:
        raise ValueError(f"fps must be positive, got {text}")
    sub_env = params.get("env", ["0"])[0]
    if not sub_env.isdigit():
        raise ValueError(f"env={sub_env!r} is not a sub-env index")
    return session_id, min(max(fps, MIN_WATCH_FPS), MAX_WATCH_FPS), int(sub_env)


def watch_refusal(path: str, connection: Any, token_required: bool) -> str | None:
    """Why the peer of ``connection`` (websockets' connection, in its handshake) may not have
    ``path``, watch mode's or its list of sessions; ``None`` when it may, or ``path`` is neither.

    With a token the token decides (checked with every other route's); without one, the peer
    must run as the server's own user.
    """
    if token_required or path not in (WATCH_PATH, SESSIONS_PATH):
        return None
    sock = connection.transport.get_extra_info("socket")
    if sock is not None and same_user(sock):
        return None
    return (
        "watch mode on a server without a token is for its own user's processes only: "
        "serve with a token (--token-env VAR) to let others watch"
    )


def session_listing(session: Session, now: float) -> dict[str, Any]:
    """One entry of ``GET /web/sessions``."""
    return {
        "id": session.id,
        "kind": session.kind,
        "size": session.size,
        "steps": session.steps,
        "episodes": session.episodes,
        "age_s": round(now - session.started, 3),
        "idle_s": round(now - session.last_active, 3),
        "render_mode": session.render_mode,
        "watchers": len(session.watchers),
        "web": session.from_browser,
    }


def sub_env_info(infos: dict[str, Any], index: int) -> dict[str, Any]:
    """Sub-env ``index``'s info out of a Gymnasium vector info (arrays with ``_key`` masks)."""
    info: dict[str, Any] = {}
    for key, value in infos.items():
        if key.startswith("_"):
            continue
        mask = infos.get(f"_{key}")
        if mask is not None and not mask[index]:
            continue
        info[key] = sub_env_info(value, index) if isinstance(value, dict) else value[index]
    return info


@dataclasses.dataclass
class SubEnvTransition:
    """One sub-env's part of a batched transition, kept raw until a watcher sends it.

    ``space``: the single observation space when ``observation`` is a raw value, ``None`` when it
    is in its JSON form already.
    """

    space: Any
    observation: Any
    reward: Any
    terminated: Any
    truncated: Any
    info: dict[str, Any]

    def reply_text(self) -> str:
        """The observation frame a plain session would have sent for this transition."""
        from ..spaces import OBSERVATION_FIELD, jsonable, to_wire  # numpy: only Gymnasium envs' sessions

        observation = self.observation
        if self.space is not None:
            observation = to_wire(self.space, observation, OBSERVATION_FIELD)
        data = {
            "observation": observation,
            "reward": self.reward,
            "done": self.terminated,
            "truncated": self.truncated,
            "info": self.info,
        }
        return json.dumps({"type": "observation", "data": jsonable(data)})


def show_sub_env(
    session: Session,
    stepped: bool,
    actions: Any,
    mask: list[bool] | None,
    transition_of: Callable[[int], SubEnvTransition],
) -> None:
    """Hand each watcher of a batch or vector session its sub-env's part of a step or reset.

    A failure here is logged and never reaches the session's own client, whose step is done.
    """
    for watcher in session.watchers:
        index = watcher.sub_env
        if not stepped and mask is not None and not mask[index]:
            continue
        try:
            action = copy.copy(actions[index]) if stepped else None
            watcher.offer_sub_env("step" if stepped else "reset", session.steps, action, transition_of(index))
        except Exception:
            logger.exception("a watcher could not be shown sub-env %d's transition", index)


def _step_text(event: str, index: int, skipped: int, action: Any, reply: str, episodes: EpisodeTally) -> str:
    # The reply is spliced in as the text the session already sent: it is never parsed again.
    ended, dropped = episodes.take_ended()
    head = json.dumps(
        {
            "event": event,
            "index": index,
            "skipped": skipped,
            "action": action,
            "episode": episodes.current(),
            "ended": ended,
            "ended_dropped": dropped,
        }
    )
    return f'{{"type":"watch_step","data":{head[:-1]},"reply":{reply}}}}}'


class Watcher:
    """One watch connection on one session: sends the latest transition, throttled; acts on nothing."""

    def __init__(self, connection: ServerConnection, session: Session, fps: float, sub_env: int = 0) -> None:
        self.connection = connection
        self.session = session
        self.interval = 1.0 / fps
        #: The sub-env watched in a batch or vector session.
        self.sub_env = sub_env
        self._sub_env_ended = False
        #: Every transition's reward and end, counted whether or not it is sent.
        self.episodes = EpisodeTally(index=session.episodes)
        self._latest: tuple[str, int, Any, str | SubEnvTransition] | None = None
        self._skipped = 0
        self._ended: str | None = None
        self._wake = asyncio.Event()
        self._closing = asyncio.Event()

    def offer(
        self,
        event: str,
        index: int,
        action: Any,
        reply: str | SubEnvTransition,
        reward: Any = None,
        terminated: Any = False,
        truncated: Any = False,
    ) -> None:
        """Take a transition of the watched session (called on the event loop, never blocks):
        the reply text its client got, or a sub-env's transition to make that text of when sent,
        with its reward and end (a reset's are ignored)."""
        if event == "reset":
            self.episodes.reset()
        else:
            self.episodes.step(reward, terminated, truncated)
        if self._latest is not None:
            self._skipped += 1
        self._latest = (event, index, action, reply)
        self._wake.set()

    def offer_sub_env(self, event: str, index: int, action: Any, transition: SubEnvTransition) -> None:
        """Take the watched sub-env's part of a batched transition.

        With ``NextStep`` autoreset, the step after the one that ended an episode is that
        sub-env's reset, and is shown as one.
        """
        if event == "step" and self._sub_env_ended and self.session.autoreset_mode is AutoresetMode.NEXT_STEP:
            event, action = "reset", None
            transition.reward, transition.terminated, transition.truncated = None, False, False
        self._sub_env_ended = bool(transition.terminated) or bool(transition.truncated)
        self.offer(event, index, action, transition, transition.reward, transition.terminated, transition.truncated)

    def end(self, reason: str) -> None:
        """The watched session is closing: send what is left, then ``watch_end``."""
        self._ended = reason
        self._wake.set()
        self._closing.set()

    async def run(self, hello: dict[str, Any]) -> None:
        """Serve the watch connection until the session ends or the page leaves."""
        await self._send(json.dumps({"type": "watch_hello", "data": {"session": hello}}))
        tasks = {asyncio.ensure_future(self._send_transitions()), asyncio.ensure_future(self._refuse_everything())}
        try:
            done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
            for task in done:
                error = None if task.cancelled() else task.exception()
                if isinstance(error, (ConnectionClosed, TimeoutError)):
                    logger.info("a watch connection ended: %s", error)
                elif error is not None:
                    raise error
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    async def _send(self, message: str | bytes) -> None:
        # A page that stops reading must not hold its watcher (and the session's frames) forever.
        await asyncio.wait_for(self.connection.send(message), SEND_TIMEOUT)

    async def _send_transitions(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            if self._latest is not None:
                (event, index, action, reply), self._latest = self._latest, None
                skipped, self._skipped = self._skipped, 0
                if isinstance(reply, SubEnvTransition):
                    from ..spaces import jsonable

                    reply, action = reply.reply_text(), jsonable(action)
                await self._send(_step_text(event, index, skipped, action, reply, self.episodes))
                await self._send_frame()
            if self._ended is not None:
                await self._send(json.dumps({"type": "watch_end", "data": {"reason": self._ended}}))
                await self.connection.close()
                return
            # The pause that throttles; only the session's end cuts it short.
            try:
                await asyncio.wait_for(self._closing.wait(), self.interval)
            except TimeoutError:
                pass

    async def _send_frame(self) -> None:
        if self.session.render_mode not in _WATCHABLE_RENDER_MODES or self._ended is not None:
            return
        try:  # a frame waits for the step in the session's thread: it may be a later one's
            frame = await asyncio.wait_for(self.session.render_for_watcher(self.sub_env), RENDER_TIMEOUT)
        except TimeoutError:
            return
        if frame is None:
            return
        binary = self.connection.subprotocol == BINARY_SUBPROTOCOL
        await self._send(frame.serialize_binary() if binary else frame.serialize())

    async def _refuse_everything(self) -> None:
        """Whatever the page sends is answered with ``READ_ONLY``; nothing reaches the session."""
        refusal = ErrorFrame(ErrorCode.READ_ONLY, "a watch connection is read-only: it cannot step or reset")
        async for _ in self.connection:
            await self._send(refusal.serialize())
