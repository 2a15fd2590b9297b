"""``openenv-gym web URL``: open a server's web debug page, through a local forward when needed."""

from __future__ import annotations

import argparse
import asyncio
from typing import Any

from ._arguments import _UsageError, token_from_env

__all__ = ["add_parser", "run"]


def add_parser(commands: Any) -> None:
    web = commands.add_parser(
        "web",
        help="open an env server's web debug page, through a local forward when it is beyond loopback",
        description="Open URL's web page (/web) in a browser. A server beyond this machine's loopback is "
        "reached through a forward listening on 127.0.0.1 (kept open until Ctrl-C); such a server shows "
        "its page only when started with --web. Over SSH, `ssh -L 8000:localhost:8000 HOST` is the "
        "alternative.",
    )
    web.add_argument("url", help="the server's base URL, e.g. http://10.1.2.3:8000")
    web.add_argument("--port", type=int, default=0, help="local port of the forward (default: a free one)")
    web.add_argument(
        "--token-env", default=None, metavar="VAR", help="log the browser in with the token held by variable VAR"
    )
    web.add_argument("--no-browser", action="store_true", help="print the page's address; open no browser")


def run(args: argparse.Namespace) -> int:
    import webbrowser

    from ..client._http import http_get_json
    from ..client.port_forward import PortForward, needs_forward, page_url, serve_forward

    token = token_from_env(args.token_env)
    http_get_json(args.url, "/health", timeout=10.0)  # ServerConnectError says why when it is not there

    def show(base_url: str, forwarded: bool) -> None:
        how = f" (forwarded to {args.url}; Ctrl-C stops)" if forwarded else ""
        login = f" (log in at {page_url(base_url)}?token=<${args.token_env}>)" if token else ""
        print(f"web page: {page_url(base_url)}{how}{login}", flush=True)
        if not args.no_browser:
            webbrowser.open(page_url(base_url, token))

    if not needs_forward(args.url):
        show(args.url, forwarded=False)
        return 0
    try:
        forward = PortForward.to(args.url, port=args.port)
    except ValueError as exc:
        raise _UsageError(str(exc)) from exc
    try:
        asyncio.run(serve_forward(forward, lambda url: show(url, forwarded=True)))
    except KeyboardInterrupt:
        pass
    return 0
