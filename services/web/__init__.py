"""The support desk's pages (issue 17): ``/replay`` and ``/dashboard``, served by kwx itself, and
``/``, which says in both languages where each page (and the API's reference and health) is.

Every asset is a file of this package (``services/web/static``): no CDN, no outside request. The
pages read only kwx's own API with the key the agent signs in with (kept in ``sessionStorage``).
Each page and asset is sent with a Content-Security-Policy that allows only this origin, so a page
cannot load or send anything elsewhere even by mistake.
"""

from __future__ import annotations

import functools
import hashlib
import mimetypes
from pathlib import Path

from fastapi import APIRouter, Request
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
PAGES = {"replay": "replay.html", "dashboard": "dashboard.html", "start": "index.html"}

router = APIRouter(include_in_schema=False)


@functools.lru_cache(maxsize=64)
def _read(path: Path, mtime_ns: int) -> tuple[bytes, str]:
    """A file's bytes and its ETag (its SHA-256's first 32 hex digits), read again when it changes."""
    data = path.read_bytes()
    return data, '"' + hashlib.sha256(data).hexdigest()[:32] + '"'


def _file(name: str, request: Request) -> Response:
    """The asset, or ``304 Not Modified`` when the browser's copy is this one (``If-None-Match``):
    ``no-cache`` makes it ask each time, and the answer is then a few bytes, not the file."""
    path = (STATIC / name).resolve()
    if STATIC not in path.parents or not path.is_file():
        raise NotFound(f"no such asset: {name[:100]}", message_zh=f"没有这个文件：{name[:100]}")
    data, etag = _read(path, path.stat().st_mtime_ns)
    headers = {**HEADERS, "ETag": etag}
    if etag in (t.strip().removeprefix("W/") for t in request.headers.get("if-none-match", "").split(",")):
        return Response(status_code=304, headers=headers)
    media = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
    if media.startswith("text/") or media in ("application/javascript", "image/svg+xml"):
        media += "; charset=utf-8"
    return Response(data, media_type=media, headers=headers)


@router.get("/")
def start_page(request: Request) -> Response:
    return _file(PAGES["start"], request)


@router.get("/replay")
def replay_page(request: Request) -> Response:
    return _file(PAGES["replay"], request)


@router.get("/dashboard")
def dashboard_page(request: Request) -> Response:
    return _file(PAGES["dashboard"], request)


@router.get("/static/{name:path}")
def asset(name: str, request: Request) -> Response:
    return _file(name, request)
