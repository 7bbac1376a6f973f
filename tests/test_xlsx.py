"""The Excel workbook: live formulas that LibreOffice recalculates to the estimator's numbers.

LibreOffice is required: these tests fail (they do not skip) without it, because a silently
skipped formula check proves nothing. Install it with scripts/install-system-deps.sh.
"""
from __future__ import annotations

import csv
import hashlib
import itertools
import json
import math
import re
import time
import xml.etree.ElementTree as ET
import zipfile
from dataclasses import replace
from operator import attrgetter
from pathlib import Path

import openpyxl
import pytest
from openpyxl.utils import column_index_from_string, get_column_letter
from openpyxl.utils.cell import coordinate_from_string, range_boundaries

import workbooks
from lo import ValueBook, convert, recalculated_values, require_soffice
from reportgen.model.estimate import Estimator, RlhfScenario
from reportgen.model.formulas import EXCEL_FUNCTIONS
from reportgen.pipeline import load, make_report, write_outputs
from reportgen.planning.ranking import PLAN_ORDER, RENT_ORDER
from reportgen.report.build import PlanEntry, Recommendation, Requirement, Result, recommend
from reportgen.model.terms import BAR_PARTS, TERM_BY_NAME
from reportgen.report.charts import PALETTE
from reportgen.report.views import segments
from reportgen.model.units import GiB
from reportgen.writers.xlsx.book import sheet_runs
from reportgen.writers.xlsx.plan import lookup_literal
from reportgen.writers.xlsx.stream import SheetRows, StreamColumn, StreamingWorkbook, shareable, sheet_parts

REPO = Path(__file__).resolve().parent.parent
FIXTURE = Path(__file__).parent / "fixtures" / "xlsx-small.yaml"
STAMP = "2026-01-01T00:00:00+00:00"
FIRST_ROW = 3  # scenario-like sheets: row 1 formula names, row 2 labels
ERRORS = ("#NAME?", "#REF!", "#VALUE!", "#DIV/0!", "#N/A", "#NUM!", "#NULL!", "Err:")
# Every function a formula may use: the expression language's, its lookups' and the plan's (MID: a Plan
# row's workload, read from its requirement text; IFERROR: its link's row, Excel 2007). All pre-2010.
ALLOWED_FUNCTIONS = EXCEL_FUNCTIONS | {"INDEX", "MATCH", "SUMPRODUCT", "ROW", "COUNTA", "COUNTIF", "MID", "LEN",
                                       "SUBSTITUTE", "IFERROR"}
NO_FIT = 10**15
FORMULA_NAMES = ("=cmd|' /C calc'!A0", "@SUM(A1)")
CSV_SHEET = "csv:Text - txt - csv (StarCalc):44,34,76,1,,0,false,true,false,false,false,{sheet}"  # one sheet, by number


@pytest.fixture(scope="module")
def soffice():
    require_soffice()


@pytest.fixture(scope="module")
def loaded():
    return load(str(FIXTURE))


@pytest.fixture(scope="module")
def report(loaded):
    return make_report(loaded, STAMP)


@pytest.fixture(scope="module")
def book(report, tmp_path_factory) -> Path:
    """Written through the pipeline, as `reportgen build --format xlsx` does."""
    (path,) = write_outputs(report, tmp_path_factory.mktemp("book"), ["xlsx"], "en")
    return path


@pytest.fixture(scope="module")
def recalculated(book, soffice, tmp_path_factory) -> ValueBook:
    return recalculated_values(book, tmp_path_factory.mktemp("recalculated"))


# ---------------------------------------------------------------------------------------------
# Reading helpers

def columns(ws) -> dict[str, int]:
    """Formula name (row 1) -> column number."""
    return {ws.cell(1, c).value: c for c in range(1, ws.max_column + 1) if ws.cell(1, c).value}


def same(want, got, *, exact: bool = False) -> bool:
    if isinstance(want, str) or isinstance(got, str) or want is None or got is None or exact:
        return want == got
    return math.isclose(want, got, rel_tol=1e-9, abs_tol=1e-9)


def formula_cells(wb):
    """(sheet, coordinate, formula) of every formula cell of a workbook (loaded with its formulas)."""
    for ws in wb.worksheets:
        for row in ws.iter_rows():
            for cell in row:
                if cell.data_type == "f":
                    yield ws.title, cell.coordinate, cell.value


def expected_rows(report, written=None) -> dict[str, dict[int, dict]]:
    """Python values by sheet and row: Scenarios (single and role rows) and RLHF (groups), on the
    rows of the workbook written for `written` (default: `report`; its results edited in place give
    `report`'s), in its sheets' order (test_rows_of_a_requirement_stand_together checks it)."""
    scen, rlhf = {}, {}
    row = FIRST_ROW
    order = [part[k] for part, places in sheet_runs(written or report) for k in places.tolist()]
    place = {r.index: k for k, r in enumerate(order)}
    for r in sorted(report.results, key=lambda r: place[r.index]):
        if r.is_group:
            rlhf[FIRST_ROW + len(rlhf)] = dict(r.estimate.values)
            for _, est in r.estimate.roles:
                scen[row] = {**est.scenario.inputs(), **est.values}
                row += 1
        else:
            scen[row] = {**r.lead.inputs(), **r.estimate.values}
            row += 1
    return {"Scenarios": scen, "RLHF": rlhf}


def assert_rows(wb, expected: dict[str, dict[int, dict]]) -> int:
    """Every named column of the expected rows holds the Python value; returns cells checked."""
    checked = 0
    for sheet, rows in expected.items():
        ws = wb[sheet]
        cols = columns(ws)
        for row, values in rows.items():
            for name, want in values.items():
                if name not in cols:
                    continue
                got = ws.cell(row, cols[name]).value
                flag = name in TERM_BY_NAME and TERM_BY_NAME[name].unit == "flag"
                assert same(want, got, exact=flag), f"{sheet}!{ws.cell(row, cols[name]).coordinate} {name}: {want!r} != {got!r}"
                checked += 1
    return checked


def row_value(wb, result, name: str):
    """A cell of a result's row (Scenarios, or RLHF for a group) in this workbook."""
    ws = wb["RLHF" if result.is_group else "Scenarios"]
    cols = columns(ws)
    number = "index" if result.is_group else "report_index"  # Scenarios' "#" is a formula: its written number
    (value,) = {ws.cell(row, cols[name]).value for row in range(FIRST_ROW, ws.max_row + 1)
                if ws.cell(row, cols[number]).value == result.index
                and (result.is_group or not ws.cell(row, cols["role"]).value)}
    return value


