"""The plan's rankings, defined once: which configurations may be picked, and in what order.

Among the configurations of one requirement on one GPU type that may be picked (the term PLAN_FITS is 1:
the recommended budget fits, and a serving engine's pool holds its users; and the requirement's goal is
met), the plan takes the first by PLAN_ORDER: cheapest to buy, then fewest GPUs, then fastest (the term
plan_seconds), then the first considered (`index`: the scenario order of a sweep, the search order of
`reportgen plan`). Across GPU types, the first of those picks by the same order. The cheapest to rent is
the first by RENT_ORDER, the same way.

`reportgen plan` (planner.py), the report's summary (report.recommend) and the workbook's cached Plan
values call first_rows; the workbook's Plan formulas are rendered from the same orders
(writers/xlsx/plan.py).
"""
from __future__ import annotations

from typing import Mapping

from ..model.arrays import np

PLAN_FITS = "fits_recommended"
PLAN_ORDER = ("purchase_usd", "total_gpus", "plan_seconds", "index")
RENT_ORDER = ("rent_usd",) + PLAN_ORDER
# Nearest to a goal no fitting configuration meets: the fastest, then the first considered.
CLOSEST_ORDER = ("plan_seconds", "index")


def first_rows(order: tuple[str, ...], columns: Mapping[str, np.ndarray], eligible: np.ndarray,
               groups: np.ndarray) -> dict[int, int]:
    """Per group (an integer per row), the row that comes first by `order` (column names, each compared
    in turn, least first) among the eligible rows: {group: row}. Groups with no eligible row are absent."""
    rows = np.flatnonzero(eligible)
    if not len(rows):
        return {}
    keys = [np.asarray(columns[name])[rows] for name in reversed(order)] + [np.asarray(groups)[rows]]
    ranked = rows[np.lexsort(keys)]
    group_of = np.asarray(groups)[ranked]
    starts = np.flatnonzero(np.r_[True, group_of[1:] != group_of[:-1]])
    return dict(zip(group_of[starts].tolist(), ranked[starts].tolist()))
