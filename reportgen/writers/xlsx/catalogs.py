"""Terms, Assumptions, the lookup tables and the choice lists."""
from __future__ import annotations

from typing import Any, Iterable, Mapping

from ...formulas import ExcelContext, Var, to_excel, to_text
from ...inputs import INPUT_BY_NAME, INPUTS
from ...tables import LOOKUP_TABLES
from ...terms import ASSUMPTIONS
from .book import Book, compiled_columns
from .checks import LOOKUP_KEY_INPUTS, assumption_check, first_failure
from .layout import (A3, A4, ASSUMPTIONS_CHECK, LINE_HEIGHT, LOOKUP_FIRST_ROW, Column, Styles, Table, add_sheet, fit_row,
                     mark_invalid_rows, page_setup, plain, text_lines, write_value)
from .stream import ROW


# ---------------------------------------------------------------------------------------------
# Terms: what each formula column of Scenarios computes, and from which source

SPECIAL_TEXT = {"position": "ROW() − 2: this row's place in the table"}


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

ASSUMPTION_COLUMNS = (
    Column("name", "Defined name", "text", "id", 24),
    Column("label", "Assumption", "text", "id", 30),
    Column("value", "Value", "general", "input", 14),
    Column("unit", "Unit", "text", "id", 20),
    Column("check", "Check", "text", "summary", 30),
    Column("help", "Why", "note", "id", 90),
)


def write_assumptions(wb, book: Book, styles: Styles) -> None:
    """The assumptions as named cells (safety_factor, …) with their limits as data validation and
    a check per row; assumptions_check names the first invalid one's reason, which every scenario
    check reads."""
    ws = add_sheet(wb, "Assumptions")
    table = Table("Assumptions", ASSUMPTION_COLUMNS, 2, len(ASSUMPTIONS) + 1)
    for c, col in enumerate(table.columns):
        ws.set_column(c, c, col.width)
        ws.write_string(0, c, col.label, styles.header[col.kind])
    value_format = {True: styles.input["count"], False: styles.input["general"]}
    checks = []
    for r, a in enumerate(ASSUMPTIONS, start=table.first_row - 1):
        value = book.report.assumptions[a.name]
        fit_row(ws, r, [(a.help, table.columns[-1].width)])
        ws.write_string(r, 0, a.name, styles.text)
        ws.write_string(r, 1, a.label, styles.text)
        ws.write_number(r, 2, plain(value), value_format[a.whole])
        ws.write_string(r, 3, a.unit, styles.text)
        check = Column("check", "", "text", "summary", expr=assumption_check(book.t, a))
        ctx = ExcelContext(lambda n, r=r: table.cell(n, r + 1) if n == "value" else n, None, None)
        (cached,) = compiled_columns([check])({"value": value}, {})
        ws.write_formula(r, 4, "=" + to_excel(check.expr, ctx), styles.text, cached)
        checks.append(f"Assumptions!${table.letter('check')}${r + 1}")  # absolute: a name has no row of its own
        ws.write_string(r, 5, a.help, styles.wrap)
        lo, hi = a.limits
        ws.data_validation(r, 2, r, 2, {
            "validate": "integer" if a.whole else "decimal", "criteria": "between", "minimum": lo, "maximum": hi,
            "show_error": True, "error_title": a.label[:32], "input_title": a.label[:32],
            "input_message": a.help[:255], "error_message": f"{a.unit}: from {lo:g} to {hi:g}."[:255]})
        book.names.add(a.name, f"=Assumptions!${table.letter('value')}${r + 1}")
    first = first_failure([Var(f"check{i}") for i in range(len(checks))])
    book.names.add(ASSUMPTIONS_CHECK, "=" + to_excel(first, ExcelContext(lambda n: checks[int(n[5:])], None, None)))
    r = len(ASSUMPTIONS) + 1
    ws.write_string(r, 0, "currency", styles.text)
    ws.write_string(r, 1, "Currency of every price", styles.text)
    ws.write_string(r, 2, "USD", styles.input["text"])
    ws.write_string(r, 5, "Prices on the GPUs sheet and every cost column are in this currency (label only: "
                          "editing it converts nothing).", styles.wrap)
    book.names.add("currency", f"=Assumptions!${table.letter('value')}${r + 1}")
    mark_invalid_rows(ws, table, styles)
    ws.freeze_panes(1, 1)
    page_setup(ws, header_rows=1)


