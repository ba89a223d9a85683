"""Today's range of every rule option, and the check a *new* table's rules must pass.

:data:`OPTIONS` is the table of every option of :class:`~domain.rules.Rules` (its type, range or
values, default and RULES.md section), built from the Rules struct itself; docs/rules-options.md is
generated from it (tests/domain/test_rules_options.py keeps them equal). :func:`check` refuses an
unknown, wrong-typed or out-of-range option with a :class:`~domain.rules.RulesError` naming it
(``rules.kong_points.concealed``) and saying what it may be (``allowed``, ``message_zh``). Stored
tables are folded with ``domain.rules.resolve`` instead, which never learnt these ranges.

The ranges keep money far inside the 64-bit columns that hold it: ``domain.money``.
"""

from __future__ import annotations

from typing import Any, Literal, get_args, get_origin, get_type_hints

import msgspec

from domain.events import MAX_BASE
from domain.patterns import PATTERN_ORDER
from domain.rules import (
    KONG_KINDS,
    OPTION_NAMES,
    RANGES,
    Rules,
    RulesError,
    resolve,
    short_key,
    show,
    unknown_option,
)

__all__ = ["MAX_BASE", "MAX_CAP", "MAX_KONG_POINTS", "MAX_PIAO", "OPTIONS", "Option", "check"]

MAX_KONG_POINTS = 100
MAX_CAP = 1 << 20  # cap, cap_exempt values, kong_chain_cap, the minimums
MAX_PIAO = 1000  # hand_started.piao, per seat (domain.events.HandStarted)


class Option(msgspec.Struct, frozen=True, kw_only=True):
    """One rule option as a new table may set it: ``kind`` is ``int``, ``bool``, ``choice`` or
    ``map`` (pattern id → int); ``low``/``high`` bound an int (and a map's values), ``choices``
    lists a choice's values; ``nullable``: ``null`` is allowed too."""

    name: str  # "cap", "kong_points.concealed"
    kind: Literal["int", "bool", "choice", "map"]
    default: Any
    section: str  # RULES.md section
    low: int | None = None
    high: int | None = None
    choices: tuple[str, ...] = ()
    nullable: bool = False

    def allowed(self) -> Any:
        if self.kind == "choice":
            return list(self.choices)
        if self.kind == "bool":
            return [True, False]
        out: dict[str, Any] = {"min": self.low, "max": self.high}
        if self.nullable:
            out["null"] = True
        return out

    def describe(self) -> str:
        """What the option may be, in English: ``an integer 0…100``."""
        if self.kind == "choice":
            return "one of " + ", ".join(self.choices)
        if self.kind == "bool":
            return "true or false"
        what = f"an integer {self.low}…{self.high}"
        if self.kind == "map":
            what = f"an object of pattern id → {what}"
        return what + (" or null" if self.nullable else "")

    def describe_zh(self) -> str:
        if self.kind == "choice":
            return "以下之一：" + "、".join(self.choices)
        if self.kind == "bool":
            return "true或false"
        what = f"{self.low}…{self.high}的整数"
        if self.kind == "map":
            what = f"番型id → {what}的对象"
        return what + ("或null" if self.nullable else "")


_SECTIONS = {
    "exhausted_dealer": "§2", "added_kong_immediate": "§3", "no_peng_with_concealed_triplet": "§3",
    "rob_kong": "§3", "multi_win": "§3", "pin_dao": "§5", "kong_chain_kai_hua": "§5",
    "shou_zhua_yi_fan": "§5", "min_multiplier_discard": "§6", "min_multiplier_self_draw": "§6",
    "cap": "§6", "cap_exempt": "§6", "liang_dao_feed": "§7", "kong_points": "§7",
    "kong_chain_cap": "§7", "exhausted_liang_dao": "§7", "piao": "§7", "maima": "§7",
    "shu_kan": "§7", "shang_lou": "§7", "service_fee": "§7", "liang_dao_hide_triplets": "§8",
    "liang_dao_min_wall": "§8", "liang_dao_forbid_feeding": "§8", "lou_hu": "§9",
}  # fmt: skip


