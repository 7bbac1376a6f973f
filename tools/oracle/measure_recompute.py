#!/usr/bin/env python
"""Full activation checkpointing's first recomputed layer: backward rebuilds the last layer while every
layer's saved input is still held, and runs that layer's backward (the recompute_start phase), and the
working set of one rebuilt layer (recompute_bytes).

Two kinds of case. With an 8-layer copy of a shape and a 512-token vocabulary, the loss never peaks, so
the peak is the rebuilt layer beside the held inputs (LoRA: a frozen base, few gradients) or beside all
gradients (full fine-tuning); the steady-peak breakdown's backward temporaries are the layer's working
set. recompute_bytes's two ratios (working set / one layer's saved bytes) were read from the Llama-2-7B-
shaped cases, marked "fit"; the other shapes are holdouts. Then real shapes with their vocabularies: the
Llama-2-70B recipe of published_finetune.json's pub-ft-035 per GPU (LoRA r8 on all linear layers, lora
dropout 0.1 with adapters in bf16, 8 × 2,048 tokens, 80 layers) and without dropout at one sequence, and
the default preset's Llama-2-7B LoRA run, where the loss's logit gradients peak instead (holdouts).
LoRA dropout is dispatched as on CUDA (measure_cuda_dropout.patch).

    /tmp/ovenv/bin/python tools/oracle/measure_recompute.py OUT.json
"""
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import measure_cuda_dropout as CD  # noqa: E402
import measure_lora_dropout as LD  # noqa: E402
import memoracle as M  # noqa: E402
import oracle_configs as C  # noqa: E402
import records as R  # noqa: E402

LLAMA_2_70B = dict(model_type="llama", architectures=["LlamaForCausalLM"], vocab_size=32000, hidden_size=8192,
                   intermediate_size=28672, num_hidden_layers=80, num_attention_heads=64, num_key_value_heads=8,
                   max_position_embeddings=4096, rms_norm_eps=1e-5, tie_word_embeddings=False)


NOTE = "measure_recompute: full checkpointing's rebuilt layer; LoRA dropout dispatched as on CUDA"


def small(config, name):
    """8 layers and a 512-token vocabulary: the loss never peaks."""
    return f"{name}-8L-v512", dict(config, num_hidden_layers=8, vocab_size=512, tie_word_embeddings=False)


def lora(r, targets="all-linear", dropout=0.0, adapter_dtype="fp32"):
    return dict(r=r, alpha=2 * r, targets=targets, dropout=dropout, adapter_dtype=adapter_dtype)


CASES = [  # (config name, config, split, batch, seq, lora or None)
    (*small(C.LLAMA_2_7B, "Llama-2-7B"), "fit", 1, 2048, lora(16)),
    (*small(C.LLAMA_2_7B, "Llama-2-7B"), "fit", 1, 2048, lora(16, "q_proj,v_proj")),
    (*small(C.LLAMA_2_7B, "Llama-2-7B"), "fit", 1, 2048, lora(16, dropout=0.1, adapter_dtype="model")),
    (*small(C.LLAMA_2_7B, "Llama-2-7B"), "fit", 1, 2048, None),
    (*small(C.LLAMA_3_8B, "Llama-3-8B"), "holdout", 2, 1024, lora(16)),
    (*small(C.QWEN2_5_7B, "Qwen2.5-7B"), "holdout", 1, 2048, lora(16)),
    (*small(C.MISTRAL_7B_V01, "Mistral-7B"), "holdout", 1, 2048, lora(16, dropout=0.1)),
    (*small(C.LLAMA_3_70B, "Llama-3-70B"), "holdout", 1, 2048, lora(16, adapter_dtype="model")),
    (*small(C.LLAMA_3_8B, "Llama-3-8B"), "holdout", 1, 2048, None),
    ("Llama-2-70B", LLAMA_2_70B, "holdout", 1, 2048, lora(8)),
    ("Llama-2-70B", LLAMA_2_70B, "holdout", 8, 2048, lora(8, dropout=0.1, adapter_dtype="model")),
    ("Llama-2-7B", C.LLAMA_2_7B, "holdout", 1, 4096, lora(16)),
]


def main(out_path):
    CD.patch()
    # run_case looks it up by this name; a full fine-tuning case has no adapters
    M.apply_lora = lambda model, lo: LD.apply_lora_with_dropout(model, lo) if lo else model
    recs, t0 = [], time.time()
    for name, config, split, batch, seq, lo in CASES:
        setting = dict(mode="train", precision="bf16", attn="sdpa", batch=batch, seq=seq, grad_ckpt=True, optim="fused")
        if lo:
            setting.update(lora=lo, dropout_dispatch="cuda")
        kw = dict(setting, lora=dict(lo, targets=lo["targets"] if lo["targets"] == "all-linear"
                                     else lo["targets"].split(",")) if lo else None)
        kw.pop("dropout_dispatch", None)
        r = M.run_case(config, use_memtracker=False, **kw)
        adapted = (f"lora{lo['r']}-{lo['targets']}" + (f"/lora-dropout{lo['dropout']}" if lo["dropout"] else "")
                   + f"/adapters-{lo['adapter_dtype']}") if lo else "full"
        cid = f"{name}/train/bf16/sdpa/b{batch}/s{seq}/gc/fused/{adapted}/recompute"
        recs.append(R.record(cid, name, split, config, setting, r, NOTE, workload="lora" if lo else "full"))
        print(f"{cid:100s} {r['peak_bytes'] / 2**30:8.4f} GiB {r['seconds']}s", flush=True)
        R.save(out_path, recs, t0)


if __name__ == "__main__":
    main(sys.argv[1])
