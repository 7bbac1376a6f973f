"""Plan and Charts: the cheapest fitting configuration per model × workload × GPU type, by formulas."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from ...report import PlanEntry, Recommendation, Report
from ...terms import PEAK_PARTS, TERM_BY_NAME
from ...units import GiB
from .book import Book, plan_match
from .layout import Column, DASH, SCENARIO_FIRST_ROW, Styles, Table, add_sheet, page_setup, write_header, write_rows


# ---------------------------------------------------------------------------------------------
# Plan: per model × workload × GPU type, the cheapest fitting row, found by formulas

PLAN_DETAILS = {  # Plan column -> (candidate-table column, divisor); "gpus" is the table's GPU count
    "index": ("index", 1), "name": ("name", 1), "total_gpus": ("gpus", 1), "zero_stage": ("zero_stage", 1),
    "tp_size": ("tp_size", 1), "device_total_gib": ("device_total", GiB), "recommended_gib": ("recommended", GiB),
    "headroom_gib": ("headroom_bytes", GiB), "purchase_usd": ("purchase_usd", 1), "hourly_usd": ("hourly_usd", 1),
}
PLAN_TABLE_COLUMNS = (
    Column("model", "Model", "text", "input", 16),
    Column("workload", "Workload", "text", "input", 10),
    Column("gpu", "GPU type", "text", "input", 16),
    Column("sheet", "Candidates on", "text", "id", 10),
    Column("scenarios_tried", "Scenarios tried", "count", "helper", 9),
    Column("best_row", "Sheet row of the cheapest fitting (0: none)", "count", "helper", 11),
    Column("index", "#", "count", "formula", 5),
    Column("name", "Cheapest configuration that fits with k", "text", "formula", 46),
    Column("total_gpus", "GPUs", "count", "formula", 6),
    Column("zero_stage", "ZeRO stage", "count", "formula", 6),
    Column("tp_size", "Tensor parallel", "count", "formula", 7),
    Column("device_total_gib", "Device total per GPU", "gib", "formula", 10),
    Column("recommended_gib", "Recommended per GPU (k ×)", "gib", "formula", 11),
    Column("headroom_gib", "Headroom per GPU", "gib", "formula", 10),
    Column("purchase_usd", "Purchase cost", "usd", "formula", 12),
    Column("hourly_usd", "Cloud cost per hour", "usd", "formula", 10),
    Column("cheapest", "Cheapest overall for this model × workload (1/0)", "flag", "helper", 12),
)


@dataclass(frozen=True)
class PlanBlock:
    rec: Recommendation
    first_row: int  # the Plan rows of its entries, one per GPU type
    last_row: int


def plan_blocks(report: Report) -> list[PlanBlock]:
    blocks, row = [], SCENARIO_FIRST_ROW
    for rec in report.recommendations:
        blocks.append(PlanBlock(rec, row, row + len(rec.entries) - 1))
        row += len(rec.entries)
    return blocks


def _is_group_workload(book: Book, rec: Recommendation) -> bool:
    results = [e.result for e in rec.entries if e.result] or [
        r for r in book.report.results if (r.model, r.workload) == (rec.model, rec.workload)]
    return results[0].is_group


def _plan_entry(book: Book, plan: Table, block: PlanBlock, entry: PlanEntry, row: int) -> tuple[dict, dict]:
    """One Plan row's formulas and Python values."""
    cands, fields = book.candidates(_is_group_workload(book, block.rec))
    ref = {n: plan.ref(n, row) for n in ("model", "workload", "gpu", "best_row", "purchase_usd", "total_gpus")}
    match = plan_match(cands, f"${ref['model']}", f"${ref['workload']}", f"${ref['gpu']}")
    formulas = {
        "scenarios_tried": f"=SUMPRODUCT({match}*{cands.range('plan_candidate')})",
        "best_row": f"=SUMPRODUCT({match}*{cands.range('plan_best')}*{cands.range('sheet_row')})",
    }
    for name, (source, divisor) in PLAN_DETAILS.items():
        source = fields.gpus if source == "gpus" else source
        value = f"INDEX({cands.full_range(source)},{ref['best_row']})" + (f"/{divisor}" if divisor != 1 else "")
        formulas[name] = f'=IF({ref["best_row"]}=0,"{DASH}",{value})'
    blk = {n: f"${plan.letter(n)}${block.first_row}:${plan.letter(n)}${block.last_row}"
           for n in ("best_row", "purchase_usd", "total_gpus")}
    # The order of report.recommend across GPU types: cost, then GPU count, then scenario order.
    before = (f"({blk['best_row']}>0)*(({blk['purchase_usd']}<{ref['purchase_usd']})"
              f"+({blk['purchase_usd']}={ref['purchase_usd']})*(({blk['total_gpus']}<{ref['total_gpus']})"
              f"+({blk['total_gpus']}={ref['total_gpus']})*({blk['best_row']}<{ref['best_row']})))")
    formulas["cheapest"] = f"=IF({ref['best_row']}=0,0,IF(SUMPRODUCT({before})=0,1,0))"

    r = entry.result
    values = {"model": entry.model, "workload": entry.workload, "gpu": entry.gpu, "sheet": cands.sheet,
              "scenarios_tried": entry.num_scenarios, "best_row": book.result_rows[r.index] if r else 0,
              "cheapest": int(block.rec.best is not None and block.rec.best.gpu == entry.gpu)}
    if r is None:
        values.update({n: DASH for n in PLAN_DETAILS})
    else:
        values.update({"index": r.index, "name": r.label, "total_gpus": r.total_gpus, "zero_stage": r.lead.zero_stage,
                       "tp_size": r.lead.tp_size, "purchase_usd": r.estimate["purchase_usd"],
                       "hourly_usd": r.estimate["hourly_usd"],
                       **{n: r.estimate[src] / GiB for n, (src, d) in PLAN_DETAILS.items() if d == GiB}})
    return formulas, values


