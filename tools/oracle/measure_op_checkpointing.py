#!/usr/bin/env python
"""torchtitan's per-op selective activation checkpointing (selective_ac_option 'op': memoracle.op_sac_context) on
transformers' decoder layers, alone and on one rank of FSDP2 over a fake process group: what each layer keeps (its
input, the attention kernel's outputs, every other plain matrix multiplication's output) and the peak.

Fit: the probe the term (terms.op_layer_saved_per_token) was written against, Llama 3 8B's layers on one GPU, whose
end-of-forward memory grew by 55,424 bytes per token per layer over full checkpointing's, the term's count exactly.
Held out (measured after the term was written): layers with biases on q, k, v (Qwen2.5: aten.addmm, which the
policy neither keeps nor counts), Phi-3's fused projections, GPT-2 (a bias on every linear layer), Llama 3.2 1B's
tied head, under FSDP2 in bf16 and in its mixed precision; Mistral 7B's layers on one GPU.

    /tmp/ovenv/bin/python tools/oracle/measure_op_checkpointing.py OUT.json [baselines|fsdp2]
"""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import oracle_configs as C  # noqa: E402
import records as R  # noqa: E402

LLAMA3_8B_4L_V512 = dict(C.LLAMA_3_8B, num_hidden_layers=4, vocab_size=512)
QWEN_7B_4L_V512 = dict(C.QWEN2_5_7B, num_hidden_layers=4, vocab_size=512)
# GPT-2 without its dropouts: the oracle runs attention with dropout through SDPA's math kernel (its CUDA emulation's
# FlashAttention takes no dropout), which per-op checkpointing does not keep, where a GPU's FlashAttention-2 would
GPT2_NO_DROPOUT = dict(C.GPT2_124M, attn_pdrop=0.0, resid_pdrop=0.0, embd_pdrop=0.0)
# (split, precision, (config name, config, world, batch, length))
CASES = [("fit", "bf16", ("Llama-3-8B-4L-v512", LLAMA3_8B_4L_V512, 0, 1, 4096)),
         ("holdout", "bf16", ("Llama-3-8B-4L-v512", LLAMA3_8B_4L_V512, 2, 1, 2048)),
         ("holdout", "fsdp-mixed", ("Llama-3-8B-4L-v512", LLAMA3_8B_4L_V512, 4, 2, 2048)),
         ("holdout", "bf16", ("Llama-3.2-1B", C.LLAMA_3_2_1B, 8, 1, 2048)),
         ("holdout", "fsdp-mixed", ("Llama-3.2-1B", C.LLAMA_3_2_1B, 2, 2, 1024)),
         ("holdout", "bf16", ("Qwen2.5-7B-4L-v512", QWEN_7B_4L_V512, 2, 1, 2048)),
         ("holdout", "bf16", ("Qwen2.5-0.5B", C.QWEN2_5_0_5B, 4, 2, 1024)),
         ("holdout", "bf16", ("Phi-3-small-4L", C.PHI3_SMALL_4L, 2, 2, 1024)),
         ("holdout", "bf16", ("GPT-2-no-dropout", GPT2_NO_DROPOUT, 0, 4, 1024)),
         ("holdout", "bf16", ("Mistral-7B-v0.1", dict(C.MISTRAL_7B_V01, num_hidden_layers=4, vocab_size=512), 0, 1,
                              2048))]


OP_NOTE = "measure_op_checkpointing: torchtitan's per-op selective checkpointing on transformers' layers"
HELD_OUT = "; measured after the term was written (held out)"
# Measured the same day, held out, as baselines of two per-op shapes: FSDP2 ranks without checkpointing and with full
# checkpointing (measure_fsdp2's protocol), and one more per-op rank ((precision, config name, config, world, batch,
# length, checkpointing)): `measure_op_checkpointing.py OUT.json baselines`
BASELINES = [(p, "Llama-3-8B-4L-v512", LLAMA3_8B_4L_V512, 4, 2, 2048, gc) for gc in (True, False)
             for p in ("fsdp-mixed", "bf16")] + [(p, "Phi-3-small-4L", C.PHI3_SMALL_4L, 2, 2, 1024, gc)
                                                 for gc in (True, False)
                                                 for p in ("bf16",)] + [
    ("bf16", "Llama-3-8B-4L-v512", LLAMA3_8B_4L_V512, 4, 2, 2048, "op")]

