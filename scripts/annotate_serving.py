"""Add a "reportgen" block to each record of presets/validation/published_serving.json: the estimator
inputs of the logged engine start-up, the figure to compare (KV tokens, KV GiB or blocks), and whether
the record fits an assumption, is held out, or is excluded (and why).

    python3 scripts/annotate_serving.py   # rewrites the file in place (idempotent)

The engine profiles max_num_seqs sequences' logits; the estimator's batch_size plays that part, so
each block sets batch_size to the logged max_num_seqs, or vLLM's default where it is not logged: 256, and
1,024 for `vllm serve` on a GPU of 70 GiB or more other than the A100 from May 2025 (vllm/engine/arg_utils.py,
get_batch_defaults, PR #17885). engine_sampler is "sort" where the run's source logs a profile of the sort-based
sampler's size (about 38 bytes per max_num_seqs × vocabulary element), "fused" elsewhere.
"""
import json
from pathlib import Path

PATH = Path(__file__).resolve().parents[1] / "presets" / "validation" / "published_serving.json"
H100, H200, A100, A100_40, RTX3090, L40S, L4 = ("H100-80GB-SXM", "H200-141GB", "A100-80GB", "A100-40GB", "RTX-3090",
                                              "L40S", "L4")


def engine(model, gpu, tp, util, mnbt, seqs=256, weights="bf16", kv="bf16", context=4096, name="vllm",
           sampler="fused"):
    return {"model": model, "scenario": {
        "workload": "inference", "serving_engine": name, "gpu": gpu, "num_gpus": tp, "tp_size": tp,
        "gpu_memory_utilization": util, "max_num_batched_tokens": mnbt, "batch_size": seqs,
        "engine_sampler": sampler, "weight_dtype": weights, "kv_dtype": kv, "prompt_len": context, "gen_len": 0}}


FIT, HOLD = "fit", "holdout"
LLMD_SORT = ("the same file's runs of Qwen3-0.6B, Qwen3-32B and gpt-oss-20b (pub-srv-027 to 029) profile 38.3 bytes "
             "per max_num_seqs × vocabulary element: the sort-based sampler")
