"""Rule options and presets (RULES.md §2–§10).

Every point on which the seed texts disagree is an option of :class:`Rules`; a preset is a named
set of option values over the defaults. ``resolve({"preset": "xiangyang", "cap": 16})`` gives the
fully resolved options that a table pins at ``table_opened``: a replay years later uses the pinned
values, never the preset's current definition.
"""

from __future__ import annotations

from typing import Any, Literal, get_args, get_origin, get_type_hints

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
    "xiangyang": {"exhausted_liang_dao": "first_declarer_pays_each", "pin_dao": "full"},
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
_RANGES: dict[str, tuple[int, int]] = {
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
        self.message_zh = message_zh if message_zh is not None else f"规则有误：{message}"


def resolve(spec: dict[str, Any] | None) -> Rules:
    """Resolve ``{"preset": NAME, **overrides}`` into a full :class:`Rules`.

    This is what the engine folds a ``table_opened`` with, stored ones included: it checks names,
    types and the ranges of ``_RANGES`` (what it always checked), so a table stored before today's
    ranges (:func:`check`) folds exactly as it did (docs/rules-options.md, Stored tables)."""
    spec = dict(spec or {})
    preset = spec.pop("preset", "default")
    if not isinstance(preset, str) or preset not in PRESETS:
        raise RulesError(
            f"unknown preset {_show(preset)}: expected one of {', '.join(PRESETS)}",
            field="rules.preset", allowed=list(PRESETS),
            message_zh=f"没有这个规则预设{_show(preset)}：可选 {', '.join(PRESETS)}",
        )  # fmt: skip
    values: dict[str, Any] = dict(PRESETS[preset])
    for key, value in spec.items():
        if key not in OPTION_NAMES:
            raise _unknown(key)
        values[key] = value
    try:
        rules = msgspec.convert({"preset": preset, **values}, Rules)
    except msgspec.ValidationError as exc:
        text = str(exc)
        path = text.split(" - at `", 1)[1].rstrip("`") if " - at `" in text else None
        field = "rules" + path[1:] if path else "rules"
        raise RulesError(f"bad rule option: {text}", field=field) from None
    for key, (lo, hi) in _RANGES.items():
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


# ------------------------------------------------------------------------------ today's ranges
# Every option a new table may set, its type and range (docs/rules-options.md is generated from
# this table and a test keeps the two equal). The ranges keep every sum of money far inside the
# 64-bit columns that hold it: see ``MAX_HAND_UNITS`` below.

MAX_BASE = 1_000_000  # table_opened.base (domain.events.TableOpened)
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
            lo, hi = _RANGES[name]
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
            f"rules must be an object such as {{\"preset\": \"default\"}}, not {_show(spec)}", field="rules",
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
                        f"kong_points has no kind {_show(kind)}: the kinds are {', '.join(KONG_KINDS)}",
                        field=f"rules.kong_points.{_key(kind)}", allowed=list(KONG_KINDS),
                        message_zh=f"kong_points没有{_show(kind)}这一种杠：只有 {', '.join(KONG_KINDS)}",
                    )  # fmt: skip
                _check_value(_BY_NAME[f"kong_points.{kind}"], points)
        elif key == "cap_exempt":
            _check_cap_exempt(value)
        elif key in _BY_NAME:
            _check_value(_BY_NAME[key], value)
        else:
            raise _unknown(key)
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
                f"rule option {field.removeprefix('rules.')} = {_show(value)} is outside "
                f"{option.low}…{option.high}",
                field=field, allowed=option.allowed(),
                message_zh=f"规则选项{field.removeprefix('rules.')}的值{_show(value)}超出范围{option.low}…{option.high}",
            )  # fmt: skip
        return
    if not ok:
        raise _wrong(field, value, option.describe(), option.describe_zh(), option.allowed())


def _check_cap_exempt(value: Any) -> None:
    option = _BY_NAME["cap_exempt"]
    if not isinstance(value, dict):
        raise _wrong("rules.cap_exempt", value, option.describe(), option.describe_zh())
    from domain.patterns import PATTERN_ORDER  # domain.patterns imports this module

    for pattern, x in value.items():
        if pattern not in PATTERN_ORDER:
            raise RulesError(
                f"cap_exempt names {_show(pattern)}, which is not a pattern id: expected one of "
                f"{', '.join(PATTERN_ORDER)}",
                field=f"rules.cap_exempt.{_key(pattern)}", allowed=list(PATTERN_ORDER),
                message_zh=f"cap_exempt中的{_show(pattern)}不是番型id：可选 {', '.join(PATTERN_ORDER)}",
            )  # fmt: skip
        _check_value(option, x, f"rules.cap_exempt.{pattern}")


def _unknown(key: Any) -> RulesError:
    return RulesError(
        f"unknown rule option {_show(key)}: the options are {', '.join(OPTION_NAMES)}",
        field=f"rules.{_key(key)}", allowed=list(OPTION_NAMES),
        message_zh=f"没有规则选项{_show(key)}：可用的选项有 {', '.join(OPTION_NAMES)}",
    )  # fmt: skip


