"""The workbook's Scenarios rows of sweep blocks, computed as columns (writers/xlsx/columns.py and the
stream's CellColumns), against the object path they replace: the same workbook, for every bundled
preset and for random matrices: the same parts in the same order, each byte for byte once inflated
(ISA-L's deflate, stream.py, compresses the same XML to other bytes when the rows reach it in other
pieces). The object path is the report of `expand(..., columnar=False)`: one Result and one dict per row."""
from __future__ import annotations

import zipfile
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings

from test_columnar import BASE, EXPLICIT, SERVING_GOAL, WHEN, both, from_mapping, matrices
from reportgen.errors import InputError
from reportgen.pipeline import load, make_report
from reportgen.scenarios.presets import bundled_presets
from reportgen.writers import xlsx
from reportgen.writers.xlsx.book import build_book
from reportgen.writers.xlsx.columns import BlockRows, ColumnRows, SmallRuns, TableColumns


def workbooks(loaded, folder: Path) -> tuple[list, list]:
    """(columnar, object path) workbooks of one preset, as their parts: [(name, date, XML bytes)]."""
    out = []
    for report, name in zip(both(loaded), ("columnar", "objects")):
        xlsx.write(report, folder / f"{name}.xlsx")
        with zipfile.ZipFile(folder / f"{name}.xlsx") as package:
            out.append([(i.filename, i.date_time, package.read(i)) for i in package.infolist()])
    return out[0], out[1]


@pytest.mark.parametrize("name", sorted(bundled_presets()))
def test_every_bundled_preset_gives_the_object_paths_workbook(name, tmp_path):
    columnar, objects = workbooks(load(name), tmp_path)
    assert columnar == objects


def test_the_default_workbook_is_mostly_block_rows():
    """The check above compares something: most of the default preset's Scenarios rows come from blocks."""
    book = build_book(make_report(load("default"), WHEN))
    block_rows = sum(len(run) for run in book.scenario_rows.parts if isinstance(run, ColumnRows))
    assert block_rows > len(book.scenario_rows) / 2


def test_a_block_split_by_rows_of_its_requirements_elsewhere(tmp_path):
    """Explicit scenarios of a block's requirements stand among its rows: the block is written in
    several runs (small runs, computed and written together), the table's first row (the shared
    formulas' text) among them."""
    raw = {"title": "t", "matrices": [{"name": "m", "model": ["Llama-3-8B", "Qwen2.5-7B"], "workload": "full",
                                       "seq_len": [512, 1024], "num_gpus": [1, 8], "zero_stage": [0, 3]}],
           "scenarios": [{"name": "x", "model": "Qwen2.5-7B", "workload": "full", "seq_len": 512, "num_gpus": 2},
                         {"name": "y", "model": "Llama-3-8B", "workload": "full", "seq_len": 512, "num_gpus": 2}]}
    loaded = from_mapping(raw, BASE)
    book = build_book(make_report(loaded, WHEN))
    runs = [r for run in book.scenario_rows.parts for r in (run.runs if isinstance(run, SmallRuns) else (run,))]
    assert sum(isinstance(run, BlockRows) and run.part.block.matrix == "m" for run in runs) >= 3
    columnar, objects = workbooks(loaded, tmp_path)
    assert columnar == objects


def test_goal_matrices_give_the_object_paths_workbook(tmp_path):
    """A serving goal's block (its batch and prompt set per layout) beside a training goal's block and a
    matrix without a goal: the goal cells, goal_met and the Plan as the object path writes them."""
    training = {"name": "ft", "model": ["Llama-3-8B"], "workload": "full", "num_gpus": [1, 8], "zero_stage": [0, 3],
                "goal": {"within": "1d"}}
    plain = {"name": "lora", "model": ["Llama-3-8B"], "workload": "lora", "gpu": ["L40S", "H100-80GB-SXM"]}
    loaded = from_mapping({"title": "t", "matrices": [SERVING_GOAL, training, plain]}, BASE)
    assert all(isinstance(run, ColumnRows) for run in build_book(make_report(loaded, WHEN)).scenario_rows.parts)
    columnar, objects = workbooks(loaded, tmp_path)
    assert columnar == objects


def test_explicit_scenarios_give_the_object_paths_workbook(tmp_path):
    """Explicit scenarios held as blocks (their names an axis): each row's name, label and plan cells."""
    columnar, objects = workbooks(from_mapping({"title": "t", "scenarios": EXPLICIT}, BASE), tmp_path)
    assert columnar == objects


def test_one_row_matrices_are_one_run_of_the_workbook(tmp_path):
    """Consecutive small blocks' rows are computed and written together (SmallRuns): the object path's
    workbook, and the Plan's picks read from them."""
    matrices = [{"name": f"m{i}", "model": ["Llama-3-8B", "Qwen2.5-7B"][i % 2], "batch_size": 1 + i % 4,
                 "workload": ["inference", "full", "lora"][i % 3], "gpu": ["H100-80GB-SXM", "L40S"][i % 5 // 4]}
                for i in range(120)]
    loaded = from_mapping({"title": "t", "matrices": matrices}, BASE)
    runs = build_book(make_report(loaded, WHEN)).scenario_rows.parts
    assert [type(run) for run in runs] == [SmallRuns] and len(runs[0].runs) > 1
    columnar, objects = workbooks(loaded, tmp_path)
    assert columnar == objects


def test_rows_the_scalar_path_computed_are_written_from_their_values(monkeypatch, tmp_path):
    """A chunk's overrides (rows an array cannot hold exactly: vector.py) are written from their values,
    as the object path writes every row. Forced here on a few rows of every chunk (of a block's run, and of
    small blocks' runs computed together), with their true values."""
    evaluate, evaluate_runs = TableColumns.evaluate, TableColumns.evaluate_runs
    forced = []

    def overridden(chunk):
        rows = list(chunk.rows())
        forced.append(chunk.size)
        return replace(chunk, overrides={k: rows[k] for k in range(0, chunk.size, 7)})

    def with_overrides(self, *args, **kwargs):
        for chunk, columns in evaluate(self, *args, **kwargs):
            yield overridden(chunk), columns

    def runs_with_overrides(self, runs):
        chunk, columns = evaluate_runs(self, runs)
        return overridden(chunk), columns

    monkeypatch.setattr(TableColumns, "evaluate", with_overrides)
    monkeypatch.setattr(TableColumns, "evaluate_runs", runs_with_overrides)
    columnar, objects = workbooks(load("default"), tmp_path)
    assert columnar == objects
    assert max(forced) > 100  # (the default's small blocks are computed together)


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(matrices())
def test_random_matrices_give_the_object_paths_workbook(tmp_path, matrix):
    try:
        loaded = from_mapping({"title": "random", "matrices": [matrix]}, BASE)
    except InputError:
        return  # both paths refuse it alike (test_columnar.py)
    columnar, objects = workbooks(loaded, tmp_path)
    assert columnar == objects
