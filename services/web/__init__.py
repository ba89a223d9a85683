"""The support desk's pages (issue 17): ``/replay`` and ``/dashboard``, served by kwx itself.

Every asset is a file of this package (``services/web/static``): no CDN, no outside request. The
pages read only kwx's own API with the key the agent signs in with (kept in ``sessionStorage``).
Each page and asset is sent with a Content-Security-Policy that allows only this origin, so a page
cannot load or send anything elsewhere even by mistake.
"""

from __future__ import annotations

import mimetypes
from pathlib import Path

from fastapi import APIRouter
from fastapi.responses import Response

from services.errors import NotFound

STATIC = Path(__file__).resolve().parent / "static"
CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; "
    "form-action 'self'"
)
HEADERS = {"Content-Security-Policy": CSP, "X-Content-Type-Options": "nosniff",
           "Referrer-Policy": "no-referrer", "Cache-Control": "no-cache"}  # fmt: skip
PAGES = {"replay": "replay.html", "dashboard": "dashboard.html"}

router = APIRouter(include_in_schema=False)


def _file(name: str) -> Response:
    path = (STATIC / name).resolve()
    if STATIC not in path.parents or not path.is_file():
        raise NotFound(f"no such asset: {name[:100]}", message_zh=f"没有这个文件：{name[:100]}")
    media = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
    if media.startswith("text/") or media in ("application/javascript", "image/svg+xml"):
        media += "; charset=utf-8"
    return Response(path.read_bytes(), media_type=media, headers=HEADERS)


@router.get("/replay")
def replay_page() -> Response:
    return _file(PAGES["replay"])


@router.get("/dashboard")
def dashboard_page() -> Response:
    return _file(PAGES["dashboard"])


@router.get("/static/{name:path}")
def asset(name: str) -> Response:
    return _file(name)
