"""The Excel workbook: every memory term as a live formula over editable inputs.

Sheets: Guide, Plan, Charts, Scenarios, RLHF, Notes, NoteScenarios, Terms, Assumptions, Models,
GPUs, Precisions, Dtypes, Optimizers, Choices (the Guide describes each).

Every term column is `formulas.to_excel(term.expr)` of the one term table (terms.py); RLHF group
cells and note figures are rendered the same way. The writer never types a term formula. Only the
procurement plan (SUMPRODUCT/INDEX over helper columns) and unit conversions are small formula
strings built here, because the expression language has no ranges.

Why XlsxWriter: openpyxl cannot store a formula's cached value (it writes `<v/>`), so viewers that
do not recalculate (previewers, mail clients, pandas) would show empty cells. XlsxWriter stores the
Python value next to each formula (`write_formula(..., value)`) and fills the chart caches
(`values_data`). openpyxl is used only to read workbooks back, in tests.

Why the data rows bypass XlsxWriter: a 100,000-scenario sweep has 12 million cells, and XlsxWriter
costs ~30 µs a cell. XlsxWriter writes everything else (headers, widths, validations, filters, panes,
print setup, charts, styles, the small sheets); the tables' data rows are registered with
`StreamingWorkbook.stream_rows` and written as SpreadsheetML when the workbook closes, each formula
column that only differs by row number as one shared formula (xlsx_stream.py). Every workbook, small
or large, takes this path, so the LibreOffice tests check the one the big sweeps use.

Why constant_memory: what XlsxWriter writes streams to disk in order. Everything is therefore
written row by row, top to bottom, and the chart caches are passed in explicitly (XlsxWriter cannot
read them back from a streamed sheet).
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Callable, Iterable, Mapping, Sequence

import xlsxwriter
from xlsxwriter.utility import xl_col_to_name
from xlsxwriter.worksheet import Worksheet

from ..catalog import GPU_COLUMNS
from ..estimate import GroupEstimate, Scenario, group_terms
from ..inputs import INPUT_BY_NAME, INPUTS
from ..shape import MODEL_FIELDS, MODEL_TERM_NAMES, TEXT_FIELDS
from ..formulas import AND, IF, Expr, ExcelContext, Lookup, Num, Var, compile_terms, to_excel, to_text
from ..report import PlanEntry, Recommendation, Report, Result
from ..tables import LOOKUP_TABLES
from ..terms import ASSUMPTION_DEFAULTS, ASSUMPTIONS, PEAK_PARTS, ROLE_TERMS, TERM_BY_NAME, Term
from ..units import GiB
# ROW: a formula template's row number. Templates are rendered once per column; the placeholder
# becomes each row's number, or the column becomes one shared formula.
from .xlsx_stream import ROW, SheetRows, StreamColumn, StreamingWorkbook

# Cost of a row that cannot be picked: above any real cost, and no Excel error to propagate. An
# integer, so the formula shows 1000000000000000 (to_excel writes an integral 1e99 as 100 digits).
NO_FIT_USD = 10**15
# Lookup, validation and plan ranges reach well below the data so a planner can add rows.
MIN_LAST_ROW = 1000
SPARE_ROWS = 500
DASH = "—"  # plan cells of a GPU type where nothing fits

INPUT_COLOURS = {"font_color": "#0000FF", "bg_color": "#FFF2CC"}  # blue on light yellow
NUMBER_FORMATS = {
    "bytes": "#,##0", "count": "#,##0", "gpus": "#,##0", "flag": "0", "usd": "#,##0.00", "gib": "#,##0.00",
    "fraction": "0.00", "ratio": "0.000", "percent": "0.00%", "decimal": "#,##0.000", "general": "General", "text": "@",
    "seconds": "#,##0.000", "tokens_per_s": "#,##0.0", "flops": "0.000E+00", "flop_per_s": "0.000E+00",
    "bytes_per_s": "0.000E+00", "gpu_hours": "#,##0.0",
}
UNIT_SUFFIX = {"bytes": "bytes", "gib": "GiB", "usd": "USD"}  # shown in headers as "Label [unit]"
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
    # Formulas not from an expression: "row" (ROW()), "plan_rank" (SUMPRODUCT), and per-row ones
    # ("link", "group": an RLHF row's reads of its role rows).
    special: str = ""
    help: str = ""  # Terms sheet and input messages

    @property
    def is_formula(self) -> bool:
        return self.kind in ("summary", "formula", "helper")

    @property
    def header(self) -> str:
        unit = UNIT_SUFFIX.get(self.unit)
        return f"{self.label} [{unit}]" if unit and unit not in self.label else self.label


@dataclass
class Table:
    """A table on a sheet: columns by name, data rows first_row..last_row (1-based, as in A1)."""
    sheet: str
    columns: tuple[Column, ...]
    first_row: int
    last_row: int
    key: str = ""  # lookup tables: the column that MATCH searches
    index: dict[str, int] = field(init=False)

    def __post_init__(self):
        self.index = {c.name: i for i, c in enumerate(self.columns)}
        assert len(self.index) == len(self.columns), f"duplicate column on {self.sheet}"

    def __contains__(self, name: str) -> bool:
        return name in self.index

    def letter(self, name: str) -> str:
        return xl_col_to_name(self.index[name])

    def ref(self, name: str, row: int | str = ROW) -> str:
        """Same-sheet, relative: copying a row moves the reference with it."""
        return f"{self.letter(name)}{row}"

    def cell(self, name: str, row: int) -> str:
        return f"{self.sheet}!{self.letter(name)}{row}"

    def range(self, name: str) -> str:
        col = self.letter(name)
        return f"{self.sheet}!${col}${self.first_row}:${col}${self.last_row}"

    def full_range(self, name: str) -> str:
        """From row 1, so INDEX(full_range, sheet_row) reads the cell on that sheet row."""
        col = self.letter(name)
        return f"{self.sheet}!${col}$1:${col}${self.last_row}"


def last_row(first_row: int, num_rows: int) -> int:
    return max(MIN_LAST_ROW, first_row + num_rows - 1 + SPARE_ROWS)


def _lookup_key_inputs() -> dict[str, str]:
    """Input name -> lookup table it keys (model -> Models, …), read from the term table itself."""
    found: dict[str, str] = {}

    def visit(e: Expr) -> None:
        if isinstance(e, Lookup) and isinstance(e.key, Var):
            found[e.key.name] = e.table
        for child in e.children():
            visit(child)

    for term in ROLE_TERMS:
        visit(term.expr)
    return found


LOOKUP_KEY_INPUTS = _lookup_key_inputs()


def _gib(name: str) -> Expr:
    return Var(name) / GiB


# Shown right after the identifying columns (and printed): what tells rows of the same name apart
# (batch, tokens per sequence; model instances only), the answer in GiB, then fit and cost.
SUMMARY_SHAPE = (
    Column("summary_batch", "Batch", "count", "summary", 6, Var("batch_size")),
    Column("summary_tokens", "Tokens per sequence", "count", "summary", 9,
           IF(Var("workload").eq("inference"), Var("context_tokens"), Var("seq_len")),
           help="inference: prompt + generated tokens; training and scoring: the sequence length"),
)
SUMMARY = (
    Column("allocated_peak_gib", "Allocated peak", "gib", "summary", 10, _gib("allocated_peak")),
    Column("device_total_gib", "Device total (nvidia-smi)", "gib", "summary", 11, _gib("device_total")),
    Column("recommended_gib", "Recommended (k × device total)", "gib", "summary", 12, _gib("recommended")),
    Column("gpu_memory_gib", "GPU memory", "gib", "summary", 10, _gib("gpu_memory_bytes")),
    Column("headroom_gib", "Headroom (GPU − device total)", "gib", "summary", 11, _gib("headroom_bytes")),
    Column("fits_with_k", "Fits with k (1/0)", "flag", "summary", 7, Var("fits_recommended")),
    Column("summary_purchase_usd", "Purchase cost", "usd", "summary", 11, Var("purchase_usd")),
)


def _input_column(i) -> Column:
    width = {"model": 16, "gpu": 16, "lora_targets": 24, "precision": 11}.get(i.name, 10)
    return Column(i.name, i.label, "count" if i.is_int else "text", "input", width, help=i.help)


def _term_column(t: Term, label: str | None = None, special: str = "") -> Column:
    """A term's column; with `special`, each row brings its own formula instead of the expression."""
    width = {"bytes": 17, "usd": 12}.get(t.unit, 12)
    return Column(t.name, label or t.label, t.unit, "formula", width, None if special else t.expr, special, t.source)