def write_plan(wb, book: Book, styles: Styles) -> None:
    ws = add_sheet(wb, "Plan")
    blocks = plan_blocks(book.report)
    n = sum(len(b.rec.entries) for b in blocks)
    plan = Table("Plan", PLAN_TABLE_COLUMNS, SCENARIO_FIRST_ROW, SCENARIO_FIRST_ROW + max(n, 1) - 1)
    write_header(ws, plan, styles, 1)
    rows, formulas = [], []
    for block in blocks:
        for i, entry in enumerate(block.rec.entries):
            f, v = _plan_entry(book, plan, block, entry, block.first_row + i)
            formulas.append(f)
            rows.append(v)
    write_rows(wb, ws, plan, rows, {}, styles, formulas)
    ws.conditional_format(plan.first_row - 1, plan.index["cheapest"], plan.last_row - 1, plan.index["cheapest"],
                          {"type": "cell", "criteria": "==", "value": 1, "format": styles.highlight})
    ws.freeze_panes(SCENARIO_FIRST_ROW - 1, 3)
    ws.autofilter(1, 0, plan.last_row - 1, len(plan.columns) - 1)
    page_setup(ws, header_rows=2)


# ---------------------------------------------------------------------------------------------
# Charts: the peak memory breakdown of each recommended single-model configuration

CHART_COLUMNS = (
    (Column("recommendation", "Model · workload", "text", "id", 24),
     Column("best_row", "Scenarios row (cheapest overall, from Plan)", "count", "helper", 11),
     Column("name", "Cheapest configuration", "text", "formula", 46))
    + tuple(Column(f"{p}_gib", TERM_BY_NAME[p].label, "gib", "formula", 11) for p in PEAK_PARTS)
    + (Column("overhead_gib", "Fragmentation + CUDA context + comm buffers", "gib", "formula", 13),
       Column("device_total_gib", "Device total", "gib", "formula", 10))
)
PART_COLOURS = ("#4472C4", "#8FAADC", "#ED7D31", "#A5A5A5", "#FFC000", "#5B9BD5", "#70AD47", "#7F7F7F")


