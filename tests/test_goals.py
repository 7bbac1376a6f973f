"""A preset matrix may state a goal (issue #16): its picks must meet it as well as fit.

The goal is the plan search's Goal (reportgen/planning/goals.py): a training deadline for the job's tokens, or
serving users at a context length and a decode speed. Checked here: the pick is the cheapest result
that fits and meets it (against a brute-force pass over the results), the goal changes picks that it
should, a serving goal sets each layout's batch and prompt, bad goals are one-line errors, and the
summary, its Chinese edition and the JSON state the goal."""
from __future__ import annotations

import json
import math

import pytest
from click.testing import CliRunner

from reportgen.cli import main
from reportgen.pipeline import load, make_report
from reportgen.report.build import recommend
from reportgen.report.views import build_view

WHEN = "2026-01-01T00:00:00+00:00"

TRAIN = """
title: goals
matrices:
  - name: ft
    workload: full
    model: Llama-3-8B
    gpu: [A100-80GB, H100-80GB-SXM]
    num_gpus: [8, 16, 32, 64]
    zero_stage: 3
    train_tokens: 10000000000
    goal: {within: WITHIN}
"""
SERVE = """
title: serving goals
matrices:
  - name: serve
    workload: inference
    model: Llama-3.1-70B
    gpu: [H100-80GB-SXM]
    num_gpus: [4, 8]
    tp_size: [4, 8]
    gen_len: 512
    kv_dtype: fp8
    serving_engine: vllm
    goal: {users: 50, context: 32768, min_tokens_per_s: SPEED}
"""


def report_of(tmp_path, text, name="p.yaml"):
    path = tmp_path / name
    path.write_text(text)
    return make_report(load(str(path)), WHEN)


def meets(report, r):
    return report.goals[r.matrix].meets(r.estimate)


def test_a_deadline_picks_the_cheapest_configuration_that_meets_it(tmp_path):
    report = report_of(tmp_path, TRAIN.replace("WITHIN", "3d"))
    without = {rec.requirement.settings: rec for rec in recommend(report.results, report.gpu_types)}
    changed = 0
    for rec in report.recommendations:
        assert rec.requirement.value("goal.within_seconds") == 3 * 86400
        meeting = [r for r in report.results if r.estimate["fits_recommended"] and meets(report, r)]
        assert rec.best.result.purchase_usd == min(r.purchase_usd for r in meeting)
        assert rec.best.result.estimate["time_to_train_seconds"] <= 3 * 86400
        assert rec.cheapest_to_rent.result.rent_usd == min(r.rent_usd for r in meeting)
        plain = without[rec.requirement.settings[:-1]]  # the same job without the goal's setting
        changed += plain.best.result.index != rec.best.result.index
    # the cheapest fitting configuration (8 × A100, 3.7 days) misses a 3-day deadline: the goal moves the pick
    assert changed == 1


def test_a_deadline_no_configuration_meets_says_so(tmp_path):
    report = report_of(tmp_path, TRAIN.replace("WITHIN", "2h"))
    (rec,) = report.recommendations
    assert rec.best is None and rec.cheapest_to_rent is None
    assert all(e.result is None and e.closest is not None for e in rec.entries)
    for e in rec.entries:  # the fastest fitting configuration of its GPU type
        tried = [r for r in report.results if r.gpu == e.gpu and r.estimate["fits_recommended"]]
        assert e.closest.estimate["time_to_train_seconds"] == min(r.estimate["time_to_train_seconds"] for r in tried)
    view = build_view(report, "en")
    (group,) = view.verdicts
    assert "fits in memory, but no configuration tried meets the goal (tried up to 64 GPUs)" in group.verdict
    # each GPU type's row says how near it comes: its fastest fitting configuration's time (64 GPUs)
    assert [r.mark for r in group.rows] == [
        f"⊘ fits, misses the goal (fastest: {e.closest.estimate['time_to_train_seconds'] / 3600:.1f} h)"
        for e in rec.entries]
    assert all(e.closest.total_gpus == 64 for e in rec.entries)
    zh = build_view(report, "zh").verdicts[0]
    assert "放得下，但所试配置都达不到目标" in zh.verdict


def test_the_summary_and_the_json_state_the_goal(tmp_path):
    path = tmp_path / "p.yaml"
    path.write_text(TRAIN.replace("WITHIN", "3d"))
    result = CliRunner().invoke(main, ["build", str(path), "-o", str(tmp_path / "out"), "--format", "json,html"])
    assert result.exit_code == 0, result.output
    plan = json.loads((tmp_path / "out" / "p.json").read_text())["plan"]
    assert [p["requirement"]["goal.within_seconds"] for p in plan] == [259200.0]
    html = (tmp_path / "out" / "p.html").read_text()
    assert "goal: trained within 3.0 days" in html
    report = make_report(load(str(path)), WHEN)
    assert "目标：3.0 天内训完" in "".join(p.text for p in build_view(report, "zh").verdicts[0].settings)


