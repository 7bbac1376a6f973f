"""A preset's goals in the workbook (issue #16): editable goal cells per Scenarios row, a live condition
of the Plan, recalculated by LibreOffice to what report.recommend picks.

Fixture tests/fixtures/xlsx-goals.yaml: a training deadline that the cheapest fitting configuration
(2 × A100, 2.35 days) misses, a serving goal (16 users, 4,096 tokens each, 40 tokens/s per user) that
one A100 misses, and a matrix without a goal. LibreOffice is required (see test_xlsx.py)."""
from __future__ import annotations

from pathlib import Path

import openpyxl
import pytest
import yaml

import workbooks
from lo import recalculated_values
from reportgen.pipeline import load, make_report, write_outputs
from test_xlsx import (FIRST_ROW, STAMP, assert_plan, assert_rows, book, columns, expected_rows, formula_cells,  # noqa: F401
                       same, soffice)  # book and soffice: fixtures (book reads this module's report)
from test_xlsx_edits import formula_errors

FIXTURE = Path(__file__).parent / "fixtures" / "xlsx-goals.yaml"


@pytest.fixture(scope="module")
def report():
    return make_report(load(str(FIXTURE)), STAMP)


def report_with(tmp_path: Path, **goal_of_matrix) -> object:
    """The fixture's report with other goals for some matrices (name -> goal mapping)."""
    data = yaml.safe_load(FIXTURE.read_text())
    for m in data["matrices"]:
        if m["name"] in goal_of_matrix:
            m["goal"] = goal_of_matrix[m["name"]]
    path = tmp_path / "edited-goals.yaml"
    path.write_text(yaml.safe_dump(data))
    return make_report(load(str(path)), STAMP)


def edit_goal_cells(book: Path, dst: Path, matrix: str, **cells) -> Path:
    wb = workbooks.load(book)
    ws = wb["Scenarios"]
    cols = columns(ws)
    for row in range(FIRST_ROW, ws.max_row + 1):
        if ws.cell(row, cols["matrix"]).value == matrix:
            for name, value in cells.items():
                ws.cell(row, cols[name]).value = value
    path = dst / "edited.xlsx"
    wb.save(path)
    return path


def test_the_goals_change_the_picks_they_should(report):
    """The fixture is what the other tests need: without its goals, two picks would differ."""
    picks = {rec.requirement.settings[-1][0]: rec.best.result.label for rec in report.recommendations}
    assert picks["goal.within_seconds"] == "Llama-2-7B · full · bf16-mixed · 2×H100-80GB-SXM · ZeRO-3"
    assert picks["goal.min_tokens_per_s"] == "Llama-2-7B · inference · bf16 · 1×H100-80GB-SXM"
    cheapest_fitting = {r.matrix: min((x for x in report.results if x.matrix == r.matrix),
                                      key=lambda x: (x.purchase_usd, x.total_gpus, x.index)).label
                        for r in report.results}
    assert cheapest_fitting["deadline"] == "Llama-2-7B · full · bf16-mixed · 2×A100-80GB · ZeRO-3"
    assert cheapest_fitting["serving"] == "Llama-2-7B · inference · bf16 · 1×A100-80GB"


def test_goal_cells_recalculate_to_the_reports_picks(book, report, soffice, tmp_path):
    fresh = recalculated_values(book, tmp_path)
    cached = workbooks.load(book, data_only=True)
    for sheet, coord, formula in formula_cells(workbooks.load(book)):
        want, got = cached[sheet][coord].value, fresh[sheet][coord].value
        assert same(want, got), f"{sheet}!{coord} = {formula[:120]}: Python {want!r}, LibreOffice {got!r}"
    assert not formula_errors(fresh)
    assert assert_rows(fresh, {"Scenarios": expected_rows(report)["Scenarios"]}) > 500
    assert_plan(fresh, report.recommendations)
    ws = fresh["Scenarios"]
    cols = columns(ws)
    met = {}
    for row in range(FIRST_ROW, ws.max_row + 1):
        matrix = ws.cell(row, cols["matrix"]).value
        met.setdefault(matrix, []).append(ws.cell(row, cols["goal_met"]).value)
        days = ws.cell(row, cols["goal_within_days"]).value
        assert days == (2 if matrix == "deadline" else None)
        text = ws.cell(row, cols["requirement"]).value
        assert ("goal." in text) == (matrix != "no goal")
        # a serving goal sets the batch per layout: the requirement leaves it out
        assert ("batch_size=" in text) == (matrix != "serving")
    assert met == {"deadline": [0, 1, 1, 1, 1, 1], "serving": [0, 1, 1, 1, 1, 1], "no goal": [1]}


