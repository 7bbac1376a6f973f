"""Plan and Charts: per requirement and GPU type, the cheapest fitting configuration to buy and the
cheapest to rent, by formulas.

A Plan row names a requirement (report.requirement: what the job is) and a GPU type. The requirement
is written as its text, as the requirement cells (requirements.py) of the job's rows show it, and the
Plan row plans that text while some row still shows it: a planner's edit of one of those rows (even
the first, or a typo in its model) moves that row to another requirement and leaves the Plan row
planning the rest. When no row shows it any more (every row's goal edited, or the job's only row),
the Plan row follows the requirement's first row as written (LINK_ROW), as the planner's edit of the
whole job asks. Its model and workload cells are read from the text it plans. The rankings are
ranking.PLAN_ORDER (to buy) and RENT_ORDER (to rent), rendered here. Each candidate row carries its plan
keys (NO_FIT unless it may be picked and fits); a Plan row takes, key by key, the minimum over the
candidates of its requirement × GPU type among those that tie on the earlier keys: the
lexicographically first, as recommend() picks it. Across GPU types, the first of the picks by the
same order is marked (cheapest overall to buy, to rent).

What a Plan row searches: the writer puts the rows of one requirement together (book.sheet_runs) and
links each Plan row's LINK_ROW to the first of them, so a row counts its requirement's rows (COUNTIF), takes the
linked row as the first while all of them stand from there (else finds the first by MATCH), and, while
they are still together, takes its minima over those rows alone; else (a planner moved a row to
another requirement, or appended one below the table) over every filled row, which gives the same
answer more slowly. A text too long for Excel's lookups compares every candidate row instead. A Plan
row thus costs one counting pass plus its requirement's rows per minimum, instead of every candidate
row per minimum (with minima over every row, the 1,000 Plan rows of a 10,000-scenario sweep took
about 100 s of LibreOffice's 133 s load and recalculation; with the count and the first by comparison
with every row, 7 s of 19 s; LibreOffice 7.4's COUNTIF and MATCH scan the column too, but faster).
The cheapest marks compare the Plan rows of the requirement the same way, known by a number
(requirement_key) rather than by its text.

Every formula of a Plan or Charts row reads its own row's cells and named columns (LINK_ROW's link is
absolute), so a planner may copy a Plan row and edit its GPU type and requirement text; Charts show the Plan's
picks to buy in Plan order.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Callable, Mapping, Sequence

from ...model.estimate import bar_part_label
from ...model.formulas import ExcelContext, Expr, Num, Var, to_excel
from ...report.i18n import Catalogue
from ...model.inputs import RLHF_ALGORITHMS
from ...planning.ranking import PLAN_ORDER, RENT_ORDER
from ...report.build import Result
from ...model.terms import BAR_PARTS, GROUP_BAR, SINGLE_BAR
from ...report.charts import PALETTE
from .book import RLHF_PLAN, SCENARIO_PLAN, Book, PlanFields, compiled_columns, plan_key_column
from .checks import unless_assumptions_fail
from .layout import (DASH, GIB, MAX_ROW, NO_FIT, SCENARIO_FIRST_ROW, Column, Styles, Table, add_sheet,
                     column_header, page_setup, write_header, write_rows)
from .requirements import SEP
from .stream import ROW


@dataclass(frozen=True)
class Ranking:
    """One of the plan's orders and the Plan's helper columns for it: `<prefix>_<key>`, each key's
    minimum among the candidates that tie on the earlier ones."""
    prefix: str
    order: tuple[str, ...]

    def column(self, key: str) -> str:
        return f"{self.prefix}_{key}"

    @property
    def found(self) -> str:
        """The last key's column: unique per candidate row (its place in its table), NO_FIT if none fits."""
        return self.column(self.order[-1])


TO_BUY, TO_RENT = Ranking("best", PLAN_ORDER), Ranking("rent", RENT_ORDER)
FOUND = TO_BUY.found

# The planner's keys: a Plan row plans the candidates of its GPU type whose requirement text is its
# requirement cell's: the text written while a row shows it, else its first row's (see above; a link
# alone would follow an edit of the row it points at and take the Plan row away from the requirement
# it was written for). A planner may paste another requirement's text.
WRITTEN = Column("requirement_written", "Requirement as written (paste another job's requirement to plan it)",
                 "text", "input", 40)
