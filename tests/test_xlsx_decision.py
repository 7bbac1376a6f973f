"""The workbook's Decision sheet, recalculated by LibreOffice: its figures are the Python decision's, and a
planner's edits (a longer period, more GPUs in a pool, another GPU type, a PUE) recompute them as
fleet.costs computes them for the edited pools."""
from __future__ import annotations

import re
import zipfile
from pathlib import Path

import openpyxl
import pytest

from conftest import bundled_report
from lo import ValueBook, recalculated_values, require_soffice
from reportgen.planning.fleet import Pool, costs
from reportgen.report.i18n import load_workbook_catalogue
from reportgen.writers import xlsx

T = load_workbook_catalogue("en")


@pytest.fixture(scope="module")
def soffice():
    require_soffice()


@pytest.fixture(scope="module")
def procurement():
    return bundled_report("procurement")


@pytest.fixture(scope="module")
def book(procurement, tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("decision") / "procurement.xlsx"
    xlsx.write(procurement, path)
    return path


def _row(ws, label: str) -> int:
    return next(r for r in range(1, ws.max_row + 1) if ws.cell(r, 1).value == label)


def _figures(fresh: ValueBook) -> dict:
    """The recalculated sheet's fleet figures (first pool row and the rows below the fleet's sums)."""
    ws = fresh["Decision"]
    header = _row(ws, T("decision.gpu"))
    names = {ws.cell(header, c).value: c for c in range(1, ws.max_column + 1)}
    fleet = _row(ws, T("decision.fleet"))
    out = {k: ws.cell(fleet, names[T(f"decision.{k}")]).value
           for k in ("num_gpus", "owned_gpus", "new_gpus", "busy_gpu_hours", "new_busy_gpu_hours", "purchase_usd",
                     "depreciation_usd", "hosting_usd", "energy_usd", "own_usd", "rent_usd")}
    for k in ("utilisation", "new_utilisation", "break_even_utilisation", "break_even_months"):
        out[k] = ws.cell(_row(ws, T(f"decision.{k}")), 2).value
    out["verdict"] = ws.cell(_row(ws, T("decision.verdict")), 2).value
    return out


def _expected(c, pools) -> dict:
    return {"num_gpus": sum(p.num_gpus for p in pools), "busy_gpu_hours": sum(p.busy_gpu_hours for p in pools),
            "owned_gpus": sum(p.owned_gpus for p in pools), "new_gpus": sum(p.new_gpus for p in pools),
            "new_busy_gpu_hours": sum(p.new_busy_gpu_hours for p in pools), "new_utilisation": c.new_utilisation,
            "purchase_usd": c.purchase_usd, "depreciation_usd": c.depreciation_usd, "hosting_usd": c.hosting_usd,
            "energy_usd": c.energy_usd, "own_usd": c.own_usd, "rent_usd": c.rent_usd, "utilisation": c.utilisation,
            "break_even_utilisation": c.break_even_utilisation, "break_even_months": c.break_even_months,
            "verdict": T("decision.owning_cheaper") if c.own_usd < c.rent_usd else T("decision.renting_cheaper")}


def _same(got: dict, want: dict) -> None:
    for k, v in want.items():
        if isinstance(v, str) or v is None:
            assert got[k] == (v if v is not None else ""), k
        else:
            assert got[k] == pytest.approx(v, rel=1e-9), k


def test_the_recalculated_decision_is_the_reports(procurement, book, soffice, tmp_path):
    d = procurement.decision
    _same(_figures(recalculated_values(book, tmp_path)), _expected(d.costs_of(d.choice.best), d.choice.best.pools))


def test_a_planners_edits_recompute_as_the_decision_computes_them(procurement, book, soffice, tmp_path):
    d = procurement.decision
    wb = openpyxl.load_workbook(book)
    ws = wb["Decision"]
    ws.cell(_row(ws, T("decision.horizon_weeks")), 2).value = 26
    header = _row(ws, T("decision.gpu"))
    column = {ws.cell(header, c).value: c for c in range(1, ws.max_column + 1)}
    pool = d.choice.best.pools[0]
    # a planner who already owns 3 of them, busy above those for a third of the pool's hours
    edited = Pool("H200-141GB", pool.num_gpus * 2, (), pool.busy_gpu_hours * 1.5, owned_gpus=3,
                  new_busy_gpu_hours=pool.busy_gpu_hours * 0.5)
    for name in ("gpu", "num_gpus", "owned_gpus", "busy_gpu_hours", "new_busy_gpu_hours"):
        ws.cell(header + 1, column[T(f"decision.{name}")]).value = getattr(edited, name)
    assumptions = wb["Assumptions"]
    pue = next(r for r in range(1, assumptions.max_row + 1) if assumptions.cell(r, 1).value == "pue")
    assumptions.cell(pue, 3).value = 1.2
    edited_path = tmp_path / "edited.xlsx"
    wb.save(edited_path)
    a = {**procurement.assumptions, "pue": 1.2}
    pools = [edited] + list(d.choice.best.pools[1:])
    c = costs(pools, 26 * 7 * 86400, procurement.gpus, a)
    _same(_figures(recalculated_values(edited_path, tmp_path / "out")), _expected(c, pools))


def test_the_chinese_workbook_names_the_preset_and_the_decision_in_chinese(procurement, tmp_path):
    path = tmp_path / "procurement.zh.xlsx"
    xlsx.write(procurement, path, "zh")
    wb = openpyxl.load_workbook(path)
    guide = wb["Guide"]
    assert guide["A1"].value == procurement.preset.title_zh
    assert guide["A2"].value == procurement.preset.description_zh
    assert wb.properties.title == procurement.preset.title_zh
    zh = load_workbook_catalogue("zh")
    ws = wb["Decision"]
    assert ws["A1"].value == zh("decision.title")
    labels = [ws.cell(r, 1).value for r in range(1, ws.max_row + 1) if isinstance(ws.cell(r, 1).value, str)]
    for job in procurement.decision.portfolio.jobs:
        assert job.name_zh in labels


def test_the_plan_and_the_decision_print_on_a4_landscape_with_their_key_columns(book):
    wb = openpyxl.load_workbook(book)
    plan, decision = wb["Plan"], wb["Decision"]
    for ws in (plan, decision):
        assert ws.page_setup.orientation == "landscape" and int(ws.page_setup.paperSize) == 9  # A4
    header = [plan.cell(2, c).value for c in range(1, plan.max_column + 1)]
    names = [plan.cell(1, c).value for c in range(1, plan.max_column + 1)]
    last = names.index("cheapest_to_rent") + 1
    with zipfile.ZipFile(book) as z:  # openpyxl does not read a print area of whole columns back
        areas = dict(re.findall(r'<definedName name="_xlnm.Print_Area" localSheetId="\d+">(\w+)!([^<]+)<',
                                z.read("xl/workbook.xml").decode()))
    assert areas["Plan"] == f"$A:${openpyxl.utils.get_column_letter(last)}"  # every row, rows a planner adds too
    assert last < len(names) and header[last - 1]  # the search's helper columns are not printed
    assert areas["Decision"].startswith("$A$1:")
