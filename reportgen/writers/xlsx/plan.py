"""Plan and Charts: the cheapest fitting configuration per model × workload × GPU type, by formulas.

The ranking is report.PLAN_ORDER, rendered here. Each candidate row carries its plan keys (NO_FIT
unless it may be picked and fits); a Plan row takes, key by key, the minimum over the candidates of
its model × workload × GPU type among those that tie on the earlier keys: the lexicographically
first, as recommend() picks it. Each of those minima is one SUMPRODUCT over the filled candidate
rows, so a Plan row costs the number of candidates and the Plan grows linearly with the sweep.

Every formula of a Plan or Charts row reads its own row's cells and named columns, so a planner may
copy a Plan row and edit its model, workload or GPU type; Charts show the Plan's picks in Plan order.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Any, Mapping, Sequence

from ...formulas import ExcelContext, Var, to_excel
from ...i18n import Catalogue
from ...inputs import RLHF_ALGORITHMS
from ...report import PLAN_ORDER
from ...terms import PEAK_PARTS, TERM_BY_NAME
from .book import Book, compiled_columns, plan_key_column
from .layout import (DASH, GIB, MAX_ROW, NO_FIT, SCENARIO_FIRST_ROW, Column, Styles, Table, add_sheet, column_header,
                     page_setup, write_header, write_rows)
from .stream import ROW

# The chosen candidate's figures, as expressions over the candidate table's columns.
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
)


def best_column(key: str) -> str:
    return f"best_{key}"


BEST_LABELS = {"purchase_usd": "Lowest cost of a fitting candidate (10^15: none)",
               "total_gpus": "then fewest GPUs", "index": "then first row in table: the pick"}
# The planner's keys, the answer, then the helpers the answer is found with.
PLAN_TABLE_COLUMNS = (
    (Column("model", "Model", "text", "input", 16),
     Column("workload", "Workload", "text", "input", 10),
     Column("gpu", "GPU type", "text", "input", 16))
    + PLAN_DETAILS
    + (Column("cheapest", "Cheapest overall for this model × workload (1/0)", "flag", "helper", 12),
       Column("sheet", "Candidates on", "text", "helper", 10,
              help="RLHF for the RLHF algorithms (their groups), else Scenarios"),
       Column("scenarios_tried", "Scenarios tried", "count", "helper", 9))
    + tuple(Column(best_column(k), BEST_LABELS[k], "usd" if k == "purchase_usd" else "count", "helper", 11)
            for k in PLAN_ORDER)
    + (Column("chart_order", "Single-model picks so far (Charts row)", "count", "helper", 9),)
)
FOUND = best_column(PLAN_ORDER[-1])  # the last key is unique per candidate row: NO_FIT means none fits


def _candidate_tables(book: Book) -> list[Table]:
    """Scenarios, and RLHF when the workbook has groups (the order _by_sheet expects)."""
    return [book.scenarios, book.rlhf] if book.group_rows else [book.scenarios]


def _by_sheet(plan: Table, per_table: Sequence[str]) -> str:
    """One formula per candidate table, chosen by the row's `sheet` cell."""
    if len(per_table) == 1:
        return per_table[0]
    return f'IF(${plan.ref("sheet")}="RLHF",{per_table[1]},{per_table[0]})'


def _lexicographic_min(book: Book, plan: Table, table: Table) -> dict[str, str]:
    """Plan row formulas: each PLAN_ORDER key's minimum over the rows of this row's model × workload
    × GPU type that tie on the earlier keys (NO_FIT where no row fits)."""
    name = lambda column: book.names.of(table, column)  # noqa: E731
    match = "*".join(f"({name(c)}=${plan.ref(c)})" for c in ("model", "workload", "gpu"))
    out = {"scenarios_tried": f"SUMPRODUCT({match}*{name('plan_candidate')})"}
    selected = match
    for key in PLAN_ORDER:
        values = name(plan_key_column(key))
        out[best_column(key)] = f"SUMPRODUCT(MIN({selected}*{values}+(1-{selected})*{NO_FIT}))"
        selected += f"*({values}=${plan.ref(best_column(key))})"
    return out


def _detail_context(book: Book, table: Table, plan: Table) -> ExcelContext:
    """Var(name) -> that column of the chosen candidate row."""
    ctx = book.context(table)
    return replace(ctx, cell=lambda n: f"INDEX({book.names.of(table, n)},${plan.ref(FOUND)})")