PLAN_MATCH = (Column("gpu", "GPU type", "text", "input", 16),
              Column("requirement", "Requirement planned: as written while a row shows it, else its first row's",
                     "text", "formula", 40))
# The requirement text's first two parts, for readers (and the candidate sheet the workload implies).
PLAN_NAMES = (Column("model", "Model", "text", "formula", 16), Column("workload", "Workload", "text", "formula", 10))
# The pick's figures, as expressions over the candidate table's columns (None: the table's own,
# PlanFields.figures).
PLAN_DETAILS = (
    Column("index", "#", "count", "formula", 5, Var("index")),
    Column("label", "Cheapest configuration that fits with k", "text", "formula", 62, Var("label")),
    Column("total_gpus", "GPUs", "count", "formula", 6, Var(plan_key_column("total_gpus"))),
    Column("zero_stage", "ZeRO stage", "count", "formula", 6, Var("zero_stage")),
    Column("tp_size", "Tensor parallel", "count", "formula", 7, Var("tp_size")),
    Column("device_total_gib", "Device total per GPU", "gib", "formula", 10, Var("device_total") / GIB),
    Column("recommended_gib", "Recommended per GPU", "gib", "formula", 11, Var("recommended") / GIB),
    Column("headroom_gib", "Headroom per GPU", "gib", "formula", 10, Var("headroom_bytes") / GIB),
    Column("purchase_usd", "Purchase cost", "usd", "formula", 12, Var("purchase_usd")),
    Column("hourly_usd", "Cloud cost per hour", "usd", "formula", 10, Var("hourly_usd")),
    Column("train_hours", "Time to train (hours)", "hours", "formula", 10),
    Column("iteration_seconds", "Time per RLHF iteration (s)", "seconds", "formula", 10),
    Column("tokens_per_s_per_user", "Output tokens per second per user (inference)", "tokens_per_s", "formula", 10),
    Column("rent_usd", "Cost to rent (training: the run; else an hour)", "usd", "formula", 12, Var("rent_usd")),
)
RENT_DETAILS = (
    Column("rent_label", "Cheapest configuration to rent on this GPU type", "text", "formula", 40, Var("label")),
    Column("rent_pick_usd", "Its cost to rent", "usd", "formula", 12, Var("rent_usd")),
)
RANKING_LABELS = {
    TO_BUY: {"purchase_usd": "To buy: lowest cost of a fitting candidate (10^15: none)",
             "total_gpus": "then fewest GPUs", "plan_seconds": "then fastest (s)",
             "index": "then first row in table: the pick"},
    TO_RENT: {"rent_usd": "To rent: lowest cost of a fitting candidate (10^15: none)",
              "purchase_usd": "then lowest purchase cost", "total_gpus": "then fewest GPUs",
              "plan_seconds": "then fastest (s)", "index": "then first row in table: the pick to rent"},
}
# The first row of the requirement when written, kept by a link (it follows rows inserted above): the
# search tries the rows from it before looking the text up (see _search).
LINK_ROW = Column("link_row", "Its first row when written (in table): searched first", "count", "helper", 8,
                  special="link",
                  help="need not be edited with the requirement: when that row no longer has its text, the search "
                       "looks the text up (slower on a large sweep)")
# Where a Plan row searches, in rows of its candidate table (1 = the first data row).
WRITTEN_ROWS = Column("written_rows", "Rows showing the requirement as written", "count", "helper", 9,
                      help="0: no row shows it any more; the Plan row then plans its first row's requirement")
