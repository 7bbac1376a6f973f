#!/usr/bin/env python
"""One LitGPT fine-tuning step under the oracle's tracker, with LitGPT's own model, LoRA and loss code.

LitGPT (Lightning-AI/litgpt) trains its own GPT implementation, not transformers': q, k and v come from
one fused linear layer, grouped-query keys and values are copied to every head before SDPA, the rotary
embedding is applied with torch.cat, RMSNorm multiplies by its weight in fp32, LoRA adapters (and
their lora_dropout, 0.05 in its config_hub recipes) sit on the fused layers, and the loss is
chunked_cross_entropy on 16-bit logits (the LM head itself chunked 128 tokens at a time for LoRA).
This script imports config.py, model.py and lora.py from a LitGPT wheel (no install: their imports
are torch, yaml, typing_extensions and two helpers of litgpt/utils.py, which a shim provides together
with a copy of utils.py's chunked_cross_entropy) and runs, on fake tensors with memoracle.LiveTracker:
forward with the loss as litgpt/finetune/{lora,full}.py computes it, backward, torch.optim.AdamW's
step (foreach, torch's default on CUDA; LitGPT does not pass fused), zero_grad; two steps; dropout
and SDPA dispatched as on CUDA (measure_cuda_dropout.patch). Parameters are bf16 ("bf16-true").

    pip download litgpt==0.5.3 --no-deps -d DIR
    /tmp/ovenv/bin/python tools/oracle/measure_litgpt.py DIR/litgpt-0.5.3-py3-none-any.whl OUT.json
"""
import json
import os
import re
import sys
import tempfile
import time
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import torch  # noqa: E402
from torch._subclasses.fake_tensor import FakeTensorMode  # noqa: E402

import measure_cuda_dropout as CD  # noqa: E402
import memoracle as M  # noqa: E402

SHIM = '''from typing import Dict, List, Mapping, Union
import torch


def find_multiple(n: int, k: int) -> int:
    assert k > 0
    return n if n % k == 0 else n + k - (n % k)


def map_old_state_dict_weights(state_dict: Dict, mapping: Mapping, prefix: str) -> Dict:
    return state_dict

'''


def load_litgpt(wheel):
    """Unpack config.py, model.py, lora.py and a shim utils.py into a temporary package `litgpt`."""
    root = tempfile.mkdtemp(prefix="litgpt_")
    pkg = os.path.join(root, "litgpt")
    os.makedirs(pkg)
    with zipfile.ZipFile(wheel) as z:
        for name in ("config.py", "model.py", "lora.py"):
            with open(os.path.join(pkg, name), "wb") as f:
                f.write(z.read(f"litgpt/{name}"))
        utils = z.read("litgpt/utils.py").decode()
        version = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
        version = re.search(r"^Version: (.+)$", z.read(version).decode(), re.M).group(1)
    ce = re.search(r"^def chunked_cross_entropy\(.*?(?=^def |\Z)", utils, re.M | re.S).group(0)
    with open(os.path.join(pkg, "utils.py"), "w") as f:
        f.write(SHIM + ce)
    open(os.path.join(pkg, "__init__.py"), "w").close()
    sys.path.insert(0, root)
    return version


def lora(r, alpha, targets):
    flags = dict(lora_query=True, lora_key=False, lora_value=True, lora_projection=False, lora_mlp=False,
                 lora_head=False)
    if targets == "all":
        flags = {k: True for k in flags}
    return dict(lora_r=r, lora_alpha=alpha, lora_dropout=0.05, **flags)


# (LitGPT config name, split, mode, batch, seq, LoRA settings): the fit shapes are TinyLlama's; the
# holdout ones are the LitGPT config_hub rows of presets/validation/published_finetune.json.
CASES = [
    ("tiny-llama-1.1b", "fit", "lora", 2, 1024, ("qv", 32, 16)),
    ("tiny-llama-1.1b", "fit", "lora", 4, 256, ("all", 8, 16)),
    ("tiny-llama-1.1b", "fit", "full", 2, 512, None),
    ("tiny-llama-1.1b", "fit", "lora", 8, 512, ("all", 32, 16)),
    ("tiny-llama-1.1b", "fit", "full", 4, 512, None),
    ("Llama-2-7b-hf", "holdout", "lora", 2, 512, ("qv", 32, 16)),
    ("Llama-3-8B", "holdout", "lora", 1, 512, ("qv", 32, 16)),
    ("Mistral-7B-v0.1", "holdout", "lora", 2, 512, ("qv", 32, 16)),
    ("Phi-3-mini-4k-instruct", "holdout", "lora", 4, 512, ("all", 8, 16)),
    ("Gemma-2b", "holdout", "lora", 2, 512, ("all", 16, 16)),
    ("Llama-3.1-8B", "holdout", "lora", 1, 512, ("qv", 32, 16)),
]


