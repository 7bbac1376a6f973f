"""A planner's hand edits: the workbook, edited as a person would and recalculated by LibreOffice,
gives what `reportgen estimate --json` prints for the same inputs.

Expected values come from the command line (a real client of the estimator), never from the
workbook writer. LibreOffice is required (see test_xlsx.py).
"""
from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path

import pytest
from openpyxl.formula.translate import Translator
import yaml
from click.testing import CliRunner

import workbooks
from lo import recalculated_values, require_soffice
from reportgen.cli import main
from reportgen.report.i18n import load_catalogue
from reportgen.model.catalog import load_models
from reportgen.model.estimate import Estimator, Scenario
from reportgen.model.inputs import INPUT_NAMES, INPUTS, applies
from reportgen.pipeline import load, make_report, write_outputs
from reportgen.report.build import recommend
from reportgen.model.terms import ASSUMPTIONS, PER_GPU_KEYS
from reportgen.writers.xlsx.checks import INPUT_LISTS, RULE_LISTS
from test_xlsx import FIRST_ROW, FIXTURE, STAMP, assert_plan, book, columns, on_written_rows, same  # noqa: F401 (book: a fixture)

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def soffice():
    require_soffice()


@pytest.fixture(scope="module")
def report():
    return make_report(load(str(FIXTURE)), STAMP)


def cli_estimate(inputs: dict, assumptions: dict, *, config: Path | None = None) -> dict:
    """`reportgen estimate --json` for a Scenarios row's inputs (and the workbook's assumptions): the
    options that apply to its workload (the CLI refuses the others: they would change nothing)."""
    args = ["estimate", "--json", "--workload", inputs["workload"]]
    args += ["--config", str(config)] if config else ["--model", inputs["model"]]
    args += [arg for i in INPUTS if i.option and applies(i, inputs["workload"], values=inputs)
             for arg in (i.option, str(inputs[i.name]))]
    args += [arg for a in ASSUMPTIONS if a.option for arg in (a.option, str(assumptions[a.name]))]
    result = CliRunner().invoke(main, args, catch_exceptions=False)
    assert result.exit_code == 0, (args, result.output)
    return json.loads(result.output)


def scenario_rows(ws, *, model: str | None = None):
    """(row, inputs) of every single-model Scenarios row (of one model, if given)."""
    cols = columns(ws)
    for row in range(FIRST_ROW, ws.max_row + 1):
        values = {name: ws.cell(row, c).value for name, c in cols.items()}
        if values["model"] and not values["group"] and (model is None or values["model"] == model):
            yield row, values


def test_editing_a_models_kv_heads_recomputes_its_scenarios_like_the_cli(book, report, soffice, tmp_path):
    """#13: Llama-2-7B's num_key_value_heads 32 -> 8 on the Models sheet; every scenario of that model,
    recalculated, equals `estimate --config` with the edited config.json."""
    model = "Llama-2-7B"
    wb = workbooks.load(book)
    models = wb["Models"]
    header = {c.value: c.column for c in models[1]}
    (row,) = [r for r in range(2, models.max_row + 1) if models.cell(r, 1).value == model]
    models.cell(row, header["num_key_value_heads"]).value = 8
    edited = tmp_path / "edited.xlsx"
    wb.save(edited)
    entry = json.loads((REPO / "presets" / "models" / "llama-2-7b.json").read_text())
    assert entry["config"]["num_key_value_heads"] == 32
    entry["config"]["num_key_value_heads"] = 8
    config = tmp_path / "llama-2-7b-gqa8.json"
    config.write_text(json.dumps(entry))

    before = workbooks.load(book, data_only=True)["Scenarios"]
    fresh = recalculated_values(edited, tmp_path / "out")["Scenarios"]
    cols = columns(fresh)
    rows = list(scenario_rows(fresh, model=model))
    assert len(rows) > 10
    changed = 0
    for row, inputs in rows:
        want = cli_estimate(inputs, report.assumptions, config=config)
        # LibreOffice's ROUNDUP of a product may land one byte from Python's (1e-11 relative).
        for key in PER_GPU_KEYS:
            assert same(want["per_gpu_bytes"][key], fresh.cell(row, cols[key]).value), (row, key)
        assert fresh.cell(row, cols["kv_cache"]).value == want["per_gpu_bytes"]["kv_cache"], row
        assert fresh.cell(row, cols["trainable_params"]).value == want["params"]["trainable"], row
        changed += fresh.cell(row, cols["kv_cache"]).value != before.cell(row, cols["kv_cache"]).value
    assert changed >= 8  # every inference row's KV cache fell to a quarter


# ---------------------------------------------------------------------------------------------
# Bad edits: the edited row shows the CLI's reason; nothing else breaks

ERRORS = ("#NAME?", "#REF!", "#VALUE!", "#DIV/0!", "#N/A", "#NUM!", "#NULL!", "Err:")
HINTS = re.compile(r" \((did you mean|known:).*$")  # the CLI lists names; the workbook points at a sheet


def cli_check_reason(inputs: dict, tmp_path: Path) -> str:
    """What `reportgen check` says about a preset holding these inputs as its one scenario: the
    reason it is skipped, or its input error (from the key path's input name on)."""
    scenario = {"name": "edited", "workload": inputs["workload"],
                **{i.name: inputs[i.name] for i in INPUTS if i.preset_axis}}
    valid = {"name": "valid", "model": "Qwen2.5-0.5B", "gpu": "L4"}  # so a skipped one is listed
    preset = tmp_path / f"edited-{len(list(tmp_path.glob('*.yaml')))}.yaml"
    preset.write_text(yaml.safe_dump({"title": "edited", "scenarios": [scenario, valid]}))
    result = CliRunner().invoke(main, ["check", str(preset)])
    if result.exit_code == 1:
        return result.output.split("scenarios[0].", 1)[1].strip()
    (line,) = [x for x in result.output.splitlines() if "skipped" in x and "×" in x]
    return line.split("× ", 1)[1]


