"""Serving engines (vLLM, SGLang): the KV block pool against published start-up logs, and the answers
a deployment needs (how many sequences fit, at what context).

Published logs: presets/validation/published_serving.json (each with its source, a verbatim quote
and a "reportgen" block mapping the start-up to estimator inputs). Fitted, on the four logs marked "fit":
driver_reserved_mib (what CUDA hides below nvidia-smi's total: pub-srv-006 and 013), the profiling forward's
bytes per token (013), the fused sampler's bytes per element (006) and engine_tp_non_torch_mib (025); the
sort-based sampler's bytes per element were read off pub-srv-027 to 029 (028 and 029 are compared, as fits; 027
is a model outside the catalog). engine_non_torch_mib and cuda_graph_mib are the ranges the logs print. Everything
else is held out. Target of issue #17: within ±10 %.
"""
from __future__ import annotations

import json
import math
import statistics
from dataclasses import replace
from pathlib import Path

import pytest

from reportgen.model.catalog import load_gpus, load_models
from reportgen.model.estimate import Estimator, Scenario
from reportgen.model.units import GiB
from reportgen.report.validation import TARGETS, serving_cases, serving_metrics

DATA = json.loads((Path(__file__).resolve().parent.parent / "presets" / "validation" /
                   "published_serving.json").read_text(encoding="utf-8"))
EST = Estimator(load_models(), load_gpus())
CASES = serving_cases(DATA)
RECORDS = {r["id"]: r for r in DATA["records"]}


def _cases(use):
    for c in CASES:
        if c.use == use:
            for metric, value in c.published.items():
                yield c.id, c.scenario, metric, value


def _estimated(s: Scenario, metric: str) -> float:
    return serving_metrics(EST.estimate(s).values)[metric]


def test_enough_published_logs_and_reasons_for_the_rest():
    uses = [r["reportgen"]["use"] for r in DATA["records"]]
    assert uses.count("holdout") >= 10
    assert all(r["reportgen"]["why"] for r in DATA["records"] if r["reportgen"]["use"] == "excluded")
    assert not [c.id for c in CASES if c.miss]  # no held-out log is an expected miss


@pytest.mark.parametrize("case", [pytest.param(c, id=c[0]) for c in _cases("holdout")])
def test_kv_pool_of_held_out_logs_within_ten_percent(case):
    _, s, metric, published = case
    assert abs(_estimated(s, metric) / published - 1) <= TARGETS["serving"] == 0.10


def test_held_out_median_and_largest():
    errors = {(c, m): abs(_estimated(s, m) / v - 1) for c, s, m, v in _cases("holdout")}
    assert len(errors) == 22
    # 0.8 % today without gpt-oss-120b and Nemotron-3-Nano (3.3 % over 19 logs before the sampler and TP terms);
    # gpt-oss-120b's two figures, 3.5 % over (the checkpoint's weights where vLLM's Marlin kernels hold 2 GiB more per
    # GPU), and Nemotron-3-Nano's three, 4.5 % over (its hybrid pages: test_hybrid_pages_as_vllm_logs_them), move it to
    # 3.4 %
    assert statistics.median(e for (c, _), e in errors.items() if c not in ("pub-srv-005", "pub-srv-030")) <= 0.008
    assert statistics.median(errors.values()) <= 0.034
    assert max(errors.values()) <= 0.084  # 8.3 % today (pub-srv-020, whose sampler is inferred from pub-srv-024)


def test_hybrid_pages_as_vllm_logs_them():
    """pub-srv-030: vLLM 0.17.1 serving Nemotron-3-Nano-30B-A3B (23 Mamba-2 layers, 6 attention layers) logs 'Setting
    attention block size to 2096 tokens to ensure that attention page size is >= mamba page size' and 'Add 1 padding
    layers': the estimate's page is the logged block, its KV cache groups the five vLLM's 'GPU KV cache size: 821,632
    tokens' divides its blocks by, and that size, its pool (23.56 GiB) and its concurrency at 8,192 tokens (245.50x)
    are 4.5 % over: it counts 2.6 GiB besides the weights and the pool where vLLM's profile used 3.56 GiB
    (0.9 × 95.59 − 58.91 − 23.56; not split further by the log)."""
    (case,) = [c for c in CASES if c.id == "pub-srv-030"]
    values = EST.estimate(case.scenario).values
    assert values["kv_page_tokens"] == 2096
    assert values["kv_logged_tokens"] == values["kv_blocks"] // 5 * 2096  # 6 attention layers, 23 + 1 Mamba-2: 5 groups
    for metric, published in case.published.items():
        assert 0.04 <= serving_metrics(values)[metric] / published - 1 <= 0.05, metric


