"""Where the shared specs and conformance vectors are: ``KWX_SHARED_DIR``, else ``../shared`` beside
the repository (as on a fresh clone in CI). A missing folder fails the tests that need it; it never
turns them into skips."""

from __future__ import annotations

import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("KWX_SHARED_DIR") or (REPO / ".." / "shared")).resolve()
CONFORMANCE = Path(os.environ.get("KWX_CONFORMANCE") or (SHARED / "conformance")).resolve()
STREAMS = CONFORMANCE / "streams"
HANDS = CONFORMANCE / "hands.jsonl"
GOLDEN = REPO / "tests" / "golden"
