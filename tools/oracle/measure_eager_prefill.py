#!/usr/bin/env python
"""The eager-attention prefill working set (forward_transient_bytes): Llama-3.2-1B (grouped-query
attention, fp32 softmax) and GPT-2 (multi-head, bf16 softmax), each at four batch × length shapes, so
the S × S scores (per head), and the per-token tensors live beside them (Q, K, V, the K/V repeated to
every head under GQA, the residual stream and its norm) separate. 'fit': the term was derived from
these; the Gemma-2-2B eager prefills already in oracle_arch.json stay held out.

    /tmp/ovenv/bin/python tools/oracle/measure_eager_prefill.py OUT.json
"""
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import memoracle as M  # noqa: E402
import oracle_configs as C  # noqa: E402
import records as R  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(HERE))
EXTRA = os.path.join(ROOT, "presets", "validation", "oracle_extra.json")
# (batch, length) per model, within its positions (GPT-2: 1,024)
SHAPES = {"Llama-3.2-1B": ((4, 2048), (2, 2048), (4, 1024), (1, 4096)),
          "GPT-2-nodropout": ((2, 1024), (4, 1024), (1, 512), (4, 512))}


def main(out_path):
    gpt2 = next(c["config"] for c in json.load(open(EXTRA))["cases"] if c["config_name"] == "GPT-2-nodropout")
    models = (("Llama-3.2-1B", C.LLAMA_3_2_1B), ("GPT-2-nodropout", gpt2))
    recs, t0 = [], time.time()
    for name, config in models:
        for batch, seq in SHAPES[name]:
            setting = dict(mode="infer", precision="bf16", attn="eager", batch=batch, seq=seq, logits_to_keep=1,
                           new_tokens=4)
            r = M.run_case(config, use_memtracker=False, **setting)
            cid = f"{name}/infer/bf16/eager/b{batch}/s{seq}/logits_to_keep1"
            recs.append(R.record(cid, name, "fit", config, setting, r, "eager prefill working set: the shapes "
                                 "forward_transient_bytes's eager terms were derived from", workload="inference"))
            print(f"{cid:60s} {r['peak_bytes'] / 2**30:8.4f} GiB {r['seconds']}s", flush=True)
            R.save(out_path, recs, t0)


if __name__ == "__main__":
    main(sys.argv[1])
