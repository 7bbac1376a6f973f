"""Hybrid Mamba-2 models (#32's architectures): Nemotron-H.

Its parameter count is checked against transformers on the meta device with every catalogue model
(tests/test_models.py, tests/data/transformers_counts.json). Here: its config read as transformers reads it, and
what a serving engine keeps per sequence, derived in each test from the config's numbers and the engines' rules
(vLLM's HybridAttentionMambaModelConfig and KV cache groups, SGLang's Mamba pool), not from the estimator.
"""
import json
from dataclasses import replace
from math import ceil
from pathlib import Path

import pytest
from click.testing import CliRunner

from reportgen.cli import main
from reportgen.errors import InputError
from reportgen.model.catalog import load_gpus, load_models
from reportgen.model.estimate import Estimator, Scenario
from reportgen.model.spec import spec_from_config

EST = Estimator(load_models(), load_gpus())
CONFIG = json.loads((Path(__file__).parents[1] / "presets" / "models" / "nemotron-h-8b.json").read_text())["config"]
# Nemotron-H-8B's config: 52 blocks (24 Mamba-2, 4 attention, 24 MLP), 8 KV heads of 128, 128 Mamba-2 heads of 64
# with 8 groups, an SSM state of 128 and a convolution over 4 inputs.
MAMBA, ATTENTION = 24, 4
CONV_DIM = 128 * 64 + 2 * 8 * 128  # x, B and C channels: 10,240
CONV_STATE = CONV_DIM * (4 - 1)  # the last conv_kernel − 1 inputs
SSM_STATE = 128 * 64 * 128
KV_PER_TOKEN_LAYER = 2 * 8 * 128  # K and V values of one attention layer
# bf16 conv state; the SSM state in the config's mamba_ssm_cache_dtype, fp32 where it has none (Nemotron-H-8B)
STATE_BYTES = CONV_STATE * 2 + SSM_STATE * 4


def _scenario(**values) -> Scenario:
    base = dict(model="Nemotron-H-8B", workload="inference", gpu="H100-80GB-SXM", prompt_len=7680, gen_len=512,
                batch_size=8)
    return Scenario.from_mapping(base | values, models=EST.specs, gpus=EST.gpus)


def test_moe_blocks_are_experts_beside_mamba_and_attention():
    """Nemotron 3 Nano (MEMEM*E…: 23 Mamba-2, 23 MoE, 6 attention blocks): each MoE block routes a token to 6 of 128
    relu² experts of width 1,856 beside a shared one of 3,712; vLLM pages its 23 Mamba-2 layers in groups of 6
    (the attention layers' count: one padding layer, 1/23 = 4.35 % of their pages): 24 blocks a sequence, of
    16 × ⌈(6,144 × 3 × 2 + 64 × 64 × 128 × 4) ÷ (16 × 2 × 2 × 128 × 2)⌉ = 2,096 tokens with a bf16 cache (the
    config's fp32 SSM state), 4,176 with an fp8 one (the state padded by 0.19 %)."""
    spec = EST.specs["Nemotron-3-Nano-30B-A3B"]
    assert (spec.num_mamba_layers, spec.num_moe_layers, 52 - spec.attention_free_layers) == (23, 23, 6)
    state = 6144 * 3 * 2 + 64 * 64 * 128 * 4
    for kv_dtype, kv_bytes, tokens in (("bf16", 2, 2096), ("fp8", 1, 4176)):
        v = EST.estimate(Scenario.from_mapping(dict(model=spec.name, workload="inference", gpu="H100-80GB-SXM",
                                                    serving_engine="vllm", prompt_len=8192, gen_len=1024,
                                                    kv_dtype=kv_dtype), models=EST.specs, gpus=EST.gpus)).values
        assert v["mlp_width"] == 6 * 1856 + 3712  # per block with an MLP, not averaged over the Mamba-2 ones
        block = 16 * ceil(state / (16 * 2 * 2 * 128 * kv_bytes))
        assert v["kv_page_tokens"] == block == tokens
        page = block * 2 * 2 * 128 * kv_bytes
        assert v["kv_seq_bytes"] == 6 * ceil((8192 + 1024) / block) * page + 24 * page
    assert round(100 * (4176 * 2 * 2 * 128 - state) / state, 2) == 0.19


