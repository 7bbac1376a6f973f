"""Decisions the report makes from the terms (#31): each reads the term that defines it, never a second
rule beside it. Regression tests of three wrong answers found on main:
- the sensitivity table's "largest that fits" compared the budget with the GPU's memory, where the
  estimator's fit (fits_recommended) also asks that a serving engine's KV pool holds the sequences;
- the RLHF breakdown bars called every role's gradient buffers "temporaries";
- a preset with one requirement under a goal and the same requirement without one ended in a traceback.
"""
from __future__ import annotations

import json
from collections import Counter
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner

from reportgen.model.catalog import load_gpus, load_models
from reportgen.cli import main
from reportgen.model.estimate import Estimator, make_scenario
from reportgen.pipeline import load, make_report
from reportgen.model.terms import BAR_PARTS, PEAK_PARTS
from reportgen.report.views import build_view, segments, tokens_short
from test_group_columns import EST, random_groups

WHEN = "2026-01-01T00:00:00+00:00"
FIXTURES = Path(__file__).parent / "fixtures"


def test_sensitivity_largest_that_fits_is_the_estimators_fit():
    """Per GPU type and axis, the largest value tried that fits with k, scenario by scenario on the scalar
    path; the fixture has points whose budget is within the GPU's memory and that still do not fit."""
    report = make_report(load(str(FIXTURES / "vllm-sensitivity.yaml")), WHEN)
    est = Estimator(load_models(), load_gpus())
    view = build_view(report, "en")
    assert len(view.sensitivity) == 1 and report.sensitivity
    scenario = report.results[report.sensitivity[0].result_index - 1].estimate.scenario
    budget_only = 0
    rows = {row[0].text: row for row in view.sensitivity[0].table.rows}
    for column, series in enumerate(report.sensitivity, start=2):
        fmt = str if series.axis == "batch_size" else tokens_short
        if series.axis == "prompt_len":  # Llama-3-8B's context is 8k (its model card): no longer prompt is tried
            assert max(series.xs) + scenario.gen_len <= 8192 < 2 * max(series.xs) + scenario.gen_len and series.cut
        for gpu in rows:
            points = [est.estimate(replace(scenario, gpu=gpu, **{series.axis: x})) for x in series.xs]
            fitting = [x for x, e in zip(series.xs, points)
                       if e["fits_recommended"] and est.skip_reason(e.scenario) is None]
            budget_only += sum(1 for e in points if e["recommended"] <= e["gpu_memory_bytes"] and not e["fits_recommended"])
            every = (f"all it can take (up to {fmt(series.xs[-1])})" if series.cut
                     else f"all tried (≥ {fmt(series.xs[-1])})")
            expected = (every if len(fitting) == len(series.xs)
                        else f"none (< {fmt(series.xs[0])})" if not fitting else fmt(max(fitting)))
            assert rows[gpu][column].text == expected, (gpu, series.axis)
    assert budget_only > 0  # the case the old rule got wrong is in the fixture


def test_rlhf_bars_show_gradient_buffers_as_gradients():
    """A colocated PPO group under Megatron keeps every trained role's gradient buffer: the bar shows them
    as gradients, and its temporaries are the roles' ZeRO-3 buffers alone."""
    est = Estimator(load_models(), load_gpus())
    for framework, zero in (("megatron", 1), ("deepspeed", 3), ("hf", 0)):
        group, reason = make_scenario(
            {"model": "Llama-2-7B", "num_gpus": 8, "zero_stage": zero, "framework": framework, "gpu": "H100-80GB-SXM"},
            workload="ppo", rlhf={}, estimator=est, key_path=str)
        assert reason is None
        result = est.estimate_group(group)
        roles = [e for _, e in result.roles]
        parts = segments(result)
        assert parts["resident_gradients"] == sum(e["persistent_gradients"] + e["ddp_bucket_bytes"] for e in roles)
        assert parts["temporaries"] == sum(e["zero3_buffer"] for e in roles)
        if framework != "hf":
            assert parts["resident_gradients"] > 0, framework
        assert sum(parts.values()) == result["device_total"]


def pool_bar(group) -> dict[str, int]:
    """The oracle of a group's bar, from its pools (GroupEstimate.pools) rather than its bar_ terms: the first pool with
    the largest device total; a pool of roles sharing the actor's GPUs stacks their states and the largest phase, a
    role on GPUs of its own its single-model bar."""
    _, est, v = max(group.pools(), key=lambda pool: pool[2]["device_total"])
    if est is group:
        parts = {f"resident_{k}": v[k] for k in ("weights", "master_weights", "optimizer_states")}
        parts |= {"resident_gradients": v["resident_gradients"], "transient_peak": v["transient_peak"],
                  "temporaries": v["zero3_buffer"] + v["pp_recv_buffer_bytes"]}
    else:
        parts = {k: v[k] for k in PEAK_PARTS}
    parts |= {k: v[k] for k in ("allocator_reserve_bytes", "context_comm_bytes")}
    return {k: int(parts.get(k, 0)) for k in BAR_PARTS}