def test_sliding_window_layers_take_what_vllm_reserves_per_request():
    """gpt-oss-120b alternates 18 sliding-window layers (128 tokens) with 18 full ones. vLLM 0.10 logs the pool as
    tokens over every layer's bytes (2,640,144) and its concurrency at 16,384 tokens (284.25x): their ratio is the
    blocks one request takes, 1,024 in the full layers and ceil((128 - 1 + 2,048) / 16) + 1 = 137 in the sliding
    ones, halved over the two layer groups (580.5 blocks of 16 tokens). The estimate's ratio is the log's to 0.01 %
    (counting every layer at the full context would give 1,024); its pool is compared above."""
    case = _case("pub-srv-005")
    values = EST.estimate(case.scenario).values
    logged = case.published["kv_tokens"] / case.published["max_concurrency"]
    assert logged == pytest.approx(580.5 * 16, rel=2e-4)
    assert values["kv_pool_tokens"] / values["max_concurrency"] == pytest.approx(logged, rel=1e-4)
    assert values["kv_window_tokens"] == (math.ceil((128 - 1 + 2048) / 16) + 1) * 16


def test_fit_logs_at_the_level_reached():
    errors = {c: abs(_estimated(s, metric) / published - 1) for c, s, metric, published in _cases("fit")}
    assert sorted(errors) == ["pub-srv-006", "pub-srv-013", "pub-srv-025", "pub-srv-028", "pub-srv-029"]
    # 0.1 %, 3.2 %, 0.3 %, 1.5 % and 1.1 % today; pub-srv-013 logs 0.35 GiB outside PyTorch where engine_non_torch_mib
    # has 0.25; pub-srv-028's pool is 4.45 GiB beside 61 GiB of weights, so 0.07 GiB is 1.5 %; pub-srv-029's weights
    # are the checkpoint's 12.82 GiB where vLLM logs 13.47
    assert errors["pub-srv-013"] <= 0.033 and errors["pub-srv-028"] <= 0.015 and errors["pub-srv-029"] <= 0.011
    assert max(errors["pub-srv-006"], errors["pub-srv-025"]) <= 0.004


def _case(record_id):
    return next(c for c in CASES if c.id == record_id)


@pytest.mark.parametrize("record_id", ["pub-srv-007", "pub-srv-011", "pub-srv-012", "pub-srv-024", "pub-srv-025",
                                       "pub-srv-026"])
def test_activation_profile_of_held_out_logs_is_the_sampler_s(record_id):
    """vLLM's profile runs the sampler over max_num_seqs × the vocabulary after the forward has freed its
    temporaries: 15 bytes per element with fused kernels (read off pub-srv-006), 38.3 with the sort-based
    fallback (read off pub-srv-027 to 029). These logs print the profile and were not used for either figure
    (pub-srv-025 set only the memory outside PyTorch); pub-srv-011 and 012 are one run under vLLM 0.16 and 0.17."""
    logged_gib = RECORDS[record_id]["activation_peak_gib"]
    estimated = EST.estimate(_case(record_id).scenario)["engine_activation_bytes"] / GiB
    assert abs(estimated / logged_gib - 1) <= 0.01  # 0.2-1.0 % today


def test_the_profile_is_the_forward_or_the_sampler_not_both():
    """At 20,000 tokens per step and 256 sequences (pub-srv-013) the forward outweighs the sampler, and the
    profile is the forward alone; at 1,024 sequences and the sort-based sampler it is the sampler alone."""
    s = _case("pub-srv-013").scenario
    v = EST.estimate(s).values
    forward = math.ceil(20000 * (3 * v["mlp_width"] + 3 * v["hidden_size"]) * 2)
    assert v["engine_activation_bytes"] == forward
    sort = EST.estimate(replace(s, max_num_batched_tokens=8192, batch_size=1024, engine_sampler="sort")).values
    assert sort["engine_activation_bytes"] == 8192 * v["hidden_size"] * 2 + math.ceil(1024 * 128256 * 38.3)
    fused = EST.estimate(replace(s, max_num_batched_tokens=8192, batch_size=1024)).values
    assert fused["engine_activation_bytes"] == 8192 * v["hidden_size"] * 2 + 1024 * 128256 * 15


def test_memory_outside_pytorch_grows_with_the_tensor_parallel_group():
    """pub-srv-024 (4 × H200, TP 4) logs 2.04 GiB per GPU outside PyTorch: the held-out check of
    engine_tp_non_torch_mib (read off pub-srv-025 at TP 2) with the NVLS buffers."""
    v = EST.estimate(_case("pub-srv-024").scenario).values
    estimated = (v["engine_non_torch_bytes"] + v["engine_nvls_bytes"]) / GiB
    assert abs(estimated / RECORDS["pub-srv-024"]["non_torch_gib"] - 1) <= 0.04  # -3.9 % today
    one = EST.estimate(replace(_case("pub-srv-024").scenario, num_gpus=1, tp_size=1)).values
    assert one["engine_non_torch_bytes"] == 256 * 2**20