def write_charts(wb, book: Book, styles: Styles) -> None:
    ws = add_sheet(wb, "Charts")
    blocks = [b for b in plan_blocks(book.report) if b.rec.best and not b.rec.best.result.is_group]
    table = Table("Charts", CHART_COLUMNS, SCENARIO_FIRST_ROW, SCENARIO_FIRST_ROW + max(len(blocks), 1) - 1)
    plan = Table("Plan", PLAN_TABLE_COLUMNS, SCENARIO_FIRST_ROW, SCENARIO_FIRST_ROW)  # column letters only
    sc = book.scenarios
    write_header(ws, table, styles, 1)
    rows, formulas = [], []
    for i, b in enumerate(blocks):
        row = table.first_row + i
        best = table.ref("best_row", row)

        def pick(term: str) -> str:
            return f"INDEX({sc.full_range(term)},{best})"

        f = {"best_row": f"=SUMPRODUCT(Plan!${plan.letter('cheapest')}${b.first_row}:${plan.letter('cheapest')}${b.last_row}"
                         f"*Plan!${plan.letter('best_row')}${b.first_row}:${plan.letter('best_row')}${b.last_row})",
             "name": f'=IF({best}=0,"{DASH}",{pick("name")})',
             "overhead_gib": f"=IF({best}=0,0,({pick('device_total')}-{pick('allocated_peak')})/{GiB})",
             "device_total_gib": f"=IF({best}=0,0,{pick('device_total')}/{GiB})",
             **{f"{p}_gib": f"=IF({best}=0,0,{pick(p)}/{GiB})" for p in PEAK_PARTS}}
        values = b.rec.best.result.estimate.values
        rows.append({"recommendation": f"{b.rec.model} · {b.rec.workload}",
                     "best_row": book.result_rows[b.rec.best.result.index], "name": b.rec.best.result.label,
                     "overhead_gib": (values["device_total"] - values["allocated_peak"]) / GiB,
                     "device_total_gib": values["device_total"] / GiB,
                     **{f"{p}_gib": values[p] / GiB for p in PEAK_PARTS}})
        formulas.append(f)
    write_rows(wb, ws, table, rows, {}, styles, formulas)
    ws.freeze_panes(SCENARIO_FIRST_ROW - 1, 1)
    if rows:
        _breakdown_chart(wb, ws, table, rows)
    page_setup(ws, header_rows=0)


def _breakdown_chart(wb, ws, table: Table, rows: Sequence[Mapping[str, Any]]) -> None:
    chart = wb.add_chart({"type": "bar", "subtype": "stacked"})
    first, last = table.first_row - 1, table.first_row + len(rows) - 2
    names = [r["name"] for r in rows]
    series = [f"{p}_gib" for p in PEAK_PARTS] + ["overhead_gib"]
    for colour, name in zip(PART_COLOURS, series):
        c = table.index[name]
        chart.add_series({
            "name": ["Charts", 1, c],
            "name_data": [table.columns[c].header],
            "categories": ["Charts", first, table.index["name"], last, table.index["name"]],
            "categories_data": names,
            "values": ["Charts", first, c, last, c],
            "values_data": [r[name] for r in rows],  # the cache: streamed sheets cannot be read back
            "fill": {"color": colour}, "gap": 60,
        })
    chart.set_title({"name": "Per-GPU memory of the cheapest fitting configuration, by part (GiB)",
                     "name_font": {"size": 12}})
    # Axes stay visible (XlsxWriter writes <c:delete> only for hidden axes).
    chart.set_x_axis({"name": "GiB per GPU", "num_format": "0", "visible": True, "major_gridlines": {"visible": True}})
    chart.set_y_axis({"reverse": True, "visible": True, "num_font": {"size": 8}})
    chart.set_legend({"position": "bottom", "font": {"size": 8}})
    chart.set_size({"width": 1100, "height": 160 + 34 * len(rows)})
    ws.insert_chart(table.first_row + len(rows) + 1, 0, chart)


