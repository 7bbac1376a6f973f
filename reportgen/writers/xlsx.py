"""The Excel workbook: every memory term as a live formula over editable inputs.

Sheets: Guide, Plan, Charts, Scenarios, RLHF, Notes, NoteScenarios, Assumptions, Models, GPUs,
Precisions, Dtypes, Optimizers, Choices (the Guide describes each).

Every term column is `formulas.to_excel(term.expr)` of the one term table (terms.py); RLHF group
cells and note figures are rendered the same way. The writer never types a term formula. Only the
procurement plan (SUMPRODUCT/INDEX over helper columns) and unit conversions are small formula
strings built here, because the expression language has no ranges.

Why XlsxWriter: openpyxl cannot store a formula's cached value (it writes `<v/>`), so viewers that
do not recalculate (previewers, mail clients, pandas) would show empty cells. XlsxWriter stores the
Python value next to each formula (`write_formula(..., value)`) and fills the chart caches
(`values_data`). openpyxl is used only to read workbooks back, in tests.

Why constant_memory: a 10,000-scenario sweep has a million formula cells; rows stream to disk in
order instead of being held in memory. Everything is therefore written row by row, top to bottom,
and the chart caches are passed in explicitly (XlsxWriter cannot read them back from a streamed
sheet).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Callable, Iterable, Mapping, Sequence

import xlsxwriter
from xlsxwriter.utility import xl_col_to_name

from ..catalog import GPU_COLUMNS, MODEL_COLUMNS
from ..estimate import INT_LIMITS, TEXT_CHOICES, Estimate, GroupEstimate, Scenario, compile_terms, group_terms
from ..formulas import AND, IF, Expr, ExcelContext, Lookup, Num, Var, to_excel
from ..report import PlanEntry, Recommendation, Report, Result
from ..tables import LOOKUP_TABLES
from ..terms import ASSUMPTION_DEFAULTS, ASSUMPTIONS, INPUTS, PEAK_PARTS, ROLE_TERMS, TERM_BY_NAME, Term
from ..units import GiB

# A formula template's row number: templates are rendered once per column and this placeholder is
# replaced by each row's number, so a 10,000-row sheet costs one render per column, not per cell.
ROW = "\x00"
# Cost of a configuration that does not fit: never the cheapest, and no Excel error to propagate.
NO_FIT_USD = 1e99
# Lookup, validation and plan ranges reach well below the data so a planner can add rows.
MIN_LAST_ROW = 1000
SPARE_ROWS = 500
DASH = "—"  # plan cells of a GPU type where nothing fits

INPUT_COLOURS = {"font_color": "#0000FF", "bg_color": "#FFF2CC"}  # blue on light yellow
NUMBER_FORMATS = {
    "bytes": "#,##0", "count": "#,##0", "gpus": "#,##0", "flag": "0", "usd": "#,##0.00", "gib": "#,##0.00",
    "fraction": "0.00", "ratio": "0.000", "percent": "0.00", "general": "General", "text": "@",
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
    special: str = ""  # non-DSL formula kinds: "row" (ROW()), "plan_rank", "link" (per-row formula)
    help: str = ""

    @property
    def is_formula(self) -> bool:
        return self.kind in ("summary", "formula", "helper") or bool(self.special)

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


# Shown right after the identifying columns (and printed): the answer in GiB, then fit and cost.
SUMMARY = (
    Column("allocated_peak_gib", "Allocated peak", "gib", "summary", 10, _gib("allocated_peak")),
    Column("device_total_gib", "Device total (nvidia-smi)", "gib", "summary", 11, _gib("device_total")),
    Column("recommended_gib", "Recommended (k × device total)", "gib", "summary", 12, _gib("recommended")),
    Column("gpu_memory_gib", "GPU memory", "gib", "summary", 10, _gib("gpu_memory_bytes")),
    Column("headroom_gib", "Headroom (GPU − device total)", "gib", "summary", 11, _gib("headroom_bytes")),
    Column("fits_with_k", "Fits with k (1/0)", "flag", "summary", 7, Var("fits_recommended")),
    Column("cost_usd", "Purchase cost", "usd", "summary", 11, Var("purchase_usd")),
)


def _input_column(i) -> Column:
    width = {"model": 16, "gpu": 16, "lora_targets": 24, "precision": 11}.get(i.name, 10)
    return Column(i.name, i.label, "text" if i.kind == "text" else "count", "input", width, help=i.help)


def _term_column(t: Term, label: str | None = None) -> Column:
    width = {"bytes": 17, "usd": 12}.get(t.unit, 12)
    return Column(t.name, label or t.label, t.unit, "formula", width, t.expr, help=t.source)


def plan_helpers(candidate: Expr) -> tuple[Column, ...]:
    """Per-row columns the Plan reads: a row's cost if it is a fitting candidate, its rank among
    the rows of the same model × workload × GPU type, and whether it is the cheapest."""
    help_rank = ("rows of the same model, workload and GPU type that come first in the plan's order: "
                 "lower cost-if-fits, then fewer GPUs, then higher up")
    return (
        Column("plan_candidate", "Plan candidate (1/0)", "flag", "helper", 9, candidate,
               help="1 for a row the Plan may pick (RLHF role rows are covered by their group on RLHF)"),
        Column("plan_cost_usd", "Cost if it fits with k (else 1E+99)", "usd", "helper", 12,
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
INPUT_BY_NAME = {i.name: i for i in INPUTS}
RLHF_LINKS = tuple(
    Column(n, INPUT_BY_NAME[n].label, "text" if INPUT_BY_NAME[n].kind == "text" else "count", "formula",
           14 if INPUT_BY_NAME[n].kind == "text" else 8, special="link", help="from the group's first role row")
    for n in ("model", "gpu", "num_gpus", "zero_stage", "tp_size"))


def scenario_columns(ids: Sequence[Column], helpers: Sequence[Column] = ()) -> tuple[Column, ...]:
    return (tuple(ids) + SUMMARY + tuple(_input_column(i) for i in INPUTS)
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
    # Group terms named after a role term (weights, …) carry only their name as label.
    cols = tuple(_term_column(t, t.label if t.label != t.name else TERM_BY_NAME[t.name].label + " (group)")
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

def _compiled(col: Column) -> Callable[[Mapping[str, Any], Mapping[str, float]], Any]:
    def var(n: str) -> str:
        return f"A[{n!r}]" if n in ASSUMPTION_DEFAULTS else f"R[{n!r}]"
    fn = compile_terms((Term(col.name, col.label, col.unit, col.expr),), var, "_column")
    return lambda row, assumptions: fn(None, assumptions, None, row)[0]


def fill_derived(table: Table, rows: Sequence[dict[str, Any]], assumptions: Mapping[str, float],
                 fields: PlanFields | None = None) -> None:
    """Add the value of every summary/helper column to each row dict, in column order (a column may
    read earlier ones). The same expressions are rendered as the columns' formulas."""
    for col in table.columns:
        if col.kind not in ("summary", "helper"):
            continue
        if col.expr is not None:
            fn = _compiled(col)
            for row in rows:
                row[col.name] = fn(row, assumptions)
        elif col.special == "row":
            for i, row in enumerate(rows):
                row[col.name] = table.first_row + i
        elif col.special == "plan_rank":
            _fill_ranks(rows, fields)


