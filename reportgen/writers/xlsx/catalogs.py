"""Terms, Assumptions, the lookup tables and the choice lists."""
from __future__ import annotations

from typing import Any, Iterable, Mapping

from ...model.formulas import ExcelContext, Var, to_excel, to_text
from ...model.inputs import INPUT_BY_NAME, INPUTS
from ...model.lookups import LOOKUP_TABLES
from ...model.terms import ASSUMPTIONS, SKIP_RULES
from .book import Book, compiled_columns
from .checks import (INPUT_LISTS, LOOKUP_KEY_INPUTS, RULE_LISTS, assumption_check, assumption_in_use, catalog_validation,
                     first_failure, in_parts, skip_template)
from .layout import (A3, A4, ASSUMPTIONS_CHECK, LINE_HEIGHT, LOOKUP_FIRST_ROW, MAX_ROW, Column, Styles, Table,
                     add_sheet, column_label, column_text, fit_row, mark_invalid_rows, page_setup, plain,
                     text_lines, write_value)
from .stream import ROW


# ---------------------------------------------------------------------------------------------
# Terms: what each formula column of Scenarios computes, and from which source

def _prose(book: Book, col: Column) -> str:
    """A formula column in words: its expression (the definition, without the check's gate), or
    what its per-row formula does."""
    t = book.t
    if col.name in INPUT_LISTS:  # the parts of one rule, said once
        return t("terms.input_problems")
    if col.name in RULE_LISTS:  # the skip rules as defined (over terms), each with its words, in their parts
        rules = in_parts(SKIP_RULES, len(RULE_LISTS))[RULE_LISTS.index(col.name)]
        return "\n".join(f"{skip_template(t, r.code)}  ⇐  {to_text(r.when)}" for r in rules)
    if col.expr is not None:
        return to_text(col.expr)
    return t(f"terms.{col.special}")


def write_terms(wb, book: Book, styles: Styles) -> None:
    t = book.t
    ws = add_sheet(wb, "Terms")
    heads = ((t("terms.name"), 24), (t("terms.label"), 40), (t("terms.unit"), 8), (t("terms.formula"), 90),
             (t("terms.source"), 70))
    for c, (head, width) in enumerate(heads):
        ws.set_column(c, c, width)
        ws.write_string(0, c, head, styles.header["id"])
    cols = [c for c in book.scenarios.columns if c.is_formula]
    for r, col in enumerate(cols, start=1):
        texts = (col.name, column_label(t, "Scenarios", col), t.unit(col.unit), _prose(book, col),
                 column_text(t, col))
        fit_row(ws, r, [(text, w) for text, (_, w) in zip(texts, heads)])
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
    Column("in_use", "In use", "general", "summary", 14,
           help="what every formula reads (its defined name): the value while its check is ok, else the default"),
    Column("help", "Why", "note", "id", 90),
)


