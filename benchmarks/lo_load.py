"""What LibreOffice's load of a large workbook pays for, by kind of Scenarios cell (not a test).

    python3 benchmarks/lo_load.py                  # a 10,000-scenario sweep
    python3 benchmarks/lo_load.py --size 2000      # a smaller one (quicker, noisier)

Writes the sweep's workbook, then times LibreOffice's load (open, keep the cached values, save the first sheet as
CSV: lo_recalc.py's `load`) of the book as written and of variants whose Scenarios sheet has the formulas of one
kind of column taken out (their cached values kept as plain values): the drop from the book as written is what
those formulas cost the load. The kinds: every term (the estimate's columns), each section of the terms (terms.py's
groups), the checks' lists, the catalogue key rows; and every formula on Scenarios. Then what a term formula pays
for: the term formulas each replaced by the constant 1 (the cells stay formulas: their number's own cost), by the row
gate alone (`IF(row_ok=1,1,"")`), with their cell references replaced by the constant 1 (the same tokens, none a
reference: what references cost), and with their catalogue lookups (`INDEX(Models_…,row)`) so replaced; and the book
without the Charts sheet's charts (LibreOffice converts them at load, reading their cells). The book as written is
loaded first and last, so each line has a baseline of the same run (the machine's load drifts). Each load is one
soffice process in a fresh profile; runs of one book here differ by a few seconds (compare drops larger than that).
"""
from __future__ import annotations

import argparse
import collections
import re
import sys
import tempfile
import time
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO), str(REPO / "tests"), str(REPO / "benchmarks")]

from bench import sweep_preset  # noqa: E402
from lo import convert  # noqa: E402
from lo_recalc import CSV, STAMP  # noqa: E402
from reportgen.model.terms import ROLE_TERMS  # noqa: E402
from reportgen.pipeline import load, make_report, write_outputs  # noqa: E402

_FORMULA_CELL = re.compile(r'<c r="([A-Z]+)(\d+)"([^>]*)>(<f[^>]*/>|<f[^>]*>.*?</f>)')
# a shared formula's text, on its first row (the later rows name it by its si alone)
_SHARED_TEXT = re.compile(r'(<c r="([A-Z]+)\d+"[^>]*><f t="shared" ref="[^"]+" si="\d+">)(.*?)(</f>)')
_CELL_REF = re.compile(r'(?<![A-Za-z_$])[A-Z]{1,3}\d+(?![\d(A-Za-z_])')  # a relative one: A1, not $A$1 or LOG10(
_LOOKUP = re.compile(r'INDEX\([A-Za-z_0-9]+,[A-Z]+\d+\)')
_GATE = re.compile(r'^IF\(([A-Z]+\d+)=1,')


def column_kinds(names: list[str]) -> dict[str, set[int]]:
    """Scenarios' formula columns (0-based) by kind, from the names of row 1."""
    section = {t.name: t.group for t in ROLE_TERMS}
    kinds: dict[str, set[int]] = collections.defaultdict(set)
    for c, name in enumerate(names):
        if name in section:
            kinds["terms"].add(c)
            kinds[f"terms: {section[name]}"].add(c)
        elif name.startswith(("input_problems", "rule_problems")) or name in ("row_check", "row_ok", "check"):
            kinds["checks"].add(c)
        elif name.endswith("_row"):
            kinds["catalogue key rows"].add(c)
    return kinds


def letters(columns: set[int]) -> set[str]:
    def letter(c: int) -> str:
        out = ""
        c += 1
        while c:
            c, r = divmod(c - 1, 26)
            out = chr(65 + r) + out
        return out
    return {letter(c) for c in columns}


def without_formulas(xml: str, columns: set[str] | None) -> str:
    """The sheet's XML with the formulas of these columns (None: all) removed, their cached values kept."""
    return _FORMULA_CELL.sub(lambda m: m.group(0) if columns is not None and m.group(1) not in columns
                             else f'<c r="{m.group(1)}{m.group(2)}"{m.group(3)}>', xml)


