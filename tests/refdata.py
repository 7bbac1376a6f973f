"""Independent reference data for tests: ../shared/reference beside the checkout (read-only)."""
from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
REFERENCE = REPO.parent / "shared" / "reference"


@lru_cache(maxsize=None)
def facts() -> list[dict]:
    path = REFERENCE / "facts.json"
    if not path.exists():
        raise FileNotFoundError(f"reference facts missing: {path} (CI lays ../shared beside the checkout)")
    return json.loads(path.read_text(encoding="utf-8"))


def facts_of(kind: str) -> list[dict]:
    return [r for r in facts() if r["kind"] == kind]


@lru_cache(maxsize=None)
def measured() -> dict:
    return json.loads((REFERENCE / "measured.json").read_text(encoding="utf-8"))
