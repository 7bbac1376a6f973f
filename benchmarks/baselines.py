"""What bench.py pairs reportgen's estimator with in the same run (issue #35), so that a figure says how far
it is from something measured beside it rather than a bare rate on a machine whose speed varies:

- a peer estimator, llm-analysis (https://github.com/cli99/llm-analysis, `pip install llm-analysis`), on the
  same scenarios, when it is importable (it pins an old transformers: install it in a virtual environment with
  --system-site-packages and run bench.py with that environment's python);
- a NumPy floor: the dominant memory terms (weights, gradients, Adam's states, the layers' activations, the KV
  cache, their sum and the fit) written straight in NumPy over the same input columns, the least work an
  array estimator of these scenarios can do.

Neither is a test: the figures are printed, and the README quotes their ratios.
"""
from __future__ import annotations

import logging
import time
from typing import Any, Sequence

import numpy as np

# Bytes per weight by the scenario's dtype input (the floor only needs the common ones; others count 2).
_WEIGHT_BYTES = {"fp32": 4, "bf16": 2, "fp16": 2, "fp8": 1, "int8": 1, "int4": 0.5, "nf4": 0.5}


def peer_available() -> bool:
    try:
        import llm_analysis  # noqa: F401
    except ImportError:
        return False
    return True


def _peer_call(spec, gpu, s) -> Any:
    """llm-analysis's answer for scenario s (a callable that computes it): its model, GPU and parallel configs
    from reportgen's catalog entries; inference with the prompt and generated lengths, training (full, LoRA and
    QLoRA alike: it has no adapters) with the batch, accumulation, recompute and ZeRO stage."""
    from llm_analysis.analysis import ActivationRecomputation, DSZeRO, LLMAnalysis
    from llm_analysis.config import DtypeConfig, GPUConfig, ModelConfig, ParallelismConfig
    ffn = spec.moe_intermediate_size if spec.num_experts else spec.intermediate_size
    model = ModelConfig(name=spec.name, num_layers=spec.num_hidden_layers, n_head=spec.num_attention_heads,
                        hidden_dim=spec.hidden_size, vocab_size=spec.vocab_size, max_seq_len=1 << 30,
                        num_key_value_heads=spec.num_key_value_heads, ffn_embed_dim=ffn,
                        expansion_ratio=ffn / spec.hidden_size, moe_num_experts=max(1, spec.num_experts or 1),
                        moe_top_k=max(1, spec.num_experts_per_tok or 1))
    device = GPUConfig(name=gpu.name, mem_per_GPU_in_GB=gpu.memory_bytes / 1e9,
                       hbm_bandwidth_in_GB_per_sec=gpu.memory_bandwidth_gbps,
                       intra_node_bandwidth_in_GB_per_sec=gpu.link_gbps, intra_node_min_message_latency=8e-6,
                       peak_fp16_TFLOPS=gpu.bf16_dense_tflops, inter_node_bandwidth_in_GB_per_sec=gpu.inter_node_gbps)
    bits = int(8 * _WEIGHT_BYTES.get(s.weight_dtype, 2)) if s.workload == "inference" else 16
    layout = ParallelismConfig(tp_size=s.tp_size, pp_size=s.pp_size,
                               dp_size=max(1, s.num_gpus // (s.tp_size * s.pp_size)), ep_size=s.ep_size)
    analysis = LLMAnalysis(model, device, DtypeConfig(name=f"w{bits}a16e16", weight_bits=bits), layout)
    zero = DSZeRO(s.zero_stage)
    if s.workload == "inference":
        return lambda: analysis.inference(batch_size_per_gpu=s.batch_size, seq_len=s.prompt_len,
                                          num_tokens_to_generate=s.gen_len, ds_zero=zero)
    recompute = {"none": ActivationRecomputation.NONE, "selective": ActivationRecomputation.SELECTIVE}.get(
        s.checkpointing, ActivationRecomputation.FULL)
    return lambda: analysis.training(batch_size_per_gpu=s.batch_size, gradient_accumulation_steps=s.grad_accum_steps,
                                     seq_len=s.seq_len, activation_recomputation=recompute, ds_zero=zero)


def our_rates(estimator, scenarios: Sequence) -> tuple[float, float]:
    """Scenarios per CPU second of reportgen on these Scenario objects: the array rendering of every term, as a
    build computes them, and estimate(), one Estimate object at a time."""
    t = time.process_time()
    estimator.estimate_many(scenarios)
    array = len(scenarios) / (time.process_time() - t)
    t = time.process_time()
    for s in scenarios:
        estimator.estimate(s)
    return array, len(scenarios) / (time.process_time() - t)


def peer_rates(estimator, scenarios: Sequence, repeats: int = 3) -> dict:
    """Scenarios per CPU second of llm-analysis and of reportgen (our_rates) on the scenarios llm-analysis
    answers (it refuses, by assertion, those it finds do not fit), each the best of `repeats` interleaved runs;
    without llm-analysis, reportgen's alone on every scenario."""
    if not peer_available():
        ours = [our_rates(estimator, scenarios) for _ in range(repeats)]
        return {"scenarios": len(scenarios), "answered": None, "peer": None,
                "array": max(a for a, _ in ours), "one_at_a_time": max(o for _, o in ours)}
    logging.getLogger("__name__").setLevel(logging.ERROR)  # llm-analysis logs every figure at INFO
    answered, calls = [], []
    for s in scenarios:
        try:
            call = _peer_call(estimator.spec(s.model), estimator.gpus[s.gpu], s)
            call()
        except (AssertionError, ValueError, ZeroDivisionError):
            continue
        answered.append(s)
        calls.append(call)
    peer, ours = [], []
    for _ in range(repeats):
        t = time.process_time()
        for call in calls:
            call()
        peer.append(len(calls) / (time.process_time() - t))
        ours.append(our_rates(estimator, answered))
    from importlib.metadata import version
    return {"scenarios": len(scenarios), "answered": len(answered), "peer": max(peer),
            "peer_version": version("llm-analysis"),
            "array": max(a for a, _ in ours), "one_at_a_time": max(o for _, o in ours)}


def _lut(values: dict, vocab: Sequence[str], default: float = 0.0) -> np.ndarray:
    return np.array([float(values.get(v, default)) for v in vocab])


def plain_columns(columns: dict, size: int) -> dict:
    """The input columns as the floor reads them: NumPy arrays, text as codes into a vocabulary (vector.Text)."""
    from reportgen.model.vector import Nums, Text
    return {k: v.v if isinstance(v, Nums) else v if isinstance(v, Text) else
            Text(np.zeros(size, dtype=np.int32), (v,)) if isinstance(v, str) else np.full(size, v)
            for k, v in columns.items()}


def numpy_floor(columns: dict, estimator) -> np.ndarray:
    """The dominant terms of each scenario in plain NumPy (ZeRO and TP/PP sharding, Adam in mixed precision,
    Korthikanti et al.'s activations per layer without recompute, the KV cache of prompt + generated tokens):
    whether each fits its GPU. Not reportgen's model (no framework buffers, engines, offload or MoE routing):
    the least work of an array estimator over the same columns."""
    models, gpus = columns["model"], columns["gpu"]
    spec = [estimator.spec(m) for m in models.vocab]
    params = np.array([float(estimator.tables["Models"][m]["total_params"]) for m in models.vocab])[models.codes]
    layers = np.array([float(x.num_hidden_layers) for x in spec])[models.codes]
    hidden = np.array([float(x.hidden_size) for x in spec])[models.codes]
    heads = np.array([float(x.num_attention_heads) for x in spec])[models.codes]
    kv_width = np.array([float(x.num_key_value_heads * (x.head_dim or x.hidden_size // x.num_attention_heads))
                         for x in spec])[models.codes]
    memory = np.array([float(estimator.gpus[g].memory_bytes) for g in gpus.vocab])[gpus.codes]
    workload = columns["workload"]
    training = np.isin(workload.codes, [i for i, w in enumerate(workload.vocab) if w != "inference"])
    dtype = columns["weight_dtype"]
    weight_bytes = np.where(training, 2.0, _lut(_WEIGHT_BYTES, dtype.vocab, 2)[dtype.codes])
    tp, pp, zero = columns["tp_size"], columns["pp_size"], columns["zero_stage"]
    dp = np.maximum(1, columns["num_gpus"] // (tp * pp))
    shard = params / (tp * pp)
    weights = shard * weight_bytes / np.where(zero == 3, dp, 1)
    grads = np.where(training, shard * 2 / np.where(zero >= 2, dp, 1), 0)
    states = np.where(training, shard * 12 / np.where(zero >= 1, dp, 1), 0)
    b, s = columns["batch_size"], np.where(training, columns["seq_len"], columns["prompt_len"])
    activations = np.where(training, layers / pp * s * b * hidden * (34 + 5 * heads * s / hidden) / tp, 0)
    kv = np.where(training, 0, 2 * layers * kv_width * (columns["prompt_len"] + columns["gen_len"]) * b * 2 / tp)
    return weights + grads + states + activations + kv <= memory


def floor_rate(columns: dict, size: int, estimator, repeats: int) -> float:
    """Scenarios per CPU second of numpy_floor over these columns (best of `repeats`)."""
    rates = []
    for _ in range(repeats):
        t = time.process_time()
        numpy_floor(columns, estimator)
        rates.append(size / (time.process_time() - t))
    return max(rates)
