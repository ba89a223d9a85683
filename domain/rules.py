"""Rule options and presets (RULES.md §2–§10).

Every point on which the seed texts disagree is an option of :class:`Rules`; a preset is a named
set of option values over the defaults. ``resolve({"preset": "xiangyang", "cap": 16})`` gives the
fully resolved options that a table pins at ``table_opened``: a replay years later uses the pinned
values, never the preset's current definition.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec


class KongPoints(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """喜钱 per kind of kong, in units of ``base`` (RULES.md §7)."""

    concealed: int = 2  # 暗杠: each other player pays
    added: int = 1  # 补杠: each other player pays
    exposed: int = 2  # 直杠: the discarder alone pays


def _default_cap_exempt() -> dict[str, int]:
    return {"shuang_long_qi_dui": 16, "san_long_qi_dui": 16}


class Rules(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The fully resolved options of a table. Field names are the option names of RULES.md."""

    preset: str = "default"
    # §2 dealer
    exhausted_dealer: Literal["stay", "first_declarer"] = "stay"
    # §3 actions
    added_kong_immediate: bool = True
    no_peng_with_concealed_triplet: bool = True
    rob_kong: bool = True
    multi_win: bool = True
    # §5 fan
    pin_dao: Literal["half", "full"] = "half"
    kong_chain_kai_hua: Literal["flat", "doubling"] = "flat"
    shou_zhua_yi_fan: int = 4
    # §6 minimum and cap
    min_multiplier_discard: int = 2
    min_multiplier_self_draw: int = 1
    cap: int | None = 8
    cap_exempt: dict[str, int] = msgspec.field(default_factory=_default_cap_exempt)
    # §7 settlement
    liang_dao_feed: Literal["discarder_pays_double", "normal", "both_pay"] = "discarder_pays_double"
    kong_points: KongPoints = msgspec.field(default_factory=KongPoints)
    kong_chain_cap: int | None = None
    exhausted_liang_dao: Literal["first_declarer_pays_each", "declarers_pay_undeclared", "none"] = (
        "declarers_pay_undeclared"
    )
    piao: bool = False
    maima: bool = False
    shu_kan: bool = False
    shang_lou: bool = False
    service_fee: int = 0  # in units of base, paid by each player to the house at each hand's start
    # §8 亮倒
    liang_dao_hide_triplets: bool = True
    liang_dao_min_wall: int | None = None
    liang_dao_forbid_feeding: bool = False
    # §9 漏胡
    lou_hu: Literal["until_own_draw", "unless_bigger", "off"] = "until_own_draw"


PRESETS: dict[str, dict[str, Any]] = {
    "default": {},
    # 亮倒荒胡赔庄的为下局庄家; 亮倒荒庄，先亮者坐庄 (RULES.md §10): since 1 Dec 2026. A table pins its
    # resolved options at table_opened, so tables opened before keep the dealer staying.
    "xiangyang": {
        "exhausted_liang_dao": "first_declarer_pays_each",
        "exhausted_dealer": "first_declarer",
        "pin_dao": "full",
    },
    "shiyan": {"cap": 8, "cap_exempt": {}, "shang_lou": True},
    "xiaogan": {"shu_kan": True, "liang_dao_min_wall": 12},
    "yunmeng": {"lou_hu": "unless_bigger", "pin_dao": "full", "rob_kong": False},
    "uncapped": {"cap": None},
    "platform_3d": {
        "min_multiplier_self_draw": 2,
        "liang_dao_feed": "both_pay",
        "liang_dao_forbid_feeding": True,
        "piao": True,
        "maima": True,
    },
}

OPTION_NAMES: tuple[str, ...] = tuple(f for f in Rules.__struct_fields__ if f != "preset")
KONG_KINDS: tuple[str, ...] = KongPoints.__struct_fields__