def test_vllm_accounting_reproduces_a_logged_breakdown():
    """pub-srv-006 prints its whole breakdown: 79.19 GiB × 0.95 − 14.99 (weights) − 1.89 (activations)
    − 0.25 (outside PyTorch) = 58.11 GiB of pool. The estimate's own parts must add up the same way."""
    s = Scenario(model="Llama-3.1-8B", workload="inference", serving_engine="vllm", gpu="H100-80GB-SXM",
                 gpu_memory_utilization=0.95, max_num_batched_tokens=8192, batch_size=1024, prompt_len=16384)
    v = EST.estimate(s).values
    assert v["kv_pool_bytes"] == v["engine_budget_bytes"] - v["weights"] - v["engine_activation_bytes"] \
        - v["engine_non_torch_bytes"]
    assert v["engine_budget_bytes"] / GiB == pytest.approx(79.19 * 0.95, rel=0.001)
    assert v["weights"] / GiB == pytest.approx(14.99, rel=0.01)
    assert v["engine_activation_bytes"] / GiB == pytest.approx(1.89, rel=0.005)  # 0.4 % today (a fit)


def test_a_cheaper_cache_dtype_doubles_the_tokens_not_the_pool():
    """Published: Qwen2.5-7B on an H100 holds 1,096,000 tokens in bf16 and 2,192,000 in fp8 (pub-srv-007/8)."""
    s = Scenario(model="Qwen2.5-7B", workload="inference", serving_engine="vllm", gpu="H100-80GB-SXM",
                 gpu_memory_utilization=0.95, batch_size=1024)
    bf16, fp8 = EST.estimate(s).values, EST.estimate(replace(s, kv_dtype="fp8")).values
    assert fp8["kv_pool_bytes"] == bf16["kv_pool_bytes"]
    assert fp8["kv_pool_tokens"] == pytest.approx(2 * bf16["kv_pool_tokens"], abs=16)


def test_more_utilisation_gives_the_pool_exactly_that_memory():
    s = Scenario(model="Llama-3-8B", workload="inference", serving_engine="vllm", gpu="A100-80GB")
    low, high = EST.estimate(replace(s, gpu_memory_utilization=0.8)), EST.estimate(replace(s, gpu_memory_utilization=0.9))
    visible = (load_gpus()["A100-80GB"].memory_mib - EST.assumptions["driver_reserved_mib"]) * 2**20
    assert high["kv_pool_bytes"] - low["kv_pool_bytes"] == pytest.approx(0.1 * visible, abs=2)


def test_the_engine_answers_concurrency_and_context():
    """Llama-3.1-70B at 32,768 tokens with an fp8 cache on 8 × H100 (TP8): the pool's tokens ÷ the context
    is the concurrency vLLM prints, and the users' caches must fit in the pool for the plan to fit."""
    s = Scenario(model="Llama-3.1-70B", workload="inference", serving_engine="vllm", gpu="H100-80GB-SXM", num_gpus=8,
                 tp_size=8, kv_dtype="fp8", batch_size=50, prompt_len=32768)
    e = EST.estimate(s)
    assert e["max_concurrency"] == e["kv_pool_tokens"] / 32768 and e["max_concurrency"] >= 50
    assert e["max_context_tokens"] >= 32768 and e.fits
    crowded = EST.estimate(replace(s, batch_size=int(e["max_concurrency"]) + 1))
    assert not crowded["kv_fits"] and not crowded.fits
    data = e.to_json()["serving"]
    assert data["kv_blocks"] * 16 == data["kv_pool_tokens"]


def test_serving_plan_of_issue_17_needs_eight_h100s_or_fewer():
    from click.testing import CliRunner
    from reportgen.cli import main
    # (issue #17 asked it of Llama-3-70B, whose 8,192 positions a 32k context passes: its 128k successor, the same shape)
    result = CliRunner().invoke(main, ["plan", "--model", "Llama-3.1-70B", "--workload", "inference", "--engine", "vllm",
                                       "--users", "50", "--context", "32768", "--kv-dtype", "fp8",
                                       "--gpu", "H100-80GB-SXM", "--json"])
    option = json.loads(result.output)["options"][0]
    assert option["gpu"] == "H100-80GB-SXM" and option["num_gpus"] <= 8