def label_of(wb, result) -> str:
    """The label a result's row shows in this workbook."""
    return row_value(wb, result, "label")


def speed_of(r) -> tuple:
    """What the Plan shows of a pick's time and speed (views.speed): time to train, or per RLHF
    iteration, or tokens per second per user."""
    v = r.estimate
    if r.is_group:
        return "—", v["iteration_seconds"], "—"
    return (v["time_to_train_seconds"] / 3600, "—", "—") if v["is_train"] else ("—", "—", v["tokens_per_s_per_user"])


def assert_plan(wb, recommendations, texts=None) -> None:
    """The Plan equals report.recommend's answer: per requirement (the text its rows show in `wb`,
    or `texts`) and GPU type, the pick to buy and the pick to rent (named by their labels in `wb`),
    and the cheapest of each across the requirement's GPU types."""
    ws = wb["Plan"]
    cols = columns(ws)
    row = FIRST_ROW
    for k, rec in enumerate(recommendations):
        text = texts[k] if texts else row_value(wb, rec.sample, "requirement")
        for entry in rec.entries:
            cell = lambda name: ws.cell(row, cols[name]).value  # noqa: E731
            keys = (entry.model, entry.workload, entry.gpu, text)
            assert (cell("model"), cell("workload"), cell("gpu"), cell("requirement")) == keys
            assert cell("scenarios_tried") == entry.num_scenarios, keys
            r = entry.result
            if r is None:
                assert cell("best_index") == NO_FIT and cell("label") == "—" and cell("purchase_usd") == "—"
            else:
                assert (cell("index"), cell("label"), cell("total_gpus")) == (r.index, label_of(wb, r), r.total_gpus)
                assert (cell("zero_stage"), cell("tp_size")) == (r.lead.zero_stage, r.lead.tp_size)
                for name, term in (("device_total_gib", "device_total"), ("recommended_gib", "recommended"),
                                   ("headroom_gib", "headroom_bytes")):
                    assert same(r.estimate[term] / GiB, cell(name)), (row, name)
                figures = {"purchase_usd": r.purchase_usd, "hourly_usd": r.estimate["hourly_usd"],
                           "rent_usd": r.rent_usd, **dict(zip(("train_hours", "iteration_seconds", "tokens_per_s_per_user"), speed_of(r)))}
                for name, want in figures.items():
                    assert same(want, cell(name)), (row, name)
            rent = entry.rent
            if rent is None:
                assert cell("rent_index") == NO_FIT and cell("rent_label") == "—" and cell("rent_pick_usd") == "—"
            else:
                assert cell("rent_label") == label_of(wb, rent)
                assert cell("rent_index") == row_value(wb, rent, "row_in_table")
                assert same(rent.rent_usd, cell("rent_pick_usd")), row
            assert cell("cheapest") == int(rec.best is not None and rec.best.gpu == entry.gpu), keys
            rent_gpu = rec.cheapest_to_rent.gpu if rec.cheapest_to_rent else None
            assert cell("cheapest_to_rent") == int(rent_gpu == entry.gpu), keys
            row += 1
    assert ws.cell(row, cols["model"]).value is None


def assert_notes(wb, notes) -> None:
    """Each figure's value cell (column C of its row on Notes) equals the figure's Python value."""
    ws = wb["Notes"]
    figures = {}
    note = None
    for row in ws.iter_rows(min_row=1, max_col=3):
        key, _, value = (c.value for c in row)
        if isinstance(key, str) and re.fullmatch(r"N\d+", key):
            note = key
        elif note and key is not None and value is not None and not isinstance(value, str):
            figures[(note, key)] = value
    want = {(n.id, f.key): f.value for n in notes for f in n.figures}
    assert want and figures.keys() == want.keys()
    for k, v in want.items():
        assert same(v, figures[k]), k


# ---------------------------------------------------------------------------------------------
# LibreOffice recalculates every formula to the Python value

def test_every_formula_cell_recalculates_to_the_python_value(book, recalculated, report):
    cached = workbooks.load(book, data_only=True)
    fresh = recalculated
    count = 0
    for sheet, coord, formula in formula_cells(workbooks.load(book)):
        want, got = cached[sheet][coord].value, fresh[sheet][coord].value
        assert same(want, got), f"{sheet}!{coord} = {formula[:120]}: Python {want!r}, LibreOffice {got!r}"
        count += 1
    assert count > 5000
    # The cached values are the Python values (checked independently of the writer below), so the
    # comparison above is LibreOffice against the estimator; and no cell anywhere is an error.
    for ws in fresh.worksheets:
        for row in ws.iter_rows():
            for cell in row:
                assert not (isinstance(cell.value, str) and cell.value.startswith(ERRORS)), f"{ws.title}!{cell.coordinate}"
    assert assert_rows(fresh, expected_rows(report)) > 3000
    assert_plan(fresh, report.recommendations)
    assert_notes(fresh, report.notes)


def test_charts_follow_the_plan(recalculated, report):
    """A bar per pick of the Plan, a single model's or an RLHF group's (its tightest pool's, of every shape of
    group in the fixture), part by part the report's bar (terms.BAR_PARTS), adding up to the device total as
    LibreOffice computes it."""
    wb = recalculated
    ws = wb["Charts"]
    cols = columns(ws)
    picks = [rec.best.result for rec in report.recommendations if rec.best]
    groups = [r for r in picks if r.is_group]
    assert groups and len(groups) < len(picks)
    assert {len(r.estimate.pools()) > 1 for r in groups} == {True, False}  # one pool and several
    for row, r in enumerate(picks, start=FIRST_ROW):
        values = r.estimate.values
        assert ws.cell(row, cols["label"]).value == label_of(wb, r)
        assert ws.cell(row, cols["sheet"]).value == ("RLHF" if r.is_group else "Scenarios")
        assert same(values["device_total"] / GiB, ws.cell(row, cols["device_total_gib"]).value)
        bar = segments(r.estimate)
        assert list(bar) == list(BAR_PARTS)
        for part in bar:
            assert same(bar[part] / GiB, ws.cell(row, cols[f"{part}_gib"]).value), (r.label, part)
        assert same(sum(ws.cell(row, cols[f"{part}_gib"]).value for part in bar) * GiB, values["device_total"])
    # the spare rows, for Plan rows a planner adds, show nothing yet
    spare = range(FIRST_ROW + len(picks), ws.max_row + 1)
    assert len(spare) == 3 and all(ws.cell(row, cols["label"]).value in ("", None) for row in spare)