SEARCH = (
    Column("requirement_rows", "Rows of this requirement (on its candidate sheet)", "count", "helper", 9),
    Column("requirement_first", "Its first row (in table)", "count", "helper", 8),
    Column("together", "Its rows stand together (1/0)", "flag", "helper", 8,
           help="1: the minima read only the requirement's rows; 0: every row (the same answer, slower)"),
    Column("search_from", "Searched from row (in table)", "count", "helper", 8),
    Column("search_to", "Searched to row (in table)", "count", "helper", 8),
)
# Which Plan rows the cheapest marks compare, in rows of the Plan (1 = the first data row): those of
# the row's requirement, known by a number (a text compared with every Plan row cost 8 s of
# LibreOffice's recalculation of a 10,000-scenario sweep).
PLAN_SEARCH = (
    Column("requirement_key", "The requirement's first row on its candidate sheet (negative: RLHF)", "count",
           "helper", 9, help="the same number in the Plan rows of one requirement"),
    Column("plan_rows", "Plan rows of this requirement", "count", "helper", 8),
    Column("plan_first", "Its first Plan row (in table)", "count", "helper", 8),
    Column("plan_together", "Its Plan rows stand together (1/0)", "flag", "helper", 8,
           help="1: the cheapest marks compare only the requirement's Plan rows; 0: every Plan row (the same "
                "answer, slower)"),
    Column("plan_from", "Marks compare from Plan row (in table)", "count", "helper", 8),
    Column("plan_to", "Marks compare to Plan row (in table)", "count", "helper", 8),
)
# The planner's keys, the answers, then the helpers the answers are found with.
PLAN_TABLE_COLUMNS = (
    PLAN_NAMES + PLAN_MATCH + PLAN_DETAILS
    + (Column("cheapest", "Cheapest to buy for this requirement (1/0)", "flag", "helper", 12),)
    + RENT_DETAILS
    + (Column("cheapest_to_rent", "Cheapest to rent for this requirement (1/0)", "flag", "helper", 12),
       WRITTEN,  # first after the printed columns: the planned requirement shows the same text
       Column("sheet", "Candidates on", "text", "helper", 10,
              help="RLHF for the RLHF algorithms (their groups), else Scenarios"),
       Column("scenarios_tried", "Scenarios tried", "count", "helper", 9))
    + (LINK_ROW, WRITTEN_ROWS) + SEARCH + PLAN_SEARCH
    + tuple(Column(ranking.column(k), label, "usd" if k.endswith("_usd") else "count", "helper", 11)
            for ranking, labels in RANKING_LABELS.items() for k, label in labels.items())
    + (Column("chart_order", "Picks so far (Charts row)", "count", "helper", 9),)
)
PICKS = ((TO_BUY, PLAN_DETAILS), (TO_RENT, RENT_DETAILS))  # each ranking's pick and its figures


def _candidate_tables(book: Book) -> list[tuple[Table, PlanFields]]:
    """Scenarios, and RLHF when the workbook has groups (the order _by_sheet expects)."""
    return [(book.scenarios, SCENARIO_PLAN)] + ([(book.rlhf, RLHF_PLAN)] if book.group_rows else [])


def _by_sheet(plan: Table, per_table: Sequence[str]) -> str:
    """One formula per candidate table, chosen by the row's `sheet` cell."""
    if len(per_table) == 1:
        return per_table[0]
    return f'IF(${plan.ref("sheet")}="RLHF",{per_table[1]},{per_table[0]})'


def _span(first: str, count: str, together: str, rows: str) -> dict[str, str]:
    """The first and last row searched: the `count` rows from `first` while they stand together,
    else all `rows`."""
    return {"from": f"IF({together}=1,{first},1)", "to": f"IF({together}=1,{first}+{count}-1,{rows})"}


def _least(selected: str, values: str) -> str:
    """The least of `values` where `selected` (1/0 per row) holds, NO_FIT if nowhere: MIN inside SUMPRODUCT
    makes Excel and LibreOffice alike evaluate the arrays without an array formula."""
    return f"SUMPRODUCT(MIN({selected}*{values}+(1-{selected})*{NO_FIT}))"


# Excel's COUNTIF and MATCH take a text of at most 255 characters, COUNTIF's with its "=": a text is
# looked up when shorter than this.
LOOKUP_TEXT_LIMIT = 255


def lookup_literal(text: str) -> str:
    """`text` for COUNTIF or MATCH to take as it is: their wildcards *, ? and ~ escaped by ~."""
    for char in "~*?":
        text = f'SUBSTITUTE({text},"{char}","~{char}")'
    return text


def _filled_rows(book: Book, table: Table) -> str:
    return f"({book.names.last_row(table)}-{table.first_row - 1})"


def _count(text: str, name: str) -> str:
    """The rows of `name` showing `text` (none for a blank one). Excel refuses a lookup text of 255 characters
    or more, and a requirement text can be longer (RLHF's): those compare every row."""
    literal = lookup_literal(text)
    return (f'IF({text}="",0,IF(LEN({literal})<{LOOKUP_TEXT_LIMIT},COUNTIF({name},"="&{literal}),'
            f'SUMPRODUCT(({name}={text})*1)))')