def test_a_serving_goal_sets_each_layouts_batch_and_prompt(tmp_path):
    report = report_of(tmp_path, SERVE.replace("SPEED", "5"))
    assert len(report.results) == 3  # TP 8 on 4 GPUs is skipped
    for r in report.results:
        s = r.lead
        assert s.batch_size == math.ceil(50 / (s.num_gpus // s.tp_size))
        assert s.prompt_len + s.gen_len == 32768
    (rec,) = report.recommendations
    # one requirement: the batch per replica is the layout's, not the job's
    assert "batch_size" not in dict(rec.requirement.settings)
    assert rec.best.result.estimate["tokens_per_s_per_user"] >= 5
    slow = report_of(tmp_path, SERVE.replace("SPEED", "1000"), "slow.yaml")
    assert slow.recommendations[0].best is None


def test_a_first_token_goal_picks_the_cheapest_layout_that_meets_it(tmp_path):
    """A serving goal's max_ttft gates the picks by the term prefill_seconds (under vLLM, one request's
    prefill): the pick is the cheapest fitting result that meets it, and the summary says it in both
    languages."""
    text = """
title: first token
matrices:
  - name: serve
    workload: inference
    model: Llama-3-8B
    gpu: [A100-80GB, H100-80GB-SXM]
    num_gpus: [1, 2]
    tp_size: [1, 2]
    gen_len: 512
    serving_engine: vllm
    goal: {users: 8, context: 8192GOAL}
"""
    plain = report_of(tmp_path, text.replace("GOAL", ""))
    (before,) = plain.recommendations
    limit = 0.9 * before.best.result.estimate["prefill_seconds"]
    report = report_of(tmp_path, text.replace("GOAL", f", max_ttft: {limit * 1000:.0f}ms"), "ttft.yaml")
    (rec,) = report.recommendations
    limit = rec.requirement.value("goal.max_ttft_seconds")  # as parsed: whole milliseconds
    meeting = [r for r in report.results if r.estimate["fits_recommended"] and meets(report, r)]
    assert meeting and len(meeting) < len(report.results)
    assert all(r.estimate["prefill_seconds"] <= limit for r in meeting)
    assert rec.best.result.index == min(meeting, key=lambda r: (r.purchase_usd, r.total_gpus, r.estimate["plan_seconds"],
                                                               r.index)).index
    assert rec.best.result.index != before.best.result.index
    words = "".join(p.text for p in build_view(report, "en").verdicts[0].settings)
    assert f"first token within {limit * 1000:,.0f} ms" in words
    assert f"首 token 时间不超过 {limit * 1000:,.0f} ms" in "".join(
        p.text for p in build_view(report, "zh").verdicts[0].settings)


@pytest.mark.parametrize("matrix_extra, goal, where, message", [
    ("batch_size: [1, 8]", "{users: 50}", "matrices[0].goal.users",
     "sets each scenario's batch_size: remove batch_size from the matrix"),
    ("prompt_len: 1024", "{context: 4096}", "matrices[0].goal.context",
     "sets each scenario's prompt_len: remove prompt_len from the matrix"),
    ("gen_len: 4096", "{context: 4096}", "matrices[0].goal.context",
     "the context (4,096 tokens) must exceed the generated tokens (4,096)"),
    ("", "{deadline: 7d}", "matrices[0].goal.deadline", "unknown key"),
    ("", "{within: soon}", "matrices[0].goal.within", "expected a duration such as 7d, 36h or 90m"),
    ("", "{min_tokens_per_s: -1}", "matrices[0].goal.min_tokens_per_s", "expected tokens per second"),
    ("", "{max_ttft: 2}", "matrices[0].goal.max_ttft", "a duration needs a unit (w, d, h, m, s or ms"),
    ("", "{max_ttft: 0ms}", "matrices[0].goal.max_ttft", "expected a positive duration"),
    # a part that no workload of the matrix reads would be ignored without a word (the matrix is inference)
    ("", "{within: 2d}", "matrices[0].goal.within", "a goal of training: no workload of this matrix reads it"),
])
def test_bad_goals_are_one_line_errors(tmp_path, matrix_extra, goal, where, message):
    path = tmp_path / "bad.yaml"
    path.write_text(f"""
title: bad
matrices:
  - name: m
    workload: inference
    model: Llama-2-7B
    gpu: A100-80GB
    {matrix_extra}
    goal: {goal}
""")
    result = CliRunner().invoke(main, ["build", str(path), "-o", str(tmp_path / "out")])
    assert result.exit_code == 1
    line = result.output.strip()
    assert "\n" not in line and line.startswith(f"Error: {path}: {where}: ")
    assert message in line
    assert not (tmp_path / "out").exists()


def test_a_goal_part_is_refused_only_where_no_workload_reads_it(tmp_path):
    """A serving goal on a training matrix is an error naming the part; a matrix of both workloads may give
    each its part."""
    path = tmp_path / "train.yaml"
    path.write_text("title: t\nmatrices:\n  - {name: m, model: Llama-3-8B, workload: full, gpu: H100-80GB-SXM, "
                    "goal: {max_ttft: 1s}}\n")
    result = CliRunner().invoke(main, ["check", str(path)])
    assert result.exit_code == 1 and result.output.strip() == (
        f"Error: {path}: matrices[0].goal.max_ttft: a goal of serving (inference): no workload of this matrix reads it")
    both = tmp_path / "both.yaml"
    both.write_text("title: t\nmatrices:\n  - {name: m, model: Llama-3-8B, workload: [full, inference], "
                    "gpu: H100-80GB-SXM, goal: {within: 30d, max_ttft: 1s}}\n")
    assert CliRunner().invoke(main, ["check", str(both)]).exit_code == 0


def test_an_rlhf_matrix_cannot_state_a_goal(tmp_path):
    path = tmp_path / "rlhf.yaml"
    path.write_text("""
title: rlhf
matrices:
  - name: m
    workload: ppo
    model: Llama-2-7B
    gpu: A100-80GB
    num_gpus: 8
    goal: {within: 7d}
""")
    result = CliRunner().invoke(main, ["build", str(path), "-o", str(tmp_path / "out")])
    assert result.exit_code == 1
    assert result.output.strip() == (f"Error: {path}: matrices[0].goal: a goal applies to inference and training "
                                     "workloads, not to ppo")
