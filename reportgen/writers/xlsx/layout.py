"""Cells, tables, styles and sheets: what every sheet of the workbook shares."""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, Sequence

import xlsxwriter
from xlsxwriter.utility import xl_col_to_name
from xlsxwriter.worksheet import Worksheet

from ...model.formulas import Const, Expr, ExcelContext, Var
from ...report.i18n import Catalogue
from ...model.terms import ASSUMPTION_DEFAULTS
from ...model.units import GiB
from .stream import ROW, SheetRows, StreamColumn, StreamingWorkbook

# Cost (and every other plan key) of a row that cannot be picked: above any real value, and no
# Excel error to propagate. An integer, so formulas show 1000000000000000, not 1E+15.
NO_FIT = 10**15
# Bytes per GiB, named: formulas read "device_total/bytes_per_GiB" (the workbook defines the names
# of every named constant its formulas use: the term table's MiB, and this).
GIB = Const(GiB, "GiB")
CONSTANT_NAMES = {"GiB": "bytes_per_GiB", "MiB": "bytes_per_MiB"}
# A valid row's check, the same word in every language: the formulas do not depend on the language.
OK = "ok"
# The defined name of the assumptions' check: ok, or the first invalid assumption's reason.
ASSUMPTIONS_CHECK = "assumptions_check"
MAX_ROW = 1_048_575  # a sheet's last row, 0-based: formats and validations reach rows a planner adds
DASH = "—"  # plan cells of a GPU type where nothing fits

INPUT_COLOURS = {"font_color": "#0000FF", "bg_color": "#FFF2CC"}  # blue on light yellow
NUMBER_FORMATS = {
    "bytes": "#,##0", "count": "#,##0", "gpus": "#,##0", "flag": "0", "usd": "#,##0.00", "gib": "#,##0.00",
    "fraction": "0.00", "ratio": "0.000", "percent": "0.00%", "decimal": "#,##0.000", "general": "General", "text": "@",
    "seconds": "#,##0.000", "tokens_per_s": "#,##0.0", "flops": "0.000E+00", "flop_per_s": "0.000E+00",
    "bytes_per_s": "0.000E+00", "gpu_hours": "#,##0.0",
    "hours": "#,##0.0",
}
UNIT_SUFFIX = ("bytes", "gib", "usd")  # units shown in headers as "Label [unit]" (the catalogue's unit.<name>)
HEADER_COLOURS = {"id": "#D9D9D9", "summary": "#E2EFDA", "input": "#FFF2CC", "formula": "#DDEBF7",
                  "helper": "#EDEDED"}


# ---------------------------------------------------------------------------------------------
# Columns and tables: the cell mapping, computed once

@dataclass(frozen=True)
class Column:
    name: str  # the name formulas use (a term, an input, or a helper)
    label: str
    unit: str  # a NUMBER_FORMATS key
    kind: str  # "id" (text/number written as is), "input" (editable), "summary", "formula", "helper"
    width: float = 12
    expr: Expr | None = None  # DSL formula over names of the same row
    # Formulas not from an expression: "position" (the row's place in its table), and per-row ones
    # ("link", "group": an RLHF row's reads of its role rows).
    special: str = ""
    help: str = ""  # Terms sheet and input messages
    gate: str = ""  # blank unless this check column of the row is ok (the expression stays the definition)

    @property
    def is_formula(self) -> bool:
        """A formula cell; an input "link" is one too: a reference the planner points at a row."""
        return self.kind in ("summary", "formula", "helper") or self.special in ("link", "report_number")


@dataclass
class Table:
    """A table on a sheet: columns by name, data rows from first_row (1-based, as in A1). A planner
    may add rows below the `num_rows` written: formulas name its columns open-ended (Names)."""
    sheet: str
    columns: tuple[Column, ...]
    first_row: int
    num_rows: int
    key: str = ""  # lookup tables: the column that MATCH searches
    # Tables searched with SUMPRODUCT: a column that every row fills, so COUNTA finds the last row.
    count_column: str = ""
    index: dict[str, int] = field(init=False)

    def __post_init__(self):
        self.index = {c.name: i for i, c in enumerate(self.columns)}
        assert len(self.index) == len(self.columns), f"duplicate column on {self.sheet}"

    def __contains__(self, name: str) -> bool:
        return name in self.index

    @property
    def last_row(self) -> int:
        """The last row written."""
        return self.first_row + self.num_rows - 1

    def letter(self, name: str) -> str:
        return xl_col_to_name(self.index[name])

    def ref(self, name: str, row: int | str = ROW) -> str:
        """Same-sheet, relative: copying a row moves the reference with it."""
        return f"{self.letter(name)}{row}"

    def cell(self, name: str, row: int) -> str:
        return f"{self.sheet}!{self.letter(name)}{row}"

    @property
    def last_row_cell(self) -> str:
        """Row 1, right of the table: the COUNTA of count_column (write_header), which every formula
        that reads the filled rows shares. A defined name holding the COUNTA itself would be counted
        again at each use: 32 s of LibreOffice's recalculation of a 10,000-scenario sweep's Plan."""
        return f"{self.sheet}!${xl_col_to_name(len(self.columns))}$1"

    def whole_column(self, name: str) -> str:
        col = self.letter(name)
        return f"{self.sheet}!${col}:${col}"


