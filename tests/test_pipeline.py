"""Pipeline parallelism (1F1B), against hand-computed figures (#17)."""
from __future__ import annotations

import math
from dataclasses import replace

from reportgen.catalog import load_gpus, load_models
from reportgen.estimate import Estimator, Scenario
from reportgen.plan import candidates

EST = Estimator(load_models(), load_gpus())
BASE = Scenario(model="Llama-3.1-70B", workload="full", seq_len=4096, prompt_len=0, gen_len=0, num_gpus=64,
                tp_size=8, zero_stage=1, checkpointing="full", grad_accum_steps=8, gpu="H100-80GB-SXM",
                sequence_parallel="on")  # TP splits every saved tensor (test_sharding.py: without)


def test_a_stage_holds_its_layers_and_the_embedding_or_head():
    one, four = EST.estimate(BASE), EST.estimate(replace(BASE, pp_size=4))
    params, embed, head = one["resident_params"], one["embedding_params"], one["lm_head_params"]
    assert one["num_layers"] == 80 and four["pp_stage_layers"] == 20
    # Llama-3.1-70B: 70,553,706,496 parameters, 128,256 × 8,192 embedding and (untied) LM head
    assert params == 70_553_706_496 and embed == head == 128_256 * 8_192
    assert four["resident_params"] == (params - embed - head) * 20 / 80 + embed
    # bf16-mixed weights: 2 bytes per parameter over TP 8
    assert four["weights"] == math.ceil(four["resident_params"] * 2 / 8)
    assert four["dp_size"] == 64 / (8 * 4)


def test_the_first_stage_keeps_pp_micro_batches_in_flight():
    full = EST.estimate(BASE)
    for pp, accum, in_flight in ((4, 8, 4), (4, 2, 2), (8, 8, 8)):
        e = EST.estimate(replace(BASE, pp_size=pp, grad_accum_steps=accum))
        assert e["pp_in_flight"] == in_flight
        saved = BASE.batch_size * BASE.seq_len * full["saved_per_token"] * (80 // pp) / 80 * in_flight
        assert e["training_activations"] - e["autocast_copies_bytes"] == math.ceil(saved / 8)


def test_the_bubble_costs_p_minus_1_slots():
    """Per GPU a stage computes 1/p of each micro-batch; m micro-batches take m + p − 1 slots."""
    e1 = EST.estimate(replace(BASE, pp_size=1, num_gpus=16, tp_size=8, grad_accum_steps=8))
    e2 = EST.estimate(replace(BASE, pp_size=2, num_gpus=16, tp_size=8, grad_accum_steps=8))
    assert e2["pipeline_slots"] == 9
    compute1 = 8 * e1["train_compute_seconds"]
    compute2 = 9 * e2["train_compute_seconds"] / 2
    assert math.isclose(compute2 / compute1, 9 / 16)  # half the work per GPU, one slot of bubble
    # the same GPUs with a pipeline of 2 halve the data-parallel replicas: tokens/s fall by the bubble
    assert e2["train_tokens_per_s"] < e1["train_tokens_per_s"]


def test_pipelines_refuse_what_frameworks_refuse():
    assert EST.skip_check(replace(BASE, pp_size=3)).code == "pp_gpus"  # 8 × 3 does not divide 64
    assert EST.skip_check(replace(BASE, model="Llama-3.2-1B", num_gpus=64, tp_size=1, pp_size=32)).code == "pp_layers"
    assert EST.skip_check(replace(BASE, pp_size=4, zero_stage=2)).code == "pp_zero"
    assert EST.skip_check(replace(BASE, pp_size=4, zero_stage=1)) is None


def test_the_layout_search_tries_pipelines_within_the_gpus():
    tried = {(c.tp_size, c.pp_size) for c in candidates(BASE, EST, 16)}
    assert (8, 2) in tried and (2, 8) in tried and all(tp * pp <= 16 for tp, pp in tried)
    assert max(pp for _, pp in tried) == 8
