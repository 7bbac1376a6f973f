#!/usr/bin/env python
"""Training past a sliding window under transformers' SDPA: from a sequence as long as the window masking_utils gives
SDPA a mask, and SDPA takes the memory-efficient kernel, which saves each sliding layer's mask converted to the
activation dtype and K/V repeated to every head (terms.sdpa_mask_saved_per_token). The term was read from Mistral 7B's
layers at 4,096 tokens on FSDP2 (measure_fsdp2 'layer_backward', -4.10 % before, fit since) and a probe of Phi-3-mini's
layers with and without the window (its head-major queries are not copied by that kernel); the shapes here were
measured after it was written, held out.

    /tmp/ovenv/bin/python tools/oracle/measure_sdpa_mask.py OUT.json
"""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import oracle_configs as C  # noqa: E402
import records as R  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(HERE))
MISTRAL_7B_4L_V512 = dict(C.MISTRAL_7B_V01, num_hidden_layers=4, vocab_size=512)
NOTE = ("measure_sdpa_mask: training past a sliding window under SDPA (a mask, the memory-efficient kernel); measured "
        "after sdpa_mask_saved_per_token was written (held out)")


def cases():
    phi3 = json.load(open(os.path.join(ROOT, "presets", "models", "phi-3-mini-4k-instruct.json")))["config"]
    phi3_4l = dict(phi3, num_hidden_layers=4, vocab_size=512, pad_token_id=0)
    # (name, config, precision, batch, length, checkpointing, FSDP2 ranks)
    return [("Mistral-7B-4L-v512", MISTRAL_7B_4L_V512, "bf16", 2, 4096, False, 0),
            ("Mistral-7B-4L-v512", MISTRAL_7B_4L_V512, "bf16", 1, 8192, True, 0),
            ("Mistral-7B-4L-v512", MISTRAL_7B_4L_V512, "fsdp-mixed", 1, 4096, False, 2),
            ("Mistral-7B-4L-v512-w1024", dict(MISTRAL_7B_4L_V512, sliding_window=1024), "bf16", 1, 2048, False, 0),
            ("Phi-3-mini-4L-v512", phi3_4l, "bf16", 1, 4096, False, 0),
            ("Phi-3-mini-4L-v512", phi3_4l, "bf16", 2, 2048, True, 2)]


def main(out_path):
    out = []
    for name, cfg, precision, batch, seq, gc, world in cases():
        parallel = dict(fsdp_world=world) if world else {}
        out.append(R.measure_rank(name, cfg, "holdout", precision, batch, seq, gc,
                                  f"fsdp2-{world}" if world else "1gpu", NOTE, **parallel))
        json.dump(out, open(out_path, "w"), indent=1)


if __name__ == "__main__":
    main(sys.argv[1])
