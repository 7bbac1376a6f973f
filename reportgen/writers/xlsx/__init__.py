"""The Excel workbook: every memory term as a live formula over editable inputs.

Sheets: Guide, Decision (a preset with a purchase section), Plan, Charts, Scenarios, RLHF, Notes,
NoteScenarios, Terms, Assumptions, Models, GPUs, Precisions, Dtypes, Optimizers, Choices (the Guide
describes each).

Every term column is `formulas.to_excel(term.expr)` of the one term table (terms.py); the Models
sheet's shape terms, RLHF group cells, note figures, checks and labels are expressions rendered the
same way, and their cached values are the same expressions evaluated in Python. The writer never
types a term formula. Only the Plan's searches (SUMPRODUCT over named columns, from ranking.PLAN_ORDER
and RENT_ORDER) and the Charts' reads of the Plan are formula strings built here: the expression
language has no ranges.

Modules: layout (columns, tables, defined names, styles), book (every table's columns and Python
values), checks (per-row checks from the input, rule and catalog tables), labels (the live scenario
label), requirements (the live requirement text the Plan matches), plan (Plan and Charts), scenarios
(Scenarios, RLHF, NoteScenarios), notes, catalogs (Terms, Assumptions, the catalogs, Choices), guide,
stream (the data rows as raw SpreadsheetML), columns (a sweep block's Scenarios rows as columns).

Why XlsxWriter: openpyxl cannot store a formula's cached value (it writes `<v/>`), so viewers that
do not recalculate (previewers, mail clients, pandas) would show empty cells. XlsxWriter stores the
Python value next to each formula (`write_formula(..., value)`) and fills the chart caches
(`values_data`). openpyxl is used only to read workbooks back, in tests.

Why the data rows bypass XlsxWriter: a 100,000-scenario sweep has 12 million cells, and XlsxWriter
costs ~30 µs a cell. XlsxWriter writes everything else (headers, widths, validations, filters, panes,
print setup, charts, styles, the small sheets); the tables' data rows are registered with
`StreamingWorkbook.stream_rows` and written as SpreadsheetML when the workbook closes, each formula
column that only differs by row number as one shared formula (stream.py). Every workbook, small
or large, takes this path, so the LibreOffice tests check the one the big sweeps use.

Why constant_memory: what XlsxWriter writes streams to disk in order. Everything is therefore
written row by row, top to bottom, and the chart caches are passed in explicitly (XlsxWriter cannot
read them back from a streamed sheet).
"""
from __future__ import annotations

from datetime import datetime, timezone

from ...errors import OutputError
from .. import LIVE_ROWS
from ...report.build import Report
from .book import build_book
from .decision import write_decision
from .catalogs import write_assumptions, write_choices, write_lookup_tables, write_terms
from .guide import write_guide
from . import layout
from .layout import Styles
from .notes import write_notes
from .plan import write_charts, write_plan
from .scenarios import write_note_scenarios, write_rlhf, write_scenarios
from .stream import StreamingWorkbook

SHEET_WRITERS = (write_guide, write_decision, write_plan, write_charts, write_scenarios, write_rlhf, write_notes,
                 write_note_scenarios, write_terms, write_assumptions, write_lookup_tables, write_choices)


def _created(generated_at: str) -> datetime:
    """The document's creation time: the report's injected timestamp (reproducible), in UTC."""
    return datetime.fromisoformat(generated_at).astimezone(timezone.utc).replace(tzinfo=None)


def scenario_sheet_rows(report: Report) -> int:
    """The Scenarios sheet's last row: a row per single scenario and per RLHF role, below the headers
    (a sweep block's rows counted, not made)."""
    return layout.SCENARIO_FIRST_ROW - 1 + sum(part.single_scenarios() for part in report.results.parts)


def scenario_count(report: Report) -> int:
    """The Scenarios sheet's data rows."""
    return scenario_sheet_rows(report) - layout.SCENARIO_FIRST_ROW + 1


def write(report: Report, path, lang: str = "en", live_rows: int | None = LIVE_ROWS) -> None:
    """Write the workbook to `path`, its labels and texts in `lang` (notes carry both languages); live formulas on
    `live_rows` rows of Scenarios (None: all): the Plan's picks and the first rows; the rest values. A sweep past
    Excel's row limit is refused before any work, not written as a file Excel cannot open."""
    rows = scenario_sheet_rows(report)
    if rows > layout.EXCEL_MAX_ROWS:
        raise OutputError(f"the workbook's Scenarios sheet would need {rows:,} rows, past Excel's limit of "
                          f"{layout.EXCEL_MAX_ROWS:,} rows per sheet: build json, html or pdf for this preset, "
                          f"or split its matrix", source=str(report.preset.name))
    book = build_book(report, lang, live_rows)
    wb = StreamingWorkbook(str(path), {
        "constant_memory": True,
        # Belt and braces: text is written with write_string anyway, never parsed.
        "strings_to_formulas": False, "strings_to_urls": False, "strings_to_numbers": False,
    })
    wb.set_properties({"title": report.preset.title_in(lang), "subject": book.t("workbook.subject"),
                       "author": f"reportgen {report.version}", "created": _created(report.generated_at),
                       "comments": f"preset {report.preset.name}"})
    styles = Styles(wb)
    for write_sheet in SHEET_WRITERS:
        write_sheet(wb, book, styles)
    book.names.define(wb)  # after every sheet: they register the names their formulas use
    wb.close()
