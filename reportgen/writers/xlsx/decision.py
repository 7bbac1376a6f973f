"""Decision: the fleet the report recommends, owning it against renting the same GPU-hours, as live formulas.

The planner edits the period (weeks), each pool's GPU type, GPU count and busy GPU-hours, or an assumption
(PUE, electricity price, hosting, amortisation) or a GPU's prices, and every cost recomputes. The formulas are
fleet.py's cost terms rendered by formulas.to_excel, their cached values the same terms evaluated in Python;
only the fleet row's SUMs are written here (the expression language has no ranges). The schedule below is
the plan's, as values: a fleet search is not a formula."""
from __future__ import annotations

from typing import Callable

from ...planning.fleet import FLEET_TERMS, HORIZON_TERMS, POOL_TERMS, SECONDS_PER_WEEK, SUMMED, CostTerm, cost_terms
from ...model.formulas import IF, Var, to_excel
from .book import Book
from .layout import Styles, Table, add_sheet, fit_row, page_setup, row_context, write_value

INPUTS = ("gpu", "num_gpus", "owned_gpus", "busy_gpu_hours", "new_busy_gpu_hours")  # a pool's editable cells, A-E
POOL_COLUMNS = INPUTS + tuple(t.name for t in POOL_TERMS)
INPUT_UNITS = {"gpu": "text", "num_gpus": "count", "owned_gpus": "count", "busy_gpu_hours": "gpu_hours",
               "new_busy_gpu_hours": "gpu_hours"}


def _letter(name: str) -> str:
    return chr(ord("A") + POOL_COLUMNS.index(name))


def write_decision(wb, book: Book, styles: Styles) -> None:
    d = book.report.decision
    if d is None or d.choice.best is None:
        return
    t, a, gpus = book.t, book.report.assumptions, book.report.gpus
    ws = add_sheet(wb, "Decision")
    ws.set_column(0, 0, 30)
    ws.set_column(1, len(POOL_COLUMNS) - 1, 14)
    ws.write_string(0, 0, t("decision.title"), styles.title)
    fit_row(ws, 1, [(t("decision.intro"), 120)])
    ws.merge_range(1, 0, 1, 7, t("decision.intro"), styles.wrap)

    best = d.choice.best
    pool_values, sums, fleet = cost_terms(best.pools, d.portfolio.horizon_seconds, gpus, a)
    # the period: weeks (input), then its hours and years (rows 4-6)
    weeks = d.portfolio.horizon_seconds / SECONDS_PER_WEEK
    ws.write_string(3, 0, t("decision.horizon_weeks"), styles.bold)
    ws.write_number(3, 1, weeks, styles.input["decimal"])
    ws.data_validation(3, 1, 3, 1, {"validate": "decimal", "criteria": ">", "value": 0,
                                    "error_message": t("decision.horizon_weeks")[:255]})
    cells = {"horizon_weeks": "$B$4"}
    for r, term in enumerate(HORIZON_TERMS, start=4):
        cells[term.name] = f"$B${r + 1}"
        _formula(ws, book, r, 1, term, cells.get, fleet[term.name], styles)
        ws.write_string(r, 0, t(f"decision.{term.name}"), styles.text)

    # the pools: one row each, then the fleet's sums
    header = 7
    for c, name in enumerate(POOL_COLUMNS):
        kind = "input" if name in INPUTS else "formula"
        ws.write_string(header, c, t(f"decision.{name}"), styles.header[kind])
    ws.set_row(header, 42)  # three lines of a wrapped label
    first = header + 1
    for r, (pool, values) in enumerate(zip(best.pools, pool_values), start=first):
        ws.write_string(r, 0, pool.gpu, styles.input["text"])
        ws.data_validation(r, 0, r, 0, {"validate": "list",
                                        "source": "=" + book.names.keys(book.lookups["GPUs"])})
        for name in INPUTS[1:]:
            c = POOL_COLUMNS.index(name)
            ws.write_number(r, c, getattr(pool, name), styles.input[INPUT_UNITS[name]])
            ws.data_validation(r, c, r, c, {"validate": "integer" if INPUT_UNITS[name] == "count" else "decimal",
                                            "criteria": ">=", "value": 0})
        row_cell = lambda n, r=r: f"{_letter(n)}{r + 1}" if n in POOL_COLUMNS else cells.get(n)  # noqa: E731
        for term in POOL_TERMS:
            _formula(ws, book, r, POOL_COLUMNS.index(term.name), term, row_cell, values[term.name], styles)
    last = first + len(best.pools) - 1
    total = last + 1
    ws.write_string(total, 0, t("decision.fleet"), styles.bold)
    for k in SUMMED:
        col = _letter(k)
        fmt = styles.value[INPUT_UNITS.get(k) or _unit(k)]
        ws.write_formula(total, POOL_COLUMNS.index(k), f"=SUM({col}{first + 1}:{col}{last + 1})", fmt, sums[k])
    cells.update({k: f"${_letter(k)}${total + 1}" for k in SUMMED})

    # what follows from the sums, one per row; then the verdict
    r = total + 2
    for term in FLEET_TERMS:
        ws.write_string(r, 0, t(f"decision.{term.name}"), styles.text)
        _formula(ws, book, r, 1, term, cells.get, fleet[term.name], styles)
        cells[term.name] = f"$B${r + 1}"
        r += 1
    verdict = IF(Var("own_usd").lt(Var("rent_usd")), t("decision.owning_cheaper"), t("decision.renting_cheaper"))
    ws.write_string(r, 0, t("decision.verdict"), styles.bold)
    ws.write_formula(r, 1, "=" + to_excel(verdict, _context(book, cells.get)), styles.bold,
                     t("decision.owning_cheaper") if sums["own_usd"] < sums["rent_usd"] else t("decision.renting_cheaper"))

    # the schedule, as the plan found it
    r += 2
    ws.write_string(r, 0, t("decision.schedule"), styles.subtitle)
    r += 1
    for col, key in enumerate(("job", "kind", "gpu", "gpus", "start_week", "end_week", "busy_gpu_hours")):
        ws.write_string(r, col, t(f"decision.col.{key}"), styles.header["id"])
    jobs = {j.name: j for j in d.portfolio.jobs}
    for pool in best.pools:
        for slot in pool.slots:
            r += 1
            job = jobs[slot.job]
            option = d.planned[job.name][pool.gpu].option
            for col, value, unit in ((0, job.name_in(t.lang), "text"), (1, t(f"decision.kind.{job.kind}"), "text"),
                                     (2, pool.gpu, "text"), (3, slot.gpus, "count"),
                                     (4, slot.start_seconds / SECONDS_PER_WEEK, "decimal"),
                                     (5, slot.end_seconds / SECONDS_PER_WEEK, "decimal"),
                                     (6, option.busy_gpu_hours, "gpu_hours")):
                write_value(ws, r, col, value, styles.value[unit])
    page_setup(ws, header_rows=0, print_columns=len(POOL_COLUMNS), print_rows=r + 1)


def _unit(name: str) -> str:
    return next(term.unit for term in POOL_TERMS if term.name == name)


def _context(book: Book, cell: Callable[[str], str | None]):
    """Names as cells of this sheet, else assumptions' defined names; GPU lookups over the GPUs sheet."""
    return row_context(Table("Decision", (), 1, 0), book.lookups, book.names, lambda n: cell(n))


def _formula(ws, book: Book, r: int, c: int, term: CostTerm, cell: Callable[[str], str | None], value, styles: Styles
             ) -> None:
    ws.write_formula(r, c, "=" + to_excel(term.expr, _context(book, cell)), styles.value[term.unit], value)