def _wrong(field: str, value: Any, what: str, what_zh: str, allowed: Any = None) -> RulesError:
    name = field.removeprefix("rules.") if field != "rules" else "rules"
    return RulesError(
        f"rule option {name} must be {what}, not {_json_type(value)} {_show(value)}",
        field=field, allowed=allowed, message_zh=f"规则选项{name}必须是{what_zh}，不能是{_show(value)}",
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


def _show(value: Any) -> str:
    """A value as messages quote it: JSON-ish, at most 40 characters."""
    text = repr(value) if not isinstance(value, bool | type(None)) else msgspec.json.encode(value).decode()
    return text if len(text) <= 40 else text[:37] + "…"


def _key(key: Any) -> str:
    text = str(key)
    return text if len(text) <= 64 else text[:64]


# --------------------------------------------------------------------------------- the money bound
MAX_MULTIPLIER = 1 << 25
"""An upper bound of a win's multiplier before the cap, whatever the options (RULES.md §5).

Every hit of one reading multiplies. Seven pairs (≤ ×32) with 清一色 ×4 and the situation patterns
stays under 2^12. A standard reading:

* 碰碰胡 ×2 and 卡五星 ×2 exclude each other (卡五星 needs a sequence, 碰碰胡 has none): ≤ ×2;
* 大三元 ×8 excludes 小三元, and both need dragons, which 清一色 ×4 forbids: ≤ ×8;
* situation: 杠上开花 is at most ×2^12 (``kong_chain_kai_hua: doubling`` gives ×2^chain, and a
  chain has at most 12 kongs: 4 melds per seat) and 海底捞 ×2, both on a self-draw; 杠上炮 and
  抢杠胡 (×2 each) only on a discard; 亮倒 ×2: ≤ ×2^14;
* 四归一 (×4 at most each, ``pin_dao: full`` counts several): each needs all four tiles of a kind
  in the winner's 14 (kongs aside), so at most three: ≤ ×4^3 = ×2^6; 手抓一 (≤ ×64, its range)
  leaves one concealed tile and so no 四归一 at all: the two together ≤ ×2^6.

So a multiplier is at most 2 × 8 × 2^14 × 2^6 = 2^24; the constant keeps a factor 2 of margin."""

MAX_BASE_IN_PLAY = 4 * MAX_BASE
"""A hand's base: ``base`` (≤ 10^6) doubled by 上楼 (level 0 or 1, not cumulative) and again by
equal dice."""

MAX_HAND_UNITS = 4 * (MAX_MULTIPLIER + 14) + 4 * 2 * MAX_PIAO + 12 * MAX_KONG_POINTS * (1 << 11) + 1000 + 2
"""The most one seat pays in one hand, in units of the hand's base (domain.settle):

* hu: at most two wins (一炮双响), each ≤ 2 × payable (包胡), payable ≤ multiplier + 数坎 (≤ 4)
  + 买码 (≤ 10);
* 漂: one line per hu line, ≤ 2 × ``MAX_PIAO`` each (counted twice over here);
* kong money: at most 12 kongs, each ≤ ``MAX_KONG_POINTS`` × 2^11 (the chain factor of a 12th kong;
  ``kong_chain_cap`` only lowers it);
* service fee ≤ 1000 and 荒庄 compensation ≤ 2.

With every range at its largest: 136,684,386 units (< 2^27.1)."""

MAX_HAND_COINS = MAX_HAND_UNITS * MAX_BASE_IN_PLAY
"""The most one transfer line, one seat's loss or the house's fee income moves in one hand, in
coins: 546,737,544,000,000 < 2^49 (a winner gains at most twice that: < 2^50).

Why no 64-bit column overflows (``proj_ledger_entries.amount`` / ``balance``,
``proj_ledger_accounts.balance``, ``proj_hand_settlements.house``, the sums of
``proj_player_stats``; migrations/versions/0003): a single amount is < 2^50, 2^13 times below
2^63; a running balance (a player's, over all the tenant's tables) needs more than 8,400
consecutive hands each lost or won at this absolute maximum — a 12-kong chain ending in a self-drawn
手抓一 大三元 at a base of a million coins, doubled twice — to pass 2^63. A realistic big hand
(×256 uncapped, base 10^6 doubled twice, 包胡) moves < 2^31 coins: 2^32 hands, far beyond any
table's or player's life.
``sum_multiplier`` grows by < 2^25 a win. The test ``test_largest_ranges_through_every_read_model``
plays a table with every range at its largest through settlement, ledger and stats."""

MAX_REPORTED_AMOUNT = (1 << 53) - 1
"""The largest amount a ``settlement_reported`` line may carry: an integer any JSON reader holds
exactly, and far above the largest line kwx computes (``MAX_HAND_COINS``), so a correct report is
never refused."""


def to_dict(rules: Rules) -> dict[str, Any]:
    out: dict[str, Any] = msgspec.to_builtins(rules)
    return out