def run(name, mode, batch, seq, lora_settings, grad_accum=1):
    """One case, two optimizer steps of grad_accum micro-batches each (fit(): fabric.no_backward_sync while
    accumulating, loss / grad_accum)."""
    import litgpt.lora as L
    import litgpt.model as G
    from litgpt.config import Config
    from litgpt.utils import chunked_cross_entropy
    if mode == "full":
        cfg, cls = Config.from_name(name), G.GPT
    else:
        cfg, cls = L.Config.from_name(name, **lora(lora_settings[1], lora_settings[2], lora_settings[0])), L.GPT
    with torch.device("meta"):
        model = cls(cfg).to(torch.bfloat16)
    if mode == "lora":
        L.mark_only_lora_as_trainable(model)
    tracker = M.LiveTracker(round_to=M.CUDA_MIN_BLOCK)
    M.SDPA_LOG.clear()
    t0 = time.time()
    with FakeTensorMode(allow_non_fake_inputs=True), M.emulate_cuda_sdpa(True), tracker:
        M.materialize_fake(model, "cpu")
        model.max_seq_length = seq  # builds the rope cache for this length, as finetune/*.py does
        tracker.track_model(model)
        ids = torch.randint(0, cfg.padded_vocab_size, (batch, seq))
        tracker.register(ids, "input")
        model.train()
        opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-4, foreach=True)
        for _ in range(2):
            tracker.reset_peak()
            for _ in range(grad_accum):
                tracker.phase = "fwd"
                if mode == "lora":  # litgpt/finetune/lora.py
                    logits = model(ids, lm_head_chunk_size=128)
                    logits[-1] = logits[-1][..., :-1, :]
                    loss = chunked_cross_entropy(logits, ids[..., 1:])
                else:  # litgpt/finetune/full.py
                    logits = model(ids)
                    loss = chunked_cross_entropy(logits[..., :-1, :], ids[..., 1:])
                tracker.phase = "bwd"
                # logits stay referenced through backward, as in LitGPT's fit(); one micro-batch as the records
                # before accumulation were made (fit() divides by 1 too: a 512-byte scalar more)
                (loss / grad_accum if grad_accum > 1 else loss).backward()
                del loss, logits
            tracker.phase = "opt"
            opt.step()
            tracker.track_optimizer(opt)
            opt.zero_grad(set_to_none=True)
            tracker.phase = "idle"
    params = sum(p.numel() for p in model.parameters())
    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    return dict(peak_bytes=tracker.peak, steady_peak_phase=tracker.peak_phase, steady_peak_op=tracker.peak_op,
                steady_peak_breakdown=tracker.peak_snapshot, params=params, trainable_params=trainable,
                sdpa_kernels=sorted(set(M.SDPA_LOG)), seconds=round(time.time() - t0, 1))


def main(wheel, out_path):
    version = load_litgpt(wheel)
    CD.patch()
    recs, t0 = [], time.time()
    for name, split, mode, batch, seq, lo in CASES:
        r = run(name, mode, batch, seq, lo)
        tail = f"/lora{lo[1]}-{lo[0]}-dropout0.05" if lo else ""
        cid = f"litgpt:{name}/train/bf16/sdpa/b{batch}/s{seq}/nogc/foreach/{mode}{tail}"
        setting = dict(mode="train", precision="bf16", attn="sdpa", batch=batch, seq=seq, grad_ckpt=False,
                       optim="foreach", engine="litgpt", loss="compute-chunked", litgpt_config=name,
                       litgpt_version=version)
        if lo:
            setting["lora"] = dict(r=lo[1], alpha=lo[2], targets={"qv": "q_proj,v_proj", "all": "all-linear"}[lo[0]],
                                   adapter_dtype="model", dropout=0.05, litgpt_head_adapter=lo[0] == "all")
        recs.append(dict(id=cid, config_name=f"litgpt:{name}", split=split, workload="lora" if lo else "full",
                         setting=setting, notes=f"LitGPT {version} model/LoRA/loss code; SDPA kernels: "
                                                f"{r.pop('sdpa_kernels')}", **r))
        print(f"{cid:90s} {recs[-1]['peak_bytes'] / 1e9:8.3f} GB {r['seconds']}s", flush=True)
        json.dump(dict(cases=recs, seconds=round(time.time() - t0, 1), litgpt=version,
                       versions=dict(torch=torch.__version__)), open(out_path, "w"), indent=1)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
