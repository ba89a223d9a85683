"""Every rule option has a type, a range and a default (domain.rule_options.OPTIONS), documented in
docs/rules-options.md (this test keeps the two equal); a new table's rules outside them are refused
naming the option; the ranges keep money inside 64 bits; stored rules fold as before."""

from __future__ import annotations

import re
from typing import Any

import msgspec
import pytest

from domain import money, rule_options, rules
from domain.admission import admit, rfc3339_problem
from domain.events import MAX_BASE, EventDecodeError, SettlementReported, TableOpened, decode
from domain.patterns import PATTERN_ORDER
from tests.paths import REPO

DOC = REPO / "docs" / "rules-options.md"


def _value(v: Any) -> str:
    return "`" + msgspec.json.encode(v).decode() + "`"


def options_table() -> str:
    """The markdown table of docs/rules-options.md, from the code."""
    rows = ["| option | RULES.md | type | allowed | default |", "|---|---|---|---|---|"]
    for o in rule_options.OPTIONS:
        if o.kind == "choice":
            kind, allowed = "choice", ", ".join(f"`{c}`" for c in o.choices)
        elif o.kind == "bool":
            kind, allowed = "boolean", "`true`, `false`"
        elif o.kind == "map":
            kind, allowed = "pattern id → integer", f"keys: pattern ids; values {o.low} … {o.high}"
        else:
            kind, allowed = "integer", f"{o.low} … {o.high}" + (", or `null`" if o.nullable else "")
        rows.append(f"| `{o.name}` | {o.section} | {kind} | {allowed} | {_value(o.default)} |")
    rows.append(f"| `base` (table_opened) | §7 | integer | 1 … {MAX_BASE} | `1` |")
    return "\n".join(rows)


def test_the_documented_table_is_the_code() -> None:
    text = DOC.read_text(encoding="utf-8")
    between = re.search(r"<!-- options:begin -->\n(.*?)\n<!-- options:end -->", text, re.S)
    assert between is not None, "docs/rules-options.md lost its options markers"
    expected = options_table()
    assert between[1] == expected, "docs/rules-options.md is stale; the table should be:\n" + expected


def test_every_option_of_the_rules_has_a_row_with_its_default() -> None:
    names = {o.name.split(".")[0] for o in rule_options.OPTIONS}
    assert names == set(rules.OPTION_NAMES)
    defaults = msgspec.to_builtins(rules.Rules())
    for o in rule_options.OPTIONS:
        head, _, sub = o.name.partition(".")
        assert o.default == (defaults[head][sub] if sub else defaults[head]), o.name


@pytest.mark.parametrize("preset", list(rules.PRESETS))
def test_every_preset_and_its_pinned_form_are_within_the_ranges(preset: str) -> None:
    resolved = rule_options.check({"preset": preset})
    assert rule_options.check(rules.to_dict(resolved)) == resolved  # a re-sent pinned table_opened passes


def _bad_values(o: rule_options.Option) -> list[Any]:
    if o.kind == "bool":
        return [1, "true", None]
    if o.kind == "choice":
        return ["nowhere", 1, None, o.choices[0].upper()]
    assert o.low is not None and o.high is not None
    out: list[Any] = [o.low - 1, o.high + 1, 10**30, -(10**30), "8", 1.5, True, [1]]
    if not o.nullable:
        out.append(None)
    return out


CASES = [(o, v) for o in rule_options.OPTIONS if o.kind != "map" for v in _bad_values(o)]


def _spec(o: rule_options.Option, value: Any) -> dict[str, Any]:
    head, _, sub = o.name.partition(".")
    return {"preset": "default", head: {sub: value} if sub else value}


@pytest.mark.parametrize(("option", "value"), CASES, ids=[f"{o.name}={v!r}"[:60] for o, v in CASES])
def test_a_value_outside_an_options_range_or_type_is_refused_naming_the_option(
    option: rule_options.Option, value: Any
) -> None:
    with pytest.raises(rules.RulesError) as caught:
        rule_options.check(_spec(option, value))
    exc = caught.value
    assert exc.field == f"rules.{option.name}"
    assert exc.allowed == option.allowed()
    assert option.name in exc.message and exc.message_zh and option.name in exc.message_zh
    assert len(exc.message) < 600


