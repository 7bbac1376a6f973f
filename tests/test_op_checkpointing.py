"""torchtitan's per-op selective activation checkpointing (checkpointing op): what a layer keeps, by hand from the
policy (the layer's input, the attention kernel's output and log-sum-exp, every other plain matrix multiplication's
output in call order; a linear layer with a bias runs as addmm, which it neither keeps nor counts), what it
recomputes, and where it is refused. The peaks are checked against the oracle in test_oracle_arch.py (family
op_checkpointing) and against torchtitan's published runs in test_published_finetune.py."""
from dataclasses import replace

import pytest

from reportgen.model.catalog import load_gpus, load_models
from reportgen.model.estimate import Estimator, Scenario

EST = Estimator(load_models(), load_gpus())
BASE = Scenario(model="Llama-3.1-8B", workload="full", precision="bf16", seq_len=4096, prompt_len=0, gen_len=0,
                gpu="H100-80GB-SXM", checkpointing="op", framework="fsdp2", zero_stage=3, num_gpus=8)


@pytest.mark.parametrize("model, kept", [
    # hidden, q_dim, kv_dim, intermediate: q (1st), v (3rd), gate (5th), down (7th)
    ("Llama-3.1-8B", 4096 + 1024 + 14336 + 4096),
    # q, k, v carry biases (addmm): o is the 1st plain one, up the 3rd (hidden 3584, intermediate 18944)
    ("Qwen2.5-7B", 3584 + 18944),
    # Phi-3's fused qkv (1st) and gate_up (3rd): q_dim + 2 kv_dim = 3 × 3072, 2 × 8192
    ("Phi-3-mini-4k-instruct", 3 * 3072 + 2 * 8192),
    # a bias on every linear layer: none kept
    ("GPT-2", 0),
])
def test_a_layer_keeps_its_input_the_attention_output_and_every_other_plain_matmul(model, kept):
    row = EST.tables["Models"][model]
    e = EST.estimate(replace(BASE, model=model))
    h, q, heads = row["hidden_size"], row["q_dim"], row["num_attention_heads"]
    assert e["op_layer_saved_per_token"] == 2 * (h + kept + q) + 4 * heads
    assert e["layers_saved_per_token"] == row["num_hidden_layers"] * e["op_layer_saved_per_token"]


def test_llama_keeps_what_the_oracle_measured_beyond_full_checkpointing():
    """The oracle's probe (Llama 3 8B's layers, one GPU, bf16): 55,424 bytes per token per layer more than full
    checkpointing's at the end of forward, the policy's q, v, gate and down outputs and the attention's output."""
    op, full = EST.estimate(BASE), EST.estimate(replace(BASE, checkpointing="full"))
    assert op["op_layer_saved_per_token"] - full["layers_saved_per_token"] / 32 == 55_424


def test_it_recomputes_the_matmuls_it_does_not_keep():
    """Llama: k, o and up run again in backward, 2 FLOPs per weight per token; the attention kernel is kept."""
    e = EST.estimate(BASE)
    assert e["recompute_flops_per_token"] == 2 * 32 * (4096 * 1024 + 4096 * 4096 + 4096 * 14336)
    assert e["attention_recomputed"] == 0
    selective, full = EST.estimate(replace(BASE, checkpointing="selective")), EST.estimate(replace(BASE, checkpointing="full"))
    assert full["layers_saved_per_token"] < e["layers_saved_per_token"] < selective["layers_saved_per_token"]
    # eager attention runs its scores as bmm, which the policy neither keeps nor counts: they run again
    eager = EST.estimate(replace(BASE, attention="eager"))
    assert eager["attention_recomputed"] == 1
    assert eager["op_layer_saved_per_token"] == e["op_layer_saved_per_token"] - 2 * 4096 - 4 * 32
    assert selective["recompute_flops_per_token"] < e["recompute_flops_per_token"] < full["recompute_flops_per_token"]


@pytest.mark.parametrize("change, field", [
    (dict(model="Mixtral-8x22B"), "Mixtral-8x22B"),
    (dict(model="DeepSeek-V2-Lite"), "deepseek_v2"),
    (dict(model="Falcon-7B"), "falcon"),
    (dict(precision="fp8-te"), "fp8-te"),
    (dict(framework="megatron", zero_stage=1), "megatron"),
    (dict(workload="lora"), "lora"),
    (dict(tp_size=2), "tp_size 2"),
    (dict(cp_size=2), "cp_size 2"),
])
def test_it_is_refused_where_its_count_is_not_modelled(change, field):
    scenario = replace(BASE, **change)
    assert EST.skip_check(scenario).code == "op_checkpointing"
    assert field in EST.skip_reason(scenario), EST.skip_reason(scenario)
    assert EST.skip_check(BASE) is None
