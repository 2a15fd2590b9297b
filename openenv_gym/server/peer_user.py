"""Whether a connection comes from a process of the server's own user: the rule that admits a
local peer to what one session shows another, where no token decides.

A shared-memory segment is handed only to its own user's processes, token or not (the segment
lies in this host's memory); watch mode and its list of sessions, on a server without a token,
likewise (with a token, the token decides). :func:`same_user` is that rule, for both.

A Unix socket tells its peer's uid (``SO_PEERCRED``). A TCP connection over loopback does not,
but the kernel's table of this network namespace's TCP sockets (``/proc/net/tcp``, ``tcp6``)
lists the peer's end of it, with the uid that owns it. A peer on another host, or one whose end
has gone, is found nowhere: it is not the same user.
"""

from __future__ import annotations

import ipaddress
import logging
import os
import socket
import struct
import sys
from typing import Any

__all__ = ["peer_uid", "same_user"]

logger = logging.getLogger(__name__)

_PEERCRED = struct.Struct("3i")  # struct ucred: pid, uid, gid
_TCP_TABLES = ("/proc/net/tcp", "/proc/net/tcp6")
_TIME_WAIT = "06"  # the st column, in hex (include/net/tcp_states.h)


def _address(text: str) -> tuple[ipaddress.IPv4Address | ipaddress.IPv6Address, int]:
    """An ``ADDRESS:PORT`` of ``/proc/net/tcp*``: the address as 32-bit words in the host's byte
    order, in hex; the port in hex. IPv4 mapped into IPv6 comes back as IPv4."""
    address, port = text.split(":")
    raw = bytes.fromhex(address)
    if sys.byteorder == "little":
        raw = b"".join(raw[i : i + 4][::-1] for i in range(0, len(raw), 4))
    return _plain(ipaddress.ip_address(raw)), int(port, 16)


def _plain(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def _endpoint(name: Any) -> tuple[ipaddress.IPv4Address | ipaddress.IPv6Address, int]:
    """A ``getsockname()`` or ``getpeername()`` of an IP socket as :func:`_address` gives it."""
    return _plain(ipaddress.ip_address(name[0].partition("%")[0])), int(name[1])


def _tcp_owner(local: tuple[Any, int], remote: tuple[Any, int], tables: tuple[str, ...] = _TCP_TABLES) -> int | None:
    """The uid owning the TCP socket whose local end is ``local`` and remote end ``remote``, if
    this network namespace has it."""
    for table in tables:
        try:
            with open(table) as lines:
                next(lines, None)  # the header
                for line in lines:
                    fields = line.split()
                    # A TIME_WAIT entry outlives its socket and names uid 0 whoever owned it.
                    if len(fields) > 7 and fields[3] != _TIME_WAIT and _address(fields[1]) == local:
                        if _address(fields[2]) == remote:
                            return int(fields[7])
        except OSError:  # no IPv6 here, or no /proc
            continue
    return None


def peer_uid(sock: Any) -> int | None:
    """The uid of the process at the other end of ``sock`` (a connected socket, or asyncio's view
    of one), or ``None`` when it cannot be known: a peer on another host, or gone already."""
    try:
        if sock.family == socket.AF_UNIX:
            _, uid, _ = _PEERCRED.unpack(sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _PEERCRED.size))
            return int(uid)
        if sock.family in (socket.AF_INET, socket.AF_INET6):
            # The peer's end: its local address is our remote one, and the other way round.
            return _tcp_owner(_endpoint(sock.getpeername()), _endpoint(sock.getsockname()))
    except (OSError, ValueError):
        logger.debug("the peer of a connection could not be looked up", exc_info=True)
    return None


def same_user(sock: Any) -> bool:
    """Whether the peer of ``sock`` runs as this process's user (see the module)."""
    return peer_uid(sock) == os.getuid()