def test_a_groups_label_says_its_pools(recalculated, report):
    """An RLHF group's label on RLHF (what the Plan and Charts show of a pick) names each pool on GPUs of its own
    with its count and type, as LibreOffice computes it: the Plan's GPU type is the actor's, and a separate pool's
    may be another's (the plan moves a pool to a cheaper type)."""
    wb = recalculated
    pooled = 0
    for r in report.results:
        if r.is_group:
            label = label_of(wb, r)
            for role, s in r.estimate.scenario.pooled_roles:
                assert f" · {role} {s.num_gpus}×{s.gpu}" in label, (label, role)
                pooled += 1
    assert pooled > 2


def test_rows_of_a_requirement_stand_together(book, report):
    """The rows of one requirement stand together on Scenarios and on RLHF, in scenario order, so
    that each Plan row searches only them (its `together` cell is 1, its searched rows are them); so
    do a requirement's Plan rows, which its cheapest marks compare."""
    wb = workbooks.load(book, data_only=True)
    for sheet in ("Scenarios", "RLHF"):
        ws = wb[sheet]
        cols = columns(ws)
        rows = [(ws.cell(row, cols["requirement"]).value, ws.cell(row, cols["index"]).value)
                for row in range(FIRST_ROW, ws.max_row + 1)]
        texts = [text for text, _ in rows if text]
        runs = [text for k, text in enumerate(texts) if k == 0 or text != texts[k - 1]]
        assert len(runs) == len(set(runs)) > 1, sheet
        for text in runs:
            indices = [index for t, index in rows if t == text]
            assert indices == sorted(indices), text
    plan = wb["Plan"]
    cols = columns(plan)
    for row in range(FIRST_ROW, plan.max_row + 1):
        cell = lambda name: plan.cell(row, cols[name]).value  # noqa: E731
        assert cell("together") == 1
        assert cell("link_row") == cell("requirement_first")  # the link is the first row: no lookup
        assert cell("search_to") - cell("search_from") + 1 == cell("requirement_rows") >= cell("scenarios_tried")
        assert cell("plan_together") == 1  # and so do the Plan rows of one requirement
        assert cell("plan_from") <= row - FIRST_ROW + 1 <= cell("plan_to") == cell("plan_from") + cell("plan_rows") - 1


def test_cached_values_are_the_python_values_without_recalculation(book, report):
    wb = workbooks.load(book, data_only=True)
    assert assert_rows(wb, expected_rows(report)) > 3000
    assert_plan(wb, report.recommendations)
    assert_notes(wb, report.notes)


# ---------------------------------------------------------------------------------------------
# Edited inputs recompute everything downstream

def _find_row(ws, cols, index, role=None) -> int:
    for row in range(FIRST_ROW, ws.max_row + 1):
        if ws.cell(row, cols["report_index"]).value == index and ws.cell(row, cols["role"]).value == role:
            return row
    raise AssertionError(f"no row for scenario {index} {role}")


def test_edited_inputs_recompute_like_the_estimator(book, report, soffice, tmp_path, loaded):
    edits = {  # result index -> input changes (single scenarios)
        1: {"batch_size": 4},  # inference
        17: {"num_gpus": 4},  # full, ZeRO-3 on 2 GPUs -> 4
        13: {"zero_stage": 2},  # full, ZeRO-0 on 4 GPUs -> ZeRO-2
        27: {"model": "Llama-3.2-1B"},  # LoRA on another catalog model
    }
    # a vLLM row: another sampler (now larger than the forward) and utilisation (layout inputs: it stays put)
    vllm = next(r for r in report.results if not r.is_group and r.lead.serving_engine == "vllm"
                and r.lead.engine_sampler == "fused" and r.lead.tp_size == 1)
    edits[vllm.index] = {"engine_sampler": "sort", "gpu_memory_utilization": 0.8}
    ppo = next(r for r in report.results if r.is_group and r.workload == "ppo")
    actor_edit = {"batch_size": 8}
    new_k = 1.4

    wb = workbooks.load(book)
    ws = wb["Scenarios"]
    cols = columns(ws)
    for index, change in edits.items():
        row = _find_row(ws, cols, index)
        for name, value in change.items():
            ws.cell(row, cols[name]).value = value
    # the group's job input: its batch given (a rank's prompts) on its RLHF row, which every role row re-splits
    rlhf = wb["RLHF"]
    group_row = next(row for row in range(FIRST_ROW, rlhf.max_row + 1)
                     if rlhf.cell(row, columns(rlhf)["index"]).value == ppo.index)
    for name, value in actor_edit.items():
        rlhf.cell(group_row, columns(rlhf)[f"given_{name}"]).value = value
    assumptions = wb["Assumptions"]
    (k_cell,) = [r[2] for r in assumptions.iter_rows(min_row=2) if r[0].value == "safety_factor"]
    k_cell.value = new_k
    edited = tmp_path / "edited.xlsx"
    wb.save(edited)

    estimator = Estimator(loaded.estimator.specs, loaded.estimator.gpus,
                          {**loaded.estimator.assumptions, "safety_factor": new_k})
    results = []
    for r in report.results:
        if r.is_group:
            g: RlhfScenario = r.estimate.scenario
            if r is ppo:  # every role laid out anew from the actor's new batch
                g = g.relayout(**actor_edit)
            est = estimator.estimate_group(g)
        else:
            est = estimator.estimate(replace(r.lead, **edits.get(r.index, {})))
        results.append(Result(r.index, r.matrix, est))
    new_report = replace(report, results=tuple(results))

    fresh = recalculated_values(edited, tmp_path / "out")
    expected = expected_rows(new_report, report)
    assert assert_rows(fresh, expected) > 3000
    # The edits took effect (not stale cached values): the recalculated rows differ from before.
    before = expected_rows(report)
    for index in edits:
        row = _find_row(fresh["Scenarios"], columns(fresh["Scenarios"]), index)
        assert expected["Scenarios"][row]["recommended"] != before["Scenarios"][row]["recommended"]
    assert expected["RLHF"][FIRST_ROW]["allocated_peak"] != before["RLHF"][FIRST_ROW]["allocated_peak"]
    # A job input edited (batch, model) moves a row to another requirement; a layout edited (GPUs, ZeRO)
    # keeps it in its own. The Plan rows keep the requirements they were written for (#34), even where
    # the edited row was the one their search starts from: the requirement's other rows answer them.
    written = workbooks.load(book, data_only=True)
    for r in report.results:
        moved = r.index in (1, 27, ppo.index)
        assert (row_value(fresh, r, "requirement") != row_value(written, r, "requirement")) == moved, r.index
    assert "batch_size=4 · " in row_value(fresh, report.results[0], "requirement")
    gpu_types = tuple(g for g in report.gpus if g in {r.gpu for r in results})
    firsts_edited = [rec for rec in report.recommendations if rec.sample.index in (1, 27, ppo.index)]
    assert len(firsts_edited) >= 2
    fresh_recs = recommend(results, gpu_types, report.interchangeable)
    expected_plan, texts = on_written_rows(report.recommendations, fresh_recs, fresh)
    assert texts == [row_value(written, rec.sample, "requirement") for rec in report.recommendations]
    kept = [e for rec, want in zip(report.recommendations, expected_plan) if rec in firsts_edited for e in want.entries]
    assert any(e.num_scenarios > 0 for e in kept)  # an edited first row's requirement is still planned
    assert_plan(fresh, expected_plan, texts)