def formula_errors(wb) -> list[str]:
    """Cells holding an error value (wb: a workbook's values, data_only)."""
    return [f"{ws.title}!{c.coordinate}={c.value}" for ws in wb for row in ws.iter_rows() for c in row
            if isinstance(c.value, str) and c.value.startswith(ERRORS)]


def find_row(ws, **where) -> int:
    cols = columns(ws)
    for row in range(FIRST_ROW, ws.max_row + 1):
        if all(ws.cell(row, cols[k]).value == v for k, v in where.items()):
            return row
    raise AssertionError(f"{ws.title}: no row with {where}")


# (row of the fixture, what a planner types): each invalid value of issue #15, and one per rule.
H100 = dict(gpu="H100-80GB-SXM", group=None)
BAD_EDITS = (
    (dict(workload="inference", batch_size=1, weight_dtype="bf16", model="Llama-2-7B"), {"offload": "optimizer"}),
    (dict(workload="inference", batch_size=1, weight_dtype="int4", model="Llama-2-7B"), {"prompt_len": 0, "gen_len": 0}),
    (dict(workload="inference", batch_size=8, weight_dtype="bf16", model="Llama-2-7B"), {"zero_stage": 3}),
    (dict(workload="inference", batch_size=8, weight_dtype="int4", model="Llama-2-7B"), {"batch_size": 0}),
    (dict(model="Llama-3.1-70B"), {"tp_size": 3}),
    (dict(workload="full", zero_stage=0, num_gpus=2, checkpointing="none"), {"model": "Llama-9-7B"}),
    (dict(workload="full", zero_stage=0, num_gpus=2, checkpointing="full"), {"model": None}),
    (dict(workload="full", zero_stage=0, num_gpus=4, checkpointing="none"), {"gpu": "A100"}),
    (dict(workload="full", zero_stage=0, num_gpus=4, checkpointing="full"), {"ep_size": 2}),
    (dict(workload="full", zero_stage=3, num_gpus=2, checkpointing="none"), {"zero_stage": 7}),
    (dict(workload="full", zero_stage=3, num_gpus=2, checkpointing="full"), {"tp_size": 2}),
    (dict(workload="full", zero_stage=3, num_gpus=4, checkpointing="none"), {"checkpointing": "partial"}),
    (dict(model="Mistral-7B-v0.1", weight_dtype="bf16", serving_engine="hf-generate"), {"prompt_len": 40000}),  # 32k
    (dict(workload="lora", model="Qwen2.5-0.5B"), {"num_gpus": 4, "tp_size": 4}),
    (dict(workload="qlora", model="Qwen2.5-0.5B"), {"lora_rank": 0}),
    (dict(workload="lora", model="Llama-2-7B"), {"precision": "fp6"}),
    # a skip rule whose words pass Excel's 255 characters of text in a formula (written in two pieces), and tp_overlap's
    # (the HF Trainer has no TP communication overlap)
    (dict(workload="full", zero_stage=0, num_gpus=8, framework="megatron"), {"checkpointing": "op"}),
    (dict(workload="full", zero_stage=0, num_gpus=8, framework="hf", model="Llama-2-7B"), {"tp_overlap": "on"}),
)


def test_bad_edits_show_the_clis_reason_in_their_row_and_break_nothing_else(book, report, soffice, tmp_path):
    """#15: each invalid value typed into its own row, and '80GB' typed into a GPU's memory. The row
    shows what `reportgen check` says of the same inputs (the workbook points at a sheet where the
    command line lists names); rows on the broken GPU point at its row; everything else is ok and
    the Plan ranks the rows still valid as the core does."""
    wb = workbooks.load(book)
    ws = wb["Scenarios"]
    cols = columns(ws)
    edits = {find_row(ws, **where, **H100): change for where, change in BAD_EDITS}
    assert len(edits) == len(BAD_EDITS)
    expected = {}
    for row, change in edits.items():
        inputs = {name: ws.cell(row, c).value for name, c in cols.items()}
        for name, value in change.items():
            ws.cell(row, cols[name]).value = value
            inputs[name] = "" if value is None else value
        expected[row] = cli_check_reason(inputs, tmp_path)
    gpus = wb["GPUs"]
    gpu_cols = {c.value: c.column for c in gpus[1]}
    a100 = next(r for r in range(2, gpus.max_row + 1) if gpus.cell(r, 1).value == "A100-80GB")
    gpus.cell(a100, gpu_cols["memory_mib"]).value = "80GB"
    edited = tmp_path / "edited.xlsx"
    wb.save(edited)

    fresh = recalculated_values(edited, tmp_path / "out")
    ws = fresh["Scenarios"]
    for row, want in expected.items():
        got = ws.cell(row, cols["check"]).value
        assert HINTS.sub("", got) == HINTS.sub("", want), (row, got, want)
        assert ws.cell(row, cols["device_total_gib"]).value is None  # totals of an invalid row are blank
        lists = [ws.cell(row, cols[name]).value for name in INPUT_LISTS + RULE_LISTS]
        assert all(text.endswith("—") for text in lists) and got + " ¦ " in "".join(lists), (row, lists)
    # The GPU row shows its reason; rows on that GPU point at it; every other row is ok.
    memory_reason = fresh["GPUs"].cell(a100, gpu_cols["check"]).value
    assert memory_reason == "memory_mib: expected a positive whole number of MiB, got '80GB'"
    for row in range(FIRST_ROW, ws.max_row + 1):
        check, gpu = ws.cell(row, cols["check"]).value, ws.cell(row, cols["gpu"]).value
        if row in edits:
            continue
        if gpu == "A100-80GB":
            assert check == f"gpu: the GPUs row of 'A100-80GB' is invalid ({memory_reason})", row
        else:
            assert check == "ok", (row, check)
            # A row without problems: every list is just its end mark, never an empty text (which
            # LibreOffice would compute again on load).
            for name in INPUT_LISTS + RULE_LISTS:
                assert ws.cell(row, cols[name]).value == "—", (row, name)
    for sheet in ("Models", "Precisions", "Dtypes", "Optimizers"):
        checks = [c.value for c in fresh[sheet]["B"][1:] if c.value is not None]
        assert checks and set(checks) == {"ok"}, sheet
    # No error anywhere, the edited rows included: their figures are blank.
    assert formula_errors(fresh) == []
    # The Plan ranks the rows that are still valid, exactly as the core does.
    kept = [r for r in report.results if r.gpu != "A100-80GB"
            and not any(ws.cell(row, cols["index"]).value == r.index for row in edits)]
    gpu_types = tuple(g for g in report.gpus if g in {r.gpu for r in kept})
    assert_plan(fresh, *on_written_rows(report.recommendations, recommend(kept, gpu_types, report.interchangeable),
                                        fresh))