def with_templates(xml: str, columns: set[str], edit) -> str:
    """The sheet's XML with the shared formulas of these columns rewritten by edit (text -> text)."""
    return _SHARED_TEXT.sub(lambda m: m.group(1) + (edit(m.group(3)) if m.group(2) in columns else m.group(3))
                            + m.group(4), xml)


def gate_only(text: str) -> str:
    gate = _GATE.match(text)
    return f'IF({gate.group(1)}=1,1,"")' if gate else "1"


TERM_EDITS = {  # what a term formula is made of: each variant keeps its cells formulas and their cached values
    "term formulas as the constant 1": lambda text: "1",
    "term formulas as the row gate alone": gate_only,
    "term formulas' cell references as 1": lambda text: _CELL_REF.sub("1", text),
    "term formulas' catalogue lookups as 1": lambda text: _LOOKUP.sub("1", text),
}


def variant(book: Path, member: str, xml: str, out: Path, drop_drawings: str = "") -> Path:
    """The book with member's XML replaced (and the drawings of the sheet drop_drawings, when named, left out)."""
    with zipfile.ZipFile(book) as src, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as dst:
        for item in src.infolist():
            data = xml if item.filename == member else src.read(item.filename)
            if item.filename == drop_drawings:
                data = re.sub(r"<drawing [^>]*/>", "", data.decode())
            dst.writestr(item, data)
    return out


def load_seconds(book: Path, root: Path) -> float:
    start = time.perf_counter()
    convert(book, root / f"csv-{book.stem}", CSV, out_suffix=".csv", timeout=3600, recalc=False)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=10_000, help="scenarios in the sweep")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        report = make_report(load(str(sweep_preset(root / "sweep.yaml", args.size))), STAMP)
        (book,) = write_outputs(report, root / "book", ["xlsx"], "en")
        import openpyxl
        sheets = openpyxl.load_workbook(book, read_only=True)
        names = [c.value or "" for c in next(sheets["Scenarios"].iter_rows(max_row=1))]
        member = f"xl/worksheets/sheet{sheets.sheetnames.index('Scenarios') + 1}.xml"
        charts = f"xl/worksheets/sheet{sheets.sheetnames.index('Charts') + 1}.xml"
        sheets.close()
        with zipfile.ZipFile(book) as z:
            xml = z.read(member).decode()
        formulas = xml.count("<f")
        print(f"{args.size:,} scenarios: {formulas:,} formula cells on Scenarios", flush=True)
        baseline = [load_seconds(book, root)]
        print(f"{'as written':34s} load {baseline[0]:6.1f} s", flush=True)
        kinds = {**column_kinds(names), "every formula": None}
        for kind, columns in kinds.items():
            cols = None if columns is None else letters(columns)
            text = without_formulas(xml, cols)
            path = variant(book, member, text, root / f"{re.sub(r'[^a-z]+', '-', kind)}.xlsx")
            seconds = load_seconds(path, root)
            path.unlink()
            print(f"{'without ' + kind:34s} load {seconds:6.1f} s  ({formulas - text.count('<f'):,} formula cells "
                  f"fewer)", flush=True)
        terms = letters(column_kinds(names)["terms"])
        for name, edit in TERM_EDITS.items():
            path = variant(book, member, with_templates(xml, terms, edit), root / "edited.xlsx")
            seconds = load_seconds(path, root)
            path.unlink()
            print(f"{name:34s} load {seconds:6.1f} s", flush=True)
        path = variant(book, member, xml, root / "no-charts.xlsx", drop_drawings=charts)
        print(f"{'without the charts':34s} load {load_seconds(path, root):6.1f} s", flush=True)
        path.unlink()
        baseline.append(load_seconds(book, root))
        print(f"{'as written, again':34s} load {baseline[1]:6.1f} s", flush=True)


if __name__ == "__main__":
    main()
