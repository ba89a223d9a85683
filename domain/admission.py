"""What a *new* event must satisfy beyond the shape its type decodes with (docs/rulings.md, Input).

Stored events are decoded with the types of ``domain.events`` forever, and the engine folds them
as they were accepted, so anything this module adds is checked once, when an event arrives (the
append route), never when a stored event is read back or refolded:

* ``at``: a real RFC 3339 date and time (the type checks its shape only: ``2026-02-31`` passes it);
* ``table_opened``: its rules within today's ranges (:func:`domain.rule_options.check`, ``bad_rules``);
* ``settlement_reported``: every amount a positive integer up to ``MAX_REPORTED_AMOUNT``.

Valid events are never changed (their canonical bytes are what was sent): this only says no.
"""

from __future__ import annotations

import calendar
import re
from datetime import datetime, timedelta
from typing import Any, Literal

import msgspec

from domain.events import Event, SettlementReported, TableOpened
from domain.money import MAX_REPORTED_AMOUNT
from domain.rule_options import check
from domain.rules import RulesError

RFC3339_EXAMPLE = "2026-02-01T12:00:00Z"
RFC3339_EXPECTED = f"expected an RFC 3339 time such as {RFC3339_EXAMPLE}"

_RFC3339 = re.compile(
    r"^([0-9]{4})-([0-9]{2})-([0-9]{2})[Tt ]([0-9]{2}):([0-9]{2}):([0-9]{2})(?:\.[0-9]+)?"
    r"(?:[Zz]|([+-])([0-9]{2}):([0-9]{2}))$"
)


class Refusal(msgspec.Struct, frozen=True, kw_only=True):
    """Why a new event is refused: ``code`` is the error code (``bad_rules`` or ``malformed``),
    ``field`` the path inside the event (``rules.kong_points.concealed``, ``at``,
    ``transfers[2].amount``), ``allowed`` what the field may be."""

    code: Literal["bad_rules", "malformed"]
    field: str
    message: str
    message_zh: str
    allowed: Any = None


def admit(event: Event) -> Refusal | None:
    """None when ``event`` may be stored as new; else the first reason it may not."""
    at = event.at
    if at is not None:
        problem = rfc3339_problem(at)
        if problem is not None:
            return Refusal(
                code="malformed", field="at", message=f"at {at!r} {problem}: {RFC3339_EXPECTED}",
                message_zh=f"时间at {at!r} 无效：应为RFC 3339时间，例如 {RFC3339_EXAMPLE}",
            )  # fmt: skip
    kind = type(event)
    if kind is TableOpened:
        assert isinstance(event, TableOpened)
        try:
            check(event.rules)
        except RulesError as exc:
            return Refusal(
                code="bad_rules", field=exc.field or "rules", message=exc.message,
                message_zh=exc.message_zh, allowed=exc.allowed,
            )  # fmt: skip
    elif kind is SettlementReported:
        assert isinstance(event, SettlementReported)
        return _reported(event)
    return None


def rfc3339_problem(text: str) -> str | None:
    """None for a real RFC 3339 date-time (any offset, a fraction, a leap second at 23:59:60 UTC on
    a month's last day); else what is wrong, in a few words."""
    try:
        datetime.fromisoformat(text)  # the usual case, in C; the shape is the type's regex
        return None
    except ValueError:
        pass
    m = _RFC3339.match(text)
    if m is None:
        return "is not an RFC 3339 time"
    year, month, day, hour, minute, second = (int(g) for g in m.groups()[:6])
    if year < 1:  # RFC 3339 has a year 0000; no game was played then, and no date type holds it
        return "has year 0000: years run 0001 to 9999"
    if not 1 <= month <= 12:
        return f"has no month {month:02d}"
    days = calendar.monthrange(year, month)[1]
    if not 1 <= day <= days:
        return f"is not a date: {calendar.month_name[month]} {year} has {days} days"
    if hour > 23 or minute > 59 or second > 60:
        return "is not a time of day"
    if second == 60:  # a leap second: only 23:59:60 UTC on the last day of a month
        offset = 0
        if m[7] is not None:
            offset = (int(m[8]) * 60 + int(m[9])) * (1 if m[7] == "+" else -1)
        try:
            utc = datetime(year, month, day, hour, minute) - timedelta(minutes=offset)
        except OverflowError:  # before 0001-01-01 or after 9999-12-31 in UTC: no month's end
            utc = None
        if (
            utc is None
            or (utc.hour, utc.minute) != (23, 59)
            or utc.day != calendar.monthrange(utc.year, utc.month)[1]
        ):
            return "has second 60 where no leap second can be (only 23:59:60 UTC at a month's end)"
    return None


def _reported(event: SettlementReported) -> Refusal | None:
    for i, line in enumerate(event.transfers):
        amount = line.amount
        if not 1 <= amount <= MAX_REPORTED_AMOUNT:
            what = "must be positive (the direction is from → to)" if amount <= 0 else "is too large"
            return Refusal(
                code="malformed", field=f"transfers[{i}].amount",
                message=f"settlement_reported: transfers[{i}].amount = {_short(amount)} {what}: "
                f"expected an integer 1…{MAX_REPORTED_AMOUNT} (coins)",
                message_zh=f"结算报告第{i + 1}行的金额{_short(amount)}无效："
                f"应为1…{MAX_REPORTED_AMOUNT}的整数",
                allowed={"min": 1, "max": MAX_REPORTED_AMOUNT},
            )  # fmt: skip
    return None


def _short(n: int) -> str:
    text = str(n)
    return text if len(text) <= 24 else f"{text[:10]}…({len(text)} digits)"
