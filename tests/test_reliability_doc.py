"""docs/RELIABILITY.md names the test behind every promise: each test module and test function it
names must exist, so the document cannot point at a proof that was renamed or removed."""

from __future__ import annotations

import re

from tests.paths import REPO


def test_every_test_the_reliability_doc_names_exists() -> None:
    doc = (REPO / "docs" / "RELIABILITY.md").read_text(encoding="utf-8")
    named = set(re.findall(r"\btest_[a-z0-9_]+", doc))
    modules = {p.stem for p in (REPO / "tests").rglob("test_*.py")}
    functions = {
        name
        for p in (REPO / "tests").rglob("*.py")
        for name in re.findall(r"^(?:async )?def (test_[a-z0-9_]+)", p.read_text(encoding="utf-8"), re.M)
    }
    assert len(named) > 20, "the document names its proofs"
    assert sorted(named - modules - functions) == []