def plan_helpers(candidate: Expr) -> tuple[Column, ...]:
    """Per-row columns the Plan reads: a row's cost if it is a fitting candidate, its rank among
    the rows of the same model × workload × GPU type, and whether it is the cheapest."""
    help_rank = ("rows of the same model, workload and GPU type that come first in the plan's order: "
                 "lower cost-if-fits, then fewer GPUs, then higher up")
    return (
        Column("plan_candidate", "Plan candidate (1/0)", "flag", "helper", 9, candidate,
               help="1 for a row the Plan may pick (RLHF role rows are covered by their group on RLHF)"),
        Column("plan_cost_usd", "Cost if it fits with k (else 10^15)", "usd", "helper", 12,
               IF(AND(Var("plan_candidate").eq(1), Var("fits_recommended").eq(1)), Var("purchase_usd"), NO_FIT_USD)),
        Column("sheet_row", "Sheet row", "count", "helper", 7, special="row"),
        Column("plan_rank", "Candidates ranked before this row", "count", "helper", 10, special="plan_rank",
               help=help_rank),
        Column("plan_best", "Cheapest fitting for its model × workload × GPU (1/0)", "flag", "helper", 11,
               IF(AND(Var("plan_cost_usd").lt(NO_FIT_USD), Var("plan_rank").eq(0)), 1, 0)),
    )


SCENARIO_IDS = (
    Column("index", "#", "count", "id", 5),
    Column("name", "Scenario", "text", "id", 46),
    Column("matrix", "Matrix", "text", "id", 18),
    Column("group", "RLHF group", "text", "id", 8, help="the RLHF sheet row this role belongs to"),
    Column("role", "Role", "text", "id", 9),
)
NOTE_SCENARIO_IDS = (
    Column("note", "Note", "text", "id", 6),
    Column("key", "Scenario key", "text", "id", 9, help="figures read this scenario as <key>.<term>"),
    Column("name", "Scenario", "text", "id", 46),
)
RLHF_IDS = (
    Column("group", "Group", "text", "id", 7),
    Column("index", "#", "count", "id", 5),
    Column("name", "RLHF group", "text", "id", 34),
    Column("matrix", "Matrix", "text", "id", 16),
    Column("workload", "Algorithm", "text", "id", 9),
    Column("placement", "Placement", "text", "id", 10),
    Column("roles", "Role rows (Scenarios)", "text", "id", 22),
)
# An RLHF group reads its model, GPU type and count from its first role's row (as the estimator does).
RLHF_LINKS = tuple(
    Column(n, INPUT_BY_NAME[n].label, "count" if INPUT_BY_NAME[n].is_int else "text", "formula",
           8 if INPUT_BY_NAME[n].is_int else 14, special="link", help="from the group's first role row")
    for n in ("model", "gpu", "num_gpus", "zero_stage", "tp_size"))


def scenario_columns(ids: Sequence[Column], helpers: Sequence[Column] = ()) -> tuple[Column, ...]:
    return (tuple(ids) + SUMMARY_SHAPE + SUMMARY + tuple(_input_column(i) for i in INPUTS)
            + tuple(_term_column(t) for t in ROLE_TERMS) + tuple(helpers))


def rlhf_columns(results: Sequence[Result]) -> tuple[Column, ...]:
    """Every group term that any group of this report has, in table order; a group leaves the
    columns of the other placement empty."""
    terms: dict[str, Term] = {}
    for r in results:
        if r.is_group:
            g = r.estimate.scenario
            for t in group_terms(tuple(n for n, _ in g.roles), g.placement):
                terms.setdefault(t.name, t)
    # Their formulas read the group's own role rows, so each row brings its own ("group"). Group
    # terms named after a role term (weights, …) carry only their name as label.
    cols = tuple(_term_column(t, t.label if t.label != t.name else TERM_BY_NAME[t.name].label + " (group)", "group")
                 for t in terms.values())
    return RLHF_IDS + RLHF_LINKS + SUMMARY + cols + plan_helpers(Num(1))


@dataclass(frozen=True)
class PlanFields:
    """Which columns of a candidate table the Plan matches and ranks by."""
    gpus: str  # GPU count used as the tie-break: num_gpus (Scenarios) or total_gpus (RLHF)


SCENARIO_PLAN = PlanFields(gpus="num_gpus")
RLHF_PLAN = PlanFields(gpus="total_gpus")


# ---------------------------------------------------------------------------------------------
# Formula rendering

class Lookups:
    """The lookup tables formulas INDEX/MATCH into, by table name (as in `Lookup(table, …)`)."""

    def __init__(self, tables: Mapping[str, Table]):
        self.tables = dict(tables)

    def column_range(self, table: str, column: str) -> str:
        return self.tables[table].range(column)

    def key_range(self, table: str) -> str:
        t = self.tables[table]
        return t.range(t.key)


def row_context(table: Table, lookups: Lookups, extra: Callable[[str], str | None] = lambda n: None) -> ExcelContext:
    """Var(name) -> this row's cell of that column, an assumption's defined name, or `extra`."""
    def cell(name: str) -> str:
        hit = extra(name)
        if hit is not None:
            return hit
        if name in table:
            return table.ref(name)
        if name in ASSUMPTION_DEFAULTS:
            return name  # a workbook defined name on the Assumptions sheet
        raise KeyError(f"{table.sheet}: no column or assumption named {name!r}")
    return ExcelContext(cell, lookups.column_range, lookups.key_range)


def plan_match(table: Table, model: str, workload: str, gpu: str) -> str:
    """SUMPRODUCT factors selecting the rows of one model × workload × GPU type (exact match:
    no wildcards, unlike COUNTIFS criteria)."""
    return (f"({table.range('model')}={model})*({table.range('workload')}={workload})"
            f"*({table.range('gpu')}={gpu})")


def _rank_formula(table: Table, fields: PlanFields) -> str:
    # Rows of the same cell that sort before this one by (cost if fits, GPU count, sheet row):
    # the order of report.recommend, whose last tie-break (scenario index) is the row order.
    cost, gpus, row = (table.range(n) for n in ("plan_cost_usd", fields.gpus, "sheet_row"))
    c, g, r = (table.ref(n) for n in ("plan_cost_usd", fields.gpus, "sheet_row"))
    match = plan_match(table, table.ref("model"), table.ref("workload"), table.ref("gpu"))
    return f"SUMPRODUCT({match}*(({cost}<{c})+({cost}={c})*(({gpus}<{g})+({gpus}={g})*({row}<{r}))))"


