#!/usr/bin/env python
"""Per-rank peaks of PyTorch FSDP2 (fully_shard per decoder layer, then the model) on a fake process group:
one rank of a data-parallel world of 2 to 8, in this process, with fake tensors (memoracle.run_case's
fsdp_world). Pure bf16 (parameters, gradients and AdamW states), and FSDP2's mixed precision (fp32 parameters,
bf16 compute: 'fsdp-mixed'); fused AdamW, two steps.

    /tmp/ovenv/bin/python tools/oracle/measure_fsdp2.py OUT.json [fit|holdout|root|tied|prefetch|layer_backward|rebuilt_layer|positions]
"""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import oracle_configs as C  # noqa: E402
import records as R  # noqa: E402

LLAMA_1024 = dict(C.LLAMA_TINY, hidden_size=1024, intermediate_size=2816, num_attention_heads=16,
                  num_key_value_heads=16)
# (config name, config, world, batch, length, checkpointing)
# Llama-2-7B's layers with a 512-token vocabulary: the loss never peaks, the layers' backward does
LLAMA_7B_4L_V512 = dict(C.LLAMA_2_7B, num_hidden_layers=4, vocab_size=512)
FIT = ([("Llama-tiny-4L-1024", LLAMA_1024, w, 2, 512, gc) for w in (2, 4, 8) for gc in (False, True)]
       + [("Llama-2-7B-4L-v512", LLAMA_7B_4L_V512, w, 1, 2048, gc) for w in (2, 8) for gc in (False, True)])
HOLDOUT = ([("Llama-3.2-1B", C.LLAMA_3_2_1B, w, b, s, gc) for w in (2, 8) for b, s in ((1, 2048), (4, 512))
            for gc in (False, True)]
           + [("Qwen2.5-0.5B", C.QWEN2_5_0_5B, w, b, s, gc) for w in (4,) for b, s in ((2, 1024), (1, 4096))
              for gc in (False, True)]
           + [("Llama-tiny-4L-512", C.LLAMA_TINY, w, 4, 1024, False) for w in (2, 4)])
# FSDP2's mixed precision (fp32 parameters, bf16 compute): the probe shape fit, the others held out
MIXED_FIT = [("Llama-tiny-4L-1024", LLAMA_1024, 2, 2, 512, False)]
MIXED_HOLDOUT = ([("Llama-3.2-1B", C.LLAMA_3_2_1B, 8, 1, 2048, gc) for gc in (False, True)]
                 + [("Qwen2.5-0.5B", C.QWEN2_5_0_5B, 4, 2, 1024, False)]
                 + [("Llama-2-7B-4L-v512", LLAMA_7B_4L_V512, 2, 1, 2048, gc) for gc in (False, True)])
# FSDP2's root unit reduced at the end of backward (fsdp_root_reduce_bytes, rewritten after measure_cp's
# Llama-3.2-1B-untied cp2 s4096 record missed at -5.43 %): checkpointed shapes whose end of backward may peak, an
# untied 128k vocabulary and tied ones (precision, case), measured once the term was written. Two of the first five
# then missed and revised the term (fsdp-mixed untied +7.19 %: an fp32 gradient is the reduce's output itself; Qwen2.5-0.5B
# tied +2.55 %: a tied unit's gradient is freed once copied in): their records are fit; the last four were measured
# after the revision. The others are held out.
LLAMA_1B_UNTIED = dict(C.LLAMA_3_2_1B, tie_word_embeddings=False)
ROOT = ([("bf16", ("Llama-3.2-1B-untied", LLAMA_1B_UNTIED, w, 1, s, True)) for w, s in ((2, 1024), (4, 2048))]
        + [("fsdp-mixed", ("Llama-3.2-1B-untied", LLAMA_1B_UNTIED, 2, 1, 1024, True))]
        + [("bf16", ("Qwen2.5-0.5B", C.QWEN2_5_0_5B, 2, 1, 512, True)),
           ("bf16", ("Llama-3.2-1B", C.LLAMA_3_2_1B, 8, 1, 512, True))]
        + [("fsdp-mixed", ("Llama-3.2-1B-untied", LLAMA_1B_UNTIED, 4, 1, 1024, True)),
           ("fsdp-mixed", ("Qwen2.5-0.5B", C.QWEN2_5_0_5B, 2, 1, 512, True)),
           ("bf16", ("Llama-tiny-4L-512", C.LLAMA_TINY, 2, 2, 512, True)),
           ("fsdp-mixed", ("Llama-tiny-4L-512", C.LLAMA_TINY, 4, 2, 512, True))])
