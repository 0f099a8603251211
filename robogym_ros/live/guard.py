"""Who may drive the sim over HTTP: anyone on this host, or, beyond it, a holder of the token.

Whoever reaches an MCP or viewer port can move the arms, pause and reset the sim (robogym had
no authentication at all). So a server binds to 127.0.0.1 by default, and binds anywhere else
only with a bearer token, which every request must then carry (``Authorization: Bearer
<token>``; the viewer's page, whose images and event stream a browser fetches without headers,
may carry it as ``?token=``). A token given on localhost is required there too.

A web page the user happens to open can reach a localhost port too: it may POST a "simple"
request (no preflight) to a control, or rebind its own name to 127.0.0.1 and read the answers.
So a server on localhost answers only requests whose ``Host`` is a loopback name (421
otherwise), any request carrying a foreign ``Origin`` is refused (403), and a POST must say
``Content-Type: application/json``, which no page can send cross-origin without a preflight
that these servers never grant (400 otherwise). These are the MCP SDK's transport-security
rules; ``robogym_mcp`` hands the SDK the same lists (``allowed_hosts``, ``allowed_origins``)
and the viewer applies them with :func:`request_refusal`.
"""
from __future__ import annotations

import hmac
import ipaddress
from typing import Any, Awaitable, Callable
from urllib.parse import parse_qs

MIN_TOKEN_CHARS = 16
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")


def is_local(host: str) -> bool:
    """Whether binding ``host`` serves only this machine (a loopback address or ``localhost``)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a host name: it may resolve to anything


def check_bind(host: str, token: str | None, *, token_env: str) -> None:
    """ValueError, saying why and what to do, for a bind this server must refuse."""
    if token is not None and not token.strip():
        raise ValueError(f"--token (or {token_env}) is blank ({len(token)} whitespace characters): no request "
                         "could ever carry it. Give a token of at least "
                         f"{MIN_TOKEN_CHARS} characters, not all whitespace, or none")
    if token is not None and len(token) < MIN_TOKEN_CHARS:
        raise ValueError(f"the token has {len(token)} characters; use at least {MIN_TOKEN_CHARS} "
                         "(e.g. python -c 'import secrets; print(secrets.token_urlsafe(24))')")
    if not is_local(host) and not token:
        raise ValueError(f"refusing to serve on {host!r} without a token: anyone who reaches that port could "
                         f"drive the sim. Set {token_env} (or --token), or bind 127.0.0.1")


def allowed_hosts(bind_host: str) -> list[str] | None:
    """The ``Host`` headers a server bound to ``bind_host`` answers (``name:*``: that name on
    any port), or None for any: beyond localhost the token is the guard."""
    return [f"{name}:*" for name in LOOPBACK_NAMES] if is_local(bind_host) else None


def allowed_origins(bind_host: str) -> list[str] | None:
    """The ``Origin`` headers a server bound to ``bind_host`` accepts besides none at all, or
    None: beyond localhost, only the page's own origin (``http://`` and the request's Host)."""
    return [f"http://{name}:*" for name in LOOPBACK_NAMES] if is_local(bind_host) else None


def _matches(value: str, patterns: list[str]) -> bool:
    return any(value == p or (p.endswith(":*") and value.startswith(p[:-1]) and value[len(p) - 1:].isdigit())
               for p in patterns)


def request_refusal(method: str, headers: dict[str, str], bind_host: str) -> tuple[int, str] | None:
    """Why a request must be refused, as (HTTP status, message), or None to serve it. ``headers``
    keys are lower case."""
    if method == "POST" and not headers.get("content-type", "").lower().startswith("application/json"):
        return 400, "400 Bad Request: a POST must say Content-Type: application/json\n"
    host = headers.get("host", "")
    hosts = allowed_hosts(bind_host)
    if hosts is not None and not _matches(host, hosts):
        return 421, f"421 Misdirected Request: this server answers for {', '.join(LOOPBACK_NAMES)} only\n"
    origin = headers.get("origin")
    if origin:
        origins = allowed_origins(bind_host)
        same = origin in (f"http://{host}", f"https://{host}")
        if not (same or (origins is not None and _matches(origin, origins))):
            return 403, "403 Forbidden: a request from another origin\n"
    return None


def bearer_matches(authorization: str | None, token: str) -> bool:
    """Whether an ``Authorization`` header carries exactly ``token`` (constant-time compare)."""
    if not authorization:
        return False
    scheme, _, value = authorization.strip().partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(value.strip().encode(), token.encode())


def query_token_matches(query: str, token: str) -> bool:
    values = parse_qs(query).get("token", [])
    return len(values) == 1 and hmac.compare_digest(values[0].encode(), token.encode())


REFUSAL = b"401 Unauthorized: this server needs Authorization: Bearer <token>\n"


class BearerGuard:
    """ASGI middleware: HTTP requests without the token get 401 and never reach the app."""

    def __init__(self, app: Callable[..., Awaitable[Any]], token: str):
        self.app, self.token = app, token
        self.refused = 0

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] in ("http", "websocket"):
            headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", ())}
            if not bearer_matches(headers.get("authorization"), self.token):
                self.refused += 1
                if scope["type"] == "websocket":
                    await send({"type": "websocket.close", "code": 1008})
                    return
                await send({"type": "http.response.start", "status": 401,
                            "headers": [(b"content-type", b"text/plain; charset=utf-8"),
                                        (b"www-authenticate", b'Bearer realm="robogym"'),
                                        (b"content-length", str(len(REFUSAL)).encode())]})
                await send({"type": "http.response.body", "body": REFUSAL})
                return
        await self.app(scope, receive, send)