def _before(pairs: Sequence[tuple[str, str]]) -> str:
    """1 where the named range's row comes before this row's values in PLAN_ORDER, else 0."""
    (rng, own), rest = pairs[0], pairs[1:]
    if not rest:
        return f"({rng}<{own})"
    return f"(({rng}<{own})+({rng}={own})*{_before(rest)})"


def plan_templates(book: Book, plan: Table) -> dict[str, str]:
    """Every Plan column's formula, the same in every row (so a copied row works)."""
    tables = _candidate_tables(book)
    per_table = [_lexicographic_min(book, plan, t) for t in tables]
    out = {n: "=" + _by_sheet(plan, [f[n] for f in per_table]) for n in per_table[0]}
    workload = plan.ref("workload")
    groups = ",".join(f'{workload}="{a}"' for a in RLHF_ALGORITHMS)
    out["sheet"] = f'=IF(OR({groups}),"RLHF","Scenarios")'
    for col in PLAN_DETAILS:
        per = [to_excel(col.expr, _detail_context(book, t, plan)) for t in tables]
        out[col.name] = f'=IF(${plan.ref(FOUND)}>={NO_FIT},"{DASH}",{_by_sheet(plan, per)})'
    name = lambda column: book.names.of(plan, column)  # noqa: E731
    same = f"({name('model')}=${plan.ref('model')})*({name('workload')}=${plan.ref('workload')})"
    before = _before([(name(best_column(k)), f"${plan.ref(best_column(k))}") for k in PLAN_ORDER])
    out["cheapest"] = f"=IF(${plan.ref(FOUND)}>={NO_FIT},0,IF(SUMPRODUCT({same}*{before})=0,1,0))"
    cheapest, sheet = plan.letter("cheapest"), plan.letter("sheet")
    first = plan.first_row
    out["chart_order"] = (f'=SUMPRODUCT((${cheapest}${first}:{cheapest}{ROW}=1)'
                          f'*(${sheet}${first}:{sheet}{ROW}="Scenarios"))')
    return out


def plan_rows(book: Book) -> list[dict[str, Any]]:
    """The Python value of every Plan cell: report.recommendations laid out, the chosen candidates'
    figures from the same expressions as the formulas."""
    rows = []
    picks = 0
    details = compiled_columns(PLAN_DETAILS, chained=False)
    for rec in book.report.recommendations:
        for entry in rec.entries:
            r = entry.result
            sheet = "RLHF" if rec.workload in RLHF_ALGORITHMS else "Scenarios"
            cheapest = int(rec.best is not None and rec.best.gpu == entry.gpu)
            picks += cheapest and sheet == "Scenarios"
            row = {"model": entry.model, "workload": entry.workload, "gpu": entry.gpu, "sheet": sheet,
                   "scenarios_tried": entry.num_scenarios, "cheapest": cheapest, "chart_order": picks}
            if r is None:
                row.update({best_column(k): NO_FIT for k in PLAN_ORDER})
                row.update({c.name: DASH for c in PLAN_DETAILS})
            else:
                candidate = book.row_of(r)
                row.update({best_column(k): candidate[plan_key_column(k)] for k in PLAN_ORDER})
                row.update(zip((c.name for c in PLAN_DETAILS), details(candidate, book.report.assumptions)))
            rows.append(row)
    return rows


def plan_table(book: Book) -> Table:
    n = sum(len(rec.entries) for rec in book.report.recommendations)
    return Table("Plan", PLAN_TABLE_COLUMNS, SCENARIO_FIRST_ROW, n, count_column="model")


def write_plan(wb, book: Book, styles: Styles) -> None:
    ws = add_sheet(wb, "Plan")
    plan = plan_table(book)
    write_header(ws, plan, styles, book.t)
    rows = plan_rows(book)
    write_rows(wb, ws, plan, rows, plan_templates(book, plan), styles)
    col = plan.index["cheapest"]
    ws.conditional_format(plan.first_row - 1, col, MAX_ROW, col,
                          {"type": "cell", "criteria": "==", "value": 1, "format": styles.highlight})
    ws.freeze_panes(SCENARIO_FIRST_ROW - 1, 3)
    ws.autofilter(1, 0, max(plan.last_row, plan.first_row) - 1, len(plan.columns) - 1)
    page_setup(ws, header_rows=2)


# ---------------------------------------------------------------------------------------------
# Charts: the peak memory breakdown of each Plan pick on Scenarios

