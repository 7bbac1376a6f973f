"""Guide: what the workbook is and how to use it."""
from __future__ import annotations

from .book import Book
from .plan import SPARE_PICKS
from .layout import Styles, add_sheet, fit_row, page_setup, write_value


# The Guide after its header: (style, catalogue key); "h" keys name headings.
GUIDE = (
    ("h", "guide.h.what"), ("text", "guide.what"),
    ("h", "guide.h.styles"), ("input", "guide.input"), ("text", "guide.formula"), ("text", "guide.headers"),
    ("h", "guide.h.checks"), ("text", "guide.checks"),
    ("h", "guide.h.units"), ("text", "guide.units"),
    ("h", "guide.h.names"), ("text", "guide.names"),
    ("h", "guide.h.sheets"),
    *(("text", f"guide.{sheet}") for sheet in ("plan", "charts", "scenarios", "rlhf", "notes", "assumptions",
                                                 "catalogs")),
    ("h", "guide.h.add_scenario"), ("text", "guide.add_scenario"),
    ("h", "guide.h.add_plan"), ("text", "guide.add_plan"),
    ("h", "guide.h.add_model"), ("text", "guide.add_model"),
    ("h", "guide.h.printing"), ("text", "guide.printing"),
)


def _guide_lines(book: Book) -> list[tuple[str, str]]:
    """(style, text) rows of the Guide sheet."""
    t, rep, p = book.t, book.report, book.report.preset
    n_groups = len(book.group_rows)
    n_single = len(book.result_rows) - n_groups
    return [
        ("title", p.title_in(t.lang)),
        ("text", p.description_in(t.lang)),
        ("text", t("guide.preset", name=p.name, path=p.given_path or t("guide.bundled"), generated=rep.generated_at,
                   version=rep.version)),
        ("text", t("guide.counts", singles=n_single, groups=n_groups,
                   roles=len(book.scenario_rows) - n_single, skipped=len(rep.skipped))),
    ] + [(style, t(key, spare=SPARE_PICKS) if key == "guide.add_plan" else t(key)) for style, key in GUIDE
         ] + _values_lines(book) + ([("h", t("guide.h.goals")), ("text", t("guide.goals"))] if rep.goals else []) + (
        [("h", t("guide.h.decision")), ("text", t("guide.decision"))] if rep.decision and rep.decision.choice.best else [])


def _values_lines(book: Book) -> list[tuple[str, str]]:
    """Where Scenarios holds values rather than formulas (a big sweep past its live rows), and what to do about it."""
    values = book.value_rows()
    if not values:
        return []
    return [("h", book.t("guide.h.values")),
            ("text", book.t("guide.values", rows=len(book.scenario_rows), live=book.live_rows, values=values))]


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


