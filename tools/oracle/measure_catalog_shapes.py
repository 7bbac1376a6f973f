#!/usr/bin/env python
"""Catalog models the oracle files had (almost) no record of: Gemma-7B (GeGLU, fp32 norm scale; one LoRA record, fit)
and Qwen3-8B (q/k norms; full fine-tuning only), each cut to 4 layers of the catalog's config, in full fine-tuning
(bf16 and autocast, with and without full checkpointing) and LoRA (PEFT's defaults: q/v, and all-linear checkpointed).
Held out: these shapes informed no term.

    /work/tmp/ovenv/bin/python tools/oracle/measure_catalog_shapes.py OUT.json
"""
import sys
import time

from measure_lora_layouts import catalog_config
import measure_cuda_dropout
import memoracle as M
import records as R

MODELS = {"Gemma-7B-4L": catalog_config("gemma-7b.json", 4), "Qwen3-8B-4L": catalog_config("qwen3-8b.json", 4)}

CASES = [  # (model, precision, batch, seq, checkpointing, LoRA targets or None)
    ("Gemma-7B-4L", "bf16", 1, 2048, False, None),
    ("Gemma-7B-4L", "amp", 1, 2048, False, None),
    ("Gemma-7B-4L", "bf16", 2, 2048, False, "q_proj,v_proj"),
    ("Gemma-7B-4L", "bf16", 1, 2048, True, "all-linear"),
    ("Qwen3-8B-4L", "bf16", 2, 2048, False, "q_proj,v_proj"),
    ("Qwen3-8B-4L", "amp", 1, 4096, True, None),
]


def main(out_path):
    measure_cuda_dropout.patch()
    recs, t0 = [], time.time()
    for name, precision, batch, seq, ckpt, targets in CASES:
        setting = dict(mode="train", precision=precision, attn="sdpa", batch=batch, seq=seq, grad_ckpt=ckpt,
                       optim="fused")
        lora = targets and dict(r=16, alpha=32, targets=targets if targets == "all-linear" else targets.split(","))
        r = M.run_case(MODELS[name], use_memtracker=False, lora=lora, **setting)
        if targets:
            setting["lora"] = dict(r=16, alpha=32, targets=targets)
        kind = f"lora16-{targets}" if targets else "full"
        rec = R.record(f"{name}/train/{precision}/sdpa/b{batch}/s{seq}/{'gc' if ckpt else 'nogc'}/fused/{kind}/catalog",
                       name, "holdout", MODELS[name], dict(setting, dropout_dispatch="cuda"), r,
                       "measure_catalog_shapes.py: a catalog model cut to 4 layers; SDPA kernels: "
                       f"{r.get('sdpa_kernels') or ['none']}", workload="lora" if targets else "full")
        R.keep(out_path, recs, rec, r, t0)


if __name__ == "__main__":
    main(sys.argv[1])