def on_written_rows(written, fresh, after):
    """The fresh recommendations on the Plan's written rows, and the requirement texts those rows plan.
    A row plans the candidates of its GPU type whose requirement text is the one written (its
    recommendation's) while some row of `after`, the recalculated workbook, shows it: a row whose edited
    job input gives it another text leaves the requirement, which its other rows answer (#34). When no
    row shows it, the row plans the text its first row (the recommendation's sample) now shows. A
    written GPU type of which no candidate is left shows 0 tried, nothing fits; the cheapest marks are
    among the written rows of one requirement."""
    by_text = {row_value(after, rec.sample, "requirement"): rec for rec in fresh}
    shown = {after[sheet].cell(row, columns(after[sheet])["requirement"]).value
             for sheet in ("Scenarios", "RLHF") for row in range(FIRST_ROW, after[sheet].max_row + 1)}
    plan = after["Plan"]
    column = columns(plan)["requirement_written"]
    firsts = itertools.accumulate([FIRST_ROW] + [len(rec.entries) for rec in written[:-1]])
    texts = [text if text in shown else row_value(after, rec.sample, "requirement")
             for rec, text in zip(written, (plan.cell(row, column).value for row in firsts))]
    assert len(set(texts)) == len(texts), "two Plan rows of one GPU type would plan one requirement"
    out = []
    for rec, text in zip(written, texts):
        match = by_text.get(text)  # None: no row has the text now (each was edited, or is invalid)
        need = match.requirement if match else Requirement(*text.split(" · ")[:2], ())
        entries = {e.gpu: e for e in match.entries} if match else {}
        rows = tuple(entries.get(e.gpu) or PlanEntry(need, e.gpu, None, 0, 0) for e in rec.entries)
        fitting = [e for e in rows if e.fits]
        out.append(Recommendation(need, min(fitting, key=lambda e: attrgetter(*PLAN_ORDER)(e.result), default=None),
                                  rows, rec.sample, min(fitting, key=lambda e: attrgetter(*RENT_ORDER)(e.rent), default=None)))
    return out, texts


# ---------------------------------------------------------------------------------------------
# Streamed rows (xlsx/stream.py): shared formulas, valid SpreadsheetML

NS = "{http://schemas.openxmlformats.org/spreadsheetml/2006/main}"


def rewrite_parts(src: Path, dst: Path, edit) -> None:
    """Copy a workbook, passing every worksheet part's XML through edit(sheet name, xml)."""
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w", zipfile.ZIP_DEFLATED) as zout:
        names = {part: name for name, part in sheet_parts(zin).items()}
        for info in zin.infolist():
            data = zin.read(info)
            if info.filename in names:
                data = edit(names[info.filename], data.decode()).encode()
            zout.writestr(info, data)


def test_shared_formulas_recalculate_in_every_row(book, report, soffice, tmp_path, loaded):
    """Shared formulas are recalculated row by row, not kept from the cache: an input edited in a
    row below the formulas' first row recomputes that row, and a wrong cached value planted in
    every shared cell (all but the first row's) is replaced by the right one."""
    ws = workbooks.load(book)["Scenarios"]
    cols = columns(ws)
    single = [r for r in report.results if not r.is_group and r.workload == "inference"][-1]
    row = _find_row(ws, cols, single.index)
    assert row > FIRST_ROW + 10
    new_batch = single.lead.batch_size + 3
    batch_cell = f"{get_column_letter(cols['batch_size'])}{row}"
    planted = 0

    def edit(sheet: str, xml: str) -> str:
        nonlocal planted
        if sheet == "Scenarios":
            xml, n = re.subn(rf'(<c r="{batch_cell}"[^>]*><v>)[^<]*(</v>)', rf"\g<1>{new_batch}\g<2>", xml)
            assert n == 1
        xml, n = re.subn(r'(<f t="shared" si="\d+"/><v>)[^<]*(</v>)', r"\g<1>-7\g<2>", xml)
        planted += n
        return xml

    edited = tmp_path / "edited.xlsx"
    rewrite_parts(book, edited, edit)
    assert planted > 3000
    stale = openpyxl.load_workbook(edited, data_only=True)["Scenarios"]
    assert stale.cell(row, cols["weights"]).value == -7

    results = [Result(r.index, r.matrix, loaded.estimator.estimate(replace(r.lead, batch_size=new_batch)))
               if r is single else r for r in report.results]
    new_report = replace(report, results=tuple(results))
    fresh = recalculated_values(edited, tmp_path / "out")
    expected = expected_rows(new_report, report)
    assert expected["Scenarios"][row]["recommended"] != expected_rows(report)["Scenarios"][row]["recommended"]
    assert assert_rows(fresh, expected) > 3000
    gpu_types = tuple(g for g in report.gpus if g in {r.gpu for r in results})
    assert_plan(fresh, *on_written_rows(report.recommendations, recommend(results, gpu_types, report.interchangeable),
                                        fresh))
    assert_notes(fresh, report.notes)


def test_plan_and_charts_open_from_their_cached_numbers(book, soffice, tmp_path):
    """The sheets a planner opens first keep their cached numbers at load: LibreOffice (recalculation on load off,
    its default for Excel files) shows a number planted in every numeric Plan and Charts formula cell, where it
    would recalculate a shared formula's cell (and the Scenarios terms behind it) as soon as the tab or a chart read
    it. Scenarios keeps its shared formulas (ten thousand rows of them in full: about 500 MB of XML)."""
    planted = 0

    def edit(sheet: str, xml: str) -> str:
        nonlocal planted
        if sheet in ("Plan", "Charts"):
            assert 't="shared"' not in xml
            xml, n = re.subn(r'(<c r="[A-Z]+\d+"(?: s="\d+")?><f>[^<]*</f><v>)[^<]*(</v>)', r"\g<1>-7\g<2>", xml)
            planted += n
        else:
            assert sheet != "Scenarios" or 't="shared"' in xml
        return xml

    edited = tmp_path / "planted.xlsx"
    rewrite_parts(book, edited, edit)
    assert planted > 200
    plan_csv = convert(edited, tmp_path / "csv", CSV_SHEET.format(sheet=2), out_suffix="-Plan.csv", recalc=False)
    with plan_csv.open(encoding="utf-8") as f:
        rows = list(csv.DictReader(line for i, line in enumerate(f) if i != 1))  # row 2: the labels
    gibs = [r["device_total_gib"] for r in rows if r["device_total_gib"]]
    assert gibs and set(gibs) == {"-7"}


