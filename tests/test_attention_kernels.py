"""The attention kernel (input attention): flash is FlashAttention at the efficiency fitted to llm-foundry's runs;
fused a Hopper-native fused kernel (cuDNN's through Transformer Engine, as Megatron-Core runs it, or FlashAttention-3)
at the efficiency read from the FlashAttention-3 paper's H100 benchmarks; eager the unfused path. fused changes the
time, never the memory."""
from __future__ import annotations

from dataclasses import replace

import pytest

from reportgen.model.catalog import load_gpus, load_models
from reportgen.model.estimate import Estimator, Scenario
from reportgen.model.terms import PER_GPU_KEYS

GPUS = load_gpus()
EST = Estimator(load_models(), GPUS)
# FlashAttention-3 (Shah et al. 2024, arXiv:2407.08608), H100 80GB SXM5, BF16, head dim 128, 16k tokens: cuDNN's bars
# of its "Attention forward speed" and "Attention backward speed" figures, TFLOPS/s (as transcribed at
# https://subtext.edge.nugit.net/image/e27582d2db385c9bac87ebc92343d2452b7c01d5d934e596c90172b346d00d42 and
# .../f60142e2221e7ea9f80b7017987fabedaaa04df4adeb1a9e7b0a3defac28a701), and the paper's FLOP count (flash-attention's
# benchmark_flash_attention.py: a backward is 2.5 forwards).
CUDNN_FORWARD_TFLOPS, CUDNN_BACKWARD_TFLOPS, BACKWARD_FORWARDS = 595, 516, 2.5
HOPPER = {"H100-80GB-SXM", "H100-80GB-PCIe", "H200-141GB", "H20", "H800-80GB"}
TRAIN = Scenario(model="Llama-3.1-8B", workload="full", seq_len=16384, prompt_len=0, gen_len=0, batch_size=1,
                 gpu="H100-80GB-SXM", checkpointing="none")


def test_the_fused_efficiency_is_the_papers_cudnn_rate_in_the_estimators_flop_count():
    """The estimator counts an attention forward and backward as three forwards; the paper's kernels take
    1/595 + 2.5/516 seconds per forward TFLOP: 3 ÷ (989 × that) = 0.465 of the H100's peak. Every Hopper GPU takes
    the H100 SXM's fraction; the others claim no gain (their fused efficiency is their flash one)."""
    h100 = GPUS["H100-80GB-SXM"]
    e = EST.estimate(TRAIN)
    assert e["train_attention_flops_per_token"] == pytest.approx(3 * e["attention_flops_per_token"], rel=1e-12)
    seconds_per_forward_tflop = 1 / CUDNN_FORWARD_TFLOPS + BACKWARD_FORWARDS / CUDNN_BACKWARD_TFLOPS
    assert h100.fused_attention_efficiency == round(3 / (h100.bf16_dense_tflops * seconds_per_forward_tflop), 3)
    assert {n for n, g in GPUS.items() if g.fused_attention_efficiency != g.attention_efficiency} == HOPPER
    assert {GPUS[n].fused_attention_efficiency for n in HOPPER} == {h100.fused_attention_efficiency}


@pytest.mark.parametrize("scenario", [
    TRAIN, replace(TRAIN, checkpointing="selective", tp_size=2, num_gpus=2), replace(TRAIN, workload="lora"),
    replace(TRAIN, model="Qwen2.5-7B", checkpointing="full", zero_stage=3, num_gpus=8, gpu="A100-80GB"),
    Scenario(model="Llama-3.1-8B", workload="inference", prompt_len=8192, gen_len=256, batch_size=4,
             gpu="H100-80GB-SXM"),
], ids=["full", "selective-tp2", "lora", "a100-zero3", "inference"])
def test_fused_attention_changes_time_not_memory(scenario):
    """Every per-GPU memory term equals flash's; a training step on a Hopper GPU is shorter by exactly its attention
    kernels' time at the two efficiencies, and on any other GPU it is the same."""
    flash, fused = EST.estimate(scenario), EST.estimate(replace(scenario, attention="fused"))
    assert all(flash[k] == fused[k] for k in PER_GPU_KEYS)
    gpu = GPUS[scenario.gpu]
    if scenario.workload == "inference":
        assert fused["seconds_per_output_token"] == flash["seconds_per_output_token"]
        return
    attention_seconds = (flash["micro_batch_peak_seconds"] * flash["train_attention_flops_per_token"])
    saved = attention_seconds * (1 / gpu.attention_efficiency - 1 / gpu.fused_attention_efficiency)
    assert flash["train_compute_seconds"] - fused["train_compute_seconds"] == pytest.approx(saved, rel=1e-9)
    assert (saved > 0) == (scenario.gpu in HOPPER)
