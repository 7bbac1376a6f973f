"""A big sweep's workbook (#35): live formulas on the Plan's picks and the first rows of Scenarios, values on the rest.

LibreOffice 7.4 pays for every formula's cell references when it loads a book (benchmarks/lo_load.py): a
10,000-scenario sweep took 52 s to open with every row live, 11 s with 2,000 (the default, `reportgen build
--live-rows`). Here the workbook-test sweep (127 rows) is written with 70 live rows: the rows the Plan picks (to buy,
to rent, nearest a goal) and then the first ones; the rest carry the same numbers, as values in grey italics;
LibreOffice recalculates the live rows and the Plan to the Python values, also where the first row holds values (the
shared formulas' text then stands on the first live row); a planner's edit of a live row, and a live row copied over
a value row (the Guide's recipe), recompute as the command line computes them. LibreOffice is required (see
test_xlsx.py).
"""
from __future__ import annotations

import numpy as np
import openpyxl
import pytest
from click.testing import CliRunner

import workbooks
from reportgen.cli import main
from reportgen.model.terms import PER_GPU_KEYS
from reportgen.pipeline import write_outputs
from test_xlsx import ERRORS, FIRST_ROW, assert_plan, columns, same
from test_xlsx_edits import _recalculated, cli_estimate, copy_row, report, soffice  # noqa: F401 (fixtures)

LIVE = 70


def alike(want, got) -> bool:
    """The same cell value; a text formula's "" is read as None where it is cached, and a value row's "" (an empty
    inline string) comes back from LibreOffice as None."""
    return same(want, got) or {want, got} == {None, ""}


@pytest.fixture(scope="module")
def live_book(report, tmp_path_factory):
    (path,) = write_outputs(report, tmp_path_factory.mktemp("all-live"), ["xlsx"], "en",
                            options={"xlsx": {"live_rows": None}})
    return path


@pytest.fixture(scope="module")
def values_book(report, tmp_path_factory):
    (path,) = write_outputs(report, tmp_path_factory.mktemp("values"), ["xlsx"], "en",
                            options={"xlsx": {"live_rows": LIVE}})
    return path


def live_rows(report, ws) -> set[int]:
    """The rows that should be live: those of the Plan's picks (a group's role rows), then the first, LIVE in all."""
    picks = {r.index for rec in report.recommendations for e in rec.entries for r in (e.result, e.rent, e.closest) if r}
    index = columns(ws)["report_index"]
    rows = {row for row in range(FIRST_ROW, ws.max_row + 1) if ws.cell(row, index).value in picks}
    assert 0 < len(rows) < LIVE  # the sweep's picks, and room for first rows
    return rows | set(sorted(set(range(FIRST_ROW, ws.max_row + 1)) - rows)[:LIVE - len(rows)])


def test_rows_past_the_live_ones_hold_the_same_numbers_as_values(values_book, live_book, report):
    values = workbooks.load(values_book)["Scenarios"]
    live = workbooks.load(live_book)["Scenarios"]
    cached = workbooks.load(values_book, data_only=True)["Scenarios"]
    live_cached = workbooks.load(live_book, data_only=True)["Scenarios"]
    cols = columns(values)
    assert values.max_row == live.max_row > FIRST_ROW + LIVE + 40
    expected = live_rows(report, values)
    assert max(expected) > FIRST_ROW + LIVE  # a pick past the first rows
    for row in range(FIRST_ROW, values.max_row + 1):
        formulas = [c for c in values[row] if c.data_type == "f"]
        live_formulas = [c for c in live[row] if c.data_type == "f"]
        if row in expected:
            assert [c.value for c in formulas] == [c.value for c in live_formulas] and len(formulas) > 300
        else:
            assert formulas == [] and len(live_formulas) > 300, row
            for c in values[row]:
                if c.value is not None:  # grey italics, no input colours: not an input to edit
                    assert c.font.i and c.font.color.rgb.endswith("7F7F7F") and c.fill.fill_type is None, c.coordinate
        for c in values[row]:  # every cell the number (or text) the live book caches
            assert alike(live_cached[c.coordinate].value, cached[c.coordinate].value), c.coordinate
    frozen = min(set(range(FIRST_ROW, values.max_row + 1)) - expected)
    assert values.cell(frozen, cols["batch_size"]).font.i and not values.cell(FIRST_ROW, cols["batch_size"]).font.i


def test_the_guide_says_which_rows_hold_values(values_book, live_book):
    def guide(path):
        return "\n".join(str(c.value) for c in workbooks.load(path)["Guide"]["A"] if c.value)
    rows = workbooks.load(values_book)["Scenarios"].max_row - FIRST_ROW + 1
    text = guide(values_book)
    assert f"This sweep has {rows:,} rows on Scenarios: {LIVE:,} hold live formulas (the rows the Plan picks" in text
    assert f"and the other {rows - LIVE:,} hold values, in grey italics" in text and "--live-rows all" in text
    assert "Rows written as values" not in guide(live_book)