def _options() -> tuple[Option, ...]:
    """The option table, from the annotations and defaults of :class:`Rules` itself."""
    hints = get_type_hints(Rules, include_extras=True)
    defaults = msgspec.to_builtins(Rules())
    out: list[Option] = []
    for name in OPTION_NAMES:
        hint = hints[name]
        section = _SECTIONS[name]
        args = get_args(hint)
        if name == "kong_points":
            for kind in KONG_KINDS:
                out.append(Option(name=f"kong_points.{kind}", kind="int", default=defaults[name][kind],
                                  section=section, low=0, high=MAX_KONG_POINTS))  # fmt: skip
        elif name == "cap_exempt":
            out.append(
                Option(name=name, kind="map", default=defaults[name], section=section, low=1, high=MAX_CAP)
            )
        elif hint is bool:
            out.append(Option(name=name, kind="bool", default=defaults[name], section=section))
        elif get_origin(hint) is Literal:
            out.append(
                Option(name=name, kind="choice", default=defaults[name], section=section, choices=args)
            )
        else:
            lo, hi = RANGES[name]
            nullable = type(None) in args
            out.append(Option(name=name, kind="int", default=defaults[name], section=section, low=lo, high=hi,
                              nullable=nullable))  # fmt: skip
    return tuple(out)


OPTIONS: tuple[Option, ...] = _options()
_BY_NAME: dict[str, Option] = {o.name: o for o in OPTIONS}


def check(spec: Any) -> Rules:
    """The rules of a *new* table (``table_opened``, or a what-if override): every option named,
    of its type and inside today's range (:data:`OPTIONS`), every ``cap_exempt`` key a pattern id;
    the resolved :class:`Rules`, or :class:`RulesError` naming the first bad option."""
    if not isinstance(spec, dict):
        raise RulesError(
            f"rules must be an object such as {{\"preset\": \"default\"}}, not {show(spec)}", field="rules",
            message_zh="rules必须是一个对象，例如 {\"preset\": \"default\"}",
        )  # fmt: skip
    for key, value in spec.items():
        if key == "preset":
            continue
        if key == "kong_points":
            if not isinstance(value, dict):
                raise _wrong("rules.kong_points", value, "an object {concealed, added, exposed}",
                             "{concealed, added, exposed}对象")  # fmt: skip
            for kind, points in value.items():
                if kind not in KONG_KINDS:
                    raise RulesError(
                        f"kong_points has no kind {show(kind)}: the kinds are {', '.join(KONG_KINDS)}",
                        field=f"rules.kong_points.{short_key(kind)}", allowed=list(KONG_KINDS),
                        message_zh=f"kong_points没有{show(kind)}这一种杠：只有 {', '.join(KONG_KINDS)}",
                    )  # fmt: skip
                _check_value(_BY_NAME[f"kong_points.{kind}"], points)
        elif key == "cap_exempt":
            _check_cap_exempt(value)
        elif key in _BY_NAME:
            _check_value(_BY_NAME[key], value)
        else:
            raise unknown_option(key)
    return resolve(spec)


def _check_value(option: Option, value: Any, field: str | None = None) -> None:
    field = field or f"rules.{option.name}"
    if value is None and option.nullable:
        return
    if option.kind == "bool":
        ok = type(value) is bool
    elif option.kind == "choice":
        ok = isinstance(value, str) and value in option.choices
    else:
        if type(value) is not int:
            raise _wrong(field, value, option.describe(), option.describe_zh(), option.allowed())
        assert option.low is not None and option.high is not None
        if not option.low <= value <= option.high:
            raise RulesError(
                f"rule option {field.removeprefix('rules.')} = {show(value)} is outside "
                f"{option.low}…{option.high}",
                field=field, allowed=option.allowed(),
                message_zh=f"规则选项{field.removeprefix('rules.')}的值{show(value)}超出范围{option.low}…{option.high}",
            )  # fmt: skip
        return
    if not ok:
        raise _wrong(field, value, option.describe(), option.describe_zh(), option.allowed())


def _check_cap_exempt(value: Any) -> None:
    option = _BY_NAME["cap_exempt"]
    if not isinstance(value, dict):
        raise _wrong("rules.cap_exempt", value, option.describe(), option.describe_zh())
    for pattern, x in value.items():
        if pattern not in PATTERN_ORDER:
            raise RulesError(
                f"cap_exempt names {show(pattern)}, which is not a pattern id: expected one of "
                f"{', '.join(PATTERN_ORDER)}",
                field=f"rules.cap_exempt.{short_key(pattern)}", allowed=list(PATTERN_ORDER),
                message_zh=f"cap_exempt中的{show(pattern)}不是番型id：可选 {', '.join(PATTERN_ORDER)}",
            )  # fmt: skip
        _check_value(option, x, f"rules.cap_exempt.{pattern}")


def _wrong(field: str, value: Any, what: str, what_zh: str, allowed: Any = None) -> RulesError:
    name = field.removeprefix("rules.") if field != "rules" else "rules"
    return RulesError(
        f"rule option {name} must be {what}, not {_json_type(value)} {show(value)}",
        field=field, allowed=allowed, message_zh=f"规则选项{name}必须是{what_zh}，不能是{show(value)}",
    )  # fmt: skip


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"