def _search(book: Book, plan: Table, table: Table) -> dict[str, str]:
    """Plan row formulas: its requirement's rows on the candidate table (none for a blank requirement), the
    first of them, whether they stand together, and so the rows its minima read."""
    text, name = f"${plan.ref('requirement')}", book.names.of(table, "requirement")
    count, first, together = (f"${plan.ref(c)}" for c in ("requirement_rows", "requirement_first", "together"))
    block = f"INDEX({name},{first}):INDEX({name},{first}+{count}-1)"
    span = _span(first, count, together, _filled_rows(book, table))
    rows = book.names.of(table, "row_in_table")
    # The count by COUNTIF (a comparison with every row from each of 1,000 Plan rows was 7 s of a
    # 10,000-scenario sweep's 19 s). The first row: when every row of the text stands in the `count`
    # rows from the linked row, that row (the writer links each requirement's first row); else
    # MATCH, about 2 s of LibreOffice's 9-10 s on that sweep, which scans the rows above the first.
    # Lookups take the text literally (~ escapes the wildcards both read); MATCH takes the cell itself
    # when there is nothing to escape (LibreOffice's MATCH of a computed text took 5 s more); a text too
    # long for them compares every row (_count).
    literal, linked = lookup_literal(text), f"MAX(${plan.ref('link_row')},1)"
    written = f"${plan.ref(WRITTEN.name)}"
    # an error (the linked row is gone, or its rows run past the table) means: not there
    at_link = (f"IFERROR(AND(${plan.ref('link_row')}>=1,INDEX({name},{linked})={text},"
               f"SUMPRODUCT((INDEX({name},{linked}):INDEX({name},{linked}+{count}-1)={text})*1)={count}),FALSE)")
    return {WRITTEN_ROWS.name: _count(written, name),
            # no row shows the written text: the first row's (a deleted row's link is 0: the written text)
            "requirement": f'IF(OR(${plan.ref(WRITTEN_ROWS.name)}>0,${plan.ref("link_row")}<1),{written},'
                           f'IFERROR(INDEX({name},${plan.ref("link_row")}),{written}))',
            "requirement_rows": _count(text, name),
            "requirement_first": f"IF({count}=0,1,IF({at_link},{linked},IF(LEN({literal})<{LOOKUP_TEXT_LIMIT},"
                                 f"IF({literal}={text},MATCH({text},{name},0),MATCH({literal},{name},0)),"
                                 f"{_least(f'({name}={text})', rows)})))",
            "together": f"IF({count}=0,0,IF(SUMPRODUCT(({block}={text})*1)={count},1,0))",
            "search_from": span["from"], "search_to": span["to"]}


def _plan_search(book: Book, plan: Table) -> dict[str, str]:
    """Plan row formulas: its requirement's key, and the Plan rows with the same key (itself among
    them), as _search finds candidate rows, by number."""
    keys, key = book.names.of(plan, "requirement_key"), f"${plan.ref('requirement_key')}"
    count, first, together = (f"${plan.ref(c)}" for c in ("plan_rows", "plan_first", "plan_together"))
    block = f"INDEX({keys},{first}):INDEX({keys},{first}+{count}-1)"
    span = _span(first, count, together, _filled_rows(book, plan))
    return {"requirement_key": f'=IF(${plan.ref("sheet")}="RLHF",-1,1)*${plan.ref("requirement_first")}',
            "plan_rows": f"=COUNTIF({keys},{key})", "plan_first": f"=MATCH({key},{keys},0)",
            "plan_together": f"=IF(COUNTIF({block},{key})={count},1,0)",
            "plan_from": "=" + span["from"], "plan_to": "=" + span["to"]}


def _minima(book: Book, plan: Table, table: Table) -> dict[str, str]:
    """Plan row formulas: the candidates tried, and each ranking's keys' minima over the rows of this
    row's requirement × GPU type that tie on the earlier keys (NO_FIT where no row fits), each over
    the searched rows."""
    start, end = f"${plan.ref('search_from')}", f"${plan.ref('search_to')}"
    name = lambda column: f"INDEX({book.names.of(table, column)},{start}):INDEX({book.names.of(table, column)},{end})"  # noqa: E731
    match = "*".join(f"({name(c.name)}=${plan.ref(c.name)})" for c in PLAN_MATCH)
    out = {"scenarios_tried": f"SUMPRODUCT({match}*{name('plan_candidate')})"}
    for ranking, _ in PICKS:
        selected = match
        for key in ranking.order:
            values = name(plan_key_column(key))
            out[ranking.column(key)] = _least(selected, values)
            selected += f"*({values}=${plan.ref(ranking.column(key))})"
    return out


