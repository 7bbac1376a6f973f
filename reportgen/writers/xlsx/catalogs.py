"""Terms, Assumptions, the lookup tables and the choice lists."""
from __future__ import annotations

from typing import Any, Callable, Iterable, Mapping, Sequence

from ...inputs import INPUT_BY_NAME, INPUTS
from ...formulas import to_text
from ...tables import LOOKUP_TABLES
from ...terms import ASSUMPTIONS
from ...units import GiB
from .book import Book, LOOKUP_KEY_INPUTS
from .layout import A3, A4, Column, LINE_HEIGHT, LOOKUP_FIRST_ROW, Styles, Table, plain, add_sheet, fit_row, page_setup, text_lines, write_value


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
        ws.write_number(r, 2, plain(book.report.assumptions[a.name]),
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
            v = plain(values[col.name])
            ws.write_number(r, c, v, integer if float(v).is_integer() else general)
        for c, text in enumerate(texts, start=len(table.columns)):
            write_value(ws, r, c, text, styles.input_wrap)
    ws.freeze_panes(1, 1)
    ws.autofilter(0, 0, table.first_row + len(rows) - 2, len(heads) - 1)
    page_setup(ws, header_rows=1, paper=A3 if sum(widths) > 250 else A4)


def write_lookup_tables(wb, book: Book, styles: Styles) -> None:
    tables, rep = book.lookups, book.report
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