def test_an_invalid_assumption_blanks_every_figure_and_names_itself(book, soffice, tmp_path):
    """'1,3' typed as the safety factor: its row says what `reportgen check` says of it; every
    scenario's check points at it, their figures are blank, the Plan's picks say why there are none,
    and no cell shows an error."""
    preset = tmp_path / "k.yaml"
    preset.write_text(yaml.safe_dump({"title": "k", "assumptions": {"safety_factor": "1,3"},
                                      "scenarios": [{"model": "Qwen2.5-0.5B", "gpu": "L4"}]}))
    result = CliRunner().invoke(main, ["check", str(preset)])
    assert result.exit_code == 1
    want = result.output.split("assumptions.", 1)[1].strip()
    wb = workbooks.load(book)
    (k_row,) = [r for r in wb["Assumptions"].iter_rows(min_row=2) if r[0].value == "safety_factor"]
    k_row[2].value = "1,3"
    edited = tmp_path / "edited.xlsx"
    wb.save(edited)
    fresh = recalculated_values(edited, tmp_path / "out")
    assert fresh["Assumptions"].cell(k_row[0].row, 5).value == want == "safety_factor: expected a number, got '1,3'"
    for sheet in ("Scenarios", "RLHF", "NoteScenarios"):
        ws = fresh[sheet]
        cols = columns(ws)
        checks = {ws.cell(r, cols["check"]).value for r in range(FIRST_ROW, ws.max_row + 1)} - {None}
        assert checks and all(c.endswith(f"Assumptions: {want}") for c in checks), (sheet, checks)
        assert all(ws.cell(r, cols["recommended_gib"]).value is None for r in range(FIRST_ROW, ws.max_row + 1))
    plan = fresh["Plan"]
    pcols = columns(plan)
    for name in ("label", "rent_label"):
        assert {plan.cell(r, pcols[name]).value for r in range(FIRST_ROW, plan.max_row + 1)} == {f"Assumptions: {want}"}
    assert {plan.cell(r, pcols["total_gpus"]).value for r in range(FIRST_ROW, plan.max_row + 1)} == {"—"}
    assert formula_errors(fresh) == []


# ---------------------------------------------------------------------------------------------
# Good edits: every edited row, a copied row and an added Plan row equal the command line

def copy_row(ws, src: int, dst: int) -> None:
    """What a planner's copy and paste of a whole row does: values, and formulas moved to the row."""
    for cell in ws[src]:
        value = cell.value
        if isinstance(value, str) and value.startswith("="):
            value = Translator(value, origin=cell.coordinate).translate_formula(f"{cell.column_letter}{dst}")
        ws.cell(dst, cell.column).value = value


