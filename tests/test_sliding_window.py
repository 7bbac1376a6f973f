"""Sliding-window attention and GPT-OSS's MXFP4 experts (#32's architectures).

The cache each engine keeps for a sliding-window layer is checked against the oracle (generate(): tests/
test_oracle_arch.py) and vLLM's log of gpt-oss-120b (tests/test_serving.py); the MXFP4 weights against the
released gpt-oss-20b checkpoint (tests/data/facts.json). Here: the properties a planner relies on.
"""
from dataclasses import replace

import pytest

from refdata import fact
from reportgen.errors import InputError
from reportgen.model.catalog import load_gpus, load_models
from reportgen.model.estimate import Estimator, Scenario

EST = Estimator(load_models(), load_gpus())


def _scenario(**values) -> Scenario:
    return Scenario.from_mapping(values, models=EST.specs, gpus=EST.gpus)


def _without_window(model: str) -> Estimator:
    spec = replace(EST.specs[model], name=f"{model} (no window)", sliding_window=0, num_sliding_layers=0)
    return EST.with_model(spec)


def test_mxfp4_weights_are_the_released_checkpoint():
    """gpt-oss-20b's experts in MXFP4 (4-bit values, one 8-bit scale per 32) and everything else in bf16: the
    estimate's weights are the checkpoint's bytes exactly."""
    s = _scenario(model="gpt-oss-20b", workload="inference", weight_dtype="mxfp4", prompt_len=1024)
    assert EST.estimate(s)["weights"] == fact("checkpoint-0001")["value"] == 13_761_264_768


def test_mxfp4_quantises_experts_and_is_refused_where_there_are_none():
    s = _scenario(model="gpt-oss-120b", workload="inference", weight_dtype="mxfp4", prompt_len=1024)
    v = EST.estimate(s).values
    bf16 = EST.estimate(replace(s, weight_dtype="bf16")).values
    # the experts' matrices shrink 16 → 4.25 bits; attention, router, biases, embeddings and head stay 16-bit
    matrices = 36 * 128 * 3 * 2880 * 2880
    assert bf16["weights"] - v["weights"] == matrices * (16 - 4.25) / 8
    assert EST.skip_reason(replace(s, model="Llama-3-8B")) == (
        "weight_dtype mxfp4 quantises the experts of a mixture-of-experts model; Llama-3-8B has none")
    with pytest.raises(InputError, match="kv_dtype"):
        _scenario(model="gpt-oss-20b", workload="inference", kv_dtype="mxfp4", prompt_len=1024)


@pytest.mark.parametrize("engine", ["vllm", "hf-generate"])
def test_a_window_never_costs_memory_and_an_engine_gains_past_it(engine):
    """Mistral-7B-v0.1 slides every layer over 4,096 tokens. At 32k tokens vLLM keeps (4,095 + 8,192 tokens per
    step) in whole blocks, plus one, per layer: the pool holds 32,768 / 12,304 = 2.7 times the sequences. generate()
    holds the whole prompt after the prefill: a long prompt gains nothing; a short prompt generating past the
    window keeps only the window."""
    s = _scenario(model="Mistral-7B-v0.1", workload="inference", serving_engine=engine, gpu="H100-80GB-SXM",
                  prompt_len=32768, gen_len=0, batch_size=4)
    windowed, full = EST.estimate(s).values, _without_window("Mistral-7B-v0.1").estimate(
        replace(s, model="Mistral-7B-v0.1 (no window)")).values
    assert windowed["kv_cache"] <= full["kv_cache"]
    if engine == "vllm":
        assert windowed["kv_window_tokens"] == (-(-(4095 + 8192) // 16) + 1) * 16 == 12304
        assert windowed["max_concurrency"] == pytest.approx(full["max_concurrency"] * 32768 / 12304)
    else:
        assert windowed["kv_cache"] == full["kv_cache"]  # the prefill holds all 32,768 tokens
        short = replace(s, prompt_len=512, gen_len=16384)
        assert EST.estimate(short)["kv_window_tokens"] == 4096
        assert EST.estimate(short)["kv_cache"] == full["kv_cache"] // 8  # 4,096 of 32,768 tokens


def test_sglang_counts_sliding_layers_whole():
    """SGLang's separate window pool is not modelled: its estimate is the full-attention one (an upper bound)."""
    s = _scenario(model="Gemma-2-9B", workload="inference", serving_engine="sglang", gpu="H100-80GB-SXM",
                  prompt_len=8192, gen_len=0, batch_size=8)
    full = _without_window("Gemma-2-9B").estimate(replace(s, model="Gemma-2-9B (no window)")).values
    assert EST.estimate(s)["kv_cache"] == full["kv_cache"]


def test_mxfp4_needs_an_ampere_gpu():
    s = _scenario(model="gpt-oss-20b", workload="inference", weight_dtype="mxfp4", kv_dtype="fp16", prompt_len=1024,
                  gpu="V100-32GB")
    assert EST.skip_reason(s) == "MXFP4 weights need an Ampere GPU or later (vLLM's Marlin and Triton kernels); " \
                                 "V100-32GB is older"
    assert EST.skip_reason(replace(s, gpu="A100-80GB")) is None


@pytest.mark.parametrize("context", [96, 128, 4096, 32768])
def test_attention_flops_count_the_keys_each_query_sees(context):
    """gpt-oss-20b: 12 full layers, 12 sliding over 128 tokens. Query i of a causal sequence sees i keys in a full
    layer and min(i, 128) in a sliding one; the term's average is that count's to 1 / S (it takes S / 2 for
    (S + 1) / 2), and below the window the two kinds of layer cost the same."""
    s = _scenario(model="gpt-oss-20b", workload="inference", weight_dtype="mxfp4", prompt_len=context, gen_len=0)
    v = EST.estimate(s).values
    keys = sum(12 * i + 12 * min(i, 128) for i in range(1, context + 1)) / context
    assert v["attention_flops_per_token"] == pytest.approx(4 * 64 * 64 * keys, rel=1 / context)
    full = _without_window("gpt-oss-20b").estimate(replace(s, model="gpt-oss-20b (no window)")).values
    assert (v["attention_flops_per_token"] == full["attention_flops_per_token"]) == (context <= 128)
