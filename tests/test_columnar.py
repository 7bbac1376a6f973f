"""Columnar sweeps (sweep.py, report.Results, writers/json_columns.py) against the object path they
replace: the same scenarios, skips, errors, plan and JSON text, byte for byte, for every bundled preset
and for random matrices. `expand(..., columnar=False)` is the loop over one Scenario at a time."""
from __future__ import annotations

import random
from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reportgen.errors import InputError
from reportgen.model.estimate import SWEEP_ROW_INPUTS, Scenario
from reportgen.pipeline import Loaded, load, make_report
from reportgen.scenarios.presets import Preset, bundled_presets, expand
from reportgen.report.build import BlockResults, Results
from reportgen.scenarios.sweep import SweepBlock
from reportgen.writers.json_writer import json_chunks
from reportgen.model.vector import VectorTerms

WHEN = "2026-01-01T00:00:00+00:00"


def both(loaded: Loaded):
    """(columnar report, object report) of one preset."""
    objects = replace(loaded, expansion=expand(loaded.preset, loaded.estimator, columnar=False))
    return make_report(loaded, WHEN), make_report(objects, WHEN)


def from_mapping(raw: dict, base: Loaded) -> Loaded:
    preset = Preset.from_mapping(raw, name="random", source="random.yaml")
    return Loaded(preset, base.estimator, expand(preset, base.estimator))


def errors_of_both(preset: Preset, estimator) -> list[str]:
    """The error each path raises expanding `preset` (columnar, then objects)."""
    messages = []
    for columnar in (True, False):
        with pytest.raises(InputError) as error:
            expand(preset, estimator, columnar=columnar)
        messages.append(str(error.value))
    return messages


@pytest.fixture(scope="module")
def default():
    return load("default")


@pytest.mark.parametrize("name", sorted(bundled_presets()))
def test_every_bundled_preset_gives_the_object_paths_json(name):
    loaded = load(name)
    columnar, objects = both(loaded)
    assert list(loaded.expansion.scenarios) == list(expand(loaded.preset, loaded.estimator, columnar=False).scenarios)
    assert columnar.recommendations == objects.recommendations
    assert b"".join(json_chunks(columnar)) == b"".join(json_chunks(objects))


def test_the_default_preset_is_mostly_columns(default):
    """The check above compares something: most of the default preset's scenarios are held as blocks."""
    blocks = [p for p in default.expansion.scenarios.blocks if isinstance(p, SweepBlock)]
    assert sum(b.size for b in blocks) > len(default.expansion.scenarios) / 2
    assert default.expansion.skipped  # and some were skipped by the array check


# A random matrix over inputs whose values interact (skips, kinds of row, requirements, fits).
AXIS_CHOICES = {
    "model": [["Llama-3-8B"], ["Llama-3-8B", "Qwen2.5-7B"], ["Mixtral-8x7B", "Llama-2-13B", "Qwen2.5-14B"]],
    "batch_size": [[1], [1, 4], [2, 8, 32]],
    "seq_len": [[512], [1024, 4096], [256, 2048, 32768]],
    "num_gpus": [[1], [1, 2, 8], [4, 16]],
    "zero_stage": [[0], [0, 3], [1, 2, 3]],
    "tp_size": [[1], [1, 2], [1, 4, 8], ["num_gpus"], [8, "num_gpus", 1]],
    "gpu": [["H100-80GB-SXM"], ["A100-80GB", "RTX-4090"], ["H100-80GB-SXM", "MI300X", "L40S"]],
    "checkpointing": [["none"], ["none", "full"]],
    "weight_dtype": [["bf16"], ["bf16", "int4"]],
    "serving_engine": [["hf-generate"], ["hf-generate", "vllm"]],
    "prompt_len": [[512], [128, 4096]],
}


