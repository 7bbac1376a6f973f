#!/usr/bin/env python
"""Per-rank peaks of torch's context parallelism (torch.distributed.tensor.experimental.context_parallel: each
sequence split into 2 × cp load-balanced chunks, ring attention over the ranks) under FSDP2 over the same ranks, as
torchtitan's dp_shard_cp mesh shards, on a fake process group: one rank, in this process, with fake tensors
(memoracle.run_case's cp_world). Pure bf16, fused AdamW, two steps.

    /tmp/ovenv/bin/python tools/oracle/measure_cp.py OUT.json [fit|holdout]
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


def main(out_path, split):
    out = [R.measure_rank(name, cfg, split, "bf16", batch, seq, gc, f"cp{cp}-fsdp2",
                          "measure_cp: one rank of torch's context parallelism under FSDP2 over the same ranks on a "
                          "fake process group", cp_world=cp)
           for name, cfg, cp, batch, seq, gc in {"fit": FIT, "holdout": HOLDOUT}[split]]
    json.dump(out, open(out_path, "w"), indent=1)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else "fit")
