"""#31/#35: RLHF groups as columns. Estimator.estimate_groups computes every role of a run of groups as one sweep and
the group terms over role-prefixed columns; a group read back must be what the scalar estimate_group makes, value
and Python type, and a report built on the columns must be the report built on estimate_group's objects."""
import random

import pytest

from reportgen.model.catalog import load_gpus, load_models
from reportgen.model.estimate import Estimator, RlhfScenario, Scenario, rlhf_scenario
from reportgen.pipeline import load, make_report
from reportgen.report import build
from reportgen.report.build import GroupResults, Result, ResultRun
from reportgen.scenarios.presets import bundled_presets
from reportgen.writers.json_writer import json_chunks

EST = Estimator(load_models(), load_gpus())
WHEN = "2026-01-01T00:00:00+00:00"


def typed(values) -> dict:
    """Values with their Python types: 1 and 1.0 and True are different answers here."""
    return {k: (type(v), v) for k, v in values.items()}


def assert_same_group(got, want):
    assert got.scenario == want.scenario
    assert typed(got.values) == typed(want.values)
    assert [n for n, _ in got.roles] == [n for n, _ in want.roles]
    for (name, a), (_, b) in zip(got.roles, want.roles):
        assert a.scenario == b.scenario, name
        assert typed(a.values) == typed(b.values), name
        assert a.params_by_component == b.params_by_component, name


def preset_groups(name: str) -> list[RlhfScenario]:
    loaded = load(name)
    return [s for part in loaded.expansion.scenarios.blocks if isinstance(part, tuple)
            for _, s in part if isinstance(s, RlhfScenario)]


PRESETS_WITH_GROUPS = [n for n in sorted(bundled_presets()) if preset_groups(n)]


def test_the_bundled_presets_have_groups_to_compare():
    assert {"default", "ppo-rlhf"} <= set(PRESETS_WITH_GROUPS)


@pytest.mark.parametrize("name", PRESETS_WITH_GROUPS)
def test_every_bundled_group_read_from_columns_is_estimate_group(name):
    groups = preset_groups(name)
    columns = EST.estimate_groups(groups)
    assert len(columns) == len(groups)
    for k, g in enumerate(groups):
        assert_same_group(columns.estimate(k), EST.estimate_group(g))