# FSDP2's busiest decoder layer in backward (phase_fsdp_layer_backward) covers per-op checkpointing since Phi-3's FSDP2
# record (+5.51 % before) was traced (fit since): per-op FSDP2 ranks measured once that was written, held out, two of
# them long enough for the last layer to be the busiest ((precision, config name, config, world, batch, length)):
# `measure_op_checkpointing.py OUT.json fsdp2`
FSDP2_RANKS = [("bf16", "Mistral-7B-4L-v512", dict(C.MISTRAL_7B_V01, num_hidden_layers=4, vocab_size=512), 4, 1, 2048),
               ("fsdp-mixed", "Qwen2.5-7B-4L-v512", QWEN_7B_4L_V512, 2, 2, 2048),
               ("bf16", "Llama-3-8B-4L-v512", LLAMA3_8B_4L_V512, 8, 1, 4096),
               ("bf16", "Phi-3-small-4L", C.PHI3_SMALL_4L, 4, 4, 1024),
               ("fsdp-mixed", "Llama-2-7B-6L-v512", dict(C.LLAMA_2_7B, num_hidden_layers=6, vocab_size=512), 4, 2, 1024),
               ("bf16", "Llama-2-7B-4L-v512", dict(C.LLAMA_2_7B, num_hidden_layers=4, vocab_size=512), 2, 1, 4096),
               ("fsdp-mixed", "Llama-3-8B-4L-v512", LLAMA3_8B_4L_V512, 8, 4, 1024),
               ("bf16", "Qwen2.5-7B-4L-v512", QWEN_7B_4L_V512, 2, 1, 8192)]


def fsdp2_ranks(out_path):
    out = []
    for precision, name, cfg, world, batch, seq in FSDP2_RANKS:
        note = OP_NOTE + "; measured after FSDP2's busiest decoder layer in backward covered it (held out)"
        out.append(R.measure_rank(name, cfg, "holdout", precision, batch, seq, "op", f"fsdp2-{world}", note,
                                  fsdp_world=world))
        json.dump(out, open(out_path, "w"), indent=1)


def baselines(out_path):
    out = []
    for precision, name, cfg, world, batch, seq, gc in BASELINES:
        note = (OP_NOTE + HELD_OUT if gc == "op" else
                "measure_fsdp2: one rank of FSDP2 on a fake process group; measured 2026-12-07 as the baselines (no "
                "checkpointing, full checkpointing) of torchtitan's per-op checkpointing records, after every FSDP2 "
                "term was written (held out)")
        out.append(R.measure_rank(name, cfg, "holdout", precision, batch, seq, gc, f"fsdp2-{world}", note,
                                  fsdp_world=world))
        json.dump(out, open(out_path, "w"), indent=1)


def main(out_path):
    out = []
    for split, precision, (name, cfg, world, batch, seq) in CASES:
        note = OP_NOTE + ("" if split == "fit" else HELD_OUT)
        parallel = dict(fsdp_world=world) if world else {}
        rec = R.measure_rank(name, cfg, split, precision, batch, seq, "op", f"fsdp2-{world}" if world else "1gpu",
                             note, **parallel)
        out.append(rec)
        json.dump(out, open(out_path, "w"), indent=1)


if __name__ == "__main__":
    {"baselines": baselines, "fsdp2": fsdp2_ranks}.get(sys.argv[2] if sys.argv[2:] else "", main)(sys.argv[1])