# Numeric options and their ranges as the engine has always folded them: a stored table whose pinned
# rules pass these folds (``resolve``); new tables must pass ``check`` (below), which is stricter.
RANGES: dict[str, tuple[int, int]] = {
    "shou_zhua_yi_fan": (1, 64),
    "min_multiplier_discard": (1, 1 << 20),
    "min_multiplier_self_draw": (1, 1 << 20),
    "cap": (1, 1 << 20),
    "kong_chain_cap": (1, 1 << 20),
    "service_fee": (0, 1000),
    "liang_dao_min_wall": (0, 44),
}


class RulesError(ValueError):
    """Unknown preset or option, or a bad option value. ``field`` names the option
    (``rules.kong_points.concealed``), ``allowed`` what it may be (``{"min": 0, "max": 100}``, or
    the list of values or names), ``message_zh`` says it in Chinese."""

    def __init__(
        self, message: str, field: str | None = None, allowed: Any = None, message_zh: str | None = None
    ) -> None:
        super().__init__(message)
        self.message = message
        self.field = field
        self.allowed = allowed
        self.message_zh = message_zh if message_zh is not None else message


def resolve(spec: dict[str, Any] | None) -> Rules:
    """Resolve ``{"preset": NAME, **overrides}`` into a full :class:`Rules`.

    This is what the engine folds a ``table_opened`` with, stored ones included: it checks names,
    types and the ranges of ``RANGES`` (what it always checked), so a table stored before today's
    ranges (``domain.rule_options.check``) folds exactly as it did (docs/rules-options.md, Stored
    tables)."""
    spec = dict(spec or {})
    preset = spec.pop("preset", "default")
    if not isinstance(preset, str) or preset not in PRESETS:
        raise RulesError(
            f"unknown preset {show(preset)}: expected one of {', '.join(PRESETS)}",
            field="rules.preset", allowed=list(PRESETS),
            message_zh=f"没有这个规则预设{show(preset)}：可选 {', '.join(PRESETS)}",
        )  # fmt: skip
    values: dict[str, Any] = dict(PRESETS[preset])
    for key, value in spec.items():
        if key not in OPTION_NAMES:
            raise unknown_option(key)
        values[key] = value
    try:
        rules = msgspec.convert({"preset": preset, **values}, Rules)
    except msgspec.ValidationError as exc:
        text = str(exc)
        path = text.split(" - at `", 1)[1].rstrip("`") if " - at `" in text else None
        field = "rules" + path[1:] if path else "rules"
        raise RulesError(f"bad rule option: {text}", field=field) from None
    for key, (lo, hi) in RANGES.items():
        value = getattr(rules, key)
        if value is not None and not lo <= value <= hi:
            raise RulesError(
                f"rule option {key} = {value} is outside {lo}…{hi}", field=f"rules.{key}",
                allowed={"min": lo, "max": hi}, message_zh=f"规则选项{key}的值{value}超出范围{lo}…{hi}",
            )  # fmt: skip
    for pattern, x in rules.cap_exempt.items():
        if x < 1:
            raise RulesError(f"cap_exempt[{pattern}] must be ≥ 1", field=f"rules.cap_exempt.{pattern}")
    return rules


def unknown_option(key: Any) -> RulesError:
    return RulesError(
        f"unknown rule option {show(key)}: the options are {', '.join(OPTION_NAMES)}",
        field=f"rules.{short_key(key)}", allowed=list(OPTION_NAMES),
        message_zh=f"没有规则选项{show(key)}：可用的选项有 {', '.join(OPTION_NAMES)}",
    )  # fmt: skip


def show(value: Any) -> str:
    """A value as messages quote it: JSON-ish, at most 40 characters."""
    text = repr(value) if not isinstance(value, bool | type(None)) else msgspec.json.encode(value).decode()
    return text if len(text) <= 40 else text[:37] + "…"


def short_key(key: Any) -> str:
    text = str(key)
    return text if len(text) <= 64 else text[:64]


def to_dict(rules: Rules) -> dict[str, Any]:
    out: dict[str, Any] = msgspec.to_builtins(rules)
    return out