def test_libreoffice_recalculates_the_live_rows_and_the_plan_over_the_values(values_book, report, soffice, tmp_path):
    wb = workbooks.load(values_book)
    fresh = _recalculated(wb, tmp_path)
    cached = workbooks.load(values_book, data_only=True)
    count = 0
    for ws in cached.worksheets:
        for line in ws.iter_rows():
            for c in line:
                got = fresh[ws.title][c.coordinate].value
                assert alike(c.value, got), f"{ws.title}!{c.coordinate}: Python {c.value!r}, LibreOffice {got!r}"
                assert not (isinstance(got, str) and got.startswith(ERRORS)), f"{ws.title}!{c.coordinate}"
                count += 1
    assert count > 50_000
    assert_plan(fresh, report.recommendations)


def test_a_live_row_edited_and_one_copied_over_a_value_row_recompute_like_the_cli(values_book, report, soffice,
                                                                                     tmp_path):
    wb = workbooks.load(values_book)
    ws = wb["Scenarios"]
    cols = columns(ws)
    serving = [r for r in range(FIRST_ROW, ws.max_row + 1) if ws.cell(r, cols["workload"]).value == "inference"
               and not ws.cell(r, cols["group"]).value]
    live_row = next(r for r in serving if ws.cell(r, cols["allocated_peak"]).data_type == "f")
    value_row = next(r for r in reversed(serving) if ws.cell(r, cols["allocated_peak"]).data_type != "f")
    before = ws.cell(value_row, cols["allocated_peak"]).value
    ws.cell(live_row, cols["batch_size"]).value = 24
    copy_row(ws, live_row, value_row)
    ws.cell(value_row, cols["batch_size"]).value = 40
    fresh = _recalculated(wb, tmp_path)["Scenarios"]
    inputs = {name: fresh.cell(live_row, c).value for name, c in cols.items()}
    for row, batch in ((live_row, 24), (value_row, 40)):
        want = cli_estimate({**inputs, "batch_size": batch}, report.assumptions)["per_gpu_bytes"]
        for key in PER_GPU_KEYS:
            assert same(want[key], fresh.cell(row, cols[key]).value), (row, key)
    assert fresh.cell(value_row, cols["allocated_peak"]).value != before


def test_a_first_row_written_as_values_moves_the_shared_formulas_to_the_first_live_one(report, soffice, tmp_path,
                                                                                       monkeypatch):
    """The shared formulas' text stands on the first live row (here the sixth): LibreOffice still recalculates
    every live row (and the Plan over the rest) to the Python values."""
    from reportgen.writers.xlsx import book
    live = [5, 6, 40, 80, 100]

    def chosen(self):
        frozen = np.ones(len(self.scenario_rows), dtype=bool)
        frozen[live] = False
        return frozen
    monkeypatch.setattr(book.Book, "frozen_rows", chosen)
    (path,) = write_outputs(report, tmp_path / "book", ["xlsx"], "en", options={"xlsx": {"live_rows": len(live)}})
    ws = workbooks.load(path)["Scenarios"]
    assert [r[0].row - FIRST_ROW for r in ws.iter_rows(min_row=FIRST_ROW) if any(c.data_type == "f" for c in r)] == live
    fresh = _recalculated(workbooks.load(path), tmp_path)
    cached = openpyxl.load_workbook(path, data_only=True)
    for sheet in ("Scenarios", "Plan", "RLHF"):
        for line in cached[sheet].iter_rows():
            for c in line:
                assert alike(c.value, fresh[sheet][c.coordinate].value), f"{sheet}!{c.coordinate}"
    assert_plan(fresh, report.recommendations)


def test_the_build_says_which_rows_hold_values_as_the_guide_does(tmp_path):
    from test_xlsx import FIXTURE
    result = CliRunner().invoke(main, ["build", str(FIXTURE), "--format", "xlsx", "-o", str(tmp_path),
                                       "--live-rows", str(LIVE)])
    assert result.exit_code == 0, result.output
    written = openpyxl.load_workbook(tmp_path / f"{FIXTURE.stem}.xlsx")
    rows = written["Scenarios"].max_row - FIRST_ROW + 1
    said = f"{rows - LIVE:,} of its {rows:,} Scenarios rows hold values, not formulas (the Plan's picks and the first"
    assert said in result.stderr and f"and the other {rows - LIVE:,} hold values" in "\n".join(
        str(c.value) for c in written["Guide"]["A"] if c.value)
    quiet = CliRunner().invoke(main, ["build", str(FIXTURE), "--format", "xlsx", "-o", str(tmp_path), "-q",
                                      "--live-rows", str(LIVE)])
    assert quiet.exit_code == 0 and quiet.output == ""
    live = CliRunner().invoke(main, ["build", str(FIXTURE), "--format", "xlsx", "-o", str(tmp_path)])
    assert live.exit_code == 0 and "hold values" not in live.output


@pytest.mark.parametrize("given, code", [("all", 0), ("0", 0), ("5000", 0), ("x", 2), ("-1", 2), ("1.5", 2)])
def test_live_rows_takes_a_whole_number_or_all(given, code, tmp_path):
    result = CliRunner().invoke(main, ["build", "default", "--format", "json", "-o", str(tmp_path), "-q",
                                       "--live-rows", given])
    assert result.exit_code == code, result.output
    assert code == 0 or "--live-rows" in result.output.splitlines()[-1]
