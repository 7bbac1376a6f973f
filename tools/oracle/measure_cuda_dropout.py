#!/usr/bin/env python
"""Re-measure the dropout cases with dropout dispatched as on a CUDA GPU.

Why: the oracle runs on the fake *CPU* device, and two dispatch decisions differ from a CUDA GPU
when dropout is on:
- F.dropout: at::dropout takes the fused native_dropout kernel only for CUDA (and XPU/lazy)
  inputs (is_fused_kernel_acceptable); on CPU it builds a noise tensor of the input's dtype and
  multiplies, so a bf16 noise tensor (2 bytes per element) is saved for backward where a GPU saves
  native_dropout's bool mask (1 byte per element).
- scaled_dot_product_attention with dropout_p > 0: memoracle.cuda_like_sdpa sends it to the math
  kernel (fp32 S x S probabilities, mask and dropped copy saved), but PyTorch's CUDA dispatcher has
  no dropout constraint for FlashAttention-2 (sdp_utils.cpp use_flash_attention), which regenerates
  the mask in backward from the saved Philox seed/offset: nothing S x S is saved.
This script patches both to the CUDA behaviour and re-runs memoracle.run_case on the same configs and
settings as the dropout records of presets/validation/oracle_arch.json and oracle_extra.json (GPT-2).

    /tmp/ovenv/bin/python tools/oracle/measure_cuda_dropout.py OUT.json

Every record keeps the original's id with the suffix "/cuda-dropout", its config, setting (plus
"dropout_dispatch": "cuda") and split, so the two measurements sit side by side.
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
ARCH = os.path.join(ROOT, "presets", "validation", "oracle_arch.json")
EXTRA = os.path.join(ROOT, "presets", "validation", "oracle_extra.json")
_ORIG_DROPOUT = F.dropout


def cuda_like_dropout(input, p=0.5, training=True, inplace=False):
    """at::dropout as dispatched for a CUDA tensor: the fused native_dropout (bool mask saved)."""
    if training and 0.0 < p < 1.0 and input.numel() > 0:
        out = torch.native_dropout(input, p, True)[0]
        if inplace:
            with torch.no_grad():
                input.copy_(out)
            return input
        return out
    return _ORIG_DROPOUT(input, p, training, inplace)


class _FlashDropoutEmu(torch.autograd.Function):
    """memoracle._FlashEmu with the dropout probability passed to FlashAttention-2."""

    @staticmethod
    def forward(ctx, q, k, v, is_causal, scale, dropout_p):
        out, lse, _cq, _ck, mq, mk, seed, off, _dbg = torch.ops.aten._scaled_dot_product_flash_attention(
            q, k, v, dropout_p, is_causal, False, scale=scale)
        ctx.save_for_backward(q, k, v, out, lse, seed, off)
        ctx.is_causal, ctx.scale, ctx.mq, ctx.mk, ctx.dropout_p = is_causal, scale, mq, mk, dropout_p
        return out

    @staticmethod
    def backward(ctx, gout):
        q, k, v, out, lse, seed, off = ctx.saved_tensors
        B, Hq, Sq, D = q.shape
        Hk, Sk = k.shape[1], k.shape[2]
        ws = [torch.empty((B, Hq, M._rnd(Sq, 128)), dtype=torch.float32, device=q.device),
              torch.empty((B, M._rnd(Sq, 128), Hq, M._rnd(D, 32 if D <= 128 else 64)),
                          dtype=torch.float32, device=q.device)]
        if Hk != Hq:
            ws += [torch.empty((B, Sk, Hq, D), dtype=q.dtype, device=q.device),
                   torch.empty((B, Sk, Hq, D), dtype=q.dtype, device=q.device)]
        dq, dk, dv = torch.ops.aten._scaled_dot_product_flash_attention_backward(
            gout, q, k, v, out, lse, None, None, ctx.mq, ctx.mk, ctx.dropout_p, ctx.is_causal,
            seed, off, scale=ctx.scale)
        del ws
        return dq, dk, dv, None, None, None


_ORIG_CUDA_LIKE_SDPA = M.cuda_like_sdpa


def cuda_like_sdpa_with_dropout(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                enable_gqa=False):
    """memoracle.cuda_like_sdpa, except that dropout no longer bars FlashAttention-2."""
    if torch.is_autocast_enabled("cpu"):  # as memoracle.cuda_like_sdpa: autocast casts first, then routes
        dt = torch.get_autocast_dtype("cpu")
        query, key, value = (t.to(dt) if t.dtype == torch.float32 else t for t in (query, key, value))
    D = query.shape[-1]
    Hq, Hk = query.shape[-3], key.shape[-3]
    Sq, Sk = query.shape[-2], key.shape[-2]
    if (dropout_p > 0.0 and attn_mask is None and query.dtype in (torch.bfloat16, torch.float16)
            and D == value.shape[-1] and D <= 256 and (Hq == Hk or enable_gqa)
            and not (is_causal and Sq != Sk) and query.dim() == 4):
        M.SDPA_LOG.append("flash")
        if torch.is_grad_enabled() and (query.requires_grad or key.requires_grad or value.requires_grad):
            return _FlashDropoutEmu.apply(query, key, value, is_causal, scale, dropout_p)
        return torch.ops.aten._scaled_dot_product_flash_attention(
            query, key, value, dropout_p, is_causal, False, scale=scale)[0]
    return _ORIG_CUDA_LIKE_SDPA(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa)


def patch():
    F.dropout = cuda_like_dropout
    torch.nn.functional.dropout = cuda_like_dropout
    M.cuda_like_sdpa = cuda_like_sdpa_with_dropout  # emulate_cuda_sdpa installs it by this name


def dropout_cases():
    """(source file, record) for every training record whose model runs with dropout > 0."""
    arch = json.load(open(ARCH))["cases"]
    extra = json.load(open(EXTRA))["cases"]
    out = [("oracle_arch.json", c) for c in arch if c["setting"].get("dropout")
           and any(v > 0 for v in c["setting"]["dropout"].values())]
    # oracle_extra's GPT-2 (no pdrop keys: GPT2Config's defaults 0.1); its inference cases run in eval mode.
    out += [("oracle_extra.json", c) for c in extra if c["config_name"] == "GPT-2" and c["setting"]["mode"] == "train"]
    return out


def kwargs(setting):
    kw = {k: setting[k] for k in ("mode", "precision", "attn", "batch", "seq", "grad_ckpt") if k in setting}
    kw["optim"] = setting.get("optim", "fused")
    if setting.get("lora"):
        kw["lora"] = setting["lora"]
    return kw


def main(out_path):
    patch()
    recs, t0 = [], time.time()
    for source, c in dropout_cases():
        r = M.run_case(c["config"], use_memtracker=False, **kwargs(c["setting"]))
        setting = dict(c["setting"], dropout_dispatch="cuda")
        if source == "oracle_extra.json":
            setting["dropout"] = {"attn_pdrop": 0.1, "resid_pdrop": 0.1, "embd_pdrop": 0.1}
        rec = dict(id=c["id"] + "/cuda-dropout", config_name=c["config_name"],
                   split=c.get("split", "fit"), remeasures=f"{source}:{c['id']}", config=c["config"],
                   workload=c["workload"], setting=setting, peak_bytes=r["peak_bytes"],
                   first_step_peak_bytes=r["first_step_peak_bytes"],
                   steady_peak_breakdown=r["steady_peak_breakdown"], steady_peak_phase=r["steady_peak_phase"],
                   steady_peak_op=r["steady_peak_op"], params=r["params"], trainable_params=r["trainable_params"],
                   notes=f"dropout dispatched as on CUDA (native_dropout bool masks; SDPA kernels chosen: "
                         f"{r['sdpa_kernels'] or ['none (eager)']}); the CPU-dispatch measurement is "
                         f"{source}:{c['id']}")
        recs.append(rec)
        print(f"{rec['id']:75s} {r['peak_bytes'] / 2**30:8.3f} GiB (was {c['peak_bytes'] / 2**30:8.3f}) "
              f"{r['sdpa_kernels']} {r['seconds']}s", flush=True)
        json.dump(dict(cases=recs, seconds=round(time.time() - t0, 1),
                       versions=dict(torch=torch.__version__, transformers=__import__("transformers").__version__)),
                  open(out_path, "w"), indent=1)


if __name__ == "__main__":
    main(sys.argv[1])