QWEN2 = "Qwen2-7B has Qwen2.5-7B's architecture (same config fields)"
RUNS = {
    "pub-srv-001": (HOLD, engine("Qwen2.5-7B", A100, 1, 0.25, 2048), {"kv_tokens": 93872}, QWEN2),
    "pub-srv-002": (HOLD, engine("Qwen2.5-7B", A100, 1, 0.5, 2048), {"kv_tokens": 464848}, QWEN2),
    "pub-srv-003": (HOLD, engine("Qwen2.5-7B", A100, 2, 0.5, 2048), {"kv_tokens": 1192160}, QWEN2),
    "pub-srv-004": (HOLD, engine("Qwen2.5-7B", A100_40, 2, 0.5, 2048), {"kv_tokens": 412944},
                    QWEN2 + "; two nodes of one A100-40GB each"),
    "pub-srv-006": (FIT, engine("Llama-3.1-8B", H100, 1, 0.95, 8192, 1024), {"kv_tokens": 476016},
                    "sets driver_reserved_mib (79.19 GiB visible of 79.65) and the fused sampler's 15 bytes per element "
                    "(its 1.89 GiB profile)"),
    "pub-srv-007": (HOLD, engine("Qwen2.5-7B", H100, 1, 0.95, 8192, 1024), {"kv_gib": 58.53}, ""),
    "pub-srv-008": (HOLD, engine("Qwen2.5-7B", H100, 1, 0.95, 8192, 1024, kv="fp8"), {"kv_tokens": 2192000}, ""),
    "pub-srv-009": (HOLD, engine("Llama-3.1-8B", H100, 1, 0.95, 8192, 1024, kv="fp8"), {"kv_tokens": 952032}, ""),
    "pub-srv-010": (HOLD, engine("Llama-3.1-8B", H100, 1, 0.95, 8192, 1024, "fp32", "fp32"), {"kv_tokens": 175296},
                    "--dtype float32: weights, activations and cache in fp32"),
    "pub-srv-013": (FIT, engine("Llama-3.1-8B", RTX3090, 1, 0.9, 20000), {"gpu_blocks": 1952},
                    "vLLM V0 without chunked prefill profiles a whole max_model_len (20,000 tokens); sets "
                    "driver_reserved_mib (23.58 GiB visible of 24.00) and the profiling forward's bytes per token "
                    "(111 KB)"),
    "pub-srv-014": (HOLD, engine("Llama-3.1-8B", RTX3090, 1, 0.9, 29000), {"kv_tokens": 23648},
                    "as pub-srv-013 at max_model_len 29,000"),
    # llm-d-planner's version sweep: one run (Qwen3-14B on an H100) under vLLM 0.16.0 and 0.17.0
    "pub-srv-011": (HOLD, engine("Qwen3-14B", H100, 1, 0.95, 8192, 1024, sampler="sort"), {"kv_gib": 41.94},
                    "vLLM 0.16.0: the sort-based sampler (the same run under 0.17.0, pub-srv-012, profiles 2.5 times "
                    "less); max_num_seqs and max_num_batched_tokens not logged: the API server's H100 defaults"),
    "pub-srv-012": (HOLD, engine("Qwen3-14B", H100, 1, 0.95, 8192, 1024), {"kv_gib": 45.34},
                    "vLLM 0.17.0: the fused sampler; as pub-srv-011 otherwise"),
    "pub-srv-015": (HOLD, engine("Llama-3-8B", H100, 1, 0.9, 8192), {"kv_gib": 53.29}, ""),
    "pub-srv-020": (HOLD, engine("Qwen3-235B-A22B", H100, 4, 0.9, 8192, 1024, weights="fp8", sampler="sort"),
                    {"kv_tokens": 178880},
                    "FP8 checkpoint: fp8 weights, bf16 cache; utilisation not given on the command line: the "
                    "default 0.9; vllm serve's defaults on an H100 of that time, 1,024 sequences; the sort-based "
                    "sampler, as in pub-srv-024 (the same model and TP, the same month)"),
    "pub-srv-021": (HOLD, engine("Qwen3-235B-A22B", H100, 4, 0.93, 8192, weights="fp8", name="sglang"),
                    {"kv_tokens": 367404}, "SGLang mem_fraction_static 0.93 holds the weights and the pool"),
    "pub-srv-022": (HOLD, engine("Qwen2.5-32B", L4, 4, 0.85, 2048, seqs=2049, name="sglang"), {"kv_tokens": 46611},
                    "QwQ-32B has Qwen2.5-32B's architecture"),
    "pub-srv-024": (HOLD, engine("Qwen3-235B-A22B", H200, 4, 0.5, 8192, 1024, weights="fp8", sampler="sort"),
                    {"kv_gib": 7.07},
                    "FP8 checkpoint: fp8 weights, bf16 cache; the engine's defaults as pub-srv-020; its logged "
                    "5.62 GiB profile is the sort-based sampler's size"),
    # llm-d-benchmark's summary of its vLLM runs on H100 (utilisation 0.9, the API server's H100 defaults)
    "pub-srv-025": (FIT, engine("Llama-3.1-70B", H100, 2, 0.9, 8192, 1024, weights="fp8", sampler="sort"),
                    {"kv_gib": 32.0},
                    "Llama-3.3-70B has Llama-3.1-70B's architecture; FP8-dynamic checkpoint: fp8 weights, bf16 "
                    "cache; " + LLMD_SORT + "; sets engine_tp_non_torch_mib (0.55 GiB outside PyTorch at TP 2, 0.25 at one GPU)"),
    "pub-srv-028": (FIT, engine("Qwen3-32B", H100, 1, 0.9, 8192, 1024, sampler="sort"), {"kv_gib": 4.45},
                    "one of the three profiles the sort-based sampler's 38.3 bytes per element were read off"),
    "pub-srv-026": (HOLD, engine("Llama-3.1-8B", H100, 1, 0.9, 8192, 1024, sampler="sort"), {"kv_gib": 51.38},
                    LLMD_SORT),
    "pub-srv-029": (FIT, engine("gpt-oss-20b", H100, 1, 0.9, 8192, 1024, weights="mxfp4", sampler="sort",
                                context=16000), {"kv_gib": 50.28},
                    "one of the three profiles the sort-based sampler's 38.3 bytes per element were read off; MXFP4 "
                    "experts as the checkpoint ships them: the estimate's 12.82 GiB of weights is the checkpoint's "
                    "13,761,264,768 bytes, where vLLM logs 13.47 GiB (its MXFP4 kernels' layout), so the pool is "
                    "0.55 GiB over"),
    "pub-srv-005": (HOLD, engine("gpt-oss-120b", A100, 4, 0.8, 2048, weights="mxfp4", context=16384),
                    {"kv_tokens": 2640144, "max_concurrency": 284.25},
                    "vLLM 0.10's 'GPU KV cache size' is the pool over every layer's bytes per token; its concurrency "
                    "counts each sliding-window layer's blocks as the window less one token plus max_num_batched_tokens "
                    "(2,048), plus one block (SlidingWindowSpec); max_num_seqs not logged: vLLM's default for an "
                    "A100, 256; the estimate's weights, the checkpoint's layout (15.19 GiB per GPU), are 2.03 GiB "
                    "under the 17.22 GiB logged (Marlin's weight-only MXFP4 kernels on an A100), so its pool is "
                    "3.5 % over"),
}
VLLM_024 = ("vLLM 0.2.4 (December 2023, a benchmark in a pull request): its settings are not printed (the "
            "benchmark's defaults of the time, max_num_seqs among them, are assumed), and its profiler measured "
            "total - free memory after a run without chunked prefill, CUDA graphs or custom all-reduce; the estimate "
            "follows the accounting of the 2024-2026 engines the other logs come from")
