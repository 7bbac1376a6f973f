"""A planner's hand edits: the workbook, edited as a person would and recalculated by LibreOffice,
gives what `reportgen estimate --json` prints for the same inputs.

Expected values come from the command line (a real client of the estimator), never from the
workbook writer. LibreOffice is required (see test_xlsx.py).
"""
from __future__ import annotations

import json
from pathlib import Path

import openpyxl
import pytest
from click.testing import CliRunner

from lo import recalculate
from reportgen.cli import main
from reportgen.inputs import INPUTS
from reportgen.pipeline import load, make_report, write_outputs
from reportgen.terms import ASSUMPTIONS, PER_GPU_KEYS
from test_xlsx import FIRST_ROW, FIXTURE, STAMP, columns, same, soffice  # noqa: F401 (soffice: a fixture)

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def report():
    return make_report(load(str(FIXTURE)), STAMP)


@pytest.fixture(scope="module")
def book(report, tmp_path_factory) -> Path:
    (path,) = write_outputs(report, tmp_path_factory.mktemp("book"), ["xlsx"], "en")
    return path


def cli_estimate(inputs: dict, assumptions: dict, *, config: Path | None = None) -> dict:
    """`reportgen estimate --json` for a Scenarios row's inputs (and the workbook's assumptions)."""
    args = ["estimate", "--json", "--workload", inputs["workload"]]
    args += ["--config", str(config)] if config else ["--model", inputs["model"]]
    args += [arg for i in INPUTS if i.option for arg in (i.option, str(inputs[i.name]))]
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
    wb = openpyxl.load_workbook(book)
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

    before = openpyxl.load_workbook(book, data_only=True)["Scenarios"]
    fresh = openpyxl.load_workbook(recalculate(edited, tmp_path / "out"), data_only=True)["Scenarios"]
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
