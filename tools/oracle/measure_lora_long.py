#!/usr/bin/env python
"""LoRA with full checkpointing at long sequences: the first recomputed layer's phase (every layer's input held, the
last layer rebuilt) counts the rebuilt layer as recompute_ratio_frozen (1.35, fitted at 2,048 tokens:
measure_recompute.py) × its saved bytes. Measured 2026-12-07 past that fit: fp32 all-linear adapters at 16,384 tokens
-0.52 %, bf16 all-linear adapters with dropout at 2 x 8,192 +3.56 % (held out), q/v adapters at 8,192 -6.76 %: with
adapters on the attention only, the layer saves little beyond the frozen base's tensors while the MLP's backward still
makes three intermediate-wide tensors. The rebuilt layer's parts became a floor under the ratio (that record fit since);
the four attention-adapter shapes after it were measured once it was written (held out). The trace of the fp32
all-linear shape (trace_backward.py's machinery with these adapters) peaks in the rebuilt forward, at the gate/up
adapters' fp32 outputs: what all-linear adapters would need before the parts could replace the ratio there.

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
    # fit: its -6.76 % made the rebuilt layer's parts a floor under the frozen ratio (rebuilt_layer_parts_known)
    (*MR.small(C.QWEN2_5_7B, "Qwen2.5-7B"), "fit", 1, 8192, MR.lora(16, "q_proj,v_proj")),
    (*MR.small(C.LLAMA_2_7B, "Llama-2-7B"), "holdout", 2, 8192, MR.lora(16, dropout=0.1, adapter_dtype="model")),
    # measured once the floor was written
    (*MR.small(C.LLAMA_3_8B, "Llama-3-8B"), "holdout", 1, 16384, MR.lora(16, "q_proj,v_proj")),
    (*MR.small(C.MISTRAL_7B_V01, "Mistral-7B"), "holdout", 1, 8192, MR.lora(16, "q_proj,v_proj", dropout=0.05)),
    (*MR.small(C.QWEN2_5_7B, "Qwen2.5-7B"), "holdout", 1, 8192, MR.lora(16, "q_proj,k_proj,v_proj,o_proj")),
    (*MR.small(C.LLAMA_2_7B, "Llama-2-7B"), "holdout", 2, 4096, MR.lora(16, "q_proj,v_proj", adapter_dtype="model")),
]
MR.NOTE = ("measure_lora_long: LoRA with full checkpointing past the frozen ratio's 2,048 tokens; held out, but for "
           "the one whose error made the rebuilt layer's parts a floor (fit)")

if __name__ == "__main__":
    MR.main(sys.argv[1])