def _fill_ranks(rows: Sequence[dict[str, Any]], fields: PlanFields) -> None:
    cells: dict[tuple, list[dict]] = {}
    for row in rows:
        cells.setdefault((row["model"], row["workload"], row["gpu"]), []).append(row)
    for members in cells.values():
        ordered = sorted(members, key=lambda r: (r["plan_cost_usd"], r[fields.gpus], r["sheet_row"]))
        for rank, row in enumerate(ordered):
            row["plan_rank"] = rank


# ---------------------------------------------------------------------------------------------
# Styles: every format is created once per workbook

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
    if value is None:
        return
    if isinstance(value, str):
        ws.write_string(row, col, value, fmt)
    else:
        ws.write_number(row, col, _plain(value), fmt)


def write_header(ws, table: Table, styles: Styles, header_row: int) -> None:
    """Row header_row-1 (0-based): formula names; row header_row: labels with units."""
    ws.set_row(header_row - 1, 11)
    ws.set_row(header_row, 54)
    for c, col in enumerate(table.columns):
        ws.set_column(c, c, col.width)
        ws.write_string(header_row - 1, c, col.name, styles.name_row)
        ws.write_string(header_row, c, col.header, styles.header[col.kind])
        if col.help:
            ws.write_comment(header_row, c, col.help, {"x_scale": 2, "y_scale": 1.5})


def write_rows(ws, table: Table, rows: Sequence[Mapping[str, Any]], templates: Mapping[str, str], styles: Styles,
               per_row: Sequence[Mapping[str, str]] | None = None) -> None:
    """Data rows, top to bottom (constant_memory streams them): inputs and ids as values, every
    formula column as its template (or a row's own formula) with the Python value cached."""
    cols = [(c, col, styles.cell(col), templates.get(col.name)) for c, col in enumerate(table.columns)]
    for i, row in enumerate(rows):
        r = table.first_row + i
        rs = str(r)
        own = per_row[i] if per_row else {}
        for c, col, fmt, template in cols:
            value = row.get(col.name)
            if col.is_formula:
                formula = own.get(col.name) or (template.replace(ROW, rs) if template else None)
                if formula is not None:
                    ws.write_formula(r - 1, c, formula, fmt, _plain(value))
            else:
                write_value(ws, r - 1, c, value, fmt)


def page_setup(ws, *, header_rows: int, print_columns: int | None = None, print_rows: int | None = None) -> None:
    ws.set_landscape()
    ws.set_paper(9)  # A4
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


def lookup_tables(report: Report) -> dict[str, Table]:
    est = report.estimator
    specs = {
        "Models": ("model", MODEL_COLUMNS, len(est.tables["Models"])),
        "GPUs": ("gpu", GPU_COLUMNS, len(est.tables["GPUs"])),
        **{t.name: (t.key, t.columns, len(t.rows)) for t in LOOKUP_TABLES},
    }
    out = {}
    for name, (key, columns, n) in specs.items():
        cols = (Column(key, key, "text", "input", 18),) + tuple(
            Column(c, c, "general", "input", max(10, min(len(c) + 2, 18))) for c in columns)
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
            # The notes keep only their figures' values; each scenario's terms come from the same estimator.
            values = report.estimator.estimate(s).values
            note_rows.append(_scenario_values(s, values, note=note.id, key=key, name=s.label()))
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
