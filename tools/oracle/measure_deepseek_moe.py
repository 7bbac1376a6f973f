"""DeepSeek's MoE layers as transformers 5.24 trains them (DeepseekV3MoE: a sigmoid router with expert groups and a
score-correction bias, the shared experts as one MLP; DeepseekV2MoE: a softmax router), with multi-head latent
attention: the held-out records of presets/validation/oracle_arch.json whose config_name starts with 'DeepSeekV3MoE'
or 'DeepSeekV2MoE', measured after the estimator's MoE and MLA terms were written (none was read from them).

Routing is data dependent, so these run on REAL CPU tensors under memoracle's tracker, as the protocol's
'moe_method' describes (torch.manual_seed(0), random token ids, bf16), with the model's eager attention (a real CPU
SDPA would not allocate what the CUDA FlashAttention-2 kernel does). grouped_mm (transformers' default experts
implementation: buffers of tokens × top_k rows whatever the routing) and the eager per-expert loop.

    venv/bin/python measure_deepseek_moe.py > records.json
"""
import json
import sys

import memoracle as M

_COMMON = dict(vocab_size=32000, hidden_size=256, intermediate_size=768, moe_intermediate_size=128,
               num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=4, n_shared_experts=1,
               n_routed_experts=16, kv_lora_rank=64, qk_rope_head_dim=16, v_head_dim=32, qk_nope_head_dim=32,
               num_experts_per_tok=4, first_k_dense_replace=1, hidden_act="silu", max_position_embeddings=4096,
               rms_norm_eps=1e-6, tie_word_embeddings=False, rope_theta=10000.0, attention_bias=False,
               attention_dropout=0.0)
CONFIGS = {
    "DeepSeekV3MoE-tiny-4L-256-16x4": dict(_COMMON, model_type="deepseek_v3", q_lora_rank=96, n_group=4, topk_group=2,
                                           norm_topk_prob=True, routed_scaling_factor=2.5, rope_interleave=True),
    "DeepSeekV2MoE-tiny-4L-256-16x4": dict(_COMMON, model_type="deepseek_v2", q_lora_rank=None, n_group=1,
                                           topk_group=1, norm_topk_prob=False, routed_scaling_factor=1.0,
                                           topk_method="greedy"),
}
# (batch, seq, checkpointing, experts implementation)
SETTINGS = ((1, 512, False, "grouped_mm"), (1, 512, True, "grouped_mm"), (2, 256, False, "grouped_mm"),
            (1, 512, False, "eager"))


def main():
    records = []
    for name, config in CONFIGS.items():
        for batch, seq, gc, impl in SETTINGS:
            r = M.run_case(dict(config, experts_implementation=impl), fake=False, cuda_sdpa=False,
                           use_memtracker=False, mode="train", precision="bf16", attn="eager", batch=batch, seq=seq,
                           grad_ckpt=gc)
            cid = (f"{name}/train/bf16/eager/b{batch}/s{seq}/{'gc' if gc else 'nogc'}/fused"
                   + ("" if impl == "grouped_mm" else f"/experts_{impl}"))
            records.append(dict(
                id=cid, config_name=name, split="holdout", config=config, workload="full",
                setting=dict(mode="train", precision="bf16", attn="eager", batch=batch, seq=seq, grad_ckpt=gc,
                             optim="fused", experts_implementation=impl),
                peak_bytes=r["peak_bytes"], first_step_peak_bytes=r["first_step_peak_bytes"],
                steady_peak_breakdown=r["steady_peak_breakdown"], steady_peak_phase=r.get("steady_peak_phase"),
                steady_peak_op=r.get("steady_peak_op"), params=r["params"], trainable_params=r["trainable_params"],
                notes="REAL CPU tensors (torch.manual_seed(0), random token ids), compute dtype bf16; DeepSeek's MoE "
                      "with MLA (tools/oracle/measure_deepseek_moe.py); attn_implementation used: eager; "
                      f"experts_implementation used: {impl}"))
            print(cid, r["peak_bytes"], file=sys.stderr, flush=True)
    json.dump(records, sys.stdout, indent=1)


if __name__ == "__main__":
    main()