EXCLUDED = {
    "pub-srv-016": "Llama-3.2-11B-Vision: cross-attention layers and a vision encoder are not modelled",
    "pub-srv-017": VLLM_024,
    "pub-srv-018": VLLM_024 + "; at TP 4 the figure also disagrees with its own source: the PR cut the pool by 13.1 GiB "
                   "per GPU (31,615 to 20,865 blocks of 1.25 MiB) where it reports the old pool overshooting by about 5.5 GB (a 77.5 GB peak against a 72 GiB budget)",
    "pub-srv-019": "the PR shows three log lines and not the command: gpu_memory_utilization, max_num_batched_tokens and "
                   "the sampler are not stated; at vLLM's default utilisation 0.9 the logged pool leaves 5.7 GiB "
                   "beside the weights, where one GPU's profile at 256 sequences is at most 1.3 GiB (the estimate is "
                   "24 % above the log), so the run's utilisation was likely not the default",
    "pub-srv-023": "Phi-4 GPTQ (AutoRound): not in the model catalog",
    "pub-srv-027": "Qwen3-0.6B is not in the model catalog",
}


def main():
    data = json.loads(PATH.read_text(encoding="utf-8"))
    for r in data["records"]:
        if r["id"] in EXCLUDED:
            r["reportgen"] = {"use": "excluded", "why": EXCLUDED[r["id"]]}
            continue
        use, run, published, note = RUNS[r["id"]]
        r["reportgen"] = {"use": use, **run, "published": published, "note": note}
    data["protocol"]["reportgen"] = (
        "Each record carries a 'reportgen' block added by the project (scripts/annotate_serving.py): the "
        "estimator inputs of the logged start-up (serving_engine, gpu_memory_utilization, "
        "max_num_batched_tokens, batch_size = max_num_seqs), the figure to compare (kv_tokens: the pool's "
        "tokens; kv_gib: its size per GPU; gpu_blocks: blocks of 16 tokens; max_concurrency: the requests of "
        "the logged length it holds), and use = fit (the logs an "
        "assumption or coefficient was read off: driver_reserved_mib, the profiling forward's bytes and the "
        "samplers', engine_tp_non_torch_mib), holdout or excluded (with why).")
    PATH.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
