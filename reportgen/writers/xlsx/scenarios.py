"""Scenarios, RLHF and NoteScenarios: one row per model instance, every term a formula column."""
from __future__ import annotations

from typing import Mapping

from ...report.i18n import Catalogue
from ...model.inputs import INPUT_BY_NAME
from .checks import LOOKUP_KEY_INPUTS
from .book import Book, input_rules, row_templates
from .catalogs import choices_table
from .layout import (MAX_ROW, SCENARIO_FIRST_ROW, Styles, Table, add_sheet, column_label, column_text, mark_invalid_rows, page_setup,
                     write_header, write_rows)

def _choice_sources(book: Book) -> dict[str, str]:
    """Input -> data-validation list source: its lookup table's key column, or its Choices column."""
    out = {n: book.names.keys(book.lookups[t]) for n, t in LOOKUP_KEY_INPUTS.items()}
    choices = choices_table()
    for name in choices.index:
        out.setdefault(name, f"Choices!${choices.letter(name)}${choices.first_row}:"
                             f"${choices.letter(name)}${choices.first_row + len(INPUT_BY_NAME[name].choices) - 1}")
    return out


def _validate_inputs(ws, table: Table, sources: Mapping[str, str], t: Catalogue) -> None:
    """Drop-downs and ranges on every input column, down to the last row (Excel's check when a value
    is typed; the check column catches pasted values)."""
    for col in table.columns:
        if col.kind != "input":
            continue
        c = table.index[col.name]
        label = column_label(t, table.sheet, col)
        common = {"input_title": label[:32], "input_message": column_text(t, col)[:255],
                  "show_input": True, "show_error": True, "error_title": t("validation.invalid", label=label)[:32]}
        if col.name in sources:
            rule = {"validate": "list", "source": "=" + sources[col.name],
                    "error_message": t("validation.list", source=sources[col.name])[:255]}
        elif not (spec := input_rules(col.name)):
            # a goal cell (book.GOAL_COLUMNS): a number above 0, or blank
            rule = {"validate": "decimal", "criteria": ">", "value": 0, "ignore_blank": True,
                    "error_message": t("validation.positive")}
        elif spec.is_int:  # a scenario input, or an RLHF group's setting
            lo, hi = spec.limits
            rule = {"validate": "integer", "criteria": "between", "minimum": lo, "maximum": hi,
                    "error_message": t("validation.whole", lo=lo, hi=f"{hi:,}")}
        else:
            continue
        ws.data_validation(table.first_row - 1, c, MAX_ROW, c, {**common, **rule})


def _write_scenario_sheet(wb, book: Book, styles: Styles, table: Table, rows, *, per_row=None,
                          freeze_columns: int = 2, frozen=None) -> None:
    ws = add_sheet(wb, table.sheet)
    write_header(ws, table, styles, book.t)
    templates = row_templates(table, book.context(table))
    write_rows(wb, ws, table, rows, templates, styles, per_row, frozen=frozen)
    ws.freeze_panes(SCENARIO_FIRST_ROW - 1, freeze_columns)
    ws.autofilter(1, 0, table.first_row + max(len(rows), 1) - 2, len(table.columns) - 1)
    _validate_inputs(ws, table, _choice_sources(book), book.t)
    mark_invalid_rows(ws, table, styles)
    # Printed: the identifying and summary columns (the full table is for the screen).
    printed = max(i for i, c in enumerate(table.columns) if c.kind == "summary") + 1
    page_setup(ws, header_rows=2, print_columns=printed, print_rows=table.first_row + len(rows) - 1)


def write_scenarios(wb, book: Book, styles: Styles) -> None:
    _write_scenario_sheet(wb, book, styles, book.scenarios, book.scenario_rows, per_row=book.role_formulas,
                          frozen=book.frozen_rows())


def write_rlhf(wb, book: Book, styles: Styles) -> None:
    if book.group_rows:
        _write_scenario_sheet(wb, book, styles, book.rlhf, book.group_rows,
                              per_row=book.group_formulas, freeze_columns=3)


def write_note_scenarios(wb, book: Book, styles: Styles) -> None:
    if book.note_rows:
        _write_scenario_sheet(wb, book, styles, book.note_scenarios, book.note_rows, freeze_columns=3)


