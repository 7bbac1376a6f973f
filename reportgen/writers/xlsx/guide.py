"""Guide: what the workbook is and how to use it."""
from __future__ import annotations

from .book import Book
from .layout import Styles, add_sheet, fit_row, page_setup, write_value


# ---------------------------------------------------------------------------------------------
# Guide

def _guide_lines(book: Book) -> list[tuple[str, str]]:
    """(style, text) rows of the Guide sheet."""
    rep, p = book.report, book.report.preset
    n_single = sum(not r.is_group for r in rep.results)
    n_groups = len(rep.results) - n_single
    return [
        ("title", p.title),
        ("text", p.description),
        ("text", f"Preset: {p.name} ({p.given_path or 'bundled with reportgen'}) · generated {rep.generated_at} "
                 f"by reportgen {rep.version}"),
        ("text", f"{n_single} single-model scenarios, {n_groups} RLHF groups "
                 f"({len(book.scenario_rows) - n_single} role rows), {len(rep.skipped)} combinations skipped "
                 "(see the JSON or HTML report for the reasons)."),
        ("h", "What this workbook is"),
        ("text", "A GPU-memory capacity plan with live formulas. Every memory term of every scenario is a formula "
                 "over the scenario's input cells, the catalog tables and earlier terms, so changing any input "
                 "recomputes everything downstream, and a total can be audited by clicking through its references. "
                 "Each formula cell also stores the value reportgen computed, for viewers that do not recalculate."),
        ("h", "Cell styles"),
        ("input", "Blue text on light yellow: an input you may edit (scenario inputs, assumptions, catalog rows)."),
        ("text", "Black on white: a formula. Do not type over it; change the inputs it reads instead."),
        ("text", "Header colours: grey = identification, green = summary in GiB, yellow = inputs, "
                 "blue = memory terms, light grey = plan helper columns. Row 1 holds each column's formula name "
                 "(the name the formulas use); the Terms sheet gives each formula column in words, with its source."),
        ("h", "Units"),
        ("text", "Term columns are in bytes (integers, thousands separators) per GPU. The green summary columns show "
                 "the same figures in GiB (2^30 bytes) with two decimals. GB (10^9 bytes) is not used. GPU memory "
                 "is the nvidia-smi total (GPUs sheet, MiB = 2^20 bytes). Costs are in USD (Assumptions: currency)."),
        ("h", "Sheets"),
        ("text", "Plan: for each model × workload and GPU type, the cheapest configuration whose recommended budget "
                 "(k × device total) fits, found by formulas over Scenarios (RLHF workloads: over RLHF). The row "
                 "marked 1 in the last column is the cheapest across GPU types."),
        ("text", "Charts: the per-GPU memory at the peak of each recommended single-model configuration, by part "
                 "(weights, master weights, optimizer states, gradients, activations, KV cache, temporaries) plus "
                 "fragmentation, CUDA context and communication buffers; it follows the Plan."),
        ("text", "Scenarios: one row per model instance. Columns: identification, summary (GiB), inputs (drop-downs), "
                 "every term of the term table in order, then the plan helpers (cost if it fits, rank, cheapest). "
                 "RLHF roles are rows here too, with their group id and role."),
        ("text", "RLHF: one row per PPO/DPO/GRPO group; its cells add or take the maximum of its role rows' cells "
                 "(colocated: all roles share the GPUs; separate: each role has its own pool, the tightest counts)."),
        ("text", "Notes: claims from the source articles (Chinese and English) with a verdict and live figures "
                 "computed from the NoteScenarios rows."),
        ("text", "Assumptions: safety factor k, allocator fragmentation, CUDA context, communication buffers, KV "
                 "block size, currency: named cells (e.g. safety_factor) that every formula reads."),
        ("text", "Models, GPUs, Precisions, Dtypes, Optimizers: the catalogs the formulas look up (INDEX/MATCH by "
                 "name), with sources. Choices: the allowed values of the other drop-downs."),
        ("h", "How to add a scenario"),
        ("text", "Copy the last row of Scenarios (the whole row) and paste it into the first empty row below. The "
                 "formulas use relative references and follow the row. Then edit its yellow input cells; the drop-"
                 "downs list the allowed values. A row counts for the Plan when its model, workload and GPU type "
                 "match a Plan row (copy a Plan row and edit its first three cells to add one). Formulas read "
                 "every filled row down to the last one, so keep the table without empty rows."),
        ("h", "How to add a model or GPU"),
        ("text", "Add a row at the bottom of Models or GPUs (numbers as in the rows above, e.g. from "
                 "`reportgen params --config config.json --json`); its name then appears in the drop-downs."),
        ("h", "Printing"),
        ("text", "Scenarios, RLHF and NoteScenarios print their identification and summary columns, landscape, "
                 "one page wide; the full tables are meant for the screen."),
    ]


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


