"""Training past a sliding window under transformers' SDPA (attention sdpa): what a layer saves beyond FlashAttention's,
by hand from the kernels' code (the mask converted to the activation dtype, S × S per sequence; K and V repeated to
every head; no copy of head-major queries), where it starts (a sequence as long as the window), and where it is refused
(torch's context parallelism runs SDPA without a mask). The peaks are checked against the oracle in
test_oracle_arch.py (family sdpa_mask, and the Mistral FSDP2 record it was read from)."""
from dataclasses import replace

import pytest

from reportgen.model.catalog import load_gpus, load_models
from reportgen.model.estimate import Estimator, Scenario

EST = Estimator(load_models(), load_gpus())
BASE = Scenario(model="Mistral-7B-v0.1", workload="full", precision="bf16", seq_len=4096, prompt_len=0, gen_len=0,
                gpu="H100-80GB-SXM", attention="sdpa", framework="fsdp2", zero_stage=3, num_gpus=8)


def test_mistral_saves_the_converted_mask_and_k_v_repeated_to_every_head():
    """Mistral 7B: every layer slides (window 4,096), 32 query heads of 128 and 8 KV heads: 2 bytes × (4,096 mask
    columns + 2 × (4,096 − 1,024) repeated K/V widths) = 20,480 bytes per token per layer, the oracle's 80 MiB a layer
    at 4,096 tokens; the same scenario under flash saves that much less."""
    sdpa, flash = EST.estimate(BASE), EST.estimate(replace(BASE, attention="flash"))
    assert sdpa["sdpa_mask_saved_per_token"] == 2 * (4096 + 2 * (4096 - 1024)) == 20_480
    assert 20_480 * 4096 == 80 * 2 ** 20
    assert sdpa["layer_saved_per_token"] - flash["layer_saved_per_token"] == 20_480
    assert flash["sdpa_mask_saved_per_token"] == 0


@pytest.mark.parametrize("seq_len, masked", [(4095, False), (4096, True), (8192, True)])
def test_the_mask_starts_at_a_sequence_as_long_as_the_window(seq_len, masked):
    e = EST.estimate(replace(BASE, seq_len=seq_len))
    assert (e["sdpa_mask_saved_per_token"] > 0) == masked


def test_phi3_mini_saves_the_mask_but_no_copy_of_its_head_major_queries():
    """Phi-3-mini: 32 heads of 96 (q_dim 3,072), as many KV heads, window 2,047: at 4,096 tokens the mask's 4,096
    columns less the query copy FlashAttention's path makes (3,072 wide), 2 bytes each; a LoRA layer (frozen base)
    makes no such copy."""
    phi = replace(BASE, model="Phi-3-mini-4k-instruct")
    assert EST.estimate(phi)["sdpa_mask_saved_per_token"] == 2 * (4096 - 3072)
    lora = EST.estimate(replace(phi, workload="lora", framework="hf", zero_stage=0, num_gpus=1))
    assert lora["sdpa_mask_saved_per_token"] == 2 * 4096


def test_context_parallelism_is_refused_past_the_window_and_allowed_before_it():
    cp = replace(BASE, cp_size=2)
    assert [r.code for r in EST.skip_reasons(cp)] == ["cp_framework"]
    assert EST.skip_reasons(replace(cp, seq_len=2048)) == []
    assert EST.skip_reasons(replace(cp, attention="flash")) == []
