"""Notes: claims, verdicts and live figures over the NoteScenarios rows."""
from __future__ import annotations

import re

from dataclasses import replace

from ...model.formulas import AND, IF, ExcelContext, Var, to_excel
from ...model.units import GiB
from .book import Book
from .layout import GIB, OK, Styles, add_sheet, fit_row, page_setup, plain, write_value


# ---------------------------------------------------------------------------------------------
# Notes: claims, verdicts and live figures over the NoteScenarios rows

FIGURE_FORMAT = {"bytes": "bytes", "count": "count", "gpus": "count", "ratio": "ratio", "percent": "percent", "seconds": "seconds"}


def _explanation(text: str) -> str:
    """Figures are referenced as {key} in the prose; in the workbook they are the rows below."""
    return re.sub(r"\{(\w+)(?::[^}]*)?\}", r"[\1]", text)


def write_notes(wb, book: Book, styles: Styles) -> None:
    notes = book.report.notes
    if not notes:
        return
    ws = add_sheet(wb, "Notes")
    widths = (18, 70, 20, 9, 12)
    for c, width in enumerate(widths):
        ws.set_column(c, c, width)
    t = book.t
    ws.write_string(0, 0, t("notes.title"), styles.title)
    r = 2
    zh = t.lang == "zh"
    for note in notes:
        ws.write_string(r, 0, note.id, styles.subtitle)
        ws.write_string(r, 1, t("notes.verdict", verdict=t(f"note_verdict.{note.verdict}")), styles.subtitle)
        r += 1
        rows = t("notes.sep").join(t("notes.scenario_row", scenario=k, row=book.note_cells[(note.id, k)])
                                   for k in note.scenarios)
        # in the book's language; the claim as the article wrote it (Chinese), an English book adding its
        # translation in the same cell (both books keep one layout: their formulas sit in the same cells)
        texts = ((("article", note.article_zh), ("claim", note.claim_zh), ("setting", note.setting_zh),
                  ("explanation", _explanation(note.explanation_zh)), ("source", note.source_zh)) if zh else
                 (("article", note.article), ("claim", f"{note.claim_zh}\n{note.claim_en}"),
                  ("setting", note.setting_en), ("explanation", _explanation(note.explanation_en)),
                  ("source", note.source)))
        for key, text in texts + (("scenarios", rows),):
            label = t(f"notes.{key}")
            fit_row(ws, r, [(text, widths[1])])
            ws.write_string(r, 0, label, styles.bold)
            write_value(ws, r, 1, text, styles.wrap)
            r += 1
        for c, head in enumerate(t(f"notes.{k}") for k in ("figure", "label", "value", "unit", "in_gib")):
            ws.write_string(r, c, head, styles.header["formula"])
        r += 1
        ctx = _note_context(book, note.id)
        value_ctx = lambda row: replace(ctx, cell=lambda n: f"C{row}")  # noqa: E731 - the figure's own cell
        # Blank while a scenario of the note fails its check (a planner's edit on NoteScenarios).
        valid = AND(*(Var(f"{key}.check").eq(OK) for key in note.scenarios))
        for fig in note.figures:
            label = fig.label_zh if zh else fig.label_en
            fit_row(ws, r, [(label, widths[1])])
            unit = FIGURE_FORMAT.get(fig.unit, "general")
            if unit == "count" and not float(fig.value).is_integer():
                unit = "decimal"  # e.g. 4.127 bits per weight
            ws.write_string(r, 0, fig.key, styles.text)
            ws.write_string(r, 1, label, styles.wrap)
            ws.write_formula(r, 2, "=" + to_excel(IF(valid, fig.expr, ""), ctx), styles.value[unit], plain(fig.value))
            ws.write_string(r, 3, t.unit(fig.unit), styles.text)
            if fig.unit == "bytes":
                in_gib = IF(Var("value").eq(""), "", Var("value") / GIB)
                ws.write_formula(r, 4, "=" + to_excel(in_gib, value_ctx(r + 1)), styles.value["gib"], fig.value / GiB)
            r += 1
        r += 1
    page_setup(ws, header_rows=0)


def _note_context(book: Book, note_id: str) -> ExcelContext:
    table = book.note_scenarios

    def cell(name: str) -> str | None:
        if "." not in name:
            return None
        key, term = name.split(".", 1)
        return table.cell(term, book.note_cells[(note_id, key)])
    return book.context(table, cell)