@st.composite
def matrices(draw):
    keys = draw(st.lists(st.sampled_from(sorted(AXIS_CHOICES)), max_size=4, unique=True))  # a few hundred rows at most
    axes = {k: draw(st.sampled_from(AXIS_CHOICES[k])) for k in sorted(keys)}
    workloads = draw(st.lists(st.sampled_from(["inference", "full", "lora", "qlora"]), min_size=1, max_size=3,
                              unique=True))
    matrix = {"name": "m", "model": axes.pop("model", ["Llama-3-8B"]), **axes,
              "workload": [{"type": w} for w in workloads]}
    if draw(st.booleans()) and "batch_size" in axes:
        matrix["interchangeable"] = ["batch_size"]
    if draw(st.booleans()) and len(matrix["model"]) > 1 and len(workloads) > 1:
        matrix["exclude"] = [{"model": matrix["model"][0], "workload": workloads[-1]}]
    goal = draw(st.sampled_from([None, {"within": "2d"}, {"min_tokens_per_s": 20}, {"max_ttft": 1},
                                 {"users": 16, "context": 4096, "min_tokens_per_s": 10}]))
    if goal is not None:  # the plan is gated row by row; a serving goal sets each row's batch and prompt
        matrix["goal"] = goal
    return matrix


BASE = load("default")


@st.composite
def explicit_scenarios(draw):
    """A few explicit scenarios: each some inputs of AXIS_CHOICES (one value each), its own workload (RLHF
    among them), a name or none."""
    out = []
    for i in range(draw(st.integers(1, 6))):
        keys = draw(st.lists(st.sampled_from(sorted(AXIS_CHOICES)), max_size=4, unique=True))
        raw = {k: draw(st.sampled_from(draw(st.sampled_from(AXIS_CHOICES[k])))) for k in keys}
        raw.setdefault("model", "Llama-3-8B")
        raw["workload"] = draw(st.sampled_from(["inference", "full", "lora", "qlora", "ppo"]))
        if draw(st.booleans()):
            raw["name"] = draw(st.sampled_from(["a", "b", f"s{i}"]))
        out.append(raw)
    return out


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(matrices())
def test_random_matrices_give_the_object_paths_scenarios_plan_and_json(matrix):
    assert_as_the_object_path({"title": "random", "matrices": [matrix]})


def assert_as_the_object_path(raw: dict) -> None:
    """The preset's scenarios, skips, GPU types, plan and JSON are the object path's, or its error is."""
    try:
        loaded = from_mapping(raw, BASE)
    except InputError as columnar_error:
        preset = Preset.from_mapping(raw, name="random", source="random.yaml")
        with pytest.raises(InputError) as object_error:
            expand(preset, BASE.estimator, columnar=False)
        assert str(object_error.value) == str(columnar_error)
        return
    columnar, objects = both(loaded)
    assert tuple(columnar.results) == tuple(objects.results)
    assert columnar.skipped == objects.skipped
    assert columnar.gpu_types == objects.gpu_types
    assert columnar.recommendations == objects.recommendations
    assert b"".join(json_chunks(columnar)) == b"".join(json_chunks(objects))


def test_a_goal_that_sets_no_input_leaves_its_matrix_columns():
    """finetune's full fine-tuning matrix has a deadline (it sets no input): every matrix of the preset is
    blocks, and the check above compares its plan, goal gate included, with the object path's."""
    loaded = load("finetune")
    assert loaded.expansion.goals and all(isinstance(p, SweepBlock) for p in loaded.expansion.scenarios.blocks)
    columnar, objects = both(loaded)
    # the gate takes effect: some GPU type has a fitting configuration that misses the deadline
    assert any(e.closest is not None for r in columnar.recommendations for e in r.entries)
    assert columnar.recommendations == objects.recommendations


SERVING_GOAL = {"name": "serve", "model": ["Llama-3-8B", "Qwen2.5-7B"], "workload": "inference",
                "num_gpus": [1, 2, 8], "tp_size": [1, 2], "gen_len": [256, 1024], "gpu": ["H100-80GB-SXM", "L40S"],
                "serving_engine": ["hf-generate", "vllm"], "goal": {"users": 50, "context": 8192, "min_tokens_per_s": 20}}