@pytest.mark.parametrize("seed", [1, 2])
def test_an_rlhf_bar_is_its_tightest_pool(seed):
    """Every shape of group (colocated, separate pools, engines apart beside colocated trainers): the bar the report
    and the workbook stack (the group's bar_ terms) is its tightest pool's, and adds up to the group's device total."""
    groups = random_groups(seed, 60)
    pools = Counter()
    for g in groups:
        made = EST.estimate_group(g)
        want = pool_bar(made)
        assert segments(made) == want, g.label()
        assert sum(want.values()) == int(made["device_total"])
        pools[len(made.pools()), max(range(len(made.pools())), key=lambda k: made.pools()[k][2]["device_total"]) > 0] += 1
    # groups of one pool and of several, and among those, bars of a pool other than the actor's
    assert pools[1, False] and sum(n for (size, _), n in pools.items() if size > 1) and sum(
        n for (_, other), n in pools.items() if other), pools


@pytest.mark.slow  # several seconds: the full run has it
def test_a_requirement_with_and_without_a_goal_builds(tmp_path):
    preset = tmp_path / "goalmix.yaml"
    preset.write_text("""title: goal mix
matrices:
  - name: with goal
    model: Llama-2-7B
    workload: {type: full, seq_len: 4096, batch_size: 1, train_tokens: 100000000}
    num_gpus: [1, 8]
    gpu: [A100-80GB, H100-80GB-SXM]
    checkpointing: full
    goal: {within: 1d}
  - name: without goal
    model: Llama-2-7B
    workload: {type: full, seq_len: 4096, batch_size: 1, train_tokens: 100000000}
    num_gpus: [2, 4]
    zero_stage: 3
    checkpointing: full
    gpu: [A100-80GB, H100-80GB-SXM]
""", encoding="utf-8")
    for lang in ("en", "zh"):
        out = CliRunner().invoke(main, ["build", str(preset), "-o", str(tmp_path), "--format", "json,html",
                                        "--lang", lang, "-q"])
        assert out.exit_code == 0, out.output
    html = (tmp_path / "goalmix.html").read_text(encoding="utf-8")
    report = make_report(load(str(preset)), WHEN)
    assert len(report.recommendations) == 2  # the goal makes a requirement of its own
    assert "Llama-2-7B · goal: trained within 24.0 h" in html


def test_validate_counts_every_row_it_shows():
    """The footer counted the measured peaks alone (286 cases, max 7.65 %) under 304 rows, one of them a
    published figure at -12.3 %; now each line counts one comparison and split, from the rows shown."""
    data = json.loads(CliRunner().invoke(main, ["validate", "--json"]).output)
    rows, groups = data["rows"], data["summary"]
    kinds = {"measured": "measured", "finetune": "published"}
    for g in groups:
        errors = [abs(r["error"]) for r in rows if r["kind"] == kinds[g["dataset"]] and r["split"] == g["split"]]
        assert g["figures"] == len(errors) and g["max_abs_error"] == max(errors)
        assert g["within_target"] == sum(e <= g["target"] for e in errors)
    assert sum(g["figures"] for g in groups) == len(rows)
    assert any(g["dataset"] == "finetune" and g["max_abs_error"] > 0.12 for g in groups)
    text = CliRunner().invoke(main, ["validate"]).output
    body, footer = text.rstrip("\n").rsplit("\n\n", 1)
    assert len(body.splitlines()) - 2 == len(rows)  # a header and a rule above the rows
    lines = footer.splitlines()
    assert [int(line.split(": ")[1].split()[0]) for line in lines[:-1]] == [g["figures"] for g in groups]
    assert lines[-1] == f"{len(rows)} rows in all; accuracy is claimed on the held-out rows only."


def test_a_served_models_summary_states_how_many_sequences_its_kv_pool_holds():
    """#34: the KV pool's maximum concurrency, the figure a serving buyer asks first, is in the summary line of
    an engine-served requirement: the estimator's max_concurrency, rounded down (in en and zh)."""
    report = make_report(load(str(FIXTURES / "vllm-sensitivity.yaml")), WHEN)
    best = report.recommendations[0].best.result.estimate
    held = int(best["max_concurrency"])
    assert held >= 1 and best["context_tokens"] == 4096 + 512
    verdict = build_view(report, "en").verdicts[0].verdict
    assert f"each replica's KV pool holds {held:,} sequences of 4,608 tokens" in verdict, verdict
    assert f"KV 缓存池可容纳 {held:,} 条 4,608 token 的序列" in build_view(report, "zh").verdicts[0].verdict