def row_templates(table: Table, ctx: ExcelContext, fields: PlanFields | None = None) -> dict[str, str]:
    """One formula template per formula column (row number = ROW placeholder)."""
    out = {}
    for col in table.columns:
        if col.expr is not None:
            out[col.name] = "=" + to_excel(col.expr, ctx)
        elif col.special == "row":
            out[col.name] = "=ROW()"
        elif col.special == "plan_rank":
            out[col.name] = "=" + _rank_formula(table, fields)
    return out


# ---------------------------------------------------------------------------------------------
# Python values of the non-term formula columns (the terms' values come from the estimator)

def _compiled(cols: Sequence[Column]) -> Callable[[Mapping[str, Any], Mapping[str, float]], tuple]:
    """One function for a run of expression columns (a later one reads an earlier one's local)."""
    def var(n: str) -> str:
        return f"A[{n!r}]" if n in ASSUMPTION_DEFAULTS else f"R[{n!r}]"
    fn = compile_terms(tuple(Term(c.name, c.label, c.unit, c.expr) for c in cols), var, "_columns")
    return lambda row, assumptions: fn(None, assumptions, None, row)


def fill_derived(table: Table, rows: Sequence[dict[str, Any]], assumptions: Mapping[str, float],
                 fields: PlanFields | None = None) -> None:
    """Add the value of every summary/helper column to each row dict, in column order (a column may
    read earlier ones). The same expressions are rendered as the columns' formulas."""
    run: list[Column] = []  # consecutive expression columns, computed in one call per row

    def flush() -> None:
        if run:
            fn, names = _compiled(run), [c.name for c in run]
            for row in rows:
                row.update(zip(names, fn(row, assumptions)))
            run.clear()

    for col in table.columns:
        if col.kind not in ("summary", "helper"):
            continue
        if col.expr is not None:
            run.append(col)
            continue
        flush()
        if col.special == "row":
            for i, row in enumerate(rows):
                row[col.name] = table.first_row + i
        elif col.special == "plan_rank":
            _fill_ranks(rows, fields)
    flush()


def _fill_ranks(rows: Sequence[dict[str, Any]], fields: PlanFields) -> None:
    cells: dict[tuple, list[dict]] = {}
    for row in rows:
        cells.setdefault((row["model"], row["workload"], row["gpu"]), []).append(row)
    for members in cells.values():
        ordered = sorted(members, key=lambda r: (r["plan_cost_usd"], r[fields.gpus], r["sheet_row"]))
        for rank, row in enumerate(ordered):
            row["plan_rank"] = rank


# ---------------------------------------------------------------------------------------------
# Sheets and styles: every format is created once per workbook