# The stacked parts, as expressions over the candidate's columns (GiB per GPU): the peak's parts,
# then what device_total adds to allocated_peak (fragmentation, CUDA context, communication buffers).
CHART_PARTS = (
    tuple(Column(f"{p}_gib", TERM_BY_NAME[p].label, "gib", "formula", 11, Var(p) / GIB) for p in PEAK_PARTS)
    + (Column("overhead_gib", "Fragmentation + CUDA context + comm buffers", "gib", "formula", 13,
              (Var("device_total") - Var("allocated_peak")) / GIB),)
)
CHART_COLUMNS = (
    (Column("pick", "#", "count", "id", 4),
     Column("plan_row", "Plan row (in table)", "count", "helper", 7),
     Column("recommendation", "Model · workload", "text", "formula", 24),
     Column(FOUND, "Scenarios row (in table)", "count", "helper", 9),
     Column("label", "Cheapest configuration", "text", "formula", 62))
    + CHART_PARTS
    + (Column("device_total_gib", "Device total", "gib", "formula", 10, Var("device_total") / GIB),)
)
PART_COLOURS = ("#4472C4", "#8FAADC", "#ED7D31", "#A5A5A5", "#FFC000", "#5B9BD5", "#70AD47", "#7F7F7F")
SPARE_PICKS = 3  # chart rows beyond the written picks, for Plan rows a planner adds


def chart_rows(book: Book, plan: Table, charts: Table, picks: Sequence) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """Python values and formula templates of the Charts rows: the k-th row shows the k-th Plan row
    marked cheapest whose candidates are on Scenarios (the k-th of `picks`)."""
    values = compiled_columns(CHART_COLUMNS[5:], chained=False)
    plan_position = {}
    for i, row in enumerate(plan_rows(book), start=1):
        plan_position.setdefault(row["chart_order"], i)
    rows = []
    for k in range(1, charts.num_rows + 1):
        row = {"pick": k, "plan_row": 0, "recommendation": "", FOUND: 0, "label": ""}
        row.update({c.name: "" for c in CHART_COLUMNS[5:]})
        if k <= len(picks):
            r = picks[k - 1]
            candidate = book.row_of(r)
            row.update({"plan_row": plan_position[k], "recommendation": f"{r.model} · {r.workload}",
                        FOUND: candidate["row_in_table"], "label": candidate["label"]})
            row.update(zip((c.name for c in CHART_COLUMNS[5:]), values(candidate, book.report.assumptions)))
        rows.append(row)
    p, found = (lambda c: book.names.of(plan, c)), charts.ref(FOUND)
    ctx = book.context(book.scenarios)
    pick = replace(ctx, cell=lambda n: f"INDEX({book.names.of(book.scenarios, n)},${found})")
    plan_row = charts.ref("plan_row")
    templates = {
        "plan_row": f"=IF(${charts.ref('pick')}>MAX({p('chart_order')}),0,MATCH(${charts.ref('pick')},"
                    f"{p('chart_order')},0))",
        "recommendation": f'=IF(${plan_row}=0,"",INDEX({p("model")},${plan_row})&" · "&INDEX({p("workload")},'
                          f'${plan_row}))',
        FOUND: f"=IF(${plan_row}=0,0,INDEX({p(FOUND)},${plan_row}))",
        "label": f'=IF(${found}=0,"",{pick.cell("label")})',
        **{c.name: f'=IF(${found}=0,"",{to_excel(c.expr, pick)})' for c in CHART_COLUMNS[5:]},
    }
    return rows, templates


def write_charts(wb, book: Book, styles: Styles) -> None:
    ws = add_sheet(wb, "Charts")
    picks = [rec.best.result for rec in book.report.recommendations if rec.best and not rec.best.result.is_group]
    table = Table("Charts", CHART_COLUMNS, SCENARIO_FIRST_ROW, len(picks) + SPARE_PICKS)
    rows, templates = chart_rows(book, plan_table(book), table, picks)
    write_header(ws, table, styles, book.t)
    write_rows(wb, ws, table, rows, templates, styles)
    ws.freeze_panes(SCENARIO_FIRST_ROW - 1, 1)
    if rows:
        _breakdown_chart(wb, ws, table, rows, book.t)
    page_setup(ws, header_rows=0)


def _breakdown_chart(wb, ws, table: Table, rows: Sequence[Mapping[str, Any]], t: Catalogue) -> None:
    chart = wb.add_chart({"type": "bar", "subtype": "stacked"})
    first, last = table.first_row - 1, table.first_row + len(rows) - 2
    names = [r["label"] for r in rows]
    for colour, part in zip(PART_COLOURS, CHART_PARTS):
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
