"""Message catalogues: every user-visible string of the HTML/PDF report, one file per language.

`templates/i18n/<lang>.json` holds
- "messages": key -> text, with `{name}` placeholders (str.format); en and zh have the same keys;
- "terms": term or assumption name -> translated label. The English labels are the definitions
  in terms.py (one source of truth), so en.json's "terms" is empty and only other languages fill it;
- "sources": the same for the source and explanation text of terms ("<name>", "group.<name>") and
  of the lookup tables' rows ("<Table>.<row>");
- "texts": catalogue data written in English (the GPU and model catalogues' sources) and explanations only the
  workbook shows (the model shape terms' sources) -> the translation, keyed by the English itself, so that a
  source a planner edits shows as written rather than as a stale translation.
Numbers and units are formatted by the caller, identically in every language.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Mapping

from ..model.catalog import data_dir
from ..errors import InputError
from ..model.inputs import ASYNC_BESIDE, INPUTS
from ..model.units import GiB

LANGUAGES = ("en", "zh")
HTML_LANG = {"en": "en", "zh": "zh-Hans"}


@dataclass(frozen=True)
class Catalogue:
    lang: str
    messages: Mapping[str, str]
    terms: Mapping[str, str]
    sources: Mapping[str, str] = field(default_factory=dict)
    texts: Mapping[str, str] = field(default_factory=dict)

    def __call__(self, key: str, **values: object) -> str:
        """The message `key`, with `{name}` placeholders filled from `values`."""
        text = self.messages[key]  # a missing key is a bug, not a user error
        return text.format(**values) if values else text

    def get(self, key: str, default: str, **values: object) -> str:
        """Like calling the catalogue, for keys derived from data that may be newer than the catalogue."""
        text = self.messages.get(key, default)
        return text.format(**values) if values else text

    def label(self, name: str, english: str) -> str:
        """A term's or assumption's label: the translation if this language has one, else the definition's."""
        return self.terms.get(name, english)

    def source(self, name: str, english: str) -> str:
        """A term's or table row's source text: the translation if this language has one."""
        return self.sources.get(name, english) if english else english

    def unit(self, name: str) -> str:
        """A unit's name in this language ("unit.<name>"), else as the definition writes it."""
        return self.get(f"unit.{name}", name)

    def text(self, english: str) -> str:
        """Catalogue data written in English, translated where this language has that very text."""
        return self.texts.get(english, english)

    @property
    def html_lang(self) -> str:
        return HTML_LANG[self.lang]


def catalogue_path(lang: str) -> Path:
    return data_dir("templates") / "i18n" / f"{lang}.json"


@lru_cache(maxsize=None)
def load_catalogue(lang: str) -> Catalogue:
    if lang not in LANGUAGES:
        raise InputError(f"unknown language {lang!r} (known: {', '.join(LANGUAGES)})", key_path="lang")
    path = catalogue_path(lang)
    raw = json.loads(path.read_text(encoding="utf-8"))
    from ..model.estimate import SKIP_REASONS  # the estimator's own words: imported only where a report is written
    # a parallel layout's form ("TP{v}") is the input table's in every language, and a skip rule's words the
    # estimator's where the catalogue has no translation (English)
    defaults = {**{f"axis.{i.name}": i.tag for i in INPUTS if i.tag},
                **{f"skip.{code}": text for code, text in SKIP_REASONS.items()}}
    return Catalogue(lang, {**defaults, **raw["messages"]}, dict(raw.get("terms", {})), dict(raw.get("sources", {})),
                     dict(raw.get("texts", {})))


def fit_limit_text(values: Mapping[str, float], host_ram_per_node_gib: float, t: Catalogue) -> str:
    """What keeps a configuration from fitting with k, in words, from its term fit_limit ('' if it fits):
    the figures in GiB per GPU (host RAM per node), two decimals."""
    code = int(values["fit_limit"])
    if not code:
        return ""
    figures = (("weights", values["weights"]), ("memory", values["gpu_memory_bytes"]),
               ("recommended", values["recommended"]), ("pool", values.get("kv_pool_bytes", 0)),
               ("need", values.get("kv_cache", 0)), ("host", values.get("node_host_bytes", 0)),
               ("ram", host_ram_per_node_gib * GiB), ("budget", values.get("engine_budget_bytes", 0)))
    return t(f"fit_limit.{code}", **{k: f"{v / GiB:,.2f}" for k, v in figures})


# ---------------------------------------------------------------------------------------------
# The workbook's strings

# The workbook's checks that say what the command line says: the estimator's words where the catalogue has no
# translation (English)
WORKBOOK_OWN_MESSAGES = {"check.async_beside": f"rollout_mode: {ASYNC_BESIDE}"}


@lru_cache(maxsize=None)
def load_workbook_catalogue(lang: str) -> Catalogue:
    """The workbook's catalogue, `templates/i18n/xlsx.<lang>.json`: its own messages (sheet texts,
    column labels, check reasons) and labels of inputs and helper columns ("terms"), joined with the
    report's translations the workbook shares (term and assumption labels, "axis.*" formats of an
    input's value, "skip.*" reasons, "decision.kind.*" job kinds, "note_verdict.*" and "unit.*"), so each is
    translated once."""
    report = load_catalogue(lang)
    raw = json.loads((data_dir("templates") / "i18n" / f"xlsx.{lang}.json").read_text(encoding="utf-8"))
    shared = {k: v for k, v in report.messages.items()
              if k.startswith(("axis.", "skip.", "decision.kind.", "note_verdict.", "unit."))}
    return Catalogue(lang, {**shared, **WORKBOOK_OWN_MESSAGES, **raw["messages"]},
                     {**report.terms, **raw.get("terms", {})}, report.sources, report.texts)