def random_groups(seed: int, n: int) -> list[RlhfScenario]:
    """Groups of every algorithm, placement, engine placement and mode, with varied actors and pools."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        algorithm = rng.choice(["ppo", "grpo", "dpo"])
        placement = rng.choice(["colocated", "separate"])
        gpus = rng.choice([4, 8, 16])
        actor = Scenario(model=rng.choice(["Llama-3-8B", "Qwen2.5-7B", "Llama-2-7B", "Mistral-7B-v0.1"]),
                         workload=rng.choice(["full", "lora"]), batch_size=rng.choice([1, 2, 4]),
                         prompt_len=rng.choice([256, 512, 1024]),
                         gen_len=0 if algorithm == "dpo" else rng.choice([128, 512, 2048]),
                         seq_len=rng.choice([512, 1024]) if algorithm == "dpo" else 2048,
                         num_gpus=gpus, zero_stage=rng.choice([0, 1, 2, 3]), tp_size=rng.choice([1, 2]),
                         checkpointing=rng.choice(["none", "full"]), gpu=rng.choice(["H100-80GB-SXM", "A100-80GB"]),
                         serving_engine=rng.choice(["vllm", "hf-generate"]), gpu_memory_utilization=0.5)
        settings = {}
        if algorithm == "grpo":
            settings["group_size"] = rng.choice([4, 8])
        if algorithm != "dpo" and rng.random() < 0.5:
            settings.update(rollout_placement="separate", rollout_mode=rng.choice(["sync", "async"]),
                            role_gpus={"rollout": rng.choice([2, 4])})
        if placement == "separate" and algorithm == "ppo":
            settings["role_gpus"] = {**settings.get("role_gpus", {}), "critic": rng.choice([2, 4]), "reward": 2}
        if rng.random() < 0.3:
            settings["micro_batch_size"] = 1
        if rng.random() < 0.3:
            settings["padded_roles"] = rng.choice(["all", "critic"])
        out.append(rlhf_scenario(name="", algorithm=algorithm, placement=placement, actor=actor, **settings))
    return out


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_random_groups_read_from_columns_are_estimate_group(seed):
    groups = random_groups(seed, 60)
    shapes = {(tuple(n for n, _ in g.roles), g.placement) for g in groups}
    assert len(shapes) >= 4  # groups of several shapes in one run, each shape its own group terms
    columns = EST.estimate_groups(groups)
    for k, g in enumerate(groups):
        assert_same_group(columns.estimate(k), EST.estimate_group(g))


def test_a_term_of_every_group_is_each_groups_value():
    groups = random_groups(4, 40)
    columns = EST.estimate_groups(groups)
    made = [EST.estimate_group(g) for g in groups]
    for term in ("iteration_seconds", "total_gpus", "fits", "purchase_usd", "rent_usd", "plan_seconds"):
        assert columns.numbers(term).tolist() == [float(e[term]) for e in made], term
    assert columns.numbers("no such term", absent=-1).tolist() == [-1.0] * len(groups)


def test_no_groups_no_columns():
    columns = EST.estimate_groups([])
    assert len(columns) == 0 and columns.numbers("fits").tolist() == []


@pytest.fixture
def scalar_groups(monkeypatch):
    """Reports built with each group made by estimate_group, as the object path did."""
    def objects(first_index, pairs, estimator):
        return ResultRun(Result(i, m, estimator.estimate_group(g)) for i, (m, g) in enumerate(pairs, start=first_index))
    monkeypatch.setattr(build, "GroupResults", objects)


@pytest.mark.slow  # two reports of each preset
@pytest.mark.parametrize("name", PRESETS_WITH_GROUPS)
def test_a_report_on_group_columns_is_the_report_on_estimate_group(name, request):
    loaded = load(name)
    columnar = make_report(loaded, WHEN)
    assert any(isinstance(p, GroupResults) for p in columnar.results.parts)
    request.getfixturevalue("scalar_groups")
    objects = make_report(loaded, WHEN)
    assert not any(isinstance(p, GroupResults) for p in objects.results.parts)
    assert columnar.recommendations == objects.recommendations
    assert b"".join(json_chunks(columnar)) == b"".join(json_chunks(objects))


def test_the_plan_reads_a_group_runs_columns_not_its_results():
    """Ranking a run of groups makes no Result: only the picks the report names are read back."""
    loaded = load("ppo-rlhf")
    report = make_report(loaded, WHEN)
    (part,) = [p for p in report.results.parts if isinstance(p, GroupResults)]
    made = sum(r is not None for r in part._made)
    picked = {e.result.index for rec in report.recommendations for e in rec.entries if e.result}
    assert 0 < made < len(part) and len(picked) <= made


def test_role_rows_the_scalar_path_computed_are_read_from_its_values(monkeypatch):
    """A role chunk's overrides (rows the columns cannot hold exactly: vector.py) are what the groups read. Forced
    here: every fifth role row's columns are computed for another batch and overridden with its true values, so a
    group that read the columns there would differ from estimate_group."""
    from dataclasses import replace as replaced
    from reportgen.model.inputs import INPUT_NAMES
    groups = random_groups(5, 30)
    real = Estimator.estimate_chunks

    def planted(self, columns, size, chunk_rows=None, vector=None):
        if vector is not None or "batch_size" not in columns:
            return real(self, columns, size, chunk_rows or size, vector)
        forced = range(0, size, 5)
        truth = {k: tuple(self.estimate(Scenario(**{n: columns[n][k] for n in INPUT_NAMES})).values.values())
                 for k in forced}
        other = {**columns, "batch_size": [b * 2 if k % 5 == 0 else b for k, b in enumerate(columns["batch_size"])]}
        return (replaced(chunk, overrides={**chunk.overrides, **{k - chunk.start: v for k, v in truth.items()
                                                                  if chunk.start <= k < chunk.start + chunk.size}})
                for chunk in real(self, other, size, chunk_rows or size))

    monkeypatch.setattr(Estimator, "estimate_chunks", planted)
    columns = EST.estimate_groups(groups)
    monkeypatch.undo()
    for k, g in enumerate(groups):
        assert_same_group(columns.estimate(k), EST.estimate_group(g))


@pytest.mark.parametrize("seed", [6, 7])
def test_an_engine_share_changed_on_a_group_is_the_group_laid_out_anew(seed):
    """with_engine_share (what the plan's search over shares uses) makes what relayout makes: every group, role by
    role, at every share the plan offers, for the bundled presets' groups and random ones."""
    from reportgen.planning.plan import ENGINE_BUDGETS
    groups = random_groups(seed, 40) + (preset_groups("ppo-rlhf") if seed == 6 else preset_groups("default"))
    for g in groups:
        for share in ENGINE_BUDGETS:
            assert g.with_engine_share(share) == g.relayout(gpu_memory_utilization=share)
