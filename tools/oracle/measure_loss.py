#!/usr/bin/env python
"""Training peaks with the loss computed as other training stacks compute it.

transformers' ForCausalLMLoss upcasts the logits to fp32 before one cross-entropy (what every other oracle
record measures). Here the model's loss_function is replaced by:
- "compute": the same cross-entropy on the 16-bit logits, no upcast (LitGPT with bf16-true and chunk_size=0);
- "compute-chunked": LitGPT's chunked_cross_entropy: the flattened 16-bit logits split into 128-row chunks,
  one cross-entropy per chunk (litgpt/utils.py);
- "fp32-chunked": as torchtune's CEWithChunkedOutputLoss: 8 chunks, each upcast to fp32 before its
  cross-entropy (torchtune/modules/loss/ce_chunked_output_loss.py), here over the split logits of an HF model.
Shapes: Llama-tiny-4L-512 (fit) and Qwen2.5-0.5B (holdout), oracle_extra.json's configs.

    /tmp/ovenv/bin/python tools/oracle/measure_loss.py OUT.json
"""
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import memoracle as M  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(HERE))
EXTRA = os.path.join(ROOT, "presets", "validation", "oracle_extra.json")
IGNORE = -100


def _shift(labels):
    return F.pad(labels, (0, 1), value=IGNORE)[..., 1:].reshape(-1)


def loss_compute(logits, labels, vocab_size, **_):
    return F.cross_entropy(logits.reshape(-1, vocab_size), _shift(labels), ignore_index=IGNORE)


def loss_compute_chunked(logits, labels, vocab_size, chunk_size=128, **_):
    flat, targets = logits.reshape(-1, vocab_size), _shift(labels)
    losses = [F.cross_entropy(lc, tc, ignore_index=IGNORE, reduction="none")
              for lc, tc in zip(flat.split(chunk_size), targets.split(chunk_size))]
    return torch.cat(losses).sum() / (targets != IGNORE).sum()


def loss_fp32_chunked(logits, labels, vocab_size, num_chunks=8, **_):
    flat, targets = logits.reshape(-1, vocab_size), _shift(labels)
    total = sum(F.cross_entropy(lc.float(), tc, ignore_index=IGNORE, reduction="sum")
                for lc, tc in zip(flat.chunk(num_chunks), targets.chunk(num_chunks)))
    return total / (targets != IGNORE).sum()


LOSSES = {"compute": loss_compute, "compute-chunked": loss_compute_chunked, "fp32-chunked": loss_fp32_chunked}
LORA = {"r": 16, "alpha": 32, "targets": "all-linear"}
CASES = [(name, split, loss, dict(batch=b, seq=s, grad_ckpt=gc, **({"lora": LORA} if lora else {})))
         for name, split, b, s in (("Llama-tiny-4L-512", "fit", 2, 1024), ("Qwen2.5-0.5B", "holdout", 1, 2048))
         for loss in LOSSES for gc, lora in ((False, False), (True, False), (False, True))]


def main(out_path):
    configs = {c["config_name"]: c["config"] for c in json.load(open(EXTRA))["cases"]}
    build = M.build_model
    recs, t0 = [], time.time()
    for name, split, loss, s in CASES:
        def build_with_loss(cfg, dtype, attn, device="cpu", loss=loss):
            model = build(cfg, dtype, attn, device)
            model.loss_function = LOSSES[loss]
            return model
        M.build_model = build_with_loss
        setting = dict(mode="train", precision="bf16", attn="sdpa", optim="fused", loss=loss, **s)
        r = M.run_case(configs[name], use_memtracker=False, **{k: v for k, v in setting.items() if k != "loss"})
        tail = f"/lora{LORA['r']}-{LORA['targets']}" if s.get("lora") else ""
        cid = (f"{name}/train/bf16/sdpa/b{s['batch']}/s{s['seq']}/{'gc' if s['grad_ckpt'] else 'nogc'}/fused"
               f"{tail}/loss-{loss}")
        recs.append(dict(id=cid, config_name=name, split=split, config=configs[name],
                         workload="lora" if s.get("lora") else "full", setting=setting, peak_bytes=r["peak_bytes"],
                         first_step_peak_bytes=r["first_step_peak_bytes"],
                         steady_peak_breakdown=r["steady_peak_breakdown"], steady_peak_phase=r["steady_peak_phase"],
                         steady_peak_op=r["steady_peak_op"], params=r["params"],
                         trainable_params=r["trainable_params"],
                         notes=f"model.loss_function replaced by {LOSSES[loss].__name__} (this script)"))
        print(f"{cid:90s} {r['peak_bytes'] / 2**30:8.4f} GiB {r['steady_peak_op']} {r['seconds']}s", flush=True)
        json.dump(dict(cases=recs, seconds=round(time.time() - t0, 1),
                       versions=dict(torch=torch.__version__, transformers=__import__("transformers").__version__,
                                     peft=__import__("peft").__version__)),
                  open(out_path, "w"), indent=1)
    M.build_model = build


if __name__ == "__main__":
    main(sys.argv[1])