# The tied Llama-3.2-1B at 8 ranks in ROOT (-6.16 %) set the tied embedding's end of backward
# (fsdp_tied_embedding_bytes; fit since): tied shapes measured once that term was written, held out
TIED = [("bf16", ("Llama-3.2-1B", C.LLAMA_3_2_1B, 4, 1, 512, True)),
        ("fsdp-mixed", ("Llama-3.2-1B", C.LLAMA_3_2_1B, 8, 1, 512, True)),
        ("bf16", ("Qwen2.5-0.5B", C.QWEN2_5_0_5B, 8, 1, 256, True)),
        ("bf16", ("Llama-tiny-4L-512-tied", C.LLAMA_TINY_TIED, 2, 1, 256, True))]

# Late in backward: the second decoder layer from the front with the first gathered ahead (backward prefetch), and the
# shards of the root and of those two layers not made yet (fsdp_backward_unmade_bytes, written after the mixed-precision
# Llama-2-7B-wide record above missed at +6.36 % and the bf16 one at 8 ranks at -6.94 %): checkpointed shapes whose
# late backward may peak, measured once the term was written, held out (precision, case).
QWEN_7B_4L_V512 = dict(C.QWEN2_5_7B, num_hidden_layers=4, vocab_size=512)
LLAMA_7B_6L_V512 = dict(C.LLAMA_2_7B, num_hidden_layers=6, vocab_size=512)
LLAMA3_8B_4L_V512 = dict(C.LLAMA_3_8B, num_hidden_layers=4, vocab_size=512)
PREFETCH = [("bf16", ("Llama-2-7B-4L-v512", LLAMA_7B_4L_V512, 4, 1, 2048, True)),
            ("fsdp-mixed", ("Llama-2-7B-4L-v512", LLAMA_7B_4L_V512, 8, 1, 2048, True)),
            ("bf16", ("Qwen2.5-7B-4L-v512", QWEN_7B_4L_V512, 2, 1, 2048, True)),
            ("fsdp-mixed", ("Qwen2.5-7B-4L-v512", QWEN_7B_4L_V512, 4, 1, 4096, True)),
            ("bf16", ("Llama-2-7B-6L-v512", LLAMA_7B_6L_V512, 2, 1, 1024, True)),
            ("bf16", ("Llama-3-8B-4L-v512", LLAMA3_8B_4L_V512, 4, 1, 2048, True))]

# Without checkpointing FSDP2's backward peaks at the second decoder layer from the back (phase_fsdp_layer_backward,
# read from the traces of Llama-2-7B's layers at 2 ranks and Llama 3 8B's at 4, whose records are fit): shapes measured
# once that phase was written, held out. Wide layers with a small vocabulary, where the phase binds, and one with
# Phi-3's fused projections (at 4 ranks, 4 x 1,024 tokens). measure_fsdp2 'layer_backward'
MISTRAL_7B_4L_V512 = dict(C.MISTRAL_7B_V01, num_hidden_layers=4, vocab_size=512)
LAYER_BACKWARD = [("bf16", ("Mistral-7B-4L-v512", MISTRAL_7B_4L_V512, 4, 1, 4096, False)),
                  ("fsdp-mixed", ("Qwen2.5-7B-4L-v512", QWEN_7B_4L_V512, 2, 2, 2048, False)),
                  ("bf16", ("Llama-3-8B-4L-v512", LLAMA3_8B_4L_V512, 8, 1, 2048, False)),
                  ("bf16", ("Phi-3-small-4L", C.PHI3_SMALL_4L, 4, 4, 1024, False)),
                  ("fsdp-mixed", ("Llama-2-7B-6L-v512", LLAMA_7B_6L_V512, 4, 2, 1024, False)),
                  ("bf16", ("Llama-2-7B-4L-v512", LLAMA_7B_4L_V512, 2, 1, 4096, False)),
                  ("fsdp-mixed", ("Llama-3-8B-4L-v512", LLAMA3_8B_4L_V512, 2, 1, 4096, False)),
                  ("bf16", ("Qwen2.5-7B-4L-v512", QWEN_7B_4L_V512, 8, 1, 1024, False))]