def _pick_context(book: Book, table: Table, plan: Table, ranking: Ranking) -> ExcelContext:
    """Var(name) -> that column of the ranking's pick."""
    ctx = book.context(table)
    return replace(ctx, cell=lambda n: f"INDEX({book.names.of(table, n)},${plan.ref(ranking.found)})")


def _details(details: Sequence[Column], fields: PlanFields) -> list[Column]:
    """The figures as this candidate table computes them."""
    return [replace(c, expr=fields.figures[c.name]) if c.expr is None else c for c in details]


def _before(pairs: Sequence[tuple[str, str]]) -> str:
    """1 where the named range's row comes before this row's values in the ranking's order, else 0."""
    (rng, own), rest = pairs[0], pairs[1:]
    if not rest:
        return f"({rng}<{own})"
    return f"(({rng}<{own})+({rng}={own})*{_before(rest)})"


def _first_of_requirement(book: Book, plan: Table, ranking: Ranking) -> str:
    """1 on the row whose pick comes first by the ranking among the Plan rows of its requirement
    (those from plan_from to plan_to with its key)."""
    start, end = f"${plan.ref('plan_from')}", f"${plan.ref('plan_to')}"
    name = lambda column: f"INDEX({book.names.of(plan, column)},{start}):INDEX({book.names.of(plan, column)},{end})"  # noqa: E731
    same = f"({name('requirement_key')}=${plan.ref('requirement_key')})"
    before = _before([(name(ranking.column(k)), f"${plan.ref(ranking.column(k))}") for k in ranking.order])
    return f"=IF(${plan.ref(ranking.found)}>={NO_FIT},0,IF(SUMPRODUCT({same}*{before})=0,1,0))"


def _names(text: str) -> dict[str, str]:
    """Model and workload: a requirement text's parts before its first and second separator."""
    sep = f'"{SEP}"'
    first = f"FIND({sep},{text})"
    second = f"FIND({sep},{text}&{sep},{first}+{len(SEP)})"
    return {"model": f'IF({text}="","",LEFT({text},{first}-1))',
            "workload": f'IF({text}="","",MID({text},{first}+{len(SEP)},{second}-{first}-{len(SEP)}))'}


def plan_templates(book: Book, plan: Table) -> dict[str, str]:
    """Every Plan column's formula, the same in every row (so a copied row works)."""
    tables = _candidate_tables(book)
    per_table = [{**_search(book, plan, t), **_minima(book, plan, t)} for t, _ in tables]
    out = {n: "=" + _by_sheet(plan, [f[n] for f in per_table]) for n in per_table[0]}
    out.update({k: "=" + v for k, v in _names(f"${plan.ref('requirement')}").items()})
    # the candidate sheet by the text as written (the planned text is looked up on it)
    workload = _names(f"${plan.ref(WRITTEN.name)}")["workload"]
    groups = ",".join(f'{workload}="{a}"' for a in RLHF_ALGORITHMS)
    out["sheet"] = f'=IF(OR({groups}),"RLHF","Scenarios")'
    # No pick's label says why while an assumption is invalid (every candidate's check then fails).
    none = to_excel(unless_assumptions_fail(book.t, DASH), book.context(plan))
    for ranking, details in PICKS:
        for i, col in enumerate(details):
            per = [to_excel(_details(details, fields)[i].expr, _pick_context(book, t, plan, ranking))
                   for t, fields in tables]
            empty = none if col.name in ("label", "rent_label") else f'"{DASH}"'
            out[col.name] = f'=IF(${plan.ref(ranking.found)}>={NO_FIT},{empty},{_by_sheet(plan, per)})'
    out.update(_plan_search(book, plan))
    out["cheapest"] = _first_of_requirement(book, plan, TO_BUY)
    out["cheapest_to_rent"] = _first_of_requirement(book, plan, TO_RENT)
    cheapest, first = plan.letter("cheapest"), plan.first_row
    out["chart_order"] = f"=COUNTIF(${cheapest}${first}:{cheapest}{ROW},1)"
    return out