def write_assumptions(wb, book: Book, styles: Styles) -> None:
    """The assumptions with their limits as data validation and a check per row; each defined name
    (safety_factor, …) is the value in use (checks.assumption_in_use). assumptions_check names the
    first invalid one's reason, which every scenario check reads."""
    t = book.t
    ws = add_sheet(wb, "Assumptions")
    table = Table("Assumptions", ASSUMPTION_COLUMNS, 2, len(ASSUMPTIONS) + 1)
    for c, col in enumerate(table.columns):
        ws.set_column(c, c, col.width)
        ws.write_string(0, c, column_label(t, table.sheet, col), styles.header[col.kind])
    value_format = {True: styles.input["count"], False: styles.input["general"]}
    checks = []
    for r, a in enumerate(ASSUMPTIONS, start=table.first_row - 1):
        value = book.report.assumptions[a.name]
        label, why = t.label(a.name, a.label), t.label(f"{a.name}.help", a.help)
        fit_row(ws, r, [(why, table.columns[-1].width)])
        ws.write_string(r, 0, a.name, styles.text)
        ws.write_string(r, 1, label, styles.text)
        ws.write_number(r, 2, plain(value), value_format[a.whole])
        ws.write_string(r, 3, t.unit(a.unit), styles.text)
        check = Column("check", "", "text", "summary", expr=assumption_check(t, a))
        in_use = Column("in_use", "", "general", "summary", expr=assumption_in_use(a))
        ctx = ExcelContext(lambda n, r=r: table.cell(n, r + 1) if n in ("value", "check") else n, None, None)
        cached = compiled_columns([check, in_use])({"value": value}, {})
        ws.write_formula(r, 4, "=" + to_excel(check.expr, ctx), styles.text, cached[0])
        ws.write_formula(r, 5, "=" + to_excel(in_use.expr, ctx), styles.value["general"], plain(cached[1]))
        checks.append(f"Assumptions!${table.letter('check')}${r + 1}")  # absolute: a name has no row of its own
        ws.write_string(r, 6, why, styles.wrap)
        lo, hi = a.limits
        ws.data_validation(r, 2, r, 2, {
            "validate": "integer" if a.whole else "decimal", "criteria": "between", "minimum": lo, "maximum": hi,
            "show_error": True, "error_title": label[:32], "input_title": label[:32], "input_message": why[:255],
            "error_message": t("assumptions.range", unit=t.unit(a.unit), lo=f"{lo:g}",
                               hi=f"{hi:g}")[:255]})
        book.names.add(a.name, f"=Assumptions!${table.letter('in_use')}${r + 1}")
    first = first_failure([Var(f"check{i}") for i in range(len(checks))])
    book.names.add(ASSUMPTIONS_CHECK, "=" + to_excel(first, ExcelContext(lambda n: checks[int(n[5:])], None, None)))
    r = len(ASSUMPTIONS) + 1
    ws.write_string(r, 0, "currency", styles.text)
    ws.write_string(r, 1, t("assumptions.currency"), styles.text)
    ws.write_string(r, 2, "USD", styles.input["text"])
    ws.write_string(r, 6, t("assumptions.currency_help"), styles.wrap)
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
    # Columns formulas read are headed by the name formulas use (config fields keep Hugging Face's);
    # their label is the comment. The check and the notes are labelled in the workbook's language.
    heads = [c.name if c.kind in ("input", "formula") else column_label(book.t, table.sheet, c) for c in table.columns]
    ws.set_row(0, LINE_HEIGHT * max(text_lines(h, w - 1) for h, w in zip(heads, widths)) + 3)
    for c, (col, width, head) in enumerate(zip(table.columns, widths, heads)):
        ws.set_column(c, c, width)
        ws.write_string(0, c, head, styles.header[col.kind])
        label = column_label(book.t, table.sheet, col)
        # a column's own explanation (GPUs, lookup tables: translated as "<sheet>.<column>.help"), else a formula's
        own = column_help.get(col.name, "")
        comment = (book.t.terms.get(f"{table.sheet}.{col.name}.help", own) if own
                   else f"{label}. {column_text(book.t, col)}".strip(". ") if col.kind == "formula" else "")
        if comment:
            ws.write_comment(0, c, comment, {"x_scale": 2})
    ctx = ExcelContext(table.ref, None, None)  # catalog formulas read their own row only
    templates = {col.name: "=" + to_excel(col.expr, ctx) for col in table.columns if col.expr is not None}
    for r, values in enumerate(rows.values(), start=table.first_row - 1):
        fit_row(ws, r, [(values[c.name], w) for c, w in zip(table.columns, widths) if c.unit == "note"])
        for c, col in enumerate(table.columns):
            if col.expr is not None:
                ws.write_formula(r, c, templates[col.name].replace(ROW, str(r + 1)), styles.cell(col),
                                 plain(values[col.name]))
            else:
                write_value(ws, r, c, values[col.name], styles.cell(col))
    for c, col in enumerate(table.columns):
        if col.unit != "note":
            book.names.of(table, col.name)  # every column formulas may read is named, used or not
        if col.kind == "input" and col.name != table.key and col.unit != "text":
            label = column_label(book.t, table.sheet, col)
            ws.data_validation(table.first_row - 1, c, MAX_ROW, c, {
                **catalog_validation(table.sheet, col.name), "show_error": True, "error_title": label[:32],
                "error_message": book.t("validation.catalog")})
    mark_invalid_rows(ws, table, styles)
    ws.freeze_panes(1, 2)
    ws.autofilter(0, 0, table.last_row - 1, len(table.columns) - 1)
    page_setup(ws, header_rows=1, paper=A3 if sum(widths) > 250 else A4)


def write_lookup_tables(wb, book: Book, styles: Styles) -> None:
    gpu_help = {"memory_mib": "nvidia-smi total in MiB (2^20 bytes)",
                "datacenter": "1: licensed for data-centre use; 0: a GeForce card (its driver licence forbids data-centre deployment)",
                "bf16": "1: runs bfloat16; 0: no bf16 (Volta), so bf16 recipes and weights are refused on it",
                "nvls": "1: an NVSwitch with NVLink SHARP (HGX Hopper, Blackwell); NCCL then allocates NVLS buffers at TP > 2",
                "fp8_any_layout": "1: FP8 GEMMs take either layout (Blackwell), so an FP8 weight is kept once; 0: TN only "
                                  "(Hopper, Ada), so with its transpose",
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


