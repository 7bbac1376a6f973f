"""The workbook's requirement column (writers/xlsx/requirements.py): its text is report.requirement in
words, so the Plan's formulas compare what recommend() compares.

Over the default and every bundled preset (and the default with interchangeable inputs, and the workbook
tests' fixture, one of whose matrices declares an input interchangeable): two candidate
rows of one model × workload show the same text exactly when report.requirement gives them the same
requirement; a single model's text spells its requirement; a job input changes the text, a layout
input does not. LibreOffice's recalculation of the same formulas is checked in test_xlsx.py."""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from reportgen.model.formulas import compile_terms, spreadsheet_text
from reportgen.model.inputs import INPUTS, Scenario, job_inputs
from reportgen.pipeline import load, make_report
from reportgen.scenarios.presets import bundled_presets
from reportgen.report.build import recommend
from reportgen.model.terms import Term
from reportgen.writers.xlsx.book import build_book
from reportgen.writers.xlsx.plan import plan_rows
from reportgen.writers.xlsx.requirements import scenario_requirement

WHEN = "2026-01-01T00:00:00+00:00"
FIXTURE = Path(__file__).parent / "fixtures" / "xlsx-small.yaml"


def with_interchangeable(report, names):
    """The report as if every matrix of its preset declared `names` interchangeable."""
    free = {m: tuple(names) for m in {r.matrix for r in report.results}}
    return replace(report, interchangeable=free, recommendations=recommend(report.results, report.gpu_types, free))


FREED = "default, checkpointing and batch free"


@pytest.fixture(scope="module", params=sorted(bundled_presets()) + [FREED, str(FIXTURE)])
def report(request):
    if request.param == FREED:
        return with_interchangeable(make_report(load("default"), WHEN), ("checkpointing", "batch_size"))
    return make_report(load(request.param), WHEN)


def texts(report) -> dict[int, str]:
    """Result index -> the requirement text of its candidate row (Scenarios, or RLHF for a group)."""
    book = build_book(report)
    results = list(report.results)
    return {r.index: row["requirement"] for r, row in zip(results, book.rows_of(results))}


def test_equal_texts_are_equal_requirements(report):
    text = texts(report)
    needs, spelled = {}, {}
    for r in report.results:
        need = report.requirement_of(r)
        needs.setdefault((r.model, r.workload, text[r.index]), set()).add(need)
        spelled.setdefault(need, set()).add(text[r.index])
    assert all(len(n) == 1 for n in needs.values()), [n for n in needs.values() if len(n) > 1][:1]
    assert all(len(t) == 1 for t in spelled.values()), [t for t in spelled.values() if len(t) > 1][:1]
    assert len(spelled) == len(report.recommendations)


def test_a_single_models_text_spells_its_requirement(report):
    text = texts(report)
    for r in report.results:
        if not r.is_group:
            need = report.requirement_of(r)
            want = " · ".join([r.model, r.workload] + [f"{n}={spreadsheet_text(v)}" for n, v in need.settings])
            assert text[r.index] == want


def test_plan_rows_carry_their_requirements_text(report):
    text = texts(report)
    rows = iter(plan_rows(build_book(report)))
    for rec in report.recommendations:
        for _ in rec.entries:
            assert next(rows)["requirement"] == text[rec.sample.index]


# ---------------------------------------------------------------------------------------------
# One row, one input changed

def requirement_text(s: Scenario, interchangeable=None, matrix: str = "m", group: str = "") -> str:
    fn = compile_terms((Term("r", "", "", scenario_requirement(interchangeable or {})),), lambda n: f"R[{n!r}]")
    return fn(None, None, None, {**s.inputs(), "matrix": matrix, "group": group})[0]


def other_value(name: str, value):
    spec = next(i for i in INPUTS if i.name == name)
    if spec.choices:
        return next(c for c in spec.choices if c != value)
    if spec.limits:
        lo, hi = spec.limits
        step = 1 if spec.is_int else (hi - lo) / 4
        return value + step if value + step <= hi else value - step
    return value + "-other"


@pytest.mark.parametrize("workload", ["inference", "full", "lora", "qlora"])
def test_a_job_input_changes_the_text_and_a_layout_input_does_not(workload):
    base = Scenario(model="Llama-2-7B", workload=workload, gpu="A100-80GB")
    asked = set(job_inputs(workload)) | {"model"}
    for i in INPUTS:
        if i.name == "workload":
            continue
        changed = requirement_text(replace(base, **{i.name: other_value(i.name, getattr(base, i.name))}))
        assert (changed != requirement_text(base)) == (i.name in asked), i.name


def test_the_matrix_cell_says_which_inputs_are_interchangeable():
    base = Scenario(model="Llama-2-7B", workload="full", gpu="A100-80GB")
    other = replace(base, checkpointing="full")
    free = {"free": ("checkpointing",)}
    assert requirement_text(base, free, "free") == requirement_text(other, free, "free")
    assert requirement_text(base, free, "fixed") != requirement_text(other, free, "fixed")
    assert "checkpointing=" not in requirement_text(base, free, "free")


def test_an_rlhf_role_row_leaves_it_to_its_group():
    assert requirement_text(Scenario(model="Llama-2-7B", workload="full"), group="G3") == ""
