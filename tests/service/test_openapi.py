"""openapi/openapi.json is what the app generates (`make openapi` rewrites it)."""

from __future__ import annotations

from tests.paths import REPO


def test_the_committed_openapi_document_matches_the_app() -> None:
    from services.commands.openapi import document

    committed = (REPO / "openapi" / "openapi.json").read_text()
    assert committed == document(), "openapi/openapi.json drifted: run `make openapi` and commit it"


def test_operation_ids_are_stable_and_named_tag_dash_name() -> None:
    import json

    from services.commands.openapi import document

    spec = json.loads(document())
    ids = [op["operationId"] for path in spec["paths"].values() for op in path.values()]
    assert len(ids) == len(set(ids))
    assert all("-" in i and i.split("-", 1)[0] in {t for op in spec["paths"].values() for o in op.values()
                                                   for t in o.get("tags", [])} for i in ids)  # fmt: skip
    assert "tables-append_events" in ids and "health-get" in ids
