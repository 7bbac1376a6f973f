#!/usr/bin/env python
"""LoRA with the adapters in the model's dtype: what PEFT did before autocast_adapter_dtype (PEFT 0.12)
and what LitGPT and torchtune do.

memoracle.apply_lora calls get_peft_model with PEFT's default autocast_adapter_dtype=True: the LoRA A/B
weights are fp32 and each adapted layer casts its input to fp32. Here the same runs are made with
autocast_adapter_dtype=False on a bf16 model (adapters, their gradients and AdamW states in bf16; no
input casts). Shapes: the Llama-tiny of oracle_arch.json (fit) and Qwen2.5-0.5B (holdout).

    /tmp/ovenv/bin/python tools/oracle/measure_adapter_dtype.py OUT.json
"""
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import memoracle as M  # noqa: E402
import records as R  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(HERE))
EXTRA = os.path.join(ROOT, "presets", "validation", "oracle_extra.json")


def apply_lora_model_dtype(model, lora):
    if not lora:
        return model
    from peft import LoraConfig, get_peft_model
    lcfg = LoraConfig(r=lora["r"], lora_alpha=lora.get("alpha", 2 * lora["r"]),
                      target_modules=lora.get("targets", "all-linear"), lora_dropout=0.0,
                      bias="none", task_type="CAUSAL_LM")
    return get_peft_model(model, lcfg, autocast_adapter_dtype=False)  # adapters stay in the model's dtype


def configs():
    extra = {c["config_name"]: c["config"] for c in json.load(open(EXTRA))["cases"]}
    return {"Llama-tiny-4L-512": extra["Llama-tiny-4L-512"], "Qwen2.5-0.5B": extra["Qwen2.5-0.5B"]}


def lora(r, targets):
    return {"r": r, "alpha": 2 * r, "targets": targets, "adapter_dtype": "model"}


CASES = [  # (config, split, setting)
    ("Llama-tiny-4L-512", "fit", dict(attn="sdpa", batch=2, seq=1024, grad_ckpt=False, lora=lora(16, "q_proj,v_proj"))),
    ("Llama-tiny-4L-512", "fit", dict(attn="sdpa", batch=2, seq=1024, grad_ckpt=False, lora=lora(16, "all-linear"))),
    ("Llama-tiny-4L-512", "fit", dict(attn="sdpa", batch=2, seq=1024, grad_ckpt=True, lora=lora(16, "all-linear"))),
    ("Llama-tiny-4L-512", "fit", dict(attn="eager", batch=1, seq=2048, grad_ckpt=False, lora=lora(64, "all-linear"))),
    ("Qwen2.5-0.5B", "holdout", dict(attn="sdpa", batch=1, seq=2048, grad_ckpt=False, lora=lora(16, "q_proj,v_proj"))),
    ("Qwen2.5-0.5B", "holdout", dict(attn="sdpa", batch=2, seq=1024, grad_ckpt=False, lora=lora(32, "all-linear"))),
    ("Qwen2.5-0.5B", "holdout", dict(attn="sdpa", batch=4, seq=1024, grad_ckpt=True, lora=lora(16, "all-linear"))),
    ("Qwen2.5-0.5B", "holdout", dict(attn="eager", batch=1, seq=1024, grad_ckpt=False,
                                     lora=lora(8, "q_proj,k_proj,v_proj,o_proj"))),
]


def case_id(name, s):
    lo = s["lora"]
    return (f"{name}/train/bf16/{s['attn']}/b{s['batch']}/s{s['seq']}/{'gc' if s['grad_ckpt'] else 'nogc'}/fused/"
            f"lora{lo['r']}-{lo['targets']}/adapters-model-dtype")


def main(out_path):
    M.apply_lora = apply_lora_model_dtype  # run_case looks it up by this name
    cfgs, recs, t0 = configs(), [], time.time()
    for name, split, s in CASES:
        setting = dict(mode="train", precision="bf16", optim="fused", **s)
        lo = {k: v for k, v in s["lora"].items() if k != "adapter_dtype"}
        if lo["targets"] != "all-linear":  # peft needs a list for several module names
            lo["targets"] = lo["targets"].split(",")
        kw = dict(setting, lora=lo)
        r = M.run_case(cfgs[name], use_memtracker=False, **kw)
        rec = R.record(case_id(name, s), name, split, cfgs[name], setting, r,
                       "peft get_peft_model(..., autocast_adapter_dtype=False): LoRA weights, gradients and AdamW "
                         f"states in bf16, no fp32 input casts; SDPA kernels: {r['sdpa_kernels'] or ['none (eager)']}")
        R.keep(out_path, recs, rec, r, t0)


if __name__ == "__main__":
    main(sys.argv[1])
