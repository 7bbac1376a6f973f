"""The LibreOffice harness (tests/lo.py) really recalculates formulas.

Each workbook stores deliberately WRONG cached values; only a real
recalculation can produce the expected numbers.  LibreOffice is required:
these tests fail (they do not skip) when soffice is missing, because a
silently skipped formula check proves nothing.  Install it with
scripts/install-system-deps.sh.
"""
from __future__ import annotations

from pathlib import Path

import openpyxl
import pytest
import xlsxwriter

try:
    from lo import LibreOfficeError, recalculate, recalculated_values, soffice_available, to_pdf
except ImportError:  # tests/ imported as a package
    from tests.lo import LibreOfficeError, recalculate, recalculated_values, soffice_available, to_pdf


@pytest.fixture(scope="module", autouse=True)
def _require_soffice():
    if not soffice_available():
        pytest.fail(
            "LibreOffice (soffice) is not installed, so formulas cannot be "
            "verified. Run scripts/install-system-deps.sh "
            "(Debian package libreoffice-calc-nogui).",
            pytrace=False,
        )


def _cached(path: Path, sheet: str, cell: str):
    return openpyxl.load_workbook(path, data_only=True)[sheet][cell].value


def test_wrong_cached_value_is_recalculated(tmp_path: Path):
    src = tmp_path / "in" / "simple.xlsx"
    src.parent.mkdir()
    wb = xlsxwriter.Workbook(str(src))
    ws = wb.add_worksheet("Calc")
    ws.write_number("A1", 21)
    ws.write_formula("B1", "=A1*2", None, 999)           # true value 42
    ws.write_formula("B2", "=SUM(A1,B1)+0.5", None, -1)  # true value 63.5
    wb.close()

    # Precondition: the planted wrong values are what a reader sees before.
    assert _cached(src, "Calc", "B1") == 999
    assert _cached(src, "Calc", "B2") == -1

    out = recalculate(src, tmp_path / "out")
    assert out == tmp_path / "out" / "simple.xlsx"
    assert out.is_file()
    assert _cached(out, "Calc", "B1") == 42
    assert _cached(out, "Calc", "B2") == pytest.approx(63.5)


def test_index_match_and_if_across_sheets(tmp_path: Path):
    src = tmp_path / "in" / "lookup.xlsx"
    src.parent.mkdir()
    wb = xlsxwriter.Workbook(str(src))
    gpus = wb.add_worksheet("GPUs")
    gpus.write_row("A1", ["gpu", "memory_gib"])
    for i, (name, mem) in enumerate([("A100-80G", 80), ("H100-80G", 80),
                                     ("H200", 141), ("L40S", 48)], start=2):
        gpus.write_string(f"A{i}", name)
        gpus.write_number(f"B{i}", mem)

    calc = wb.add_worksheet("Calc")
    calc.write_string("A1", "H200")   # selected GPU
    calc.write_number("A2", 120)      # required GiB
    calc.write_formula("B1", "=INDEX(GPUs!$B$2:$B$5,MATCH(A1,GPUs!$A$2:$A$5,0))",
                       None, 7)                                         # -> 141
    calc.write_formula("B2", '=IF(A2<=B1,"fits","does not fit")', None,
                       "WRONG")                                         # -> fits
    calc.write_formula("B3", "=IF(A2>B1,ROUNDUP(A2/B1,0),1)", None, 0)  # -> 1
    calc.write_formula("B4", '=IFERROR(INDEX(GPUs!$B$2:$B$5,MATCH("B300",'
                       'GPUs!$A$2:$A$5,0)),-1)', None, 555)             # -> -1
    calc.write_formula("B5", "=ROUNDUP(A2*3/B1,0)", None, 0)            # -> 3
    wb.close()

    assert _cached(src, "Calc", "B1") == 7
    assert _cached(src, "Calc", "B2") == "WRONG"

    out = recalculate(src, tmp_path / "out")
    book = openpyxl.load_workbook(out, data_only=True)
    calc_out = book["Calc"]
    assert calc_out["B1"].value == 141
    assert calc_out["B2"].value == "fits"
    assert calc_out["B3"].value == 1
    assert calc_out["B4"].value == -1
    assert calc_out["B5"].value == 3
    # Formulas survive the round trip (still live, not frozen to values).
    formulas = openpyxl.load_workbook(out)["Calc"]
    assert str(formulas["B1"].value).upper().startswith("=INDEX(")


