#!/usr/bin/env python
"""LoRA with full checkpointing at long sequences: the first recomputed layer's phase (every layer's input held, the
last layer rebuilt) counts the rebuilt layer as recompute_ratio_frozen (1.35, fitted at 2,048 tokens:
measure_recompute.py) × its saved bytes. Measured 2026-12-07 to check that ratio past its fit, held out: fp32 all-linear
adapters at 16,384 tokens -0.52 %, q/v adapters at 8,192 -6.76 % (a known miss: the MLP's backward does not scale with
what LoRA saves), bf16 all-linear adapters with dropout at 2 x 8,192 +3.56 %. The trace of the fp32 all-linear shape
(trace_backward.py's machinery with these adapters) peaks in the rebuilt forward, at the gate/up adapters' fp32
outputs: what a model of the rebuilt LoRA layer by its parts needs.

    /tmp/ovenv/bin/python tools/oracle/measure_lora_long.py OUT.json
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import measure_recompute as MR  # noqa: E402
import oracle_configs as C  # noqa: E402

MR.CASES = [  # (config name, config, split, batch, seq, lora)
    (*MR.small(C.LLAMA_3_8B, "Llama-3-8B"), "holdout", 1, 16384, MR.lora(16)),
    (*MR.small(C.QWEN2_5_7B, "Qwen2.5-7B"), "holdout", 1, 8192, MR.lora(16, "q_proj,v_proj")),
    (*MR.small(C.LLAMA_2_7B, "Llama-2-7B"), "holdout", 2, 8192, MR.lora(16, dropout=0.1, adapter_dtype="model")),
]
MR.NOTE = "measure_lora_long: LoRA with full checkpointing past the frozen ratio's 2,048 tokens; held out"

if __name__ == "__main__":
    MR.main(sys.argv[1])