def _styles_resolved(z: zipfile.ZipFile) -> dict[str, bytes]:
    """A saved workbook's parts, each cell's, row's and column's style index replaced by what the index stands
    for (its font, fill, border, number format and alignment), and styles.xml left out: openpyxl saves the same
    styles under other indexes when its style list was built otherwise (a parse keeps the file's duplicates)."""
    st = ET.fromstring(z.read("xl/styles.xml"))
    listed = {kind: [ET.tostring(e) for e in st.find(f"{NS}{kind}s")] for kind in ("font", "fill", "border")}
    formats = {e.get("numFmtId"): e.get("formatCode") for e in st.find(f"{NS}numFmts")}
    keys = []
    for xf in st.find(f"{NS}cellXfs"):
        a = dict(xf.attrib)
        key = [listed[kind][int(a.pop(f"{kind}Id", 0))] for kind in ("font", "fill", "border")]
        key += [formats.get(a.get("numFmtId"), a.pop("numFmtId", "0")), sorted(a.items())]
        key += [ET.tostring(child) for child in xf]
        keys.append(hashlib.sha1(repr(key).encode()).hexdigest()[:12].encode())
    style = re.compile(rb' (s|style)="(\d+)"')
    return {n: style.sub(lambda m: b' %s="%s"' % (m.group(1), keys[int(m.group(2))]), z.read(n))
            for n in z.namelist() if n not in ("xl/styles.xml", "docProps/core.xml")}


def test_a_workbook_parsed_once_and_copied_saves_as_a_fresh_parse(book, tmp_path):
    """tests/workbooks.py hands the tests copies of a book parsed once: a copy, edited and saved, holds what a
    fresh parse edited the same way saves (every part, each style index read as the style it stands for; the time
    of saving aside), and copies are independent of one another."""
    saved = []
    for name, wb in (("fresh", openpyxl.load_workbook(book)), ("copy", workbooks.load(book))):
        cell = wb["Scenarios"].cell(FIRST_ROW, columns(wb["Scenarios"])["batch_size"])
        original, cell.value = cell.value, 7
        wb.save(tmp_path / f"{name}.xlsx")
        saved.append(_styles_resolved(zipfile.ZipFile(tmp_path / f"{name}.xlsx")))
    fresh, copy = saved
    assert fresh == copy and len(fresh) > 20
    second = workbooks.load(book)["Scenarios"]
    assert second.cell(FIRST_ROW, columns(second)["batch_size"]).value == original != 7  # not the first copy's edit


def test_streamed_sheets_are_valid_spreadsheetml(book):
    """What Excel insists on and openpyxl does not check: rows and cells in order, each with its
    reference, existing style indexes, a dimension that covers the cells, and shared formulas
    whose first cell carries the text and a range that holds every member."""
    with zipfile.ZipFile(book) as z:
        styles = ET.fromstring(z.read("xl/styles.xml"))
        num_xfs = len(styles.find(f"{NS}cellXfs"))
        parts = sheet_parts(z)
        for sheet, part in parts.items():
            root = ET.fromstring(z.read(part))
            rows = root.find(f"{NS}sheetData").findall(f"{NS}row")
            numbers = [int(r.get("r")) for r in rows]
            assert numbers == sorted(set(numbers)), f"{sheet}: rows out of order or repeated"
            shared: dict[str, tuple[str, int, int, int]] = {}  # si -> (column, first, last row, members)
            top, left, bottom, right = math.inf, math.inf, 0, 0
            for r, row in zip(numbers, rows):
                cells = row.findall(f"{NS}c")
                assert all(c.get("r") for c in cells), f"{sheet} row {r}: a cell without its reference"
                refs = [coordinate_from_string(c.get("r")) for c in cells]
                assert all(n == r for _, n in refs), f"{sheet} row {r}: a cell of another row"
                cols_ = [column_index_from_string(letter) for letter, _ in refs]
                assert cols_ == sorted(set(cols_)), f"{sheet} row {r}: cells out of order or repeated"
                if cells:
                    top, bottom = min(top, r), max(bottom, r)
                    left, right = min(left, cols_[0]), max(right, cols_[-1])
                for c, (letter, _) in zip(cells, refs):
                    assert int(c.get("s", 0)) < num_xfs, f"{sheet}!{c.get('r')}: style {c.get('s')}"
                    f = c.find(f"{NS}f")
                    if f is not None and f.get("t") == "shared":
                        si = f.get("si")
                        if si not in shared:
                            assert f.get("ref") and f.text, f"{sheet}!{c.get('r')}: shared formula {si} without text"
                            c1, r1, c2, r2 = range_boundaries(f.get("ref"))
                            assert (get_column_letter(c1), r1) == (letter, r) and c1 == c2
                            shared[si] = (letter, r1, r2, 0)
                        else:
                            assert f.get("ref") is None and not f.text
                        col, r1, r2, members = shared[si]
                        assert col == letter and r1 <= r <= r2, f"{sheet}!{c.get('r')}: outside shared formula {si}"
                        shared[si] = (col, r1, r2, members + 1)
                    if f is not None:
                        assert c.find(f"{NS}v") is not None, f"{sheet}!{c.get('r')}: a formula without its value"
            dimension = root.find(f"{NS}dimension").get("ref")
            if bottom:
                want = f"{get_column_letter(left)}{top}:{get_column_letter(right)}{bottom}"
                assert dimension == want, f"{sheet}: dimension {dimension}, cells span {want}"
            for si, (col, r1, r2, members) in shared.items():
                assert members == r2 - r1 + 1, f"{sheet}: shared formula {si} has gaps"
            if sheet in ("Scenarios", "NoteScenarios"):
                # Every formula column is one shared formula but "#" (column A: each row reads its own written
                # row, an absolute reference) and "check", which an RLHF role row writes as its own (it says first
                # whether its group's settings fail); row 1 names the columns.
                names = {c.get("r").rstrip("0123456789"): "".join(t.text or "" for t in c.iter(f"{NS}t"))
                         for c in rows[0].findall(f"{NS}c")}
                formula_columns = {c.get("r").rstrip("0123456789") for c in rows[2].findall(f"{NS}c")
                                   if c.find(f"{NS}f") is not None}
                own = {c.get("r").rstrip("0123456789") for row in rows for c in row.findall(f"{NS}c")
                       if c.find(f"{NS}f") is not None and c.find(f"{NS}f").get("t") != "shared"} & formula_columns
                assert {names[letter] for letter in own} <= {"index", "check"}, sheet
                assert len(shared) == len(formula_columns - own) > 80, sheet