class Names:
    """The workbook's defined names, registered as formulas ask for them: `Sheet_column` for a
    column of a table, so formulas read as words and reach rows a planner adds.

    Lookup tables (with a key) name whole columns: INDEX/MATCH by key costs the same whatever the
    range. Other tables name their data rows down to the last filled one (Table.last_row_cell):
    SUMPRODUCT over whole columns would cost LibreOffice a million cells per formula (30 s for
    120 formulas, measured), over the filled rows it costs their number."""

    def __init__(self) -> None:
        self.formulas: dict[str, str] = {}

    def add(self, name: str, formula: str) -> str:
        assert self.formulas.setdefault(name, formula) == formula, name
        return name

    def of(self, table: Table, column: str) -> str:
        if table.key:
            return self.add(f"{table.sheet}_{column}", "=" + table.whole_column(column))
        return self.add(f"{table.sheet}_{column}", f"={table.sheet}!${table.letter(column)}${table.first_row}:"
                                                   f"INDEX({table.whole_column(column)},{self.last_row(table)})")

    def keys(self, table: Table) -> str:
        """A lookup table's filled key cells (drop-down lists: a whole column would list a million blanks)."""
        col = table.whole_column(table.key)
        return self.add(f"{table.sheet}_keys", f"={table.sheet}!${table.letter(table.key)}${table.first_row}:"
                                               f"INDEX({col},COUNTA({col}))")

    def last_row(self, table: Table) -> str:
        return self.add(f"{table.sheet}_last_row", "=" + table.last_row_cell)

    def constant(self, const: Const) -> str | None:
        """A byte unit's name (bytes_per_GiB); other constants stay numbers in formulas."""
        name = CONSTANT_NAMES.get(const.name)
        return name and self.add(name, f"={const.value:.0f}")

    def define(self, wb) -> None:
        for name, formula in self.formulas.items():
            wb.define_name(name, formula)


def key_row_column(key: str) -> str:
    """The helper column holding the row of a lookup table whose key is this row's input `key`."""
    return f"{key}_row"


def row_context(table: Table, lookups: Mapping[str, Table], names: Names,
                extra: Callable[[str], str | None] = lambda n: None,
                key_tables: Mapping[str, str] = {}) -> ExcelContext:
    """Var(name) -> this row's cell of that column, an assumption's defined name, or `extra`;
    Lookup(table, column, key) -> INDEX over the lookup table's named column, at the row this row's
    helper column finds for the key (key_tables: key input -> lookup table; key_row_column) or, for
    a key without one, at its MATCH."""
    def cell(name: str) -> str:
        hit = extra(name)
        if hit is not None:
            return hit
        if name in table:
            return table.ref(name)
        if name in ASSUMPTION_DEFAULTS or name == ASSUMPTIONS_CHECK:
            return name  # a workbook defined name on the Assumptions sheet
        raise KeyError(f"{table.sheet}: no column or assumption named {name!r}")
    def key_row(lookup: str, key: Expr) -> str | None:
        if isinstance(key, Var) and key_tables.get(key.name) == lookup and key_row_column(key.name) in table:
            return table.ref(key_row_column(key.name))
        return None

    return ExcelContext(cell, lambda t, column: names.of(lookups[t], column),
                        lambda t: names.of(lookups[t], lookups[t].key), names.constant, key_row)


# ---------------------------------------------------------------------------------------------
# Sheets and styles: every format is created once per workbook

class DslWorksheet(Worksheet):
    """A worksheet that stores formulas as given.

    XlsxWriter runs ~30 regular expressions over every formula to add `_xlfn.` prefixes to
    functions newer than Excel 2007 (most of its time per formula). Our formulas only use
    formulas.EXCEL_FUNCTIONS (the expression language's) and INDEX, MATCH, SUMPRODUCT, ROW, COUNTIF,
    LEN, SUBSTITUTE (the plan), none of which takes a prefix; a test checks both facts on the written file. If a
    later XlsxWriter renames this hook, the override is simply unused (slower, same output)."""

    def _prepare_formula(self, formula, expand_future_functions=False):
        return formula[1:] if formula.startswith("=") else formula


