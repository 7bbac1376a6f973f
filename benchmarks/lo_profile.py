"""Where LibreOffice's recalculation of a workbook goes, by column group (not a test).

Run with the system Python, which has the UNO bridge (Debian `python3-uno`):

    /usr/bin/python3 benchmarks/lo_profile.py BOOK.xlsx PROFILE_DIR [SHEET!FIRST:LAST ...]

PROFILE_DIR: a soffice profile, e.g. tests/lo.py's make_profile(root, recalc=False) (single-threaded,
as the tests recalculate). One soffice loads the book and times calculateAll (best of three); then
each group in turn, in the order given, has its formulas replaced by their values, and the
recalculation is timed again: the drop is what that group cost, its formulas with what only they
made LibreOffice do (a lookup's scan of the column it reads). Groups are frozen cumulatively, so
the order matters where groups read each other. Without groups: Plan's whole sheet, then
Scenarios' column groups as the workbook lays them out (SCENARIO_GROUPS).

Runs of one book differ by a second or more here: compare drops of a second or more, or repeat.
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from lo_uno import best_calculate_all, loaded  # noqa: E402

FIRST_ROW = 3  # row 1: formula names, row 2: labels
# Scenarios' groups start at these columns (the writer's names, row 1): label and check, requirement,
# summary and inputs (values), then the terms by section (model, parameters to engine buffers,
# activations, KV cache and serving, phases and totals, time and cost), catalog rows, checks, plan keys
SCENARIO_GROUPS = ("label", "requirement", "allocated_peak_gib", "total_params", "model_params", "act_bytes",
                   "context_tokens", "activations", "peak_flops", "model_row", "input_problems_1", "row_in_table")


def used_end(ws) -> tuple[int, int]:
    """(last column, last row) of the sheet's used area, 0-based."""
    cursor = ws.createCursor()
    cursor.gotoEndOfUsedArea(False)
    end = cursor.getRangeAddress()
    return end.EndColumn, end.EndRow


def default_groups(doc) -> list[tuple[str, int, int]]:
    """(sheet, first column, last column), 0-based: the Plan sheet, then Scenarios' groups."""
    def names(sheet: str) -> list[str]:
        ws = doc.Sheets.getByName(sheet)
        row = ws.getCellRangeByPosition(0, 0, used_end(ws)[0], 0).getDataArray()[0]
        return [n for n in row if isinstance(n, str)]  # not the count cell after the last name
    plan, scenarios = names("Plan"), names("Scenarios")
    starts = sorted(scenarios.index(n) for n in SCENARIO_GROUPS if n in scenarios)
    return [("Plan", 0, len(plan) - 1)] + [("Scenarios", a, b - 1) for a, b in zip(starts, starts[1:] + [len(scenarios)])
                                           if b > a]


def parse_group(doc, text: str) -> tuple[str, int, int]:
    """'Sheet!A:C' -> (sheet, first column, last column)."""
    sheet, columns = text.split("!")
    ws = doc.Sheets.getByName(sheet)
    first, last = (ws.getCellRangeByName(f"{c}1").getCellAddress().Column for c in columns.split(":"))
    return sheet, first, last


def main() -> None:
    book, profile = Path(sys.argv[1]).resolve(), Path(sys.argv[2]).resolve()
    with loaded(book, profile) as (doc, load_s):
        groups = [parse_group(doc, g) for g in sys.argv[3:]] or default_groups(doc)
        before = best_calculate_all(doc)
        print(f"load {load_s:.1f} s, calculateAll {before:.2f} s", flush=True)
        for sheet, first, last in groups:
            ws = doc.Sheets.getByName(sheet)
            cells = ws.getCellRangeByPosition(first, FIRST_ROW - 1, last, used_end(ws)[1])
            cells.setDataArray(cells.getDataArray())  # formulas -> their values
            after = best_calculate_all(doc)
            head = ws.getCellRangeByPosition(first, 0, last, 0).getDataArray()[0]
            print(f"{sheet} {head[0]} … {head[-1]} ({last - first + 1} columns): {before - after:+.2f} s, "
                  f"calculateAll now {after:.2f} s", flush=True)
            before = after


if __name__ == "__main__":
    main()