def test_hf_generate_prefills_every_prompt_an_engine_in_chunks():
    """generate() holds every prompt's prefill at once; an engine holds at most max_num_batched_tokens."""
    s = Scenario(model="Llama-3-8B", workload="inference", batch_size=64, prompt_len=8192, gpu="H100-80GB-SXM")
    generate, engine = EST.estimate(s), EST.estimate(replace(s, serving_engine="vllm"))
    assert generate["forward_transient_bytes"] > 10 * engine["engine_activation_bytes"]
    # the per-GPU breakdown shows what each holds (an engine's profile, not a prefill it never runs)
    assert engine["activations"] == engine["engine_activation_bytes"] < generate["activations"] \
        == generate["forward_transient_bytes"]
    assert engine["prefill_seconds"] < generate["prefill_seconds"]  # a request waits for its own prefill only


def test_nvls_buffers_are_what_nccl_logs_on_hopper():
    """vllm-project/vllm#9699 (8 × H200, TP 8): NCCL logs `nvlsPerRankSize 301989888 nvlsTotalSize 2415919104`,
    and enables NVLS only for more than 2 GPUs on H100 and later (an NVSwitch with NVLink SHARP). The pool
    gives those bytes up; the engine's total on the card is its budget either way."""
    s = Scenario(model="Llama-3.1-70B", workload="inference", serving_engine="vllm", gpu="H200-141GB", num_gpus=8,
                 tp_size=8, prompt_len=4096)
    tp8 = EST.estimate(s)
    assert tp8["engine_nvls_bytes"] == 2415919104 == 8 * 301989888
    assert EST.estimate(replace(s, num_gpus=4, tp_size=4))["engine_nvls_bytes"] == 4 * 301989888
    assert EST.estimate(replace(s, num_gpus=2, tp_size=2))["engine_nvls_bytes"] == 0
    for gpu in ("A100-80GB", "H100-80GB-PCIe", "L4", "MI300X"):
        assert EST.estimate(replace(s, gpu=gpu))["engine_nvls_bytes"] == 0, gpu
    without = Estimator(load_models(), load_gpus(), {"nvls_rank_mib": 0}).estimate(s)
    assert without["kv_pool_bytes"] - tp8["kv_pool_bytes"] == 2415919104
    assert without["engine_device_total"] == tp8["engine_device_total"]
    assert EST.estimate(replace(s, serving_engine="sglang"))["engine_nvls_bytes"] == 2415919104


def test_a_short_prompt_is_prefilled_no_faster_than_its_weights_are_read():
    """A prefill reads every weight at least once (first principles, no figure fitted): Llama-3.1-70B over TP 2 on
    H100s holds 70.55e9 × 2 B ÷ 2 per GPU, 30.1 ms at 3,350 GB/s × the decode bandwidth efficiency. A 32-token
    prompt takes that floor; an 8,192-token prompt its FLOPs, as before; generate() reads the weights once for the
    whole batch, so four short prompts are still one floor, not four."""
    base = Scenario(model="Llama-3.1-70B", workload="inference", prompt_len=32, gen_len=16, num_gpus=2, tp_size=2,
                    batch_size=1, serving_engine="vllm", gpu="H100-80GB-SXM")
    floor = EST.estimate(base).params_total * 2 / 2 / (3350e9 * EST.assumptions["decode_bandwidth_efficiency"])
    short, long = EST.estimate(base), EST.estimate(replace(base, prompt_len=8192))
    assert 0.029 < floor < 0.031
    assert short["prefill_seconds"] == pytest.approx(floor, rel=0.002)
    assert short["prefill_sequence_seconds"] < floor / 5  # its FLOPs: 4.6 ms
    assert long["prefill_seconds"] == long["prefill_sequence_seconds"] > floor
    four, eight = (EST.estimate(replace(base, serving_engine="hf-generate", batch_size=b)) for b in (4, 8))
    assert four["prefill_seconds"] == short["prefill_seconds"]  # 4 × 4.6 ms of FLOPs: still the one floor
    assert eight["prefill_seconds"] == 8 * eight["prefill_sequence_seconds"] < 2 * floor  # 8 × 4.6 ms: the FLOPs


def test_a_frozen_moe_scores_no_faster_than_its_experts_are_read():
    """A reference model's forward over micro-batches of one 256-token sequence: each micro-batch reads all 128
    experts of Qwen3-30B-A3B for 2,048 routed tokens (16 each), so the experts' reading, not their FLOPs, sets the
    pass: 64 sequences take 64 readings."""
    ref = Scenario(model="Qwen3-30B-A3B", workload="frozen", seq_len=256, batch_size=1, num_gpus=1, gpu="H100-80GB-SXM")
    e = EST.estimate(ref)
    sequences = e["step_sequences"]
    flops_only = (sequences * 256 / e["peak_flops"] * (2 * e["active_params"] / load_gpus()["H100-80GB-SXM"].train_efficiency
                  + e["attention_flops_per_token"] / load_gpus()["H100-80GB-SXM"].attention_efficiency))
    assert e["forward_pass_seconds"] > 2 * flops_only
    assert e["forward_pass_seconds"] >= sequences * e["expert_read_seconds"]
