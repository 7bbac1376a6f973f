#!/usr/bin/env python
"""Sliding-window layers' KV cache under generate(): transformers' DynamicCache keeps a sliding layer's last
window - 1 tokens, as a view of the full keys and values after the prefill (so the whole prompt stays held)
and as a window-sized copy from the first decode step on. Two fit shapes (the probes kv_window_tokens's
generate() rule was checked on) and three held out, generating past the window or prefilling past it.

    /tmp/ovenv/bin/python tools/oracle/measure_sliding_window.py OUT.json
"""
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import memoracle as M  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(HERE))
GEMMA2_SMALL = {"model_type": "gemma2", "vocab_size": 32000, "hidden_size": 576, "intermediate_size": 1536,
                "num_hidden_layers": 6, "num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 64,
                "query_pre_attn_scalar": 64, "sliding_window": 256, "attn_logit_softcapping": 50.0,
                "final_logit_softcapping": 30.0, "max_position_embeddings": 8192,
                "hidden_activation": "gelu_pytorch_tanh", "rms_norm_eps": 1e-06, "rope_theta": 10000.0,
                "tie_word_embeddings": True}
MISTRAL_TINY = dict(model_type="mistral", vocab_size=32000, hidden_size=512, intermediate_size=1536,
                    num_hidden_layers=4, num_attention_heads=8, num_key_value_heads=2, max_position_embeddings=32768,
                    sliding_window=256, rms_norm_eps=1e-5, rope_theta=10000.0, hidden_act="silu",
                    tie_word_embeddings=False)
MISTRAL_7B_4L = dict(MISTRAL_TINY, hidden_size=4096, intermediate_size=14336, num_attention_heads=32,
                     num_key_value_heads=8, sliding_window=512)
GEMMA_2_2B = dict(GEMMA2_SMALL, vocab_size=256000, hidden_size=2304, intermediate_size=9216, num_hidden_layers=26,
                  num_attention_heads=8, num_key_value_heads=4, head_dim=256, query_pre_attn_scalar=256)


def cases():
    phi3 = json.load(open(os.path.join(ROOT, "presets", "models", "phi-3-mini-4k-instruct.json")))["config"]
    # (name, config, attention, batch, prompt, new tokens, split)
    return [("Gemma2-small-6L-576-w256", GEMMA2_SMALL, "eager", 2, 1024, 16, "fit"),
            ("Mistral-tiny-4L-512-w256", MISTRAL_TINY, "sdpa", 2, 1024, 16, "fit"),
            ("Mistral-tiny-4L-512-w256", MISTRAL_TINY, "sdpa", 8, 64, 448, "fit"),
            ("Mistral-7B-4L-w512", MISTRAL_7B_4L, "sdpa", 4, 128, 1024, "holdout"),
            ("Gemma-2-2B-w256", GEMMA_2_2B, "eager", 2, 128, 512, "holdout"),
            ("Phi-3-mini-4k", phi3, "sdpa", 1, 3072, 16, "holdout")]


def main(out_path):
    out = []
    for name, cfg, attn, batch, seq, new, split in cases():
        t = time.time()
        r = M.run_case(cfg, mode="infer", precision="bf16", attn=attn, batch=batch, seq=seq, new_tokens=new,
                       logits_to_keep=1, use_memtracker=False)
        out.append({"id": f"{name}/infer/bf16/{attn}/b{batch}/s{seq}/new{new}/logits_to_keep1", "config_name": name,
                    "split": split, "config": cfg, "workload": "inference",
                    "setting": {"mode": "infer", "precision": "bf16", "attn": attn, "batch": batch, "seq": seq,
                                "logits_to_keep": 1, "new_tokens": new},
                    **{k: r[k] for k in ("peak_bytes", "kv_cache_bytes_after_prefill", "kv_cache_bytes_end",
                                         "logits_bytes", "prefill_peak_bytes", "peak_phase", "phase_peaks", "params",
                                         "trainable_params")},
                    "notes": f"sliding window {cfg['sliding_window']} tokens; CUDA-like SDPA routing chose: "
                             f"{r['sdpa_kernels']}; measure_sliding_window"})
        print(out[-1]["id"], r["peak_bytes"], round(time.time() - t, 1), flush=True)
    json.dump(out, open(out_path, "w"), indent=1)


if __name__ == "__main__":
    main(sys.argv[1])
