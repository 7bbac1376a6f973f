#!/usr/bin/env python
"""Gradient accumulation: k micro-batches per optimizer step, the gradients of the earlier ones kept in
.grad while the later ones run forward and backward (the HF Trainer, LitGPT's fit() and plain PyTorch
loops all accumulate this way: each loss divided by k, backward into the existing .grad, one AdamW
step, zero_grad).

The accumulated_gradients term has no fitted coefficient; the end-of-forward phase (the loss's logits and
autocast's weight cache, the peak once gradients are resident) was read from the first case, marked "fit";
the others are holdouts. The HF shapes are configs of the oracle files, with 2 to 4 micro-batches; the
LitGPT case is the run of presets/validation/published_finetune.json's pub-ft-011 (config_hub
tiny-llama/full.yaml: global_batch_size 32, micro_batch_size 4, 1 device, so 8 micro-batches per step).

    /tmp/ovenv/bin/python tools/oracle/measure_grad_accum.py LITGPT_WHEEL OUT.json
"""
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import measure_cuda_dropout as CD  # noqa: E402
import measure_litgpt as LG  # noqa: E402
import memoracle as M  # noqa: E402
import oracle_configs as C  # noqa: E402
import records as R  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(HERE))
EXTRA = os.path.join(ROOT, "presets", "validation", "oracle_extra.json")
ARCH = os.path.join(ROOT, "presets", "validation", "oracle_arch.json")

HF_CASES = [  # (config name, split, setting)
    # "fit": the case the end-of-forward phase (forward_end_bytes, autocast_cache_bytes) was read from
    ("Llama-3.2-1B", "fit", dict(precision="amp", attn="sdpa", batch=1, seq=2048, grad_ckpt=True, grad_accum=2)),
    ("Llama-3.2-1B", "holdout", dict(precision="bf16", attn="sdpa", batch=1, seq=512, grad_ckpt=False, grad_accum=2)),
    ("Llama-3.2-1B", "holdout", dict(precision="bf16", attn="sdpa", batch=4, seq=2048, grad_ckpt=True, grad_accum=4)),
    ("Llama-3.2-1B", "holdout", dict(precision="bf16", attn="eager", batch=2, seq=1024, grad_ckpt=True, grad_accum=3)),
    ("Llama-3.2-1B", "holdout", dict(precision="amp", attn="eager", batch=1, seq=512, grad_ckpt=False, grad_accum=2)),
    ("Llama-3.2-1B", "holdout", dict(precision="bf16", attn="sdpa", batch=1, seq=2048, grad_ckpt=False, grad_accum=2,
                                     lora={"r": 16, "alpha": 32, "targets": "all-linear"})),
    ("Llama-3.2-1B-untied", "holdout", dict(precision="amp", attn="sdpa", batch=2, seq=1024, grad_ckpt=True,
                                            grad_accum=2)),
    ("Qwen2.5-0.5B", "holdout", dict(precision="bf16", attn="eager", batch=2, seq=1024, grad_ckpt=False, grad_accum=2)),
    ("Qwen2.5-0.5B", "holdout", dict(precision="bf16", attn="sdpa", batch=2, seq=2048, grad_ckpt=True, grad_accum=2)),
    ("Qwen2.5-0.5B", "holdout", dict(precision="amp", attn="sdpa", batch=4, seq=1024, grad_ckpt=True, grad_accum=4)),
    ("Qwen3-0.6B", "holdout", dict(precision="amp", attn="eager", batch=2, seq=1024, grad_ckpt=True, grad_accum=2)),
    ("Gemma2-small-6L-576", "holdout", dict(precision="amp", attn="eager", batch=2, seq=1024, grad_ckpt=True,
                                            grad_accum=2)),
]


def configs():
    recorded = {c["config_name"]: c["config"] for path in (EXTRA, ARCH) for c in json.load(open(path))["cases"]}
    return dict(recorded, **{"Llama-3.2-1B": C.LLAMA_3_2_1B})


def hf_id(name, s):
    tail = f"/lora{s['lora']['r']}-{s['lora']['targets']}" if s.get("lora") else ""
    return (f"{name}/train/{s['precision']}/{s['attn']}/b{s['batch']}/s{s['seq']}/"
            f"{'gc' if s['grad_ckpt'] else 'nogc'}/fused{tail}/accum{s['grad_accum']}")


def main(wheel, out_path):
    cfgs, recs, t0 = configs(), [], time.time()
    for name, split, s in HF_CASES:
        setting = dict(mode="train", optim="fused", **s)
        r = M.run_case(cfgs[name], use_memtracker=False, **setting)
        rec = R.record(hf_id(name, s), name, split, cfgs[name], setting, r,
                       f"{s['grad_accum']} micro-batches per AdamW step; SDPA kernels: "
                       f"{r['sdpa_kernels'] or ['none (eager)']}", workload="lora" if s.get("lora") else "full")
        recs.append(rec)
        print(f"{rec['id']:90s} {r['peak_bytes'] / 1e9:8.3f} GB {r['seconds']}s", flush=True)
        R.save(out_path, recs, t0)

    version = LG.load_litgpt(wheel)
    CD.patch()
    name, batch, seq, accum = "tiny-llama-1.1b", 4, 512, 8
    r = LG.run(name, "full", batch, seq, None, grad_accum=accum)
    setting = dict(mode="train", precision="bf16", attn="sdpa", batch=batch, seq=seq, grad_ckpt=False, optim="foreach",
                   engine="litgpt", loss="compute-chunked", litgpt_config=name, litgpt_version=version,
                   grad_accum=accum)
    config = cfgs[f"litgpt:{name}"]
    rec = dict(id=f"litgpt:{name}/train/bf16/sdpa/b{batch}/s{seq}/nogc/foreach/full/accum{accum}",
               config_name=f"litgpt:{name}", split="holdout", workload="full", setting=setting,
               notes=f"LitGPT {version} model/loss code, fit()'s accumulation; SDPA kernels: {r.pop('sdpa_kernels')}",
               config=config, **r)
    recs.append(rec)
    print(f"{rec['id']:90s} {r['peak_bytes'] / 1e9:8.3f} GB {r['seconds']}s", flush=True)
    R.save(out_path, recs, t0)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