def _pick_values(book: Book, r: Result | None, ranking: Ranking, details: Sequence[Column],
                 compiled: dict[tuple[str, str], Callable]) -> dict[str, Any]:
    """A ranking's helper and figure cells for its pick `r` (None: nothing fits), from the candidate
    row's values and the same expressions as the formulas."""
    if r is None:
        return {**{ranking.column(k): NO_FIT for k in ranking.order}, **{c.name: DASH for c in details}}
    table, _, fields = book.candidates(r)
    key = (ranking.prefix, table.sheet)
    if key not in compiled:
        compiled[key] = compiled_columns(_details(details, fields), chained=False)
    candidate = book.row_of(r)
    return {**{ranking.column(k): candidate[plan_key_column(k)] for k in ranking.order},
            **dict(zip((c.name for c in details), compiled[key](candidate, book.report.assumptions)))}


def search_index(values: Sequence) -> dict[Any, list[int]]:
    """value -> [count, first, last] (rows 1-based) of every value shown in `values`: one pass, so that a
    search per Plan row is not a pass over every candidate row (a 100,000-scenario sheet, 1,000 Plan rows)."""
    out: dict[Any, list[int]] = {}
    for i, v in enumerate(values, start=1):
        hit = out.get(v)
        if hit is None:
            out[v] = [1, i, i]
        else:
            hit[0] += 1
            hit[2] = i
    return out


def search_values(index: Mapping[Any, list[int]], n: int, value) -> tuple[int, int, int, int, int]:
    """What _search's (and _plan_search's) formulas give for `n` rows (their search_index), searched for
    `value` (blank: none): its rows, the first of them, whether they stand together, and the first
    and last row searched."""
    count, first, last = index.get(value, (0, 1, 0)) if value != "" else (0, 1, 0)
    together = int(count > 0 and last - first + 1 == count)
    return count, first, together, first if together else 1, first + count - 1 if together else n


def plan_rows(book: Book) -> list[dict[str, Any]]:
    """The Python value of every Plan cell: report.recommendations laid out (the requirement as its
    rows show it), the picks' figures from the same expressions as the formulas. Computed once per
    book (the Plan and the Charts read them)."""
    if book.plan_values is None:
        book.plan_values = _plan_rows(book)
    return book.plan_values


def _plan_rows(book: Book) -> list[dict[str, Any]]:
    rows = []
    picks = 0
    compiled: dict[tuple[str, str], Callable] = {}
    texts: dict[str, tuple[dict, int]] = {}  # candidate sheet -> its rows' requirement texts, indexed
    recs = book.report.recommendations
    book.rows_of([rec.sample for rec in recs] + [r for rec in recs for e in rec.entries for r in (e.result, e.rent) if r])
    for rec in recs:
        sheet = "RLHF" if rec.workload in RLHF_ALGORITHMS else "Scenarios"
        text = book.row_of(rec.sample)["requirement"]
        table, candidates, _ = book.candidates(rec.sample)
        if table.sheet not in texts:
            texts[table.sheet] = (search_index(candidates.column("requirement")), len(candidates))
        search = dict(zip((c.name for c in SEARCH), search_values(*texts[table.sheet], text)))
        search[WRITTEN_ROWS.name] = search["requirement_rows"]  # as written, the text planned
        search[LINK_ROW.name] = book.row_of(rec.sample)["row_in_table"]
        key = (-1 if sheet == "RLHF" else 1) * search["requirement_first"]
        for entry in rec.entries:
            cheapest = int(rec.best is not None and rec.best.gpu == entry.gpu)
            picks += cheapest
            row = {"model": entry.model, "workload": entry.workload, "gpu": entry.gpu, "requirement": text,
                   WRITTEN.name: text,
                   "sheet": sheet, "scenarios_tried": entry.num_scenarios, "cheapest": cheapest,
                   "cheapest_to_rent": int(rec.cheapest_to_rent is not None and rec.cheapest_to_rent.gpu == entry.gpu),
                   "chart_order": picks, "requirement_key": key, **search}
            row.update(_pick_values(book, entry.result, TO_BUY, PLAN_DETAILS, compiled))
            row.update(_pick_values(book, entry.rent, TO_RENT, RENT_DETAILS, compiled))
            rows.append(row)
    keys = search_index([row["requirement_key"] for row in rows])
    for row in rows:
        row.update(zip((c.name for c in PLAN_SEARCH[1:]), search_values(keys, len(rows), row["requirement_key"])))
    return rows


def requirement_links(book: Book, r: Result) -> dict[str, str]:
    """A Plan row's LINK_ROW formula: the number in its table of the row of `r` (its recommendation's
    sample, the requirement's first row), by a link that follows rows inserted above it."""
    table, _, _ = book.candidates(r)
    cell = f"{table.sheet}!${table.letter('requirement')}${book.result_rows[r.index]}"
    return {LINK_ROW.name: f"=IFERROR(ROW({cell})-{table.first_row - 1},0)"}


