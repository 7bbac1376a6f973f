"""Many LoRA adapters served on one base model (#34 item 4): vLLM's and SGLang's adapter slots.

An engine with `max_loras` > 0 allocates, with the model and before it profiles its KV pool, one slot
per adapter on every linear layer at `max_lora_rank` (vLLM: `max_loras`, `max_lora_rank`; SGLang:
`max_loras_per_batch`). Checked here against independent counts: at TP 1 a slot is PEFT's all-linear
adapter of that rank (the estimator's LoRA training count, which tests/test_models.py checks against
transformers), and at TP 2 the hand count of vLLM's column- and row-parallel LoRA layers; the KV pool
gives up exactly the slots' bytes; decoding reads the adapters a batch uses. On a mixture-of-experts model every
routed expert has its slot (vLLM's FusedMoEWithLoRA): measured by two vLLM 0.17.1 start-up logs of
Nemotron-3-Nano-30B-A3B, without and with LoRA (presets/validation/published_serving.json)."""
from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner

from reportgen.model.catalog import load_gpus, load_models
from reportgen.cli import main
from reportgen.model.estimate import Estimator, Scenario
from reportgen.model.units import GiB
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


def test_every_routed_expert_has_its_slot_at_tp2():
    """Mixtral-8x7B (hidden 4,096, q 4,096, kv 1,024, 8 experts of width 14,336, 32 layers) at TP 2, rank 16, 2
    slots, as vLLM allocates them: attention as a dense model's; the router an A and a B whole (replicated);
    each expert's gate and up an A each whole and a B split, its down an A split and a B whole."""
    e = EST.estimate(replace(SERVE, model="Mixtral-8x7B", num_gpus=2, tp_size=2, max_loras=2))
    h, q, kv, width, experts = 4096, 4096, 1024, 14336, 8
    attention = (3 * h + (q + 2 * kv) / 2) + (q / 2 + h)
    expert = 2 * (h + width / 2) + (width / 2 + h)
    assert e["served_lora_routed_params"] == 2 * 16 * 32 * experts * expert
    assert e["served_lora_params"] == 2 * 16 * 32 * (attention + (h + experts) + experts * expert) == 303_046_656


def test_expert_slots_are_what_vllm_logs():
    """vLLM 0.17.1, Nemotron-3-Nano-30B-A3B on one RTX PRO 6000: 'Model loading took 58.91 GiB' without LoRA
    (pub-srv-030), 60.64 GiB with enable_lora, max_lora_rank 32 and vLLM's default of one slot (pub-srv-031). The
    slots' 1.73 GiB are 97 % routed experts' (128 experts × 23 MoE layers × 32 × 2 × (2,688 + 1,856), non-gated);
    the estimate is 3.8 % under (1.665 GiB: embedding and LM-head slots, 16 MB, and the allocator's rounding
    are left out), and its weights with the slots 0.3 % under the log's."""
    records = {r["id"]: r for r in json.loads((Path(__file__).resolve().parent.parent / "presets" / "validation"
                                               / "published_serving.json").read_text(encoding="utf-8"))["records"]}
    plain, lora = records["pub-srv-030"], records["pub-srv-031"]
    assert "'enable_lora': True, 'max_lora_rank': 32" in lora["quote"] and "max_loras" not in lora["quote"]
    scenario = Scenario(**{**plain["reportgen"]["scenario"], "model": plain["reportgen"]["model"], "max_loras": 1,
                           "max_lora_rank": 32, "gpu_memory_utilization": 0.85, "batch_size": 64})
    e = EST.estimate(scenario)
    logged_slots_gib = lora["weights_gib"] - plain["weights_gib"]
    assert abs(e["served_lora_bytes"] / GiB / logged_slots_gib - 1) <= 0.045
    assert e["served_lora_routed_params"] / e["served_lora_params"] > 0.95
    assert abs(e["weights"] / GiB / lora["weights_gib"] - 1) <= 0.004


@pytest.mark.parametrize("changes, code", [
    ({"serving_engine": "hf-generate"}, "lora_engine"),
    ({"model": "Mixtral-8x7B", "num_gpus": 2, "tp_size": 2, "serving_engine": "sglang"}, "lora_moe"),
    ({"model": "Mixtral-8x7B", "num_gpus": 2, "ep_size": 2}, "lora_moe"),
    ({"model": "DeepSeek-V2-Lite"}, "lora_mla"),
    ({"model": "Nemotron-H-8B", "serving_engine": "sglang"}, "hybrid_inference"),
])
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
