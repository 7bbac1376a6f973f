#!/usr/bin/env python
"""The MoE prefill working set of transformers' two experts implementations: grouped_mm (the default: every
buffer has tokens × top_k rows, whatever the routing) and eager (the per-expert Python loop: one expert's
tokens at a time, so its tensors have as many rows as the busiest expert receives). Shapes without a shared
expert, in both router dtypes: Mixtral-shaped (fp32 routing weights) and Qwen3-MoE-shaped (routing weights
cast to bf16), with different expert counts, top-k, widths and tokens, so that the stage that holds the most
(the gate/up of the routed pairs, or their weighted combine) changes. 'fit': moe_forward_transient_bytes was
derived from the code and checked on these; the Qwen2-MoE records of oracle_arch.json (shared expert) stay
held out.

Routing is data dependent, so the cases run on REAL CPU tensors under memoracle's LiveTracker, exactly as
oracle_arch.json's MoE records ('moe_method' in its protocol): torch.manual_seed(0), random token ids, bf16,
scaled_dot_product_attention replaced by a FlashAttention-2 stand-in whose tracked allocations are the
oracle's fake CUDA FA2 path (forward only here: prefills run under no_grad), router top-k captured by a
forward hook with the tracker off.

    /tmp/ovenv/bin/python tools/oracle/measure_moe_experts.py OUT.json
"""
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch.utils._python_dispatch import _disable_current_modes  # noqa: E402

import memoracle as M  # noqa: E402
import records as R  # noqa: E402

_MIXTRAL = dict(model_type="mixtral", vocab_size=32000, num_hidden_layers=4, head_dim=64, max_position_embeddings=4096,
                sliding_window=None, rms_norm_eps=1e-5, rope_theta=1e6, hidden_act="silu", tie_word_embeddings=False,
                router_aux_loss_coef=0.02, output_router_logits=False, router_jitter_noise=0.0)
_QWEN3 = dict(model_type="qwen3_moe", vocab_size=32000, num_hidden_layers=4, head_dim=64, max_position_embeddings=4096,
              rms_norm_eps=1e-6, rope_theta=1e6, hidden_act="silu", tie_word_embeddings=False, norm_topk_prob=True,
              decoder_sparse_step=1, mlp_only_layers=[], use_sliding_window=False, sliding_window=None,
              router_aux_loss_coef=0.001, output_router_logits=False, attention_bias=False)
CONFIGS = {
    # narrow experts (m = h): the weighted combine of the routed pairs, in fp32, holds the most
    "Mixtral-tiny-4L-256-16x4": dict(_MIXTRAL, hidden_size=256, intermediate_size=256, num_attention_heads=4,
                                     num_key_value_heads=2, num_local_experts=16, num_experts_per_tok=4),
    # wide experts (m = 3.5 h, as Mixtral-8x7B): the gate/up stage holds the most
    "Mixtral-tiny-4L-384-4x2": dict(_MIXTRAL, hidden_size=384, intermediate_size=1344, num_attention_heads=6,
                                    num_key_value_heads=2, num_local_experts=4, num_experts_per_tok=2),
    # many fine-grained experts (m = h / 4, top-8 of 32, Qwen3-MoE-like): bf16 combine
    "Qwen3MoE-tiny-4L-512-32x8": dict(_QWEN3, hidden_size=512, intermediate_size=1536, moe_intermediate_size=128,
                                      num_attention_heads=8, num_key_value_heads=4, num_experts=32,
                                      num_experts_per_tok=8),
    # wider experts, top-2 of 8
    "Qwen3MoE-tiny-4L-256-8x2": dict(_QWEN3, hidden_size=256, intermediate_size=1024, moe_intermediate_size=512,
                                     num_attention_heads=4, num_key_value_heads=2, num_experts=8,
                                     num_experts_per_tok=2),
}
# (batch, length) per model
SHAPES = {"Mixtral-tiny-4L-256-16x4": ((1, 1024), (2, 1024)), "Mixtral-tiny-4L-384-4x2": ((1, 2048),),
          "Qwen3MoE-tiny-4L-512-32x8": ((1, 1024), (1, 2048)), "Qwen3MoE-tiny-4L-256-8x2": ((4, 512),)}
IMPLEMENTATIONS = ("grouped_mm", "eager")