def test_hand_edits_recompute_like_the_cli(book, report, soffice, tmp_path):
    """#15: k, a GPU's memory, a row's model, GPU count, ZeRO stage and TP edited; a row copied with a
    new batch; a Plan row added for another model. Every single-model row equals `estimate --json`
    for its inputs, and the Plan picks what PLAN_ORDER picks among them."""
    wb = workbooks.load(book)
    ws = wb["Scenarios"]
    cols = columns(ws)
    a100 = dict(gpu="A100-80GB", group=None)
    edits = {
        find_row(ws, workload="inference", batch_size=1, weight_dtype="bf16", model="Llama-2-7B", **a100):
            {"model": "Qwen2.5-7B"},
        find_row(ws, workload="full", zero_stage=3, num_gpus=2, checkpointing="none", **a100): {"num_gpus": 4},
        find_row(ws, workload="full", zero_stage=0, num_gpus=4, checkpointing="none", **a100): {"zero_stage": 2},
        find_row(ws, model="Llama-3.1-70B", group=None): {"num_gpus": 8, "tp_size": 8},
    }
    for row, change in edits.items():
        for name, value in change.items():
            ws.cell(row, cols[name]).value = value
    source = find_row(ws, workload="inference", batch_size=8, weight_dtype="bf16", model="Llama-2-7B", **a100)
    copied = ws.max_row + 1
    copy_row(ws, source, copied)
    ws.cell(copied, cols["batch_size"]).value = 16
    plan = wb["Plan"]
    added = plan.max_row + 1
    copy_row(plan, plan.max_row, added)
    # As the Guide says: the GPU type, and the new job's requirement text pasted as written (that of the
    # row switched to Qwen2.5-7B); its model and workload follow from the text.
    switched = next(iter(edits))
    text = written_requirement(book, switched).replace("Llama-2-7B · ", "Qwen2.5-7B · ", 1)
    plan.cell(added, columns(plan)["gpu"]).value = "A100-80GB"
    plan.cell(added, columns(plan)["requirement_written"]).value = text
    (k_row,) = [r for r in wb["Assumptions"].iter_rows(min_row=2) if r[0].value == "safety_factor"]
    k_row[2].value = 1.4
    gpus = wb["GPUs"]
    gpu_cols = {c.value: c.column for c in gpus[1]}
    h100 = next(r for r in range(2, gpus.max_row + 1) if gpus.cell(r, 1).value == "H100-80GB-SXM")
    gpus.cell(h100, gpu_cols["memory_mib"]).value = 40960
    edited = tmp_path / "edited.xlsx"
    wb.save(edited)

    fresh = recalculated_values(edited, tmp_path / "out")
    assert formula_errors(fresh) == []
    ws = fresh["Scenarios"]
    assumptions = {**report.assumptions, "safety_factor": 1.4}
    memory = {g: gpu.memory_mib * 2**20 for g, gpu in report.gpus.items()} | {"H100-80GB-SXM": 40960 * 2**20}
    # An engine's budget is a share of its GPU's memory, so the rows an engine serves on the edited H100 follow
    # the new memory; the CLI has no option for a GPU's memory: the estimator with the edited catalog answers.
    edited_gpus = {**report.gpus, "H100-80GB-SXM": replace(report.gpus["H100-80GB-SXM"], memory_mib=40960)}
    engine_estimator = Estimator(load_models(), edited_gpus, assumptions)
    candidates = []
    engine_rows = 0
    for position, (row, inputs) in enumerate(scenario_rows(ws), start=1):
        engine = inputs["serving_engine"] != "hf-generate" and inputs["gpu"] == "H100-80GB-SXM"
        if engine:
            estimate = engine_estimator.estimate(Scenario(**{n: inputs[n] for n in INPUT_NAMES}))
            want = estimate.to_json()
            engine_rows += 1
        else:
            want = cli_estimate(inputs, assumptions)
        assert ws.cell(row, cols["check"]).value == "ok", row
        for key in PER_GPU_KEYS:
            assert same(want["per_gpu_bytes"][key], ws.cell(row, cols[key]).value), (row, key)
        gpu_memory = memory[inputs["gpu"]]
        assert ws.cell(row, cols["gpu_memory_bytes"]).value == gpu_memory
        assert same(gpu_memory - want["per_gpu_bytes"]["device_total"], ws.cell(row, cols["headroom_bytes"]).value)
        # (an engine fits when its pool also holds the sequences: 256 of 4,352 tokens do not fit in 40 GiB)
        fits = bool(estimate["fits_recommended"]) if engine else want["per_gpu_bytes"]["recommended"] <= gpu_memory
        assert ws.cell(row, cols["fits_recommended"]).value == int(fits), row
        # plan_seconds, the plan's third key: a training run's time, a served model's time per output token
        seconds = want["time"].get("time_to_train_seconds", want["time"].get("seconds_per_output_token"))
        candidates.append((inputs, row - FIRST_ROW + 1, fits, (want["cost"]["purchase_usd"], seconds)))
    # the fixture's engine rows: 2 engines × 2 samplers × 2 layouts × with and without adapters, and vLLM serving
    # the sliding-window models (Mistral-7B-v0.1 in bf16, gpt-oss-20b in bf16 and MXFP4), and vLLM and SGLang serving
    # the hybrid Nemotron-H-8B with a bf16 and an fp8 cache, and vLLM serving adapters on 3 MoE models at TP 1 and 2
    assert engine_rows == 16 + 3 + 4 + 6
    assert ws.cell(switched, cols["requirement"]).value == text
    added_row = [fresh["Plan"].cell(added, columns(plan)[n]).value for n in ("model", "workload", "requirement")]
    assert added_row == ["Qwen2.5-7B", "inference", text]
    # The labels follow the edits, and the copy is told apart from its source.
    labels = {row: ws.cell(row, cols["label"]).value for row in (*edits, source, copied)}
    assert labels[copied] != labels[source] and "batch 16" in labels[copied]
    # "#" is the report's number while a row stays the row written (edited or not); the copy is not numbered
    written = workbooks.load(book, data_only=True)["Scenarios"]
    assert ws.cell(copied, cols["index"]).value == "—"
    for row in (source, *edits):
        assert ws.cell(row, cols["index"]).value == written.cell(row, cols["index"]).value != "—", row
    for row, part in zip(edits, ("Qwen2.5-7B · ", " · 4×A100-80GB", " · ZeRO-2", " · 8×H100-80GB-SXM · TP8")):
        assert part in labels[row], (labels[row], part)
    assert_single_model_plan(fresh, candidates)
    charts = fresh["Charts"]
    chart_labels = {charts.cell(r, columns(charts)["label"]).value for r in range(FIRST_ROW, charts.max_row + 1)}
    assert labels[next(iter(edits))] in chart_labels  # the added Plan row's pick reaches Charts


def test_a_row_appended_away_from_its_requirement_is_planned(book, report, soffice, tmp_path):
    """A copy of a Plan pick's row pasted below the table: its requirement's rows no longer stand
    together, so that requirement's Plan rows search the whole table (`together` 0); the copy is
    tried on its GPU type's row and, tying with its source, loses to it (the earlier row). The other
    Plan rows still search only their requirement's rows and keep their answers."""
    wb = workbooks.load(book)
    ws = wb["Scenarios"]
    cols = columns(ws)
    rec = next(rec for rec in report.recommendations if rec.best and not rec.best.result.is_group)
    source = next(row for row, values in scenario_rows(ws) if values["report_index"] == rec.best.result.index)
    copy_row(ws, source, ws.max_row + 1)
    edited = tmp_path / "edited.xlsx"
    wb.save(edited)

    fresh = recalculated_values(edited, tmp_path / "out")
    plan = fresh["Plan"]
    cols = columns(plan)
    row = FIRST_ROW
    for r in report.recommendations:
        for entry in r.entries:
            cell = lambda name: plan.cell(row, cols[name]).value  # noqa: E731
            appended = r is rec and entry.gpu == rec.best.gpu
            assert cell("together") == int(r is not rec), entry
            assert cell("scenarios_tried") == entry.num_scenarios + appended, entry
            assert cell("index") == (entry.result.index if entry.result else "—"), entry
            assert cell("cheapest") == int(r.best is not None and r.best.gpu == entry.gpu), entry
            row += 1


