"""Tests for openenv_gym.urls: server URLs to WebSocket and HTTP forms, loopback, host swaps (pure)."""

from __future__ import annotations

import re

import pytest

from openenv_gym.urls import http_url, is_loopback_host, with_host, ws_url


def test_urls():
    """Base URLs in http or ws form map to the /ws endpoint and to HTTP routes."""
    assert ws_url("http://127.0.0.1:8000") == "ws://127.0.0.1:8000/ws"
    assert ws_url("ws://h:1/") == "ws://h:1/ws"
    assert ws_url("https://h/prefix") == "wss://h/prefix/ws"
    assert ws_url("ws://h:1/ws") == "ws://h:1/ws"
    assert http_url("ws://h:1/ws", "/schema") == "http://h:1/schema"
    with pytest.raises(ValueError, match=re.escape("expected a server URL like 'http://127.0.0.1:8000'")):
        ws_url("127.0.0.1:8000")


def test_host_helpers():
    """Loopback is recognised exactly; a host is swapped into a URL keeping its port and path."""
    assert all(is_loopback_host(host) for host in ("127.0.0.1", "localhost", "::1"))
    assert not any(is_loopback_host(host) for host in ("0.0.0.0", "10.0.0.1", "127.0.0.2", "", None))
    assert with_host("http://0.0.0.0:8000", "10.1.2.3") == "http://10.1.2.3:8000"
    assert with_host("http://[::]:8000/x", "fd00::1") == "http://[fd00::1]:8000/x"
    assert with_host("https://h/prefix", "k") == "https://k/prefix"
