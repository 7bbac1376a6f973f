#!/usr/bin/env python
"""PEFT LoRA with lora_dropout > 0 (dropout dispatched as on CUDA: measure_cuda_dropout.patch).

memoracle.apply_lora sets lora_dropout=0.0 (nn.Identity). Here LoraConfig(lora_dropout=0.1): each
adapted layer applies its own dropout to its (cast) input before lora_A. Adapters in fp32 (PEFT's
default) and in the model's dtype (autocast_adapter_dtype=False). Llama-tiny-4L-512 'fit',
Qwen2.5-0.5B 'holdout' (oracle_extra.json's configs).

    /tmp/ovenv/bin/python tools/oracle/measure_lora_dropout.py OUT.json
"""
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import measure_cuda_dropout as CD  # noqa: E402
import memoracle as M  # noqa: E402
import records as R  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(HERE))
EXTRA = os.path.join(ROOT, "presets", "validation", "oracle_extra.json")
ADAPTER_DTYPE = {"fp32": True, "model": False}  # -> autocast_adapter_dtype


def apply_lora_with_dropout(model, lora):
    from peft import LoraConfig, get_peft_model
    cfg = LoraConfig(r=lora["r"], lora_alpha=lora.get("alpha", 2 * lora["r"]), target_modules=lora["targets"],
                     lora_dropout=lora["dropout"], bias="none", task_type="CAUSAL_LM")
    return get_peft_model(model, cfg, autocast_adapter_dtype=ADAPTER_DTYPE[lora["adapter_dtype"]])


CASES = [(name, split, dict(batch=b, seq=s, grad_ckpt=False,
                            lora=dict(r=16, alpha=32, targets=t, dropout=0.1, adapter_dtype=a)))
         for name, split, b, s in (("Llama-tiny-4L-512", "fit", 2, 1024), ("Qwen2.5-0.5B", "holdout", 1, 2048))
         for t in ("q_proj,v_proj", "all-linear") for a in ("fp32", "model")]


def main(out_path):
    CD.patch()
    M.apply_lora = apply_lora_with_dropout  # run_case looks it up by this name
    configs = {c["config_name"]: c["config"] for c in json.load(open(EXTRA))["cases"]}
    recs, t0 = [], time.time()
    for name, split, s in CASES:
        lo = dict(s["lora"])
        setting = dict(mode="train", precision="bf16", attn="sdpa", optim="fused", dropout_dispatch="cuda", **s)
        kw = dict(setting, lora=dict(lo, targets=lo["targets"] if lo["targets"] == "all-linear"
                                     else lo["targets"].split(",")))
        kw.pop("dropout_dispatch")
        r = M.run_case(configs[name], use_memtracker=False, **kw)
        cid = (f"{name}/train/bf16/sdpa/b{s['batch']}/s{s['seq']}/nogc/fused/lora{lo['r']}-{lo['targets']}"
               f"/lora-dropout0.1/adapters-{lo['adapter_dtype']}")
        recs.append(R.record(cid, name, split, configs[name], setting, r,
                             "peft LoraConfig(lora_dropout=0.1); dropout dispatched as on CUDA"))
        print(f"{cid:100s} {r['peak_bytes'] / 2**30:8.4f} GiB {r['seconds']}s", flush=True)
        R.save(out_path, recs, t0)


if __name__ == "__main__":
    main(sys.argv[1])
