"""A decoder layer rebuilt in backward with every weight trained (full or per-op checkpointing, transformers' layers):
counted by its parts (rebuilt_layer_by_parts), by hand from what the oracle's traces hold, where the parts apply and
where the fitted ratio stays, and how the layer's own gradients are counted (beside every gradient at the end of
backward, fresh with nothing kept, added in place with gradient accumulation). The peaks are checked against the
oracle in test_oracle_arch.py (family rebuilt_layer_1gpu: one GPU at 4,096 to 16,384 tokens, held out)."""
from dataclasses import replace

import pytest

from reportgen.model.catalog import load_gpus, load_models
from reportgen.model.estimate import Estimator, Scenario

EST = Estimator(load_models(), load_gpus())
# Llama-2-7B: hidden 4,096, MLP 11,008, 32 layers; bf16 weights and gradients, one GPU, 8,192 tokens
BASE = Scenario(model="Llama-2-7B", workload="full", precision="bf16", seq_len=8192, batch_size=1, prompt_len=0,
                gen_len=0, gpu="H100-80GB-SXM", attention="flash", framework="hf", zero_stage=0, num_gpus=1,
                checkpointing="full")
HIDDEN, MLP, TOKENS = 4096, 11008, 8192


def test_llama_2_7b_rebuilt_layer_by_hand():
    """At 8,192 tokens on one GPU the MLP's backward binds: the layer's saved tensors made again, the residual
    gradient (2 bytes × hidden), the down projection's weight gradient (2 bytes × hidden × MLP) and three 2-byte
    intermediate-wide tensors, the MLP's input freed. The end of the layer's backward (every weight gradient of the
    layer, RMSNorm's backward: five fp32 hidden-wide tensors beside the first norm's saved input, the rebuilt
    activations freed) is below it."""
    e = EST.estimate(BASE)
    assert e["rebuilt_layer_by_parts"] == 1
    layer_params = 4 * HIDDEN * HIDDEN + 3 * HIDDEN * MLP + 2 * HIDDEN
    assert abs(e["decoder_layer_params"] - layer_params) <= 128  # transformers' per-layer rotary buffer
    assert e["layer_weight_gradient_bytes"] == 2 * e["decoder_layer_params"]
    rebuilt = TOKENS * e["layer_saved_per_token"]
    residual_gradient = TOKENS * 2 * HIDDEN
    mlp = 2 * HIDDEN * MLP + TOKENS * 2 * MLP * (3 - 1)
    end = e["layer_weight_gradient_bytes"] + TOKENS * (5 * 4 * HIDDEN + e["layer_norm_saved_bytes"] * HIDDEN) - rebuilt
    assert end < mlp
    # recompute_bytes: the rebuilt layer beyond its kept input (under full checkpointing its kept tensors are its input)
    assert e["recompute_bytes"] == rebuilt + residual_gradient + mlp
    # the end of backward: the first layer beside its kept input, its own gradients already among every gradient
    assert e["backward_end_layer_bytes"] == rebuilt + residual_gradient + mlp + TOKENS * 2 * HIDDEN \
        - e["layer_weight_gradient_bytes"]


def test_longer_sequences_make_the_rebuilt_layer_grow_past_the_fitted_ratio():
    """The ratio (0.92 of the saved bytes, fitted at 2,048 tokens on eight of Llama-2-7B's layers) is constant in the
    sequence; the parts are not (the layer's own gradients, taken out at the end of backward, do not grow with it): on
    the whole Llama-2-7B they are below the ratio at 2,048 tokens and above it from 8,192 (the oracle's Llama 3 8B
    layers at 16,384 tokens peaked 10.3 % above the ratio's estimate)."""
    ratio = EST.assumptions["recompute_ratio_trained"]
    share = {}
    for seq_len in (2048, 8192, 16384):
        e = EST.estimate(replace(BASE, seq_len=seq_len))
        share[seq_len] = e["backward_end_layer_bytes"] / (seq_len * e["group_layer_saved_per_token"] * ratio)
    assert share[2048] < 1 < share[8192] < share[16384]


@pytest.mark.parametrize("change, by_parts", [
    ({}, True), ({"checkpointing": "op"}, True), ({"framework": "deepspeed", "zero_stage": 2, "num_gpus": 8}, True),
    ({"workload": "lora"}, False), ({"attention": "eager"}, False), ({"framework": "litgpt"}, False),
    ({"checkpointing": "selective"}, False)])
def test_where_the_parts_apply(change, by_parts):
    assert EST.estimate(replace(BASE, **change))["rebuilt_layer_by_parts"] == int(by_parts)