# Under full checkpointing the same phase sits at the second decoder layer from the front, rebuilt whole (read from
# Phi-3's fused layers at 2 ranks, -5.87 % before, whose record is fit since): checkpointed shapes measured once that
# was written, held out. `measure_fsdp2.py OUT.json rebuilt_layer`
REBUILT_LAYER = [("bf16", ("Mistral-7B-4L-v512", MISTRAL_7B_4L_V512, 4, 1, 2048, True)),
                 ("bf16", ("Qwen2.5-7B-4L-v512", QWEN_7B_4L_V512, 8, 2, 2048, True)),
                 ("fsdp-mixed", ("Llama-3-8B-4L-v512", LLAMA3_8B_4L_V512, 2, 1, 4096, True)),
                 ("bf16", ("Phi-3-small-4L", C.PHI3_SMALL_4L, 4, 4, 1024, True)),
                 ("fsdp-mixed", ("Llama-2-7B-6L-v512", LLAMA_7B_6L_V512, 8, 2, 1024, True)),
                 ("bf16", ("Llama-2-7B-4L-v512", LLAMA_7B_4L_V512, 2, 2, 2048, True)),
                 ("fsdp-mixed", ("Qwen2.5-7B-4L-v512", QWEN_7B_4L_V512, 2, 1, 2048, True)),
                 ("bf16", ("Llama-3-8B-4L-v512", LLAMA3_8B_4L_V512, 8, 4, 1024, True))]

# The busiest layer may also be the last (long sequences) or, without checkpointing, the second from the front (few
# tokens, wide layers: fsdp_busiest_layer): shapes measured once the phase chose among the three, held out.
# `measure_fsdp2.py OUT.json positions`
POSITIONS = [("bf16", ("Llama-2-7B-4L-v512", LLAMA_7B_4L_V512, 4, 1, 512, False)),
             ("fsdp-mixed", ("Qwen2.5-7B-4L-v512", QWEN_7B_4L_V512, 8, 1, 256, False)),
             ("bf16", ("Llama-2-7B-6L-v512", LLAMA_7B_6L_V512, 8, 1, 512, False)),
             ("bf16", ("Llama-3-8B-4L-v512", LLAMA3_8B_4L_V512, 8, 1, 8192, False)),
             ("fsdp-mixed", ("Qwen2.5-7B-4L-v512", QWEN_7B_4L_V512, 4, 2, 4096, False)),
             ("bf16", ("Llama-2-7B-4L-v512", LLAMA_7B_4L_V512, 8, 1, 8192, True))]


def main(out_path, split):
    sets = {"fit": [("bf16", c) for c in FIT] + [("fsdp-mixed", c) for c in MIXED_FIT],
            "holdout": [("bf16", c) for c in HOLDOUT] + [("fsdp-mixed", c) for c in MIXED_HOLDOUT], "root": ROOT,
            "tied": TIED, "prefetch": PREFETCH, "layer_backward": LAYER_BACKWARD, "rebuilt_layer": REBUILT_LAYER,
            "positions": POSITIONS}
    after = {"root": "the root unit's reduce", "tied": "the tied embedding's end of backward",
             "prefetch": "the late backward's prefetched layer",
             "layer_backward": "the second layer's backward (phase_fsdp_layer_backward)",
             "rebuilt_layer": "the rebuilt layer's backward (phase_fsdp_layer_backward under full checkpointing)",
             "positions": "the busiest layer's position (fsdp_busiest_layer)"}
    note = "measure_fsdp2: one rank of FSDP2 on a fake process group"
    if split in after:  # held out, and says so
        note += f"; measured after {after[split]} was written (held out)"
    out = [R.measure_rank(name, cfg, "holdout" if split in after else split, precision, batch, seq, gc,
                          f"fsdp2-{world}", note, fsdp_world=world)
           for precision, (name, cfg, world, batch, seq, gc) in sets[split]]
    json.dump(out, open(out_path, "w"), indent=1)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else "fit")