def test_recalculated_values_read_what_libreoffices_xlsx_holds(tmp_path: Path):
    """recalculated_values (LibreOffice's CSV export, which the workbook tests read) gives what openpyxl
    reads from LibreOffice's recalculated xlsx, for every kind of value a workbook shows, on every sheet."""
    src = tmp_path / "in" / "kinds.xlsx"
    src.parent.mkdir()
    wb = xlsxwriter.Workbook(str(src))
    percent = wb.add_format({"num_format": "0.00%"})
    fixed = wb.add_format({"num_format": "0.000"})
    calc = wb.add_worksheet("Calc")
    kinds = ["=21*2", "=1/3", "=2^40+7", "=1E+20", "=-1E-30", "=NA()", "=1/0", "=1=1", "=1=2", '=""', '="12"',
             '="TRUE"', '="a, ""b""" & CHAR(10) & "c"', "=SQRT(-1)"]
    for row, formula in enumerate(kinds):
        calc.write_formula(row, 0, formula, None, 0)  # a wrong cached value: LibreOffice must recalculate
    calc.write_formula(len(kinds), 0, "=1/7", percent, 0)
    calc.write_formula(len(kinds) + 1, 0, "=1/7000000", fixed, 0)
    calc.write_string(len(kinds) + 2, 2, "far corner")
    wb.add_worksheet("显存 GiB").write_formula("B2", "=Calc!A1+0.5", None, 0)
    wb.close()

    values = recalculated_values(src, tmp_path / "csv")
    xlsx = openpyxl.load_workbook(recalculate(src, tmp_path / "xlsx"), data_only=True)
    assert values.sheetnames == xlsx.sheetnames == ["Calc", "显存 GiB"]
    for ws in xlsx:
        got = values[ws.title]
        assert (got.max_row, got.max_column) == (ws.max_row, ws.max_column), ws.title
        for row in ws.iter_rows():
            for cell in row:
                want, read = cell.value, got.cell(cell.row, cell.column).value
                if isinstance(want, str) and want.startswith("#") and read.startswith("Err:"):
                    continue  # LibreOffice's CSV says Err:502 where its xlsx says #VALUE!
                assert read == pytest.approx(want, rel=1e-13) if isinstance(want, (int, float)) else read == want, \
                    (ws.title, cell.coordinate, want, read)
    calc_values = values["Calc"]
    assert [calc_values.cell(r, 1).value for r in (1, 8, 9, 10, 11, 12)] == [42, True, False, None, "12", "TRUE"]
    assert calc_values["A13"].value == 'a, "b"\nc'
    assert calc_values["A15"].value == pytest.approx(1 / 7, rel=1e-13)  # shown 14.29 %
    assert calc_values["A16"].value == pytest.approx(1 / 7e6, rel=1e-9)  # shown 0.000: 20 decimals kept
    assert values["显存 GiB"]["B2"].value == 42.5 and calc_values["C17"].coordinate == "C17"
    assert [c.value for c in calc_values["A"]][:2] == [42, pytest.approx(1 / 3, rel=1e-13)]


def test_to_pdf(tmp_path: Path):
    src = tmp_path / "in" / "print.xlsx"
    src.parent.mkdir()
    wb = xlsxwriter.Workbook(str(src))
    ws = wb.add_worksheet("Summary")
    ws.write_string("A1", "GPU memory plan")
    ws.write_number("A2", 3)
    ws.write_formula("B2", "=A2*7", None, 0)
    wb.close()

    pdf = to_pdf(src, tmp_path / "out")
    assert pdf.suffix == ".pdf"
    data = pdf.read_bytes()
    assert data.startswith(b"%PDF-")
    assert len(data) > 1000


def test_failure_is_reported_clearly(tmp_path: Path):
    with pytest.raises(LibreOfficeError, match="does not exist"):
        recalculate(tmp_path / "missing.xlsx", tmp_path / "out")

    # A file soffice cannot load as a spreadsheet: no output -> clear error.
    junk = tmp_path / "in" / "junk.xlsx"
    junk.parent.mkdir()
    junk.write_bytes(b"PK\x03\x04 this is not a real zip archive")
    with pytest.raises(LibreOfficeError) as excinfo:
        recalculate(junk, tmp_path / "out")
    msg = str(excinfo.value)
    assert "soffice failed" in msg and "stderr:" in msg