def add_sheet(wb: xlsxwriter.Workbook, name: str):
    return wb.add_worksheet(name, worksheet_class=DslWorksheet)


class Styles:
    def __init__(self, wb: xlsxwriter.Workbook):
        base = {"font_size": 10, "valign": "top"}
        self.text = wb.add_format(base)
        self.wrap = wb.add_format({**base, "text_wrap": True})
        self.bold = wb.add_format({**base, "bold": True})
        self.title = wb.add_format({"bold": True, "font_size": 14})
        self.subtitle = wb.add_format({"bold": True, "font_size": 11, "valign": "top"})
        self.name_row = wb.add_format({**base, "italic": True, "font_color": "#7F7F7F", "font_size": 8})
        self.header = {kind: wb.add_format({**base, "bold": True, "text_wrap": True, "bg_color": colour,
                                            "bottom": 1, "border_color": "#A6A6A6"})
                       for kind, colour in HEADER_COLOURS.items()}
        self.value = {u: wb.add_format({**base, "num_format": f}) for u, f in NUMBER_FORMATS.items()}
        self.input = {u: wb.add_format({**base, **INPUT_COLOURS, "num_format": f}) for u, f in NUMBER_FORMATS.items()}
        self.input_wrap = wb.add_format({**base, **INPUT_COLOURS, "text_wrap": True})
        self.highlight = wb.add_format({**base, "bold": True, "num_format": "0", "bg_color": "#C6EFCE"})
        self.invalid = wb.add_format({"bg_color": "#F8CBAD", "font_color": "#9C0006"})  # a row whose check fails
        # a row written as values (SheetRows.frozen): grey italics, no input colours (not editable)
        frozen = {**base, "italic": True, "font_color": "#7F7F7F"}
        self.frozen = {u: wb.add_format({**frozen, "num_format": f}) for u, f in NUMBER_FORMATS.items()}
        self.frozen_wrap = wb.add_format({**frozen, "text_wrap": True})

    def cell(self, col: Column, editable: bool = True):
        """A column's cell style; editable=False: an input column's cell that holds a formula (a value it follows)."""
        editable = editable and col.kind == "input"
        if col.unit == "note":  # wrapped text: notes and sources
            return self.input_wrap if editable else self.wrap
        return self.input[col.unit] if editable else self.value[col.unit]

    def frozen_cell(self, col: Column):
        """A column's cell style in a row written as values."""
        return self.frozen_wrap if col.unit == "note" else self.frozen[col.unit]


def plain(value: Any) -> Any:
    """Cell-ready value: bools as 1/0 (the formulas' flags are numbers)."""
    return int(value) if isinstance(value, bool) else value


def write_value(ws, row: int, col: int, value: Any, fmt=None) -> None:
    """Text always as a string cell (never parsed as a formula, whatever it starts with)."""
    if value is None or value == "":
        return  # a blank cell (what formulas compare with "")
    if isinstance(value, str):
        ws.write_string(row, col, value, fmt)
    else:
        ws.write_number(row, col, plain(value), fmt)


LINE_HEIGHT = 13  # points per line of 10-point text
CHARS_PER_WIDTH = 1.15  # 10-point characters per unit of column width (a unit is one 11-point "0")


def text_lines(text: str, width: float) -> int:
    """Lines a wrapped text takes in a column `width` characters wide (CJK counts double).
    XlsxWriter cannot measure text and LibreOffice does not grow rows on load, so we size them."""
    lines = 0
    for paragraph in str(text).split("\n"):
        units = sum(2.3 if ord(ch) >= 0x2E80 else 1 for ch in paragraph)  # CJK glyphs: a little over two
        lines += max(1, math.ceil(units / (width * CHARS_PER_WIDTH)))
    return lines


def fit_row(ws, row: int, cells: Iterable[tuple[str, float]]) -> None:
    """Height for the tallest wrapped text of a row; call before writing the row."""
    lines = max((text_lines(text, width) for text, width in cells if text), default=1)
    if lines > 1:
        ws.set_row(row, LINE_HEIGHT * lines + 3)