def plan_table(book: Book) -> Table:
    n = sum(len(rec.entries) for rec in book.report.recommendations)
    return Table("Plan", PLAN_TABLE_COLUMNS, SCENARIO_FIRST_ROW, n, count_column="gpu")


def write_plan(wb, book: Book, styles: Styles) -> None:
    ws = add_sheet(wb, "Plan")
    plan = plan_table(book)
    write_header(ws, plan, styles, book.t)
    rows = plan_rows(book)
    links = dict(enumerate(requirement_links(book, rec.sample) for rec in book.report.recommendations
                           for _ in rec.entries))
    write_rows(wb, ws, plan, rows, plan_templates(book, plan), styles, links, shared_formulas=False)
    for flag in ("cheapest", "cheapest_to_rent"):
        col = plan.index[flag]
        ws.conditional_format(plan.first_row - 1, col, MAX_ROW, col,
                              {"type": "cell", "criteria": "==", "value": 1, "format": styles.highlight})
    ws.freeze_panes(SCENARIO_FIRST_ROW - 1, 3)
    ws.autofilter(1, 0, max(plan.last_row, plan.first_row) - 1, len(plan.columns) - 1)
    # printed: the picks to buy and to rent with their figures (whole columns: rows a planner adds too),
    # not the search's helper columns
    page_setup(ws, header_rows=2, print_columns=plan.index["cheapest_to_rent"] + 1, print_rows=MAX_ROW + 1)


# ---------------------------------------------------------------------------------------------
# Charts: the memory breakdown of each Plan pick, a single model's or an RLHF group's

# The stacked parts of a bar (GiB per GPU), the report's (terms.BAR_PARTS): the peak's parts, an RLHF pool's largest
# phase, the allocator's reserve, CUDA context and communication buffers; they add up to device_total. A single model's
# are its terms on Scenarios, a group's its bar_ terms on RLHF (its tightest pool's).
def _part_expr(names: Mapping[str, str | None], part: str) -> Expr:
    return Var(names[part]) / GIB if names[part] else Num(0)


CHART_PARTS = tuple(Column(f"{p}_gib", bar_part_label(p), "gib", "formula", 11, _part_expr(SINGLE_BAR, p))
                    for p in BAR_PARTS)
GROUP_PARTS = tuple(replace(c, expr=_part_expr(GROUP_BAR, p)) for c, p in zip(CHART_PARTS, BAR_PARTS))
# each part in the report's colour for it
PART_COLOURS = tuple(PALETTE[BAR_PARTS.index(p)] for p in BAR_PARTS)
CHART_COLUMNS = (
    (Column("pick", "#", "count", "id", 4),
     Column("plan_row", "Plan row (in table)", "count", "helper", 7),
     Column("sheet", "Candidates on", "text", "helper", 9),
     Column("recommendation", "Model · workload", "text", "formula", 24),
     Column(FOUND, "Row on its candidate sheet (in table)", "count", "helper", 9),
     Column("label", "Cheapest configuration", "text", "formula", 62))
    + CHART_PARTS
    + (Column("device_total_gib", "Device total", "gib", "formula", 10, Var("device_total") / GIB),)
)
FIGURES = CHART_COLUMNS[6:]  # the bar's: read from the pick's candidate row
SPARE_PICKS = 3  # chart rows beyond the written picks, for Plan rows a planner adds


