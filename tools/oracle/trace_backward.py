#!/usr/bin/env python
"""Where a training step's backward peaks: the tracker's live bytes by category (saved activations, backward
temporaries, gradients, parameters) at each operation of the last step's backward, printed when a category moves by
more than a threshold, and at the peak. The traces of FSDP2's backward read with it (2026-12-07) set
terms.phase_fsdp_layer_backward: which decoder layer is busiest, and what it holds.

    /tmp/ovenv/bin/python tools/oracle/trace_backward.py SHAPE WORLD BATCH SEQ none|full|op PRECISION [MiB [TP]]

SHAPE: llama-2-7b, llama-3-8b, qwen2.5-7b (their layers, 4 of them, vocabulary 512) or phi-3-small (oracle_configs'
PHI3_SMALL_4L); WORLD: FSDP2 ranks (0: one GPU); PRECISION: bf16, amp or fsdp-mixed; TP: tensor-parallel ranks
(torchtitan's plan, sequence parallel).
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import memoracle as M  # noqa: E402
import oracle_configs as C  # noqa: E402

SHAPES = {"llama-2-7b": dict(C.LLAMA_2_7B, num_hidden_layers=4, vocab_size=512),
          "llama-3-8b": dict(C.LLAMA_3_8B, num_hidden_layers=4, vocab_size=512),
          "qwen2.5-7b": dict(C.QWEN2_5_7B, num_hidden_layers=4, vocab_size=512),
          "phi-3-small": C.PHI3_SMALL_4L}
MiB = 2 ** 20


def trace(shape, world, batch, seq, checkpointing, precision, step_mib=50.0, tp=1):
    log = []
    update_peak = M.LiveTracker._update_peak

    def logged(self, opname, live=None, snap=None):
        if self._phase == "bwd":
            log.append((opname, self.live if live is None else live, dict(self.by_cat)))
        return update_peak(self, opname, live, snap)

    M.LiveTracker._update_peak = logged
    try:
        result = M.run_case(SHAPES[shape], mode="train", precision=precision, attn="sdpa", batch=batch, seq=seq,
                            grad_ckpt={"none": False, "full": True, "op": "op"}[checkpointing],
                            use_memtracker=False, optim="fused", fsdp_world=world, tp_world=tp)
    finally:
        M.LiveTracker._update_peak = update_peak
    last_step = log[len(log) // 2:]  # two steps of equal length: the second is the steady one
    peak = max(last_step, key=lambda entry: entry[1])
    print(f"{shape}: peak {result['peak_bytes'] / MiB:.0f} MiB at {peak[0]}, by category (MiB):",
          {k: round(v / MiB) for k, v in peak[2].items()})
    previous = None
    for i, (op, live, by_cat) in enumerate(last_step):
        mib = {k: round(by_cat.get(k, 0) / MiB) for k in ("act", "bwd", "grad", "param")}
        key = tuple(v // step_mib for v in mib.values())
        if key != previous or live == peak[1]:
            print(f"{i:5d} {op:45s} live {live / MiB:7.0f}", " ".join(f"{k} {v:5d}" for k, v in mib.items()))
            previous = key


if __name__ == "__main__":
    shape, world, batch, seq, checkpointing, precision = sys.argv[1:7]
    trace(shape, int(world), int(batch), int(seq), checkpointing, precision,
          float(sys.argv[7]) if len(sys.argv) > 7 else 50.0, int(sys.argv[8]) if len(sys.argv) > 8 else 1)
