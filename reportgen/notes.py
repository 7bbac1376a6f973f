"""Error-correction notes: claims from the source articles checked with the estimator's own numbers.

Each note states a claim (original Chinese and an English translation), the setting it assumes,
a verdict, and figures. A figure is an expression over terms of named scenarios
(`Var("s1.allocated_peak")`), so the same definition gives the number here (compiled like the
term table), a live formula in the workbook (cells of the note's scenario rows) and the text in
the report. No corrected figure is typed in as prose.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable, Mapping

from .estimate import Estimator, Scenario, compile_terms, rlhf_scenario
from .formulas import Expr, Lookup, Str, Var
from .terms import Term
from .units import MiB

VERDICTS = ("correct", "wrong", "imprecise", "depends")


@dataclass(frozen=True)
class NoteFigure:
    key: str  # unique within the note
    label_en: str
    label_zh: str
    unit: str  # "bytes", "count", "ratio", "percent" (a fraction: 0.875 reads 87.5 %), "gpus"
    expr: Expr  # over Vars named "<scenario key>.<term name>"
    value: float


@dataclass(frozen=True)
class Note:
    id: str  # "N1" …
    article: str  # seed file name the claim comes from
    claim_zh: str
    claim_en: str
    setting_en: str
    setting_zh: str
    verdict: str  # one of VERDICTS
    explanation_en: str  # may reference figures as {key} (formatted by the writer)
    explanation_zh: str
    source: str
    scenarios: Mapping[str, Scenario]  # key -> scenario whose terms the figures read
    figures: tuple[NoteFigure, ...]


def evaluate_figures(estimator: Estimator, scenarios: Mapping[str, Scenario],
                     figures: Mapping[str, tuple[str, str, str, Expr]]) -> tuple[NoteFigure, ...]:
    """Compute each figure's value from its expression over the scenarios' terms."""
    results = {k: estimator.estimate(s).values for k, s in scenarios.items()}
    terms = tuple(Term(k, label_en, unit, expr) for k, (label_en, _, unit, expr) in figures.items())

    def var(n: str) -> str:
        key, term = n.split(".", 1)
        return f"R[{key!r}][{term!r}]"

    fn = compile_terms(terms, var, "_note")
    values = fn({}, estimator.assumptions, estimator.tables, results)
    return tuple(NoteFigure(k, f[0], f[1], f[2], f[3], v) for (k, f), v in zip(figures.items(), values))


def build_notes(estimator: Estimator) -> tuple[Note, ...]:
    """The catalogue of notes, computed with this estimator (its catalogs and assumptions)."""
    return tuple(make(estimator) for make in NOTE_BUILDERS)


