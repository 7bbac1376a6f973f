#!/usr/bin/env python
"""Peaks of torch's pipeline parallelism (torch.distributed.pipelining: PipelineStage and Schedule1F1B, as torchtitan
steps it, return_outputs=False) on a fake process group: every stage of the pipeline, one rank at a time in this
process, with fake tensors (memoracle.run_pp_rank). The model split evenly by decoder layers (the embedding on the
first stage, the final norm and the LM head on the last), transformers' own loss, pure bf16, fused AdamW over each
stage's parameters, two steps of `micro_batches` micro-batches; with an FSDP2 world, each stage sharded over its
data-parallel GPUs as torchtitan shards it under a pipeline. A record is the busiest stage's peak (what a planner buys
for: every GPU of the pipeline is the same), with every stage's peak beside it.

    /tmp/ovenv/bin/python tools/oracle/measure_pp.py OUT.json [fit|holdout|middle]
"""
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import memoracle  # noqa: E402
import oracle_configs as C  # noqa: E402
from measure_fsdp2 import LLAMA_1024, LLAMA_7B_4L_V512  # noqa: E402  (the FSDP2 probes' shapes)
from measure_tp import LLAMA_1B_UNTIED, QWEN_7B_4L_V512  # noqa: E402

# (config name, config, stages, micro-batches, batch, length, checkpointing). Fit: the shapes the pipeline terms were
# read from (the first stage's micro-batches in flight, its layer's backward, the last stage's loss, torch's buffers
# and kept outputs); held out: shapes measured after the terms were written. Micro-batches below, at and above the
# stages; small and 128k vocabularies (the last stage's loss against the first stage's activations).
FIT = ([("Llama-tiny-4L-512", C.LLAMA_TINY, 2, 4, 2, 512, False)]
       + [("Llama-tiny-4L-512", C.LLAMA_TINY, 4, 8, 2, 512, gc) for gc in (False, True)]
       + [("Llama-tiny-4L-1024", LLAMA_1024, 4, 4, 2, 512, False)]
       + [("Llama-2-7B-4L-v512", LLAMA_7B_4L_V512, pp, mb, 1, 2048, gc)
          for pp, mb, gc in ((4, 8, False), (2, 2, False), (2, 4, True))]
       + [("Qwen2.5-7B-4L-v512", QWEN_7B_4L_V512, 2, 8, 1, 2048, False)]
       + [("Llama-3.2-1B-untied", LLAMA_1B_UNTIED, 4, 4, 1, 2048, gc) for gc in (False, True)]
       # measured as held out, then read for a middle stage's terms (below)
       + [("Llama-2-7B-4L-v512", LLAMA_7B_4L_V512, 4, mb, 1, 2048, gc) for mb, gc in ((4, False), (16, True))])
HOLDOUT = ([("Qwen2.5-0.5B", C.QWEN2_5_0_5B, 4, 8, 1, 2048, False), ("Qwen2.5-0.5B", C.QWEN2_5_0_5B, 2, 4, 1, 2048, True)]
           + [("Llama-tiny-4L-1024", LLAMA_1024, 2, 3, 2, 1024, False)]
           + [("Qwen2.5-7B-4L-v512", QWEN_7B_4L_V512, 4, 4, 1, 2048, True)]
           + [("Llama-3.2-1B-untied", LLAMA_1B_UNTIED, pp, 8, 1, seq, False) for pp, seq in ((2, 4096), (8, 2048))])
# A middle stage (torch keeps receive buffers in both directions), written after the two 4-stage Llama-2-7B-layer
# records at the end of FIT (4 and 16 micro-batches, measured as held out) had shown it; these were measured after the
# middle stage's terms were written (held out): many micro-batches on 4 and 8 stages, with and without checkpointing.
MIDDLE_HOLDOUT = ([("Qwen2.5-7B-4L-v512", QWEN_7B_4L_V512, 4, 12, 1, 2048, True),
                   ("Llama-2-7B-4L-v512", LLAMA_7B_4L_V512, 4, 8, 1, 2048, True),
                   ("Llama-tiny-4L-1024", LLAMA_1024, 4, 16, 2, 512, False),
                   ("Llama-3.2-1B-untied", LLAMA_1B_UNTIED, 4, 16, 1, 2048, True),
                   ("Qwen2.5-0.5B", C.QWEN2_5_0_5B, 4, 16, 1, 2048, True),
                   ("Llama-3.2-1B-untied", LLAMA_1B_UNTIED, 8, 32, 1, 2048, True)])