def test_the_blocks_are_counted_as_transformers_reads_the_pattern():
    spec = EST.specs["Nemotron-H-8B"]
    assert (spec.num_hidden_layers, spec.num_mamba_layers, spec.attention_free_layers, spec.mlp_free_layers) == (
        52, MAMBA, 52 - ATTENTION, 52 - 24)
    # transformers 5 writes the pattern as a list of block kinds, without num_hidden_layers
    kinds = {"M": "mamba", "*": "attention", "-": "mlp"}
    listed = {k: v for k, v in CONFIG.items() if k not in ("hybrid_override_pattern", "num_hidden_layers")}
    listed["layers_block_type"] = [kinds[c] for c in CONFIG["hybrid_override_pattern"]]
    assert replace(spec_from_config(listed, name=spec.name, source=spec.source)) == spec


@pytest.mark.parametrize("change,key,words", [
    (dict(hybrid_override_pattern="M-M*-E", num_hidden_layers=6), "n_routed_experts", "missing required field"),
    (dict(hybrid_override_pattern="M-M*-X"), "hybrid_override_pattern", "expected the blocks' kinds"),
    (dict(hybrid_override_pattern="M-M-"), "hybrid_override_pattern", "no attention block"),
    (dict(num_hidden_layers=51), "num_hidden_layers", "has 52 blocks"),
    (dict(n_groups=3), "n_groups", "does not divide mamba_num_heads 128"),
    (dict(mamba_ssm_cache_dtype="fp8"), "mamba_ssm_cache_dtype", "expected one of float32, bfloat16, float16"),
])
def test_a_config_it_cannot_build_names_the_field(change, key, words):
    with pytest.raises(InputError) as err:
        spec_from_config({**CONFIG, **change}, name="x", source="cfg.json")
    assert err.value.key_path == key and words in err.value.message


@pytest.mark.parametrize("kv_dtype,kv_bytes", [("bf16", 2), ("fp8", 1)])
def test_vllm_pages_each_mamba_layer_in_an_attention_block_it_enlarges(kv_dtype, kv_bytes):
    """vLLM makes one attention layer's block hold one Mamba-2 layer's states (conv in the model's dtype, SSM in
    fp32: its NemotronH hook), in multiples of 16 tokens, and pads the states to the block; each request takes one
    block per Mamba-2 layer (24 in groups of the 4 attention layers: no padding) and whole blocks of its context per
    attention layer."""
    s = _scenario(serving_engine="vllm", kv_dtype=kv_dtype)
    v = EST.estimate(s).values
    block = 16 * ceil(STATE_BYTES / (16 * KV_PER_TOKEN_LAYER * kv_bytes))
    assert v["kv_page_tokens"] == block == {2: 1040, 1: 2080}[kv_bytes]
    page = block * KV_PER_TOKEN_LAYER * kv_bytes
    per_sequence = ATTENTION * ceil((s.prompt_len + s.gen_len) / block) * page + MAMBA * page
    assert v["kv_seq_bytes"] == per_sequence
    assert v["kv_cache"] == 8 * per_sequence
    # the pool's sequences: its attention tokens over what a sequence takes, states included
    assert v["max_concurrency"] == pytest.approx(v["kv_pool_tokens"] * ATTENTION * KV_PER_TOKEN_LAYER * kv_bytes
                                                 / per_sequence, rel=1e-12)


@pytest.mark.parametrize("engine,conv_inputs", [("sglang", 4 - 1), ("hf-generate", 4)])
def test_sglang_and_generate_keep_the_states_exact_with_an_fp32_ssm_state(engine, conv_inputs):
    v = EST.estimate(_scenario(serving_engine=engine)).values
    attention = ATTENTION * KV_PER_TOKEN_LAYER * 2 * v["context_block_tokens"]
    assert v["kv_seq_bytes"] == attention + MAMBA * (CONV_DIM * conv_inputs * 2 + SSM_STATE * 4)  # fp32 SSM state


def test_generate_keeps_the_states_transformers_keeps():
    """transformers 5.24's generate() on a tiny Nemotron-H (tests/data/nemotron_h_cache.json): every Mamba-2 layer's
    convolution state (bf16, conv_kernel inputs) and SSM state (fp32) per sequence, as measured."""
    measured = json.loads((Path(__file__).parent / "data" / "nemotron_h_cache.json").read_text())
    spec = spec_from_config(measured["config"], name="tiny-nemotron-h", source="nemotron_h_cache.json")
    est = EST.with_model(spec)
    s = replace(_scenario(serving_engine="hf-generate", prompt_len=measured["prompt_len"],
                          gen_len=measured["max_new_tokens"], batch_size=measured["batch"]), model=spec.name)
    states = sum(layer[k]["bytes_per_sequence"] for layer in measured["layers"]
                 for k in ("conv_states", "recurrent_states") if k in layer)
    assert states == 2 * (320 * 4 * 2 + 8 * 32 * 16 * 4)  # the file's two Mamba-2 layers
    assert est.estimate(s)["mamba_state_bytes"] == states