def test_shareable_formulas():
    row = "\x00"
    assert shareable(f"=IF(P{row}=\"inference\",CJ{row},X{row})")
    assert shareable(f"=SUMPRODUCT((Scenarios!$O$3:$O$1000=O{row})*(Models!$B$2:$B$9<$B{row}))/safety_factor")
    assert shareable("=ROW()")
    assert not shareable(f"=A{row}+B3")  # a relative reference to a fixed row would move
    assert not shareable(f"=A{row}+Scenarios!B3")
    assert not shareable("=A$" + row)  # the row number inside an absolute reference
    assert not shareable(f'=A{row}&"row {row}"')  # the row number in a text
    assert not shareable(f"=SUM(3:3)+A{row}")


ESCAPED = {"bell\x07": "bell_x0007_", "_x0041_": "_x005F_x0041_"}  # as Excel (and XlsxWriter) store them


def test_streamed_cells_read_back(tmp_path):
    """Values of every type, texts that need escaping, blanks, own and shared formulas."""
    path = tmp_path / "cells.xlsx"
    wb = StreamingWorkbook(str(path), {"constant_memory": True})
    ws = wb.add_worksheet("Data")
    ws.write_string(0, 0, "header")
    number = wb.add_format({"num_format": "#,##0.00"})
    columns = [StreamColumn("text", None), StreamColumn("n", number), StreamColumn("flag", None),
               StreamColumn("double", number, True, "=B\x00*2"), StreamColumn("label", None, True, '=A\x00&"%"'),
               StreamColumn("own", None, True)]
    texts = ["<a & b>", " padded ", "tab\there", "bell\x07", "_x0041_", "100%", "中文 · ×", ""]
    rows = [{"text": t, "n": i + 0.5 if i % 2 else i, "flag": i % 3 == 0, "double": (i + 0.5 if i % 2 else i) * 2,
             "label": t + "%"} for i, t in enumerate(texts)]
    rows[3]["n"] = None
    rows[3]["double"] = 0
    # row 3's own formula in a formula column; row 4's in a value column (an RLHF role's input that follows its group)
    per_row = {1: {"own": "=B4+1"}, 2: {"n": "=B3*3"}}
    rows[1]["own"] = rows[1]["n"] + 1
    rows[2]["n"] = rows[1]["n"] * 3
    wb.stream_rows(ws, SheetRows(columns, 2, rows, per_row))
    wb.close()

    cached = openpyxl.load_workbook(path, data_only=True)["Data"]
    formulas = openpyxl.load_workbook(path)["Data"]
    assert cached.max_row == len(texts) + 1 and cached.dimensions == f"A1:F{len(texts) + 1}"
    for i, (t, row) in enumerate(zip(texts, rows)):
        r = i + 2
        # An empty text leaves the cell blank; openpyxl shows Excel's _xHHHH_ escapes as stored.
        stored = ESCAPED.get(t, t)
        assert cached.cell(r, 1).value == (stored or None)
        assert cached.cell(r, 2).value == row["n"]
        assert cached.cell(r, 4).number_format == "#,##0.00"
        assert cached.cell(r, 2).number_format == ("#,##0.00" if row["n"] is not None else "General")
        assert cached.cell(r, 3).value == int(row["flag"])
        assert cached.cell(r, 4).value == row["double"]
        assert cached.cell(r, 5).value == stored + "%"
        assert formulas.cell(r, 4).value == f"=B{r}*2"
        assert formulas.cell(r, 5).value == f'=A{r}&"%"'
    assert formulas.cell(3, 6).value == "=B4+1" and cached.cell(3, 6).value == rows[1]["own"]
    assert formulas.cell(2, 6).value is None
    assert formulas.cell(4, 2).value == "=B3*3" and cached.cell(4, 2).value == 4.5
    assert [formulas.cell(r, 2).value for r in (2, 3, 5)] == [rows[0]["n"], rows[1]["n"], None]


# ---------------------------------------------------------------------------------------------
# Safety and dialect

def test_formula_like_scenario_names_are_text(book, report):
    ws = workbooks.load(book)["Scenarios"]
    cols = columns(ws)
    names = {ws.cell(row, cols["name"]).value: ws.cell(row, cols["name"]).data_type
             for row in range(FIRST_ROW, ws.max_row + 1)}
    for name in FORMULA_NAMES:
        assert names[name] == "s"
    assert {r.label for r in report.results} >= set(FORMULA_NAMES)


def test_formulas_use_only_pre_2010_functions_without_xlfn(book):
    with zipfile.ZipFile(book) as z:
        for name in z.namelist():
            if name.endswith(".xml"):
                assert b"_xlfn." not in z.read(name), name
    used = set()
    for sheet, coord, formula in formula_cells(workbooks.load(book)):
        assert "_xlfn" not in formula
        # Function names, not text inside string literals.
        used |= set(re.findall(r"([A-Z][A-Z0-9.]*)\(", re.sub(r'"[^"]*"', '""', formula)))
    assert used <= ALLOWED_FUNCTIONS, used - ALLOWED_FUNCTIONS
    assert {"INDEX", "MATCH", "ROUNDUP", "SUMPRODUCT"} <= used


