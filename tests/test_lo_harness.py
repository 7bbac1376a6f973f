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
    from lo import LibreOfficeError, recalculate, soffice_available, to_pdf
except ImportError:  # tests/ imported as a package
    from tests.lo import LibreOfficeError, recalculate, soffice_available, to_pdf


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
