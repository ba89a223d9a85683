"""A request's refusal in Chinese (``message_zh``), without a database: pydantic's own 422s said
in Chinese words with the limits they name (``services.api.app.invalid_zh``), and the database
faults' 503s (``services.store.faults``). The routes' own refusals are checked against a real
PostgreSQL by the fuzzing (every GET refusal carries ``message_zh``: test_fuzz_openapi.py)."""

from __future__ import annotations

import re

import psycopg
from psycopg import errors as pg_errors
from psycopg_pool import PoolTimeout

from services.api.app import invalid_zh
from services.store.faults import fault

CJK = re.compile(r"[\u4e00-\u9fff]")


def test_pydantics_refusals_are_said_in_chinese_with_their_limits() -> None:
    assert invalid_zh({"type": "greater_than_equal", "ctx": {"ge": 1}}) == "应不小于 1"
    assert invalid_zh({"type": "less_than_equal", "ctx": {"le": 200}}) == "应不大于 200"
    assert invalid_zh({"type": "int_parsing"}) == "应为整数"
    assert (
        invalid_zh({"type": "literal_error", "ctx": {"expected": "'zh' or 'en'"}})
        == "应为以下之一：'zh' 或 'en'"
    )
    assert invalid_zh({"type": "string_too_long", "ctx": {"max_length": 64}}) == "最多 64 个字符"
    assert invalid_zh({"type": "missing"}) == "缺少这一项"
    # a type this build has no words for, or words whose limit is missing: still Chinese, never a 500
    assert invalid_zh({"type": "url_scheme"}) == "不符合要求"
    assert invalid_zh({"type": "greater_than_equal", "ctx": {}}) == "不符合要求"


def test_every_database_fault_says_retry_in_chinese() -> None:
    faults = [
        PoolTimeout("timeout"),
        pg_errors.QueryCanceled("canceling statement due to statement timeout"),
        pg_errors.LockNotAvailable("lock"),
        pg_errors.ReadOnlySqlTransaction("read only"),
        psycopg.OperationalError("connection refused"),
    ]
    for exc in faults:
        found = fault(exc)
        assert found is not None, exc
        assert CJK.search(found.message_zh) and found.message_zh.endswith("请重试"), (exc, found)
        assert found.message.endswith("retry"), found