def test_a_serving_goals_batch_and_prompt_are_columns_of_its_block():
    """A serving goal sets each row's batch (the users over its data-parallel replicas) and prompt (the
    context less its generated tokens): the block holds them as axes whose kept combination is the goal's
    for each layout, and gives the object path's scenarios, plan and JSON."""
    loaded = from_mapping({"title": "t", "matrices": [SERVING_GOAL]}, BASE)
    (block,) = loaded.expansion.scenarios.blocks
    assert isinstance(block, SweepBlock) and block.names[-2:] == ("batch_size", "prompt_len")
    scenarios = [s for _, s in loaded.expansion.scenarios]
    assert {(s.num_gpus // s.tp_size, s.batch_size) for s in scenarios} == {(1, 50), (2, 25), (4, 13), (8, 7)}
    assert {(s.gen_len, s.prompt_len) for s in scenarios} == {(256, 7936), (1024, 7168)}
    columnar, objects = both(loaded)
    assert tuple(columnar.results) == tuple(objects.results) and columnar.skipped == objects.skipped
    assert columnar.recommendations == objects.recommendations
    assert b"".join(json_chunks(columnar)) == b"".join(json_chunks(objects))


@pytest.mark.parametrize("axes", [{"gen_len": [256, 8192]}, {"gen_len": [9000, "x"]}, {"gen_len": ["x", 9000]},
                                  {"gen_len": [256, 9000], "batch_size": [1, 2]}, {"gen_len": [256], "seq_len": [0]},
                                  {"gen_len": [256, 9000], "num_gpus": [1, -2]}, {"gen_len": [9000], "num_gpus": [-2]}])
def test_a_serving_goals_errors_are_the_loops(axes):
    """The loop checks a row's inputs, then the goal's context against its generated tokens: the columns
    report the error it meets first."""
    matrix = {**SERVING_GOAL, **axes}
    preset = Preset.from_mapping({"title": "t", "matrices": [matrix]}, name="t", source="t.yaml")
    columnar, objects = errors_of_both(preset, BASE.estimator)
    assert columnar == objects


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(explicit_scenarios())
def test_random_explicit_scenarios_give_the_object_paths_scenarios_plan_and_json(scenarios):
    assert_as_the_object_path({"title": "random", "scenarios": scenarios})


EXPLICIT = [{"name": "a", "model": "Llama-3-8B", "workload": "full", "num_gpus": 8, "zero_stage": 3},
            {"name": "b", "model": "Qwen2.5-7B", "workload": "full", "seq_len": 4096},
            {"model": "Llama-3.1-70B", "workload": "full", "num_gpus": 8, "tp_size": 3},
            {"name": "d", "model": "Llama-3-8B", "workload": "inference", "tp_size": "num_gpus", "num_gpus": 2},
            {"name": "e", "model": "Llama-3-8B", "workload": {"type": "lora", "lora_rank": 8}},
            {"name": "f", "model": "Llama-3-8B", "workload": {"type": "ppo"}},
            {"name": "a", "model": "Llama-3-8B", "workload": "full", "num_gpus": 8, "zero_stage": 3},
            {"name": "g", "model": "Llama-3-8B", "workload": "full"}]


def test_explicit_scenarios_are_blocks_of_their_runs():
    """Consecutive explicit scenarios of one single-model workload are one block (each input and the names
    its axes; two alike stay two rows); an RLHF group stays an object between them. The object path's
    scenarios, skips, plan and JSON."""
    loaded = from_mapping({"title": "t", "scenarios": EXPLICIT}, BASE)
    parts = loaded.expansion.scenarios.blocks
    assert [p.size if isinstance(p, SweepBlock) else len(p) for p in parts] == [2, 1, 1, 1, 2]
    assert [s.name for _, s in loaded.expansion.scenarios][:2] == ["a", "b"]
    assert [(k.matrix, k.scenario.tp_size) for k in loaded.expansion.skipped] == [("scenarios", 3)]
    columnar, objects = both(loaded)
    assert tuple(columnar.results) == tuple(objects.results) and columnar.skipped == objects.skipped
    assert columnar.recommendations == objects.recommendations
    assert b"".join(json_chunks(columnar)) == b"".join(json_chunks(objects))


@pytest.mark.parametrize("bad", [{1: {"seq_len": 0}, 2: {"gpu": "H1OO"}}, {2: {"seq_len": 0}, 1: {"nme": "x"}},
                                 {0: {"name": 3}, 1: {"model": "Nope-1B"}}, {3: {"tp_size": "num_gpus", "num_gpus": -1}}])
def test_explicit_scenarios_errors_are_the_loops(bad):
    """Two bad scenarios: the error names the first, as the loop over them meets it."""
    scenarios = [{**s, **bad.get(i, {})} for i, s in enumerate(EXPLICIT)]
    preset = Preset.from_mapping({"title": "t", "scenarios": scenarios}, name="t", source="t.yaml")
    columnar, objects = errors_of_both(preset, BASE.estimator)
    assert columnar == objects


def test_rows_of_both_kinds_in_one_chunk_keep_their_order():
    """Training and serving rows (with and without "serving") interleave in one block."""
    matrix = {"name": "m", "model": ["Llama-3-8B"], "workload": "inference", "batch_size": [1, 8],
              "serving_engine": ["hf-generate", "vllm"], "prompt_len": [512, 2048]}
    loaded = from_mapping({"title": "t", "matrices": [matrix]}, load("default"))
    assert [type(p) for p in loaded.expansion.scenarios.blocks] == [SweepBlock]
    columnar, objects = both(loaded)
    text = b"".join(json_chunks(columnar))
    assert text == b"".join(json_chunks(objects))
    assert text.count(b'"serving":') == 4 and text.count(b'"index":') == 8


def test_rows_the_scalar_path_computed_are_written_from_their_results(monkeypatch, default):
    """A chunk's overrides (rows an array cannot hold exactly: vector.py) reach the JSON as the scalar
    path computed them. Forced here on a few rows of every chunk, with their true values."""
    columnar, objects = both(default)
    chunks = BlockResults.chunks

    def with_overrides(part):
        for chunk in chunks(part):
            rows = range(0, chunk.size, 7)
            yield replace(chunk, overrides={
                k: tuple(part[chunk.start + k].estimate.values.values()) for k in rows})

    monkeypatch.setattr(BlockResults, "chunks", with_overrides)
    assert b"".join(json_chunks(columnar)) == b"".join(json_chunks(objects))


def test_the_first_bad_value_is_the_one_the_loop_reports(default):
    """Two bad values: the error names the one a loop over the combinations meets first."""
    for axes in ({"batch_size": [1, 2, -1], "seq_len": [512, "x"]}, {"seq_len": [512, 0], "gpu": ["H100-80GB-SXM", "H1OO"]},
                 {"num_gpus": [1, 2.5], "batch_size": [0, 1]}):
        raw = {"title": "t", "matrices": [{"name": "m", "model": "Llama-3-8B", "workload": "full", **axes}]}
        messages = errors_of_both(Preset.from_mapping(raw, name="t", source="t.yaml"), default.estimator)
        assert messages[0] == messages[1]


def test_a_sweep_name_does_not_read_batch_or_lengths():
    """The JSON writer renders a block's names once per combination of the other inputs."""
    rng = random.Random(7)
    for workload in ("inference", "full", "lora", "qlora"):
        s = Scenario(model="Llama-3-8B", workload=workload, num_gpus=8, zero_stage=3, tp_size=2)
        for _ in range(20):
            changed = replace(s, **{n: rng.choice([1, 7, 512, 4096]) for n in SWEEP_ROW_INPUTS})
            assert changed.label() == s.label()


def test_results_read_like_a_tuple(default):
    report = make_report(default, WHEN)
    results = report.results
    assert isinstance(results, Results) and any(isinstance(p, BlockResults) for p in results.parts)
    listed = list(results)
    assert len(results) == len(listed) == len(default.expansion.scenarios)
    assert [r.index for r in listed] == list(range(1, len(listed) + 1))
    assert results[-1] == listed[-1] and results[5] == listed[5]
    assert results[3:7] == tuple(listed[3:7])
    with pytest.raises(IndexError):
        results[len(listed)]


def test_repeated_numbers_are_written_as_json_writes_each():
    """Texts made once per distinct value (json_columns.distinct_texts): -0.0 and 0.0 stay apart, as do
    1 and 1.0 (types are per column there), and every text is json.dumps's."""
    import json

    import numpy as np

    from reportgen.writers.json_columns import FLOAT_TEXT, INT_TEXT, distinct_texts

    floats = np.array([0.0, -0.0, 1.5, 0.0, -0.0, 1e16, 1.5, 2.5e-7] * 8)
    assert distinct_texts(floats, FLOAT_TEXT) == [json.dumps(x).encode() for x in floats.tolist()]
    ints = np.array([0, -3, 2**60, 0, -3] * 9, dtype=np.int64)
    assert distinct_texts(ints, INT_TEXT) == [json.dumps(x).encode() for x in ints.tolist()]
    unique = np.arange(10, dtype=np.int64)  # no repeats: converted one by one
    assert distinct_texts(unique, INT_TEXT) == [str(x).encode() for x in range(10)]


@pytest.mark.parametrize("matrix", [
    {"workload": "full", "batch_size": [1, 2]},  # no model
    {"model": "Llama-3-8B", "workload": "full", "num_gpus": 3, "tp_size": 2},  # every row skipped
    {"model": ["Llama-3-8B", "Qwen2.5-7B"], "workload": "full", "exclude": [{"model": "Mistral-7B-v0.1"}]},
    {"model": "Llama-3-8B", "workload": ["full", "lora"], "exclude": [{"workload": "full"}, {"workload": "lora"}]},
], ids=["no-model", "all-skipped", "exclude-matches-nothing", "all-excluded"])
def test_a_matrix_that_yields_nothing_fails_as_the_loop_does(matrix, default):
    preset = Preset.from_mapping({"title": "t", "matrices": [{"name": "m", **matrix}]}, name="t", source="t.yaml")
    messages = errors_of_both(preset, default.estimator)
    assert messages[0] == messages[1]


def test_the_html_of_a_sweep_estimates_only_the_rows_it_shows():
    """#35: the report's views read every row's inputs (labels, groups) but estimate only the rows they show
    (1,000 per group in the appendix, a bar per configuration up to 40): a sweep's Results are never all
    made. The labels are those the same rows give as Results."""
    from reportgen.report.i18n import load_catalogue
    from reportgen.report.views import HTML_SCENARIO_ROWS, _Configurations, build_view
    matrix = {"name": "big", "model": ["Llama-3-8B", "Qwen2.5-7B"], "workload": [{"type": "full"}, {"type": "lora"}],
              "batch_size": list(range(1, 21)), "seq_len": [512, 1024, 2048, 4096], "num_gpus": [8, 16, 24, 32],
              "zero_stage": [3], "gpu": ["H100-80GB-SXM", "A100-80GB"]}
    report = make_report(from_mapping({"title": "t", "matrices": [matrix]}, load("default")), WHEN)
    blocks = [p for p in report.results.parts if isinstance(p, BlockResults)]
    assert blocks and sum(len(b) for b in blocks) == len(report.results) > 2 * HTML_SCENARIO_ROWS
    view = build_view(report, "en")
    assert all(b._made is None for b in blocks)  # no block was estimated whole
    assert len(view.scenarios.rows) == HTML_SCENARIO_ROWS
    t = load_catalogue("en")
    configs = _Configurations(report, "big", t)
    streamed = configs.labels(report.results.rows("big"))
    assert all(b._made is None for b in blocks)  # labelling every row estimated none
    assert streamed == configs.labels(iter(report.results))  # now as Results, made and kept
    assert len(set(streamed.values())) == len(streamed) == configs.count == len(report.results) // 2  # two GPU types


def test_one_row_matrices_are_computed_together(monkeypatch):
    """A preset of 200 one-row matrices (some alike): its plan from one call of the term table over their
    distinct rows, not one a matrix (a call costs about as much as a thousand rows), and the object path's
    plan and JSON."""
    matrices = [{"name": f"m{i}", "model": ["Llama-3-8B", "Qwen2.5-7B"][i % 2], "batch_size": 1 + i % 4,
                 "workload": ["inference", "full", "lora"][i % 3], "gpu": ["H100-80GB-SXM", "L40S"][i % 5 // 4]}
                for i in range(200)]
    loaded = from_mapping({"title": "t", "matrices": matrices}, BASE)
    distinct = {tuple(sorted((k, v) for k, v in m.items() if k != "name")) for m in matrices}
    sizes = []
    chunks = BlockResults.chunks

    def counted(part):
        sizes.append(part.block.size)
        return chunks(part)

    monkeypatch.setattr(BlockResults, "chunks", counted)
    rows = []
    vector_chunks = VectorTerms.chunks

    def vector_counted(self, columns, size, *args, **kwargs):
        rows.append(size)
        return vector_chunks(self, columns, size, *args, **kwargs)

    monkeypatch.setattr(VectorTerms, "chunks", vector_counted)
    report = make_report(loaded, WHEN)
    columnar = report.recommendations, b"".join(json_chunks(report))
    assert len(sizes) == 200  # every block read by the plan (the JSON writes so few rows from their estimates)
    assert rows.count(len(distinct)) == 1 and len(distinct) < 100  # ... computed once, together
    monkeypatch.undo()
    objects = make_report(replace(loaded, expansion=expand(loaded.preset, loaded.estimator, columnar=False)), WHEN)
    assert columnar == (objects.recommendations, b"".join(json_chunks(objects)))
