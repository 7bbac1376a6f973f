"""Independent reference data for tests, kept in the repository with its sources.

- tests/data/facts.json: public facts (configs, exact parameter counts, published memory figures,
  formulas), each record with its source URL and a verbatim quote (tests/data/README.md);
- tests/data/seed_passages.json: the source articles' lines that the error-correction notes quote;
- presets/validation/measured.json: peaks measured on real transformers models (shipped with the
  package: `reportgen validate` and the report's appendix use it too).
"""
from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DATA = REPO / "tests" / "data"
VALIDATION = REPO / "presets" / "validation"


def _read(path: Path):
    return json.loads(path.read_text(encoding="utf-8"))


@lru_cache(maxsize=None)
def facts() -> list[dict]:
    return _read(DATA / "facts.json")


def facts_of(kind: str) -> list[dict]:
    return [r for r in facts() if r["kind"] == kind]


def fact(record_id: str) -> dict:
    return {r["id"]: r for r in facts()}[record_id]


@lru_cache(maxsize=None)
def measured() -> dict:
    return _read(VALIDATION / "measured.json")


@lru_cache(maxsize=None)
def seed_passages() -> dict[str, dict]:
    """article id -> {"file", "title_zh", "title_en", "passages": [{"section", "text"}]}."""
    return _read(DATA / "seed_passages.json")["articles"]


def router_bias_buffers(spec) -> int:
    """The elements transformers 5.24 registers as buffers where the estimate counts parameters: DeepSeek-V3's and
    Nemotron 3's e_score_correction_bias (GPT-OSS's router bias is a parameter); checkpoints store it, and the
    estimate counts it."""
    return (spec.num_moe_layers * spec.num_experts
            if spec.router_bias and spec.model_type in ("deepseek_v3", "nemotron_h") else 0)