# FSDP2 over each stage's data-parallel GPUs, as torchtitan runs it under a pipeline: (..., checkpointing, FSDP2 world).
# Fit: the shapes the FSDP2-under-a-pipeline terms were read from; held out: measured after they were written.
FSDP_FIT = ([("Llama-2-7B-4L-v512", LLAMA_7B_4L_V512, 2, 4, 1, 2048, False, w) for w in (4, 8)]
            + [("Llama-tiny-4L-512", C.LLAMA_TINY, 2, 8, 2, 512, False, 4),
               ("Llama-2-7B-4L-v512", LLAMA_7B_4L_V512, 4, 8, 1, 2048, True, 2),
               ("Llama-3.2-1B-untied", LLAMA_1B_UNTIED, 4, 4, 1, 2048, False, 2)])
FSDP_HOLDOUT = [("Qwen2.5-7B-4L-v512", QWEN_7B_4L_V512, 2, 8, 1, 2048, False, 2),
                ("Llama-tiny-4L-1024", LLAMA_1024, 4, 4, 2, 512, False, 2),
                ("Llama-3.2-1B-untied", LLAMA_1B_UNTIED, 2, 4, 1, 2048, True, 4),
                ("Llama-2-7B-4L-v512", LLAMA_7B_4L_V512, 4, 4, 1, 2048, False, 2),
                ("Qwen2.5-0.5B", C.QWEN2_5_0_5B, 2, 4, 1, 2048, False, 2)]
FSDP_MIDDLE_HOLDOUT = [("Llama-2-7B-4L-v512", LLAMA_7B_4L_V512, 4, 16, 1, 2048, True, 4),
                       ("Qwen2.5-7B-4L-v512", QWEN_7B_4L_V512, 4, 16, 1, 2048, False, 2)]


def measure(split, name, config, stages, micro_batches, batch, seq, grad_ckpt, fsdp_world=0, note=""):
    started = time.time()
    ranks = [memoracle.run_pp_rank(config, pp_world=stages, pp_rank=rank, micro_batches=micro_batches, batch=batch,
                                   seq=seq, grad_ckpt=grad_ckpt, fsdp_world=fsdp_world) for rank in range(stages)]
    busiest = max(ranks, key=lambda r: r["peak_bytes"])
    # the model's parameters: a tied embedding is held by the first stage and, as its LM head, by the last
    params = sum(r["params"] for r in ranks) - (config["vocab_size"] * config["hidden_size"]
                                                if config.get("tie_word_embeddings") else 0)
    setting = {"mode": "train", "precision": "bf16", "attn": "sdpa", "batch": batch, "seq": seq,
               "grad_ckpt": grad_ckpt, "optim": "fused", "pp_world": stages, "grad_accum": micro_batches,
               **({"fsdp_world": fsdp_world} if fsdp_world else {})}
    rec = dict(id=f"{name}/train/bf16/sdpa/b{batch}/s{seq}/{'gc' if grad_ckpt else 'nogc'}/fused/pp{stages}-mb{micro_batches}"
                  + (f"-fsdp2-{fsdp_world}" if fsdp_world else ""),
               config_name=name, split=split, config=config, workload="full", setting=setting,
               peak_bytes=busiest["peak_bytes"], first_step_peak_bytes=busiest["first_step_peak_bytes"],
               busiest_stage=busiest["pp_rank"], stage_peak_bytes=[r["peak_bytes"] for r in ranks],
               params=params, trainable_params=params, stage_params=[r["params"] for r in ranks],
               steady_peak_breakdown=busiest["steady_peak_breakdown"], peak_phase=busiest["steps"][-1]["peak_phase"],
               peak_op=busiest["steps"][-1]["peak_op"],
               notes="measure_pp: every stage of torch's pipeline parallelism (Schedule1F1B) on a fake process group"
                     + (f", FSDP2 over {fsdp_world} GPUs per stage (reshard_after_forward off, as torchtitan)"
                        if fsdp_world else "") + "; peak_bytes is the busiest stage's" + note)
    print(rec["id"], rec["peak_bytes"], rec["stage_peak_bytes"], rec["peak_phase"], rec["peak_op"],
          round(time.time() - started, 1), flush=True)
    return rec


def main(out_path, split):
    if split == "middle":  # held out, and says so: tests/test_oracle_arch.py selects these by their note
        cases, split, note = (MIDDLE_HOLDOUT + FSDP_MIDDLE_HOLDOUT, "holdout",
                              "; measured after the middle stage's terms were written (held out)")
    else:
        cases, note = {"fit": FIT + FSDP_FIT, "holdout": HOLDOUT + FSDP_HOLDOUT}[split], ""
    json.dump([measure(split, *case, note=note) for case in cases], open(out_path, "w"), indent=1)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else "fit")