@pytest.mark.parametrize("option", [o for o in rule_options.OPTIONS if o.kind == "int"], ids=lambda o: o.name)
def test_the_ends_of_every_range_are_allowed(option: rule_options.Option) -> None:
    for value in (option.low, option.high):
        rule_options.check(_spec(option, value))


def test_cap_exempt_names_real_patterns_with_values_in_range() -> None:
    rule_options.check({"cap_exempt": {p: rule_options.MAX_CAP for p in PATTERN_ORDER}})
    for value, field, allowed in [
        ({"nothing_at_all": 16}, "rules.cap_exempt.nothing_at_all", list(PATTERN_ORDER)),
        ({"qi_dui": 10**30}, "rules.cap_exempt.qi_dui", {"min": 1, "max": rule_options.MAX_CAP}),
        ({"qi_dui": 0}, "rules.cap_exempt.qi_dui", {"min": 1, "max": rule_options.MAX_CAP}),
        ({"qi_dui": "16"}, "rules.cap_exempt.qi_dui", {"min": 1, "max": rule_options.MAX_CAP}),
        ([], "rules.cap_exempt", None),
    ]:
        with pytest.raises(rules.RulesError) as caught:
            rule_options.check({"cap_exempt": value})
        assert (caught.value.field, caught.value.allowed) == (field, allowed), value


def test_unknown_options_presets_and_kong_kinds_list_the_known_ones() -> None:
    for spec, field, allowed in [
        ({"capp": 8}, "rules.capp", list(rules.OPTION_NAMES)),
        ({"preset": "nowhere"}, "rules.preset", list(rules.PRESETS)),
        ({"kong_points": {"hidden": 1}}, "rules.kong_points.hidden", list(rules.KONG_KINDS)),
        ({"kong_points": 5}, "rules.kong_points", None),
    ]:
        with pytest.raises(rules.RulesError) as caught:
            rule_options.check(spec)
        assert (caught.value.field, caught.value.allowed) == (field, allowed), spec
    with pytest.raises(rules.RulesError) as caught:
        rule_options.check([1])
    assert caught.value.field == "rules"


def test_stored_rules_outside_todays_ranges_still_resolve_for_the_fold() -> None:
    """A table stored before the ranges (kong points of 10^30) folds as it did: the engine's
    ``resolve`` is unchanged; only a new table is held to ``check``."""
    stored = {"preset": "default", "kong_points": {"concealed": 10**30, "added": -3, "exposed": 2},
              "cap_exempt": {"nothing": 10**40}}  # fmt: skip
    resolved = rules.resolve(stored)
    assert resolved.kong_points.concealed == 10**30 and resolved.kong_points.added == -3
    with pytest.raises(rules.RulesError):
        rule_options.check(stored)


def test_the_money_bound_leaves_a_wide_margin_below_64_bits() -> None:
    assert money.MAX_HAND_COINS < 2**49
    assert 2 * money.MAX_HAND_COINS * 8_400 < 2**63  # the docstring's 8,400 hands at the maximum
    assert money.MAX_HAND_COINS < money.MAX_REPORTED_AMOUNT < 2**63
    # 手抓一 at its largest leaves the multiplier bound: 2 (碰碰胡) × 8 (大三元) × 2^14 × 64
    assert money.MAX_MULTIPLIER // 2 >= 2 * 8 * 2**14 * 64