def test_an_edited_deadline_moves_the_pick(book, soffice, tmp_path):
    """Three days instead of two: 2 × A100 (2.35 days) meets it and is cheapest again."""
    edited = edit_goal_cells(book, tmp_path, "deadline", goal_within_days=3)
    fresh = recalculated_values(edited, tmp_path / "out")
    want = report_with(tmp_path, deadline={"within": "3d"})
    assert_plan(fresh, want.recommendations)
    (pick,) = [rec.best.result.label for rec in want.recommendations if rec.requirement.value("goal.within_seconds")]
    assert pick == "Llama-2-7B · full · bf16-mixed · 2×A100-80GB · ZeRO-3"


def test_a_cleared_speed_goal_and_a_typo_break_nothing(book, soffice, tmp_path):
    """The speed cells cleared: the serving pick is one A100 again. The deadline typed as text ('2d'):
    no row meets it, nothing is picked for that requirement, and no cell shows an error."""
    first = edit_goal_cells(book, tmp_path, "serving", goal_min_tokens_per_s=None)
    (tmp_path / "typo").mkdir()
    edited = edit_goal_cells(first, tmp_path / "typo", "deadline", goal_within_days="2d")
    fresh = recalculated_values(edited, tmp_path / "out")
    assert not formula_errors(fresh)
    ws, plan = fresh["Scenarios"], fresh["Plan"]
    cols, pcols = columns(ws), columns(plan)
    rows = {ws.cell(r, cols["matrix"]).value: r for r in range(FIRST_ROW, ws.max_row + 1)}
    assert ws.cell(rows["deadline"], cols["goal_met"]).value == 0
    picks = {plan.cell(r, pcols["requirement"]).value: plan.cell(r, pcols["label"]).value
             for r in range(FIRST_ROW, plan.max_row + 1) if plan.cell(r, pcols["cheapest"]).value == 1}
    assert not any("full" in text for text in picks)  # the deadline requirement: nothing meets "2d"
    serving = picks[next(t for t in picks if "inference" in t and "goal." in t)]
    assert serving.startswith("Llama-2-7B · inference") and serving.endswith(" · 1×A100-80GB"), serving


def test_a_first_token_goal_typed_in_moves_the_serving_pick(book, report, soffice, tmp_path):
    """goal_max_ttft_s typed on the serving rows, just under the pick's time to first token (generate():
    16 prompts prefilled before the first token): LibreOffice's Plan moves to what report.recommend picks
    for the same goal stated in the preset, a layout that prefills fewer prompts per replica or faster."""
    (rec,) = [rec for rec in report.recommendations if rec.requirement.value("goal.min_tokens_per_s")]
    limit = 0.9 * rec.best.result.estimate["prefill_seconds"]
    want = report_with(tmp_path, serving={"users": 16, "context": 4096, "min_tokens_per_s": 40,
                                          "max_ttft": f"{limit!r}s"})
    (moved,) = [r for r in want.recommendations if r.requirement.value("goal.max_ttft_seconds")]
    assert moved.best.result.label != rec.best.result.label
    assert moved.best.result.estimate["prefill_seconds"] <= limit
    edited = edit_goal_cells(book, tmp_path, "serving", goal_max_ttft_s=limit)
    fresh = recalculated_values(edited, tmp_path / "out")
    assert not formula_errors(fresh)
    ws = fresh["Scenarios"]
    cols = columns(ws)
    met = [ws.cell(r, cols["goal_met"]).value for r in range(FIRST_ROW, ws.max_row + 1)
           if ws.cell(r, cols["matrix"]).value == "serving"]  # in the order of the results
    assert met == [int(want.goals["serving"].meets(r.estimate)) for r in want.results if r.matrix == "serving"]
    assert 0 < sum(met) < len(met)
    plan = fresh["Plan"]
    pcols = columns(plan)
    (serving,) = [plan.cell(r, pcols["label"]).value for r in range(FIRST_ROW, plan.max_row + 1)
                  if plan.cell(r, pcols["cheapest"]).value == 1 and plan.cell(r, pcols["workload"]).value == "inference"
                  and plan.cell(r, pcols["model"]).value == "Llama-2-7B"]
    layout = lambda label: label.split(" · bf16 · ")[-1]  # noqa: E731 (the workbook's label names the batch too)
    assert serving.endswith(" · " + layout(moved.best.result.label)), serving
    assert not serving.endswith(" · " + layout(rec.best.result.label))


def test_the_guide_explains_goal_cells_only_when_there_are_goals(book, tmp_path):
    def guide(path):
        return [row[0] for row in openpyxl.load_workbook(path, read_only=True)["Guide"].iter_rows(values_only=True)
                if row and row[0]]
    assert "Goals" in guide(book) and any("goal_within_days" in line for line in guide(book))
    plain = make_report(load(str(Path(__file__).parent / "fixtures" / "xlsx-small.yaml")), STAMP)
    (path,) = write_outputs(plain, tmp_path, ["xlsx"], "en")
    assert "Goals" not in guide(path)
    header = next(openpyxl.load_workbook(path, read_only=True)["Scenarios"].iter_rows(max_row=1, values_only=True))
    assert "goal_met" not in header and "requirement" in header
