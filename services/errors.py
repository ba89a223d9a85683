"""Every error the service answers with, in one place.

A :class:`ServiceError` carries its HTTP status, a stable ``error`` code, a message and extra
fields; the one exception handler (``services.api.app``) turns it into
``{"error": code, "message": …, **extra}``. Store code raises these after translating driver
errors (``services.store.events``); routes never raise ``HTTPException`` for business outcomes.
"""

from __future__ import annotations

from typing import Any


class ServiceError(Exception):
    status: int = 500
    code: str = "internal"

    def __init__(self, message: str, **extra: Any) -> None:
        super().__init__(message)
        self.message = message
        self.extra = extra

    def body(self) -> dict[str, Any]:
        return {"error": self.code, "message": self.message, **self.extra}


class BadRequest(ServiceError):
    status, code = 400, "bad_request"


class Malformed(ServiceError):
    """Not the shape the contract asks for; ``field`` names the JSON path."""

    status, code = 422, "malformed"


class BadRules(ServiceError):
    """These rules are not valid: an unknown preset or option, a wrong type, a value outside its
    range (docs/rules-options.md). ``field`` names the option (``rules.kong_points.concealed``,
    ``base``, ``query.cap``), ``allowed`` its range or values; ``message_zh`` in Chinese; in an
    append also ``index`` and ``event_id`` of the ``table_opened`` in the batch."""

    status, code = 422, "bad_rules"


class InvalidTableId(ServiceError):
    status, code = 422, "invalid_table_id"


class Unauthorized(ServiceError):
    status, code = 401, "unauthorized"


class Forbidden(ServiceError):
    status, code = 403, "forbidden"


class NotFound(ServiceError):
    status, code = 404, "not_found"


class VersionConflict(ServiceError):
    status, code = 409, "version_conflict"


class IdConflict(ServiceError):
    status, code = 409, "id_conflict"


class RequestTimeout(ServiceError):
    """The body (``KWX_BODY_TIMEOUT``) or the headers (``KWX_HEADER_TIMEOUT``) did not arrive in
    time: a slow or stalled client."""

    status, code = 408, "request_timeout"


class RequestHeaderFieldsTooLarge(ServiceError):
    """The request line and headers are over ``KWX_MAX_HEADER_BYTES`` or ``KWX_MAX_HEADERS``
    (services/api/deadline.py; the connection is closed)."""

    status, code = 431, "request_header_fields_too_large"


class RateLimited(ServiceError):
    """Over a ``KWX_RATE_LIMIT_*`` limit (services/api/ratelimit.py); ``Retry-After`` says when."""

    status, code = 429, "rate_limited"


class PayloadTooLarge(ServiceError):
    status, code = 413, "payload_too_large"


class BatchTooLarge(ServiceError):
    status, code = 413, "batch_too_large"


class UnsupportedMediaType(ServiceError):
    status, code = 415, "unsupported_media_type"


class IllegalEvent(ServiceError):
    """The engine refused an event: ``index`` in the batch, ``rule`` (the ruling code), ``message``."""

    status, code = 422, "illegal_event"


class Unavailable(ServiceError):
    status, code = 503, "unavailable"


class NotKept(ServiceError):
    """The route reads a read model this deployment does not keep (``KWX_READ_MODELS``): an
    operator's choice, not a fault that passes — no Retry-After. ``model``: the one it needs."""

    status, code = 501, "not_kept"