class DslWorksheet(Worksheet):
    """A worksheet that stores formulas as given.

    XlsxWriter runs ~30 regular expressions over every formula to add `_xlfn.` prefixes to
    functions newer than Excel 2007 (most of its time per formula). Our formulas only use
    IF, MAX, MIN, ROUNDUP, AND, OR (the expression language) and INDEX, MATCH, SUMPRODUCT, ROW
    (the plan), none of which takes a prefix; a test checks both facts on the written file. If a
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

    def cell(self, col: Column):
        return self.input[col.unit] if col.kind == "input" else self.value[col.unit]


def _plain(value: Any) -> Any:
    """Cell-ready value: bools as 1/0 (the formulas' flags are numbers)."""
    return int(value) if isinstance(value, bool) else value


def write_value(ws, row: int, col: int, value: Any, fmt=None) -> None:
    """Text always as a string cell (never parsed as a formula, whatever it starts with)."""
    if value is None or value == "":
        return  # a blank cell (what formulas compare with "")
    if isinstance(value, str):
        ws.write_string(row, col, value, fmt)
    else:
        ws.write_number(row, col, _plain(value), fmt)


LINE_HEIGHT = 13  # points per line of 10-point text
CHARS_PER_WIDTH = 1.15  # 10-point characters per unit of column width (a unit is one 11-point "0")


def text_lines(text: str, width: float) -> int:
    """Lines a wrapped text takes in a column `width` characters wide (CJK counts double).
    XlsxWriter cannot measure text and LibreOffice does not grow rows on load, so we size them."""
    lines = 0
    for paragraph in str(text).split("\n"):
        units = sum(2 if ord(ch) >= 0x2E80 else 1 for ch in paragraph)
        lines += max(1, math.ceil(units / (width * CHARS_PER_WIDTH)))
    return lines


def fit_row(ws, row: int, cells: Iterable[tuple[str, float]]) -> None:
    """Height for the tallest wrapped text of a row; call before writing the row."""
    lines = max((text_lines(text, width) for text, width in cells if text), default=1)
    if lines > 1:
        ws.set_row(row, LINE_HEIGHT * lines + 3)


def write_header(ws, table: Table, styles: Styles, header_row: int) -> None:
    """Row header_row-1 (0-based): formula names; row header_row: labels with units. One row at a
    time: constant_memory flushes a row as soon as a later one is written."""
    ws.set_row(header_row - 1, 11)
    for c, col in enumerate(table.columns):
        ws.set_column(c, c, col.width)
        ws.write_string(header_row - 1, c, col.name, styles.name_row)
    ws.set_row(header_row, 54)
    for c, col in enumerate(table.columns):
        ws.write_string(header_row, c, col.header, styles.header[col.kind])


def write_rows(wb: StreamingWorkbook, ws, table: Table, rows: Sequence[Mapping[str, Any]], templates: Mapping[str, str],
               styles: Styles, per_row: Sequence[Mapping[str, str]] | None = None) -> None:
    """Data rows (streamed in when the workbook closes, below the header XlsxWriter writes): inputs
    and ids as values, every formula column as its template (or a row's own formula) with the
    Python value cached. Blank values leave blank cells, as write_value does."""
    columns = [StreamColumn(col.name, styles.cell(col), col.is_formula, templates.get(col.name))
               for col in table.columns]
    wb.stream_rows(ws, SheetRows(columns, table.first_row, rows, per_row))


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
LOOKUP_FIRST_ROW = 2


@dataclass
class Book:
    report: Report
    lookups: Lookups
    scenarios: Table
    rlhf: Table
    note_scenarios: Table
    scenario_rows: list[dict[str, Any]]
    role_rows: dict[tuple[int, str], int]  # (result index, role) -> Scenarios row
    result_rows: dict[int, int]  # result index -> row on Scenarios (single) or RLHF (group)
    group_rows: list[dict[str, Any]]
    group_formulas: list[dict[str, str]]
    note_rows: list[dict[str, Any]]
    note_cells: dict[tuple[str, str], int]  # (note id, scenario key) -> NoteScenarios row

    def candidates(self, workload_is_group: bool) -> tuple[Table, PlanFields]:
        return (self.rlhf, RLHF_PLAN) if workload_is_group else (self.scenarios, SCENARIO_PLAN)


# The Models sheet: a model's numeric config fields, then what they imply (shape.MODEL_TERMS).
MODEL_COLUMNS = tuple(f for f in MODEL_FIELDS if f not in TEXT_FIELDS) + MODEL_TERM_NAMES


def lookup_tables(report: Report) -> dict[str, Table]:
    specs = {
        "Models": ("model", MODEL_COLUMNS, len(report.tables["Models"])),
        "GPUs": ("gpu", GPU_COLUMNS, len(report.tables["GPUs"])),
        **{t.name: (t.key, t.columns, len(t.rows)) for t in LOOKUP_TABLES},
    }
    out = {}
    for name, (key, columns, n) in specs.items():
        cols = (Column(key, key, "text", "input"),) + tuple(Column(c, c, "general", "input") for c in columns)
        out[name] = Table(name, cols, LOOKUP_FIRST_ROW, last_row(LOOKUP_FIRST_ROW, n), key=key)
    return out


def _scenario_values(s: Scenario, values: Mapping[str, float], **ids) -> dict[str, Any]:
    return {**ids, **s.inputs(), **values}


def build_book(report: Report) -> Book:
    lookups = Lookups(lookup_tables(report))
    rows: list[dict[str, Any]] = []
    role_rows: dict[tuple[int, str], int] = {}
    result_rows: dict[int, int] = {}
    groups: list[Result] = []
    for r in report.results:
        if r.is_group:
            groups.append(r)
            for role, est in r.estimate.roles:
                role_rows[(r.index, role)] = SCENARIO_FIRST_ROW + len(rows)
                rows.append(_scenario_values(est.scenario, est.values, index=r.index, name=f"{r.label} · {role}",
                                             matrix=r.matrix, group=f"G{r.index}", role=role))
        else:
            result_rows[r.index] = SCENARIO_FIRST_ROW + len(rows)
            rows.append(_scenario_values(r.lead, r.estimate.values, index=r.index, name=r.label, matrix=r.matrix,
                                         group="", role=""))
    scenarios = Table("Scenarios", scenario_columns(SCENARIO_IDS, plan_helpers(IF(Var("group").eq(""), 1, 0))),
                      SCENARIO_FIRST_ROW, last_row(SCENARIO_FIRST_ROW, len(rows)))
    fill_derived(scenarios, rows, report.assumptions, SCENARIO_PLAN)

    rlhf = Table("RLHF", rlhf_columns(report.results), SCENARIO_FIRST_ROW, last_row(SCENARIO_FIRST_ROW, len(groups)))
    group_rows, group_formulas = [], []
    for r in groups:
        result_rows[r.index] = SCENARIO_FIRST_ROW + len(group_rows)
        row, formulas = _group_row(r, result_rows[r.index], rlhf, scenarios, lookups, role_rows)
        group_rows.append(row)
        group_formulas.append(formulas)
    fill_derived(rlhf, group_rows, report.assumptions, RLHF_PLAN)

    note_rows: list[dict[str, Any]] = []
    note_cells: dict[tuple[str, str], int] = {}
    for note in report.notes:
        for key, s in note.scenarios.items():
            note_cells[(note.id, key)] = SCENARIO_FIRST_ROW + len(note_rows)
            note_rows.append(_scenario_values(s, note.scenario_values[key], note=note.id, key=key, name=s.label()))
    note_scenarios = Table("NoteScenarios", scenario_columns(NOTE_SCENARIO_IDS), SCENARIO_FIRST_ROW,
                           last_row(SCENARIO_FIRST_ROW, len(note_rows)))
    fill_derived(note_scenarios, note_rows, report.assumptions)
    return Book(report, lookups, scenarios, rlhf, note_scenarios, rows, role_rows, result_rows, group_rows,
                group_formulas, note_rows, note_cells)


def _group_row(r: Result, sheet_row: int, rlhf: Table, scenarios: Table, lookups: Lookups,
               role_rows: Mapping[tuple[int, str], int]) -> tuple[dict[str, Any], dict[str, str]]:
    """An RLHF group's values and its own formulas: Var("actor.X") is the actor row's X cell."""
    g: GroupEstimate = r.estimate
    roles = tuple(name for name, _ in g.scenario.roles)
    lead_row = role_rows[(r.index, roles[0])]
    lead = g.scenario.roles[0][1]
    row = {"group": f"G{r.index}", "index": r.index, "name": r.label, "matrix": r.matrix,
           "workload": g.scenario.algorithm, "placement": g.scenario.placement,
           "roles": ", ".join(f"{role}: row {role_rows[(r.index, role)]}" for role in roles),
           **{c.name: getattr(lead, c.name) for c in RLHF_LINKS}, **g.values}
    formulas = {c.name: f"={scenarios.cell(c.name, lead_row)}" for c in RLHF_LINKS}

    def role_cell(name: str) -> str | None:
        if "." not in name:
            return None
        role, term = name.split(".", 1)
        return scenarios.cell(term, role_rows[(r.index, role)])

    ctx = row_context(rlhf, lookups, role_cell)
    for t in group_terms(roles, g.scenario.placement):
        formulas[t.name] = ("=" + to_excel(t.expr, ctx)).replace(ROW, str(sheet_row))
    return row, formulas


# ---------------------------------------------------------------------------------------------
# Plan: per model × workload × GPU type, the cheapest fitting row, found by formulas

PLAN_DETAILS = {  # Plan column -> (candidate-table column, divisor); "gpus" is the table's GPU count
    "index": ("index", 1), "name": ("name", 1), "total_gpus": ("gpus", 1), "zero_stage": ("zero_stage", 1),
    "tp_size": ("tp_size", 1), "device_total_gib": ("device_total", GiB), "recommended_gib": ("recommended", GiB),
    "headroom_gib": ("headroom_bytes", GiB), "purchase_usd": ("purchase_usd", 1), "hourly_usd": ("hourly_usd", 1),
}
PLAN_TABLE_COLUMNS = (
    Column("model", "Model", "text", "input", 16),
    Column("workload", "Workload", "text", "input", 10),
    Column("gpu", "GPU type", "text", "input", 16),
    Column("sheet", "Candidates on", "text", "id", 10),
    Column("scenarios_tried", "Scenarios tried", "count", "helper", 9),
    Column("best_row", "Sheet row of the cheapest fitting (0: none)", "count", "helper", 11),
    Column("index", "#", "count", "formula", 5),
    Column("name", "Cheapest configuration that fits with k", "text", "formula", 46),
    Column("total_gpus", "GPUs", "count", "formula", 6),
    Column("zero_stage", "ZeRO stage", "count", "formula", 6),
    Column("tp_size", "Tensor parallel", "count", "formula", 7),
    Column("device_total_gib", "Device total per GPU", "gib", "formula", 10),
    Column("recommended_gib", "Recommended per GPU (k ×)", "gib", "formula", 11),
    Column("headroom_gib", "Headroom per GPU", "gib", "formula", 10),
    Column("purchase_usd", "Purchase cost", "usd", "formula", 12),
    Column("hourly_usd", "Cloud cost per hour", "usd", "formula", 10),
    Column("cheapest", "Cheapest overall for this model × workload (1/0)", "flag", "helper", 12),
)


@dataclass(frozen=True)
class PlanBlock:
    rec: Recommendation
    first_row: int  # the Plan rows of its entries, one per GPU type
    last_row: int


def plan_blocks(report: Report) -> list[PlanBlock]:
    blocks, row = [], SCENARIO_FIRST_ROW
    for rec in report.recommendations:
        blocks.append(PlanBlock(rec, row, row + len(rec.entries) - 1))
        row += len(rec.entries)
    return blocks


def _is_group_workload(book: Book, rec: Recommendation) -> bool:
    results = [e.result for e in rec.entries if e.result] or [
        r for r in book.report.results if (r.model, r.workload) == (rec.model, rec.workload)]
    return results[0].is_group


def _plan_entry(book: Book, plan: Table, block: PlanBlock, entry: PlanEntry, row: int) -> tuple[dict, dict]:
    """One Plan row's formulas and Python values."""
    cands, fields = book.candidates(_is_group_workload(book, block.rec))
    ref = {n: plan.ref(n, row) for n in ("model", "workload", "gpu", "best_row", "purchase_usd", "total_gpus")}
    match = plan_match(cands, f"${ref['model']}", f"${ref['workload']}", f"${ref['gpu']}")
    formulas = {
        "scenarios_tried": f"=SUMPRODUCT({match}*{cands.range('plan_candidate')})",
        "best_row": f"=SUMPRODUCT({match}*{cands.range('plan_best')}*{cands.range('sheet_row')})",
    }
    for name, (source, divisor) in PLAN_DETAILS.items():
        source = fields.gpus if source == "gpus" else source
        value = f"INDEX({cands.full_range(source)},{ref['best_row']})" + (f"/{divisor}" if divisor != 1 else "")
        formulas[name] = f'=IF({ref["best_row"]}=0,"{DASH}",{value})'
    blk = {n: f"${plan.letter(n)}${block.first_row}:${plan.letter(n)}${block.last_row}"
           for n in ("best_row", "purchase_usd", "total_gpus")}
    # The order of report.recommend across GPU types: cost, then GPU count, then scenario order.
    before = (f"({blk['best_row']}>0)*(({blk['purchase_usd']}<{ref['purchase_usd']})"
              f"+({blk['purchase_usd']}={ref['purchase_usd']})*(({blk['total_gpus']}<{ref['total_gpus']})"
              f"+({blk['total_gpus']}={ref['total_gpus']})*({blk['best_row']}<{ref['best_row']})))")
    formulas["cheapest"] = f"=IF({ref['best_row']}=0,0,IF(SUMPRODUCT({before})=0,1,0))"

    r = entry.result
    values = {"model": entry.model, "workload": entry.workload, "gpu": entry.gpu, "sheet": cands.sheet,
              "scenarios_tried": entry.num_scenarios, "best_row": book.result_rows[r.index] if r else 0,
              "cheapest": int(block.rec.best is not None and block.rec.best.gpu == entry.gpu)}
    if r is None:
        values.update({n: DASH for n in PLAN_DETAILS})
    else:
        values.update({"index": r.index, "name": r.label, "total_gpus": r.total_gpus, "zero_stage": r.lead.zero_stage,
                       "tp_size": r.lead.tp_size, "purchase_usd": r.estimate["purchase_usd"],
                       "hourly_usd": r.estimate["hourly_usd"],
                       **{n: r.estimate[src] / GiB for n, (src, d) in PLAN_DETAILS.items() if d == GiB}})
    return formulas, values


def write_plan(wb, book: Book, styles: Styles) -> None:
    ws = add_sheet(wb, "Plan")
    blocks = plan_blocks(book.report)
    n = sum(len(b.rec.entries) for b in blocks)
    plan = Table("Plan", PLAN_TABLE_COLUMNS, SCENARIO_FIRST_ROW, SCENARIO_FIRST_ROW + max(n, 1) - 1)
    write_header(ws, plan, styles, 1)
    rows, formulas = [], []
    for block in blocks:
        for i, entry in enumerate(block.rec.entries):
            f, v = _plan_entry(book, plan, block, entry, block.first_row + i)
            formulas.append(f)
            rows.append(v)
    write_rows(wb, ws, plan, rows, {}, styles, formulas)
    ws.conditional_format(plan.first_row - 1, plan.index["cheapest"], plan.last_row - 1, plan.index["cheapest"],
                          {"type": "cell", "criteria": "==", "value": 1, "format": styles.highlight})
    ws.freeze_panes(SCENARIO_FIRST_ROW - 1, 3)
    ws.autofilter(1, 0, plan.last_row - 1, len(plan.columns) - 1)
    page_setup(ws, header_rows=2)


# ---------------------------------------------------------------------------------------------
# Charts: the peak memory breakdown of each recommended single-model configuration

CHART_COLUMNS = (
    (Column("recommendation", "Model · workload", "text", "id", 24),
     Column("best_row", "Scenarios row (cheapest overall, from Plan)", "count", "helper", 11),
     Column("name", "Cheapest configuration", "text", "formula", 46))
    + tuple(Column(f"{p}_gib", TERM_BY_NAME[p].label, "gib", "formula", 11) for p in PEAK_PARTS)
    + (Column("overhead_gib", "Fragmentation + CUDA context + comm buffers", "gib", "formula", 13),
       Column("device_total_gib", "Device total", "gib", "formula", 10))
)
PART_COLOURS = ("#4472C4", "#8FAADC", "#ED7D31", "#A5A5A5", "#FFC000", "#5B9BD5", "#70AD47", "#7F7F7F")


def write_charts(wb, book: Book, styles: Styles) -> None:
    ws = add_sheet(wb, "Charts")
    blocks = [b for b in plan_blocks(book.report) if b.rec.best and not b.rec.best.result.is_group]
    table = Table("Charts", CHART_COLUMNS, SCENARIO_FIRST_ROW, SCENARIO_FIRST_ROW + max(len(blocks), 1) - 1)
    plan = Table("Plan", PLAN_TABLE_COLUMNS, SCENARIO_FIRST_ROW, SCENARIO_FIRST_ROW)  # column letters only
    sc = book.scenarios
    write_header(ws, table, styles, 1)
    rows, formulas = [], []
    for i, b in enumerate(blocks):
        row = table.first_row + i
        best = table.ref("best_row", row)

        def pick(term: str) -> str:
            return f"INDEX({sc.full_range(term)},{best})"

        f = {"best_row": f"=SUMPRODUCT(Plan!${plan.letter('cheapest')}${b.first_row}:${plan.letter('cheapest')}${b.last_row}"
                         f"*Plan!${plan.letter('best_row')}${b.first_row}:${plan.letter('best_row')}${b.last_row})",
             "name": f'=IF({best}=0,"{DASH}",{pick("name")})',
             "overhead_gib": f"=IF({best}=0,0,({pick('device_total')}-{pick('allocated_peak')})/{GiB})",
             "device_total_gib": f"=IF({best}=0,0,{pick('device_total')}/{GiB})",
             **{f"{p}_gib": f"=IF({best}=0,0,{pick(p)}/{GiB})" for p in PEAK_PARTS}}
        values = b.rec.best.result.estimate.values
        rows.append({"recommendation": f"{b.rec.model} · {b.rec.workload}",
                     "best_row": book.result_rows[b.rec.best.result.index], "name": b.rec.best.result.label,
                     "overhead_gib": (values["device_total"] - values["allocated_peak"]) / GiB,
                     "device_total_gib": values["device_total"] / GiB,
                     **{f"{p}_gib": values[p] / GiB for p in PEAK_PARTS}})
        formulas.append(f)
    write_rows(wb, ws, table, rows, {}, styles, formulas)
    ws.freeze_panes(SCENARIO_FIRST_ROW - 1, 1)
    if rows:
        _breakdown_chart(wb, ws, table, rows)
    page_setup(ws, header_rows=0)


def _breakdown_chart(wb, ws, table: Table, rows: Sequence[Mapping[str, Any]]) -> None:
    chart = wb.add_chart({"type": "bar", "subtype": "stacked"})
    first, last = table.first_row - 1, table.first_row + len(rows) - 2
    names = [r["name"] for r in rows]
    series = [f"{p}_gib" for p in PEAK_PARTS] + ["overhead_gib"]
    for colour, name in zip(PART_COLOURS, series):
        c = table.index[name]
        chart.add_series({
            "name": ["Charts", 1, c],
            "name_data": [table.columns[c].header],
            "categories": ["Charts", first, table.index["name"], last, table.index["name"]],
            "categories_data": names,
            "values": ["Charts", first, c, last, c],
            "values_data": [r[name] for r in rows],  # the cache: streamed sheets cannot be read back
            "fill": {"color": colour}, "gap": 60,
        })
    chart.set_title({"name": "Per-GPU memory of the cheapest fitting configuration, by part (GiB)",
                     "name_font": {"size": 12}})
    # Axes stay visible (XlsxWriter writes <c:delete> only for hidden axes).
    chart.set_x_axis({"name": "GiB per GPU", "num_format": "0", "visible": True, "major_gridlines": {"visible": True}})
    chart.set_y_axis({"reverse": True, "visible": True, "num_font": {"size": 8}})
    chart.set_legend({"position": "bottom", "font": {"size": 8}})
    chart.set_size({"width": 1100, "height": 160 + 34 * len(rows)})
    ws.insert_chart(table.first_row + len(rows) + 1, 0, chart)


# ---------------------------------------------------------------------------------------------
# Scenarios, RLHF and NoteScenarios: one row per model instance, every term a formula column

def _choice_sources(book: Book) -> dict[str, str]:
    """Input -> data-validation list source: its lookup table's key column, or its Choices column."""
    out = {n: book.lookups.key_range(t) for n, t in LOOKUP_KEY_INPUTS.items()}
    choices = choices_table()
    for name in choices.index:
        out.setdefault(name, f"Choices!${choices.letter(name)}${choices.first_row}:"
                             f"${choices.letter(name)}${choices.first_row + len(INPUT_BY_NAME[name].choices) - 1}")
    return out


def _validate_inputs(ws, table: Table, sources: Mapping[str, str]) -> None:
    for col in table.columns:
        if col.kind != "input":
            continue
        c = table.index[col.name]
        common = {"input_title": col.label[:32], "input_message": col.help[:255], "show_input": True,
                  "show_error": True, "error_title": f"Invalid {col.label}"[:32]}
        if col.name in sources:
            rule = {"validate": "list", "source": "=" + sources[col.name],
                    "error_message": f"Pick a value from the list ({sources[col.name]})."[:255]}
        elif INPUT_BY_NAME[col.name].is_int:
            lo, hi = INPUT_BY_NAME[col.name].limits
            rule = {"validate": "integer", "criteria": "between", "minimum": lo, "maximum": hi,
                    "error_message": f"A whole number from {lo} to {hi:,}."}
        else:
            continue
        ws.data_validation(table.first_row - 1, c, table.last_row - 1, c, {**common, **rule})


def _write_scenario_sheet(wb, book: Book, styles: Styles, table: Table, rows, *, fields=None, per_row=None,
                          freeze_columns: int = 2) -> None:
    ws = add_sheet(wb, table.sheet)
    write_header(ws, table, styles, 1)
    templates = row_templates(table, row_context(table, book.lookups), fields)
    write_rows(wb, ws, table, rows, templates, styles, per_row)
    ws.freeze_panes(SCENARIO_FIRST_ROW - 1, freeze_columns)
    ws.autofilter(1, 0, table.first_row + max(len(rows), 1) - 2, len(table.columns) - 1)
    _validate_inputs(ws, table, _choice_sources(book))
    # Printed: the identifying and summary columns (the full table is for the screen).
    printed = max(i for i, c in enumerate(table.columns) if c.kind == "summary") + 1
    page_setup(ws, header_rows=2, print_columns=printed, print_rows=table.first_row + len(rows) - 1)


def write_scenarios(wb, book: Book, styles: Styles) -> None:
    _write_scenario_sheet(wb, book, styles, book.scenarios, book.scenario_rows, fields=SCENARIO_PLAN)


def write_rlhf(wb, book: Book, styles: Styles) -> None:
    if book.group_rows:
        _write_scenario_sheet(wb, book, styles, book.rlhf, book.group_rows, fields=RLHF_PLAN,
                              per_row=book.group_formulas, freeze_columns=3)


def write_note_scenarios(wb, book: Book, styles: Styles) -> None:
    if book.note_rows:
        _write_scenario_sheet(wb, book, styles, book.note_scenarios, book.note_rows, freeze_columns=3)


# ---------------------------------------------------------------------------------------------
# Notes: claims, verdicts and live figures over the NoteScenarios rows

FIGURE_FORMAT = {"bytes": "bytes", "count": "count", "gpus": "count", "ratio": "ratio", "percent": "percent"}


def _explanation(text: str) -> str:
    """Figures are referenced as {key} in the prose; in the workbook they are the rows below."""
    return re.sub(r"\{(\w+)(?::[^}]*)?\}", r"[\1]", text)


def write_notes(wb, book: Book, styles: Styles) -> None:
    notes = book.report.notes
    if not notes:
        return
    ws = add_sheet(wb, "Notes")
    widths = (18, 70, 20, 9, 12, 36)
    for c, width in enumerate(widths):
        ws.set_column(c, c, width)
    ws.write_string(0, 0, "Error-correction notes: claims checked with this workbook's own formulas", styles.title)
    r = 2
    for note in notes:
        ws.write_string(r, 0, note.id, styles.subtitle)
        ws.write_string(r, 1, f"Verdict: {note.verdict}", styles.subtitle)
        r += 1
        for label, text in (("Article", note.article), ("Claim (zh)", note.claim_zh), ("Claim (en)", note.claim_en),
                            ("Setting (en)", note.setting_en), ("Setting (zh)", note.setting_zh),
                            ("Explanation (en)", _explanation(note.explanation_en)),
                            ("Explanation (zh)", _explanation(note.explanation_zh)), ("Source", note.source),
                            ("Scenarios", "; ".join(f"{k}: NoteScenarios row {book.note_cells[(note.id, k)]}"
                                                    for k in note.scenarios))):
            fit_row(ws, r, [(text, widths[1])])
            ws.write_string(r, 0, label, styles.bold)
            write_value(ws, r, 1, text, styles.wrap)
            r += 1
        for c, head in enumerate(("Figure", "Label (en)", "Value", "Unit", "In GiB", "Label (zh)")):
            ws.write_string(r, c, head, styles.header["formula"])
        r += 1
        ctx = _note_context(book, note.id)
        for fig in note.figures:
            fit_row(ws, r, [(fig.label_en, widths[1]), (fig.label_zh, widths[5])])
            unit = FIGURE_FORMAT.get(fig.unit, "general")
            if unit == "count" and not float(fig.value).is_integer():
                unit = "decimal"  # e.g. 4.127 bits per weight
            ws.write_string(r, 0, fig.key, styles.text)
            ws.write_string(r, 1, fig.label_en, styles.wrap)
            ws.write_formula(r, 2, "=" + to_excel(fig.expr, ctx), styles.value[unit], _plain(fig.value))
            ws.write_string(r, 3, fig.unit, styles.text)
            if fig.unit == "bytes":
                ws.write_formula(r, 4, f"=C{r + 1}/{GiB}", styles.value["gib"], fig.value / GiB)
            ws.write_string(r, 5, fig.label_zh, styles.wrap)
            r += 1
        r += 1
    page_setup(ws, header_rows=0)


def _note_context(book: Book, note_id: str) -> ExcelContext:
    table = book.note_scenarios

    def cell(name: str) -> str:
        if name in ASSUMPTION_DEFAULTS:
            return name
        key, term = name.split(".", 1)
        return table.cell(term, book.note_cells[(note_id, key)])
    return ExcelContext(cell, book.lookups.column_range, book.lookups.key_range)


# ---------------------------------------------------------------------------------------------
# Terms: what each formula column of Scenarios computes, and from which source

SPECIAL_TEXT = {"row": "ROW(): this row's number", "plan_rank": "SUMPRODUCT over the rows of the same model, "
                "workload and GPU type that sort before this one by (plan_cost_usd, num_gpus, sheet_row)"}


def write_terms(wb, book: Book, styles: Styles) -> None:
    ws = add_sheet(wb, "Terms")
    heads = (("Formula name", 24), ("Label", 40), ("Unit", 8), ("Formula (prose; names are columns of the "
             "same row, assumptions or lookups)", 90), ("Source", 70))
    for c, (head, width) in enumerate(heads):
        ws.set_column(c, c, width)
        ws.write_string(0, c, head, styles.header["id"])
    cols = [c for c in book.scenarios.columns if c.kind in ("summary", "formula", "helper")]
    for r, col in enumerate(cols, start=1):
        formula = to_text(col.expr) if col.expr is not None else SPECIAL_TEXT[col.special]
        texts = (col.name, col.label, col.unit, formula, col.help)
        fit_row(ws, r, [(t, w) for t, (_, w) in zip(texts, heads)])
        for c, text in enumerate(texts):
            write_value(ws, r, c, text, styles.wrap)
    ws.freeze_panes(1, 1)
    ws.autofilter(0, 0, len(cols), len(heads) - 1)
    page_setup(ws, header_rows=1)


# ---------------------------------------------------------------------------------------------
# Inputs: assumptions (named cells), catalogs and lookup tables, choice lists

ASSUMPTION_FORMATS = {"bytes": "bytes", "tokens": "count"}


def write_assumptions(wb, book: Book, styles: Styles) -> None:
    ws = add_sheet(wb, "Assumptions")
    for c, (head, width) in enumerate((("Defined name", 24), ("Assumption", 30), ("Value", 16), ("Unit", 20),
                                       ("In GiB", 10), ("Why", 90))):
        ws.set_column(c, c, width)
        ws.write_string(0, c, head, styles.header["input" if head == "Value" else "id"])
    for r, a in enumerate(ASSUMPTIONS, start=1):
        fit_row(ws, r, [(a.help, 90)])
        ws.write_string(r, 0, a.name, styles.text)
        ws.write_string(r, 1, a.label, styles.text)
        ws.write_number(r, 2, _plain(book.report.assumptions[a.name]),
                        styles.input[ASSUMPTION_FORMATS.get(a.unit, "general")])
        ws.write_string(r, 3, a.unit, styles.text)
        if a.unit == "bytes":
            ws.write_formula(r, 4, f"=C{r + 1}/{GiB}", styles.value["gib"], book.report.assumptions[a.name] / GiB)
        ws.write_string(r, 5, a.help, styles.wrap)
        wb.define_name(a.name, f"=Assumptions!$C${r + 1}")
    r = len(ASSUMPTIONS) + 1
    ws.write_string(r, 0, "currency", styles.text)
    ws.write_string(r, 1, "Currency of every price", styles.text)
    ws.write_string(r, 2, "USD", styles.input["text"])
    ws.write_string(r, 5, "Prices on the GPUs sheet and every cost column are in this currency (label only: "
                          "editing it converts nothing).", styles.wrap)
    wb.define_name("currency", f"=Assumptions!$C${r + 1}")
    ws.freeze_panes(1, 1)
    page_setup(ws, header_rows=1)


def _number_width(values: Iterable[float]) -> int:
    """Characters the widest value takes as displayed (#,##0 for whole numbers, else General)."""
    return max((len(f"{v:,.0f}") if float(v).is_integer() else min(len(repr(v)), 11) for v in values), default=4)


def _write_lookup_sheet(wb, table: Table, rows: Mapping[str, Mapping[str, Any]],
                        text_columns: Sequence[tuple[str, float, Callable[[str], str]]], styles: Styles,
                        column_help: Mapping[str, str] = {}) -> None:
    """A catalog table: key + numeric columns (what INDEX/MATCH reads), then text columns (sources).
    Numeric columns are as wide as their values; their names wrap in the header."""
    ws = add_sheet(wb, table.sheet)
    widths = [max(len(k) for k in rows) + 2] + [
        max(_number_width(v[c.name] for v in rows.values()) + 2, 8) for c in table.columns[1:]]
    widths += [w for _, w, _ in text_columns]
    heads = [c.name for c in table.columns] + [name for name, _, _ in text_columns]
    ws.set_row(0, LINE_HEIGHT * max(text_lines(h, w - 1) for h, w in zip(heads, widths)) + 3)
    for c, (head, width) in enumerate(zip(heads, widths)):
        ws.set_column(c, c, width)
        ws.write_string(0, c, head, styles.header["input" if c < len(table.columns) else "id"])
        if column_help.get(head):
            ws.write_comment(0, c, column_help[head], {"x_scale": 2})
    integer, general = styles.input["count"], styles.input["general"]
    for r, (key, values) in enumerate(rows.items(), start=table.first_row - 1):
        texts = [text(key) for _, _, text in text_columns]
        fit_row(ws, r, [(t, w) for t, (_, w, _) in zip(texts, text_columns)])
        ws.write_string(r, 0, key, styles.input["text"])
        for c, col in enumerate(table.columns[1:], start=1):
            v = _plain(values[col.name])
            ws.write_number(r, c, v, integer if float(v).is_integer() else general)
        for c, text in enumerate(texts, start=len(table.columns)):
            write_value(ws, r, c, text, styles.input_wrap)
    ws.freeze_panes(1, 1)
    ws.autofilter(0, 0, table.first_row + len(rows) - 2, len(heads) - 1)
    page_setup(ws, header_rows=1, paper=A3 if sum(widths) > 250 else A4)


def write_lookup_tables(wb, book: Book, styles: Styles) -> None:
    tables, rep = book.lookups.tables, book.report
    specs, gpus = rep.models, rep.gpus
    _write_lookup_sheet(wb, tables["Models"], rep.tables["Models"],
                        [("model_type", 12, lambda k: specs[k].model_type), ("source", 40, lambda k: specs[k].source)],
                        styles)
    _write_lookup_sheet(wb, tables["GPUs"], rep.tables["GPUs"],
                        [(f, 36 if f.endswith("source") else 12, (lambda k, f=f: getattr(gpus[k], f)))
                         for f in ("vendor", "marketed_memory", "memory_source", "spec_source", "price_source")],
                        styles, {"memory_mib": "nvidia-smi total in MiB (2^20 bytes)",
                                 "price_purchase_usd": "USD per GPU: an editable planning assumption, not a quote",
                                 "price_per_hour_usd": "USD per GPU-hour (cloud, on demand): editable"})
    for t in LOOKUP_TABLES:
        _write_lookup_sheet(wb, tables[t.name], t.rows, [("description and source", 90, lambda k, t=t: t.notes.get(k, ""))],
                            styles, t.column_help)


def choices_table() -> Table:
    names = [i.name for i in INPUTS if i.choices and i.name not in LOOKUP_KEY_INPUTS]
    cols = tuple(Column(n, n, "text", "id", max(12, max(len(v) for v in INPUT_BY_NAME[n].choices) + 2)) for n in names)
    return Table("Choices", cols, LOOKUP_FIRST_ROW,
                 LOOKUP_FIRST_ROW + max(len(INPUT_BY_NAME[n].choices) for n in names) - 1)


def write_choices(wb, book: Book, styles: Styles) -> None:
    ws = add_sheet(wb, "Choices")
    table = choices_table()
    for c, col in enumerate(table.columns):
        ws.set_column(c, c, col.width)
        ws.write_string(0, c, col.name, styles.header["id"])
    for r in range(table.last_row - table.first_row + 1):
        for c, col in enumerate(table.columns):
            values = INPUT_BY_NAME[col.name].choices
            if r < len(values):
                ws.write_string(table.first_row - 1 + r, c, values[r], styles.text)
    ws.freeze_panes(1, 0)
    page_setup(ws, header_rows=1)


# ---------------------------------------------------------------------------------------------
# Guide

def _guide_lines(book: Book) -> list[tuple[str, str]]:
    """(style, text) rows of the Guide sheet."""
    rep, p = book.report, book.report.preset
    n_single = sum(not r.is_group for r in rep.results)
    n_groups = len(rep.results) - n_single
    last = book.scenarios.last_row
    return [
        ("title", p.title),
        ("text", p.description),
        ("text", f"Preset: {p.name} ({p.given_path or 'bundled with reportgen'}) · generated {rep.generated_at} "
                 f"by reportgen {rep.version}"),
        ("text", f"{n_single} single-model scenarios, {n_groups} RLHF groups "
                 f"({len(book.scenario_rows) - n_single} role rows), {len(rep.skipped)} combinations skipped "
                 "(see the JSON or HTML report for the reasons)."),
        ("h", "What this workbook is"),
        ("text", "A GPU-memory capacity plan with live formulas. Every memory term of every scenario is a formula "
                 "over the scenario's input cells, the catalog tables and earlier terms, so changing any input "
                 "recomputes everything downstream, and a total can be audited by clicking through its references. "
                 "Each formula cell also stores the value reportgen computed, for viewers that do not recalculate."),
        ("h", "Cell styles"),
        ("input", "Blue text on light yellow: an input you may edit (scenario inputs, assumptions, catalog rows)."),
        ("text", "Black on white: a formula. Do not type over it; change the inputs it reads instead."),
        ("text", "Header colours: grey = identification, green = summary in GiB, yellow = inputs, "
                 "blue = memory terms, light grey = plan helper columns. Row 1 holds each column's formula name "
                 "(the name the formulas use); the Terms sheet gives each formula column in words, with its source."),
        ("h", "Units"),
        ("text", "Term columns are in bytes (integers, thousands separators) per GPU. The green summary columns show "
                 "the same figures in GiB (2^30 bytes) with two decimals. GB (10^9 bytes) is not used. GPU memory "
                 "is the nvidia-smi total (GPUs sheet, MiB = 2^20 bytes). Costs are in USD (Assumptions: currency)."),
        ("h", "Sheets"),
        ("text", "Plan: for each model × workload and GPU type, the cheapest configuration whose recommended budget "
                 "(k × device total) fits, found by formulas over Scenarios (RLHF workloads: over RLHF). The row "
                 "marked 1 in the last column is the cheapest across GPU types."),
        ("text", "Charts: the per-GPU memory at the peak of each recommended single-model configuration, by part "
                 "(weights, master weights, optimizer states, gradients, activations, KV cache, temporaries) plus "
                 "fragmentation, CUDA context and communication buffers; it follows the Plan."),
        ("text", "Scenarios: one row per model instance. Columns: identification, summary (GiB), inputs (drop-downs), "
                 "every term of the term table in order, then the plan helpers (cost if it fits, rank, cheapest). "
                 "RLHF roles are rows here too, with their group id and role."),
        ("text", "RLHF: one row per PPO/DPO/GRPO group; its cells add or take the maximum of its role rows' cells "
                 "(colocated: all roles share the GPUs; separate: each role has its own pool, the tightest counts)."),
        ("text", "Notes: claims from the source articles (Chinese and English) with a verdict and live figures "
                 "computed from the NoteScenarios rows."),
        ("text", "Assumptions: safety factor k, allocator fragmentation, CUDA context, communication buffers, KV "
                 "block size, currency: named cells (e.g. safety_factor) that every formula reads."),
        ("text", "Models, GPUs, Precisions, Dtypes, Optimizers: the catalogs the formulas look up (INDEX/MATCH by "
                 "name), with sources. Choices: the allowed values of the other drop-downs."),
        ("h", "How to add a scenario"),
        ("text", "Copy the last row of Scenarios (the whole row) and paste it into the first empty row below. The "
                 "formulas use relative references and follow the row. Then edit its yellow input cells; the drop-"
                 "downs list the allowed values. A row counts for the Plan when its model, workload and GPU type "
                 "match a Plan row (copy a Plan row and edit its first three cells to add one). Lookup, drop-down "
                 f"and plan ranges reach row {last}."),
        ("h", "How to add a model or GPU"),
        ("text", "Add a row at the bottom of Models or GPUs (numbers as in the rows above, e.g. from "
                 "`reportgen params --config config.json --json`); its name then appears in the drop-downs. "
                 f"Lookups reach row {book.lookups.tables['Models'].last_row}."),
        ("h", "Printing"),
        ("text", "Scenarios, RLHF and NoteScenarios print their identification and summary columns, landscape, "
                 "one page wide; the full tables are meant for the screen."),
    ]


def write_guide(wb, book: Book, styles: Styles) -> None:
    ws = add_sheet(wb, "Guide")
    width = 95  # LibreOffice clips a wider column at the page edge instead of scaling it
    ws.set_column(0, 0, width)
    style = {"title": styles.title, "h": styles.subtitle, "text": styles.wrap, "input": styles.input_wrap}
    for r, (kind, text) in enumerate(_guide_lines(book)):
        if kind == "h":
            ws.set_row(r, 24)
        elif kind != "title":
            fit_row(ws, r, [(text, width)])
        write_value(ws, r, 0, text, style[kind])
    page_setup(ws, header_rows=0)


# ---------------------------------------------------------------------------------------------

SHEET_WRITERS = (write_guide, write_plan, write_charts, write_scenarios, write_rlhf, write_notes,
                 write_note_scenarios, write_terms, write_assumptions, write_lookup_tables, write_choices)


def _created(generated_at: str) -> datetime:
    """The document's creation time: the report's injected timestamp (reproducible), in UTC."""
    return datetime.fromisoformat(generated_at).astimezone(timezone.utc).replace(tzinfo=None)


def write(report: Report, path, lang: str = "en") -> None:
    """Write the workbook to `path`. `lang` does not change it: notes carry both languages."""
    book = build_book(report)
    wb = StreamingWorkbook(str(path), {
        "constant_memory": True,
        # Belt and braces: text is written with write_string anyway, never parsed.
        "strings_to_formulas": False, "strings_to_urls": False, "strings_to_numbers": False,
    })
    wb.set_properties({"title": report.preset.title, "subject": "GPU memory capacity plan",
                       "author": f"reportgen {report.version}", "created": _created(report.generated_at),
                       "comments": f"preset {report.preset.name}"})
    styles = Styles(wb)
    for write_sheet in SHEET_WRITERS:
        write_sheet(wb, book, styles)
    wb.close()