def test_a_copy_above_the_linked_row_is_found_first(book, report, soffice, tmp_path):
    """A Plan pick's row copied over the table's first row (another requirement's): the pick's
    requirement now has a row above the one its Plan rows link to, so its first row is the copy
    (row 1, found by lookup, not the link), its rows no longer stand together, and the copy, tying
    with its source, is the earlier and so the pick. (The overwritten requirement's Plan rows keep
    its text: its other rows answer them.) Every Plan row's count, first row and `together` are those
    of its requirement text in the recalculated rows."""
    wb = workbooks.load(book)
    ws = wb["Scenarios"]
    cols = columns(ws)
    rec = next(rec for rec in report.recommendations if rec.best and not rec.best.result.is_group
               and rec.requirement != report.requirement_of(report.results[0]))
    source = next(row for row, values in scenario_rows(ws) if values["report_index"] == rec.best.result.index)
    assert source > FIRST_ROW
    copy_row(ws, source, FIRST_ROW)
    edited = tmp_path / "edited.xlsx"
    wb.save(edited)

    fresh = recalculated_values(edited, tmp_path / "out")
    assert formula_errors(fresh) == []
    texts = [fresh["Scenarios"].cell(row, cols["requirement"]).value for row in range(FIRST_ROW, ws.max_row + 1)]
    plan = fresh["Plan"]
    pcols = columns(plan)
    moved = picked = 0
    for row in range(FIRST_ROW, plan.max_row + 1):
        cell = lambda name: plan.cell(row, pcols[name]).value  # noqa: E731
        if cell("sheet") != "Scenarios":
            continue
        rows = [k for k, text in enumerate(texts, start=1) if text == cell("requirement")]
        together = int(bool(rows) and rows == list(range(rows[0], rows[0] + len(rows))))
        assert (cell("requirement_rows"), cell("requirement_first"), cell("together")) == \
            (len(rows), rows[0] if rows else 1, together), row
        moved += cell("requirement_first") != cell("link_row")
        if cell("link_row") == source - FIRST_ROW + 1 and cell("gpu") == rec.best.gpu:
            assert (cell("requirement"), cell("together"), cell("best_index")) == (texts[0], 0, 1)
            picked += 1
    assert moved >= 1 and picked == 1  # the copied requirement's first is not its link


@pytest.mark.parametrize("edit", [{"model": "Llama-2-7X"}, {"model": "Qwen2.5-7B"}], ids=["typo", "other model"])
def test_an_edited_first_row_leaves_its_requirement_planned(book, report, soffice, tmp_path, edit):
    """#34: the first row of a requirement (the row its Plan rows' search starts from) given a typo in its
    model, or another model: that row leaves the requirement (a typo makes it no candidate at all; another
    model, a requirement no Plan row names), and the requirement's Plan rows stay, answered by its other
    rows, as report.recommend answers without the edited row. No formula error anywhere."""
    wb = workbooks.load(book)
    ws = wb["Scenarios"]
    cols = columns(ws)
    rec = next(rec for rec in report.recommendations if not rec.sample.is_group and rec.best
               and rec.best.result.index != rec.sample.index and len(rec.entries) > 1)
    first = next(row for row, values in scenario_rows(ws) if values["report_index"] == rec.sample.index)
    for name, value in edit.items():
        ws.cell(first, cols[name]).value = value
    edited = tmp_path / "edited.xlsx"
    wb.save(edited)

    fresh = recalculated_values(edited, tmp_path / "out")
    assert formula_errors(fresh) == []
    text = written_requirement(book, first)
    assert fresh["Scenarios"].cell(first, cols["requirement"]).value != text  # the edited row left it
    kept = [r for r in report.results if r.index != rec.sample.index]
    gpu_types = tuple(g for g in report.gpus if g in {r.gpu for r in kept})
    expected, texts = on_written_rows(report.recommendations, recommend(kept, gpu_types, report.interchangeable), fresh)
    (still,) = [want for want, t in zip(expected, texts) if t == text]
    assert still.best is not None and still.best.result.index == rec.best.result.index
    assert sum(e.num_scenarios for e in still.entries) == sum(e.num_scenarios for e in rec.entries) - 1
    assert_plan(fresh, expected, texts)
    plan = fresh["Plan"]
    pcols = columns(plan)
    rows = [row for row in range(FIRST_ROW, plan.max_row + 1) if plan.cell(row, pcols["requirement"]).value == text]
    assert len(rows) == len(rec.entries)  # every Plan row of the requirement is still there, with its text
    assert {plan.cell(row, pcols["model"]).value for row in rows} == {rec.model}


