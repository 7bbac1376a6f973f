"""The time of an offloaded optimizer: the host's step (host_optimizer_seconds) against first principles and
published figures.

Published figures: presets/validation/published_offload.json (each record with its source and a verbatim quote).
The assumption host_optimizer_ns_per_param was read from the two records marked "fit" (DeepSpeed issue #6695's Adam
times); the records marked "holdout" (a gist's paired DeepSpeed runs, DeepSpeed issues #3901 and #6834) set nothing.
"""
from __future__ import annotations

import json
import statistics
from pathlib import Path

import pytest

from reportgen.model.catalog import load_gpus, load_models
from reportgen.model.estimate import Estimator, Scenario
from reportgen.model.terms import ASSUMPTION_DEFAULTS
from reportgen.report.validation import TARGETS, offload_cases

DATA = json.loads((Path(__file__).resolve().parent.parent / "presets" / "validation" /
                   "published_offload.json").read_text(encoding="utf-8"))
EST = Estimator(load_models(), load_gpus())
CASES = offload_cases(DATA)
NS = ASSUMPTION_DEFAULTS["host_optimizer_ns_per_param"]
LLAMA_7B = Scenario(model="Llama-2-7B", workload="full", precision="bf16-mixed", framework="deepspeed",
                    gpu="A800-80GB", num_gpus=8, zero_stage=2, offload="optimizer", checkpointing="full",
                    batch_size=1, grad_accum_steps=8, seq_len=4096, prompt_len=0, gen_len=0)


def _errors(use: str) -> list[float]:
    return [estimated / published - 1 for c in CASES if c.use == use
            for published, estimated in c.compared(EST).values()]


def test_the_host_step_is_the_parameters_a_node_updates_times_the_assumption():
    """Llama-2-7B (6,738,415,616 parameters) on one 8-GPU node: every parameter is updated on the node's host once
    per step, whatever the ZeRO stage shards; over two nodes each host updates half; without offload nothing."""
    params = 6_738_415_616
    for zero in (1, 2, 3):
        one_node = EST.estimate(LLAMA_7B.with_inputs(zero_stage=zero))
        assert one_node["host_optimizer_seconds"] == pytest.approx(params * NS / 1e9, rel=1e-9)
    two_nodes = EST.estimate(LLAMA_7B.with_inputs(num_gpus=16))
    assert two_nodes["host_optimizer_seconds"] == pytest.approx(params / 2 * NS / 1e9, rel=1e-9)
    assert EST.estimate(LLAMA_7B.with_inputs(offload="none"))["host_optimizer_seconds"] == 0


def test_the_host_step_adds_to_the_step_and_follows_the_assumption():
    """The step with the optimizer offloaded is the step without it plus the PCIe transfers and the host's step;
    a planner's slower host (twice the nanoseconds) doubles the host's part alone."""
    offloaded, plain = EST.estimate(LLAMA_7B), EST.estimate(LLAMA_7B.with_inputs(offload="none"))
    assert offloaded["step_seconds"] == pytest.approx(
        plain["step_seconds"] + offloaded["offload_seconds"] + offloaded["host_optimizer_seconds"], rel=1e-9)
    slow = Estimator(load_models(), load_gpus(), {"host_optimizer_ns_per_param": 2 * NS}).estimate(LLAMA_7B)
    assert slow["host_optimizer_seconds"] == pytest.approx(2 * offloaded["host_optimizer_seconds"], rel=1e-12)
    assert slow["step_seconds"] - offloaded["step_seconds"] == pytest.approx(
        offloaded["host_optimizer_seconds"], rel=1e-9)


def test_lora_offloads_only_its_adapters_steps():
    """A LoRA run's optimizer holds its adapters alone: its host step is the adapters' parameters, a thousandth of
    the full model's or less."""
    lora = EST.estimate(LLAMA_7B.with_inputs(workload="lora", lora_rank=16))
    assert 0 < lora["host_optimizer_seconds"] < EST.estimate(LLAMA_7B)["host_optimizer_seconds"] / 100
    assert lora["host_optimizer_seconds"] == pytest.approx(lora["trainable_params"] * NS / 1e9, rel=1e-9)


def test_the_assumption_is_the_fit_records_mean():
    """host_optimizer_ns_per_param is the mean seconds per parameter of the fit records (rounded to 0.01 ns), and the
    fit records are the only ones it was read from."""
    fit = [c for c in CASES if c.use == "fit"]
    assert len(fit) == 2
    per_param = [c.published["host_optimizer_seconds"] / c.spec.generic_total_params * 1e9 for c in fit]
    assert NS == round(statistics.mean(per_param), 2)


def test_held_out_offload_figures_at_the_level_reached():
    """Four held-out figures (two hosts' paired DeepSpeed runs and a 4-node run): the host's CPUs set the time, so
    one figure for every server misses by half either way. Reached (2026-12-05): median |error| 56.6 %, largest
    111.4 %; one within the ±50 % target, and each beyond it says why."""
    errors = _errors("holdout")
    assert len(errors) == 4
    assert statistics.median(map(abs, errors)) <= 0.57
    assert max(map(abs, errors)) <= 1.12
    assert sum(abs(e) <= TARGETS["offload"] for e in errors) >= 1
    for c in CASES:
        if c.use == "holdout":
            for published, estimated in c.compared(EST).values():
                assert abs(estimated / published - 1) <= TARGETS["offload"] or c.miss, c.id
    excluded = [c for c in CASES if c.use == "excluded"]
    assert len(excluded) == 2 and all(c.why for c in excluded)


def test_offload_is_no_longer_free_in_the_plan():
    """Before the host's step was modelled, a 7B model's ZeRO-2 step with the optimizer offloaded was estimated 0.5 s
    longer than without on 8 A800; the gist's servers take 20 s longer. The estimate now adds 7.7 s: the
    parameters (6.74e9) at the default 1.14 ns."""
    offloaded, plain = EST.estimate(LLAMA_7B), EST.estimate(LLAMA_7B.with_inputs(offload="none"))
    assert offloaded["step_seconds"] - plain["step_seconds"] > 7.5


def test_estimate_and_plan_take_the_hosts_figure_and_the_plan_says_when_it_counts():
    """--host-optimizer-ns sets the assumption for one command: twice the figure, twice the host's step. A plan
    whose answer offloads says at what figure it timed the host's step; one whose answer does not, says nothing."""
    from click.testing import CliRunner
    from reportgen.cli import main
    base = ["estimate", "--model", "Llama-2-7B", "--workload", "full", "--gpus", "8", "--zero", "2", "--offload",
            "optimizer", "--framework", "deepspeed", "--json"]
    default, doubled = (json.loads(CliRunner().invoke(main, base + extra).output)
                        for extra in ([], ["--host-optimizer-ns", str(2 * NS)]))
    assert doubled["time"]["step_seconds"] - default["time"]["step_seconds"] == pytest.approx(
        6_738_415_616 * NS / 1e9, rel=1e-6)
    question = ["plan", "--model", "Llama-3.1-70B", "--workload", "full", "--train-tokens", "1e9", "--within", "30d",
                "--gpu-type", "L40S"]
    offloaded = CliRunner().invoke(main, question + ["--host-optimizer-ns", "2.9"])
    assert offloaded.exit_code == 0 and "offload" in offloaded.output
    assert "timed at 2.9 ns per parameter a node updates" in offloaded.output
    plain = CliRunner().invoke(main, question + ["--offload", "none"])
    assert plain.exit_code == 0 and any(line.startswith("L40S ") for line in plain.output.splitlines())
    assert "ns per parameter" not in plain.output
