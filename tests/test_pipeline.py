"""Pipeline parallelism (1F1B), against hand-computed figures (#17)."""
from __future__ import annotations

import math

import pytest
from dataclasses import replace

from reportgen.model.catalog import load_gpus, load_models
from reportgen.model.spec import spec_from_config
from reportgen.model.estimate import Estimator, Scenario, rlhf_scenario
from reportgen.model.terms import PEAK_PARTS
from reportgen.planning.plan import candidates
from reportgen.report.views import segments

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


def test_the_first_stage_keeps_pp_micro_batches_in_flight_and_the_last_the_loss():
    """1F1B: the first stage runs min(pp, micro-batches) forwards before its first backward, each holding its
    layers' activations; the last stage backpropagates each micro-batch before the next, and holds the head's
    (the loss's log-probabilities) for one."""
    full = EST.estimate(BASE)
    tokens = BASE.batch_size * BASE.seq_len
    for pp, accum, in_flight in ((4, 8, 4), (4, 2, 2), (8, 8, 8)):
        e = EST.estimate(replace(BASE, pp_size=pp, grad_accum_steps=accum))
        share = (80 // pp) / 80
        assert e["pp_in_flight"] == in_flight
        assert e["pp_microbatch_bytes"] == pytest.approx(tokens * full["layers_saved_per_token"] * share / 8, abs=1)
        last = tokens * (full["layers_saved_per_token"] * share + full["head_saved_per_token"]) / 8
        assert e["training_activations"] - e["autocast_copies_bytes"] == pytest.approx(last, abs=1)
        # the first stage's backward: in flight with the gradients of the earlier micro-batches
        assert e["pp_first_in_flight"] == min(in_flight, accum - 1)
    # one stage is the whole model: every micro-batch's activations and the loss's on one GPU, as without a pipeline
    assert full["pp_microbatch_bytes"] == 0
    assert full["training_activations"] - full["autocast_copies_bytes"] == pytest.approx(
        tokens * full["saved_per_token"] / 8, abs=1)


def test_a_torch_pipeline_keeps_its_buffers_and_outputs():
    """torch.distributed.pipelining (framework hf) allocates a receive buffer per micro-batch and keeps each forward's
    output until its backward; Megatron's schedules do neither (tools/oracle/measure_pp.py)."""
    base = replace(BASE, pp_size=4, grad_accum_steps=8)
    torch_pipeline, megatron = EST.estimate(base), EST.estimate(replace(base, framework="megatron"))
    hidden = BASE.batch_size * BASE.seq_len * 8192 * 2 / 8  # a micro-batch's hidden states in bf16, over TP 8
    assert torch_pipeline["pp_recv_buffer_bytes"] == 8 * hidden and megatron["pp_recv_buffer_bytes"] == 0
    assert torch_pipeline["pp_kept_output_bytes"] == hidden and megatron["pp_kept_output_bytes"] == 0
    assert torch_pipeline["pp_kept_logits_bytes"] == BASE.batch_size * BASE.seq_len * 128_256 * 2 / 8
    for e in (torch_pipeline, megatron):  # the buffers stay between steps
        states = sum(e[k] for k in ("weights", "master_weights", "optimizer_states", "persistent_gradients",
                                    "ddp_bucket_bytes", "zero3_buffer"))
        assert e["model_states"] - states == e["pp_recv_buffer_bytes"]


# Llama-2-7B's layers with a 512-token vocabulary (the oracle's probe, 32 layers): no loss or embedding to outweigh them
SMALL_VOCAB = spec_from_config({"model_type": "llama", "vocab_size": 512, "hidden_size": 4096, "intermediate_size": 11008,
                                "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 32,
                                "tie_word_embeddings": False}, name="Llama-2-7B-v512", source="test")


def test_a_middle_stage_holds_both_receive_buffers_and_its_layers_alone():
    """Between the first and the last stage a torch pipeline's stage receives activations and gradients, a buffer per
    micro-batch each, holds one micro-batch fewer in flight than the first, and neither the embedding nor the LM head;
    under checkpointing its first layer's saved input is the receive buffer. With many micro-batches and a small
    vocabulary it is the busiest GPU (tools/oracle/measure_pp.py: the second stage's measured peak)."""
    est = EST.with_model(SMALL_VOCAB)
    many = replace(BASE, model=SMALL_VOCAB.name, num_gpus=4, tp_size=1, sequence_parallel="off", zero_stage=0,
                   pp_size=4, grad_accum_steps=32)
    e, megatron, two = (est.estimate(s) for s in (many, replace(many, framework="megatron"),
                                                  replace(many, pp_size=2, num_gpus=2)))
    assert e["peak_phase"] == 8 and e["allocated_peak"] == e["phase_pipeline_middle_stage"]
    assert megatron["phase_pipeline_middle_stage"] == 0 and two["phase_pipeline_middle_stage"] == 0
    hidden = BASE.batch_size * BASE.seq_len * 4096 * 2  # a micro-batch's hidden states in bf16
    layers = (e["stage_params"] - 512 * 4096) / e["stage_params"]  # the first stage's, less its embedding
    assert e["pp_middle_params_fraction"] == pytest.approx(layers)
    assert e["resident_weights"] == math.floor(e["weights"] * layers)
    states = sum(e[f"pp_middle_{k}"] for k in ("weights", "master_weights", "optimizer_states", "gradient_buffers"))
    assert states == pytest.approx((e["weights"] + e["master_weights"] + e["optimizer_states"] + e["persistent_gradients"]
                                    + e["ddp_bucket_bytes"]) * layers, abs=4)
    assert e["pp_middle_stage_temporaries"] - e["pp_middle_stage_backward_bytes"] == 2 * 32 * hidden
    assert e["pp_middle_in_flight"] == 3 and e["pp_in_flight"] == 4
    assert e["pp_middle_microbatch_bytes"] == e["pp_microbatch_bytes"] - hidden
    # the breakdown's parts are the middle stage's and add up to its peak
    assert sum(e[k] for k in PEAK_PARTS) == e["allocated_peak"]


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


# ---- virtual pipeline stages (Megatron's interleaved 1F1B) --------------------------------------------

VP_BASE = replace(BASE, framework="megatron", pp_size=4, grad_accum_steps=8)  # 80 layers: 20 per stage


def test_interleaving_shrinks_the_bubble_v_fold():
    """Narayanan et al. 2021 §2.2.1: the bubble is (p − 1) ÷ (v × m) of the step; p = 4, m = 8: 3 slots of
    bubble, 1.5 with two chunks per GPU, 0.6 with five."""
    plain = EST.estimate(VP_BASE)
    assert plain["pipeline_slots"] == 8 + 3
    assert EST.estimate(replace(VP_BASE, vp_size=2))["pipeline_slots"] == 8 + 1.5
    five = EST.estimate(replace(VP_BASE, vp_size=5))
    assert five["pipeline_slots"] == pytest.approx(8 + 0.6)
    assert five["step_seconds"] < plain["step_seconds"]


def test_interleaving_holds_more_activations_on_the_first_stage():
    """Korthikanti et al. 2022 §4.2.3: 1 + (p − 1) ÷ (p × v) times the 1F1B activations (p = 4, v = 2: 1.375)."""
    plain, two = EST.estimate(VP_BASE), EST.estimate(replace(VP_BASE, vp_size=2))
    assert two["pp_in_flight"] == pytest.approx(4 * 1.375)
    assert two["pp_microbatch_bytes"] == plain["pp_microbatch_bytes"] > 0
    assert two["phase_pipeline_first_stage"] - plain["phase_pipeline_first_stage"] == pytest.approx(
        (4 * 1.375 - 4) * plain["pp_microbatch_bytes"], rel=1e-9)


def test_interleaving_refuses_what_megatron_refuses():
    assert EST.skip_check(replace(VP_BASE, vp_size=2, framework="deepspeed")).code == "vp_pp"
    assert EST.skip_check(replace(VP_BASE, vp_size=2, pp_size=1)).code == "vp_pp"
    assert EST.skip_check(replace(VP_BASE, vp_size=3)) is None  # 80 layers into 12 chunks: uneven, as Megatron runs
    assert EST.skip_check(replace(VP_BASE, vp_size=32)).code == "vp_layers"  # 128 chunks for 80 layers
    assert EST.skip_check(replace(VP_BASE, vp_size=2, grad_accum_steps=6)).code == "vp_layers"  # 6 micro-batches, pp 4
    assert EST.skip_check(replace(VP_BASE, vp_size=2)) is None


def test_fsdp2_runs_under_a_pipeline_with_its_stage_gathered():
    """torchtitan shards each stage with FSDP2 and turns resharding after forward off under a pipeline; torch's stage
    syncs gradients only after the last micro-batch: the stage's bf16 parameters stay gathered and its gradients
    accumulate unsharded in fp32 through the step, so sharding over more GPUs saves only the sharded states
    (tools/oracle/measure_pp.py: Llama-2-7B-wide layers on 2 stages, stage 0 4,788 MiB alone, 4,695 over 4, 4,403
    over 8)."""
    base = Scenario(model="Llama-3.1-8B", workload="full", seq_len=4096, prompt_len=0, gen_len=0, gpu="H100-80GB-SXM",
                    framework="fsdp2", zero_stage=3, precision="bf16", checkpointing="full", pp_size=4,
                    grad_accum_steps=8)
    small, large = EST.estimate(replace(base, num_gpus=8)), EST.estimate(replace(base, num_gpus=32))
    assert EST.skip_check(replace(base, num_gpus=8)) is None  # pp_zero let DeepSpeed's and Megatron's rule refuse it
    assert small["fsdp_pipeline"] == 1 and small["zero_group"] == 2 and large["zero_group"] == 8
    stage = small["stage_params"]
    assert large["stage_params"] == stage
    for e in (small, large):
        assert e["zero3_buffer"] == math.ceil(stage * 2)  # the stage's bf16 parameters, gathered
        assert e["accumulated_gradients"] == math.ceil(stage * 4)  # its gradients, unsharded in fp32
    # more data-parallel GPUs shard only the parameters and optimizer states
    saved = small["allocated_peak"] - large["allocated_peak"]
    sharded = (small["weights"] + small["optimizer_states"]) - (large["weights"] + large["optimizer_states"])
    assert saved == pytest.approx(sharded, rel=1e-9) and saved < 0.3 * small["allocated_peak"]


def test_an_rlhf_group_trained_by_a_torch_pipeline_counts_its_receive_buffers():
    """A colocated group's breakdown stacks its roles' states: a role trained by a torch pipeline keeps receive buffers
    among them (a random preset's PPO with pp_size 2 ended in a traceback: the bar left them out)."""
    actor = Scenario(model="Llama-3.2-1B", workload="full", seq_len=256, prompt_len=128, gen_len=128, num_gpus=2,
                     pp_size=2, gpu="A100-80GB", precision="bf16-mixed")
    group = EST.estimate_group(rlhf_scenario(name="ppo", algorithm="ppo", placement="colocated", actor=actor))
    roles = dict(group.roles)
    assert group["pp_recv_buffer_bytes"] == sum(e["pp_recv_buffer_bytes"] for e in roles.values()) > 0
    assert sum(segments(group).values()) == group["device_total"]