def test_a_requirement_text_is_looked_up_only_below_excels_limit(book, report):
    """Excel's MATCH and COUNTIF refuse a lookup value longer than 255 characters (LibreOffice does not, so
    only this reading of the formulas can tell): a requirement text is looked up only in the branch of an
    IF that holds for a text (wildcards escaped) under 255 characters; a longer one is compared with =."""
    cached = workbooks.load(book, data_only=True)
    longest = max(len(row_value(cached, r, "requirement")) for r in report.results)
    assert longest > 255  # the fixture's RLHF groups: a lookup would fail in Excel
    wb = workbooks.load(book)
    refs = []
    for sheet in ("Scenarios", "RLHF", "Plan"):
        letter = get_column_letter(columns(wb[sheet])["requirement"])
        refs += [rf"\b{sheet}_requirement\b(?!_)", rf"(?<![A-Z])\${letter}\$?\d"]
    looked_up = re.compile(r"MATCH\(((?:SUBSTITUTE\()*[^,]*)|COUNTIF\([^,]*,([^)]*)\)")
    checked = guarded = 0
    for sheet, coord, formula in formula_cells(wb):
        for match in looked_up.finditer(formula):
            value = match.group(1) or match.group(2)
            checked += 1
            if not any(re.search(ref, value) for ref in refs):
                continue
            text = re.search(r"\$[A-Z]+\d+", value).group(0)
            literal = "SUBSTITUTE(" * 3 + text + ',"~","~~"),"*","~*"),"?","~?")'
            short = f"IF(LEN({literal})<255,"
            # the lookup is taken only for a short text: COUNTIF of the escaped text, MATCH of the text
            # itself when escaping changes nothing, else of the escaped text
            before, rest = formula[:match.start()], formula[match.start():]
            if rest.startswith("COUNTIF("):
                assert rest.split(",", 1)[1].startswith(f'"="&{literal})') and before.endswith(short), \
                    f"{sheet}!{coord}: {rest[:80]} is not escaped or not guarded by the text's length"
            elif rest.startswith(f"MATCH({literal},"):
                name = rest[len(f"MATCH({literal},"):].split(",")[0]
                assert before.endswith(short + f"IF({literal}={text},MATCH({text},{name},0),"), \
                    f"{sheet}!{coord}: {rest[:80]} is not guarded by the text's length"
            else:
                assert rest.startswith(f"MATCH({text},") and before.endswith(short + f"IF({literal}={text},"), \
                    f"{sheet}!{coord}: {rest[:80]} is looked up unescaped, or whatever its length"
            guarded += 1
    assert checked > 1000 and guarded > 10


def test_a_looked_up_text_is_taken_literally(soffice, tmp_path):
    """The Plan's COUNTIF and MATCH of a requirement text: its *, ? and ~ match only themselves in
    LibreOffice (a model may be named so). Unescaped, "a*b" would also count "axxb" and "a?b"."""
    texts = ["a*b", "axxb", "a?b", "a~b", "ab", "A*B"]
    wb = openpyxl.Workbook()
    ws = wb.active
    for r, text in enumerate(texts, start=1):
        ws.cell(r, 1).value = text
        literal = lookup_literal(f"A{r}")
        ws.cell(r, 2).value = f'=COUNTIF($A$1:$A${len(texts)},"="&{literal})'
        ws.cell(r, 3).value = f"=MATCH({literal},$A$1:$A${len(texts)},0)"
    wb.save(tmp_path / "literal.xlsx")
    fresh = recalculated_values(tmp_path / "literal.xlsx", tmp_path / "out").active
    # Text comparison is case-insensitive in both spreadsheets, as the = the longer texts fall back to.
    same = {t: [u for u in texts if u.lower() == t.lower()] for t in texts}
    for r, text in enumerate(texts, start=1):
        assert fresh.cell(r, 2).value == len(same[text]), text
        assert fresh.cell(r, 3).value == texts.index(same[text][0]) + 1, text


def nesting(formula: str) -> int:
    """Deepest parenthesis nesting outside string literals (at least the function nesting)."""
    depth = deepest = 0
    for ch in re.sub(r'"[^"]*"', '""', formula):
        depth += (ch == "(") - (ch == ")")
        deepest = max(deepest, depth)
    return deepest


LAST_ROW = 1_048_576  # a sheet's last row in Excel


def at_last_row(formula: str) -> str:
    """The formula as it reads where every row it refers to (outside string literals; a $-anchored row, a header,
    stays) is numbered with the last row's seven digits: a row's references grow with its number."""
    relative = re.compile(r"(?<![A-Za-z0-9_.$])(\$?[A-Z]{1,3})\d+(?![0-9A-Za-z_(])")
    return "".join(part if part.startswith('"') else relative.sub(rf"\g<1>{LAST_ROW}", part)
                   for part in re.split(r'("[^"]*")', formula))


def test_a_formula_at_the_last_row_counts_seven_digits_per_relative_row():
    assert at_last_row('=IF(A12="FP8 A12",LOG10(B12)+$C$2+C$2+Sheet!D9+Models_x12,B123)') == \
        f'=IF(A{LAST_ROW}="FP8 A12",LOG10(B{LAST_ROW})+$C$2+C$2+Sheet!D{LAST_ROW}+Models_x12,B{LAST_ROW})'


@pytest.mark.parametrize("language", ["en", "zh"])
def test_formulas_fit_excels_limits(report, tmp_path, language):
    """Excel refuses a formula longer than 8,192 characters, nesting more than 64 functions or holding a text
    longer than 255 characters (LibreOffice accepts all three, so its recalculation would not tell). Measured as
    each formula reads with its rows at the sheet's last (at_last_row): a row's references grow with its number (the
    skip rules' two lists, 7,553 characters on row 3, passed the limit from row 1,000 on until they were made three;
    three, 8,492 characters once the Ulysses rules came, until they were made four; the longest now 6,792 characters)."""
    (path,) = write_outputs(report, tmp_path, ["xlsx"], language)
    wb = openpyxl.load_workbook(path)
    formulas = [at_last_row(f) for _, _, f in formula_cells(wb)] + [n.attr_text for n in wb.defined_names.values()]
    assert max(len(f) for f in formulas) <= 8192
    assert max(nesting(f) for f in formulas) <= 64
    # and a text constant in a formula longer than 255 characters (the skip rule op_checkpointing's words: 260)
    texts = [text.replace('""', '"') for f in formulas for text in re.findall(r'"((?:[^"]|"")*)"', f)]
    assert len(texts) > 1000 and max(map(len, texts)) <= 255


