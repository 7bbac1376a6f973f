#!/usr/bin/env python
"""A layer rebuilt in backward with every weight trained, off FSDP2 (one GPU: the same as DDP and ZeRO-1 for memory):
at the end of backward the first decoder layer is rebuilt beside every gradient. terms.recompute_bytes counts it by
its parts (rebuilt_layer_by_parts: the layer's saved tensors made again, its kept input, the residual gradient and the
larger of the MLP's backward and the end of the layer's, as FSDP2's layer phase does), where a ratio to the saved
bytes (recompute_ratio_trained, fitted at 2,048 tokens) fell short at long sequences (Mistral 7B's layers at 8,192
tokens: -5.44 %). Written from the traces of FSDP2's layers and Mistral's one-GPU record (fit since); the shapes
here were measured after it was written, held out but for two whose traces were then read (fit, marked in cases()):
long sequences (8,192-16,384 tokens), gradient accumulation (new gradients added into kept ones), autocast,
per-op checkpointing, small wide-vocabulary models.

    /tmp/ovenv/bin/python tools/oracle/measure_rebuilt_layer.py OUT.json
"""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import oracle_configs as C  # noqa: E402
import records as R  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(HERE))

NOTE = ("measure_rebuilt_layer: one GPU, every weight trained, the first decoder layer rebuilt at the end of backward; "
        "measured after rebuilt_layer_by_parts was written (held out, but for the two whose traces were read: fit)")


def _layers(config, layers, vocab=512):
    return dict(config, num_hidden_layers=layers, vocab_size=vocab)


def cases():
    phi3 = json.load(open(os.path.join(ROOT, "presets", "models", "phi-3-mini-4k-instruct.json")))["config"]
    # (name, config, precision, batch, length, checkpointing, gradient accumulation, split)
    return [("Llama-3-8B-4L-v512", _layers(C.LLAMA_3_8B, 4), "bf16", 1, 16384, True, 1, "holdout"),
            ("Qwen2.5-7B-4L-v512", _layers(C.QWEN2_5_7B, 4), "bf16", 1, 8192, True, 1, "holdout"),
            ("Llama-2-7B-4L-v512", _layers(C.LLAMA_2_7B, 4), "bf16", 2, 4096, True, 2, "holdout"),
            ("Llama-3-8B-8L-v512", _layers(C.LLAMA_3_8B, 8), "bf16", 1, 8192, True, 4, "holdout"),
            # fit: its trace showed autocast's casts of the rebuilt layer's weights held through its MLP's backward
            ("Llama-3-8B-4L-v512", _layers(C.LLAMA_3_8B, 4), "amp", 1, 8192, True, 1, "fit"),
            # fit: its +6.10 % showed the first recomputed layer's phase counting per-op's kept tensors of that layer
            # twice (once kept, once rebuilt); the three per-op shapes after it were measured once that was mended
            ("Qwen2.5-7B-4L-v512", _layers(C.QWEN2_5_7B, 4), "bf16", 1, 16384, "op", 1, "fit"),
            ("Qwen2.5-0.5B", C.QWEN2_5_0_5B, "bf16", 1, 8192, True, 1, "holdout"),
            ("Llama-3.2-1B", C.LLAMA_3_2_1B, "bf16", 2, 8192, True, 1, "holdout"),
            ("Llama-3-8B-4L-v512", _layers(C.LLAMA_3_8B, 4), "bf16", 1, 8192, "op", 2, "holdout"),
            ("Llama-2-7B-4L-v512", _layers(C.LLAMA_2_7B, 4), "bf16", 1, 12288, "op", 1, "holdout"),
            ("Phi-3-mini-4L-v512", dict(phi3, num_hidden_layers=4, vocab_size=512, pad_token_id=0), "bf16", 2, 4096,
             "op", 1, "holdout"),
            # measured once the rebuilt layer's autocast casts were counted (rebuilt_layer_casts_bytes, read from the
            # trace of the autocast shape above, which is fit since)
            ("Qwen2.5-7B-4L-v512", _layers(C.QWEN2_5_7B, 4), "amp", 1, 8192, True, 1, "holdout"),
            ("Llama-2-7B-4L-v512", _layers(C.LLAMA_2_7B, 4), "amp", 2, 4096, True, 1, "holdout"),
            ("Llama-3-8B-4L-v512", _layers(C.LLAMA_3_8B, 4), "amp", 1, 8192, "op", 1, "holdout"),
            ("Mistral-7B-4L-v512", _layers(C.MISTRAL_7B_V01, 4), "amp", 1, 12288, True, 1, "holdout")]


def main(out_path):
    out = []
    for name, cfg, precision, batch, seq, gc, accum, split in cases():
        parallel = dict(grad_accum=accum) if accum > 1 else {}
        out.append(R.measure_rank(name, cfg, split, precision, batch, seq, gc,
                                  f"1gpu-accum{accum}" if accum > 1 else "1gpu", NOTE, **parallel))
        json.dump(out, open(out_path, "w"), indent=1)


if __name__ == "__main__":
    main(sys.argv[1])