def test_a_plan_row_added_away_from_its_requirement_is_compared(book, report, soffice, tmp_path):
    """A requirement's cheapest Plan row copied below the Plan, and the original's GPU type changed to
    another of the requirement's: its Plan rows no longer stand together (`plan_together` 0), so the
    cheapest marks compare every Plan row; the copy alone is marked. The other requirements' Plan
    rows still compare only theirs and keep their marks."""
    rec = next(rec for rec in report.recommendations
               if rec.best and not rec.best.result.is_group and len(rec.entries) > 1)
    plan_rows = {(r.requirement, entry.gpu): row for row, (r, entry) in enumerate(
        ((r, entry) for r in report.recommendations for entry in r.entries), start=FIRST_ROW)}
    best = plan_rows[(rec.requirement, rec.best.gpu)]
    other = next(entry.gpu for entry in rec.entries if entry.gpu != rec.best.gpu)
    wb = workbooks.load(book)
    plan = wb["Plan"]
    cols = columns(plan)
    copied = plan.max_row + 1
    copy_row(plan, best, copied)
    plan.cell(best, cols["gpu"]).value = other
    edited = tmp_path / "edited.xlsx"
    wb.save(edited)

    fresh = recalculated_values(edited, tmp_path / "out")
    assert formula_errors(fresh) == []
    plan = fresh["Plan"]
    cell = lambda row, name: plan.cell(row, cols[name]).value  # noqa: E731
    assert (cell(copied, "cheapest"), cell(copied, "plan_together")) == (1, 0)
    for (requirement, gpu), row in plan_rows.items():
        mine = requirement == rec.requirement
        assert cell(row, "plan_together") == int(not mine), (requirement, gpu)
        r = next(r for r in report.recommendations if r.requirement == requirement)
        assert cell(row, "cheapest") == int(not mine and r.best is not None and r.best.gpu == gpu), (requirement, gpu)


def written_requirement(book: Path, row: int) -> str:
    ws = workbooks.load(book, data_only=True)["Scenarios"]
    return ws.cell(row, columns(ws)["requirement"]).value


def assert_single_model_plan(wb, candidates) -> None:
    """Each single-model Plan row picks, among the rows of its model × workload × requirement × GPU
    type, the first fitting candidate by report.PLAN_ORDER (cost, GPUs, speed, row order), and marks the
    first of its requirement across GPU types."""
    plan = wb["Plan"]
    cols = columns(plan)
    picks = {}
    for row in range(FIRST_ROW, plan.max_row + 1):
        key = tuple(plan.cell(row, cols[n]).value for n in ("model", "workload", "requirement", "gpu"))
        if plan.cell(row, cols["sheet"]).value != "Scenarios":
            continue
        tried = [c for c in candidates if tuple(c[0][n] for n in ("model", "workload", "requirement", "gpu")) == key]
        fitting = sorted((cost, c[0]["num_gpus"], seconds, position)
                         for c in tried for _, position, fits, (cost, seconds) in [c] if fits)
        assert plan.cell(row, cols["scenarios_tried"]).value == len(tried), key
        found = plan.cell(row, cols["best_index"]).value
        assert found == (fitting[0][3] if fitting else 10**15), key
        picks[row] = (key, fitting[0] if fitting else None)
    assert sum(plan.cell(row, cols["scenarios_tried"]).value for row in picks) > 20
    for row, (key, best) in picks.items():
        rivals = [b for k, b in picks.values() if k[:3] == key[:3] and b]
        want = int(best is not None and best == min(rivals))
        assert plan.cell(row, cols["cheapest"]).value == want, key


# ---------------------------------------------------------------------------------------------
# --lang zh

def test_the_chinese_workbook_has_the_same_formulas_in_chinese_words(report, book, soffice, tmp_path):
    """Labels, texts and check reasons in Chinese (the report's translations where they exist); the
    formulas are the English workbook's but for their text literals; LibreOffice gives the Chinese
    reason of a bad edit."""
    (zh_book,) = write_outputs(report, tmp_path / "zh", ["xlsx"], "zh")
    literals = re.compile(r'"(?:[^"]|"")*"')
    # a format with more or fewer words joins more or fewer texts, and a text past Excel's 255 characters is written
    # as its pieces joined in parentheses
    joined_text = re.compile(r'&""|""&')
    split_text = re.compile(r'\(""(?:&"")+\)')

    def formulas(path):
        wb = workbooks.load(path)
        return [(ws.title, c.coordinate, joined_text.sub("", split_text.sub('""', literals.sub('""', c.value))))
                for ws in wb for row in ws.iter_rows() for c in row
                if isinstance(c.value, str) and c.value.startswith("=")]

    assert formulas(zh_book) == formulas(book)
    wb = workbooks.load(zh_book)
    ws = wb["Scenarios"]
    cols = columns(ws)
    assert ws.cell(2, cols["check"]).value == "检查" and ws.cell(2, cols["kv_cache"]).value.startswith("KV 缓存")
    assert wb["Guide"]["A5"].value == "这个工作簿是什么"
    row = find_row(ws, model="Llama-3.1-70B", group=None)
    ws.cell(row, cols["tp_size"]).value = 3
    edited = tmp_path / "edited.xlsx"
    wb.save(edited)
    fresh = recalculated_values(edited, tmp_path / "out")["Scenarios"]
    assert fresh.cell(row, cols["check"]).value == load_catalogue("zh")("skip.tp_gpus", tp=3, gpus=4)
    assert fresh.cell(row, cols["check"]).value == "tp_size 3 不能整除卡数 4"


def _recalculated(wb, tmp_path):
    """The edited workbook saved, recalculated by LibreOffice (no cell an error) and read back (values)."""
    edited = tmp_path / "edited.xlsx"
    wb.save(edited)
    fresh = recalculated_values(edited, tmp_path / "out")
    assert formula_errors(fresh) == []
    return fresh


def _role_row(ws, r, role) -> int:
    return find_row(ws, report_index=r.index, role=role)


def _group_row(rl, r) -> int:
    return find_row(rl, index=r.index)