# ------------------------------------------------------------------------------ admission of events
@pytest.mark.parametrize(
    ("at", "problem"),
    [("2026-02-01T12:00:00Z", None), ("2026-02-01t12:00:00z", None), ("2026-02-01 12:00:00+08:00", None),
     ("2024-02-29T00:00:00Z", None), ("2026-12-31T23:59:60Z", None), ("2026-12-31T15:59:60-08:00", None),
     ("2026-01-01T00:59:60+01:00", None), ("2026-06-30T23:59:60.25Z", None),
     ("2026-02-01T12:00:00.123456789Z", None),
     ("2026-02-31T00:00:00Z", "February 2026 has 28 days"), ("2025-02-29T00:00:00Z", "has 28 days"),
     ("2026-04-31T01:00:00+01:00", "April 2026 has 30 days"), ("2026-12-30T23:59:60Z", "second 60"),
     ("2026-06-30T12:59:60Z", "second 60"),
     # the ends of the calendar (the fuzzer's 500 "year 0 is out of range" on the first)
     ("0000-01-31T23:59:60Z", "year 0000"), ("0000-06-01T00:00:00Z", "year 0000"),
     ("9999-12-31T23:59:60Z", None), ("9999-12-31T23:59:60-01:00", "second 60"),
     ("0001-01-01T00:00:60+00:01", "second 60"), ("0001-01-01T00:00:00Z", None)],
)  # fmt: skip
def test_at_is_a_real_rfc3339_time(at: str, problem: str | None) -> None:
    found = rfc3339_problem(at)
    if problem is None:
        assert found is None, at
    else:
        assert found is not None and problem in found, (at, found)


def test_admission_names_the_field_and_never_changes_the_event() -> None:
    bad = decode(b'{"type":"table_closed","id":"x","at":"2026-02-31T00:00:00Z"}')
    refusal = admit(bad)
    assert refusal is not None and (refusal.code, refusal.field) == ("malformed", "at")
    assert "expected an RFC 3339 time such as 2026-02-01T12:00:00Z" in refusal.message
    opened = TableOpened(id="o", players=["a", "b", "c"], rules={"kong_points": {"concealed": 10**30}})
    refusal = admit(opened)
    assert refusal is not None and refusal.code == "bad_rules"
    assert refusal.field == "rules.kong_points.concealed"
    assert refusal.allowed == {"min": 0, "max": rule_options.MAX_KONG_POINTS}
    assert admit(TableOpened(id="o", players=["a", "b", "c"])) is None


@pytest.mark.parametrize("amount", [0, -5, 2**64, money.MAX_REPORTED_AMOUNT + 1])
def test_a_reported_amount_outside_1_to_2_53_is_refused(amount: int) -> None:
    ev = msgspec.convert(
        {"type": "settlement_reported", "id": "r", "hand": 1,
         "transfers": [{"from": 0, "to": 1, "amount": 4}, {"from": 1, "to": 2, "amount": amount}]},
        SettlementReported,
    )  # fmt: skip
    refusal = admit(ev)
    assert refusal is not None and refusal.field == "transfers[1].amount"
    assert refusal.allowed == {"min": 1, "max": money.MAX_REPORTED_AMOUNT}


def test_a_self_transfer_and_the_largest_amount_are_admitted() -> None:
    ev = msgspec.convert(
        {"type": "settlement_reported", "id": "r", "hand": 1,
         "transfers": [{"from": 1, "to": 1, "amount": money.MAX_REPORTED_AMOUNT}]},
        SettlementReported,
    )  # fmt: skip
    assert admit(ev) is None


@pytest.mark.parametrize(
    ("event", "listed"),
    [('{"type":"tile_thrown","id":"x"}', "tile_discarded"),
     ('{"type":"tile_drawn","id":"x","seat":0,"tile":"0p"}', "1p, 2p, 3p"),
     ('{"type":"kong","id":"x","seat":0,"tile":"1p","kind":"hidden"}', "concealed, added, exposed"),
     ('{"type":"table_opened","id":"x","players":["a","b","c"],"violations":"x"}', "reject, record"),
     ('{"type":"settlement_reported","id":"x","hand":1,"transfers":[{"from":0,"to":"bank","amount":1}]}',
      "0, 1, 2, house")],
)  # fmt: skip
def test_an_unknown_enum_value_lists_the_valid_ones(event: str, listed: str) -> None:
    with pytest.raises(EventDecodeError) as caught:
        decode(event)
    assert listed in caught.value.message and caught.value.field is not None
    assert caught.value.message.endswith(f"- at `{caught.value.field}`")


def test_a_bad_at_gives_the_format_not_the_regex() -> None:
    with pytest.raises(EventDecodeError) as caught:
        decode('{"type":"table_closed","id":"x","at":"yesterday"}')
    assert "expected an RFC 3339 time such as 2026-02-01T12:00:00Z" in caught.value.message
    assert "[0-9]" not in caught.value.message and caught.value.field == "$.at"
