#!/usr/bin/env python
"""Per-rank peaks of Ulysses sequence parallelism (DeepSpeed's DistributedAttention, ALST's UlyssesSPAttentionHF) under
FSDP2 over the same ranks, on a fake process group: one rank, in this process, with fake tensors. Each rank holds
seq ÷ cp tokens (rank 0's: the first chunk); around attention an all-to-all swaps sequence shards for head shards
(q, k, v: [b, h, s/cp, d] -> [b, h/cp, s, d]), the CUDA-like SDPA kernel runs causal over all the tokens of its
heads, and an all-to-all swaps the output back. DeepSpeed itself is absent here: FSDP2 shards the states (ZeRO-3's
layout), so the records check the activations' accounting, not DeepSpeed's buffers. Pure bf16, fused AdamW, two steps.

    /tmp/ovenv/bin/python tools/oracle/measure_ulysses.py OUT.json
"""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import torch  # noqa: E402

import oracle_configs as C  # noqa: E402
import records as R  # noqa: E402
from measure_tp import LLAMA_1B_UNTIED  # noqa: E402

# (config name, config, cp, batch, global length, checkpointing). No term was read from these: every record is held out.
HOLDOUT = ([("Llama-tiny-4L-512", C.LLAMA_TINY, cp, 1, 4096, gc) for cp in (2, 4) for gc in (False, True)]
           + [("Llama-3.2-1B-untied", LLAMA_1B_UNTIED, cp, 1, s, gc) for cp, s in ((2, 4096), (4, 8192))
              for gc in (False, True)]
           + [("Qwen2.5-0.5B", C.QWEN2_5_0_5B, 2, 1, 4096, gc) for gc in (False, True)])


def ulysses_sdpa(cp):
    """transformers' SDPA attention wrapped in Ulysses' two all-to-alls over the fake process group."""
    import torch.distributed as dist
    from torch.distributed._functional_collectives import all_to_all_single_autograd
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    def swap(x, parts):  # the all-to-all of a tensor laid out [cp, ...]: rank r receives every rank's part r
        return all_to_all_single_autograd(x.contiguous().reshape(-1), None, None, dist.group.WORLD).reshape(parts)

    def seq_to_heads(x):  # [b, h, s/cp, d] -> [b, h/cp, s, d]
        b, h, s, d = x.shape
        y = swap(x.reshape(b, cp, h // cp, s, d).permute(1, 0, 2, 3, 4), (cp, b, h // cp, s, d))
        return y.permute(1, 2, 0, 3, 4).reshape(b, h // cp, cp * s, d)

    def heads_to_seq(x):  # [b, h/cp, s, d] -> [b, h, s/cp, d]
        b, h, s, d = x.shape
        y = swap(x.reshape(b, h, cp, s // cp, d).permute(2, 0, 1, 3, 4), (cp, b, h, s // cp, d))
        return y.permute(1, 0, 2, 3, 4).reshape(b, cp * h, s // cp, d)

    def forward(module, query, key, value, attention_mask, **kwargs):
        out, _ = sdpa_attention_forward(module, seq_to_heads(query), seq_to_heads(key), seq_to_heads(value), None,
                                        is_causal=True, **{k: v for k, v in kwargs.items() if k != "is_causal"})
        # transformers hands back [b, s, h/cp, d]; the swap back wants heads first
        return heads_to_seq(out.transpose(1, 2)).transpose(1, 2).contiguous(), None
    return forward


def main(out_path):
    from transformers import AttentionInterface
    import memoracle
    started, records = __import__("time").time(), []
    original = AttentionInterface._global_mapping["sdpa"]
    for name, cfg, cp, batch, seq, gc in HOLDOUT:
        AttentionInterface._global_mapping["sdpa"] = ulysses_sdpa(cp)
        try:
            rec = R.measure_rank(name, cfg, "holdout", "bf16", batch, seq // cp, gc, f"ulysses{cp}-fsdp2",
                                 "measure_ulysses: one rank of Ulysses sequence parallelism (seq ÷ cp tokens, "
                                 "all-to-alls around SDPA) under FSDP2 over the same ranks on a fake process group",
                                 fsdp_world=cp)
        finally:
            AttentionInterface._global_mapping["sdpa"] = original
        # as the estimator reads it: seq the sequence's length, cp_world its GPUs (reportgen compares it with its
        # context parallelism under fsdp2: the same seq ÷ cp tokens per GPU outside attention)
        setting = rec["setting"]
        setting.pop("fsdp_world")
        setting.update(seq=seq, cp_world=cp, attention_parallelism="ulysses")
        rec["id"] = rec["id"].replace(f"/s{seq // cp}/", f"/s{seq}/")
        records.append(rec)
        R.save(out_path, records, started)


if __name__ == "__main__":
    main(sys.argv[1])