@pytest.mark.parametrize("engine", ["vllm", "sglang", "hf-generate"])
def test_the_states_do_not_grow_with_the_context_and_split_over_tensor_parallel_gpus(engine):
    short, long = (EST.estimate(_scenario(serving_engine=engine, prompt_len=n)).values for n in (2048, 2048 + 1040 * 8))
    assert long["kv_seq_bytes"] - short["kv_seq_bytes"] == ATTENTION * KV_PER_TOKEN_LAYER * 2 * 1040 * 8
    one = EST.estimate(_scenario(serving_engine=engine)).values
    two = EST.estimate(_scenario(serving_engine=engine, num_gpus=2, tp_size=2)).values
    assert two["mamba_state_bytes"] * 2 == one["mamba_state_bytes"]
    assert two["kv_seq_bytes"] * 2 == one["kv_seq_bytes"]


def test_a_hybrid_model_holds_more_long_sequences_than_a_transformer_of_its_size():
    """At 32k tokens a Llama-3.1-8B sequence keeps 32 layers of KV (32 × 2 × 8 × 128 × 2 B a token: 4.29 GB), a
    Nemotron-H-8B one 4 layers in 1,040-token blocks and 24 padded states (0.65 GB): 6.6 times fewer bytes, and the
    pools are within 1 % (weights of 16.06 and 16.20 GB), so an H100 serves over 6.5 times the sequences."""
    hybrid = EST.estimate(_scenario(serving_engine="vllm", prompt_len=32768, gen_len=0)).values
    llama = EST.estimate(_scenario(serving_engine="vllm", prompt_len=32768, gen_len=0, model="Llama-3.1-8B")).values
    assert llama["kv_seq_bytes"] == 32 * 2 * 8 * 128 * 2 * 32768
    block = 1040
    assert hybrid["kv_seq_bytes"] == (ATTENTION * KV_PER_TOKEN_LAYER * 2 * ceil(32768 / block) * block
                                      + MAMBA * block * KV_PER_TOKEN_LAYER * 2)
    assert abs(hybrid["kv_pool_bytes"] / llama["kv_pool_bytes"] - 1) < 0.01
    assert hybrid["max_concurrency"] > 6.5 * llama["max_concurrency"]


def test_a_decode_step_reads_and_writes_every_state():
    v = EST.estimate(_scenario(serving_engine="vllm")).values
    without = EST.estimate(_scenario(serving_engine="vllm", batch_size=1)).values
    assert v["mamba_state_bytes"] == MAMBA * STATE_BYTES
    state_seconds = 2 * v["mamba_state_bytes"] / v["decode_bytes_per_s"]
    cache_seconds = (v["decode_attention_seconds"] - 8 * state_seconds) / 8
    assert cache_seconds > 0
    assert without["decode_attention_seconds"] == pytest.approx(cache_seconds + state_seconds, rel=1e-9)


@pytest.mark.parametrize("args", [["--workload", "full"], ["--workload", "lora"],
                                  ["--workload", "inference", "--engine", "sglang", "--max-loras", "4"]])
def test_training_and_adapters_are_refused_in_one_line(args):
    result = CliRunner().invoke(main, ["estimate", "--model", "Nemotron-H-8B", "--gpu", "H100-80GB-SXM", *args])
    assert result.exit_code == 1 and "Traceback" not in result.output  # a scenario the estimator does not model
    assert result.output.count("\n") == 1 and result.output.startswith("Error: ")
    assert "not modelled" in result.output


@pytest.mark.parametrize("attention,mamba,pages", [(4, 24, 24), (10, 54, 60), (13, 12, 13)])
def test_vllm_counts_the_mamba_layers_in_whole_kv_cache_groups(attention, mamba, pages):
    """vLLM's groups hold as many layers as the kind with fewer has, or the larger count within 25 %; the last
    group of a kind is padded (54 Mamba-2 layers beside 10 attention ones take 60 blocks a sequence). Where the
    attention layers are the padded kind (more of them than Mamba-2 layers, not within 25 %: no such model is in
    the catalogue) their padding is not modelled."""
    spec = EST.specs["Nemotron-H-8B"]
    layers = attention + mamba + 24
    spec = replace(spec, name="hybrid", num_hidden_layers=layers, num_mamba_layers=mamba,
                   attention_free_layers=layers - attention, mlp_free_layers=layers - 24)
    est = EST.with_model(spec)
    s = replace(_scenario(serving_engine="vllm"), model="hybrid")
    v = est.estimate(s).values
    page = v["kv_page_tokens"] * KV_PER_TOKEN_LAYER * 2
    assert v["kv_seq_bytes"] == attention * ceil((s.prompt_len + s.gen_len) / v["kv_page_tokens"]) * page + pages * page