ROUTER_CALLS = []
_ORIG_BUILD = M.build_model


def _build_and_hook(cfg_dict, dtype, attn_impl, device="cpu"):
    model = _ORIG_BUILD(cfg_dict, dtype, attn_impl, device)
    assert model.config._experts_implementation == cfg_dict["experts_implementation"]
    for mod in model.modules():
        if type(mod).__name__.endswith("TopKRouter"):
            mod.register_forward_hook(_router_hook)
    return model


def _router_hook(mod, inp, out):
    with _disable_current_modes():  # the tracker must not see these bookkeeping ops
        idx = out[2]
        counts = torch.bincount(idx.reshape(-1).long(), minlength=mod.num_experts).tolist()
        ROUTER_CALLS.append(dict(tokens=int(idx.shape[0]), top_k=int(idx.shape[1]), counts=counts))


M.build_model = _build_and_hook


def _flash_forward(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
    """FlashAttention-2's forward allocations (output following q's layout, fp32 log-sum-exp, philox seed and
    offset), values from torch's SDPA with the tracker off; prefills only (no backward)."""
    assert attn_mask is None and dropout_p == 0.0 and not torch.is_grad_enabled(), "would not route to FA2"
    B, Hq, Sq, D = query.shape
    out = torch.empty_like(query)
    lse = torch.empty((B, Hq, Sq), dtype=torch.float32, device=query.device)  # noqa: F841 (tracked while alive)
    seed, off = torch.empty((2,), dtype=torch.uint64), torch.empty((), dtype=torch.uint64)  # noqa: F841
    with _disable_current_modes():
        out.copy_(M._ORIG_SDPA(query, key, value, is_causal=is_causal, scale=scale,
                               enable_gqa=query.shape[1] != key.shape[1]))
    return out


def run_real(cfg, **kw):
    F.scaled_dot_product_attention = _flash_forward
    try:
        return M.run_case(cfg, fake=False, cuda_sdpa=False, use_memtracker=False, **kw)
    finally:
        F.scaled_dot_product_attention = M._ORIG_SDPA


def routing_stats(calls, n_layers):
    """The prefill: one router call per MoE layer; the busiest expert's tokens set the eager loop's rows."""
    per_layer = [dict(max=max(c["counts"]), max_over_tokens=round(max(c["counts"]) / c["tokens"], 3),
                      tokens_per_expert=c["counts"]) for c in calls[:n_layers]]
    return dict(tokens=calls[0]["tokens"], top_k=calls[0]["top_k"], num_experts=len(calls[0]["counts"]),
                capacity_factor=None, capacity_note="dropless (no capacity limit, no token dropping)",
                counted_pass="the prefill", per_layer=per_layer)


def main(out_path):
    recs, t0 = [], time.time()
    for name, config in CONFIGS.items():
        for batch, seq in SHAPES[name]:
            for impl in IMPLEMENTATIONS:
                cfg = dict(config, experts_implementation=impl)  # -> config._experts_implementation
                setting = dict(mode="infer", precision="bf16", attn="sdpa", batch=batch, seq=seq, logits_to_keep=1,
                               new_tokens=4, experts_implementation=impl)
                ROUTER_CALLS.clear()
                kw = {k: v for k, v in setting.items() if k != "experts_implementation"}
                r = run_real(cfg, **kw)
                cid = f"{name}/infer/bf16/sdpa/b{batch}/s{seq}/logits_to_keep1" + ("" if impl == "grouped_mm" else
                                                                                    f"/experts_{impl}")
                rec = R.record(cid, name, "fit", config, setting, r,
                               "MoE prefill working set (tools/oracle/measure_moe_experts.py): REAL CPU tensors "
                               "(torch.manual_seed(0), random token ids), compute dtype bf16, sdpa with the FA2 "
                               f"stand-in; experts_implementation used: {impl}", workload="inference")
                rec.update(routing=routing_stats(ROUTER_CALLS, config["num_hidden_layers"]), compute_dtype="bfloat16")
                recs.append(rec)
                print(f"{cid:75s} {r['peak_bytes']:>12d} {r['seconds']}s max/T "
                      f"{[l['max_over_tokens'] for l in rec['routing']['per_layer']]}", flush=True)
                R.save(out_path, recs, t0)


if __name__ == "__main__":
    main(sys.argv[1])