def _number_width(values: Iterable[Any]) -> int:
    """Characters the widest value takes as displayed (#,##0 for whole numbers, else General)."""
    return max((len(f"{v:,.0f}") if float(v).is_integer() else min(len(repr(v)), 11)
                for v in values if not isinstance(v, str)), default=4)


def _write_lookup_sheet(wb, book: Book, table: Table, rows: Mapping[str, Mapping[str, Any]], styles: Styles,
                        column_help: Mapping[str, str] = {}) -> None:
    """A catalog: its key, the columns formulas read (inputs, and formulas over the same row), then
    notes and sources. Number columns are as wide as their values; their names wrap in the header."""
    ws = add_sheet(wb, table.sheet)
    widths = [max(max(len(k) for k in rows) + 2, 8) if c.name == table.key
              else c.width if c.unit in ("note", "text") else max(_number_width(v[c.name] for v in rows.values()) + 2, 8)
              for c in table.columns]
    ws.set_row(0, LINE_HEIGHT * max(text_lines(c.label, w - 1) for c, w in zip(table.columns, widths)) + 3)
    for c, (col, width) in enumerate(zip(table.columns, widths)):
        ws.set_column(c, c, width)
        ws.write_string(0, c, col.label, styles.header[col.kind])
        comment = column_help.get(col.name) or (f"{col.label}. {col.help}".strip(". ") if col.is_formula else "")
        if comment:
            ws.write_comment(0, c, comment, {"x_scale": 2})
    ctx = ExcelContext(table.ref, None, None)  # catalog formulas read their own row only
    for r, values in enumerate(rows.values(), start=table.first_row - 1):
        fit_row(ws, r, [(values[c.name], w) for c, w in zip(table.columns, widths) if c.unit == "note"])
        for c, col in enumerate(table.columns):
            if col.expr is not None:
                formula = "=" + to_excel(col.expr, ctx).replace(ROW, str(r + 1))
                ws.write_formula(r, c, formula, styles.cell(col), plain(values[col.name]))
            else:
                write_value(ws, r, c, values[col.name], styles.cell(col))
    mark_invalid_rows(ws, table, styles)
    ws.freeze_panes(1, 2)
    ws.autofilter(0, 0, table.last_row - 1, len(table.columns) - 1)
    page_setup(ws, header_rows=1, paper=A3 if sum(widths) > 250 else A4)


def write_lookup_tables(wb, book: Book, styles: Styles) -> None:
    gpu_help = {"memory_mib": "nvidia-smi total in MiB (2^20 bytes)",
                "price_purchase_usd": "USD per GPU: an editable planning assumption, not a quote",
                "price_per_hour_usd": "USD per GPU-hour (cloud, on demand): editable"}
    helps = {"GPUs": gpu_help, **{t.name: t.column_help for t in LOOKUP_TABLES}}
    for name, table in book.lookups.items():
        _write_lookup_sheet(wb, book, table, book.catalog_rows[name], styles, helps.get(name, {}))


def choices_table() -> Table:
    names = [i.name for i in INPUTS if i.choices and i.name not in LOOKUP_KEY_INPUTS]
    cols = tuple(Column(n, n, "text", "id", max(12, max(len(v) for v in INPUT_BY_NAME[n].choices) + 2)) for n in names)
    return Table("Choices", cols, LOOKUP_FIRST_ROW, max(len(INPUT_BY_NAME[n].choices) for n in names))


def write_choices(wb, book: Book, styles: Styles) -> None:
    ws = add_sheet(wb, "Choices")
    table = choices_table()
    for c, col in enumerate(table.columns):
        ws.set_column(c, c, col.width)
        ws.write_string(0, c, col.name, styles.header["id"])
    for r in range(table.num_rows):
        for c, col in enumerate(table.columns):
            values = INPUT_BY_NAME[col.name].choices
            if r < len(values):
                ws.write_string(table.first_row - 1 + r, c, values[r], styles.text)
    ws.freeze_panes(1, 0)
    page_setup(ws, header_rows=1)