def mark_invalid_rows(ws, table: Table, styles: Styles) -> None:
    """Rows whose check is neither ok nor blank (a row not filled) in light red, to the last row."""
    check = f"${table.letter('check')}{table.first_row}"
    ws.conditional_format(table.first_row - 1, 0, MAX_ROW, len(table.columns) - 1, {
        "type": "formula", "criteria": f'=AND({check}<>"",{check}<>"{OK}")',
        "format": styles.invalid})


def column_label(t: Catalogue, sheet: str, col: Column) -> str:
    """A column's label in the workbook's language: the catalogue's translation (this sheet's, an
    RLHF group term's, the column's, an input's name as the report's method table gives it, or its
    term's for a "…_gib" column), else the definition's."""
    keys = [f"{sheet}.{col.name}"] + ([f"group.{col.name}"] if sheet == "RLHF" else []) + [col.name, f"input.{col.name}"]
    keys += [col.name[:-4]] if col.name.endswith("_gib") else []
    return next((t.terms[k] for k in keys if k in t.terms), col.label)


def column_text(t: Catalogue, col: Column) -> str:
    """A column's explanation in the workbook's language: the catalogue's "<name>.help", a term's translated
    source, the translation of its very text, else the definition's."""
    return t.terms.get(f"{col.name}.help") or ((t.sources.get(col.name) or t.text(col.help)) if col.help else "")


def column_header(t: Catalogue, sheet: str, col: Column) -> str:
    """The label with its unit: "Label [unit]"."""
    label = column_label(t, sheet, col)
    unit = t.unit(col.unit) if col.unit in UNIT_SUFFIX else None
    return f"{label} [{unit}]" if unit and unit not in label else label


def write_header(ws, table: Table, styles: Styles, t: Catalogue) -> None:
    """Row 1: formula names; row 2: labels with units. One row at a time: constant_memory flushes
    a row as soon as a later one is written."""
    ws.set_row(0, 11)
    for c, col in enumerate(table.columns):
        ws.set_column(c, c, col.width)
        ws.write_string(0, c, col.name, styles.name_row)
    if table.count_column:
        ws.write_formula(0, len(table.columns), f"=COUNTA({table.whole_column(table.count_column)})",
                         styles.name_row, table.last_row)
    ws.set_row(1, 54)
    for c, col in enumerate(table.columns):
        ws.write_string(1, c, column_header(t, table.sheet, col), styles.header[col.kind])
    if table.count_column:
        ws.write_string(1, len(table.columns), t("table.last_row", name=f"{table.sheet}_last_row"), styles.name_row)


def write_rows(wb: StreamingWorkbook, ws, table: Table, rows: Sequence[Mapping[str, Any]], templates: Mapping[str, str],
               styles: Styles, per_row: Mapping[int, Mapping[str, str]] | None = None,
               shared_formulas: bool = True, frozen=None) -> None:
    """Data rows (streamed in when the workbook closes, below the header XlsxWriter writes): inputs
    and ids as values, every formula column as its template (or a row's own formula) with the
    Python value cached. Blank values leave blank cells, as write_value does. shared_formulas, frozen: see
    SheetRows."""
    columns = [StreamColumn(col.name, styles.cell(col), col.is_formula, templates.get(col.name),
                            styles.cell(col, editable=False) if col.kind == "input" else None,
                            styles.frozen_cell(col) if frozen is not None else None)
               for col in table.columns]
    wb.stream_rows(ws, SheetRows(columns, table.first_row, rows, per_row, shared_formulas, frozen))


A4, A3 = 9, 8  # Excel paper codes


def page_setup(ws, *, header_rows: int, print_columns: int | None = None, print_rows: int | None = None,
               paper: int = A4) -> None:
    ws.set_landscape()
    ws.set_paper(paper)
    ws.fit_to_pages(1, 0)  # one page wide, as many tall as needed
    ws.set_margins(left=0.4, right=0.4, top=0.5, bottom=0.5)
    if header_rows:
        ws.repeat_rows(0, header_rows - 1)
    if print_columns:
        ws.print_area(0, 0, (print_rows or 1) - 1, print_columns - 1)



# ---------------------------------------------------------------------------------------------
# The workbook model: every table laid out before anything is written

SCENARIO_FIRST_ROW = 3  # row 1: formula names, row 2: labels with units
def value_row_count(rows: int, live_rows: int | None) -> int:
    """How many of a table's `rows` rows hold values with at most `live_rows` live ones (None: all live)."""
    return 0 if live_rows is None else max(0, rows - live_rows)


EXCEL_MAX_ROWS = 1_048_576  # rows a sheet may have (Excel 2007 and later; XlsxWriter drops rows past it)
LOOKUP_FIRST_ROW = 2