def _assert_groups_laid_out_anew(ws, rl, wanted, names) -> None:
    """Each (group, its RlhfScenario laid out anew) of the recalculated sheets: every role row's `names`, checks and
    allocated peaks, and the group row's totals, are the estimator's; some role's `names` changed."""
    cols, rcols = columns(ws), columns(rl)
    estimator = load(str(FIXTURE)).estimator
    for r, g in wanted:
        want = estimator.estimate_group(g)
        before = {role: e.scenario for role, e in r.estimate.roles}
        changed = 0
        for role, est in want.roles:
            row = _role_row(ws, r, role)
            assert ws.cell(row, cols["check"]).value == "ok", (r.index, role)
            for name in names:
                assert ws.cell(row, cols[name]).value == getattr(est.scenario, name), (r.index, role, name)
                changed += getattr(est.scenario, name) != getattr(before[role], name)
            assert same(est.values["allocated_peak"], ws.cell(row, cols["allocated_peak"]).value), (r.index, role)
        assert changed, r.index  # the edit changed some role
        row = _group_row(rl, r)
        assert rl.cell(row, rcols["check"]).value == "ok"
        for name in ("allocated_peak", "iteration_seconds", "total_gpus", "purchase_usd", "fits_recommended"):
            assert same(want.values[name], rl.cell(row, rcols[name]).value), (r.index, name)


def test_an_rlhf_groups_settings_and_gpus_re_split_its_roles_like_the_cli(book, report, soffice, tmp_path):
    """#33: an RLHF group's split is live: the actor's GPU count edited on a colocated group (every role follows and
    re-splits), a group's prompts per iteration and micro-batch edited on its RLHF row, a separate pool's GPUs
    edited on its role row, and the actor's and the engines' GPUs of colocated trainers beside engines apart (the
    trainers follow the actor, the engines keep their own) with its rollouts made async: each group recalculated by
    LibreOffice is the estimator's group laid out anew (relayout), role by role. A typo in a setting and prompts
    that do not split name themselves in the group's check, and no cell shows an error."""
    colocated = next(r for r in report.results if r.is_group and r.workload == "ppo" and r.lead.num_gpus == 2)
    engine = next(r for r in report.results if r.is_group and dict(r.estimate.scenario.settings)["micro_batch_size"]
                  and r.estimate.scenario.placement == "colocated" and r.lead.num_gpus == 2
                  and len(r.estimate.roles) == 3)
    apart = next(r for r in report.results if r.is_group and r.workload == "grpo"
                 and r.estimate.scenario.placement == "separate"
                 and dict(r.estimate.scenario.settings)["rollout_placement"] == "actor")
    typo = next(r for r in report.results if r.is_group and r.workload == "grpo" and r.index != engine.index
                and r.estimate.scenario.placement == "colocated")
    # a typo in the micro-batch of a group whose requirement reads its batch (no prompts per iteration given)
    micro_typo = next(r for r in report.results if r.is_group and r.workload == "ppo" and r.index != colocated.index)
    uneven = next(r for r in report.results if r.is_group and r.index not in {x.index for x in (colocated, engine, apart, typo)}
                  and dict(r.estimate.scenario.settings)["prompts_per_iteration"])
    mixed = next(r for r in report.results if r.is_group and r.estimate.scenario.placement == "colocated"
                 and r.estimate.scenario.pooled_roles)
    assert mixed.index not in {x.index for x in (colocated, engine, apart, typo, uneven, micro_typo)}
    beside = next(r for r in report.results if r.is_group and r.workload == "ppo"
                  and r.index not in {x.index for x in (colocated, micro_typo)})  # its engine beside the actor
    wb = workbooks.load(book)
    ws, rl = wb["Scenarios"], wb["RLHF"]
    cols, rcols = columns(ws), columns(rl)

    ws.cell(_role_row(ws, colocated, "actor"), cols["num_gpus"]).value = 4
    rl.cell(_group_row(rl, engine), rcols["prompts_per_iteration"]).value = 32
    rl.cell(_group_row(rl, engine), rcols["micro_batch_size"]).value = 8
    ws.cell(_role_row(ws, apart, "reference"), cols["num_gpus"]).value = 2
    rl.cell(_group_row(rl, typo), rcols["group_size"]).value = "8x"
    rl.cell(_group_row(rl, uneven), rcols["prompts_per_iteration"]).value = 63
    rl.cell(_group_row(rl, micro_typo), rcols["micro_batch_size"]).value = "2x"
    ws.cell(_role_row(ws, mixed, "actor"), cols["num_gpus"]).value = 4
    ws.cell(_role_row(ws, mixed, "rollout"), cols["num_gpus"]).value = 1
    rl.cell(_group_row(rl, mixed), rcols["rollout_mode"]).value = "async"
    rl.cell(_group_row(rl, beside), rcols["rollout_mode"]).value = "async"
    written_requirement = workbooks.load(book, data_only=True)["RLHF"].cell(_group_row(rl, micro_typo),
                                                                                   rcols["requirement"]).value
    fresh = _recalculated(wb, tmp_path)
    ws, rl = fresh["Scenarios"], fresh["RLHF"]

    apart_gpus = {**dict(apart.estimate.scenario.settings)["role_gpus"], "reference": 2}
    _assert_groups_laid_out_anew(ws, rl, [
        (colocated, colocated.estimate.scenario.relayout(num_gpus=4)),
        (engine, engine.estimate.scenario.relayout({"prompts_per_iteration": 32, "micro_batch_size": 8})),
        (apart, apart.estimate.scenario.relayout({"role_gpus": apart_gpus})),
        (mixed, mixed.estimate.scenario.relayout({"role_gpus": {"rollout": 1}, "rollout_mode": "async"}, num_gpus=4))],
        ("num_gpus", "gpu", "batch_size", "grad_accum_steps", "zero_stage"))
    # the colocated group: every role on the actor's 4 GPUs, each rank still the batch given (2 prompts)
    assert {ws.cell(_role_row(ws, colocated, role), cols["num_gpus"]).value for role, _ in colocated.estimate.roles} == {4}
    assert {role: ws.cell(_role_row(ws, mixed, role), cols["num_gpus"]).value for role, _ in mixed.estimate.roles} == {
        "actor": 4, "reference": 4, "reward": 4, "rollout": 1}
    assert rl.cell(_group_row(rl, mixed), rcols["total_gpus"]).value == 5
    assert rl.cell(_group_row(rl, beside), rcols["check"]).value == (
        "rollout_mode: async needs the rollout engine apart (rollout_placement separate): beside the actor it sleeps "
        "while the actor trains")
    assert rl.cell(_group_row(rl, typo), rcols["check"]).value == "group_size: expected a whole number, got '8x'"
    ranks = rl.cell(_group_row(rl, uneven), rcols["actor_ranks"]).value
    assert ranks > 1 and 63 % ranks
    assert rl.cell(_group_row(rl, uneven), rcols["check"]).value == (
        f"prompts_per_iteration: must split evenly over the actor's {ranks} data-parallel ranks, got 63")
    assert rl.cell(_group_row(rl, micro_typo), rcols["check"]).value == "micro_batch_size: expected a whole number, got '2x'"
    # its requirement still the job's (its batch as typed), not an error the Plan and Charts would read
    assert rl.cell(_group_row(rl, micro_typo), rcols["requirement"]).value == written_requirement
    for r in (typo, uneven, micro_typo, beside):  # its figures blank, as a checked row's are
        assert rl.cell(_group_row(rl, r), rcols["allocated_peak"]).value in (None, "")


