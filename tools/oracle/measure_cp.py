#!/usr/bin/env python
"""Per-rank peaks of torch's context parallelism (torch.distributed.tensor.experimental.context_parallel: each
sequence split into 2 × cp load-balanced chunks, ring attention over the ranks) under FSDP2 over the same ranks, as
torchtitan's dp_shard_cp mesh shards, on a fake process group: one rank, in this process, with fake tensors
(memoracle.run_case's cp_world). Pure bf16, fused AdamW, two steps.

    /tmp/ovenv/bin/python tools/oracle/measure_cp.py OUT.json [fit|holdout|root|tied]
"""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import oracle_configs as C  # noqa: E402
import records as R  # noqa: E402
from measure_tp import LLAMA_1B_UNTIED  # noqa: E402

# (config name, config, cp, batch, length, checkpointing). No term was read from these: every record is held out.
FIT = []
HOLDOUT = ([("Llama-tiny-4L-512", C.LLAMA_TINY, cp, 1, 2048, gc) for cp in (2, 4) for gc in (False, True)]
           + [("Llama-3.2-1B-untied", LLAMA_1B_UNTIED, cp, 1, s, gc) for cp, s in ((2, 4096), (4, 8192))
            for gc in (False, True)]
           + [("Qwen2.5-0.5B", C.QWEN2_5_0_5B, 2, 1, 4096, gc) for gc in (False, True)]
           + [("Llama-tiny-4L-512", C.LLAMA_TINY, 8, 2, 4096, False)])
# FSDP2's root unit reduced at the end of backward (fsdp_root_reduce_bytes, rewritten after the Llama-3.2-1B-untied
# cp2 s4096 record above missed at -5.43 %): checkpointed shapes whose end of backward may peak, measured once the term
# was written, held out.
ROOT = [("Llama-3.2-1B-untied", LLAMA_1B_UNTIED, 2, 1, 2048, True), ("Qwen2.5-0.5B", C.QWEN2_5_0_5B, 2, 1, 2048, True)]
# a tied embedding's end of backward (fsdp_tied_embedding_bytes), measured once that term was written, held out
TIED = [("Qwen2.5-0.5B", C.QWEN2_5_0_5B, 2, 1, 512, True)]


def main(out_path, split):
    note = ("measure_cp: one rank of torch's context parallelism under FSDP2 over the same ranks on a fake process "
            "group")
    after = {"root": "the root unit's reduce", "tied": "the tied embedding's end of backward"}
    if split in after:  # held out, and says so
        note += f"; measured after {after[split]} was written (held out)"
    out = [R.measure_rank(name, cfg, "holdout" if split in after else split, "bf16", batch, seq, gc, f"cp{cp}-fsdp2",
                          note, cp_world=cp)
           for name, cfg, cp, batch, seq, gc in {"fit": FIT, "holdout": HOLDOUT, "root": ROOT, "tied": TIED}[split]]
    json.dump(out, open(out_path, "w"), indent=1)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else "fit")
