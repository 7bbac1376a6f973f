#!/usr/bin/env python
"""Every live activation or backward storage at a step's peak within one phase (fwd or bwd), with the op that made
it, its shape and dtype, in the order they were made: what a trace's category totals (trace_backward.py) leave open.
Read with it (2026-12-07): a LoRA layer rebuilt under full checkpointing peaks at the up projection's adapter adding
its output (the base output, the adapter's scaled fp32 output and the fp32 sum, beside the saved tensors so far, the
residual stream and the MLP's input), which is why the rebuilt layer's parts are a floor under LoRA's ratio and do not
replace it for all-linear adapters (oracle_arch.json's protocol 'lora_long').

    /tmp/ovenv/bin/python tools/oracle/dump_live.py SHAPE LAYERS SEQ none|full|op fwd|bwd [TARGETS [fp32|model]]

SHAPE: llama-2-7b, llama-3-8b, qwen2.5-7b, mistral-7b (their layers, vocabulary 512); TARGETS: LoRA's (all-linear or
a comma-separated list; none: full fine-tuning, the default); the last argument the adapters' dtype (default fp32).
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import torch  # noqa: E402
from torch.utils._pytree import tree_leaves  # noqa: E402

import measure_cuda_dropout as CD  # noqa: E402
import measure_lora_dropout as LD  # noqa: E402
import memoracle as M  # noqa: E402
import oracle_configs as C  # noqa: E402

SHAPES = {"llama-2-7b": C.LLAMA_2_7B, "llama-3-8b": C.LLAMA_3_8B, "qwen2.5-7b": C.QWEN2_5_7B,
          "mistral-7b": C.MISTRAL_7B_V01}
MiB = 2 ** 20


def dump(shape, layers, seq, checkpointing, phase, targets="none", adapter_dtype="fp32"):
    CD.patch()
    M.apply_lora = lambda model, lo: LD.apply_lora_with_dropout(model, lo) if lo else model
    config = dict(SHAPES[shape], num_hidden_layers=layers, vocab_size=512, tie_word_embeddings=False)
    lora = None if targets == "none" else dict(
        r=16, alpha=32, dropout=0.0, adapter_dtype=adapter_dtype,
        targets="all-linear" if targets == "all-linear" else targets.split(","))
    dispatch, update_peak = M.LiveTracker.__torch_dispatch__, M.LiveTracker._update_peak
    best = {"live": -1}

    def dispatched(self, func, types, args=(), kwargs=None):
        out = dispatch(self, func, types, args, kwargs)
        for t in tree_leaves(out):
            if isinstance(t, torch.Tensor):
                try:
                    rec = self.info.get(t.untyped_storage())
                except (NotImplementedError, RuntimeError):
                    continue
                if rec is not None and len(rec) == 4:  # first seen: the tracker's record carries where it came from
                    rec.append((str(func).replace("aten.", ""), tuple(t.shape), str(t.dtype).replace("torch.", ""),
                                self.n_ops))
        return out

    def logged(self, opname, live=None, snap=None):
        if self._phase == phase:
            live_now = self.live if live is None else live
            if live_now >= best["live"]:  # the last step's peak: steps repeat, the later one wins a tie
                best.update(live=live_now, op=opname, n=self.n_ops,
                            storages=[(rec[0], rec[1], rec[4] if len(rec) > 4 else None)
                                      for rec in list(self.info.values()) if not rec[3]])
        return update_peak(self, opname, live, snap)

    M.LiveTracker.__torch_dispatch__, M.LiveTracker._update_peak = dispatched, logged
    try:
        M.run_case(config, mode="train", precision="bf16", attn="sdpa", batch=1, seq=seq,
                   grad_ckpt={"none": False, "full": True, "op": "op"}[checkpointing], use_memtracker=False,
                   optim="fused", lora=lora)
    finally:
        M.LiveTracker.__torch_dispatch__, M.LiveTracker._update_peak = dispatch, update_peak
    print(f"{shape} x {layers}, {seq} tokens, {checkpointing}, LoRA {targets}: the {phase} peak {best['live'] / MiB:.0f} "
          f"MiB at {best['op']} (op {best['n']})")
    for size, category, origin in sorted(best["storages"], key=lambda s: (s[2] or ("", (), "", -1))[3]):
        if category in ("act", "bwd") and size >= MiB:
            print(f"{category} {size / MiB:9.1f} MiB  {origin}")


if __name__ == "__main__":
    dump(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5], *sys.argv[6:8])