def test_an_rlhf_groups_lengths_and_actor_inputs_are_its_roles_like_the_cli(book, report, soffice, tmp_path):
    """#33: a group's roles follow its lengths (the RLHF row's prompt, mean and longest response, padded roles) and
    its actor's inputs (the first role row's model, checkpointing…) as the estimator's roles follow its actor: the
    mean response of a colocated PPO group 256 → 512 with its actor's model and checkpointing edited (the reference
    follows the model, the named critic and reward keep theirs), the prompt of a group whose engines have GPUs of their
    own 256 → 512 (the engines' rows take it, the actor's stays without rollouts), every role of a separate GRPO group
    padded to the prompt and a longest response of 1,024. Recalculated by LibreOffice, each is the estimator's group laid out anew (relayout), role by role. A typo in
    a length names itself on the group's row and on each of its role rows; no cell shows an error."""
    ppo = next(r for r in report.results if r.is_group and r.workload == "ppo" and r.lead.num_gpus == 2
               and r.lead.gpu == "A100-80GB")
    apart = next(r for r in report.results if r.is_group
                 and dict(r.estimate.scenario.settings)["rollout_placement"] == "separate")
    padded = next(r for r in report.results if r.is_group and r.workload == "grpo"
                  and r.estimate.scenario.placement == "separate"
                  and dict(r.estimate.scenario.settings)["rollout_placement"] == "actor")
    typo = next(r for r in report.results if r.is_group and r.workload == "grpo" and r.index != padded.index
                and r.estimate.scenario.placement == "colocated")
    assert dict(ppo.estimate.scenario.settings)["critic_model"] and not dict(ppo.estimate.scenario.settings)["reference_model"]
    wb = workbooks.load(book)
    ws, rl = wb["Scenarios"], wb["RLHF"]
    cols, rcols = columns(ws), columns(rl)

    # the role rows' inputs that follow are formulas, styled as figures (not as the yellow inputs a planner types)
    critic = _role_row(ws, ppo, "critic")
    for name in ("seq_len", "checkpointing", "precision", "batch_size"):
        assert str(ws.cell(critic, cols[name]).value).startswith("="), name
        assert ws.cell(critic, cols[name]).fill.fgColor.rgb != ws.cell(_role_row(ws, ppo, "actor"), cols["num_gpus"]).fill.fgColor.rgb
    assert ws.cell(critic, cols["model"]).value == "Qwen2.5-0.5B"  # named: its own
    rl.cell(_group_row(rl, ppo), rcols["given_gen_len"]).value = 512
    ws.cell(_role_row(ws, ppo, "actor"), cols["model"]).value = "Llama-3.1-8B"
    ws.cell(_role_row(ws, ppo, "actor"), cols["checkpointing"]).value = "selective"
    rl.cell(_group_row(rl, apart), rcols["given_prompt_len"]).value = 512
    rl.cell(_group_row(rl, padded), rcols["padded_roles"]).value = "all"
    rl.cell(_group_row(rl, padded), rcols["given_max_gen_len"]).value = 1024
    rl.cell(_group_row(rl, typo), rcols["given_gen_len"]).value = "1k"
    fresh = _recalculated(wb, tmp_path)
    ws, rl = fresh["Scenarios"], fresh["RLHF"]

    _assert_groups_laid_out_anew(ws, rl, [
        (ppo, ppo.estimate.scenario.relayout(model="Llama-3.1-8B", checkpointing="selective", gen_len=512)),
        (apart, apart.estimate.scenario.relayout(prompt_len=512)),
        (padded, padded.estimate.scenario.relayout({"padded_roles": "all"}, max_gen_len=1024))],
        ("model", "checkpointing", "seq_len", "prompt_len", "gen_len", "max_gen_len", "num_gpus", "batch_size",
         "grad_accum_steps", "zero_stage", "tp_size"))
    assert [ws.cell(_role_row(ws, ppo, role), cols["model"]).value for role in ("actor", "critic", "reference", "reward")] == [
        "Llama-3.1-8B", "Qwen2.5-0.5B", "Llama-3.1-8B", "Qwen2.5-0.5B"]
    assert (ws.cell(_role_row(ws, apart, "actor"), cols["prompt_len"]).value,
            ws.cell(_role_row(ws, apart, "rollout"), cols["prompt_len"]).value) == (0, 512)
    reason = "given_gen_len: expected a whole number, got '1k'"
    assert rl.cell(_group_row(rl, typo), rcols["check"]).value == reason
    for role, _ in typo.estimate.roles:
        assert ws.cell(_role_row(ws, typo, role), cols["check"]).value == (
            f"the group's settings (RLHF row {_group_row(rl, typo)}): {reason}")
    assert rl.cell(_group_row(rl, typo), rcols["allocated_peak"]).value in (None, "")
