#!/usr/bin/env python
"""PEFT LoRA with modules_to_save=["embed_tokens", "lm_head"] (the Qwen and Llama fine-tuning scripts'
recipe for new tokens or a new chat template): PEFT wraps each module in a ModulesToSaveWrapper that
keeps the frozen original and trains a deep copy in the model's dtype, with its own gradient and
AdamW states. Each case is measured with and without the modules. Llama-tiny-4L-512 'fit',
Llama-3.2-1B-untied 'holdout' (oracle_extra.json's configs; untied, as PEFT copies a tied pair apart).

    /tmp/ovenv/bin/python tools/oracle/measure_modules_to_save.py OUT.json
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
SAVED = ["embed_tokens", "lm_head"]


def apply_lora_with_saved_modules(model, lora):
    from peft import LoraConfig, get_peft_model
    cfg = LoraConfig(r=lora["r"], lora_alpha=lora.get("alpha", 2 * lora["r"]),
                     target_modules=lora["targets"] if lora["targets"] == "all-linear" else lora["targets"].split(","),
                     lora_dropout=0.0, bias="none", task_type="CAUSAL_LM", modules_to_save=lora["modules_to_save"])
    return get_peft_model(model, cfg)  # autocast_adapter_dtype=True: adapters fp32, saved modules in the model's dtype


CASES = [(name, split, dict(batch=b, seq=s, grad_ckpt=gc, lora=dict(r=16, alpha=32, targets=t, modules_to_save=m)))
         for name, split, b, s, gc in (("Llama-tiny-4L-512", "fit", 2, 1024, False),
                                       ("Llama-3.2-1B-untied", "holdout", 1, 2048, False),
                                       ("Llama-3.2-1B-untied", "holdout", 2, 2048, True))
         for t in ("q_proj,v_proj", "all-linear") for m in (None, SAVED)]


def main(out_path):
    M.apply_lora = apply_lora_with_saved_modules  # run_case looks it up by this name
    configs = {c["config_name"]: c["config"] for c in json.load(open(EXTRA))["cases"]}
    recs, t0 = [], time.time()
    for name, split, s in CASES:
        lo = s["lora"]
        setting = dict(mode="train", precision="bf16", attn="sdpa", optim="fused", **s)
        r = M.run_case(configs[name], use_memtracker=False, **setting)
        cid = (f"{name}/train/bf16/sdpa/b{s['batch']}/s{s['seq']}/{'gc' if s['grad_ckpt'] else 'nogc'}/fused/"
               f"lora{lo['r']}-{lo['targets']}" + ("/modules-to-save-embed-head" if lo["modules_to_save"] else ""))
        recs.append(R.record(cid, name, split, configs[name], setting, r,
                             "peft LoraConfig(modules_to_save=...)" if lo["modules_to_save"] else "the same without"))
        print(f"{cid:100s} {r['peak_bytes'] / 2**30:8.4f} GiB {r['seconds']}s", flush=True)
        R.save(out_path, recs, t0)


if __name__ == "__main__":
    main(sys.argv[1])