def test_own_gradients_counted_once():
    """Whole gradients without accumulation: the end of backward counts every gradient, the layer's own among them,
    so the layer's part takes them out; ZeRO-2 partitions the gradients, the layer's own are made whole beside them;
    with accumulation whole gradients stay from the earlier micro-batches and the new ones add into them in place."""
    single = EST.estimate(BASE)
    zero2 = EST.estimate(replace(BASE, framework="deepspeed", zero_stage=2, num_gpus=8))
    accumulated = EST.estimate(replace(BASE, grad_accum_steps=4))
    assert (single["layer_gradients_whole"], single["layer_gradients_in_place"]) == (1, 0)
    assert (zero2["layer_gradients_whole"], zero2["layer_gradients_in_place"]) == (0, 0)
    assert (accumulated["layer_gradients_whole"], accumulated["layer_gradients_in_place"]) == (1, 1)
    own = single["layer_weight_gradient_bytes"]
    assert single["backward_end_layer_bytes"] == single["recompute_bytes"] + single["layer_kept_bytes"] - own
    assert zero2["backward_end_layer_bytes"] == zero2["recompute_bytes"] + zero2["layer_kept_bytes"]
    # in place the layer's own gradients take nothing: where the MLP's backward binds, not the down projection's
    assert accumulated["recompute_bytes"] == single["recompute_bytes"] - single["mlp_down_gradient_bytes"]


def test_per_op_checkpointing_counts_the_rebuilt_layers_kept_tensors_once():
    """Per-op checkpointing keeps some of each layer's tensors; the first recomputed layer's phase holds every layer's
    kept tensors and that layer rebuilt whole, which includes its own kept ones (the oracle's Qwen2.5-7B layers at
    16,384 tokens were +6.10 % while they were counted twice)."""
    e = EST.estimate(replace(BASE, checkpointing="op"))
    # the peak holds the layer's saved tensors, made again beside its input; its kept ones are among them
    assert e["layer_backward_peak_bytes"] >= e["layer_saved_bytes"] == TOKENS * e["group_layer_saved_per_token"]
    assert e["recompute_bytes"] == e["rebuilt_layer_input_bytes"] - e["layer_kept_bytes"] + e["layer_backward_peak_bytes"]
    assert e["recompute_start_activations"] == 32 * e["layer_kept_bytes"]
    assert e["layer_kept_bytes"] > e["rebuilt_layer_input_bytes"] > 0


def test_autocast_holds_the_rebuilt_layers_weight_casts_through_its_mlp_backward():
    """Under autocast (fp32 weights, bf16 compute) the recomputed layer casts its weights to bf16 again and its matrix
    multiplications save the casts: every one but the down projection's (2 bytes each) is held while the MLP's backward
    runs; none in bf16 training (no casts) or without checkpointing (no layer rebuilt)."""
    amp = EST.estimate(replace(BASE, precision="amp-bf16"))
    assert amp["rebuilt_layer_casts_bytes"] == 2 * (amp["decoder_layer_params"] - HIDDEN * MLP)
    assert amp["layer_mlp_backward_bytes"] - EST.estimate(replace(BASE, precision="amp-bf16", checkpointing="none"))[
        "layer_mlp_backward_bytes"] == amp["rebuilt_layer_casts_bytes"]
    assert EST.estimate(BASE)["rebuilt_layer_casts_bytes"] == 0


def test_a_frozen_base_keeps_the_ratio_but_never_below_the_parts():
    """LoRA keeps recompute_ratio_frozen × the rebuilt layer's saved bytes, but with adapters on the attention only the
    layer saves little beyond the frozen base's tensors while its MLP's backward still makes three intermediate-wide
    tensors: the parts (no weight gradients; the down projection's input freed only where its adapter saved it) are a
    floor. q/v at 8,192 tokens: the parts bind (the oracle's Qwen2.5-7B layers were -6.76 % by the ratio); all-linear
    adapters at 2,048 tokens: the ratio (its fit)."""
    qv = EST.estimate(replace(BASE, workload="lora", lora_targets="q_proj,v_proj"))
    assert (qv["rebuilt_layer_by_parts"], qv["rebuilt_layer_parts_known"]) == (0, 1)
    assert qv["layer_weight_gradient_bytes"] == qv["mlp_down_gradient_bytes"] == qv["mlp_down_input_bytes"] == 0
    ratio = EST.assumptions["recompute_ratio_frozen"]
    assert qv["recompute_bytes"] == qv["rebuilt_layer_parts_bytes"] > TOKENS * qv["group_layer_saved_per_token"] * ratio
    short = EST.estimate(replace(BASE, workload="lora", lora_targets="all-linear", seq_len=2048))
    assert short["recompute_bytes"] > short["rebuilt_layer_parts_bytes"]
    # the fp32 adapter on the down projection keeps a 4-byte copy of its input, freed by its backward
    assert short["mlp_down_input_bytes"] == 2048 * MLP * 4
    # eager attention has no parts: the ratio alone
    assert EST.estimate(replace(BASE, workload="lora", attention="eager"))["rebuilt_layer_parts_known"] == 0