def test_workbook_structure(book):
    wb = workbooks.load(book)
    assert wb.sheetnames[:5] == ["Guide", "Plan", "Charts", "Scenarios", "RLHF"]
    for sheet in ("Notes", "NoteScenarios", "Terms", "Assumptions", "Models", "GPUs", "Precisions", "Dtypes",
                  "Optimizers", "Choices"):
        assert sheet in wb.sheetnames
    names = wb.defined_names
    # An assumption's name is its value in use: the typed value (C) while its check (E) is ok.
    for name in ("safety_factor", "fragmentation_fraction", "cuda_context_mib", "comm_buffer_mib", "kv_block_tokens"):
        row = int(re.fullmatch(r"Assumptions!\$F\$(\d+)", names[name].attr_text).group(1))
        assert wb["Assumptions"][f"A{row}"].value == name
        assert wb["Assumptions"][f"F{row}"].value.startswith(f'=IF(Assumptions!E{row}="ok",Assumptions!C{row},')
    assert names["currency"].attr_text.startswith("Assumptions!$C$")
    ws = wb["Scenarios"]
    assert ws.freeze_panes == "C3"
    assert ws.auto_filter.ref.startswith("A2:")
    assert ws.page_setup.orientation == "landscape" and ws.sheet_properties.pageSetUpPr.fitToPage
    assert ws.page_setup.fitToWidth in (1, None) and ws.page_setup.fitToHeight == 0
    validations = {str(v.sqref).split(":")[0].rstrip("0123456789"): v for v in ws.data_validations.dataValidation}
    cols = columns(ws)
    letter = lambda name: openpyxl.utils.get_column_letter(cols[name])  # noqa: E731
    model = validations[letter("model")]
    assert model.type == "list" and model.formula1 == "Models_keys" and model.showErrorMessage
    assert names["Models_keys"].attr_text == "Models!$A$2:INDEX(Models!$A:$A,COUNTA(Models!$A:$A))"
    assert next(iter(model.sqref.ranges)).max_row == 1048576  # rows a planner adds are validated too
    assert validations[letter("checkpointing")].formula1.startswith("Choices!")
    zero = validations[letter("zero_stage")]
    assert zero.type == "whole" and (zero.formula1, zero.formula2) == ("0", "3") and zero.showErrorMessage
    # An RLHF group's settings validate as the inputs they are given as (ZeRO 0 is a stage), or as RLHF settings.
    rlhf = wb["RLHF"]
    rcols = columns(rlhf)
    rules = {str(v.sqref).split(":")[0].rstrip("0123456789"): v for v in rlhf.data_validations.dataValidation}
    from reportgen.model.inputs import INPUT_BY_NAME, RLHF_INPUT_BY_NAME
    for name, spec in (("given_zero_stage", INPUT_BY_NAME["zero_stage"]),
                       ("given_batch_size", INPUT_BY_NAME["batch_size"]), ("group_size", RLHF_INPUT_BY_NAME["group_size"]),
                       ("micro_batch_size", RLHF_INPUT_BY_NAME["micro_batch_size"])):
        rule = rules[openpyxl.utils.get_column_letter(rcols[name])]
        assert (rule.type, rule.formula1, rule.formula2) == ("whole", *map(str, spec.limits)), name
    # Catalogs and assumptions validate what is typed, by the same rules as their checks.
    gpus = wb["GPUs"]
    memory = {c.value: c.column_letter for c in gpus[1]}["memory_mib"]
    (rule,) = [v for v in gpus.data_validations.dataValidation if str(v.sqref).startswith(f"{memory}2:")]
    assert (rule.type, rule.operator, rule.formula1, rule.showErrorMessage) == ("whole", "greaterThanOrEqual", "1", True)
    k = next(v for v in wb["Assumptions"].data_validations.dataValidation if str(v.sqref) == "C2")
    assert (k.type, float(k.formula1), float(k.formula2)) == ("decimal", 1, 10)
    # Inputs are styled as inputs, formulas are not.
    assert ws.cell(FIRST_ROW, cols["batch_size"]).fill.fgColor.rgb.endswith("FFF2CC")
    assert ws.cell(FIRST_ROW, cols["weights"]).data_type == "f"
    assert ws.cell(FIRST_ROW, cols["weights"]).number_format == "#,##0"
    assert ws.cell(FIRST_ROW, cols["device_total_gib"]).number_format == "#,##0.00"


def test_chart_is_native_with_visible_axes_and_cached_data(book):
    with zipfile.ZipFile(book) as z:
        charts = [n for n in z.namelist() if n.startswith("xl/charts/chart")]
        assert charts
        xml = z.read(charts[0]).decode()
    assert "<c:barChart>" in xml and '<c:grouping val="stacked"/>' in xml
    assert "<c:valAx>" in xml and "<c:catAx>" in xml and '<c:delete val="1"/>' not in xml
    assert "Charts!$F$3:$F$" in xml and "<c:numCache>" in xml
    # a series per part of the report's bars (the allocator's reserve and the CUDA context too: an eighth colour for
    # nine parts dropped the last one), each in the report's colour for it
    fills = re.findall(r"<c:ser>.*?<a:srgbClr val=\"([0-9A-F]{6})\"", xml, flags=re.S)
    assert fills == [PALETTE[BAR_PARTS.index(p)].lstrip("#").upper() for p in BAR_PARTS]


# ---------------------------------------------------------------------------------------------
# The bundled default preset at full size

def test_default_preset_recalculates_quickly_and_correctly(soffice, tmp_path):
    report = make_report(load("default"), STAMP)
    start = time.perf_counter()
    (book,) = write_outputs(report, tmp_path, ["xlsx"], "en")
    written = time.perf_counter() - start
    start = time.perf_counter()
    fresh = recalculated_values(book, tmp_path / "recalculated")
    recalc = time.perf_counter() - start
    print(f"default preset: write {written:.2f} s, LibreOffice recalculation {recalc:.2f} s")
    cached = openpyxl.load_workbook(book, data_only=True)
    for sheet, coord, formula in formula_cells(openpyxl.load_workbook(book)):
        assert same(cached[sheet][coord].value, fresh[sheet][coord].value), f"{sheet}!{coord} = {formula[:120]}"
    assert_plan(fresh, report.recommendations)
    assert written < 10


def test_guide_names_the_preset_not_a_local_path(book, tmp_path):
    """A bundled preset is named, not located (an absolute path of the machine that built the book
    leaked there); a preset given by path shows the path as the user typed it."""
    (bundled,) = write_outputs(make_report(load("default"), STAMP), tmp_path / "a", ["xlsx"], "en")
    given = book  # the fixture, given by its path

    def preset_line(path):
        ws = openpyxl.load_workbook(path, read_only=True)["Guide"]
        return next(c.value for row in ws.iter_rows() for c in row if str(c.value or "").startswith("Preset: "))

    assert preset_line(bundled).startswith("Preset: default (bundled with reportgen) · ")
    assert preset_line(given).startswith(f"Preset: xlsx-small ({FIXTURE}) · ")
    assert str(Path(__file__).resolve().parent.parent / "presets") not in preset_line(bundled)


def test_workbook_catalogues_have_the_same_messages():
    """Every message is in both catalogues, but those whose English is the command line's own words (kept once, in
    the code), which the Chinese one translates."""
    from reportgen.report.i18n import WORKBOOK_OWN_MESSAGES
    en, zh = [set(json.loads((REPO / "templates" / "i18n" / f"xlsx.{lang}.json").read_text())["messages"])
              for lang in ("en", "zh")]
    assert not en & set(WORKBOOK_OWN_MESSAGES) and zh == en | set(WORKBOOK_OWN_MESSAGES)