def chart_rows(book: Book, plan: Table, charts: Table, picks: Sequence) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """Python values and formula templates of the Charts rows: the k-th row shows the k-th Plan row marked cheapest
    (the k-th of `picks`), from its candidate row on Scenarios or RLHF."""
    group_figures = GROUP_PARTS + FIGURES[-1:]
    values = {False: compiled_columns(FIGURES, chained=False), True: compiled_columns(group_figures, chained=False)}
    plan_position = {}
    for i, row in enumerate(plan_rows(book), start=1):
        plan_position.setdefault(row["chart_order"], i)
    rows = []
    candidates = book.rows_of(picks)
    for k in range(1, charts.num_rows + 1):
        row = {"pick": k, "plan_row": 0, "sheet": "", "recommendation": "", FOUND: 0, "label": ""}
        row.update({c.name: "" for c in FIGURES})
        if k <= len(picks):
            r, candidate = picks[k - 1], candidates[k - 1]
            row.update({"plan_row": plan_position[k], "sheet": "RLHF" if r.is_group else "Scenarios",
                        "recommendation": f"{r.model} · {r.workload}", FOUND: candidate["row_in_table"],
                        "label": candidate["label"]})
            row.update(zip((c.name for c in FIGURES), values[r.is_group](candidate, book.report.assumptions)))
        rows.append(row)
    p, found, sheet = (lambda c: book.names.of(plan, c)), charts.ref(FOUND), charts.ref("sheet")

    def on(table: Table) -> ExcelContext:  # the pick's row of a candidate sheet
        return replace(book.context(table), cell=lambda n: f"INDEX({book.names.of(table, n)},${found})")

    # (a book without RLHF groups has no group terms on RLHF)
    single, group = on(book.scenarios), on(book.rlhf) if GROUP_BAR["transient_peak"] in book.rlhf.index else None

    def figure(c: Column, g: Column) -> str:
        one = to_excel(c.expr, single)
        return f'IF(${sheet}="RLHF",{to_excel(g.expr, group)},{one})' if group is not None else one

    label = Column("label", "", "text", "formula", expr=Var("label"))

    plan_row = charts.ref("plan_row")
    templates = {
        "plan_row": f"=IF(${charts.ref('pick')}>MAX({p('chart_order')}),0,MATCH(${charts.ref('pick')},"
                    f"{p('chart_order')},0))",
        "sheet": f'=IF(${plan_row}=0,"",INDEX({p("sheet")},${plan_row}))',
        "recommendation": f'=IF(${plan_row}=0,"",INDEX({p("model")},${plan_row})&" · "&INDEX({p("workload")},'
                          f'${plan_row}))',
        FOUND: f"=IF(${plan_row}=0,0,INDEX({p(FOUND)},${plan_row}))",
        "label": f'=IF(${found}=0,"",{figure(label, label)})',
        **{c.name: f'=IF(${found}=0,"",{figure(c, g)})' for c, g in zip(FIGURES, group_figures)},
    }
    return rows, templates


def write_charts(wb, book: Book, styles: Styles) -> None:
    ws = add_sheet(wb, "Charts")
    picks = [rec.best.result for rec in book.report.recommendations if rec.best]
    table = Table("Charts", CHART_COLUMNS, SCENARIO_FIRST_ROW, len(picks) + SPARE_PICKS)
    rows, templates = chart_rows(book, plan_table(book), table, picks)
    write_header(ws, table, styles, book.t)
    write_rows(wb, ws, table, rows, templates, styles, shared_formulas=False)
    ws.freeze_panes(SCENARIO_FIRST_ROW - 1, 1)
    if rows:
        _breakdown_chart(wb, ws, table, rows, book.t)
    page_setup(ws, header_rows=0)


def _breakdown_chart(wb, ws, table: Table, rows: Sequence[Mapping[str, Any]], t: Catalogue) -> None:
    chart = wb.add_chart({"type": "bar", "subtype": "stacked"})
    first, last = table.first_row - 1, table.first_row + len(rows) - 2
    names = [r["label"] for r in rows]
    for colour, part in zip(PART_COLOURS, CHART_PARTS, strict=True):  # (a part without a colour was dropped)
        c = table.index[part.name]
        chart.add_series({
            "name": ["Charts", 1, c],
            "name_data": [column_header(t, "Charts", part)],
            "categories": ["Charts", first, table.index["label"], last, table.index["label"]],
            "categories_data": names,
            "values": ["Charts", first, c, last, c],
            # The cache: streamed sheets cannot be read back. Spare rows are empty.
            "values_data": [r[part.name] if r[part.name] != "" else None for r in rows],
            "fill": {"color": colour}, "gap": 60,
        })
    chart.set_title({"name": t("chart.title"), "name_font": {"size": 12}})
    # Axes stay visible (XlsxWriter writes <c:delete> only for hidden axes).
    chart.set_x_axis({"name": t("chart.axis"), "num_format": "0", "visible": True, "major_gridlines": {"visible": True}})
    chart.set_y_axis({"reverse": True, "visible": True, "num_font": {"size": 8}})
    chart.set_legend({"position": "bottom", "font": {"size": 8}})
    chart.set_size({"width": 1100, "height": 160 + 34 * len(rows)})
    ws.insert_chart(table.first_row + len(rows) + 1, 0, chart)