def _variant(**fields) -> Estimator:
    return EST.with_model(replace(EST.specs["Nemotron-H-8B"], name="variant", **fields))


def test_a_single_group_is_kept_whole_on_every_tensor_parallel_gpu():
    """vLLM splits the heads (x, the SSM state) over TP; one group's B and C are replicated (a Mamba-2 model with
    n_groups 1, as Mamba-Codestral), where Nemotron-H's 8 groups split."""
    s = replace(_scenario(serving_engine="vllm", num_gpus=2, tp_size=2), model="variant")
    one_group = _variant(mamba_groups=1).estimate(s)["mamba_state_bytes"]
    assert one_group == MAMBA * ((128 * 64 // 2 + 2 * 128) * 3 * 2 + SSM_STATE * 4 // 2)
    eight = _variant().estimate(s)["mamba_state_bytes"]
    assert eight == MAMBA * ((128 * 64 + 2 * 8 * 128) // 2 * 3 * 2 + SSM_STATE * 4 // 2)


def test_a_tensor_parallel_degree_that_splits_a_group_is_refused():
    s = replace(_scenario(serving_engine="vllm", num_gpus=4, tp_size=4), model="variant")
    assert _variant(mamba_groups=2).skip_reason(s) == (
        "tp_size 4: a Mamba-2 layer splits over the tensor-parallel GPUs by its 128 heads and 2 groups: tp_size must "
        "divide the heads, and the groups unless there is one (vLLM's MambaMixer2)")
    assert _variant(mamba_groups=4).skip_reason(s) is None


def test_the_catalogue_listing_says_which_layers_attend():
    out = CliRunner().invoke(main, ["models", "--json"])
    row = next(r for r in json.loads(out.output) if r["name"] == "Nemotron-H-8B")
    pattern = CONFIG["hybrid_override_pattern"]
    assert (row["num_hidden_layers"], row["num_attention_layers"], row["num_mamba_layers"]) == (
        len(pattern), pattern.count("*"), pattern.count("M"))
    table = CliRunner().invoke(main, ["models"]).output
    assert "52 (4 attention)" in next(line for line in table.splitlines() if line.startswith("Nemotron-H-8B"))


def test_a_config_that_keeps_the_ssm_state_in_16_bits_halves_it():
    """mamba_ssm_cache_dtype bfloat16 in the config (vLLM's NemotronH hook reads it; its default is fp32): the
    SSM state takes 2 bytes a value, and vLLM's block shrinks to 16 × ⌈(61,440 + 2,097,152) ÷ 65,536⌉ = 528."""
    spec = spec_from_config({**CONFIG, "mamba_ssm_cache_dtype": "bfloat16"}, name="bf16-state", source="cfg.json")
    v = EST.with_model(spec).estimate(replace(_scenario(serving_engine="vllm"), model=spec.name)).values
    assert v["mamba_state_bytes"] == MAMBA * (CONV_STATE * 2 + SSM_STATE * 2)
    assert v["kv_page_tokens"] == 16 * ceil((CONV_STATE * 2 + SSM_STATE * 2) / (16 * KV_PER_TOKEN_LAYER * 2)) == 528



def test_a_crowded_hybrid_pool_leaves_no_context_not_a_negative_one():
    """Nemotron-3-Nano-30B-A3B's vLLM pool on an RTX PRO 6000 holds its Mamba-2 states for about 256 sequences at 8k
    (pub-srv-030's log: 245.50x): asked for 1,024, each sequence's states alone take more than its share, so the
    context left to each is none (the estimate said -4,184 tokens), and the pool does not fit the batch."""
    crowded = EST.estimate(Scenario(
        model="Nemotron-3-Nano-30B-A3B", workload="inference", serving_engine="vllm", gpu="RTX-PRO-6000-Blackwell",
        batch_size=1024, prompt_len=8192, gen_len=0, max_num_batched_tokens=16384))
    assert crowded["max_concurrency"] < 1024
    assert crowded["max_context_tokens"] == 0 and not crowded["kv_fits"]
