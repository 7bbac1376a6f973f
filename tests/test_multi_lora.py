"""Many LoRA adapters served on one base model (#34 item 4): vLLM's and SGLang's adapter slots.

An engine with `max_loras` > 0 allocates, with the model and before it profiles its KV pool, one slot
per adapter on every linear layer at `max_lora_rank` (vLLM: `max_loras`, `max_lora_rank`; SGLang:
`max_loras_per_batch`). Checked here against independent counts: at TP 1 a slot is PEFT's all-linear
adapter of that rank (the estimator's LoRA training count, which tests/test_models.py checks against
transformers), and at TP 2 the hand count of vLLM's column- and row-parallel LoRA layers; the KV pool
gives up exactly the slots' bytes; decoding reads the adapters a batch uses. Not validated against a
measurement: no published start-up log with LoRA slots was found."""
from __future__ import annotations

from dataclasses import replace

import pytest
from click.testing import CliRunner

from reportgen.model.catalog import load_gpus, load_models
from reportgen.cli import main
from reportgen.model.estimate import Estimator, Scenario
from reportgen.planning.goals import Goal
from reportgen.planning.plan import plan

EST = Estimator(load_models(), load_gpus())
H100 = "H100-80GB-SXM"
SERVE = Scenario(model="Llama-3-8B", workload="inference", serving_engine="vllm", gpu=H100, batch_size=16,
                 prompt_len=1024, gen_len=256)


@pytest.mark.parametrize("model", ["Llama-3-8B", "Qwen2.5-7B", "Mistral-7B-v0.1"])
@pytest.mark.parametrize("rank", [8, 64])
def test_a_slot_at_tp1_is_pefts_all_linear_adapter(model, rank):
    """q, k, v, o, gate, up and down each with their own A and B: what PEFT trains with all-linear targets
    (models with separate projections; a packed qkv or gate_up module has one A in PEFT, one per slice in vLLM)."""
    peft = EST.estimate(Scenario(model=model, workload="lora", lora_targets="all-linear", lora_rank=rank))
    served = EST.estimate(replace(SERVE, model=model, max_loras=3, max_lora_rank=rank))
    assert served["served_lora_params"] == 3 * peft["adapter_params"]
    assert served["served_lora_bytes"] == 2 * 3 * peft["adapter_params"]  # in the model's bf16


def test_tensor_parallel_splits_one_side_of_each_slot():
    """Llama-3-8B (hidden 4,096, q 4,096, kv 1,024, MLP 14,336, 32 layers) at TP 2, rank 16, 4 slots: the
    column-parallel q, k, v, gate and up keep A whole and split B; the row-parallel o and down split A."""
    e = EST.estimate(replace(SERVE, max_loras=4, num_gpus=2, tp_size=2))
    h, q, kv, mlp = 4096, 4096, 1024, 14336
    per_layer = (3 * h + (q + 2 * kv) / 2) + (q / 2 + h) + 2 * (h + mlp / 2) + (mlp / 2 + h)
    assert e["served_lora_params"] == 4 * 16 * 32 * per_layer == 113_246_208


def test_the_kv_pool_gives_up_the_slots():
    plain = EST.estimate(SERVE)
    lora = EST.estimate(replace(SERVE, max_loras=8, max_lora_rank=32))
    assert plain["served_lora_bytes"] == 0
    assert plain["kv_pool_bytes"] - lora["kv_pool_bytes"] == lora["served_lora_bytes"] == 8 * 32 * 2 * 41_943_040 // 16
    assert lora["weights"] - plain["weights"] == lora["served_lora_bytes"]
    assert lora["max_concurrency"] < plain["max_concurrency"]


def test_decoding_reads_the_adapters_the_batch_uses():
    """Per step, at most one adapter per sequence is read: 64 slots at batch 16 read 16 of them; more slots
    than sequences cost memory, not decode time; a larger rank costs both."""
    few = EST.estimate(replace(SERVE, max_loras=16))
    many = EST.estimate(replace(SERVE, max_loras=64))
    wide = EST.estimate(replace(SERVE, max_loras=16, max_lora_rank=64))
    plain = EST.estimate(SERVE)
    assert many["served_lora_bytes"] == 4 * few["served_lora_bytes"]
    assert many["decode_weight_seconds"] == pytest.approx(few["decode_weight_seconds"])
    read = plain["decode_weight_seconds"] * (plain["weights"] + few["served_lora_bytes"]) / plain["weights"]
    assert few["decode_weight_seconds"] == pytest.approx(read)
    assert wide["tokens_per_s_per_user"] < few["tokens_per_s_per_user"] < plain["tokens_per_s_per_user"]
    assert wide["usd_per_million_tokens"] > few["usd_per_million_tokens"] > plain["usd_per_million_tokens"]


@pytest.mark.parametrize("changes, code", [({"serving_engine": "hf-generate"}, "lora_engine"),
                                           ({"model": "Mixtral-8x7B", "num_gpus": 2, "tp_size": 2}, "lora_moe")])
def test_adapter_slots_that_cannot_be_estimated_are_refused(changes, code):
    reason = EST.skip_check(replace(SERVE, max_loras=4, **changes))
    assert reason is not None and reason.code == code


@pytest.mark.parametrize("args, message", [
    (["--max-lora-rank", "64", "--engine", "vllm"], "--max-lora-rank does not apply"),
    (["--max-loras", "4"], "--max-loras does not apply"),
])
def test_an_adapter_option_that_would_change_nothing_is_refused(args, message):
    result = CliRunner().invoke(main, ["estimate", "--model", "Llama-3-8B", *args])
    assert result.exit_code == 2 and message in result.output


def test_a_multi_lora_service_is_planned_with_its_slots():
    """64 adapters of rank 64 for 32 users at 8k tokens: never fewer GPUs than the base model alone, its
    pick holds the slots, and each adapter's count is part of the requirement (the plan keeps it)."""
    goal = Goal(users=32, context=8192)
    serve = replace(SERVE, gen_len=512)
    plain = plan(EST, serve, [H100, "L40S"], goal)
    lora = plan(EST, replace(serve, max_loras=64, max_lora_rank=64), [H100, "L40S"], goal)
    for gpu in (H100, "L40S"):
        a = next(o for o in plain.options if o.gpu == gpu)
        b = next(o for o in lora.options if o.gpu == gpu)
        assert b.total_gpus >= a.total_gpus
        assert b.estimate["served_lora_bytes"] > 0 and b.estimate.scenario.max_loras == 64
    out = CliRunner().invoke(main, ["estimate", "--model", "Llama-3-8B", "--engine", "vllm", "--max-loras", "8",
                                    "--max-lora-rank", "32", "--json"])
    assert out.exit_code == 0 and '"max_loras": 8' in out.output
