"""Multi-head latent attention (transformers' DeepseekV3Attention) trained in one process: the records of
presets/validation/oracle_arch.json whose config_name starts with DeepSeekV3, DeepSeekV2, KimiK2 or MLA-small.

Every layer is dense (first_k_dense_replace = num_hidden_layers): the oracle cannot route an MoE layer on fake
tensors, and the attention is what these records check. Two sets, run in this order:
- 'fit': a DeepSeek-V3-shaped and a V2-Lite-shaped small model (4 layers, hidden 1024) and the attention and MLP
  widths of DeepSeek-V3 and V2-Lite (2 layers), with and without checkpointing: the estimator's MLA terms were
  written after them (the latents kept through their norms, the values a view of the key-value up-projection);
- 'holdout': measured after those terms were written: DeepSeek-V2's and Kimi-K2's widths, autocast (amp), eager
  attention, a model without a query latent.

    venv/bin/python measure_mla.py fit|holdout > records.json
"""
import json
import sys

import memoracle as M


def config(hidden, heads, q_lora, kv_lora, rope, nope, v, inter, vocab, layers):
    return dict(model_type="deepseek_v3", vocab_size=vocab, hidden_size=hidden, intermediate_size=inter,
                moe_intermediate_size=512, num_hidden_layers=layers, num_attention_heads=heads,
                num_key_value_heads=heads, n_shared_experts=1, n_routed_experts=8, routed_scaling_factor=1.0,
                kv_lora_rank=kv_lora, q_lora_rank=q_lora, qk_rope_head_dim=rope, v_head_dim=v, qk_nope_head_dim=nope,
                n_group=1, topk_group=1, num_experts_per_tok=2, first_k_dense_replace=layers, norm_topk_prob=True,
                hidden_act="silu", max_position_embeddings=8192, rms_norm_eps=1e-6, tie_word_embeddings=False,
                rope_theta=10000.0, rope_interleave=True, attention_bias=False, attention_dropout=0.0)


SMALL_V3 = config(1024, 8, 256, 128, 32, 64, 64, 2816, 32000, 4)
SMALL_V2_LITE = config(1024, 8, None, 128, 32, 64, 64, 2816, 32000, 4)
V3_WIDTHS = config(7168, 128, 1536, 512, 64, 128, 128, 18432, 129280, 2)
V2_LITE_WIDTHS = config(2048, 16, None, 512, 64, 128, 128, 10944, 102400, 2)
V2_WIDTHS = config(5120, 128, 1536, 512, 64, 128, 128, 12288, 102400, 2)
KIMI_K2_WIDTHS = config(7168, 64, 1536, 512, 64, 128, 128, 18432, 163840, 2)
SMALL = config(768, 12, 192, 96, 16, 48, 48, 2048, 32000, 6)
SMALL_NO_Q_LATENT = config(768, 12, None, 96, 16, 48, 48, 2048, 32000, 6)

# (config_name, config, precision, attn, batch, seq, checkpointing)
SETS = {
    "fit": [(name, c, "bf16", "sdpa", batch, seq, gc)
            for name, c in (("DeepSeekV3-MLA-dense-4L-1024", SMALL_V3), ("DeepSeekV2Lite-MLA-dense-4L-1024", SMALL_V2_LITE))
            for gc in (False, True) for batch, seq in ((1, 1024), (2, 2048))]
           + [(name, c, "bf16", "sdpa", 1, 4096, gc)
              for name, c in (("DeepSeekV3-widths-dense-2L", V3_WIDTHS), ("DeepSeekV2Lite-widths-dense-2L", V2_LITE_WIDTHS))
              for gc in (False, True)],
    "holdout": [("DeepSeekV2-widths-dense-2L", V2_WIDTHS, "bf16", "sdpa", 1, 2048, False),
                ("DeepSeekV2-widths-dense-2L", V2_WIDTHS, "bf16", "sdpa", 1, 2048, True),
                ("DeepSeekV2-widths-dense-2L", V2_WIDTHS, "amp", "sdpa", 1, 2048, False),
                ("KimiK2-widths-dense-2L", KIMI_K2_WIDTHS, "bf16", "sdpa", 1, 4096, False),
                ("KimiK2-widths-dense-2L", KIMI_K2_WIDTHS, "bf16", "sdpa", 2, 2048, True),
                ("MLA-small-6L-768", SMALL, "bf16", "eager", 2, 512, False),
                ("MLA-small-6L-768", SMALL, "amp", "sdpa", 2, 1024, False),
                ("MLA-small-6L-768-noqlora", SMALL_NO_Q_LATENT, "bf16", "sdpa", 4, 1024, False)],
}


def record(split, name, c, precision, attn, batch, seq, gc):
    r = M.run_case(c, mode="train", precision=precision, attn=attn, batch=batch, seq=seq, grad_ckpt=gc,
                   use_memtracker=False)
    return dict(id=f"{name}/train/{precision}/{attn}/b{batch}/s{seq}/{'gc' if gc else 'nogc'}/fused", config_name=name,
                split=split, config=c, workload="full",
                setting=dict(mode="train", precision=precision, attn=attn, batch=batch, seq=seq, grad_ckpt=gc,
                             optim="fused"),
                peak_bytes=r["peak_bytes"], first_step_peak_bytes=r["first_step_peak_bytes"],
                steady_peak_breakdown=r["steady_peak_breakdown"], steady_peak_phase=r.get("steady_peak_phase"),
                steady_peak_op=r.get("steady_peak_op"), params=r["params"], trainable_params=r["trainable_params"],
                notes=f"MLA, every layer dense (tools/oracle/measure_mla.py, set '{split}'); "
                      f"attn_implementation used: {attn}")


if __name__ == "__main__":
    split = sys.argv[1]
    json.dump([record(split, *case) for case in SETS[split]], sys.stdout, indent=1)
